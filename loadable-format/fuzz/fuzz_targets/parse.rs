//! Fuzz `Loadable::parse`, then everything that reads a parsed loadable:
//! the inspector (which decodes every DLA1/EMU1 descriptor it can reach),
//! the data-cube check and the builder round trip. The raw input is also fed to every
//! descriptor decoder directly, in both layouts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvdla_loadable::{builder::LoadableSpec, dla, emu, inspect, Loadable};

fn decoders(data: &[u8]) {
    for &ty in dla::OpType::ALL.iter() {
        let _ = dla::OpDesc::decode_slot(ty, data, 0);
        for layout in [dla::Layout::Legacy, dla::Layout::Current] {
            let _ = dla::SurfaceDesc::decode_slot_layout(layout, ty, data, 1);
        }
    }
    let _ = dla::decode_at::<dla::CommonOpDesc>(data, 2);
    let _ = dla::decode_at::<dla::LutParam>(data, 0);
    for layout in [emu::Layout::Legacy, emu::Layout::Current] {
        if let Ok(op) = emu::OpDesc::decode_slot_layout(layout, data, 0) {
            let _ = emu::OpBufferDescs::decode_slot_layout(layout, op.op_type(), data, 0);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    decoders(data);
    if let Ok(l) = Loadable::parse(data) {
        let summary = inspect::summarize(&l);
        let _ = inspect::render_text(&summary);
        let _ = nvdla_loadable::cubes::check(&l);
        let mut spec = LoadableSpec::from_loadable(&l);
        let rebuilt = spec.build();
        let again = Loadable::parse(&rebuilt).expect("builder output must parse");
        // The builder writes blobs sorted by name (a stable sort).
        spec.blobs.sort_by(|a, b| a.name.cmp(&b.name));
        assert!(
            LoadableSpec::from_loadable(&again) == spec,
            "rebuild round trip differs"
        );
    }
});
