//! `nvdla-runtime --export-baremetal DIR`: a loadable and its input as a bare-metal image.
//!
//! The network is loaded and run in process exactly as `nvdla-runtime` always runs it, but
//! on a device whose buffers get fixed physical addresses from `--base` (the tables of the
//! image come first, then the buffers in creation order, page aligned). What that run put
//! in memory before its first task, and the task list with every address translated, is
//! the image ([`nvdla_baremetal::image`]); what it did at the register level is the trace.
//!
//! Files written to `DIR`:
//! - `image.bin`: the memory from the base (header, tables, buffers, then the scratch the
//!   CPU tasks copy through), to be placed at the base before the program starts;
//! - `nvdla-image.ld`: a linker-script fragment defining `NVDLA_IMAGE_BASE`,
//!   `NVDLA_IMAGE_SIZE` and `NVDLA_IMAGE_END`, for the program's script to keep clear of;
//! - `input.txn` and its `*.dat` files: the run as a v1 trace (`load_mem`, `write_reg`,
//!   `read_reg`, `wait`, then `dump_mem` of every byte the accelerator wrote, against the
//!   values it wrote), for RTL and FPGA testbenches and `nvdla-vp trace`. CPU tasks appear
//!   as the `load_mem` of what they changed before the next accelerator task;
//! - `expected/output-<i>.bin`: each output tensor's bytes from this run, which a bare-metal
//!   run must reproduce;
//! - `manifest.txt`: the layout in words.

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use nvdla_baremetal::image::{
    AddressEntry, ImageBuilder, Interface as ImageInterface, TensorEntry, HEADER_SIZE,
};
use nvdla_loadable::Interface;
use nvdla_port::device::{BufferAddress, Device};
use nvdla_port::vp::{Recorded, VpConfig, VpDevice};

use crate::app::{bind_inputs, run_loaded, AppError, Outcome, TensorIo};
use crate::error::Direction;
use crate::image::ImageOptions;
use crate::runtime::{RunOptions, Runtime};

/// Page size the buffers are aligned to (the KMD's allocation granule).
const PAGE: u64 = 4096;
/// Default physical address of the image: 128 MiB into the RAM of QEMU's aarch64 `virt`
/// board (RAM starts at 0x4000_0000), clear of a program linked at its start.
pub const DEFAULT_BASE: u64 = 0x4800_0000;
/// Largest image: the window the buffers are allocated from.
const WINDOW: u64 = 1 << 30;

/// Where and for what the image is laid out.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// Physical address of the image's first byte (page aligned).
    pub base: u64,
    /// The hardware build the run is for.
    pub config: VpConfig,
    /// The directory the files go to (created if needed).
    pub dir: PathBuf,
    /// What the loadable is called in comments.
    pub name: String,
}

/// What an export wrote.
#[derive(Debug, Clone)]
pub struct Exported {
    /// The in-process run's result (written as usual by the caller).
    pub outcome: Outcome,
    /// Bytes of `image.bin`.
    pub image_len: u64,
    /// Tasks in the image.
    pub tasks: usize,
    /// Lines of `input.txn` that access registers or memory.
    pub trace_commands: usize,
}

fn page_align(v: u64) -> u64 {
    v.div_ceil(PAGE) * PAGE
}

fn err(context: &str) -> impl Fn(std::io::Error) -> AppError + '_ {
    move |e| AppError(format!("--export-baremetal: {context}: {e}"))
}

/// Loads `loadable`, binds its input, runs it in process at fixed addresses from
/// `opts.base`, and writes the image, linker fragment, trace and expected outputs.
pub fn export(
    loadable: &[u8],
    image: Option<&Path>,
    io: &TensorIo,
    image_opts: &ImageOptions,
    run_opts: &RunOptions,
    opts: &ExportOptions,
    log: &mut dyn Write,
) -> Result<Exported, AppError> {
    if !opts.base.is_multiple_of(PAGE) || opts.base == 0 {
        return Err(AppError(format!(
            "--base {:#x} must be a nonzero multiple of {PAGE:#x}",
            opts.base
        )));
    }
    // The tables come first: their size follows from the loadable alone.
    let parsed = nvdla_loadable::Loadable::parse(loadable)
        .map_err(|e| AppError(format!("loadable: {e}")))?;
    let tasks: usize = parsed.submits().iter().map(|s| s.task_ids().len()).sum();
    let slots: usize = parsed.tasks().iter().map(|t| t.address_list().len()).sum();
    let tensors = parsed.tensors().len();
    let tables = HEADER_SIZE as u64 + 16 * tasks as u64 + 24 * slots as u64 + 64 * tensors as u64;
    let buffers_at = opts.base + page_align(tables);
    let mut dev = VpDevice::with_window(opts.config, buffers_at, WINDOW)
        .map_err(|e| AppError(format!("--export-baremetal: {e}")))?;

    let mut rt = Runtime::load(&mut dev, loadable)?;
    let result = export_loaded(
        &mut rt, &mut dev, image, io, image_opts, run_opts, opts, log,
    );
    rt.release(&mut dev);
    result
}

#[allow(clippy::too_many_arguments)]
fn export_loaded(
    rt: &mut Runtime<'_>,
    dev: &mut VpDevice,
    image: Option<&Path>,
    io: &TensorIo,
    image_opts: &ImageOptions,
    run_opts: &RunOptions,
    opts: &ExportOptions,
    log: &mut dyn Write,
) -> Result<Exported, AppError> {
    bind_inputs(rt, dev, image, io, image_opts, log)?;
    let region = |dev: &VpDevice, h| {
        dev.buffer_region(h)
            .ok_or_else(|| AppError("--export-baremetal: a buffer has no device address".into()))
    };
    let translate = |dev: &VpDevice, a: BufferAddress| -> Result<(u64, u64), AppError> {
        let (addr, size) = region(dev, a.handle)?;
        Ok((addr + a.offset, size.saturating_sub(a.offset)))
    };

    // The memory before the first task: every buffer's contents at its address.
    let mut end = opts.base;
    let mut placed = Vec::new();
    for h in rt.buffers() {
        let (addr, size) = region(dev, h)?;
        end = end.max(addr + size);
        placed.push((h, addr));
    }
    let build = nvdla_port::Build::from(opts.config) as u32;
    let mut builder = ImageBuilder::new(opts.base, build);
    let features = opts.config.hw().features;
    if !(features.int16 && features.fp16) {
        // The model computes them on this int8-only build, and the run just did.
        builder.flags(nvdla_baremetal::image::FLAG_MODEL_PRECISIONS);
    }
    let mut scratch = 0u64;
    let order = rt.run_order();
    for &ti in &order {
        let (interface, slots) = rt.task_slots(ti)?;
        let kind = match interface {
            Interface::EMU1 => ImageInterface::Emu,
            _ => ImageInterface::Dla,
        };
        let mut list = Vec::with_capacity(slots.len());
        for s in slots {
            let (addr, len) = match s.buffer {
                Some(a) => translate(dev, a)?,
                None => (0, 0),
            };
            if kind == ImageInterface::Emu {
                scratch = scratch.max(len);
            }
            list.push(AddressEntry {
                addr,
                len,
                content_len: s.content_len.unwrap_or(0) as u64,
            });
        }
        let timeout = match run_opts.timeout {
            nvdla_port::device::Timeout::Millis(ms) => ms,
            _ => 0,
        };
        builder.task(kind, timeout, list);
    }
    for (dir, count) in [
        (Direction::Output, rt.tensor_count(Direction::Output)),
        (Direction::Input, rt.tensor_count(Direction::Input)),
    ] {
        for bind_id in 0..count {
            let (at, size) = rt.tensor_location(dir, bind_id)?;
            let (addr, _) = translate(dev, at)?;
            let t = TensorEntry {
                addr,
                size,
                bind_id: bind_id as u32,
            };
            match dir {
                Direction::Output => builder.output(t),
                Direction::Input => builder.input(t),
            }
        }
    }
    let scratch_addr = page_align(end);
    let total = scratch_addr + page_align(scratch) - opts.base;
    let mut memory = vec![0u8; total as usize];
    for (h, addr) in &placed {
        let bytes = dev
            .map_buffer(*h)
            .map_err(|e| AppError(format!("--export-baremetal: {e}")))?;
        let o = (addr - opts.base) as usize;
        memory[o..o + bytes.len()].copy_from_slice(bytes);
    }
    let first_buffer = placed.iter().map(|p| p.1).min().unwrap_or(end);
    if (builder.tables_len() as u64) > first_buffer - opts.base {
        return Err(AppError(format!(
            "--export-baremetal: {} bytes of tables overlap the first buffer at {first_buffer:#x}",
            builder.tables_len()
        )));
    }
    builder
        .write(&mut memory, scratch_addr, page_align(scratch))
        .map_err(|e| AppError(format!("--export-baremetal: {e}")))?;

    // The run itself, recorded.
    dev.start_recording();
    let outcome = run_loaded(rt, dev, image_opts, run_opts, log);
    let recording = dev.take_recording();
    let outcome = outcome?;

    std::fs::create_dir_all(opts.dir.join("expected")).map_err(err("creating the directory"))?;
    std::fs::write(opts.dir.join("image.bin"), &memory).map_err(err("image.bin"))?;
    for (i, t) in outcome.tensors.iter().enumerate() {
        std::fs::write(opts.dir.join(format!("expected/output-{i}.bin")), &t.data)
            .map_err(err("expected output"))?;
    }
    std::fs::write(
        opts.dir.join("nvdla-image.ld"),
        linker_fragment(opts, total),
    )
    .map_err(err("nvdla-image.ld"))?;
    let regions: Vec<(u64, u64)> = placed
        .iter()
        .filter_map(|(h, _)| dev.buffer_region(*h))
        .collect();
    let trace_commands = write_trace(dev, &recording, &regions, opts)?;
    let manifest = manifest(
        rt,
        dev,
        opts,
        &order,
        total,
        scratch_addr,
        page_align(scratch),
    )?;
    std::fs::write(opts.dir.join("manifest.txt"), manifest).map_err(err("manifest.txt"))?;
    Ok(Exported {
        outcome,
        image_len: total,
        tasks: order.len(),
        trace_commands,
    })
}

fn linker_fragment(opts: &ExportOptions, size: u64) -> String {
    format!(
        "/* The NVDLA network image of {name} ({config}), written by\n\
         \x20* `nvdla-runtime --export-baremetal` (regenerate with the same command).\n\
         \x20* image.bin must be placed at NVDLA_IMAGE_BASE before the program starts; keep the\n\
         \x20* program's own sections out of [NVDLA_IMAGE_BASE, NVDLA_IMAGE_END). */\n\
         NVDLA_IMAGE_BASE = {base:#x};\n\
         NVDLA_IMAGE_SIZE = {size:#x};\n\
         NVDLA_IMAGE_END = NVDLA_IMAGE_BASE + NVDLA_IMAGE_SIZE;\n",
        name = opts.name,
        config = opts.config,
        base = opts.base,
    )
}

/// Bytes per line of a `.dat` file.
const DAT_LINE: usize = 32;

fn hex_lines(out: &mut String, bytes: &[u8]) {
    for line in bytes.chunks(DAT_LINE) {
        let mut first = true;
        for b in line {
            if !first {
                out.push(' ');
            }
            first = false;
            let _ = write!(out, "{b:#04x}");
        }
        out.push('\n');
    }
}

/// A `load_mem` file: `{offset, size, payload}` records of up to 32 bytes, one per line.
fn load_dat(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 6);
    for (i, line) in bytes.chunks(DAT_LINE).enumerate() {
        let _ = write!(
            s,
            "{{offset:{:#x}, size:{}, payload:",
            i * DAT_LINE,
            line.len()
        );
        for (j, b) in line.iter().enumerate() {
            let _ = write!(s, "{}{b:#04x}", if j == 0 { "" } else { " " });
        }
        s.push_str("},\n");
    }
    s
}

/// A `dump_mem` golden file: a header, then the bytes.
fn golden_dat(addr: u64, bytes: &[u8]) -> String {
    let mut s = format!(
        "dumped memory,start_address={addr:#x} size={:#x}\nmemory type:dram\n\n",
        bytes.len()
    );
    hex_lines(&mut s, bytes);
    s
}

/// Writes `input.txn` and its data files; returns the number of commands.
fn write_trace(
    dev: &VpDevice,
    rec: &[Recorded],
    buffers: &[(u64, u64)],
    opts: &ExportOptions,
) -> Result<usize, AppError> {
    let mut txn = format!(
        "# {} on {}: the run of `nvdla-runtime --export-baremetal`, image at {:#x}.\n\
         # Replay: nvdla-vp trace --config {} DIR\n",
        opts.name, opts.config, opts.base, opts.config
    );
    // What the host put in memory, byte by byte, to tell the accelerator's writes apart.
    let mut loaded: Vec<(u64, &[u8])> = Vec::new();
    let mut commands = 0;
    let mut loads = 0;
    let csb = |offset: u32| 0xffff_0000u32 | (offset / 4);
    for r in rec {
        commands += 1;
        match r {
            Recorded::Load { addr, bytes } => {
                let file = format!("load_{loads:04}.dat");
                loads += 1;
                std::fs::write(opts.dir.join(&file), load_dat(bytes)).map_err(err(&file))?;
                let _ = writeln!(txn, "load_mem {addr:#x} {:#x} {file}", bytes.len());
                loaded.push((*addr, bytes));
            }
            Recorded::RegWrite { offset, value } => {
                let _ = writeln!(txn, "write_reg {:#010x} {value:#010x}", csb(*offset));
            }
            Recorded::RegRead { offset, value } => {
                let _ = writeln!(
                    txn,
                    "read_reg {:#010x} 0xffffffff {value:#010x}",
                    csb(*offset)
                );
            }
            Recorded::Interrupt => txn.push_str("wait\n"),
        }
    }
    // What the host loaded is known byte by byte; the accelerator's output is whatever
    // differs from it now, in any buffer (its memory is zero where nothing was loaded).
    let mut spans: Vec<(u64, u64)> = buffers.iter().map(|&(a, n)| (a, a + n)).collect();
    spans.sort_unstable();
    let mut dumps = 0;
    for (start, end) in spans {
        let mut now = vec![0u8; (end - start) as usize];
        dev.read_device_memory(start, &mut now)
            .map_err(|e| AppError(format!("--export-baremetal: {e}")))?;
        let mut host = vec![0u8; now.len()];
        // In the order they happened: a later load of the same bytes wins.
        for &(addr, bytes) in &loaded {
            let (lo, hi) = (addr.max(start), (addr + bytes.len() as u64).min(end));
            if lo < hi {
                host[(lo - start) as usize..(hi - start) as usize]
                    .copy_from_slice(&bytes[(lo - addr) as usize..(hi - addr) as usize]);
            }
        }
        let mut i = 0;
        while i < now.len() {
            if now[i] == host[i] {
                i += 1;
                continue;
            }
            // The run of differences, merged across equal gaps shorter than 64 bytes.
            let (mut j, mut last) = (i + 1, i);
            while j < now.len() && j - last <= 64 {
                if now[j] != host[j] {
                    last = j;
                }
                j += 1;
            }
            let j = last + 1;
            let addr = start + i as u64;
            let file = format!("golden_{dumps:04}.dat");
            dumps += 1;
            std::fs::write(opts.dir.join(&file), golden_dat(addr, &now[i..j]))
                .map_err(err(&file))?;
            let _ = writeln!(txn, "dump_mem {addr:#x} {:#x} {file}", j - i);
            commands += 1;
            i = j;
        }
    }
    std::fs::write(opts.dir.join("input.txn"), txn).map_err(err("run.txn"))?;
    Ok(commands)
}

fn manifest(
    rt: &Runtime<'_>,
    dev: &VpDevice,
    opts: &ExportOptions,
    order: &[usize],
    total: u64,
    scratch_addr: u64,
    scratch: u64,
) -> Result<String, AppError> {
    let mut s = format!(
        "{} for {}: image of {total} bytes at {:#x}..{:#x}\n",
        opts.name,
        opts.config,
        opts.base,
        opts.base + total
    );
    for (pos, &ti) in order.iter().enumerate() {
        let (interface, slots) = rt.task_slots(ti)?;
        let _ = writeln!(
            s,
            "task {pos} (loadable task {ti}, {interface}): {} address(es)",
            slots.len()
        );
    }
    for dir in [Direction::Input, Direction::Output] {
        for i in 0..rt.tensor_count(dir) {
            let (at, size) = rt.tensor_location(dir, i)?;
            let addr = dev.buffer_region(at.handle).map_or(0, |r| r.0) + at.offset;
            let _ = writeln!(
                s,
                "{dir} {i} '{}': {size} bytes at {addr:#x}",
                rt.tensor(dir, i)?.name
            );
        }
    }
    let _ = writeln!(
        s,
        "scratch for CPU tasks: {scratch} bytes at {scratch_addr:#x}"
    );
    Ok(s)
}
