//! NVDLA v1 `input.txn` player.
//!
//! One command per line, `#` starts a comment:
//! `load_mem ADDR SIZE FILE`, `write_reg ADDR DATA`, `read_reg ADDR MASK EXPECTED`,
//! `wait`, `dump_mem ADDR SIZE FILE`. Register addresses are CSB word addresses with a
//! `0xffff` prefix (byte offset = (ADDR & 0xffff) * 4). `read_reg` in the testbench
//! polls until the masked value matches; the model completes work synchronously, so one
//! read decides.

use super::{
    dat, parse_u64, read_aux, Checks, Observed, Outcome, TraceError, TraceTarget, MAX_TRACE_RANGE,
};
use std::path::Path;

fn num(path: &Path, line: usize, tok: Option<&str>, what: &str) -> Result<u64, TraceError> {
    let t = tok.ok_or_else(|| TraceError::at(path, line, format!("missing {what}")))?;
    parse_u64(t).ok_or_else(|| TraceError::at(path, line, format!("bad {what} `{t}`")))
}

fn csb_addr(path: &Path, line: usize, a: u64) -> Result<u32, TraceError> {
    if a >> 16 != 0xffff {
        return Err(TraceError::at(
            path,
            line,
            format!("register address {a:#x} lacks the 0xffff prefix"),
        ));
    }
    Ok(((a & 0xffff) as u32) * 4)
}

fn u32_of(path: &Path, line: usize, v: u64, what: &str) -> Result<u32, TraceError> {
    u32::try_from(v)
        .map_err(|_| TraceError::at(path, line, format!("{what} {v:#x} exceeds 32 bits")))
}

/// The data files an `input.txn` file loads or compares with (`load_mem`, `dump_mem`),
/// as written (relative to the file's directory); none when it cannot be read.
pub(crate) fn data_files(path: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|raw| {
            let mut t = raw.split('#').next().unwrap_or("").split_whitespace();
            match t.next() {
                Some("load_mem" | "dump_mem") => t.nth(2).map(str::to_string),
                _ => None,
            }
        })
        .collect()
}

/// Runs an `input.txn` file on `vp` (the model, or any other [`TraceTarget`]); the first
/// failed check ends the run.
pub fn run<T: TraceTarget + ?Sized>(vp: &mut T, path: &Path) -> Result<Outcome, TraceError> {
    run_checked(vp, path, &mut Checks::default())
}

/// Runs an `input.txn` file on `vp`, recording every `dump_mem` in `checks` (and going on
/// after a failed one with [`Checks::keep_going`]).
pub fn run_checked<T: TraceTarget + ?Sized>(
    vp: &mut T,
    path: &Path,
    checks: &mut Checks,
) -> Result<Outcome, TraceError> {
    let mut first_fail: Option<String> = None;
    let text = std::fs::read_to_string(path).map_err(|e| TraceError::at(path, 0, e.to_string()))?;
    let mut waited = 0usize;
    for (i, raw) in text.lines().enumerate() {
        let ln = i + 1;
        if raw.contains("dump_mem") {
            vp.run_pending();
        }
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() || line.starts_with('+') {
            continue;
        }
        let mut t = line.split_whitespace();
        let cmd = t.next().unwrap_or("");
        let here = || format!("{}:{ln}", path.display());
        match cmd {
            "load_mem" => {
                let addr = num(path, ln, t.next(), "address")?;
                let size = num(path, ln, t.next(), "size")?;
                let file = t
                    .next()
                    .ok_or_else(|| TraceError::at(path, ln, "missing file"))?;
                let (fp, body) = read_aux(path, ln, file)?;
                let mut bytes = dat::flatten(&dat::parse(&fp, &body)?).ok_or_else(|| {
                    TraceError::at(&fp, 0, "records reach past the supported range")
                })?;
                bytes.truncate(usize::try_from(size).unwrap_or(usize::MAX));
                if let Err(e) = vp.host_write(addr, &bytes) {
                    return Err(TraceError::at(path, ln, e));
                }
            }
            "write_reg" => {
                let a = csb_addr(path, ln, num(path, ln, t.next(), "address")?)?;
                let v = num(path, ln, t.next(), "data")?;
                vp.csb_write(a, u32_of(path, ln, v, "data")?);
            }
            "read_reg" => {
                let a = csb_addr(path, ln, num(path, ln, t.next(), "address")?)?;
                let mask = u32_of(path, ln, num(path, ln, t.next(), "mask")?, "mask")?;
                let exp = u32_of(
                    path,
                    ln,
                    num(path, ln, t.next(), "expected value")?,
                    "expected value",
                )?;
                // The testbench polls: while the value differs, time passes and the
                // next deferred interrupt may arrive (it arrives only while the line
                // is low, so a bounded number of steps decides).
                let mut got = vp.csb_read(a);
                for _ in 0..64 {
                    if got & mask == exp & mask {
                        break;
                    }
                    vp.irq_pending();
                    got = vp.csb_read(a);
                }
                if got & mask != exp & mask {
                    return Ok(Outcome::Fail(format!(
                        "{}: read_reg {a:#x}: got {got:#010x}, expected {exp:#010x} under mask {mask:#010x}{}",
                        here(),
                        vp.fault_note()
                    )));
                }
            }
            "wait" => {
                // Layers complete together in the model but one by one on silicon, where
                // a trace waits once per interrupt: each `wait` takes one done event, or
                // a pending line (software-set status). Waiting on the line lets the
                // next deferred interrupt arrive.
                let line = vp.irq_pending();
                if vp.event_count(None) > waited {
                    waited += 1;
                } else if !line {
                    return Ok(Outcome::Fail(format!(
                        "{}: wait: no interrupt will arrive{}",
                        here(),
                        vp.fault_note()
                    )));
                }
            }
            "dump_mem" => {
                let addr = num(path, ln, t.next(), "address")?;
                let size = num(path, ln, t.next(), "size")?;
                let file = t
                    .next()
                    .ok_or_else(|| TraceError::at(path, ln, "missing file"))?;
                let (fp, body) = read_aux(path, ln, file)?;
                let golden = dat::flatten(&dat::parse(&fp, &body)?).ok_or_else(|| {
                    TraceError::at(&fp, 0, "records reach past the supported range")
                })?;
                if (golden.len() as u64) < size {
                    return Err(TraceError::at(
                        path,
                        ln,
                        format!(
                            "{file} holds {} bytes, dump_mem asks for {size}",
                            golden.len()
                        ),
                    ));
                }
                if size > MAX_TRACE_RANGE {
                    return Err(TraceError::at(
                        path,
                        ln,
                        format!("dump_mem size {size:#x} too large"),
                    ));
                }
                let mut got = vec![0u8; size as usize];
                if let Err(e) = vp.host_read(addr, &mut got) {
                    return Err(TraceError::at(path, ln, e));
                }
                let failure = got.iter().zip(&golden).position(|(a, b)| a != b).map(|pos| {
                    let diffs = got.iter().zip(&golden).filter(|(a, b)| a != b).count();
                    format!(
                        "{}: dump_mem {file}: {diffs} bytes differ, first at {:#x} (got {:#04x}, expected {:#04x}){}",
                        here(),
                        addr + pos as u64,
                        got[pos],
                        golden[pos],
                        vp.fault_note()
                    )
                });
                if let Some(o) = checks.record(ln, Observed::Bytes(got), failure, &mut first_fail) {
                    return Ok(o);
                }
            }
            other => {
                return Err(TraceError::at(
                    path,
                    ln,
                    format!("unknown command `{other}`"),
                ))
            }
        }
    }
    Ok(checks.finish(vp, first_fail))
}
