//! `nvdla-compiler`: Caffe and ONNX models to NVDLA loadables, with upstream's command
//! line (plus `--onnx` and `--input-shape`).

use clap::Parser;
use nvdla_compiler::calibrate;
use nvdla_compiler::dump;
use nvdla_compiler::frontend::ModelFiles;
use nvdla_compiler::preprocess::{ChannelOrder, Preprocess};
use nvdla_compiler::quant::{Calibration, RangeMethod};
use nvdla_compiler::target::{Precision, Target};
use nvdla_compiler::{passes, Calibrate, CompileError, Model, Options};
use std::path::PathBuf;
use std::process::ExitCode;

/// Compile a Caffe or ONNX model to an NVDLA loadable.
#[derive(Parser, Debug)]
#[command(name = "nvdla-compiler", version)]
struct Args {
    /// Caffe network definition (protobuf text); with --caffemodel.
    #[arg(long)]
    prototxt: Option<PathBuf>,
    /// Caffe trained weights (protobuf binary); with --prototxt.
    #[arg(long)]
    caffemodel: Option<PathBuf>,
    /// ONNX model (instead of --prototxt and --caffemodel).
    #[arg(long, value_name = "F")]
    onnx: Option<PathBuf>,
    /// ONNX: the shape of a network input, `name=1x3x224x224` (repeatable); fixes
    /// dimensions the model leaves symbolic.
    #[arg(long = "input-shape", value_name = "NAME=DIMS", value_parser = parse_input_shape)]
    input_shape: Vec<(String, Vec<usize>)>,
    /// ONNX: a network input given fixed values, `name=16000` or `name=1,2,3` (repeatable,
    /// in the input's declared shape and type): it becomes a constant, and what depends
    /// on it folds (an `If` on a sample rate takes its branch).
    #[arg(long = "input-value", value_name = "NAME=VALUES", value_parser = parse_input_value)]
    input_value: Vec<(String, Vec<f64>)>,
    /// Run operators no NVDLA engine computes (ONNX Exp, Log, Sqrt, Abs, Reciprocal, Pow,
    /// Elu, Softplus, ...) on the CPU as EMU operations of nvdla-runtime, instead of
    /// refusing them; the loadable then needs a runtime with the CPU fallback operations.
    #[arg(long = "cpu-fallback")]
    cpu_fallback: bool,
    /// Optimize for cycles on the accelerator: --image-input, and --winograd in fp16 (int8
    /// Winograd costs accuracy: only with --winograd). Outputs stay within the precision's
    /// tolerance, not bit-equal.
    #[arg(short = 'O', long = "optimize")]
    optimize: bool,
    /// A network input read by one convolution of at most 4 channels (an image network's
    /// first layer) becomes a pitch-linear image (A8B8G8R8 in int8, A16B16G16R16_F in
    /// fp16) that the convolution reads in image mode, 4 S channels per kernel row
    /// instead of one tap per cycle; nvdla-runtime fills it from the same inputs.
    #[arg(long = "image-input")]
    image_input: bool,
    /// 3x3 stride-1 convolutions in Winograd mode where the build has it (nv_full):
    /// 2.25x fewer multiplies on the layers that take it, 16/9 of their weight bytes; in
    /// int8 the input tiles lose two bits (PRA_TRUNCATE 2).
    #[arg(long)]
    winograd: bool,
    /// Store convolution weights sparse-compressed where the build has it (nv_full) and
    /// it saves a quarter of their bytes: non-zero elements, a mask bit per element and
    /// a size per kernel group. Grouped, depthwise and pruned layers shrink; results are
    /// the same.
    #[arg(long = "compress-weights")]
    compress_weights: bool,
    /// Take a pooling from its convolution on the fly (SDP to PDP) where the PDP can pool
    /// the whole width in one pass: the convolution's result never goes to memory.
    /// Results are the same.
    #[arg(long = "fused-pooling")]
    fused_pooling: bool,
    /// Place activations in on-chip CV-SRAM up to SIZE bytes (suffix K or M for KiB or
    /// MiB, e.g. 4M), on builds with a secondary memory interface (nv_full): what fits
    /// for its lifetime moves through CVIF instead of DRAM. Runs on devices that allocate
    /// CV-SRAM (the built-in virtual platform).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    cvsram: Option<u64>,
    /// Output: a directory (writes `<profile>.nvdla` in it) or a `.nvdla` file.
    #[arg(short = 'o', default_value = ".")]
    output: PathBuf,
    /// Profile (names the output file as upstream does).
    #[arg(long, default_value = "fast-math")]
    profile: String,
    /// Compute precision: fp16 or int8.
    #[arg(long, default_value = "fp16")]
    cprecision: String,
    /// Hardware configuration (nv_full, nv_large, nv_small, ..., or opendla-full/large/small).
    #[arg(long, default_value = "nv_full")]
    configtarget: String,
    /// Input format: nchw or ncxhwx give a feature-cube input; nhwc (upstream's image
    /// input) is accepted and compiled as a feature cube too (the runtime's `--image`
    /// fills either).
    #[arg(long, default_value = "nchw")]
    informat: String,
    /// Per-channel mean of the model's preprocessing, in the model's channel order
    /// (`a,b,c`); compiled into the network.
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    mean: Vec<f32>,
    /// Multiplier of the model's preprocessing, after the mean (e.g. 0.00390625 for
    /// Caffe's `scale: 1/256`); compiled into the network.
    #[arg(long, default_value_t = 1.0)]
    scale: f32,
    /// Channel order the model was trained on (the runtime feeds a colour image as BGR).
    #[arg(long, default_value = "bgr", value_parser = ["rgb", "bgr"])]
    channel_order: String,
    /// JSON profile configuration (accepted for compatibility; not used).
    #[arg(long)]
    profilecfg: Option<PathBuf>,
    /// int8 calibration table: NVIDIA's JSON (`{"layer": {"scale": s, ...}}`) or a
    /// TensorRT calibration cache (`TRT-...` then `name: hex` lines).
    #[arg(long)]
    calibtable: Option<PathBuf>,
    /// int8: calibrate on the images (.jpg, .pgm) in this directory with the compiler's
    /// fp32 reference, fed as `nvdla-runtime --image` feeds them; or on tensor files
    /// (.npy, .pb) holding the input's real values, fed as `nvdla-runtime --input F
    /// --input-scale S` feeds them (S is printed); a network of several inputs takes one
    /// subdirectory per sample, a tensor file per input named after it (or 0.npy, 1.npy,
    /// ... by position).
    #[arg(long)]
    calibrate: Option<PathBuf>,
    /// With `--calibrate`: the network's input is `pixel / normalize` (as the runtime's
    /// `--normalize`; the int8 input scale follows from it).
    #[arg(long, default_value_t = 1.0)]
    normalize: f32,
    /// With `--calibrate`: `percentile` (99.99th percentile of magnitudes, the default) or
    /// `max-abs`.
    #[arg(long, default_value = "percentile", value_parser = ["percentile", "max-abs"])]
    calib_method: String,
    /// Save the calibration in NVIDIA's JSON format.
    #[arg(long)]
    write_calibtable: Option<PathBuf>,
    /// int8 weights: `per-kernel` (one scale per layer, upstream's default) or
    /// `per-filter` (one per output channel).
    #[arg(long = "quantizationMode", default_value = "per-kernel", value_parser = ["per-kernel", "per-filter"])]
    quantization_mode: String,
    /// int8 activations with `--calibrate`: `per-channel` (the default: a scale per
    /// channel where the producer and readers fold it in: convolutions, fully connected
    /// layers, SDP operations; docs/compiler.md) or `per-tensor` (one scale each, as a
    /// calibration table gives them).
    #[arg(long, default_value = "per-channel", value_parser = ["per-tensor", "per-channel"])]
    activation_scales: String,
    /// Batch size, as NVIDIA's command line has it: only 1 here. A batch comes from the
    /// model's input shape instead (an ONNX input's first dimension, or
    /// `--input-shape NAME=16,3,224,224`; docs/compiler.md, "Batched fully connected layers").
    #[arg(long, default_value_t = 1)]
    batch: u32,
    /// Per-layer comparison: compile with every layer's output kept, run on the built-in
    /// virtual platform with this image (fed as `nvdla-runtime --image` does, with
    /// `--normalize`) or tensor file (`.npy`, `.pb`: the input's real values, fed as
    /// `nvdla-runtime --input` does), and print each layer's error against the fp32
    /// reference.
    #[arg(long, value_name = "IMAGE|TENSOR")]
    compare: Option<PathBuf>,
    /// With `--compare`: the device to run on, as `nvdla-runtime --device` (default: vp, the
    /// built-in virtual platform; `rtl` runs NVIDIA's nv_small RTL).
    #[arg(long, default_value = "vp", value_parser = |s: &str| s.parse::<nvdla_umd::DeviceKind>())]
    compare_device: nvdla_umd::DeviceKind,
    /// With `--compare`: print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Print the network after the graph passes.
    #[arg(long)]
    dump_ir: bool,
    /// Print the engine operations (after the memory plan).
    #[arg(long)]
    dump_graph: bool,
    /// Format of `--dump-ir` / `--dump-graph`: text, json or dot (Graphviz).
    #[arg(long, default_value = "text", value_parser = ["text", "json", "dot"])]
    dump_format: String,
    /// No progress messages.
    #[arg(short, long)]
    quiet: bool,
}

/// `name=1x3x224x224` (dimensions separated by `x` or `,`).
/// A byte count: digits with an optional `K` or `M` (binary multiples).
fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, ""),
    };
    let shift = match unit
        .to_ascii_uppercase()
        .trim_end_matches("IB")
        .trim_end_matches('B')
    {
        "" => 0,
        "K" => 10,
        "M" => 20,
        _ => return Err(format!("`{s}`: a size is bytes, or a number with K or M")),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or_else(|| format!("`{s}`: not a size in bytes"))
}

/// `NAME=REST` of an input option; `example` shows the form in the error.
fn split_input_option<'a>(s: &'a str, example: &str) -> Result<(&'a str, &'a str), String> {
    let (name, rest) = s
        .rsplit_once('=')
        .ok_or_else(|| format!("`{s}`: expected {example}"))?;
    if name.is_empty() {
        return Err(format!("`{s}`: the input name is empty"));
    }
    Ok((name, rest))
}

fn parse_input_shape(s: &str) -> Result<(String, Vec<usize>), String> {
    let (name, dims) = split_input_option(s, "NAME=DIMS, e.g. data=1x3x224x224")?;
    let dims = dims
        .split(['x', 'X', ','])
        .map(|d| match d.trim().parse::<usize>() {
            Ok(v) if v > 0 => Ok(v),
            _ => Err(format!("`{s}`: `{d}` is not a positive dimension")),
        })
        .collect::<Result<Vec<usize>, String>>()?;
    Ok((name.to_string(), dims))
}

fn parse_input_value(s: &str) -> Result<(String, Vec<f64>), String> {
    let (name, values) = split_input_option(s, "NAME=VALUES, e.g. sr=16000")?;
    let values = values
        .split(',')
        .map(|v| {
            v.trim()
                .parse::<f64>()
                .map_err(|_| format!("`{s}`: `{v}` is not a number"))
        })
        .collect::<Result<Vec<f64>, String>>()?;
    Ok((name.to_string(), values))
}

/// The model files the flags name: exactly one source.
fn model_files(a: &Args) -> Result<ModelFiles, CompileError> {
    match (&a.prototxt, &a.caffemodel, &a.onnx) {
        (Some(prototxt), Some(caffemodel), None) => {
            if !a.input_shape.is_empty() || !a.input_value.is_empty() {
                return Err(CompileError::Option(
                    "--input-shape and --input-value apply to ONNX models (--onnx)".into(),
                ));
            }
            Ok(ModelFiles::Caffe {
                prototxt: prototxt.clone(),
                caffemodel: caffemodel.clone(),
            })
        }
        (None, None, Some(model)) => Ok(ModelFiles::Onnx {
            model: model.clone(),
            input_shapes: a.input_shape.clone(),
            cpu_fallback: a.cpu_fallback,
            target: None,
        }),
        (None, None, None) => Err(CompileError::Option(
            "no model: give --prototxt F --caffemodel F (Caffe) or --onnx F (ONNX)".into(),
        )),
        (_, _, Some(_)) => Err(CompileError::Option(
            "give one model: --onnx, or --prototxt with --caffemodel, not both".into(),
        )),
        (Some(_), None, None) => Err(CompileError::Option(
            "--prototxt needs --caffemodel (the trained weights)".into(),
        )),
        (None, Some(_), None) => Err(CompileError::Option(
            "--caffemodel needs --prototxt (the network definition)".into(),
        )),
    }
}

fn run(a: &Args) -> Result<(), CompileError> {
    let files = model_files(a)?;
    let hw = nvdla_compiler::target::build_by_name(&a.configtarget, "--configtarget")?;
    let precision = nvdla_compiler::target::precision_by_name(&a.cprecision, "--cprecision")?;
    let _ = &a.profilecfg;
    if precision == Precision::Int8 && a.calibtable.is_none() && a.calibrate.is_none() {
        return Err(CompileError::Option(
            "--cprecision int8 needs --calibtable FILE or --calibrate DIR".into(),
        ));
    }
    if !(a.normalize.is_finite() && a.normalize > 0.0) {
        return Err(CompileError::Option(format!(
            "--normalize {} must be positive",
            a.normalize
        )));
    }
    if a.batch != 1 {
        return Err(CompileError::Option(
            "only --batch 1 is supported: a batch comes from the input's shape (its first \
             dimension, or --input-shape NAME=N,C,H,W)"
                .into(),
        ));
    }
    match a.informat.as_str() {
        "nchw" | "ncxhwx" => {}
        "nhwc" => {
            if !a.quiet {
                eprintln!(
                    "note: --informat nhwc: the input is compiled as a feature cube (image-mode \
                     input is not implemented); nvdla-runtime --image fills it the same way"
                );
            }
        }
        other => {
            return Err(CompileError::Option(format!(
                "unknown --informat `{other}` (ncxhwx, nchw or nhwc)"
            )))
        }
    }
    let target = Target::new(hw, precision)?;
    let mut opts = Options::new(target);
    if !target.precision_in_silicon() && !a.quiet {
        eprintln!(
            "warning: {} silicon has no {} datapath; the loadable runs on NVIDIA's C model and \
             our virtual platform",
            hw.name, a.cprecision
        );
    }
    let progress = |m: &str| {
        if !a.quiet {
            eprintln!("{m}");
        }
    };
    opts.cpu_fallback = a.cpu_fallback;
    opts.keep_activations = a.compare.is_some();
    opts.normalize = a.normalize;
    opts.per_filter = a.quantization_mode == "per-filter";
    opts.channel_scales = a.activation_scales == "per-channel";
    opts.winograd = a.winograd;
    opts.image_input = a.image_input;
    opts.compress_weights = a.compress_weights;
    opts.fused_pooling = a.fused_pooling;
    opts.cvsram = a.cvsram.unwrap_or(0);
    if a.optimize {
        opts.optimize();
    }
    opts.calib_method = if a.calib_method == "max-abs" {
        RangeMethod::MaxAbs
    } else {
        RangeMethod::Percentile(99.99)
    };
    opts.preprocess = Preprocess {
        mean: a.mean.clone(),
        scale: a.scale,
        order: if a.channel_order == "rgb" {
            ChannelOrder::Rgb
        } else {
            ChannelOrder::Bgr
        },
    };
    opts.calibration = if let Some(path) = &a.calibtable {
        let text = std::fs::read_to_string(path).map_err(|e| CompileError::Io {
            path: path.clone(),
            source: e,
        })?;
        Calibrate::Table {
            text,
            label: path.display().to_string(),
        }
    } else if let Some(dir) = &a.calibrate {
        Calibrate::Samples(calibrate::images_in(dir)?)
    } else {
        Calibrate::None
    };
    let model = match &files {
        ModelFiles::Caffe {
            prototxt,
            caffemodel,
        } => {
            progress(&format!("reading {}", prototxt.display()));
            Model::caffe_files(prototxt, caffemodel)?
        }
        ModelFiles::Onnx {
            model,
            input_shapes,
            ..
        } => {
            progress(&format!("reading {}", model.display()));
            opts.input_shapes = input_shapes.clone();
            opts.input_values = a.input_value.clone();
            Model::onnx_file(model)?
        }
    };
    let compiled = nvdla_compiler::compile(&model, &opts, &mut |m| progress(m))?;
    if let (Some(path), Some(cal)) = (&a.write_calibtable, &compiled.calibration) {
        std::fs::write(path, cal.to_json(&compiled.graph)).map_err(|e| CompileError::Io {
            path: path.clone(),
            source: e,
        })?;
        progress(&format!("wrote calibration table {}", path.display()));
    }
    if let (Calibrate::Samples(files), Some(cal)) = (&opts.calibration, &compiled.calibration) {
        if files.iter().any(|p| calibrate::is_tensor_file(p)) {
            print_tensor_scales(&compiled.graph, cal);
        }
    }
    if let Some(image) = &a.compare {
        if !nvdla_compiler::calibrate::is_tensor_file(image) && a.normalize.fract() != 0.0
            || !(1.0..=255.0).contains(&a.normalize)
        {
            return Err(CompileError::Option(
                "--compare feeds the image as nvdla-runtime does: --normalize must be an \
                 integer from 1 to 255"
                    .into(),
            ));
        }
        progress(&format!(
            "running on the {} model with {}",
            hw.name,
            image.display()
        ));
        let rows = nvdla_compiler::compare::compare(
            &compiled,
            &target,
            image,
            a.normalize as u8,
            &a.compare_device,
        )?;
        if a.json {
            println!("{}", nvdla_compiler::compare::json(&rows));
        } else {
            print!("{}", nvdla_compiler::compare::table(&rows));
        }
    }
    if a.dump_ir {
        match a.dump_format.as_str() {
            "json" => println!("{}", dump::ir_json(&compiled.graph)),
            "dot" => print!("{}", dump::ir_dot(&compiled.graph)),
            _ => println!("{}", passes::dump(&compiled.graph)),
        }
    }
    if a.dump_graph {
        match a.dump_format.as_str() {
            "json" => println!("{}", dump::program_json(&compiled.program)),
            "dot" => print!("{}", dump::program_dot(&compiled.program)),
            _ => println!("{}", compiled.program.dump()),
        }
    }
    let out = if a.output.extension().is_some_and(|e| e == "nvdla") {
        a.output.clone()
    } else {
        a.output.join(format!("{}.nvdla", a.profile))
    };
    std::fs::write(&out, &compiled.loadable).map_err(|e| CompileError::Io {
        path: out.clone(),
        source: e,
    })?;
    progress(&format!("wrote {}", out.display()));
    eprintln!("{}", compiled.summary());
    if let Some(p) = compiled.partition_summary() {
        eprintln!("{p}");
    }
    Ok(())
}

/// The scales `nvdla-runtime` needs to feed and read real values (tensor samples).
fn print_tensor_scales(graph: &nvdla_compiler::ir::Graph, cal: &Calibration) {
    // Printed even with -q.
    for &input in &graph.inputs {
        if let Some(s) = cal.get(input) {
            eprintln!(
                "input '{}': int8 scale {s:e} (nvdla-runtime --input F --input-scale {s:e})",
                graph.tensor(input).name
            );
        }
    }
    for &output in &graph.outputs {
        if let Some(s) = cal.get(output) {
            eprintln!(
                "output '{}': int8 scale {s:e} (nvdla-runtime --output F.npy --output-scale {s:e})",
                graph.tensor(output).name
            );
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_in_bytes_kib_and_mib() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4M"), Ok(4 << 20));
        assert_eq!(parse_size("512k"), Ok(512 << 10));
        assert_eq!(parse_size("2MiB"), Ok(2 << 20));
        assert_eq!(parse_size("1KB"), Ok(1024));
        for bad in ["", "M", "4G", "-1", "1.5M", "99999999999999999999M"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }
}
