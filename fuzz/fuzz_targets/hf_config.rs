//! config.json parsing: arbitrary JSON (or bytes) into spec_from_config, then the derived facts
//! every command computes from a spec. None of it may panic, hang or allocate without bound.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    if let Ok(spec) = vramfit_model::hf_config::spec_from_config("fuzz/model", &v) {
        let _ = spec.kv_bytes_per_token(2.0);
        let _ = spec.kv_bytes_windowed(2.0);
        let _ = spec.recurrent_state_elems();
        let _ = spec.attention_words();
        let _ = vramfit_model::layout::param_counts(&spec);
    }
});
