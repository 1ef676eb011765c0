//! Compares our JPEG decode with libjpeg's ISLOW output (`djpeg -dct int`), when the tool
//! is installed (it is not a build dependency).

mod common;

#[test]
fn mnist_jpegs_match_libjpeg_islow() {
    let Some(shared) = common::shared("mnist_jpegs_match_libjpeg_islow") else {
        return;
    };
    let dir = shared.join("third-party-loadables/lenet-mnist/images");
    let mut compared = 0;
    for i in 0..10 {
        let jpg = dir.join(format!("0_{i}.jpg"));
        let out = match std::process::Command::new("djpeg")
            .args(["-dct", "int", "-pnm"])
            .arg(&jpg)
            .output()
        {
            Ok(o) if o.status.success() => o.stdout,
            _ => {
                eprintln!("mnist_jpegs_match_libjpeg_islow: skipped, djpeg not available");
                return;
            }
        };
        let reference = nvdla_umd::image::decode_pgm(&out).unwrap();
        let ours = nvdla_umd::image::load_image(&jpg).unwrap();
        let diff = ours
            .data
            .iter()
            .zip(&reference.data)
            .map(|(a, b)| (i16::from(*a) - i16::from(*b)).unsigned_abs())
            .max()
            .unwrap_or(0);
        let differing = ours
            .data
            .iter()
            .zip(&reference.data)
            .filter(|(a, b)| a != b)
            .count();
        eprintln!("0_{i}.jpg: {differing} pixels differ from libjpeg, by at most {diff}");
        assert!(diff <= 1, "0_{i}.jpg differs by {diff}");
        compared += 1;
    }
    assert_eq!(compared, 10);
}
