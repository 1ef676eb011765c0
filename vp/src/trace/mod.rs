//! Trace players.
//!
//! A trace test drives the platform register by register and checks memory afterwards.
//! Two formats exist: NVDLA v1 `input.txn` ([`txn`]) and NVDLA v2 `<test>.cfg`
//! ([`mod@cfg`]). Both report a malformed trace as a [`TraceError`] naming file and line, and
//! a model mismatch as a failed [`Outcome`].
//!
//! The players run on any [`TraceTarget`]: the model ([`run_test`]) or, through
//! [`run_on`], another implementation such as NVIDIA's RTL (`nvdla-vp trace --device rtl`).
//! A run can record what each check observed ([`Checks`]) so that two targets can be
//! compared check by check.

pub mod cfg;
pub mod crc;
pub mod dat;
pub mod target;
pub mod txn;

pub use target::TraceTarget;

use crate::config::HwConfig;
use crate::vp::Vp;
use std::fmt;
use std::path::{Path, PathBuf};

/// A malformed trace or unreadable file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError {
    /// File.
    pub file: PathBuf,
    /// 1-based line (0 when not line-specific).
    pub line: usize,
    /// What is wrong.
    pub msg: String,
}

impl TraceError {
    /// An error at a line of a file.
    pub fn at(file: &Path, line: usize, msg: impl Into<String>) -> Self {
        TraceError {
            file: file.to_path_buf(),
            line,
            msg: msg.into(),
        }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: {}", self.file.display(), self.line, self.msg)
        } else {
            write!(f, "{}: {}", self.file.display(), self.msg)
        }
    }
}

impl std::error::Error for TraceError {}

/// Result of running one test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every check passed.
    Pass,
    /// A check failed; the reason names file and line.
    Fail(String),
    /// The test cannot run: data files its trace loads or compares with are missing
    /// (NVIDIA's public repository lacks some large ones). Neither a pass nor a fail;
    /// the reason names the files.
    NotRunnable(String),
}

/// Options of a run.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Print every register write.
    pub log_regs: bool,
}

/// What a check compared with the trace's golden value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    /// CRC-32 of a memory range (`.cfg` `check_crc`).
    Crc(u32),
    /// Contents of a memory range (`input.txn` `dump_mem`).
    Bytes(Vec<u8>),
}

/// One check of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRecord {
    /// 1-based line of the check in the trace file.
    pub line: usize,
    /// What the target produced.
    pub observed: Observed,
    /// Whether it equals the golden value.
    pub matched: bool,
}

/// What the checks of a run observed, in trace order.
///
/// With [`Checks::keep_going`] a failed check does not end the run: every check is
/// observed, and the outcome is the first failed check, reported at the end. Without it
/// (the default, as [`run_test`]) the first failed check ends the run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checks {
    /// Go on after a failed check.
    pub keep_going: bool,
    /// Every check made, in order.
    pub records: Vec<CheckRecord>,
    /// Whether the run reached the end of the trace with no failure other than failed
    /// checks (no missed interrupt, no register mismatch, no fault).
    pub completed: bool,
}

impl Checks {
    /// A recorder that goes on after failed checks ([`Checks::keep_going`]).
    pub fn keep_going() -> Self {
        Checks {
            keep_going: true,
            ..Checks::default()
        }
    }

    /// Records a check; returns the outcome that ends the run now, if any (a failure
    /// without [`Checks::keep_going`]). With it, the first failure is kept in `first` for
    /// the end of the run.
    pub(crate) fn record(
        &mut self,
        line: usize,
        observed: Observed,
        failure: Option<String>,
        first: &mut Option<String>,
    ) -> Option<Outcome> {
        self.records.push(CheckRecord {
            line,
            observed,
            matched: failure.is_none(),
        });
        let msg = failure?;
        if !self.keep_going {
            return Some(Outcome::Fail(msg));
        }
        first.get_or_insert(msg);
        None
    }

    /// The outcome at the end of a trace: the first failed check kept, else the target's
    /// fault, else a pass. Sets [`Checks::completed`].
    pub(crate) fn finish<T: TraceTarget + ?Sized>(
        &mut self,
        t: &mut T,
        first: Option<String>,
    ) -> Outcome {
        t.run_pending();
        let fault = t.fault_message();
        self.completed = fault.is_none();
        match (first, fault) {
            (Some(m), _) => Outcome::Fail(m),
            (None, Some(f)) => Outcome::Fail(f),
            (None, None) => Outcome::Pass,
        }
    }
}

/// Kind of a trace test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestKind {
    /// v1 `input.txn` in the directory.
    Txn(PathBuf),
    /// v2 `.cfg` file.
    Cfg(PathBuf),
}

/// A discovered test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestCase {
    /// Display name (the test directory name).
    pub name: String,
    /// Trace file.
    pub kind: TestKind,
}

/// Finds tests at `path`: a directory with `input.txn` or `*.cfg`, or a tree of them.
pub fn discover(path: &Path) -> Result<Vec<TestCase>, TraceError> {
    let mut out = Vec::new();
    walk(path, &mut out, 0)?;
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

fn walk(path: &Path, out: &mut Vec<TestCase>, depth: usize) -> Result<(), TraceError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    if path.is_file() {
        let kind = match path.extension().and_then(|e| e.to_str()) {
            Some("cfg") => TestKind::Cfg(path.to_path_buf()),
            _ if name == "input.txn" => TestKind::Txn(path.to_path_buf()),
            _ => {
                return Err(TraceError::at(
                    path,
                    0,
                    "not a trace file (input.txn or *.cfg)",
                ))
            }
        };
        let tname = path
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or(name);
        out.push(TestCase { name: tname, kind });
        return Ok(());
    }
    let rd = std::fs::read_dir(path).map_err(|e| TraceError::at(path, 0, e.to_string()))?;
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    let txn = path.join("input.txn");
    if txn.is_file() {
        out.push(TestCase {
            name,
            kind: TestKind::Txn(txn),
        });
        return Ok(());
    }
    let cfgs: Vec<&PathBuf> = entries
        .iter()
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "cfg"))
        .collect();
    if !cfgs.is_empty() {
        for c in cfgs {
            let n = if entries.len() > 1
                && c.file_stem().is_some_and(|s| s.to_string_lossy() != name)
            {
                format!(
                    "{name}/{}",
                    c.file_stem().unwrap_or_default().to_string_lossy()
                )
            } else {
                name.clone()
            };
            out.push(TestCase {
                name: n,
                kind: TestKind::Cfg(c.clone()),
            });
        }
        return Ok(());
    }
    if depth > 16 {
        return Ok(());
    }
    for e in entries.iter().filter(|p| p.is_dir()) {
        walk(e, out, depth + 1)?;
    }
    Ok(())
}

/// Infers the configuration from a path: the longest build name in it (so
/// `v2/nv_small_256_full/...` is nv_small_256_full, not nv_small), else nv_full.
pub fn infer_config(path: &Path) -> HwConfig {
    let s = path.to_string_lossy();
    let build = nvdla_hw::ALL
        .iter()
        .filter(|c| s.contains(c.name))
        .max_by_key(|c| c.name.len())
        .unwrap_or(&nvdla_hw::NV_FULL);
    HwConfig::new(build)
}

/// The data files `test`'s trace names (`mem_load` in a `.cfg`; `load_mem` and
/// `dump_mem` in an `input.txn`) that do not exist, as paths. A trace that cannot be read
/// or parsed names none here; running it reports the error.
pub fn missing_files(test: &TestCase) -> Vec<PathBuf> {
    let (file, names) = match &test.kind {
        TestKind::Cfg(p) => (p, cfg::data_files(p)),
        TestKind::Txn(p) => (p, txn::data_files(p)),
    };
    let dir = file.parent().unwrap_or(Path::new("."));
    let mut out: Vec<PathBuf> = Vec::new();
    for p in names.iter().map(|n| dir.join(n)) {
        if !p.exists() && !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// [`Outcome::NotRunnable`] naming the data files of `test` that are missing
/// ([`missing_files`]), if any.
pub fn not_runnable(test: &TestCase) -> Option<Outcome> {
    let missing = missing_files(test);
    if missing.is_empty() {
        return None;
    }
    let names: Vec<String> = missing
        .iter()
        .map(|p| {
            p.file_name()
                .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into())
        })
        .collect();
    Some(Outcome::NotRunnable(format!(
        "missing data file{} {}",
        if names.len() > 1 { "s" } else { "" },
        names.join(", ")
    )))
}

/// Runs one test on a fresh platform. A test whose data files are missing
/// ([`missing_files`]) is [`Outcome::NotRunnable`] and does not run.
pub fn run_test(test: &TestCase, cfg: HwConfig, opts: &Options) -> Result<Outcome, TraceError> {
    run_test_timed(test, cfg, opts).map(|(o, _)| o)
}

/// [`run_test`], with the cycles the cycle model counted from reset to the end of the test
/// (register accesses and operations; [`crate::timing`]), 0 for a test not run.
pub fn run_test_timed(
    test: &TestCase,
    cfg: HwConfig,
    opts: &Options,
) -> Result<(Outcome, u64), TraceError> {
    if let Some(o) = not_runnable(test) {
        return Ok((o, 0));
    }
    let mut vp = Vp::new(cfg);
    vp.set_log_regs(opts.log_regs);
    let outcome = run_on(test, &mut vp, &mut Checks::default())?;
    vp.run_pending();
    let end = vp
        .timing()
        .ops()
        .iter()
        .map(|o| o.end)
        .max()
        .unwrap_or(0)
        .max(vp.timing().now());
    Ok((outcome, end))
}

/// Runs one test on `target`, which should be fresh (at reset, memory cleared), and
/// records its checks in `checks` (see [`Checks::keep_going`]). Does not look for missing
/// data files first: see [`not_runnable`].
pub fn run_on<T: TraceTarget + ?Sized>(
    test: &TestCase,
    target: &mut T,
    checks: &mut Checks,
) -> Result<Outcome, TraceError> {
    match &test.kind {
        TestKind::Txn(p) => txn::run_checked(target, p, checks),
        TestKind::Cfg(p) => cfg::run_checked(target, p, checks),
    }
}

/// Reads a file referenced by a trace, relative to the trace's directory.
pub(crate) fn read_aux(
    trace: &Path,
    line: usize,
    name: &str,
) -> Result<(PathBuf, String), TraceError> {
    let p = trace.parent().unwrap_or(Path::new(".")).join(name);
    std::fs::read_to_string(&p)
        .map(|s| (p.clone(), s))
        .map_err(|e| TraceError::at(trace, line, format!("cannot read {}: {e}", p.display())))
}

/// Largest memory range a trace command may initialise, load, dump or check.
pub const MAX_TRACE_RANGE: u64 = 1 << 30;

/// Parses a number as written in traces (`0x..` hex or decimal).
pub(crate) fn parse_u64(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(&h.replace('_', ""), 16).ok(),
        None => s.parse().ok(),
    }
}
