//! Write a one-operation SDP ReLU loadable, built with the project's own builder, in either
//! DLA data-cube layout and with any blob version (which need not name the layout, as in
//! ONNC's loadables): `cargo run -p nvdla-loadable --example sdp_relu -- OUT.nvdla
//! [--legacy] [--version MAJOR.MINOR]`.
use nvdla_loadable::dla::Layout;
use nvdla_loadable::Version;
use std::process::ExitCode;

fn main() -> ExitCode {
    let usage = || {
        eprintln!("usage: sdp_relu OUT.nvdla [--legacy] [--version MAJOR.MINOR]");
        ExitCode::FAILURE
    };
    let mut args = std::env::args_os().skip(1);
    let Some(out) = args.next() else {
        return usage();
    };
    let mut layout = Layout::Current;
    let mut version = nvdla_loadable::examples::DLA1_VERSION;
    while let Some(a) = args.next() {
        match a.to_str() {
            Some("--legacy") => layout = Layout::Legacy,
            Some("--version") => {
                let v = args.next();
                let parsed = v.as_ref().and_then(|v| v.to_str()).and_then(|v| {
                    let (major, minor) = v.split_once('.')?;
                    Some(Version {
                        major: major.parse().ok()?,
                        minor: minor.parse().ok()?,
                        sub_minor: 0,
                    })
                });
                let Some(parsed) = parsed else {
                    return usage();
                };
                version = parsed;
            }
            _ => return usage(),
        }
    }
    let bytes = nvdla_loadable::examples::sdp_relu(8, 8, layout, version, None).build();
    if let Err(e) = std::fs::write(&out, &bytes) {
        eprintln!("sdp_relu: cannot write {}: {e}", out.to_string_lossy());
        return ExitCode::FAILURE;
    }
    eprintln!(
        "wrote {} bytes ({layout:?} data cubes, blob version {version}) to {}",
        bytes.len(),
        out.to_string_lossy()
    );
    ExitCode::SUCCESS
}
