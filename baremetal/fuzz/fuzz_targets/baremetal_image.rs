//! A bare-metal image as the runner finds it in memory: header, task table, address lists,
//! then every task run: DLA tasks through the firmware (descriptors read from the image)
//! against registers that never complete (the clock jumps a second per reading, so each
//! task times out at once), CPU tasks through the EMU on the image's own bytes. Any input
//! must end in `Ok` or an error, never a panic or an access outside the image.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvdla_baremetal::{DmaRegion, Platform, Registers, Runner};
use nvdla_firmware::HwError;

const BASE: u64 = 0x4800_0000;

/// Registers that read as zero: no interrupt ever comes.
struct Quiet;

impl Registers for Quiet {
    fn read(&self, offset: u32) -> Result<u32, HwError> {
        if offset >= 0x4_0000 {
            return Err(HwError::NoSuchRegister { offset });
        }
        Ok(0)
    }
    fn write(&self, offset: u32, _value: u32) -> Result<(), HwError> {
        if offset >= 0x4_0000 {
            return Err(HwError::NoSuchRegister { offset });
        }
        Ok(())
    }
}

/// A clock a second ahead at every reading.
struct Jumpy(u64);

impl embedded_hal::delay::DelayNs for Jumpy {
    fn delay_ns(&mut self, _ns: u32) {}
}

impl Platform for Jumpy {
    fn now_us(&mut self) -> u64 {
        self.0 += 1_000_000;
        self.0
    }
}

fuzz_target!(|data: &[u8]| {
    let mut image = data.to_vec();
    // The header's base must say where the image is: patch it in so that the fuzzer
    // reaches the tables.
    if image.len() >= 24 {
        image[16..24].copy_from_slice(&BASE.to_le_bytes());
    }
    // SAFETY: `image` outlives the runner and nothing else refers to it meanwhile.
    let mem = unsafe { DmaRegion::new(BASE, image.as_mut_ptr(), image.len()) };
    let Ok(mut runner) = Runner::<_, _, 64>::new(Quiet, mem, Jumpy(0)) else {
        return;
    };
    let _ = runner.run(|_, _| {});
    for i in 0..runner.header().output_count.min(8) {
        if let Ok(t) = runner.output(i) {
            let mut b = vec![0u8; (t.size as usize).min(1 << 16)];
            runner.memory().read(t.addr, &mut b).expect("a checked output reads");
        }
    }
});
