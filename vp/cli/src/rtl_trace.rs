//! `nvdla-vp trace --device rtl`: the trace players on NVIDIA's nv_small RTL.
//!
//! Each test gets a fresh harness ([`RtlHarness`]: the Verilated RTL in its own process,
//! its clock in lockstep with us), so it starts from reset with zeroed memory. Registers
//! go over the harness's CSB; trace loads and checks read and write its RAM file directly.
//!
//! Interrupts: the RTL raises GLB's line. A `.cfg` `intr_notify(SOURCE, ...)` waits for the
//! next done event of SOURCE ([`TraceTarget::wait_event`]): while none has been seen, we
//! read GLB `S_INTR_STATUS`, write the value back to clear it (write-1-to-clear) and count
//! each set bit as one event of its source, then run the clock until the line is high
//! again. NVIDIA's testbench (`nvdla.cpp`) does the same in effect: a sync point fires
//! once `S_INTR_STATUS & ~S_INTR_MASK` holds its bit, and it clears that bit. We count
//! masked bits too, as the model records every done event whatever the mask.
//!
//! Checks: a test whose memory differs from the trace's golden values (CRCs) is run again
//! on the model as nv_small is built ([`HwConfig::as_built`]: the RTL bypasses SDP's
//! element-wise unit, which the golden values of NVIDIA's `sdp_*_ew_*` traces include).
//! Every run records the value each check observed ([`Checks`]). The test is a pass "as
//! built" when the RTL produced the model-as-built's value at every check and the model
//! computing every unit ([`HwConfig::new`], as NVIDIA's C model that produced the golden
//! values) passes: the build, not the RTL, explains the difference.

use std::io;
use std::time::Instant;

use nvdla_port::rtl::{LineWait, RtlHarness, RtlLaunch};
use nvdla_vp::glb::IntrSource;
use nvdla_vp::nvdla_hw::{self, regs::v2::glb};
use nvdla_vp::trace::{
    self, Checks, Observed, Options, Outcome, TestCase, TraceError, TraceTarget,
};
use nvdla_vp::{HwConfig, Vp};

/// Device address of the RTL's memory: nv_small's traces place their surfaces at
/// 0x8000_0000 and up (the highest byte they touch is below 0xa010_0000).
pub const RAM_BASE: u64 = 0x8000_0000;
/// Size of the RTL's memory: 1 GiB (a sparse file).
pub const RAM_SIZE: u64 = 1 << 30;
/// Most cycles one wait for an interrupt may run before the test fails (nv_small's
/// largest trace layers take a few million).
pub const WAIT_CYCLES: u64 = 50_000_000;
/// CSB reads a `poll_reg_equal` makes before it gives up (NVIDIA's testbench tries 10
/// times, after 8192 cycles of reset; the harness resets the same way).
const POLL_READS: usize = 1000;

/// GLB `S_INTR_STATUS` (v2; nv_small is a v2 build).
const INTR_STATUS: u32 = glb::BASE + glb::S_INTR_STATUS;

/// Every interrupt source, each with its two status bits (`IntrSource::bit`).
const SOURCES: [IntrSource; 8] = [
    IntrSource::Sdp,
    IntrSource::Cdp,
    IntrSource::Pdp,
    IntrSource::Bdma,
    IntrSource::Rubik,
    IntrSource::CdmaDat,
    IntrSource::CdmaWt,
    IntrSource::Cacc,
];

/// NVIDIA's nv_small RTL as a [`TraceTarget`].
pub struct RtlTarget {
    hw: RtlHarness,
    /// The model at reset, for its register map only (names and addresses).
    map: Vp,
    /// Done events counted per source, in [`SOURCES`] order.
    counts: [usize; 8],
    /// Why the last wait ended without its event.
    hang: Option<String>,
    /// The first failed exchange with the harness; later accesses are skipped.
    error: Option<String>,
    log_regs: bool,
}

impl RtlTarget {
    /// Starts a harness with [`RAM_SIZE`] bytes of zeroed memory at [`RAM_BASE`].
    pub fn launch(launch: &RtlLaunch, log_regs: bool) -> io::Result<Self> {
        Ok(RtlTarget {
            hw: RtlHarness::launch(launch, RAM_BASE, RAM_SIZE)?,
            map: Vp::new(HwConfig::as_built(&nvdla_hw::NV_SMALL)),
            counts: [0; 8],
            hang: None,
            error: None,
            log_regs,
        })
    }

    /// The harness's clock (0 when it cannot be read).
    pub fn cycle(&mut self) -> u64 {
        let r = self.hw.cycle();
        self.ok(r).unwrap_or(0)
    }

    /// Keeps the first harness error; `None` on error.
    fn ok<T>(&mut self, r: io::Result<T>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                if self.error.is_none() {
                    self.error = Some(format!("RTL harness: {e}"));
                }
                None
            }
        }
    }

    /// Reads and clears GLB's status, counting each set bit as a done event.
    fn collect(&mut self) {
        let status = self.csb_read(INTR_STATUS);
        if status == 0 {
            return;
        }
        self.csb_write_quiet(INTR_STATUS, status);
        for (i, s) in SOURCES.iter().enumerate() {
            self.counts[i] += ((status >> s.bit()) & 3).count_ones() as usize;
        }
    }

    /// Runs the clock until the interrupt line is high or one wait's budget passed:
    /// whether the line is high, or `None` (with [`RtlTarget::hang`] set) when the line
    /// is still low [`WAIT_CYCLES`] cycles after `start`, the bus stalls or the harness
    /// fails.
    fn wait_line(&mut self, start: u64) -> Option<bool> {
        if self.error.is_some() {
            return None;
        }
        let r = self.hw.wait_line();
        let raised = match self.ok(r)? {
            LineWait::Raised => true,
            LineWait::Budget => false,
            LineWait::Stalled => {
                let now = self.cycle();
                self.hang = Some(format!(
                    "RTL: the memory bus stalled at cycle {now} (reads outstanding, no AXI \
                     handshake; the harness's log has the state)"
                ));
                return None;
            }
        };
        if !raised && self.timed_out(start) {
            return None;
        }
        Some(raised)
    }

    /// Whether [`WAIT_CYCLES`] cycles have passed since `start` (then [`RtlTarget::hang`]
    /// says so).
    fn timed_out(&mut self, start: u64) -> bool {
        let now = self.cycle();
        if now.saturating_sub(start) < WAIT_CYCLES {
            return false;
        }
        self.hang = Some(format!(
            "RTL: waited {WAIT_CYCLES} cycles, timed out at cycle {now}"
        ));
        true
    }

    fn csb_write_quiet(&mut self, addr: u32, value: u32) {
        if self.error.is_none() {
            let r = self.hw.csb_write(addr, value);
            self.ok(r);
        }
    }
}

impl TraceTarget for RtlTarget {
    fn config(&self) -> &HwConfig {
        self.map.config()
    }

    fn lookup(&self, block: &str, reg: &str) -> Option<u32> {
        self.map.lookup(block, reg)
    }

    fn csb_read(&mut self, addr: u32) -> u32 {
        if self.error.is_some() {
            return 0;
        }
        let r = self.hw.csb_read(addr);
        self.ok(r).unwrap_or(0)
    }

    fn csb_write(&mut self, addr: u32, value: u32) {
        if self.log_regs {
            if let Some(t) = self.map.resolve(addr) {
                use std::io::Write;
                let name = t.reg.map_or("?", |r| r.name);
                let _ = writeln!(
                    std::io::stdout().lock(),
                    "csb write NVDLA_{}.{name}_0 ({addr:#07x}) = {value:#010x}",
                    t.block
                );
            }
        }
        self.csb_write_quiet(addr, value);
    }

    fn csb_poll(&mut self, addr: u32, want: u32) -> u32 {
        let mut got = self.csb_read(addr);
        for _ in 1..POLL_READS {
            if got == want || self.error.is_some() {
                break;
            }
            got = self.csb_read(addr);
        }
        got
    }

    fn host_write(&mut self, addr: u64, data: &[u8]) -> Result<(), String> {
        self.hw.mem_write(addr, data).map_err(|e| e.to_string())
    }

    fn host_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), String> {
        self.hw.mem_read(addr, buf).map_err(|e| e.to_string())
    }

    /// The events counted so far; counting happens only while a `.cfg` waits
    /// ([`TraceTarget::wait_event`]), so an `input.txn` trace, which reads and clears
    /// `S_INTR_STATUS` itself, sees its status untouched.
    fn event_count(&mut self, src: Option<IntrSource>) -> usize {
        match src {
            Some(s) => SOURCES
                .iter()
                .position(|x| *x == s)
                .map_or(0, |i| self.counts[i]),
            None => self.counts.iter().sum(),
        }
    }

    fn wait_event(&mut self, src: IntrSource, seen: usize) -> bool {
        self.hang = None;
        let start = self.cycle();
        loop {
            self.collect();
            if self.event_count(Some(src)) > seen {
                return true;
            }
            // The line may be high for other sources' events, just counted: the limit
            // holds whatever the line does.
            if self.timed_out(start) || self.wait_line(start).is_none() {
                return false;
            }
        }
    }

    /// Waits for the line (up to [`WAIT_CYCLES`]); status is left to the trace. (For
    /// `input.txn` traces, which are NVDLA v1's: they do not run on nv_small as they are.)
    fn irq_pending(&mut self) -> bool {
        self.hang = None;
        let start = self.cycle();
        loop {
            match self.wait_line(start) {
                Some(true) => return true,
                Some(false) => {}
                None => return false,
            }
        }
    }

    /// The RTL runs while we wait; nothing is deferred.
    fn run_pending(&mut self) {}

    fn fault_message(&mut self) -> Option<String> {
        if let Some(e) = &self.error {
            return Some(e.clone());
        }
        let r = self.hw.mem_faults();
        match self.ok(r) {
            Some(0) => None,
            Some(n) => Some(format!(
                "RTL: {n} DMA access(es) outside its memory ({RAM_BASE:#x}+{RAM_SIZE:#x})"
            )),
            None => self.error.clone(),
        }
    }

    fn fault_note(&mut self) -> String {
        let mut notes: Vec<String> = Vec::new();
        if let Some(h) = &self.hang {
            notes.push(h.clone());
        }
        if let Some(f) = self.fault_message() {
            notes.push(f);
        }
        if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join("; "))
        }
    }
}

/// How a test fared on the RTL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The outcome against the trace's golden values.
    Outcome(Outcome),
    /// The RTL differs from the golden values but equals the model as nv_small is built
    /// at every check, and the model computing every unit matches the golden values (see
    /// the module documentation); the text says where golden differs.
    AsBuilt(String),
}

/// Runs `test` on a fresh RTL harness (see the module documentation). `cfg` is the build
/// the test is for: the RTL is nv_small's, so any other build fails.
/// Returns the verdict and the RTL's clock cycles from the end of its reset to the end of
/// the test (register accesses and operations, as the model's cycle model counts them).
pub fn run_test_timed(
    test: &TestCase,
    cfg: HwConfig,
    launch: &RtlLaunch,
    opts: &Options,
) -> Result<(Verdict, u64), TraceError> {
    if let Some(o) = trace::not_runnable(test) {
        return Ok((Verdict::Outcome(o), 0));
    }
    if cfg.hw.name != nvdla_hw::NV_SMALL.name {
        return Ok((
            Verdict::Outcome(Outcome::Fail(format!(
                "the RTL is nv_small's; this test is for {} (see --config)",
                cfg.name()
            ))),
            0,
        ));
    }
    let started = Instant::now();
    let mut rtl = match RtlTarget::launch(launch, opts.log_regs) {
        Ok(t) => t,
        Err(e) => return Ok((Verdict::Outcome(Outcome::Fail(e.to_string())), 0)),
    };
    let reset = rtl.cycle();
    let mut checks = Checks::keep_going();
    let outcome = trace::run_on(test, &mut rtl, &mut checks)?;
    let cycles = rtl.cycle().saturating_sub(reset);
    log::info!(
        "{}: {cycles} cycles, {:.1} s",
        test.name,
        started.elapsed().as_secs_f64()
    );
    drop(rtl);
    Ok((judge(test, cfg, outcome, &checks)?, cycles))
}

/// The verdict on a run on the RTL: its outcome, or, when only its checks failed, the
/// comparison with the model as built.
fn judge(
    test: &TestCase,
    cfg: HwConfig,
    outcome: Outcome,
    checks: &Checks,
) -> Result<Verdict, TraceError> {
    let Outcome::Fail(why) = outcome else {
        return Ok(Verdict::Outcome(outcome));
    };
    if !checks.completed || checks.records.iter().all(|r| r.matched) {
        return Ok(Verdict::Outcome(Outcome::Fail(why)));
    }
    // Only checks failed: compare with the model as built, check by check.
    let mut model = Vp::new(HwConfig::as_built(cfg.hw));
    let mut built = Checks::keep_going();
    let built_outcome = trace::run_on(test, &mut model, &mut built)?;
    let first_diff = built
        .records
        .iter()
        .zip(&checks.records)
        .find(|(m, r)| m.line != r.line || m.observed != r.observed)
        .map(|(m, _)| m);
    if !built.completed || built.records.len() != checks.records.len() || first_diff.is_some() {
        let what = match first_diff {
            Some(m) => match &m.observed {
                Observed::Crc(c) => format!("gets {c:#010x} at line {}", m.line),
                Observed::Bytes(_) => format!("gets other bytes at line {}", m.line),
            },
            None => "does not make the same checks".to_string(),
        };
        return Ok(Verdict::Outcome(Outcome::Fail(format!(
            "{why}; the model as built {what} ({})",
            describe(built_outcome)
        ))));
    }
    // The build explains the difference only when the model computing every unit (as
    // NVIDIA's C model, whose results the golden values are) matches the golden values:
    // otherwise the golden value itself is unexplained.
    let mut cmodel = Vp::new(HwConfig::new(cfg.hw));
    let c_outcome = trace::run_on(test, &mut cmodel, &mut Checks::keep_going())?;
    if c_outcome != Outcome::Pass {
        return Ok(Verdict::Outcome(Outcome::Fail(format!(
            "{why}; the RTL equals the model as built, but the model computing every unit \
             does not match the golden values either ({})",
            describe(c_outcome)
        ))));
    }
    let n = checks.records.len();
    Ok(Verdict::AsBuilt(format!(
        "equals the model as built at {n} check{}; golden (the model computing every unit) \
         differs: {why}",
        if n == 1 { "" } else { "s" }
    )))
}

/// A model run's outcome, for a failure message.
fn describe(o: Outcome) -> String {
    match o {
        Outcome::Pass => "it passes".to_string(),
        Outcome::Fail(m) => format!("it fails: {m}"),
        Outcome::NotRunnable(m) => format!("not runnable: {m}"),
    }
}
