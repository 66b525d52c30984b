//! Fuzz the GGUF header reader: any byte string must give a header or a one-line error, never a
//! panic, a hang or an allocation out of proportion to the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vramfit_model::gguf::{read_gguf, read_gguf_with, ReadOptions};
use vramfit_model::source::MemSource;

fuzz_target!(|data: &[u8]| {
    let src = MemSource {
        data: data.to_vec(),
        label: "fuzz.gguf".into(),
    };
    if let Ok(file) = read_gguf(&src) {
        // everything derived from a header that parsed must be computable too
        let _ = file.weight_set().total_bytes();
        let _ = file.arch();
        for t in &file.tensors {
            assert!(file.data_offset + t.offset + t.bytes <= data.len() as u64);
        }
    }
    if data.first().is_some_and(|b| b & 1 == 1) {
        let _ = read_gguf_with(
            &src,
            ReadOptions {
                keep_large_arrays: true,
            },
        );
    }
});
