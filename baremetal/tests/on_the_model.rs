//! The bare-metal runner on the host, with the hardware model behind its register trait and
//! the image in memory the model's DMA shares (a memfd the model reads and writes with
//! `pread`/`pwrite`, mapped for the runner): every regression loadable and every LeNet
//! loadable is exported by `nvdla-runtime`'s exporter, run by the [`Runner`], and its
//! outputs must equal the exporter's in-process run byte for byte; the exported register
//! trace must replay on a fresh model with its golden dumps. `scripts/baremetal` does the
//! same under QEMU on an aarch64 CPU.

use std::cell::RefCell;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

use nvdla_baremetal::{DmaRegion, Platform, Registers, Runner};
use nvdla_firmware::HwError;
use nvdla_port::shm::SharedMem;
use nvdla_port::vp::VpConfig;
use nvdla_umd::app::TensorIo;
use nvdla_umd::export::{export, ExportOptions};
use nvdla_umd::image::ImageOptions;
use nvdla_umd::RunOptions;
use nvdla_vp::mem::Memory;
use nvdla_vp::Vp;

const BASE: u64 = 0x4800_0000;

/// The model as a register bus. Like QEMU's bridge (`nvdla-vp serve --qemu-socket`), it
/// observes the interrupt line after every access, which lets enabled work run.
struct ModelRegs(RefCell<Vp>);

impl Registers for ModelRegs {
    fn read(&self, offset: u32) -> Result<u32, HwError> {
        let mut vp = self.0.borrow_mut();
        let v = vp.csb_read(offset);
        vp.irq_pending();
        Ok(v)
    }
    fn write(&self, offset: u32, value: u32) -> Result<(), HwError> {
        let mut vp = self.0.borrow_mut();
        vp.csb_write(offset, value);
        vp.irq_pending();
        Ok(())
    }
}

/// The host's clock.
struct HostClock(Instant);

impl embedded_hal::delay::DelayNs for HostClock {
    fn delay_ns(&mut self, _ns: u32) {}
}

impl Platform for HostClock {
    fn now_us(&mut self) -> u64 {
        self.0.elapsed().as_micros() as u64
    }
}

fn shared() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared");
    p.is_dir().then_some(p)
}

/// Exports `loadable` for `config` into a temporary directory, runs the image with the
/// runner on the model, and compares the outputs.
fn run_one(loadable: &Path, config: VpConfig, image: Option<&Path>) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!(
        "nvdla-baremetal-test-{}-{}",
        std::process::id(),
        loadable.file_name().unwrap().to_string_lossy()
    ));
    let bytes = std::fs::read(loadable).map_err(|e| e.to_string())?;
    let opts = ExportOptions {
        base: BASE,
        config,
        dir: dir.clone(),
        name: "test".into(),
    };
    let exported = export(
        &bytes,
        image,
        &TensorIo::default(),
        &ImageOptions::default(),
        &RunOptions::default(),
        &opts,
        &mut std::io::sink(),
    )
    .map_err(|e| format!("export: {e}"))?;
    let image_bytes = std::fs::read(dir.join("image.bin")).map_err(|e| e.to_string())?;
    assert_eq!(image_bytes.len() as u64, exported.image_len);

    // The image in shared memory: the runner's view and the model's DRAM.
    let mut shm = SharedMem::create("image", image_bytes.len()).map_err(|e| e.to_string())?;
    shm.as_mut_slice().copy_from_slice(&image_bytes);
    let file = File::from(shm.fd().try_clone_to_owned().map_err(|e| e.to_string())?);
    let mut vp = Vp::new(nvdla_vp::HwConfig::new(config.hw()));
    vp.mem =
        Memory::with_dram_file(file, BASE, config.hw().features.cvif).map_err(|e| e.to_string())?;
    let ptr = shm.as_mut_slice().as_mut_ptr();
    // SAFETY: `shm` outlives the runner (dropped at the end of this function, after it) and
    // nothing else in this process refers to its bytes while the runner runs.
    let mem = unsafe { DmaRegion::new(BASE, ptr, image_bytes.len()) };
    let mut runner: Runner<_, _> =
        Runner::new(ModelRegs(RefCell::new(vp)), mem, HostClock(Instant::now()))
            .map_err(|e| e.to_string())?;
    runner.run(|_, _| {}).map_err(|e| e.to_string())?;
    for i in 0..runner.header().output_count {
        let t = runner.output(i).map_err(|e| e.to_string())?;
        let mut got = vec![0u8; t.size as usize];
        runner
            .memory()
            .read(t.addr, &mut got)
            .map_err(|e| e.to_string())?;
        let want = std::fs::read(dir.join(format!("expected/output-{i}.bin")))
            .map_err(|e| e.to_string())?;
        if got != want {
            let first = got.iter().zip(&want).position(|(a, b)| a != b);
            return Err(format!(
                "output {i} differs from the in-process run (first at {first:?})"
            ));
        }
    }
    drop(runner);
    drop(shm);
    // The exported register trace replays on a fresh model, golden dumps included.
    let traces = nvdla_vp::trace::discover(&dir).map_err(|e| e.to_string())?;
    if traces.len() != 1 {
        return Err(format!("{} traces exported, expected 1", traces.len()));
    }
    let opts = nvdla_vp::trace::Options { log_regs: false };
    match nvdla_vp::trace::run_test(&traces[0], nvdla_vp::HwConfig::new(config.hw()), &opts) {
        Ok(nvdla_vp::trace::Outcome::Pass) => {}
        other => return Err(format!("input.txn does not replay: {other:?}")),
    }
    if !std::fs::read_to_string(dir.join("input.txn"))
        .map_err(|e| e.to_string())?
        .contains("dump_mem")
    {
        return Err("input.txn checks no memory".into());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[test]
fn regression_and_lenet_equal_the_in_process_run() {
    let Some(shared) = shared() else {
        eprintln!("skip: ../shared not found");
        return;
    };
    let mut cases: Vec<(PathBuf, VpConfig, Option<PathBuf>)> = Vec::new();
    let kmd = shared.join("nvdla-sw-regression/flatbufs/kmd");
    for unit in std::fs::read_dir(&kmd).unwrap() {
        for f in std::fs::read_dir(unit.unwrap().path()).unwrap() {
            let p = f.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let config = if name.contains("_small") {
                VpConfig::NvSmall
            } else if name.contains("_large") {
                VpConfig::NvLarge
            } else {
                VpConfig::NvFull
            };
            cases.push((p, config, None));
        }
    }
    let lenet = shared.join("third-party-loadables/lenet-mnist");
    let digit = lenet.join("images/0_7.jpg");
    for (f, config) in [
        ("lenet_nv_full_fp16_nhwc_fast-math.nvdla", VpConfig::NvFull),
        (
            "lenet_nv_full_int8_nhwc_calib_fast-math.nvdla",
            VpConfig::NvFull,
        ),
        (
            "lenet_nv_large_fp16_nhwc_fast-math.nvdla",
            VpConfig::NvLarge,
        ),
        (
            "lenet_nv_small_int8_nchw_calib_fast-math.nvdla",
            VpConfig::NvSmall,
        ),
    ] {
        cases.push((lenet.join(f), config, Some(digit.clone())));
    }
    cases.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(cases.len(), 19, "15 regression + 4 LeNet loadables");
    let mut failures = Vec::new();
    for (p, config, image) in &cases {
        if let Err(e) = run_one(p, *config, image.as_deref()) {
            failures.push(format!("{}: {e}", p.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {}:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
