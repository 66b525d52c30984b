//! Mutated safetensors headers never panic: every input is either read or refused with an error.

use proptest::prelude::*;
use vramfit_model::safetensors::{logical_params, read_safetensors_header};
use vramfit_model::source::MemSource;

fn valid_file() -> Vec<u8> {
    let json = br#"{"__metadata__":{"format":"pt"},"w.qweight":{"dtype":"I32","shape":[4,2],"data_offsets":[0,32]},"w.scales":{"dtype":"F16","shape":[1,16],"data_offsets":[32,64]},"x_blocks":{"dtype":"U8","shape":[2,1,16],"data_offsets":[64,96]},"x_scales":{"dtype":"U8","shape":[2,1],"data_offsets":[96,98]}}"#;
    let mut v = (json.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(json);
    v.resize(v.len() + 98, 0);
    v
}

fn read(data: Vec<u8>) {
    if let Ok(h) = read_safetensors_header(&MemSource {
        data,
        label: "fuzz".into(),
    }) {
        let set = h.to_weight_set();
        let _ = logical_params(&set);
        let _ = set.total_bytes();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn byte_mutations_never_panic(edits in prop::collection::vec((any::<usize>(), any::<u8>()), 1..12)) {
        let mut data = valid_file();
        for (at, b) in edits {
            let i = at % data.len();
            data[i] = b;
        }
        read(data);
    }

    #[test]
    fn truncations_never_panic(cut in 0usize..400) {
        let mut data = valid_file();
        data.truncate(cut.min(data.len()));
        read(data);
    }

    #[test]
    fn json_numbers_replaced_never_panic(n in any::<u64>(), which in 0usize..20) {
        // replace the which-th number of the JSON (shapes, offsets) by n
        let file = valid_file();
        let header_end = 8 + u64::from_le_bytes(file[..8].try_into().unwrap()) as usize;
        let json = std::str::from_utf8(&file[8..header_end]).unwrap();
        let mut out = String::new();
        let mut run = 0usize;
        let mut in_digits = false;
        for c in json.chars() {
            if c.is_ascii_digit() {
                if !in_digits {
                    in_digits = true;
                    if run == which {
                        out.push_str(&n.to_string());
                    }
                    run += 1;
                }
                if run - 1 != which {
                    out.push(c);
                }
            } else {
                in_digits = false;
                out.push(c);
            }
        }
        let mut data = (out.len() as u64).to_le_bytes().to_vec();
        data.extend_from_slice(out.as_bytes());
        data.resize(data.len() + 98, 0);
        read(data);
    }

    #[test]
    fn arbitrary_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..256)) {
        read(data);
    }
}
