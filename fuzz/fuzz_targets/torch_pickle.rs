//! Fuzz the PyTorch snapshot pickle reader and the analysis on top of it: no panic, no hang,
//! memory bounded by the input (every object costs at least one input byte).
#![no_main]

use libfuzzer_sys::fuzz_target;
use vramfit_doctor::snapshot::{analyze_bytes, pickle, svg, timeline};

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = pickle::read(data) {
        assert!(p.objects() <= data.len() + 16, "more objects than input bytes");
    }
    if let Ok(a) = analyze_bytes(data) {
        let _ = serde_json::to_string(&a.report);
        let _ = svg::render(&timeline::timelines(&a.snapshot), "fuzz");
    }
});
