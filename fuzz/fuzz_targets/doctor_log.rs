//! Fuzz the doctor's log reader and classifier: any bytes, read through the capped reader the
//! CLI uses, must diagnose without panicking, and the JSON and human renderings must work.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(log) = vramfit_doctor::input::read_log_capped(&mut &data[..], "fuzz", 1 << 20) else {
        return;
    };
    let d = vramfit_doctor::diagnose(&log.text);
    assert!((0.0..=1.0).contains(&d.confidence));
    let _ = serde_json::to_string(&vramfit_doctor::render::json(&d)).expect("JSON renders");
    let _ = vramfit_doctor::render::human(&d);
});
