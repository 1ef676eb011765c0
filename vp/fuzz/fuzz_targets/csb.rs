//! Arbitrary register programming: the model must turn any sequence of CSB writes, reads
//! and interrupt polls into register state, memory writes, done interrupts or a fault,
//! never a panic or a runaway computation. DRAM is a 16 MiB window (filled with a pattern
//! at its start) so that large DMAs must be refused, not computed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvdla_vp::mem::{RamType, Window};
use nvdla_vp::{HwConfig, Vp};

const DRAM: u64 = 0x8000_0000;

fuzz_target!(|data: &[u8]| {
    let Some((&which, ops)) = data.split_first() else {
        return;
    };
    // Every published build.
    let builds = nvdla_vp::nvdla_hw::ALL;
    let cfg = HwConfig::new(&builds[usize::from(which) % builds.len()]);
    let mut vp = Vp::new(cfg);
    vp.mem.set_dram_window(Window {
        base: DRAM,
        size: 16 << 20,
    });
    let pattern: Vec<u8> = (0..64 * 1024u32).map(|i| (i * 37 >> 3) as u8).collect();
    vp.mem.write(RamType::Dram, DRAM, &pattern).unwrap();
    // Each operation: kind (1 byte), word address (2 bytes), value (4 bytes).
    for op in ops.chunks_exact(7) {
        let addr = u32::from(u16::from_le_bytes([op[1], op[2]])) << 2;
        let value = u32::from_le_bytes([op[3], op[4], op[5], op[6]]);
        match op[0] % 8 {
            0..=5 => vp.csb_write(addr, value),
            6 => {
                let _ = vp.csb_read(addr);
            }
            _ => {
                let _ = vp.irq_pending();
            }
        }
    }
    vp.run_pending();
});
