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
        let spec = LoadableSpec::from_loadable(&l);
        let rebuilt = spec.build();
        let again = Loadable::parse(&rebuilt).expect("builder output must parse");
        assert_eq!(LoadableSpec::from_loadable(&again), spec);
    }
});
