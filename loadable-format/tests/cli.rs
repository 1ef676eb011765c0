//! `nvdla-loadable check` as a user runs it: data cubes larger than their buffers fail the
//! check with one line naming task, operation and cube, in either descriptor layout.

use nvdla_loadable::dla::Layout;
use nvdla_loadable::examples::{sdp_relu, DLA1_VERSION};
use nvdla_loadable::Version;
use std::process::Command;

#[test]
fn check_rejects_a_cube_larger_than_its_buffer() {
    let dir = std::env::temp_dir().join(format!("nvdla-loadable-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let onnc_like = Version {
        major: 1,
        minor: 3,
        sub_minor: 0,
    };
    let good = dir.join("good.nvdla");
    std::fs::write(
        &good,
        sdp_relu(8, 8, Layout::Legacy, onnc_like, None).build(),
    )
    .unwrap();
    for (name, layout, version) in [
        ("current.nvdla", Layout::Current, DLA1_VERSION),
        ("legacy.nvdla", Layout::Legacy, onnc_like),
    ] {
        let bad = dir.join(name);
        std::fs::write(&bad, sdp_relu(8, 8, layout, version, Some(4096)).build()).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_nvdla-loadable"))
            .arg("check")
            .arg(&good)
            .arg(&bad)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(1), "{out}");
        assert!(out.contains(&format!("OK {}", good.display())), "{out}");
        let line = out.lines().find(|l| l.starts_with("FAIL")).unwrap();
        assert!(
            line.contains(&format!(
                "task 0 operation 0 (Sdp): dla_sdp_surface_desc.dst_data ({layout:?} layout) at \
                 address-list entry 5 + 0x0, 4096 bytes: exceeds its buffer (2048 bytes \
                 available)"
            )),
            "{line}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
