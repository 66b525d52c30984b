//! SGLang's hybrid pool for Llama 4 (src/sglang/swa.rs): the chunked-attention layers are
//! SGLang's sliding-window kind (model_config.py `get_hybrid_layer_ids`), against figures
//! derived by hand from Llama-4-Scout's config.json.

use vramfit_engine::cmdline::Command;
use vramfit_engine::hardware::{Gpu, Hardware};
use vramfit_engine::sglang::{self, SglangConfig};
use vramfit_engine::MemoryPlan;
use vramfit_model::catalog::{find_gpu, find_model};
use vramfit_model::hf_config::spec_from_config;

fn plan(line: &str, gpus: usize, version: Option<&str>) -> MemoryPlan {
    let mut c: SglangConfig = sglang::parse(&Command::parse(&[line]).unwrap()).unwrap();
    c.version = version.map(|v| vramfit_engine::vllm::Version::parse(v).unwrap());
    let m = find_model(&c.model).unwrap();
    let spec = spec_from_config(&m.id, &m.config).unwrap();
    let hw = Hardware {
        gpus: vec![Gpu::from_catalog(find_gpu("H100").unwrap()); gpus],
        host_ram_bytes: None,
    };
    sglang::plan(&spec, None, &c, &hw)
}

const SCOUT: &str = "python -m sglang.launch_server --model-path meta-llama/Llama-4-Scout-17B-16E-Instruct --tp 8 --context-length 131072";

#[test]
fn llama_4_chunked_layers_get_the_sliding_window_pool() {
    let off = plan(&format!("{SCOUT} --disable-hybrid-swa-memory"), 8, None);
    let on = plan(SCOUT, 8, None);
    // by hand from config.json: 48 layers of 8 KV heads × (128 + 128) × 2 B = 4 KiB each; every
    // fourth layer (12) full attention: 48 KiB, the 36 chunked layers (attention_chunk_size
    // 8192): 144 KiB; 192 KiB a token in every layer
    // (24 KiB on each of 8 ranks: one KV head each)
    assert_eq!(off.kv_cache.bytes_per_token, 24 * 1024);
    // the hybrid pool: 48 + 0.8 × 144 = 163.2 KiB per token of the full-layer pool, 0.85 × 192
    let r = on.kv_cache.bytes_per_token as f64 / off.kv_cache.bytes_per_token as f64;
    assert!((r - 0.85).abs() < 1e-4, "{r}");
    let expect = off.kv_cache.tokens as f64 * 192.0 / 163.2;
    let got = on.kv_cache.tokens as f64;
    assert!((got / expect - 1.0).abs() < 0.001, "{got} vs {expect}");
    assert!(on.kv_cache.bytes <= off.kv_cache.bytes);
    assert!(on
        .notes
        .iter()
        .any(|n| n.contains("hybrid sliding-window pool")));
    // before the hybrid pool (v0.4.9), every layer held every token
    let old = plan(SCOUT, 8, Some("0.4.8"));
    assert_eq!(old.kv_cache.bytes_per_token, off.kv_cache.bytes_per_token);
    assert!(old.notes.iter().any(|n| n.contains("hybrid-kvcache-ratio")));
}
