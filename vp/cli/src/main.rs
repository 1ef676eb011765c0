//! `nvdla-vp`: command-line front end of the NVDLA virtual platform.
//!
//! - `nvdla-vp trace PATH...`: NVIDIA's register-level trace tests on the model, or with
//!   `--device rtl[:HARNESS]` on NVIDIA's nv_small RTL (see [`rtl_trace`]);
//! - `nvdla-vp bench`: convolution throughput of the model against a plain reference;
//! - `nvdla-vp serve --socket PATH`: our KMD, firmware and the model as a daemon serving
//!   `nvdla-runtime --device socket:PATH` (see `nvdla_port::daemon`): buffers are shared
//!   memory, each client has its own handles, and SIGTERM/SIGINT stop it cleanly;
//! - `nvdla-vp serve --qemu-socket PATH --guest-ram FILE`: the hardware model alone behind
//!   QEMU's `mmio-sock-pci` bridge, for a Linux guest running `nvdla.ko` (see [`bridge`]).

mod bridge;
mod rtl_trace;

use clap::{Parser, Subcommand};
use nvdla_port::daemon::{serve, DaemonConfig};
use nvdla_port::rtl::RtlLaunch;
use nvdla_port::vp::VpConfig;
use nvdla_vp::trace::{self, Options, Outcome};
use nvdla_vp::HwConfig;
use rtl_trace::Verdict;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "nvdla-vp", about = "NVDLA virtual platform")]
struct Cli {
    /// More logging on stderr (warnings are always shown): `-v` the daemon's own lines
    /// and debug lines of the model, `-vv` everything.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run trace tests (a test directory, a trace file or a tree of them). Prints
    /// `PASS`, `FAIL` or `NOT RUNNABLE` (a data file the trace names is missing) per
    /// test, then `N passed, M failed` and the count of tests not runnable; the exit
    /// status is non-zero when a test fails. On the RTL, a test whose memory differs from
    /// the trace's golden values but equals, at every check, what the model computes as
    /// nv_small is built (its RTL bypasses SDP's element-wise unit) prints
    /// `PASS (as built)` and counts as passed.
    Trace {
        /// Test directories, trace files or trees.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Hardware configuration: nv_full, nv_large, nv_medium_1024_full, nv_medium_512,
        /// nv_small, nv_small_256 or nv_small_256_full (default: the longest of these names
        /// in the test's path, else nv_full).
        #[arg(long)]
        config: Option<String>,
        /// Print every register write with block and register name.
        #[arg(long)]
        log_regs: bool,
        /// Where the tests run: `model` (the hardware model), or `rtl` (NVIDIA's nv_small
        /// RTL: the harness `scripts/build-rtl` builds, named by NVDLA_RTL_HARNESS) or
        /// `rtl:HARNESS` (that harness program). Each test gets a fresh harness.
        #[arg(long, default_value = "model", value_name = "DEVICE", value_parser = parse_device)]
        device: Device,
        /// Append each test's cycles to its line: from reset to the end of the test, the
        /// cycle model's estimate (model) or the RTL's count (rtl); docs/performance.md.
        #[arg(long)]
        cycles: bool,
    },
    /// Convolution throughput: a 56x56x64 input with 3x3x64x64 kernels (int8 and fp16)
    /// through the model (programmed over the CSB) and through a plain reference
    /// convolution, in MAC/s, with the integer kernel used (`NVDLA_VP_INT_KERNEL=portable`
    /// or `avx2` caps it). Build with --release; `scripts/bench` adds whole networks.
    Bench {
        /// Timed runs per precision (the best is reported).
        #[arg(long, default_value_t = 3)]
        runs: u32,
        /// Only this precision (default: int8 and fp16).
        #[arg(long, value_parser = ["int8", "fp16"])]
        precision: Option<String>,
    },
    /// Serve KMD + firmware + the model on a Unix socket for
    /// `nvdla-runtime --device socket:PATH`, until SIGTERM or SIGINT; or, with
    /// `--qemu-socket`, the hardware model alone behind QEMU's mmio-sock-pci bridge (one
    /// QEMU connection; exits when QEMU closes it).
    Serve {
        /// Path of the Unix socket to listen on (KMD daemon).
        #[arg(
            long,
            value_name = "PATH",
            required_unless_present = "qemu_socket",
            conflicts_with = "qemu_socket"
        )]
        socket: Option<PathBuf>,
        /// Serve the hardware model to QEMU's mmio-sock-pci device on this socket
        /// (`-device mmio-sock-pci,socket=PATH`).
        #[arg(long, value_name = "PATH", requires = "guest_ram")]
        qemu_socket: Option<PathBuf>,
        /// With --qemu-socket: QEMU's guest RAM file (memory-backend-file with share=on);
        /// it is the model's DRAM.
        #[arg(long, value_name = "FILE", requires = "qemu_socket")]
        guest_ram: Option<PathBuf>,
        /// With --qemu-socket: guest physical address of the RAM file's first byte.
        #[arg(long, value_name = "ADDR", default_value = "0x40000000", value_parser = parse_u64)]
        ram_base: u64,
        /// Hardware configurations to serve (comma-separated, or `all`): nv_full, nv_large,
        /// nv_medium_1024_full, nv_medium_512, nv_small, nv_small_256, nv_small_256_full;
        /// the first is the default for clients that do not name one. With --qemu-socket:
        /// exactly one.
        #[arg(long, default_value = "nv_full", value_name = "CONFIGS", value_parser = parse_configs)]
        config: Configs,
        /// With --qemu-socket, fault injection for driver tests: after this many
        /// interrupts the accelerator hangs (no engine completes) until the driver resets
        /// it. Once per QEMU connection.
        #[arg(long, value_name = "N", requires = "qemu_socket")]
        hang_after_irqs: Option<u64>,
        /// Most clients connected at once.
        #[arg(long, default_value_t = 64)]
        max_clients: usize,
    },
}

#[derive(Debug, Clone)]
struct Configs(Vec<VpConfig>);

/// Where `trace` runs the tests.
#[derive(Debug, Clone)]
enum Device {
    /// The hardware model.
    Model,
    /// NVIDIA's nv_small RTL: the harness at the path, else NVDLA_RTL_HARNESS's.
    Rtl(Option<PathBuf>),
}

fn parse_device(s: &str) -> Result<Device, String> {
    match s {
        "model" => Ok(Device::Model),
        "rtl" => Ok(Device::Rtl(None)),
        _ => match s.strip_prefix("rtl:") {
            Some(p) if !p.is_empty() => Ok(Device::Rtl(Some(PathBuf::from(p)))),
            _ => Err(format!(
                "unknown device `{s}` (expected model, rtl or rtl:HARNESS)"
            )),
        },
    }
}

fn parse_u64(s: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(&h.replace('_', ""), 16),
        None => s.replace('_', "").parse(),
    };
    r.map_err(|e| format!("{s}: {e}"))
}

fn parse_configs(s: &str) -> Result<Configs, String> {
    if s == "all" {
        return Ok(Configs(VpConfig::ALL.to_vec()));
    }
    s.split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map(Configs)
}

/// Minimal stderr logger: the model reports ignored accesses and engine faults
/// through `log`.
struct StderrLog;

impl log::Log for StderrLog {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        // `-v` shows the daemon's own lines and the model's debug lines; the driver's
        // per-operation lines need `-vv`.
        m.level() <= log::Level::Warn
            || (m.level() <= log::max_level()
                && (log::max_level() >= log::LevelFilter::Trace
                    || !m.target().starts_with("nvdla_kmd")
                        && !m.target().starts_with("nvdla_firmware")))
    }

    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) {
            eprintln!("{}: {}", r.level().as_str().to_ascii_lowercase(), r.args());
        }
    }

    fn flush(&self) {}
}

static LOGGER: StderrLog = StderrLog;

/// Prints a result line; a closed stdout (e.g. `| head`) ends the run quietly.
fn out(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    if writeln!(std::io::stdout().lock(), "{line}").is_err() {
        std::process::exit(0);
    }
}

fn main() -> ExitCode {
    // The model's per-layer buffers reuse freed memory (the daemon runs network after
    // network, the benchmark layer after layer).
    nvdla_port::vp::keep_freed_memory();
    let cli = Cli::parse();
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(match cli.verbose {
            0 => log::LevelFilter::Warn,
            1 => log::LevelFilter::Debug,
            _ => log::LevelFilter::Trace,
        });
    }
    match cli.cmd {
        Cmd::Serve {
            socket,
            qemu_socket,
            guest_ram,
            ram_base,
            config,
            max_clients,
            hang_after_irqs,
        } => match (socket, qemu_socket, guest_ram) {
            (_, Some(qemu_socket), Some(guest_ram)) => {
                serve_qemu(qemu_socket, guest_ram, ram_base, &config.0, hang_after_irqs)
            }
            (Some(socket), _, _) => serve_socket(&socket, config.0, max_clients),
            // clap requires --socket or --qemu-socket, and --guest-ram with the latter.
            _ => {
                eprintln!("error: nvdla-vp serve needs --socket, or --qemu-socket and --guest-ram");
                ExitCode::from(2)
            }
        },
        Cmd::Bench { runs, precision } => {
            if cfg!(debug_assertions) {
                eprintln!("warning: debug build; figures are meaningless without --release");
            }
            let mut ok = true;
            for prec in [
                nvdla_vp::engines::Precision::Int8,
                nvdla_vp::engines::Precision::Fp16,
            ]
            .into_iter()
            .filter(|p| {
                precision
                    .as_deref()
                    .is_none_or(|n| format!("{p:?}").eq_ignore_ascii_case(n))
            }) {
                match nvdla_vp::bench::run(prec, runs) {
                    Ok(f) => out(format_args!(
                        "{:?} ({} kernel): {} MAC/layer, best of {}: model {:.3} s = {:.2} GMAC/s, \
                         reference {:.3} s = {:.2} GMAC/s, model/reference {:.2}x{}",
                        f.prec,
                        if f.prec == nvdla_vp::engines::Precision::Fp16 {
                            if nvdla_vp::engines::conv::arith::WeightRows::available() {
                                "fp16 weight rows"
                            } else {
                                "fp16 block"
                            }
                        } else {
                            nvdla_vp::engines::conv::int_simd::int_kernel().name()
                        },
                        f.macs,
                        f.runs,
                        f.model_s,
                        f.model_macs() / 1e9,
                        f.reference_s,
                        f.reference_macs() / 1e9,
                        f.model_macs() / f.reference_macs(),
                        if f.prec == nvdla_vp::engines::Precision::Fp16 {
                            format!(" (max |model - f32 reference| {:.4})", f.max_error)
                        } else {
                            " (outputs identical)".to_string()
                        }
                    )),
                    Err(e) => {
                        eprintln!("error: {prec:?}: {e}");
                        ok = false;
                    }
                }
            }
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Cmd::Trace {
            paths,
            config,
            log_regs,
            device,
            cycles,
        } => {
            let forced = match config.as_deref().map(str::parse::<HwConfig>).transpose() {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            };
            let rtl = match device {
                Device::Model => None,
                Device::Rtl(Some(p)) => Some(RtlLaunch::new(p)),
                Device::Rtl(None) => match RtlLaunch::from_env() {
                    Ok(l) => Some(l),
                    Err(e) => {
                        eprintln!("error: {e}");
                        return ExitCode::from(2);
                    }
                },
            };
            let opts = Options { log_regs };
            let (mut pass, mut fail, mut not_runnable) = (0usize, 0usize, 0usize);
            for p in &paths {
                let tests = match trace::discover(p) {
                    Ok(t) => t,
                    Err(e) => {
                        out(format_args!("FAIL {}: {e}", p.display()));
                        fail += 1;
                        continue;
                    }
                };
                for t in tests {
                    let file = match &t.kind {
                        trace::TestKind::Txn(f) | trace::TestKind::Cfg(f) => f.clone(),
                    };
                    let cfg = forced.unwrap_or_else(|| trace::infer_config(&file));
                    let timed = match &rtl {
                        None => trace::run_test_timed(&t, cfg, &opts)
                            .map(|(o, c)| (Verdict::Outcome(o), c)),
                        Some(l) => rtl_trace::run_test_timed(&t, cfg, l, &opts),
                    };
                    let (verdict, count) = match timed {
                        Ok((v, c)) => (Ok(v), c),
                        Err(e) => (Err(e), 0),
                    };
                    let name = if cycles && count > 0 {
                        format!("{} [{count} cycles]", t.name)
                    } else {
                        t.name.clone()
                    };
                    let t = trace::TestCase { name, ..t.clone() };
                    match verdict {
                        Ok(Verdict::AsBuilt(r)) => {
                            out(format_args!("PASS (as built) {}: {r}", t.name));
                            pass += 1;
                        }
                        Ok(Verdict::Outcome(Outcome::Pass)) => {
                            out(format_args!("PASS {}", t.name));
                            pass += 1;
                        }
                        Ok(Verdict::Outcome(Outcome::Fail(r))) => {
                            out(format_args!("FAIL {}: {r}", t.name));
                            fail += 1;
                        }
                        Ok(Verdict::Outcome(Outcome::NotRunnable(r))) => {
                            out(format_args!("NOT RUNNABLE {}: {r}", t.name));
                            not_runnable += 1;
                        }
                        Err(e) => {
                            out(format_args!("FAIL {}: {e}", t.name));
                            fail += 1;
                        }
                    }
                }
            }
            out(format_args!("{pass} passed, {fail} failed"));
            out(format_args!(
                "{not_runnable} not runnable (data files missing)"
            ));
            if fail == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// `serve --qemu-socket`: the model behind QEMU's bridge until QEMU disconnects.
fn serve_qemu(
    socket: PathBuf,
    guest_ram: PathBuf,
    ram_base: u64,
    configs: &[VpConfig],
    hang_after_irqs: Option<u64>,
) -> ExitCode {
    let [config] = configs else {
        eprintln!("error: nvdla-vp serve --qemu-socket serves one hardware configuration");
        return ExitCode::from(2);
    };
    let hw = HwConfig::new(config.hw());
    let cfg = bridge::BridgeConfig {
        socket,
        guest_ram,
        ram_base,
        hw,
        hang_after_irqs,
    };
    match bridge::serve(&cfg) {
        Ok(s) => {
            log::info!(
                "bridge: QEMU disconnected: {} reads, {} writes, {} resets, {} interrupts",
                s.reads,
                s.writes,
                s.resets,
                s.irqs
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!(
                "error: nvdla-vp serve --qemu-socket {}: {e}",
                cfg.socket.display()
            );
            ExitCode::FAILURE
        }
    }
}

/// `serve`: runs the daemon on `socket` until a stop signal.
fn serve_socket(socket: &std::path::Path, configs: Vec<VpConfig>, max_clients: usize) -> ExitCode {
    // Each client buffer is a memfd: allow as many descriptors as the hard limit does.
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < hard {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
        }
    }
    let cfg = DaemonConfig {
        configs,
        max_clients,
        ..DaemonConfig::default()
    };
    // `serve` blocks the stop signals in this thread before any client thread exists.
    match serve(socket, &cfg) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: nvdla-vp serve: {}: {e}", socket.display());
            ExitCode::FAILURE
        }
    }
}
