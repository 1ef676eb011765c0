//! The `nvdla-runtime` command: upstream's `nvdla_runtime` test application.
//!
//! `nvdla-runtime --loadable F [--image F] [--normalize V] [--mean a,b,c[,d]] [--rawdump]`
//! loads the loadable, converts the image (if any) into input 0, runs every task, and writes
//! output 0 as `output.dimg` (or, with `--rawdump`, upstream's text dump instead), printing
//! `Test pass` at the end as scripts expect. `-s` serves upstream's regression client
//! instead ([`crate::server`]). Our additions: `--device`, `--config`, `--output`,
//! `--timeout`, `--port`, and a progress line per task on stderr. Any failure is one line on
//! stderr and exit status 1; `-h` prints the help.
//!
//! Tensors as numbers ([`crate::tensor`]): `--input F` (`.npy` or ONNX `TensorProto` `.pb`,
//! repeatable for inputs 1, 2, ...) instead of `--image`, with `--input-scale S` for integer
//! inputs; `--output F.npy` writes every output as a float32 NCHW array (output i > 0 to
//! `F_<i>.npy`), with `--output-scale S` for integer outputs.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Parser;
use nvdla_port::device::{Device, Timeout};

use crate::device::{DeviceKind, DeviceOpener, HwConfig};
use crate::dimg::{DlaImage, Numbering};
use crate::error::Direction;
use crate::image::{self, ImageOptions};
use crate::runtime::{Phase, RunOptions, Runtime, TensorDesc};
use crate::tensor::{self, HostTensor, TensorFileError};

/// Command-line arguments.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "nvdla-runtime",
    about = "Run an NVDLA loadable and dump its output (compatible with upstream nvdla_runtime)",
    disable_version_flag = true
)]
pub struct Args {
    /// Launch in server mode (upstream regression client protocol).
    #[arg(short = 's')]
    pub server: bool,
    /// The loadable (flatbuffer) to run.
    #[arg(long, value_name = "loadable_file")]
    pub loadable: Option<PathBuf>,
    /// Input image: .pgm (P5/P2) or .jpg.
    #[arg(long, value_name = "file")]
    pub image: Option<PathBuf>,
    /// Input tensor as numbers: .npy (NumPy) or .pb (ONNX TensorProto) of shape (1, C, H, W),
    /// (C, H, W), or (1, C) for 1xCx1x1; converted to the input's precision and layout.
    /// Repeat for inputs 1, 2, ...
    #[arg(long, value_name = "file", conflicts_with = "image")]
    pub input: Vec<PathBuf>,
    /// Scale of integer (int8/int16) inputs, real = q * S: float data is quantized with it
    /// (required for float data); without it integer data is copied. Once for every input
    /// or once per --input.
    #[arg(long, value_name = "S", value_parser = parse_scale)]
    pub input_scale: Vec<f32>,
    /// Scale of integer outputs written to .npy (real = q * S); without it the integer
    /// values are written. Once for every output or once per output.
    #[arg(long, value_name = "S", value_parser = parse_scale)]
    pub output_scale: Vec<f32>,
    /// Normalize value for the input image (1..255; fp16 inputs are divided by it).
    #[arg(long, value_name = "value", value_parser = image::parse_normalize)]
    pub normalize: Option<u8>,
    /// Comma-separated per-channel mean subtracted from the input image (fp16 inputs).
    #[arg(long, value_name = "a,b,c[,d]", value_parser = image::parse_mean)]
    pub mean: Option<[f32; 4]>,
    /// Write the output as upstream's raw text dump instead of the binary dimg.
    #[arg(long)]
    pub rawdump: bool,
    /// Pixel format numbers in the output `.dimg` header: `regression` (as the golden files
    /// of NVIDIA's regression, made before nvdla/sw inserted `D_F8_CxHWx_x8_I`) or
    /// `release` (as the last nvdla/sw `nvdla_runtime` writes them; fp16 and int16 outputs
    /// then say one more).
    #[arg(long, default_value = "regression", value_parser = parse_numbering)]
    pub dimg_numbering: Numbering,
    /// Input path (upstream's -i; only checked for existence).
    #[arg(short = 'i', value_name = "path", hide = true)]
    pub input_path: Option<PathBuf>,
    /// Device backend: vp, linux, socket:PATH, rtl (NVIDIA's nv_small RTL under Verilator:
    /// the harness `NVDLA_RTL_HARNESS` names, or rtl:HARNESS; prints hardware cycles), or
    /// mock (DLA tasks not executed); default: linux when an nvdla DRM node exists, else vp.
    #[arg(long, default_value_t = crate::device::default_device(), value_parser = parse_kind)]
    pub device: DeviceKind,
    /// Hardware configuration: nv_full, nv_large, nv_medium_1024_full, nv_medium_512,
    /// nv_small, nv_small_256 or nv_small_256_full (upstream's opendla-full/-large/-small
    /// are accepted too).
    #[arg(long, default_value = "nv_full", value_parser = parse_config)]
    pub config: HwConfig,
    /// Output file: .dimg of output 0 (upstream's format), or .npy: every output as a float32
    /// (N, C, H, W) array, output i > 0 in FILE with `_i` before the extension.
    #[arg(long, default_value = "output.dimg", value_name = "FILE")]
    pub output: PathBuf,
    /// Timeout of each DLA task in milliseconds (default: wait forever).
    #[arg(long, value_name = "MS")]
    pub timeout: Option<u32>,
    /// TCP port of server mode.
    #[arg(long, default_value_t = 6666)]
    pub port: u16,
    /// Also write the run as a bare-metal image to DIR: image.bin (buffers at fixed
    /// physical addresses from --base), nvdla-image.ld (linker fragment), input.txn (the
    /// register-level trace) and expected/output-<i>.bin. Runs on the in-process model.
    #[arg(long, value_name = "DIR", conflicts_with = "server")]
    pub export_baremetal: Option<PathBuf>,
    /// Physical address of the bare-metal image (page aligned; default 0x48000000, in the
    /// RAM of QEMU's aarch64 virt board).
    #[arg(long, value_name = "ADDR", value_parser = parse_address, requires = "export_baremetal")]
    pub base: Option<u64>,
    /// Print the cycles of every hardware operation: the virtual platform's cycle model
    /// (compute, memory traffic and the long pole of each; docs/performance.md), or the
    /// RTL's measured cycles (which `--device rtl` always prints).
    #[arg(long)]
    pub profile: bool,
    /// Write the run's timeline as Chrome trace-event JSON (Perfetto, chrome://tracing):
    /// one track per engine. Implies --profile.
    #[arg(long, value_name = "FILE")]
    pub timeline: Option<PathBuf>,
    /// Cycle model: DRAM bandwidth in bytes per cycle (default: the build's memory
    /// interface width, 8 on nv_small, 64 on nv_full; NVIDIA's estimator assumes 10 at
    /// 1 GHz, i.e. 10 GB/s).
    #[arg(long, value_name = "BYTES", value_parser = parse_scale)]
    pub dram_bandwidth: Option<f32>,
    /// Cycle model: DRAM read latency in cycles (default 32, our RTL harness's).
    #[arg(long, value_name = "CYCLES")]
    pub dram_latency: Option<u64>,
    /// Cycle model: CVSRAM bandwidth in bytes per cycle (default: the secondary memory
    /// interface's width).
    #[arg(long, value_name = "BYTES", value_parser = parse_scale)]
    pub sram_bandwidth: Option<f32>,
    /// Cycle model: CVSRAM read latency in cycles (default 32).
    #[arg(long, value_name = "CYCLES")]
    pub sram_latency: Option<u64>,
}

fn parse_address(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(&h.replace('_', ""), 16),
        None => t.replace('_', "").parse(),
    };
    v.map_err(|_| format!("'{s}' is not an address"))
}

fn parse_numbering(s: &str) -> Result<Numbering, String> {
    match s {
        "regression" => Ok(Numbering::Regression),
        "release" => Ok(Numbering::Release),
        _ => Err(format!("unknown numbering {s:?} (regression or release)")),
    }
}

fn parse_scale(s: &str) -> Result<f32, String> {
    match s.trim().parse::<f32>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("scale '{s}' must be a positive finite number")),
    }
}

fn parse_kind(s: &str) -> Result<DeviceKind, String> {
    s.parse()
}

fn parse_config(s: &str) -> Result<HwConfig, String> {
    nvdla_port::parse_build(s)
}

impl Args {
    /// The image conversion options.
    pub fn image_options(&self) -> ImageOptions {
        ImageOptions {
            normalize: self.normalize.unwrap_or(1),
            mean: self.mean.unwrap_or([0.0; 4]),
            dimg_numbering: self.dimg_numbering,
        }
    }

    /// The run options.
    pub fn run_options(&self) -> RunOptions {
        RunOptions {
            timeout: self.timeout.map_or(Timeout::Never, Timeout::Millis),
        }
    }
}

/// A failure of the application, as the one line printed for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppError(pub String);

impl core::fmt::Display for AppError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AppError {}

impl From<crate::error::Error> for AppError {
    fn from(e: crate::error::Error) -> Self {
        AppError(e.to_string())
    }
}

impl From<image::ImageError> for AppError {
    fn from(e: image::ImageError) -> Self {
        AppError(format!("input image: {e}"))
    }
}

impl From<TensorFileError> for AppError {
    fn from(e: TensorFileError) -> Self {
        AppError(e.to_string())
    }
}

/// One output tensor as the device holds it.
#[derive(Debug, Clone)]
pub struct OutputTensor {
    /// Its descriptor.
    pub desc: TensorDesc,
    /// Its surface (`desc.size` bytes).
    pub data: Vec<u8>,
    /// The int8 scale the compiler recorded in the loadable, if any.
    pub recorded_scale: Option<f32>,
}

/// The result of one inference.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Every output tensor, as `.dimg` images, by bind id.
    pub outputs: Vec<DlaImage>,
    /// Every output tensor's descriptor and surface, by bind id.
    pub tensors: Vec<OutputTensor>,
    /// Seconds spent running the tasks.
    pub seconds: f64,
    /// What the device timed (the RTL), or its model estimated (with profiling on).
    pub timings: Option<nvdla_port::device::DeviceTimings>,
}

/// Tensors given as numbers and the scales of integer tensors.
#[derive(Debug, Clone, Default)]
pub struct TensorIo {
    /// `--input` files, already read, by bind id.
    pub inputs: Vec<(PathBuf, HostTensor)>,
    /// `--input-scale`: none, one for every input, or one per input file.
    pub input_scales: Vec<f32>,
    /// `--output-scale`: none, one for every output, or one per output (only checked here).
    pub output_scales: Vec<f32>,
}

/// The scale of tensor `i` of `count` from a flag given `scales.len()` times.
pub fn scale_for(
    flag: &str,
    scales: &[f32],
    i: usize,
    count: usize,
) -> Result<Option<f32>, AppError> {
    match scales.len() {
        0 => Ok(None),
        1 => Ok(Some(scales[0])),
        n if n == count => Ok(scales.get(i).copied()),
        n => Err(AppError(format!(
            "{flag} is given {n} times for {count} tensor(s): give it once (for every one) or \
             once per tensor"
        ))),
    }
}

/// Loads `loadable` on `dev`, feeds `image` (if any) into input 0, runs every task and
/// reads every output back. Progress lines go to `log`; buffers are released in any case.
pub fn infer(
    dev: &mut dyn Device,
    loadable: &[u8],
    image: Option<&Path>,
    image_opts: &ImageOptions,
    run_opts: &RunOptions,
    log: &mut dyn Write,
) -> Result<Outcome, AppError> {
    infer_with(
        dev,
        loadable,
        image,
        &TensorIo::default(),
        image_opts,
        run_opts,
        log,
    )
}

/// [`infer`], feeding the arrays of `io` into inputs 0, 1, ... instead of an image.
pub fn infer_with(
    dev: &mut dyn Device,
    loadable: &[u8],
    image: Option<&Path>,
    io: &TensorIo,
    image_opts: &ImageOptions,
    run_opts: &RunOptions,
    log: &mut dyn Write,
) -> Result<Outcome, AppError> {
    let mut rt = Runtime::load(dev, loadable)?;
    let result = infer_loaded(&mut rt, dev, image, io, image_opts, run_opts, log);
    rt.release(dev);
    result
}

/// Writes the `--input` arrays into their tensors.
fn feed_tensors(
    rt: &mut Runtime<'_>,
    dev: &mut dyn Device,
    io: &TensorIo,
    log: &mut dyn Write,
) -> Result<(), AppError> {
    let inputs = rt.tensor_count(Direction::Input);
    let given = io.inputs.len();
    if given > inputs {
        return Err(AppError(format!(
            "{given} --input files given, the loadable has {inputs} input tensor(s)"
        )));
    }
    for (i, (path, host)) in io.inputs.iter().enumerate() {
        let t = rt.tensor(Direction::Input, i)?.clone();
        let mut scale = scale_for("--input-scale", &io.input_scales, i, given)?;
        if scale.is_none() && t.data_type != nvdla_loadable::DataType::HALF {
            scale = rt.recorded_scale(Direction::Input, i);
        }
        if scale.is_some() && t.data_type == nvdla_loadable::DataType::HALF {
            let _ = writeln!(
                log,
                "note: input {i} '{}' is HALF: --input-scale does not apply to it",
                t.name
            );
            scale = None;
        }
        let data =
            tensor::host_to_input(host, &t, scale).map_err(|e| TensorFileError::new(path, e))?;
        rt.write_input(dev, i, &data)?;
        let _ = writeln!(
            log,
            "input {i} '{}' ({} {}, {}): {} {:?} from {}",
            t.name,
            t.pixel_format,
            t.data_type,
            format_dims(&t),
            host.element_type(),
            host.shape(),
            path.display()
        );
    }
    for i in given..inputs {
        let t = rt.tensor(Direction::Input, i)?;
        let _ = writeln!(
            log,
            "no --input for input {i} '{}': it keeps what the loadable sets (zeros if nothing)",
            t.name
        );
    }
    Ok(())
}

fn format_dims(t: &TensorDesc) -> String {
    let d = t.dims;
    format!("{}x{}x{}x{}", d.n, d.c, d.h, d.w)
}

fn infer_loaded(
    rt: &mut Runtime<'_>,
    dev: &mut dyn Device,
    image: Option<&Path>,
    io: &TensorIo,
    image_opts: &ImageOptions,
    run_opts: &RunOptions,
    log: &mut dyn Write,
) -> Result<Outcome, AppError> {
    bind_inputs(rt, dev, image, io, image_opts, log)?;
    run_loaded(rt, dev, image_opts, run_opts, log)
}

/// Checks the output scales and feeds `image` or the `--input` arrays into the inputs.
pub(crate) fn bind_inputs(
    rt: &mut Runtime<'_>,
    dev: &mut dyn Device,
    image: Option<&Path>,
    io: &TensorIo,
    image_opts: &ImageOptions,
    log: &mut dyn Write,
) -> Result<(), AppError> {
    let inputs = rt.tensor_count(Direction::Input);
    let outputs = rt.tensor_count(Direction::Output);
    if outputs > 0 {
        scale_for("--output-scale", &io.output_scales, 0, outputs)?;
    }
    match image {
        _ if !io.inputs.is_empty() => feed_tensors(rt, dev, io, log)?,
        Some(path) => {
            if inputs == 0 {
                return Err(AppError(format!(
                    "--image {}: the loadable has no input tensor to bind it to",
                    path.display()
                )));
            }
            let t = rt.tensor(Direction::Input, 0)?.clone();
            let img = image::load_image(path)?;
            let data = image::image_to_tensor(&img, &t, image_opts)?;
            rt.write_input(dev, 0, &data)?;
        }
        None if inputs > 0 => {
            let t = rt.tensor(Direction::Input, 0)?;
            let _ = writeln!(
                log,
                "no --image: input '{}' keeps what the loadable sets (zeros if nothing)",
                t.name
            );
        }
        None => {}
    }
    Ok(())
}

/// Runs the loaded network and reads every output back.
pub(crate) fn run_loaded(
    rt: &mut Runtime<'_>,
    dev: &mut dyn Device,
    image_opts: &ImageOptions,
    run_opts: &RunOptions,
    log: &mut dyn Write,
) -> Result<Outcome, AppError> {
    let outputs = rt.tensor_count(Direction::Output);
    if outputs == 0 {
        return Err(AppError(
            "the loadable has no output tensor (expected at least 1)".into(),
        ));
    }
    let start = Instant::now();
    rt.run(dev, run_opts, &mut |p| {
        if matches!(p.phase, Phase::Done(_)) || p.interface == nvdla_loadable::Interface::DLA1 {
            let _ = writeln!(log, "{p}");
        }
    })?;
    let seconds = start.elapsed().as_secs_f64();
    let timings = dev.take_timings();
    let images = (0..outputs)
        .map(|i| rt.output_image(dev, i, image_opts.dimg_numbering))
        .collect::<Result<Vec<_>, _>>()?;
    let tensors = (0..outputs)
        .map(|i| {
            Ok(OutputTensor {
                desc: rt.tensor(Direction::Output, i)?.clone(),
                data: rt.read_output(dev, i)?,
                recorded_scale: rt.recorded_scale(Direction::Output, i),
            })
        })
        .collect::<Result<Vec<_>, crate::error::Error>>()?;
    Ok(Outcome {
        outputs: images,
        tensors,
        seconds,
        timings,
    })
}

/// Longest output vector printed as class scores.
const MAX_PRINTED_CLASSES: u32 = 1000;

/// For an output that is a vector of class scores (1×1×C, as a classifier's softmax gives),
/// the lines `class scores: s0 s1 ...` and `top-1: class k (score)`; `None` for any other
/// output shape.
pub fn class_scores(image: &DlaImage) -> Option<String> {
    let h = image.header();
    if h.width != 1 || h.height != 1 || h.channel == 0 || h.channel > MAX_PRINTED_CLASSES {
        return None;
    }
    let scores: Vec<f64> = (0..h.channel)
        .map(|c| image.value(0, 0, c))
        .collect::<Option<_>>()?;
    let (best, top) =
        scores
            .iter()
            .enumerate()
            .fold((0, f64::NEG_INFINITY), |(bi, bv), (i, &v)| {
                if v > bv {
                    (i, v)
                } else {
                    (bi, bv)
                }
            });
    let list: Vec<String> = scores.iter().map(|v| format!("{v:.6}")).collect();
    Some(format!(
        "class scores: {}\ntop-1: class {best} ({top:.6})",
        list.join(" ")
    ))
}

/// The bytes written for an output image: the `.dimg`, or the raw text dump.
pub fn output_bytes(image: &DlaImage, rawdump: bool) -> Vec<u8> {
    if rawdump {
        image.raw_dump().into_bytes()
    } else {
        image.write()
    }
}

/// Runs the command with `argv` (program name first), opening devices with `opener`.
/// Returns the process exit status; normal messages go to `out`, errors and progress to
/// `err`.
pub fn run(
    argv: &[String],
    opener: &DeviceOpener<'_>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    let args = match Args::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = write!(out, "{e}");
                return 0;
            }
            let text = e.to_string();
            let line = text.lines().next().unwrap_or("invalid arguments");
            let line = line.strip_prefix("error: ").unwrap_or(line);
            let _ = writeln!(err, "error: {line} (see -h)");
            return 1;
        }
    };
    match run_args(&args, opener, out, err) {
        Ok(()) => 0,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            1
        }
    }
}

fn run_args(
    args: &Args,
    opener: &DeviceOpener<'_>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), AppError> {
    if args.server {
        let mut dev = opener(&args.device, args.config).map_err(|e| AppError(e.to_string()))?;
        return crate::server::serve(args, dev.as_mut(), out, err);
    }
    let Some(loadable_path) = &args.loadable else {
        return Err(AppError(
            "missing --loadable <loadable_file> (see -h)".into(),
        ));
    };
    if let Some(p) = &args.input_path {
        if !p.exists() {
            return Err(AppError(format!(
                "input path does not exist: \"{}\"",
                p.display()
            )));
        }
    }
    if let Some(img) = &args.image {
        if !img.exists() {
            return Err(AppError(format!(
                "image path does not exist: \"{}\"",
                img.display()
            )));
        }
    }
    let npy_output = tensor::is_npy_path(&args.output);
    if npy_output && args.rawdump {
        return Err(AppError(format!(
            "--rawdump writes upstream's text dump; it cannot go to the .npy output {}",
            args.output.display()
        )));
    }
    if args.input.is_empty() && !args.input_scale.is_empty() {
        return Err(AppError(
            "--input-scale applies to --input files; none is given".into(),
        ));
    }
    if !npy_output && !args.output_scale.is_empty() {
        return Err(AppError(format!(
            "--output-scale applies to .npy outputs; {} is written as a .dimg",
            args.output.display()
        )));
    }
    let io = TensorIo {
        inputs: args
            .input
            .iter()
            .map(|p| Ok((p.clone(), tensor::read_tensor_file(p)?)))
            .collect::<Result<_, TensorFileError>>()?,
        input_scales: args.input_scale.clone(),
        output_scales: args.output_scale.clone(),
    };
    let _ = writeln!(out, "creating new runtime context...");
    let bytes = std::fs::read(loadable_path).map_err(|e| {
        AppError(format!(
            "cannot read loadable {}: {e}",
            loadable_path.display()
        ))
    })?;
    if bytes.is_empty() {
        return Err(AppError(format!(
            "loadable {} is empty",
            loadable_path.display()
        )));
    }
    let _ = writeln!(out, "submitting tasks...");
    let outcome = if let Some(dir) = &args.export_baremetal {
        export_run(args, loadable_path, dir, &bytes, &io, out, err)
    } else {
        let mut dev = opener(&args.device, args.config).map_err(|e| AppError(e.to_string()))?;
        dev.set_profiling(args.profile || args.timeline.is_some());
        dev.set_memory_timing(&nvdla_port::device::MemoryTiming {
            dram_bytes_per_cycle: args.dram_bandwidth.map(f64::from),
            dram_latency: args.dram_latency,
            sram_bytes_per_cycle: args.sram_bandwidth.map(f64::from),
            sram_latency: args.sram_latency,
        });
        infer_with(
            dev.as_mut(),
            &bytes,
            args.image.as_deref(),
            &io,
            &args.image_options(),
            &args.run_options(),
            err,
        )
    }
    .map_err(|e| {
        let mut line = format!("{}: {e}", loadable_path.display());
        // A loadable compiled for another build programs geometry the model refuses
        // (atom sizes, CBUF entries); nothing in the loadable names its target.
        if args.device == DeviceKind::Vp && line.contains("(DLA1): SUBMIT failed") {
            let mut others: Vec<&str> = HwConfig::ALL
                .into_iter()
                .filter(|c| *c != args.config)
                .map(HwConfig::name)
                .collect();
            let last = others.pop().unwrap_or_default();
            line.push_str(&format!(
                " (hint: ran on the virtual platform as {}; if the loadable was compiled for \
                 another configuration, pass it with --config: {} or {last})",
                args.config,
                others.join(", ")
            ));
        }
        AppError(line)
    })?;
    if let Some(t) = &outcome.timings {
        if args.profile || args.timeline.is_some() || !t.modelled {
            let _ = write!(out, "{}", crate::report::timings_table(t));
        }
        if let Some(path) = &args.timeline {
            std::fs::write(path, crate::report::chrome_trace(t))
                .map_err(|e| AppError(format!("cannot write {}: {e}", path.display())))?;
            let _ = writeln!(out, "timeline written to {}", path.display());
        }
    } else if args.profile || args.timeline.is_some() {
        let _ = writeln!(
            err,
            "note: device {} reports no cycles (the virtual platform models them, the RTL \
             measures them)",
            args.device
        );
    }
    let _ = writeln!(out, "execution time = {:.6} s", outcome.seconds);
    if let Some(scores) = class_scores(&outcome.outputs[0]) {
        let _ = writeln!(out, "{scores}");
    }
    if npy_output {
        write_npy_outputs(&args.output, &outcome.tensors, &args.output_scale, out, err)?;
    } else {
        let data = output_bytes(&outcome.outputs[0], args.rawdump);
        std::fs::write(&args.output, data)
            .map_err(|e| AppError(format!("cannot write {}: {e}", args.output.display())))?;
    }
    let _ = writeln!(out, "Test pass");
    Ok(())
}

/// `--export-baremetal DIR`: the run on the in-process model at fixed addresses, written
/// as a bare-metal image.
#[cfg(feature = "vp")]
fn export_run(
    args: &Args,
    loadable_path: &Path,
    dir: &Path,
    bytes: &[u8],
    io: &TensorIo,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Outcome, AppError> {
    if args.device != DeviceKind::Vp {
        return Err(AppError(format!(
            "--export-baremetal runs on the in-process model (--device vp), not {}",
            args.device
        )));
    }
    let opts = crate::export::ExportOptions {
        base: args.base.unwrap_or(crate::export::DEFAULT_BASE),
        config: args.config.into(),
        dir: dir.to_path_buf(),
        name: loadable_path
            .file_name()
            .map_or_else(|| "loadable".into(), |n| n.to_string_lossy().into_owned()),
    };
    let e = crate::export::export(
        bytes,
        args.image.as_deref(),
        io,
        &args.image_options(),
        &args.run_options(),
        &opts,
        err,
    )?;
    let _ = writeln!(
        out,
        "bare-metal image: {} bytes at {:#x}, {} task(s), {} trace commands, written to {}",
        e.image_len,
        opts.base,
        e.tasks,
        e.trace_commands,
        dir.display()
    );
    Ok(e.outcome)
}

/// Without the in-process model there is nothing to export from.
#[cfg(not(feature = "vp"))]
fn export_run(
    _args: &Args,
    _loadable_path: &Path,
    _dir: &Path,
    _bytes: &[u8],
    _io: &TensorIo,
    _out: &mut dyn Write,
    _err: &mut dyn Write,
) -> Result<Outcome, AppError> {
    Err(AppError(
        "--export-baremetal needs the in-process model: this nvdla-runtime was built without \
         the `vp` feature"
            .into(),
    ))
}

/// Writes every output as a float32 `.npy`: output 0 to `base`, output i to `base` with `_<i>`
/// before the extension ([`tensor::output_path`]).
pub fn write_npy_outputs(
    base: &Path,
    outputs: &[OutputTensor],
    scales: &[f32],
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), AppError> {
    for (i, o) in outputs.iter().enumerate() {
        let path = tensor::output_path(base, i);
        let mut scale = scale_for("--output-scale", scales, i, outputs.len())?;
        if scale.is_none() && o.desc.data_type != nvdla_loadable::DataType::HALF {
            scale = o.recorded_scale;
        }
        if scale.is_some() && o.desc.data_type == nvdla_loadable::DataType::HALF {
            let _ = writeln!(
                err,
                "note: output {i} '{}' is HALF: --output-scale does not apply to it",
                o.desc.name
            );
            scale = None;
        }
        let host = tensor::output_to_host(&o.desc, &o.data, scale)
            .map_err(|e| TensorFileError::new(&path, e))?;
        tensor::write_npy(&path, &host)?;
        let _ = writeln!(
            out,
            "output {i} '{}': float32 {:?} written to {}",
            o.desc.name,
            host.shape(),
            path.display()
        );
    }
    Ok(())
}
