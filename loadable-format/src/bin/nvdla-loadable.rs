//! `nvdla-loadable`: inspect NVDLA loadables.
use clap::{Parser, Subcommand};
use nvdla_loadable::{inspect, Loadable};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "nvdla-loadable", version, about = "Inspect NVDLA loadables")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate a loadable and print its lists and decoded task descriptors.
    Inspect {
        /// The loadable file (flatbuffers, format 0.7).
        file: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Validate loadables (structure, references, and that every DLA data cube in use fits
    /// its buffer); print `OK <file>` or the first error of each.
    Check {
        /// Loadable files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

fn load(file: &PathBuf) -> Result<Vec<u8>, String> {
    std::fs::read(file).map_err(|e| format!("{}: cannot read: {e}", file.display()))
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Inspect { file, json } => {
            let bytes = load(&file)?;
            let l = Loadable::parse(&bytes).map_err(|e| format!("{}: {e}", file.display()))?;
            let summary = inspect::summarize(&l);
            for w in nvdla_loadable::lint::warnings(&l) {
                eprintln!("warning: {w}");
            }
            if json {
                let text = serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?;
                println!("{text}");
            } else {
                print!("{}", inspect::render_text(&summary));
            }
            Ok(())
        }
        Command::Check { files } => {
            let mut failed = 0;
            for file in &files {
                match load(file).and_then(|b| {
                    let l = Loadable::parse(&b).map_err(|e| format!("{}: {e}", file.display()))?;
                    // Data cubes the hardware would read or write must fit their buffers.
                    nvdla_loadable::cubes::check(&l)
                        .map_err(|e| format!("{}: {e}", file.display()))?;
                    for w in nvdla_loadable::lint::warnings(&l) {
                        println!("WARNING {}: {w}", file.display());
                    }
                    Ok(())
                }) {
                    Ok(()) => println!("OK {}", file.display()),
                    Err(e) => {
                        failed += 1;
                        println!("FAIL {e}");
                    }
                }
            }
            if failed > 0 {
                Err(format!(
                    "{failed} of {} loadables failed validation",
                    files.len()
                ))
            } else {
                Ok(())
            }
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nvdla-loadable: {e}");
            ExitCode::FAILURE
        }
    }
}
