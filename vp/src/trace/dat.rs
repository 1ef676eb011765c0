//! Surface files of the trace tests.
//!
//! Two text encodings occur. v1 surfaces and golden dumps: `key=value` header lines and
//! comments, then whitespace-separated `0x..` bytes laid out from offset 0. v2 surfaces:
//! records `{offset:0x.., size:N, payload:0x.. 0x.. ...},` each placing `size` bytes at
//! `offset`.

use super::TraceError;
use std::path::Path;

/// A run of bytes at an offset from the load address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// Offset from the load address.
    pub offset: u64,
    /// Bytes.
    pub bytes: Vec<u8>,
}

fn hex_byte(tok: &str) -> Option<u8> {
    let t = tok.trim_end_matches(',');
    let h = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X"))?;
    u8::from_str_radix(h, 16).ok()
}

fn parse_num(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Parses a surface file.
pub fn parse(path: &Path, text: &str) -> Result<Vec<Chunk>, TraceError> {
    if text.contains("payload:") {
        parse_records(path, text)
    } else {
        parse_flat(path, text)
    }
}

fn parse_flat(path: &Path, text: &str) -> Result<Vec<Chunk>, TraceError> {
    let mut bytes = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        // Header and footer lines (`key=value`, `memory type:dram`, `dump done`, ...)
        // carry no payload; payload lines start with a `0x` byte.
        if !(l.starts_with("0x") || l.starts_with("0X")) || l.contains('=') || l.contains(':') {
            continue;
        }
        for tok in l.split_whitespace() {
            match hex_byte(tok) {
                Some(b) => bytes.push(b),
                None => {
                    return Err(TraceError::at(path, i + 1, format!("bad byte `{tok}`")));
                }
            }
        }
    }
    Ok(vec![Chunk { offset: 0, bytes }])
}

fn parse_records(path: &Path, text: &str) -> Result<Vec<Chunk>, TraceError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        let Some(start) = l.find("{offset:") else {
            if l.trim_matches(|c: char| c == '{' || c == '}' || c == ',' || c.is_whitespace())
                .is_empty()
            {
                continue;
            }
            return Err(TraceError::at(path, i + 1, "expected a {offset:..} record"));
        };
        let err = |m: &str| TraceError::at(path, i + 1, m.to_string());
        let body = &l[start + 1..];
        let body = body.split('}').next().unwrap_or("");
        let mut offset = None;
        let mut size = None;
        let mut payload = Vec::new();
        for part in body.split(',') {
            let part = part.trim();
            if let Some(v) = part.strip_prefix("offset:") {
                offset = parse_num(v);
            } else if let Some(v) = part.strip_prefix("size:") {
                size = parse_num(v);
            } else if let Some(v) = part.strip_prefix("payload:") {
                for tok in v.split_whitespace() {
                    payload.push(hex_byte(tok).ok_or_else(|| err(&format!("bad byte `{tok}`")))?);
                }
            }
        }
        let offset = offset.ok_or_else(|| err("record without offset"))?;
        let size = size.ok_or_else(|| err("record without size"))?;
        if size != payload.len() as u64 {
            return Err(err(&format!(
                "record size {size} but {} payload bytes",
                payload.len()
            )));
        }
        out.push(Chunk {
            offset,
            bytes: payload,
        });
    }
    Ok(out)
}

/// Flattens chunks into one buffer starting at offset 0 (gaps are zero). `None` when
/// the records reach past [`super::MAX_TRACE_RANGE`].
pub fn flatten(chunks: &[Chunk]) -> Option<Vec<u8>> {
    let mut end = 0u64;
    for c in chunks {
        end = end.max(c.offset.checked_add(c.bytes.len() as u64)?);
    }
    if end > super::MAX_TRACE_RANGE {
        return None;
    }
    let mut v = vec![0; end as usize];
    for c in chunks {
        let o = c.offset as usize;
        v[o..o + c.bytes.len()].copy_from_slice(&c.bytes);
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_with_header() {
        let t = "# c\nW = 0x8\nData_size=0x2\n0x01 0x02\n 0xff\n";
        let c = parse(Path::new("x"), t).unwrap();
        assert_eq!(
            c,
            vec![Chunk {
                offset: 0,
                bytes: vec![1, 2, 0xff]
            }]
        );
        assert!(parse(Path::new("x"), "0x01 zz\n").is_err());
    }

    #[test]
    fn records() {
        let t = "{\n{offset:0x4, size:2, payload:0x00 0x20} ,\n{offset:0x0, size:1, payload:0x07},\n}\n";
        let c = parse(Path::new("x"), t).unwrap();
        assert_eq!(flatten(&c), Some(vec![7, 0, 0, 0, 0, 0x20]));
        let huge = [Chunk {
            offset: u64::MAX - 1,
            bytes: vec![1, 2],
        }];
        assert_eq!(flatten(&huge), None);
        assert!(parse(Path::new("x"), "{offset:0x0, size:2, payload:0x07},\n").is_err());
    }
}
