//! NVDLA v2 `.cfg` player.
//!
//! C-like statements, `//` comments: `mem_init(mem, ADDR, SIZE, PATTERN)`,
//! `mem_load(mem, ADDR, "file")`, `reg_write(NVDLA_<BLOCK>.<REG>_0, VALUE)`,
//! `reg_read(...)`/`poll_reg_equal(NVDLA_<BLOCK>.<REG>_0, VALUE)`, `sync_notify`/`sync_wait`
//! (ordering between testbench threads; the model is sequential, so they only need to
//! name a known event), `intr_notify(SOURCE, NAME)` (wait for the next done interrupt
//! of SOURCE and call it NAME), `check_crc(NAME, mem, ADDR, SIZE, CRC)` and
//! `check_nothing(NAME)` (NAME must have happened).

use super::{
    crc::crc32, dat, parse_u64, read_aux, Checks, Observed, Outcome, TraceError, TraceTarget,
    MAX_TRACE_RANGE,
};
use crate::glb::IntrSource;
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// One parsed statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stmt {
    /// 1-based line of the statement start.
    pub line: usize,
    /// Function name.
    pub name: String,
    /// Arguments, trimmed, quotes kept.
    pub args: Vec<String>,
}

/// Splits a `.cfg` text into statements.
pub fn parse(path: &Path, text: &str) -> Result<Vec<Stmt>, TraceError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let ln = i + 1;
        let line = raw.split("//").next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let err = |m: &str| TraceError::at(path, ln, m.to_string());
        let body = line
            .strip_suffix(';')
            .ok_or_else(|| err("statement does not end with `;`"))?
            .trim();
        let open = body.find('(').ok_or_else(|| err("expected `name(args)`"))?;
        let inner = body[open + 1..]
            .strip_suffix(')')
            .ok_or_else(|| err("missing `)`"))?;
        let name = body[..open].trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(err("bad command name"));
        }
        let mut args = Vec::new();
        let mut cur = String::new();
        let mut quoted = false;
        for c in inner.chars() {
            match c {
                '"' => {
                    quoted = !quoted;
                    cur.push(c);
                }
                ',' if !quoted => {
                    args.push(cur.trim().to_string());
                    cur.clear();
                }
                _ => cur.push(c),
            }
        }
        if quoted {
            return Err(err("unterminated string"));
        }
        if !cur.trim().is_empty() || !args.is_empty() {
            args.push(cur.trim().to_string());
        }
        out.push(Stmt {
            line: ln,
            name: name.to_string(),
            args,
        });
    }
    Ok(out)
}

fn reg_addr<T: TraceTarget + ?Sized>(
    vp: &T,
    path: &Path,
    s: &Stmt,
    sym: &str,
) -> Result<u32, TraceError> {
    let err = |m: String| TraceError::at(path, s.line, m);
    let rest = sym
        .strip_prefix("NVDLA_")
        .ok_or_else(|| err(format!("register `{sym}` does not start with NVDLA_")))?;
    let (blk, reg) = rest
        .split_once('.')
        .ok_or_else(|| err(format!("register `{sym}` is not BLOCK.REG")))?;
    let reg = reg.strip_suffix("_0").unwrap_or(reg);
    vp.lookup(blk, reg).ok_or_else(|| {
        err(format!(
            "unknown register `{sym}` on {}",
            vp.config().name()
        ))
    })
}

/// The data files a `.cfg` file loads (`mem_load`), as written (relative to the file's
/// directory); none when it cannot be read or parsed.
pub(crate) fn data_files(path: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let Ok(stmts) = parse(path, &text) else {
        return Vec::new();
    };
    stmts
        .iter()
        .filter(|s| s.name == "mem_load")
        .filter_map(|s| s.args.get(2))
        .map(|a| a.trim_matches('"').to_string())
        .collect()
}

/// Runs a `.cfg` file on `vp` (the model, or any other [`TraceTarget`]); the first failed
/// check ends the run.
pub fn run<T: TraceTarget + ?Sized>(vp: &mut T, path: &Path) -> Result<Outcome, TraceError> {
    run_checked(vp, path, &mut Checks::default())
}

/// Runs a `.cfg` file on `vp`, recording every `check_crc` in `checks` (and going on after
/// a failed one with [`Checks::keep_going`]).
pub fn run_checked<T: TraceTarget + ?Sized>(
    vp: &mut T,
    path: &Path,
    checks: &mut Checks,
) -> Result<Outcome, TraceError> {
    let mut first_fail: Option<String> = None;
    let text = std::fs::read_to_string(path).map_err(|e| TraceError::at(path, 0, e.to_string()))?;
    let stmts = parse(path, &text)?;
    let mut happened: HashSet<String> = HashSet::new();
    let mut consumed: HashMap<IntrSource, usize> = HashMap::new();
    let mut synced: HashSet<String> = HashSet::new();
    for s in &stmts {
        let err = |m: String| TraceError::at(path, s.line, m);
        let here = format!("{}:{}", path.display(), s.line);
        let arg = |i: usize| -> Result<&str, TraceError> {
            s.args
                .get(i)
                .map(String::as_str)
                .ok_or_else(|| err(format!("{} needs argument {}", s.name, i + 1)))
        };
        let num = |i: usize| -> Result<u64, TraceError> {
            let a = arg(i)?;
            parse_u64(a).ok_or_else(|| err(format!("bad number `{a}`")))
        };
        match s.name.as_str() {
            "mem_init" => {
                let (addr, size) = (num(1)?, num(2)?);
                let byte = match arg(3)? {
                    "ALL_ZERO" => 0u8,
                    "ALL_ONE" | "ALL_ONES" => 0xff,
                    p => return Err(err(format!("unsupported mem_init pattern `{p}`"))),
                };
                let size = usize::try_from(size).map_err(|_| err("size too large".into()))?;
                vp.host_write(addr, &vec![byte; size]).map_err(err)?;
            }
            "mem_load" => {
                let addr = num(1)?;
                let file = arg(2)?.trim_matches('"');
                let (fp, body) = read_aux(path, s.line, file)?;
                for c in dat::parse(&fp, &body)? {
                    let a = addr
                        .checked_add(c.offset)
                        .ok_or_else(|| err("address overflow".into()))?;
                    vp.host_write(a, &c.bytes).map_err(err)?;
                }
            }
            "reg_write" => {
                let a = reg_addr(vp, path, s, arg(0)?)?;
                let v = u32::try_from(num(1)?).map_err(|_| err("value exceeds 32 bits".into()))?;
                vp.csb_write(a, v);
            }
            "poll_reg_equal" | "reg_read_check" | "read_reg" => {
                let a = reg_addr(vp, path, s, arg(0)?)?;
                let want = num(1)?;
                let got = match u32::try_from(want) {
                    Ok(w) => u64::from(vp.csb_poll(a, w)),
                    Err(_) => u64::from(vp.csb_read(a)),
                };
                if got != want {
                    return Ok(Outcome::Fail(format!(
                        "{here}: {} {}: got {got:#x}, expected {want:#x}{}",
                        s.name,
                        arg(0)?,
                        vp.fault_note()
                    )));
                }
            }
            "sync_notify" => {
                synced.insert(arg(1)?.to_string());
            }
            "sync_wait" => {
                let ev = arg(1)?;
                if !synced.contains(ev) {
                    return Ok(Outcome::Fail(format!(
                        "{here}: sync_wait on `{ev}`, which is never notified"
                    )));
                }
            }
            "intr_notify" => {
                let src_name = arg(0)?;
                let src = IntrSource::from_trace_name(src_name)
                    .ok_or_else(|| err(format!("unknown interrupt source `{src_name}`")))?;
                let seen = consumed.entry(src).or_insert(0);
                if !vp.wait_event(src, *seen) {
                    return Ok(Outcome::Fail(format!(
                        "{here}: interrupt {src_name} never raised{}",
                        vp.fault_note()
                    )));
                }
                *seen += 1;
                happened.insert(arg(1)?.to_string());
            }
            "check_crc" => {
                vp.run_pending();
                let name = arg(0)?;
                if !happened.contains(name) {
                    return Err(err(format!("check_crc after unknown event `{name}`")));
                }
                let (addr, size, want) = (num(2)?, num(3)?, num(4)?);
                if size > MAX_TRACE_RANGE {
                    return Err(err(format!("check_crc size {size:#x} too large")));
                }
                let size = size as usize;
                let mut buf = vec![0u8; size];
                vp.host_read(addr, &mut buf).map_err(err)?;
                let crc = crc32(&buf);
                let got = u64::from(crc);
                let failure = (got != want).then(|| {
                    format!(
                        "{here}: check_crc {addr:#x}+{size:#x}: got {got:#010x}, expected {want:#010x}{}",
                        vp.fault_note()
                    )
                });
                if let Some(o) = checks.record(s.line, Observed::Crc(crc), failure, &mut first_fail)
                {
                    return Ok(o);
                }
            }
            "check_nothing" => {
                let name = arg(0)?;
                if !happened.contains(name) {
                    return Err(err(format!("check_nothing on unknown event `{name}`")));
                }
            }
            other => return Err(err(format!("unknown command `{other}`"))),
        }
    }
    Ok(checks.finish(vp, first_fail))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements() {
        let t =
            "// c\nreg_write(NVDLA_SDP.S_POINTER_0, 0);\nmem_load(pri_mem, 0x10, \"a,b.dat\");\n";
        let s = parse(Path::new("t.cfg"), t).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].line, 2);
        assert_eq!(s[1].args, vec!["pri_mem", "0x10", "\"a,b.dat\""]);
        let e = parse(Path::new("t.cfg"), "reg_write(a, 1)\n").unwrap_err();
        assert_eq!(e.line, 1);
    }
}
