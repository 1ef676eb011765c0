//! Fuzz `Loadable::parse`, then everything that reads a parsed loadable:
//! the inspector (which decodes every DLA1/EMU1 descriptor it can reach)
//! and the builder round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvdla_loadable::{builder::LoadableSpec, inspect, Loadable};

fuzz_target!(|data: &[u8]| {
    if let Ok(l) = Loadable::parse(data) {
        let summary = inspect::summarize(&l);
        let _ = inspect::render_text(&summary);
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
