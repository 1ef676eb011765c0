//! `nvdla-kmd-daemon`: our KMD, firmware and hardware model as a daemon serving
//! `nvdla-runtime --device socket:PATH` (see `nvdla_port::daemon`).
//!
//! `nvdla-kmd-daemon --socket PATH [--config nv_full[,nv_large,...]|all] [--max-clients N]
//! [-v]` runs until SIGTERM/SIGINT, then disconnects its clients, frees their buffers,
//! removes the socket and exits 0. This is the `serve` command of `nvdla-vp` in a binary
//! of this crate (the `vp` crate cannot depend on `port`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use nvdla_port::daemon::{serve, DaemonConfig};
use nvdla_port::vp::VpConfig;

/// Command-line arguments.
#[derive(Debug, Parser)]
#[command(
    name = "nvdla-kmd-daemon",
    about = "Serve the NVDLA virtual platform (KMD + firmware + hardware model) on a Unix socket"
)]
struct Args {
    /// Path of the Unix socket to listen on.
    #[arg(long, value_name = "PATH")]
    socket: PathBuf,
    /// Hardware configurations to serve (comma-separated, or `all`); the first is the
    /// default for clients that do not name one.
    #[arg(long, default_value = "nv_full", value_name = "CONFIGS", value_parser = parse_configs)]
    config: Configs,
    /// Most clients connected at once.
    #[arg(long, default_value_t = 64)]
    max_clients: usize,
    /// Log each client's connection and failures (twice: debug).
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
}

#[derive(Debug, Clone)]
struct Configs(Vec<VpConfig>);

fn parse_configs(s: &str) -> Result<Configs, String> {
    if s == "all" {
        return Ok(Configs(vec![
            VpConfig::NvFull,
            VpConfig::NvLarge,
            VpConfig::NvSmall,
        ]));
    }
    s.split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map(Configs)
}

/// Log lines on stderr, prefixed with the level.
struct StderrLog;

impl log::Log for StderrLog {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        // `-v` shows the daemon's own lines; the driver's per-operation lines need `-vv`.
        m.level() <= log::Level::Warn
            || (m.level() <= log::max_level()
                && (log::max_level() >= log::LevelFilter::Debug
                    || m.target().starts_with("nvdla_port")))
    }
    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) {
            eprintln!("nvdla-kmd-daemon: {}: {}", r.level(), r.args());
        }
    }
    fn flush(&self) {}
}

static LOGGER: StderrLog = StderrLog;

fn main() -> ExitCode {
    let args = Args::parse();
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(match args.verbose {
        0 => log::LevelFilter::Warn,
        1 => log::LevelFilter::Info,
        _ => log::LevelFilter::Debug,
    });
    // Each client's buffers are memfds: allow as many descriptors as the hard limit does.
    if let Ok((soft, hard)) =
        nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
    {
        if soft < hard {
            let _ = nix::sys::resource::setrlimit(
                nix::sys::resource::Resource::RLIMIT_NOFILE,
                hard,
                hard,
            );
        }
    }
    let cfg = DaemonConfig {
        configs: args.config.0,
        max_clients: args.max_clients,
        ..DaemonConfig::default()
    };
    match serve(&args.socket, &cfg) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: nvdla-kmd-daemon: {}: {e}", args.socket.display());
            ExitCode::FAILURE
        }
    }
}
