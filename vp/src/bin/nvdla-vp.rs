//! `nvdla-vp`: command-line front end of the NVDLA virtual platform.

use clap::{Parser, Subcommand};
use nvdla_vp::trace::{self, Options, Outcome};
use nvdla_vp::HwConfig;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "nvdla-vp", about = "NVDLA virtual platform")]
struct Cli {
    /// Debug logging on stderr (warnings are always shown).
    #[arg(short, long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run trace tests (a test directory, a trace file or a tree of them).
    Trace {
        /// Test directories, trace files or trees.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Hardware configuration (default: inferred from the path, else nv_full).
        #[arg(long)]
        config: Option<String>,
        /// Print every register write with block and register name.
        #[arg(long)]
        log_regs: bool,
    },
    /// Convolution throughput: a 56x56x64 input with 3x3x64x64 kernels (int8 and fp16)
    /// through the model (programmed over the CSB) and through a plain reference
    /// convolution, in MAC/s. Build with --release.
    Bench {
        /// Timed runs per precision (the best is reported).
        #[arg(long, default_value_t = 3)]
        runs: u32,
    },
}

/// Minimal stderr logger: the model reports ignored accesses and engine faults
/// through `log`.
struct StderrLog;

impl log::Log for StderrLog {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::max_level()
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
    let cli = Cli::parse();
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(if cli.verbose {
            log::LevelFilter::Debug
        } else {
            log::LevelFilter::Warn
        });
    }
    match cli.cmd {
        Cmd::Bench { runs } => {
            if cfg!(debug_assertions) {
                eprintln!("warning: debug build; figures are meaningless without --release");
            }
            let mut ok = true;
            for prec in [
                nvdla_vp::engines::Precision::Int8,
                nvdla_vp::engines::Precision::Fp16,
            ] {
                match nvdla_vp::bench::run(prec, runs) {
                    Ok(f) => out(format_args!(
                        "{:?}: {} MAC/layer, best of {}: model {:.3} s = {:.2} GMAC/s, \
                         reference {:.3} s = {:.2} GMAC/s, model/reference {:.2}x{}",
                        f.prec,
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
        } => {
            let forced = match config.as_deref().map(str::parse::<HwConfig>).transpose() {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            };
            let opts = Options { log_regs };
            let (mut pass, mut fail) = (0usize, 0usize);
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
                    let cfg = forced.clone().unwrap_or_else(|| trace::infer_config(&file));
                    match trace::run_test(&t, cfg, &opts) {
                        Ok(Outcome::Pass) => {
                            out(format_args!("PASS {}", t.name));
                            pass += 1;
                        }
                        Ok(Outcome::Fail(r)) => {
                            out(format_args!("FAIL {}: {r}", t.name));
                            fail += 1;
                        }
                        Err(e) => {
                            out(format_args!("FAIL {}: {e}", t.name));
                            fail += 1;
                        }
                    }
                }
            }
            out(format_args!("{pass} passed, {fail} failed"));
            if fail == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
