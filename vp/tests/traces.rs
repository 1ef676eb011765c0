//! Runs the shared hardware traces (skips with a message when `../shared` is absent).

use nvdla_vp::trace::{self, Options, Outcome};
use std::path::{Path, PathBuf};

fn shared() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/nvdla-hw-traces");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("skipping: {} not found", p.display());
        None
    }
}

fn run(rel: &str) {
    let Some(root) = shared() else { return };
    let dir = root.join(rel);
    if !dir.exists() {
        eprintln!("skipping: {} not found", dir.display());
        return;
    }
    let tests = trace::discover(&dir).expect("discover");
    assert!(!tests.is_empty(), "no test in {}", dir.display());
    for t in tests {
        let file = match &t.kind {
            trace::TestKind::Txn(f) | trace::TestKind::Cfg(f) => f.clone(),
        };
        let cfg = trace::infer_config(&file);
        match trace::run_test(&t, cfg, &Options::default()) {
            Ok(Outcome::Pass) => {}
            Ok(Outcome::Fail(r) | Outcome::NotRunnable(r)) => panic!("{}: {r}", t.name),
            Err(e) => panic!("{}: {e}", t.name),
        }
    }
}

macro_rules! trace_test {
    ($name:ident, $path:expr) => {
        #[test]
        fn $name() {
            run($path);
        }
    };
}

trace_test!(v1_sanity0, "v1-nv_full/sanity0");
trace_test!(v1_sanity1, "v1-nv_full/sanity1");
trace_test!(v1_sanity1_cvsram, "v1-nv_full/sanity1_cvsram");
trace_test!(v1_sanity2, "v1-nv_full/sanity2");
trace_test!(v1_sanity2_cvsram, "v1-nv_full/sanity2_cvsram");
trace_test!(v1_pdp_max_pooling_int16, "v1-nv_full/pdp_max_pooling_int16");
trace_test!(v1_sdp_relu_int16, "v1-nv_full/sdp_relu_int16");
trace_test!(
    v2_large_pdp_1x1_max,
    "v2-sample/nv_large/pdp_8x8x32_1x1_max_int8_0"
);
trace_test!(
    v2_large_sdp_passthrough,
    "v2-sample/nv_large/sdp_passthrough_8x8x32_pack_inc_int8"
);
trace_test!(
    v2_large_cdp_passthrough,
    "v2-sample/nv_large/cdp_passthrough_8x8x32_pack_inc_int8"
);
trace_test!(
    v2_small_cdp_lrn3,
    "v2-sample/nv_small/cdp_8x8x32_lrn3_int8_0"
);
trace_test!(
    v2_small_pdp_2x2_ave,
    "v2-sample/nv_small/pdp_8x8x64_2x2_ave_int8_0"
);
trace_test!(
    v2_small_sdp_bn,
    "v2-sample/nv_small/sdp_3x3x33_bn_int8_reg_0"
);

// The convolution pipeline (CDMA, CSC, CMAC, CACC -> SDP).
trace_test!(v1_sanity3_conv, "v1-nv_full/sanity3");
trace_test!(v1_sanity3_cvsram_conv, "v1-nv_full/sanity3_cvsram");
trace_test!(v1_conv_8x8_fc_int16, "v1-nv_full/conv_8x8_fc_int16");
trace_test!(
    v1_googlenet_conv2_3x3_int16,
    "v1-nv_full/googlenet_conv2_3x3_int16"
);
trace_test!(
    v2_large_dc_1x1_int8,
    "v2-sample/nv_large/dc_8x8x32_1x1x32x32_int8_0"
);
trace_test!(
    v2_small_dc_dilation_int8,
    "v2-sample/nv_small/dc_8x8x36_4x4x36x16_dilation_int8_0"
);

/// The whole v2 suite (`../shared/nvdla-hw-traces/v2`: every trace test of nvdla/hw
/// master for the six v2 builds), each test on the configuration its path names: the
/// outcome of every test must be the one `tests/v2-suite.txt` lists (`pass`, or
/// `not-runnable` when a data file is missing), and every listed test must exist. Tests
/// run on all cores.
#[test]
fn v2_suite_pass_list() {
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let Some(root) = shared() else { return };
    let v2 = root.join("v2");
    if !v2.is_dir() {
        eprintln!("skipping: {} not found", v2.display());
        return;
    }
    let list = include_str!("v2-suite.txt");
    let want: BTreeMap<String, &str> = list
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (t, o) = l.split_once(' ').expect("`<config>/<test> <outcome>`");
            assert!(matches!(o, "pass" | "not-runnable"), "{l}");
            (t.to_string(), o)
        })
        .collect();
    let tests = trace::discover(&v2).expect("discover");
    let key = |t: &trace::TestCase| -> (String, PathBuf) {
        let file = match &t.kind {
            trace::TestKind::Txn(f) | trace::TestKind::Cfg(f) => f.clone(),
        };
        let rel = file.strip_prefix(&v2).expect("under v2");
        let config = rel.components().next().expect("config directory");
        let config = config.as_os_str().to_string_lossy().into_owned();
        (format!("{config}/{}", t.name), file)
    };
    let next = AtomicUsize::new(0);
    let got: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let start = std::time::Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(t) = tests.get(i) else { break };
                let (name, file) = key(t);
                let outcome =
                    match trace::run_test(t, trace::infer_config(&file), &Options::default()) {
                        Ok(Outcome::Pass) => "pass".to_string(),
                        Ok(Outcome::NotRunnable(_)) => "not-runnable".to_string(),
                        Ok(Outcome::Fail(r)) => format!("FAIL: {r}"),
                        Err(e) => format!("FAIL: {e}"),
                    };
                got.lock().unwrap().insert(name, outcome);
            });
        }
    });
    let got = got.into_inner().unwrap();
    let mut wrong = Vec::new();
    for (t, o) in &got {
        match want.get(t) {
            Some(w) if w == o => {}
            Some(w) => wrong.push(format!("{t}: {o} (listed: {w})")),
            None => wrong.push(format!("{t}: {o} (not in tests/v2-suite.txt)")),
        }
    }
    for t in want.keys().filter(|t| !got.contains_key(*t)) {
        wrong.push(format!("{t}: listed, not found"));
    }
    let count = |o: &str| got.values().filter(|v| *v == o).count();
    eprintln!(
        "v2 suite: {} passed, {} not runnable, {} tests, {:.1} s on {threads} threads",
        count("pass"),
        count("not-runnable"),
        got.len(),
        start.elapsed().as_secs_f64()
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Malformed traces are errors with file and line, never panics.
#[test]
fn malformed_traces_report_file_and_line() {
    let dir = std::env::temp_dir().join(format!("nvdla-vp-malformed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let txn = dir.join("input.txn");
    std::fs::write(&txn, "write_reg 0xffff1000 0x1\nbogus 1 2\n").unwrap();
    let t = trace::discover(&dir).unwrap();
    let e = trace::run_test(
        &t[0],
        nvdla_vp::HwConfig::new(&nvdla_hw::NV_FULL),
        &Options::default(),
    )
    .unwrap_err();
    assert_eq!(e.line, 2);
    // A missing data file makes the test not runnable (neither pass nor fail), named.
    std::fs::write(&txn, "load_mem 0x0 0x10 missing.dat\n").unwrap();
    let r = trace::run_test(
        &t[0],
        nvdla_vp::HwConfig::new(&nvdla_hw::NV_FULL),
        &Options::default(),
    )
    .unwrap();
    assert!(
        matches!(&r, Outcome::NotRunnable(m) if m.contains("missing.dat")),
        "{r:?}"
    );
    // An unreadable one (a directory) is still an error with its line.
    std::fs::create_dir_all(dir.join("missing.dat")).unwrap();
    let e = trace::run_test(
        &t[0],
        nvdla_vp::HwConfig::new(&nvdla_hw::NV_FULL),
        &Options::default(),
    )
    .unwrap_err();
    assert_eq!(e.line, 1);
    std::fs::remove_dir(dir.join("missing.dat")).unwrap();
    std::fs::remove_file(&txn).unwrap();
    let cfg = dir.join("t.cfg");
    std::fs::write(&cfg, "reg_write(NVDLA_SDP.NOPE_0, 1);\n").unwrap();
    let t = trace::discover(&dir).unwrap();
    let e = trace::run_test(
        &t[0],
        nvdla_vp::HwConfig::new(&nvdla_hw::NV_SMALL),
        &Options::default(),
    )
    .unwrap_err();
    assert_eq!(e.line, 1);
    std::fs::write(&cfg, "mem_load(pri_mem, 0x0, \"gone.dat\");\n").unwrap();
    let r = trace::run_test(
        &t[0],
        nvdla_vp::HwConfig::new(&nvdla_hw::NV_SMALL),
        &Options::default(),
    )
    .unwrap();
    assert!(
        matches!(&r, Outcome::NotRunnable(m) if m.contains("gone.dat")),
        "{r:?}"
    );
    std::fs::write(&cfg, "intr_notify(PDP_0, x);\n").unwrap();
    let r = trace::run_test(
        &t[0],
        nvdla_vp::HwConfig::new(&nvdla_hw::NV_SMALL),
        &Options::default(),
    )
    .unwrap();
    assert!(matches!(r, Outcome::Fail(_)));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Arbitrary register values never panic: every register of every block is written with
/// pseudo-random values (sizes kept small so the test stays fast), groups are enabled,
/// and the platform must either compute, fault, or ignore.
#[test]
fn random_programming_never_panics() {
    use nvdla_vp::regs::{blocks, Block};
    use nvdla_vp::{HwConfig, Vp};
    let mut seed = 0x1234_5678_9abc_def0u64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for cfg in HwConfig::all() {
        for round in 0..40 {
            let mut vp = Vp::new(cfg);
            for def in blocks(cfg.version()) {
                if vp.regs(def.unit).is_none() {
                    continue;
                }
                for r in def.regs {
                    let mut v = rnd() as u32;
                    let n = r.name;
                    if n.contains("WIDTH")
                        || n.contains("HEIGHT")
                        || n.contains("CHANNEL")
                        || n.contains("SIZE")
                    {
                        v &= 0x000f_000f;
                    }
                    if def.unit == Block::Bdma && (n.contains("REPEAT") || n == "CFG_LINE") {
                        v &= 0xf;
                    }
                    if round % 2 == 0 && (n.contains("ADDR") || n.contains("STRIDE")) {
                        v &= 0x000f_ffe0; // keep half the rounds inside memory
                    }
                    if n == "D_OP_ENABLE" || n.starts_with("CFG_LAUNCH") || n == "CFG_OP" {
                        continue;
                    }
                    vp.csb_write(def.base + r.offset, v);
                }
            }
            for def in blocks(cfg.version()) {
                for n in ["D_OP_ENABLE", "CFG_OP", "CFG_LAUNCH0"] {
                    if let Some(a) = vp.lookup(def.unit.name(), n) {
                        vp.csb_write(a, 1);
                    }
                }
            }
            let _ = vp.irq_pending();
            for a in (0..0x12000u32).step_by(4) {
                let _ = vp.csb_read(a);
            }
        }
    }
}

/// Several v2 samples preload the golden output before running; replay them without
/// that preload so the CRC checks what the model computed.
#[test]
fn v2_samples_without_golden_preload() {
    let Some(root) = shared() else { return };
    let tmp = std::env::temp_dir().join(format!("nvdla-vp-nopreload-{}", std::process::id()));
    for t in [
        "nv_large/pdp_8x8x32_1x1_max_int8_0",
        "nv_large/sdp_passthrough_8x8x32_pack_inc_int8",
        "nv_large/cdp_passthrough_8x8x32_pack_inc_int8",
        "nv_small/cdp_8x8x32_lrn3_int8_0",
    ] {
        let src = root.join("v2-sample").join(t);
        if !src.is_dir() {
            eprintln!("skipping: {} not found", src.display());
            continue;
        }
        let dst = tmp.join(t);
        std::fs::create_dir_all(&dst).unwrap();
        for e in std::fs::read_dir(&src).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_owned();
            if p.extension().is_some_and(|x| x == "cfg") {
                let text = std::fs::read_to_string(&p).unwrap();
                let kept: String = text
                    .lines()
                    .filter(|l| !(l.starts_with("mem_load") && l.contains("_output.dat")))
                    .map(|l| format!("{l}\n"))
                    .collect();
                std::fs::write(dst.join(name), kept).unwrap();
            } else {
                std::fs::copy(&p, dst.join(name)).unwrap();
            }
        }
        let tests = trace::discover(&dst).unwrap();
        let cfg = trace::infer_config(&dst);
        let r = trace::run_test(&tests[0], cfg, &Options::default()).unwrap();
        assert_eq!(r, Outcome::Pass, "{t}");
    }
    let _ = std::fs::remove_dir_all(&tmp);
}
