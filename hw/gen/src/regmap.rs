//! The NVDLA register map: parsers for NVIDIA's two register descriptions and the renderer
//! of `nvdla-hw`'s generated register files (`hw/src/regs/v1.rs`, `v2.rs`, `ids.rs`).
//!
//! - v1 (`nvdlav1:cmod/include/arnvdla.h`): a C header with, per register, a
//!   `// Register NVDLA_<UNIT>_<NAME>_0` comment, its absolute address, `_RESET_VAL`,
//!   `_READ_MASK` and `_WRITE_MASK`, then per field a `_RANGE hi:lo` followed by its
//!   `_MK_ENUM_CONST` values.
//! - v2 (`master:spec/manual/NVDLA_<UNIT>.rdl`): SystemRDL, one `regfile` per unit with
//!   `reg { field { sw = ..; reset = ..; encode = <enum>; } NAME[hi:lo]; } NAME @offset;`
//!   and the unit's base in its `addrmap` (`regs_NVDLA_<UNIT> NVDLA_<UNIT> @base;`).
//!   CFGROM's registers have no `@offset`: they follow each other.
//!
//! Only facts are taken: names, addresses, reset values, access masks, field positions
//! and enumerated values.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Every unit of the CSB in the order the generated tables list them: manual name,
/// Rust module name, `Unit` variant.
pub const UNITS: &[(&str, &str, &str)] = &[
    ("CFGROM", "cfgrom", "Cfgrom"),
    ("GLB", "glb", "Glb"),
    ("GEC", "gec", "Gec"),
    ("MCIF", "mcif", "Mcif"),
    ("CVIF", "cvif", "Cvif"),
    ("BDMA", "bdma", "Bdma"),
    ("CDMA", "cdma", "Cdma"),
    ("CSC", "csc", "Csc"),
    ("CMAC_A", "cmac_a", "CmacA"),
    ("CMAC_B", "cmac_b", "CmacB"),
    ("CACC", "cacc", "Cacc"),
    ("SDP_RDMA", "sdp_rdma", "SdpRdma"),
    ("SDP", "sdp", "Sdp"),
    ("PDP_RDMA", "pdp_rdma", "PdpRdma"),
    ("PDP", "pdp", "Pdp"),
    ("CDP_RDMA", "cdp_rdma", "CdpRdma"),
    ("CDP", "cdp", "Cdp"),
    ("RBK", "rbk", "Rubik"),
];

/// One bit field of a register.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Name as in the manual.
    pub name: String,
    /// Lowest bit.
    pub lo: u32,
    /// Width in bits.
    pub width: u32,
    /// Enumerated values (name, value), as the manual lists them.
    pub values: Vec<(String, u32)>,
}

/// One register of a unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Register {
    /// Name without the `NVDLA_<UNIT>_` prefix (and v1's `_0` suffix).
    pub name: String,
    /// Byte offset inside the unit.
    pub offset: u32,
    /// Reset value.
    pub reset: u32,
    /// Bits that read back.
    pub rmask: u32,
    /// Bits software writes.
    pub wmask: u32,
    /// Fields, lowest bit first.
    pub fields: Vec<Field>,
}

/// One unit (4 KiB CSB window).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// Manual name (`CDMA`).
    pub name: String,
    /// CSB byte address.
    pub base: u32,
    /// Registers by offset.
    pub regs: Vec<Register>,
}

/// Parses a C integer such as `0x1f`, `12`, `_MK_MASK_CONST(0x3)` (first number found).
fn c_number(s: &str) -> Option<u32> {
    let s = match s.find('(') {
        Some(i) => s[i + 1..].trim_end_matches(')'),
        None => s,
    };
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u32::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

/// Unit of a full v1 register name (`NVDLA_CMAC_A_...`): the longest unit prefix.
fn v1_unit(full: &str) -> Option<(&'static str, &str)> {
    let rest = full.strip_prefix("NVDLA_")?;
    UNITS
        .iter()
        .filter_map(|(u, _, _)| Some((*u, rest.strip_prefix(u)?.strip_prefix('_')?)))
        .max_by_key(|(u, _)| u.len())
}

/// Parses v1's `arnvdla.h`.
pub fn parse_v1(header: &str) -> Result<Vec<Unit>, String> {
    let mut defs: BTreeMap<&str, &str> = BTreeMap::new();
    // (unit, register full name, fields with their define order)
    let mut order: Vec<(&'static str, String, Vec<Field>)> = Vec::new();
    for line in header.lines() {
        if let Some(full) = line.strip_prefix("// Register ") {
            let full = full.trim();
            if let Some((unit, _)) = v1_unit(full) {
                order.push((unit, full.to_string(), Vec::new()));
            } else {
                order.push(("", full.to_string(), Vec::new()));
            }
            continue;
        }
        let Some(def) = line.strip_prefix("#define ") else {
            continue;
        };
        let mut parts = def.splitn(2, char::is_whitespace);
        let (Some(name), Some(value)) = (parts.next(), parts.next()) else {
            continue;
        };
        let value = value.trim();
        defs.insert(name, value);
        let Some((unit, full, fields)) = order.last_mut() else {
            continue;
        };
        if unit.is_empty() {
            continue;
        }
        let Some(rest) = name
            .strip_prefix(full.as_str())
            .and_then(|r| r.strip_prefix('_'))
        else {
            continue;
        };
        if let Some(field) = rest.strip_suffix("_RANGE") {
            let (hi, lo) = value
                .split_once(':')
                .ok_or_else(|| format!("arnvdla.h: {name}: bad range {value}"))?;
            let (hi, lo): (u32, u32) = (
                hi.trim().parse().map_err(|_| format!("{name}: {value}"))?,
                lo.trim().parse().map_err(|_| format!("{name}: {value}"))?,
            );
            fields.push(Field {
                name: field.to_string(),
                lo,
                width: hi - lo + 1,
                values: Vec::new(),
            });
        } else if value.starts_with("_MK_ENUM_CONST") {
            let f = fields
                .last_mut()
                .ok_or_else(|| format!("arnvdla.h: {name}: enum before any field"))?;
            let e = rest
                .strip_prefix(f.name.as_str())
                .and_then(|e| e.strip_prefix('_'))
                .ok_or_else(|| format!("arnvdla.h: {name}: enum of no field ({})", f.name))?;
            let v = c_number(value).ok_or_else(|| format!("arnvdla.h: {name}: {value}"))?;
            f.values.push((e.to_string(), v));
        }
    }
    let mut units: BTreeMap<&str, Vec<(u32, Register)>> = BTreeMap::new();
    for (unit, full, mut fields) in order {
        if unit.is_empty() {
            continue;
        }
        let num = |suffix: &str| -> Result<u32, String> {
            let k = format!("{full}{suffix}");
            let v = defs
                .get(k.as_str())
                .ok_or_else(|| format!("arnvdla.h: no {k}"))?;
            c_number(v).ok_or_else(|| format!("arnvdla.h: {k}: {v}"))
        };
        let (_, short) = v1_unit(&full).expect("unit checked above");
        let name = short
            .strip_suffix("_0")
            .ok_or_else(|| format!("arnvdla.h: register {full} does not end in _0"))?;
        fields.sort_by_key(|f| f.lo);
        let addr = num("")?;
        units.entry(unit).or_default().push((
            addr,
            Register {
                name: name.to_string(),
                offset: addr,
                reset: num("_RESET_VAL")?,
                rmask: num("_READ_MASK")?,
                wmask: num("_WRITE_MASK")?,
                fields,
            },
        ));
    }
    let mut out = Vec::new();
    for (u, _, _) in UNITS {
        let Some(regs) = units.remove(u) else {
            continue;
        };
        let base = regs.iter().map(|(a, _)| *a).min().unwrap_or(0) & !0xfff;
        let mut regs: Vec<Register> = regs
            .into_iter()
            .map(|(a, mut r)| {
                r.offset = a - base;
                r
            })
            .collect();
        regs.sort_by_key(|r| r.offset);
        out.push(Unit {
            name: u.to_string(),
            base,
            regs,
        });
    }
    Ok(out)
}

/// Text between the first `open` at or after `from` and its matching `}`:
/// (body, index after the closing brace).
fn braced(text: &str, from: usize) -> Option<(&str, usize)> {
    let start = from + text[from..].find('{')? + 1;
    let mut depth = 1;
    for (i, c) in text[start..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some((&text[start..start + i], start + i + 1));
                }
            }
            _ => {}
        }
    }
    None
}

/// `key = value;` inside an RDL body (first occurrence at the top of `body`).
fn rdl_prop<'a>(body: &'a str, key: &str) -> Option<&'a str> {
    body.split([';', '\n']).find_map(|l| {
        let (k, v) = l.trim().split_once('=')?;
        (k.trim() == key).then(|| v.trim())
    })
}

/// An RDL number: `0x1f`, `12`, `2'd1`, `4'hf`.
fn rdl_number(s: &str) -> Option<u32> {
    let s = s.replace('_', "");
    if let Some((_, v)) = s.split_once('\'') {
        let (base, digits) = v.split_at(1);
        return match base {
            "d" => digits.parse().ok(),
            "h" => u32::from_str_radix(digits, 16).ok(),
            "b" => u32::from_str_radix(digits, 2).ok(),
            _ => None,
        };
    }
    c_number(&s)
}

/// Parses one unit's `NVDLA_<UNIT>.rdl`.
pub fn parse_v2_unit(unit: &str, rdl: &str) -> Result<Unit, String> {
    let file = format!("NVDLA_{unit}.rdl");
    // Descriptions (string literals) may hold anything, braces and keywords included.
    let mut plain = String::with_capacity(rdl.len());
    let mut quoted = false;
    for c in rdl.chars() {
        if c == '"' {
            quoted = !quoted;
        } else if !quoted {
            plain.push(c);
        }
    }
    let rdl = plain.as_str();
    let anchor = format!("regs_NVDLA_{unit} NVDLA_{unit} @");
    let base = rdl
        .find(&anchor)
        .and_then(|i| {
            let rest = &rdl[i + anchor.len()..];
            rdl_number(&rest[..rest.find(';')?])
        })
        .ok_or_else(|| format!("{file}: no `{anchor}<base>;`"))?;
    let mut regs = Vec::new();
    let mut next = 0;
    let mut at = 0;
    while let Some(i) = rdl[at..].find("reg {") {
        let i = at + i;
        // `reg {` must start a token (not `regfile`, `reg_...`).
        if i > 0 && !rdl[..i].ends_with(char::is_whitespace) {
            at = i + 5;
            continue;
        }
        let (body, end) = braced(rdl, i).ok_or_else(|| format!("{file}: unclosed reg"))?;
        let tail = &rdl[end..];
        let semi = tail
            .find(';')
            .ok_or_else(|| format!("{file}: reg without `;`"))?;
        let decl = tail[..semi].trim();
        let (name, offset) = match decl.split_once('@') {
            Some((n, o)) => (
                n.trim(),
                rdl_number(o.trim()).ok_or_else(|| format!("{file}: offset {o}"))?,
            ),
            None => (decl, next),
        };
        next = offset + 4;
        at = end + semi;
        // Enumerations of this register.
        let mut enums: BTreeMap<&str, Vec<(String, u32)>> = BTreeMap::new();
        let mut p = 0;
        while let Some(j) = body[p..].find("enum ") {
            let j = p + j;
            let ename = body[j + 5..]
                .split(|c: char| c.is_whitespace() || c == '{')
                .next()
                .unwrap_or("");
            let (ebody, eend) =
                braced(body, j).ok_or_else(|| format!("{file}: {name}: unclosed enum"))?;
            let mut values = Vec::new();
            // Items may carry `{desc = "...";}`: drop nested braces first.
            let mut flat = String::new();
            let mut depth = 0;
            for c in ebody.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ if depth == 0 => flat.push(c),
                    _ => {}
                }
            }
            for item in flat.split(';') {
                let item = item.trim();
                if item.is_empty() {
                    continue;
                }
                let (k, v) = item
                    .split_once('=')
                    .ok_or_else(|| format!("{file}: {name}: enum item {item}"))?;
                let v = rdl_number(v.trim())
                    .ok_or_else(|| format!("{file}: {name}: enum value {v}"))?;
                values.push((k.trim().to_string(), v));
            }
            enums.insert(ename, values);
            p = eend;
        }
        // Fields.
        let (mut reset, mut rmask, mut wmask) = (0u32, 0u32, 0u32);
        let mut fields = Vec::new();
        let mut p = 0;
        while let Some(j) = body[p..].find("field {") {
            let j = p + j;
            let (fbody, fend) =
                braced(body, j).ok_or_else(|| format!("{file}: {name}: unclosed field"))?;
            let ftail = &body[fend..];
            let fsemi = ftail
                .find(';')
                .ok_or_else(|| format!("{file}: {name}: field without `;`"))?;
            let fdecl = ftail[..fsemi].trim();
            let (fname, range) = fdecl
                .split_once('[')
                .ok_or_else(|| format!("{file}: {name}: field {fdecl}"))?;
            let range = range.trim_end_matches(']');
            let (hi, lo) = match range.split_once(':') {
                Some((h, l)) => (h.trim().parse::<u32>(), l.trim().parse::<u32>()),
                None => (range.trim().parse(), range.trim().parse()),
            };
            let (hi, lo) = (
                hi.map_err(|_| format!("{file}: {name}: range {range}"))?,
                lo.map_err(|_| format!("{file}: {name}: range {range}"))?,
            );
            let width = hi - lo + 1;
            let mask = (((1u64 << width) - 1) << lo) as u32;
            let sw = rdl_prop(fbody, "sw").unwrap_or("");
            if sw.contains('r') {
                rmask |= mask;
            }
            if sw.contains('w') {
                wmask |= mask;
            }
            if let Some(r) = rdl_prop(fbody, "reset") {
                let r = rdl_number(r).ok_or_else(|| format!("{file}: {name}: reset {r}"))?;
                reset |= ((u64::from(r) << lo) as u32) & mask;
            }
            let values = match rdl_prop(fbody, "encode") {
                Some(e) => enums
                    .get(e)
                    .cloned()
                    .ok_or_else(|| format!("{file}: {name}: no enum {e}"))?,
                None => Vec::new(),
            };
            fields.push(Field {
                name: fname.trim().to_string(),
                lo,
                width,
                values,
            });
            p = fend + fsemi;
        }
        fields.sort_by_key(|f| f.lo);
        regs.push(Register {
            name: name.to_string(),
            offset,
            reset,
            rmask,
            wmask,
            fields,
        });
    }
    regs.sort_by_key(|r| r.offset);
    Ok(Unit {
        name: unit.to_string(),
        base,
        regs,
    })
}

/// The Rust module name and `Unit` variant of a manual unit name.
fn unit_names(unit: &str) -> (&'static str, &'static str) {
    let (_, m, v) = UNITS
        .iter()
        .find(|(u, _, _)| *u == unit)
        .expect("units come from UNITS");
    (m, v)
}

/// A manual name as a Rust identifier (names starting with a digit get a `_`).
fn ident(name: &str) -> String {
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        format!("_{name}")
    } else {
        name.to_string()
    }
}

/// The `register_bitfields!` field list of a register. Enumerated values whose number
/// repeats an earlier one, or named like tock-registers' own `SET`/`CLEAR`, are left out
/// (a field's values become one Rust enum).
fn bitfield(r: &Register) -> String {
    let mut s = String::new();
    for f in &r.fields {
        let mut seen = Vec::new();
        let mut values = Vec::new();
        for (n, v) in &f.values {
            if seen.contains(v) || n == "SET" || n == "CLEAR" || *v >= 1u32 << f.width.min(31) {
                continue;
            }
            seen.push(*v);
            values.push(format!("{} = {v}", ident(n)));
        }
        let _ = writeln!(
            s,
            "            {} OFFSET({}) NUMBITS({}) [{}],",
            ident(&f.name),
            f.lo,
            f.width,
            values.join(", ")
        );
    }
    s
}

/// Renders one generation's register file (`hw/src/regs/v1.rs` or `v2.rs`).
pub fn render_map(units: &[Unit], source: &str, command: &str, generation: &str) -> String {
    let mut s = String::new();
    let mut line = |l: &str| {
        s.push_str(l);
        s.push('\n');
    };
    line("// @generated by nvdla-hw-gen (hw/gen). Do not edit: regenerate.");
    line("//");
    line(&format!("// Source: https://github.com/nvdla/hw {source}."));
    line("//");
    line("// Regenerate from the workspace root, with a clone of nvdla/hw that has both");
    line("// branches (e.g. `git clone --mirror https://github.com/nvdla/hw nvdla-hw.git`):");
    line("//");
    line(&format!("//     {command}"));
    line("//");
    line("// (append `--check` to verify the committed files instead of writing them).");
    line("");
    line(&format!(
        "//! The {generation} register map: per unit its CSB base, per register its byte offset"
    ));
    line(
        "//! inside the unit (a `u32` constant named like the register), its `register_bitfields!`",
    );
    line(
        "//! field layout (a module of the same name) and a [`RegDesc`] table (`REGS`) with reset",
    );
    line("//! values and access masks.");
    line("");
    line("#![allow(missing_docs, clippy::all)]");
    line("");
    line("use super::{RegDesc, Unit, UnitDesc};");
    line("");
    line("/// Every unit of this register map, in the order of `Unit::ALL`.");
    line("pub const UNITS: &[UnitDesc] = &[");
    for u in units {
        let (m, v) = unit_names(&u.name);
        line(&format!(
            "    UnitDesc {{ unit: Unit::{v}, base: {m}::BASE, regs: {m}::REGS }},"
        ));
    }
    line("];");
    line("");
    line("/// CSB byte address of `unit` (`None` when this map has no such unit).");
    line("pub const fn base(unit: Unit) -> Option<u32> {");
    line("    match unit {");
    for u in units {
        let (m, v) = unit_names(&u.name);
        line(&format!("        Unit::{v} => Some({m}::BASE),"));
    }
    if units.len() < UNITS.len() {
        line("        _ => None,");
    }
    line("    }");
    line("}");
    for u in units {
        let (m, _) = unit_names(&u.name);
        line("");
        line(&format!("/// Registers of unit {}.", u.name));
        line(&format!("pub mod {m} {{"));
        line("    use super::RegDesc;");
        line("");
        line("    /// CSB byte address of the unit.");
        line(&format!("    pub const BASE: u32 = {:#x};", u.base));
        for r in &u.regs {
            line(&format!(
                "    /// `{}`: reset {:#x}, read mask {:#x}, write mask {:#x}.",
                r.name, r.reset, r.rmask, r.wmask
            ));
            line(&format!(
                "    pub const {}: u32 = {:#05x};",
                r.name, r.offset
            ));
        }
        for r in u.regs.iter().filter(|r| !r.fields.is_empty()) {
            line("    tock_registers::register_bitfields![u32,");
            line(&format!("        pub {} [", r.name));
            s_push(&mut line, &bitfield(r));
            line("        ]");
            line("    ];");
        }
        line("    /// Every register of the unit, by offset.");
        line("    pub const REGS: &[RegDesc] = &[");
        for r in &u.regs {
            line(&format!(
                "        RegDesc {{ name: \"{}\", offset: {}, reset: {:#x}, rmask: {:#x}, wmask: {:#x} }},",
                r.name, r.name, r.reset, r.rmask, r.wmask
            ));
        }
        line("    ];");
        line("}");
    }
    s
}

fn s_push(line: &mut impl FnMut(&str), text: &str) {
    for l in text.lines() {
        line(l);
    }
}

/// Renders the typed register identifiers (`hw/src/regs/ids.rs`): one [`Reg`] per
/// register of the union of both maps, whose offset must agree between them.
///
/// [`Reg`]: ../../nvdla_hw/regs/struct.Reg.html
pub fn render_ids(v1: &[Unit], v2: &[Unit], command: &str) -> Result<String, String> {
    let mut s = String::new();
    let mut line = |l: &str| {
        s.push_str(l);
        s.push('\n');
    };
    line("// @generated by nvdla-hw-gen (hw/gen). Do not edit: regenerate.");
    line("//");
    line("// Source: https://github.com/nvdla/hw branch nvdlav1 cmod/include/arnvdla.h and");
    line("// branch master spec/manual/NVDLA_*.rdl (the union of both register maps).");
    line("//");
    line("// Regenerate from the workspace root, with a clone of nvdla/hw that has both");
    line("// branches (e.g. `git clone --mirror https://github.com/nvdla/hw nvdla-hw.git`):");
    line("//");
    line(&format!("//     {command}"));
    line("//");
    line("// (append `--check` to verify the committed files instead of writing them).");
    line("");
    line(
        "//! Typed register identifiers of both generations: per unit, one [`Reg`](super::Reg) per",
    );
    line("//! register (its offset is the same in every generation that has it;");
    line("//! [`Reg::gens`](super::Reg::gens) says which).");
    line("//! Each unit module also re-exports the field layouts of the widest map that has the");
    line("//! register (v2, except for registers only v1 has), so `ids::cdma::D_MISC_CFG` is the");
    line("//! register and `ids::cdma::D_MISC_CFG::PROC_PRECISION` one of its fields.");
    line("");
    line("#![allow(missing_docs, clippy::all)]");
    for (uname, m, v) in UNITS {
        let a = v1.iter().find(|u| u.name == *uname);
        let b = v2.iter().find(|u| u.name == *uname);
        if a.is_none() && b.is_none() {
            continue;
        }
        let mut regs: BTreeMap<u32, (String, u8)> = BTreeMap::new();
        for (u, bit) in [(a, 1u8), (b, 2u8)] {
            for r in u.iter().flat_map(|u| &u.regs) {
                let e = regs.entry(r.offset).or_insert((r.name.clone(), 0));
                if e.0 != r.name {
                    return Err(format!(
                        "{uname}: offset {:#x} is {} in v1 and {} in v2",
                        r.offset, e.0, r.name
                    ));
                }
                e.1 |= bit;
            }
        }
        let fields_from = if b.is_some() { "v2" } else { "v1" };
        line("");
        line(&format!("/// Registers of unit {uname}."));
        line(&format!("pub mod {m} {{"));
        line("    use super::super::{Gens, Reg, Unit};");
        line(&format!("    pub use super::super::{fields_from}::{m}::*;"));
        if let (Some(_), Some(b)) = (a, b) {
            // Registers only v1 has keep v1's layout.
            for r in a.iter().flat_map(|u| &u.regs) {
                if !b.regs.iter().any(|x| x.name == r.name) && !r.fields.is_empty() {
                    line(&format!("    pub use super::super::v1::{m}::{};", r.name));
                }
            }
        }
        line("");
        for (i, (off, (name, gens))) in regs.iter().enumerate() {
            let g = match gens {
                1 => "Gens::V1",
                2 => "Gens::V2",
                _ => "Gens::BOTH",
            };
            line(&format!(
                "    pub const {name}: Reg = Reg::new(Unit::{v}, {i}, {off:#05x}, {g});"
            ));
        }
        line("    /// Number of registers of the unit (both generations).");
        line(&format!("    pub const COUNT: usize = {};", regs.len()));
        line("    /// Every register of the unit, by offset.");
        let names: Vec<&str> = regs.values().map(|(n, _)| n.as_str()).collect();
        line(&format!(
            "    pub const ALL: &[Reg] = &[{}];",
            names.join(", ")
        ));
        line("}");
    }
    line("");
    line("/// Every register of `unit`, by offset (index order).");
    line("pub const fn all(unit: super::Unit) -> &'static [super::Reg] {");
    line("    match unit {");
    for (_, m, v) in UNITS {
        line(&format!("        super::Unit::{v} => {m}::ALL,"));
    }
    line("    }");
    line("}");
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "\
// Register NVDLA_CDMA_D_MISC_CFG_0
#define NVDLA_CDMA_D_MISC_CFG_0                 _MK_ADDR_CONST(0x5014)
#define NVDLA_CDMA_D_MISC_CFG_0_RESET_VAL                       _MK_MASK_CONST(0x1100)
#define NVDLA_CDMA_D_MISC_CFG_0_READ_MASK                       _MK_MASK_CONST(0x3301)
#define NVDLA_CDMA_D_MISC_CFG_0_WRITE_MASK                      _MK_MASK_CONST(0x3301)
#define NVDLA_CDMA_D_MISC_CFG_0_CONV_MODE_RANGE                 0:0
#define NVDLA_CDMA_D_MISC_CFG_0_CONV_MODE_INIT_ENUM                     DIRECT
#define NVDLA_CDMA_D_MISC_CFG_0_CONV_MODE_DIRECT                        _MK_ENUM_CONST(0)
#define NVDLA_CDMA_D_MISC_CFG_0_CONV_MODE_WINOGRAD                      _MK_ENUM_CONST(1)
#define NVDLA_CDMA_D_MISC_CFG_0_PROC_PRECISION_RANGE                    13:12
#define NVDLA_CDMA_D_MISC_CFG_0_PROC_PRECISION_INT8                     _MK_ENUM_CONST(0)

// Register NVDLA_CDMA_S_STATUS_0
#define NVDLA_CDMA_S_STATUS_0                   _MK_ADDR_CONST(0x5000)
#define NVDLA_CDMA_S_STATUS_0_RESET_VAL                 _MK_MASK_CONST(0x0)
#define NVDLA_CDMA_S_STATUS_0_READ_MASK                 _MK_MASK_CONST(0x30003)
#define NVDLA_CDMA_S_STATUS_0_WRITE_MASK                        _MK_MASK_CONST(0x0)
#define NVDLA_CDMA_S_STATUS_0_STATUS_0_RANGE                    1:0
#define NVDLA_CDMA_S_STATUS_0_STATUS_1_RANGE                    17:16
";

    #[test]
    fn v1_header() {
        let units = parse_v1(HEADER).unwrap();
        assert_eq!(units.len(), 1);
        let u = &units[0];
        assert_eq!((u.name.as_str(), u.base), ("CDMA", 0x5000));
        assert_eq!(u.regs[0].name, "S_STATUS");
        let misc = &u.regs[1];
        assert_eq!(
            (
                misc.name.as_str(),
                misc.offset,
                misc.reset,
                misc.rmask,
                misc.wmask
            ),
            ("D_MISC_CFG", 0x14, 0x1100, 0x3301, 0x3301)
        );
        assert_eq!(misc.fields.len(), 2);
        assert_eq!(
            misc.fields[0].values,
            vec![("DIRECT".to_string(), 0), ("WINOGRAD".to_string(), 1)]
        );
        assert_eq!((misc.fields[1].lo, misc.fields[1].width), (12, 2));
        // STATUS_0's enum values would not be STATUS's: fields are taken in order.
        assert_eq!(u.regs[0].fields[1].name, "STATUS_1");
    }

    const RDL: &str = r#"
regfile regs_NVDLA_PDP{
    reg {
        name = "S_POINTER";
        desc = "a { brace and reg { in a description; enum x {";
        enum S_POINTER_PRODUCER_enum {
            GROUP_0 = 1'd0;
            GROUP_1 = 1'd1 {desc = "one; two";};
        };
        field {
            encode          = S_POINTER_PRODUCER_enum;
            sw              = rw;
            reset           = 0x1;
        } PRODUCER[0:0];
        field {
            sw              = r;
            reset           = 0x0;
        } CONSUMER[16:16];
    }S_POINTER @0x4;
    reg {
        field { sw = w; reset = 0x3; } LAUNCH[3:2];
    }D_OP @0x8;
};
addrmap {
    regs_NVDLA_PDP NVDLA_PDP @0xb000;
};
"#;

    #[test]
    fn v2_manual() {
        let u = parse_v2_unit("PDP", RDL).unwrap();
        assert_eq!(u.base, 0xb000);
        assert_eq!(u.regs.len(), 2);
        let p = &u.regs[0];
        assert_eq!(
            (p.name.as_str(), p.offset, p.reset, p.rmask, p.wmask),
            ("S_POINTER", 4, 1, 0x10001, 1)
        );
        assert_eq!(p.fields[0].values[1], ("GROUP_1".to_string(), 1));
        let d = &u.regs[1];
        assert_eq!((d.reset, d.rmask, d.wmask), (0xc, 0, 0xc));
    }

    #[test]
    fn rendered_fields_skip_clashing_values() {
        let r = Register {
            name: "X".into(),
            offset: 0,
            reset: 0,
            rmask: 1,
            wmask: 1,
            fields: vec![Field {
                name: "EN".into(),
                lo: 0,
                width: 1,
                values: vec![("NO".into(), 0), ("SET".into(), 1), ("ALIAS".into(), 0)],
            }],
        };
        assert_eq!(bitfield(&r).trim(), "EN OFFSET(0) NUMBITS(1) [NO = 0],");
    }

    #[test]
    fn ids_need_one_offset_per_name() {
        let u = |name: &str| Unit {
            name: "GLB".into(),
            base: 0,
            regs: vec![Register {
                name: name.into(),
                offset: 4,
                reset: 0,
                rmask: 0,
                wmask: 0,
                fields: vec![],
            }],
        };
        assert!(render_ids(&[u("A")], &[u("A")], "cmd").is_ok());
        assert!(render_ids(&[u("A")], &[u("B")], "cmd").is_err());
    }
}
