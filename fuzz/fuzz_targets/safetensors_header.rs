//! Fuzz the safetensors header reader: any bytes must be read or refused, never panic, hang or
//! allocate without bound; what is read must survive classification and summing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vramfit_model::safetensors::quant::quant_summary;
use vramfit_model::safetensors::{logical_params, read_safetensors_header};
use vramfit_model::source::MemSource;

fuzz_target!(|data: &[u8]| {
    let src = MemSource {
        data: data.to_vec(),
        label: "fuzz.safetensors".into(),
    };
    if let Ok(header) = read_safetensors_header(&src) {
        let set = header.to_weight_set();
        let _ = logical_params(&set);
        let _ = quant_summary(&set, None);
        let _ = set.total_bytes();
        let _ = set.total_elems();
        let _ = header.tensor_bytes();
        for t in &header.tensors {
            assert!(header.data_start() + t.data_offsets[1] <= data.len() as u64);
        }
    }
});
