//! A Gemma 4 GGUF written by gguf-py's `GGUFWriter` with the keys llama.cpp's gemma4 loader reads
//! (src/models/gemma4.cpp `load_arch_hparams`: per-layer head_count_kv, key_length for the full
//! layers and key_length_swa for the sliding ones, a per-layer sliding_window_pattern,
//! shared_kv_layers, embedding_length_per_layer_input, per-layer feed_forward_length), read back
//! into the same layout as the config.json path. The shape is E2B's, cut to 10 layers.
//!
//! Needs `python3` with `pip install gguf numpy`; skips with a message otherwise (set
//! VRAMFIT_REQUIRE_GGUF_PY=1 to make a missing gguf-py a failure).

use std::path::Path;
use std::process::Command;
use vramfit_model::gguf::read_gguf;
use vramfit_model::resolve::spec_from_gguf;
use vramfit_model::source::FileSource;
use vramfit_model::{AttentionKind, FfnKind};

const SCRIPT: &str = r#"
import sys, numpy as np, gguf
w = gguf.GGUFWriter(sys.argv[1], "gemma4")
n = 10
swa = [(i + 1) % 5 != 0 for i in range(n)]          # 4 sliding + 1 full, twice
w.add_block_count(n)
w.add_context_length(131072)
w.add_embedding_length(1536)
w.add_feed_forward_length([6144] * 6 + [12288] * 4)  # double-wide MLP in the 4 shared layers
w.add_head_count(8)
w.add_head_count_kv([1] * n)
w.add_key_length(512)
w.add_value_length(512)
w.add_uint32("gemma4.attention.key_length_swa", 256)
w.add_uint32("gemma4.attention.value_length_swa", 256)
w.add_sliding_window(512)
w.add_array("gemma4.attention.sliding_window_pattern", swa)
w.add_uint32("gemma4.attention.shared_kv_layers", 4)
w.add_uint32("gemma4.embedding_length_per_layer_input", 256)
w.add_vocab_size(262144)
w.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float16))
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
"#;

#[test]
fn a_gemma4_gguf_reads_per_layer_widths_and_shared_layers() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gemma4-gguf");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("gemma4-e2b-cut.gguf");
    let require = std::env::var("VRAMFIT_REQUIRE_GGUF_PY").is_ok_and(|v| v == "1");
    let out = Command::new("python3")
        .arg("-c")
        .arg(SCRIPT)
        .arg(&path)
        .output();
    match out {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(!require, "gguf-py failed: {err}");
            eprintln!("SKIP: gguf-py could not write the fixture: {err}");
            return;
        }
        Err(e) => {
            assert!(!require, "python3 not runnable: {e}");
            eprintln!("SKIP: python3 not runnable ({e})");
            return;
        }
    }
    let g = read_gguf(&FileSource::open(&path).unwrap()).unwrap();
    let s = spec_from_gguf("gemma4-e2b-cut", &g).unwrap();
    assert_eq!(s.model_type, "gemma4_text");
    assert_eq!(s.n_layer(), 10);
    let full: Vec<usize> = (0..10)
        .filter(|&i| s.layers[i].attention == AttentionKind::Full)
        .collect();
    assert_eq!(full, vec![4, 9]);
    assert_eq!(
        s.layers[0].attention,
        AttentionKind::SlidingWindow { window: 512 }
    );
    assert_eq!((s.layers[0].head_dim_k, s.layers[4].head_dim_k), (256, 512));
    assert!(s.layers[6..].iter().all(|l| l.kv_shared));
    assert!(s.layers[..6].iter().all(|l| !l.kv_shared));
    assert_eq!(s.layers[9].ffn, FfnKind::Dense { n_ff: 12288 });
    assert_eq!(s.arch.per_layer_embd, 256);
    // only layer 4 of the two full layers keeps a cache: 1 head x 512 x (K + V) x 2 bytes
    assert_eq!(s.kv_bytes_per_token(2.0), 2048);
    // unshared sliding layers 0-3 and 5: 5 x 256 x 2 x 2 bytes x 512 tokens
    assert_eq!(s.kv_bytes_windowed(2.0), 5 * 256 * 2 * 2 * 512);
}
