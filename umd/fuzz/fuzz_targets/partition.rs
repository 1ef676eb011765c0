//! CPU partition descriptors (`nvdla-compiler --cpu-fallback`): decode; a decoded
//! descriptor must encode back to bytes that decode to the same descriptor, and running
//! it against memory taken from the input may fail but must not panic (tract loads the
//! model bytes, which come from the input too).
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvdla_umd::emu::SlotMemory;
use nvdla_umd::partition::PartitionDesc;

/// Two slots of memory from the input.
struct Mem(Vec<Vec<u8>>);

impl SlotMemory for Mem {
    fn slot_count(&self) -> usize {
        self.0.len()
    }
    fn slot(&mut self, slot: usize) -> Option<&mut [u8]> {
        self.0.get_mut(slot).map(|v| v.as_mut_slice())
    }
}

static QUIET: std::sync::Once = std::sync::Once::new();

fuzz_target!(|data: &[u8]| {
    // libfuzzer-sys's panic hook aborts at once, before `partition::run` can catch a panic
    // inside tract (damaged model bytes reach panics there, e.g. in its padding code); the
    // runtime turns those into errors. A panic anywhere else still unwinds to
    // libfuzzer-sys's own `catch_unwind`, which reports it as a crash.
    QUIET.call_once(|| std::panic::set_hook(Box::new(|_| {})));
    let Ok(d) = PartitionDesc::decode(data) else { return };
    let again = PartitionDesc::decode(&d.encode()).expect("an encoded descriptor decodes");
    assert_eq!(again, d);
    let mut mem = Mem(vec![data.to_vec(), vec![0; 4096]]);
    let _ = nvdla_umd::partition::run(&d, &mut mem);
});
