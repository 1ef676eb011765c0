//! The `nvdla-runtime` command: upstream's `nvdla_runtime` test application.
//!
//! `nvdla-runtime --loadable F [--image F] [--normalize V] [--mean a,b,c[,d]] [--rawdump]`
//! loads the loadable, converts the image (if any) into input 0, runs every task, and writes
//! output 0 as `output.dimg` (or, with `--rawdump`, upstream's text dump instead), printing
//! `Test pass` at the end as scripts expect. `-s` serves upstream's regression client
//! instead ([`crate::server`]). Our additions: `--device`, `--config`, `--output`,
//! `--timeout`, `--port`, and a progress line per task on stderr. Any failure is one line on
//! stderr and exit status 1; `-h` prints the help.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Parser;
use nvdla_port::device::{Device, Timeout};

use crate::device::{DeviceKind, DeviceOpener, HwConfig};
use crate::dimg::{DlaImage, Numbering};
use crate::error::Direction;
use crate::image::{self, ImageOptions};
use crate::runtime::{Phase, RunOptions, Runtime};

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
    /// Device backend: vp, linux, socket:PATH, or mock (DLA tasks not executed); default:
    /// linux when an nvdla DRM node exists, else vp.
    #[arg(long, default_value_t = crate::device::default_device(), value_parser = parse_kind)]
    pub device: DeviceKind,
    /// Hardware configuration: nv_full, nv_large, nv_medium_1024_full, nv_medium_512,
    /// nv_small, nv_small_256 or nv_small_256_full (upstream's opendla-full/-large/-small
    /// are accepted too).
    #[arg(long, default_value = "nv_full", value_parser = parse_config)]
    pub config: HwConfig,
    /// Output file.
    #[arg(long, default_value = "output.dimg", value_name = "FILE")]
    pub output: PathBuf,
    /// Timeout of each DLA task in milliseconds (default: wait forever).
    #[arg(long, value_name = "MS")]
    pub timeout: Option<u32>,
    /// TCP port of server mode.
    #[arg(long, default_value_t = 6666)]
    pub port: u16,
}

fn parse_numbering(s: &str) -> Result<Numbering, String> {
    match s {
        "regression" => Ok(Numbering::Regression),
        "release" => Ok(Numbering::Release),
        _ => Err(format!("unknown numbering {s:?} (regression or release)")),
    }
}

fn parse_kind(s: &str) -> Result<DeviceKind, String> {
    s.parse()
}

fn parse_config(s: &str) -> Result<HwConfig, String> {
    s.parse()
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

/// The result of one inference.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Every output tensor, as `.dimg` images, by bind id.
    pub outputs: Vec<DlaImage>,
    /// Seconds spent running the tasks.
    pub seconds: f64,
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
    let mut rt = Runtime::load(dev, loadable)?;
    let result = infer_loaded(&mut rt, dev, image, image_opts, run_opts, log);
    rt.release(dev);
    result
}

fn infer_loaded(
    rt: &mut Runtime<'_>,
    dev: &mut dyn Device,
    image: Option<&Path>,
    image_opts: &ImageOptions,
    run_opts: &RunOptions,
    log: &mut dyn Write,
) -> Result<Outcome, AppError> {
    let inputs = rt.tensor_count(Direction::Input);
    match image {
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
    let images = (0..outputs)
        .map(|i| rt.output_image(dev, i, image_opts.dimg_numbering))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Outcome {
        outputs: images,
        seconds,
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
    let mut dev = opener(&args.device, args.config).map_err(|e| AppError(e.to_string()))?;
    let _ = writeln!(out, "submitting tasks...");
    let outcome = infer(
        dev.as_mut(),
        &bytes,
        args.image.as_deref(),
        &args.image_options(),
        &args.run_options(),
        err,
    )
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
    let _ = writeln!(out, "execution time = {:.6} s", outcome.seconds);
    if let Some(scores) = class_scores(&outcome.outputs[0]) {
        let _ = writeln!(out, "{scores}");
    }
    let data = output_bytes(&outcome.outputs[0], args.rawdump);
    std::fs::write(&args.output, data)
        .map_err(|e| AppError(format!("cannot write {}: {e}", args.output.display())))?;
    let _ = writeln!(out, "Test pass");
    Ok(())
}
