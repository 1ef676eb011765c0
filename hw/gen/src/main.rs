//! `nvdla-hw-gen CLONE`: regenerates `hw/src/config/generated.rs` from a git clone of
//! NVIDIA's `nvdla/hw` (bare, `--mirror`, or with a work tree; the branches may be local
//! or `origin/` remote-tracking ones). `nv_full` comes from `spec/defs/` of branch
//! `nvdlav1`, every other build from `spec/defs/` of `master`; each `<build>.spec` is
//! evaluated with its branch's `projects.spec`.
//!
//! The register map comes from the same clone: `hw/src/regs/v1.rs` from
//! `nvdlav1:cmod/include/arnvdla.h`, `hw/src/regs/v2.rs` from `master:spec/manual/NVDLA_*.rdl`,
//! and `hw/src/regs/ids.rs` (typed register identifiers) from both.
//!
//! `--check` compares instead of writing (exit status 1 when a file differs).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::Parser;
use nvdla_hw::{Config, Generation, Source};
use nvdla_hw_gen::{
    command, config_from_spec, regmap, render, spec, DEFAULT_V1_REF, DEFAULT_V2_REF,
};

#[derive(Parser)]
#[command(
    name = "nvdla-hw-gen",
    about = "Generate nvdla-hw's configuration table from nvdla/hw's spec/defs"
)]
struct Args {
    /// A git clone of https://github.com/nvdla/hw (bare or with a work tree).
    clone: PathBuf,
    /// Ref holding the v1 (nv_full) spec.
    #[arg(long, default_value = DEFAULT_V1_REF)]
    v1_ref: String,
    /// Ref holding the v2 specs.
    #[arg(long, default_value = DEFAULT_V2_REF)]
    v2_ref: String,
    /// Output file (default: the workspace's hw/src/config/generated.rs).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Do not write: exit with status 1 when the file differs from what would be written.
    #[arg(long)]
    check: bool,
}

/// `git -C clone args...`, stdout as text.
fn git(clone: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(clone)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    String::from_utf8(out.stdout)
        .map_err(|_| format!("git {}: output is not UTF-8", args.join(" ")))
}

/// The commit of `r`, trying it as given, then as a remote-tracking branch of `origin`.
fn resolve(clone: &Path, r: &str) -> Result<String, String> {
    let mut last = String::new();
    for candidate in [r.to_string(), format!("origin/{r}")] {
        match git(
            clone,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("{candidate}^{{commit}}"),
            ],
        ) {
            Ok(c) => return Ok(c.trim().to_string()),
            Err(e) => last = e,
        }
    }
    Err(format!(
        "{}: no ref `{r}` (nor origin/{r}) ({last}); clone nvdla/hw with both branches, e.g. \
         git clone --mirror https://github.com/nvdla/hw",
        clone.display()
    ))
}

/// Reads every build of one branch: (source, configurations).
fn branch(clone: &Path, r: &str, generation: Generation) -> Result<(Source, Vec<Config>), String> {
    const DEFS: &str = "spec/defs/";
    const PROJECTS: &str = "spec/defs/projects.spec";
    let commit = resolve(clone, r)?;
    let listing = git(clone, &["ls-tree", "--name-only", &commit, DEFS])?;
    let mut builds: Vec<&str> = listing
        .lines()
        .filter_map(|f| f.strip_prefix(DEFS)?.strip_suffix(".spec"))
        .filter(|n| *n != "projects")
        .collect();
    builds.sort_unstable();
    if builds.is_empty() {
        return Err(format!("{r} ({commit}): no build specs in {DEFS}"));
    }
    let show = |file: &str| git(clone, &["show", &format!("{commit}:{file}")]);
    let projects = show(PROJECTS)?;
    let mut files = vec![PROJECTS.to_string()];
    let mut configs = Vec::new();
    for b in builds {
        let file = format!("{DEFS}{b}.spec");
        let text = show(&file)?;
        let s = spec::evaluate(&file, &text, &[("projects.spec", &projects)])
            .map_err(|e| format!("{r}: {e}"))?;
        configs.push(config_from_spec(b, generation, &s)?);
        files.push(file);
    }
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let files: Vec<&'static str> = files.into_iter().map(leak).collect();
    let source = Source {
        repository: nvdla_hw_gen::REPOSITORY,
        branch: leak(r.to_string()),
        commit: leak(commit),
        files: Box::leak(files.into_boxed_slice()),
    };
    Ok((source, configs))
}

/// The register maps: (v1 units, v2 units, v1 source, v2 source).
fn register_maps(
    clone: &Path,
    v1_ref: &str,
    v2_ref: &str,
) -> Result<(Vec<regmap::Unit>, Vec<regmap::Unit>, String, String), String> {
    const HEADER: &str = "cmod/include/arnvdla.h";
    const MANUAL: &str = "spec/manual/";
    let c1 = resolve(clone, v1_ref)?;
    let header = git(clone, &["show", &format!("{c1}:{HEADER}")])?;
    let v1 = regmap::parse_v1(&header)?;
    let c2 = resolve(clone, v2_ref)?;
    let mut v2 = Vec::new();
    for (unit, _, _) in regmap::UNITS {
        let file = format!("{MANUAL}NVDLA_{unit}.rdl");
        let rdl = git(clone, &["show", &format!("{c2}:{file}")])?;
        v2.push(regmap::parse_v2_unit(unit, &rdl)?);
    }
    Ok((
        v1,
        v2,
        format!("branch {v1_ref}, commit {c1}, {HEADER}"),
        format!("branch {v2_ref}, commit {c2}, {MANUAL}NVDLA_<UNIT>.rdl"),
    ))
}

/// Writes (or with `check`, compares) one output; true when it was already current.
fn emit(out: &Path, text: &str, check: bool) -> Result<bool, String> {
    let old = std::fs::read_to_string(out).ok();
    let same = old.as_deref() == Some(text);
    if check {
        println!(
            "{}: {}",
            out.display(),
            if same { "up to date" } else { "DIFFERS" }
        );
    } else if !same {
        std::fs::write(out, text).map_err(|e| format!("{}: {e}", out.display()))?;
        println!("{}: written", out.display());
    }
    Ok(same)
}

fn run(args: &Args) -> Result<bool, String> {
    let regs_ok = {
        let cmd = command(&args.v1_ref, &args.v2_ref);
        let (v1, v2, s1, s2) = register_maps(&args.clone, &args.v1_ref, &args.v2_ref)?;
        let gen = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = gen.parent().unwrap_or(gen).join("src/regs");
        let ids = regmap::render_ids(&v1, &v2, &cmd)?;
        let mut ok = true;
        for (file, text) in [
            ("v1.rs", regmap::render_map(&v1, &s1, &cmd, "v1 (nv_full)")),
            (
                "v2.rs",
                regmap::render_map(&v2, &s2, &cmd, "v2 (every other build)"),
            ),
            ("ids.rs", ids),
        ] {
            ok &= emit(&dir.join(file), &text, args.check)?;
        }
        ok
    };
    if args.check && !regs_ok {
        // Still report the configuration table.
        let _ = run_config(args)?;
        return Ok(false);
    }
    run_config(args)
}

fn run_config(args: &Args) -> Result<bool, String> {
    let mut sources = Vec::new();
    let mut builds = Vec::new();
    for (r, generation) in [
        (&args.v1_ref, Generation::V1),
        (&args.v2_ref, Generation::V2),
    ] {
        let (source, configs) = branch(&args.clone, r, generation)?;
        builds.extend(configs.into_iter().map(|c| (sources.len(), c)));
        sources.push(source);
    }
    let text = render(&sources, &builds, &command(&args.v1_ref, &args.v2_ref));
    let out = args.out.clone().unwrap_or_else(|| {
        // hw/gen -> hw/src/config/generated.rs
        let gen = Path::new(env!("CARGO_MANIFEST_DIR"));
        gen.parent().unwrap_or(gen).join("src/config/generated.rs")
    });
    let old = std::fs::read_to_string(&out).ok();
    let same = old.as_deref() == Some(text.as_str());
    if args.check {
        println!(
            "{}: {}",
            out.display(),
            if same { "up to date" } else { "DIFFERS" }
        );
        return Ok(same);
    }
    if !same {
        std::fs::write(&out, &text).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    let names: Vec<&str> = builds.iter().map(|(_, c)| c.name).collect();
    println!(
        "{}: {} ({}){}",
        out.display(),
        names.join(", "),
        sources
            .iter()
            .map(|s| format!("{} {}", s.branch, &s.commit[..s.commit.len().min(12)]))
            .collect::<Vec<_>>()
            .join(", "),
        if same { ", unchanged" } else { ", written" }
    );
    Ok(true)
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
