//! Gemma 4 from its real configs (the catalog entries, whose sources are named in
//! catalog/models.json): per-layer widths, KV-shared layers, the cache per token worked out by
//! hand below, and the weights against the safetensors the Hugging Face repos hold.

use vramfit_model::catalog;
use vramfit_model::hf_config::spec_from_config;
use vramfit_model::layout::{param_counts, synthesize};
use vramfit_model::{AttentionKind, FfnKind, GgmlType, ModelSpec};

fn spec(id: &str) -> ModelSpec {
    let m = catalog::find_model(id).unwrap_or_else(|| panic!("{id} not in the catalog"));
    spec_from_config(&m.id, &m.config).unwrap()
}

/// (full layers, sliding layers, KV-shared layers)
fn counts(s: &ModelSpec) -> (usize, usize, usize) {
    let full = s
        .layers
        .iter()
        .filter(|l| l.attention == AttentionKind::Full)
        .count();
    let sliding = s
        .layers
        .iter()
        .filter(|l| matches!(l.attention, AttentionKind::SlidingWindow { .. }))
        .count();
    let shared = s.layers.iter().filter(|l| l.kv_shared).count();
    (full, sliding, shared)
}

/// Bytes of the HF repo's safetensors (KAITO model_catalog.yaml `modelFileSize`, GiB).
fn gib(x: f64) -> f64 {
    x * (1u64 << 30) as f64
}

/// All parameters of the checkpoint: the text model plus the vision/audio towers.
fn checkpoint_params(s: &ModelSpec) -> f64 {
    (param_counts(s).0 + s.vision_params) as f64
}

#[test]
fn gemma_4_31b_layers_and_cache() {
    let s = spec("google/gemma-4-31B-it");
    assert_eq!(s.model_type, "gemma4_text");
    assert_eq!(counts(&s), (10, 50, 0));
    let full = s.layers.iter().find(|l| l.attention == AttentionKind::Full);
    let full = full.unwrap();
    // full layers: num_global_key_value_heads 4 (attention_k_eq_v) of global_head_dim 512
    assert_eq!(
        (full.n_head_kv, full.head_dim_k, full.head_dim_v),
        (4, 512, 512)
    );
    let swa = &s.layers[0];
    assert_eq!((swa.n_head_kv, swa.head_dim_k), (16, 256));
    assert_eq!(swa.attention, AttentionKind::SlidingWindow { window: 1024 });
    // per token, bf16: 10 full layers x 4 heads x 512 x (K + V) x 2 bytes = 81,920
    assert_eq!(s.kv_bytes_per_token(2.0), 81_920);
    // sliding layers at their window: 50 x 16 x 256 x 2 x 2 bytes x 1024 tokens = 800 MiB
    assert_eq!(s.kv_bytes_windowed(2.0), 838_860_800);
    assert!(s.arch.v_from_k && s.arch.per_layer_embd == 0);
}

#[test]
fn gemma_4_26b_a4b_runs_an_mlp_beside_the_experts() {
    let s = spec("google/gemma-4-26B-A4B-it");
    assert_eq!(counts(&s), (5, 25, 0));
    assert!(s.layers.iter().all(|l| l.ffn == FfnKind::Moe));
    let m = s.moe.as_ref().unwrap();
    assert_eq!(
        (m.n_expert, m.n_expert_used, m.n_ff_exp, m.n_ff_shexp),
        (128, 8, 704, 2112)
    );
    // 5 full layers x 2 heads x 512 x 2 x 2 bytes = 20,480 per token
    assert_eq!(s.kv_bytes_per_token(2.0), 20_480);
    // 25 sliding x 8 x 256 x 2 x 2 bytes x 1024 = 200 MiB
    assert_eq!(s.kv_bytes_windowed(2.0), 209_715_200);
    // the card: 25.2B total, 3.8B active
    let (total, active) = param_counts(&s);
    assert!((total as f64 / 25.2e9 - 1.0).abs() < 0.01, "{total}");
    assert!((active as f64 / 3.8e9 - 1.0).abs() < 0.03, "{active}");
}

#[test]
fn gemma_4_e4b_shares_the_cache_of_its_last_18_layers() {
    let s = spec("google/gemma-4-E4B-it");
    assert_eq!(counts(&s), (7, 35, 18));
    assert!(s.layers[..24].iter().all(|l| !l.kv_shared));
    assert!(s.layers[24..].iter().all(|l| l.kv_shared));
    // no double-wide MLP on E4B
    assert!(s
        .layers
        .iter()
        .all(|l| l.ffn == FfnKind::Dense { n_ff: 10240 }));
    // full layers 5, 11, 17, 23 keep a cache (29, 35, 41 are shared): 4 x 2 heads x 512 x 2 x
    // 2 bytes = 16,384 per token
    assert_eq!(s.kv_bytes_per_token(2.0), 16_384);
    // 20 unshared sliding layers x 2 x 256 x 2 x 2 bytes x 512 = 20 MiB
    assert_eq!(s.kv_bytes_windowed(2.0), 20_971_520);
    assert_eq!(s.arch.per_layer_embd, 256);
    assert!(!s.arch.v_from_k);
}

#[test]
fn gemma_4_e2b_doubles_the_mlp_of_its_shared_layers() {
    let s = spec("google/gemma-4-E2B-it");
    assert_eq!(counts(&s), (7, 28, 20));
    assert_eq!(s.layers[14].ffn, FfnKind::Dense { n_ff: 6144 });
    assert_eq!(s.layers[15].ffn, FfnKind::Dense { n_ff: 12288 });
    // full layers 4, 9, 14 keep a cache: 3 x 1 head x 512 x 2 x 2 bytes = 6,144 per token
    assert_eq!(s.kv_bytes_per_token(2.0), 6_144);
    // 12 unshared sliding layers x 1 x 256 x 2 x 2 bytes x 512 = 6 MiB
    assert_eq!(s.kv_bytes_windowed(2.0), 6_291_456);
}

#[test]
fn weights_match_the_safetensors_of_the_hub_repos() {
    // modelFileSize of each google/gemma-4-*-it repo (KAITO model_catalog.yaml @056b8280b1a8),
    // BF16 = 2 bytes a parameter
    for (id, file_gib) in [
        ("google/gemma-4-31B-it", 58.25),
        ("google/gemma-4-26B-A4B-it", 48.07),
        ("google/gemma-4-E4B-it", 14.89),
        ("google/gemma-4-E2B-it", 9.54),
    ] {
        let s = spec(id);
        let ours = checkpoint_params(&s) * 2.0;
        let rel = ours / gib(file_gib) - 1.0;
        assert!(
            rel.abs() < 0.02,
            "{id}: {ours:.3e} bytes vs {file_gib} GiB ({rel:+.4})"
        );
    }
}

#[test]
fn the_gguf_layout_follows_llama_cpp_gemma4() {
    let s = spec("google/gemma-4-31B-it");
    let w = synthesize(&s, GgmlType::BF16);
    // attention_k_eq_v: no attn_v on the 10 full layers (src/models/gemma4.cpp: optional wv)
    let attn_v = w
        .tensors
        .iter()
        .filter(|t| t.name.ends_with("attn_v.weight"))
        .count();
    assert_eq!(attn_v, 50);
    let q5 = w.get("blk.5.attn_q.weight").unwrap();
    assert_eq!(q5.dims, vec![5376, 32 * 512]);
    let k5 = w.get("blk.5.attn_k.weight").unwrap();
    assert_eq!(k5.dims, vec![5376, 4 * 512]);
    assert_eq!(
        w.get("blk.5.attn_output.weight").unwrap().dims,
        vec![32 * 512, 5376]
    );
    assert!(w.get("output.weight").is_none(), "tied embeddings");

    let e2b = synthesize(&spec("google/gemma-4-E2B-it"), GgmlType::BF16);
    // per-layer embeddings: 262144 tokens x (35 layers x 256)
    let ple = e2b.get("per_layer_token_embd.weight").unwrap();
    assert_eq!(ple.dims, vec![35 * 256, 262_144]);
    assert_eq!(
        e2b.get("blk.20.ffn_up.weight").unwrap().dims,
        vec![1536, 12288]
    );

    let moe = synthesize(&spec("google/gemma-4-26B-A4B-it"), GgmlType::BF16);
    assert_eq!(
        moe.get("blk.0.ffn_gate_up_exps.weight").unwrap().dims,
        vec![2816, 1408, 128]
    );
    assert_eq!(
        moe.get("blk.0.ffn_gate.weight").unwrap().dims,
        vec![2816, 2112]
    );
}

#[test]
fn a_text_only_gemma4_config_reads_the_same_layers() {
    // Gemma4ForCausalLM checkpoints carry the text config at the top level
    let m = catalog::find_model("google/gemma-4-E4B-it").unwrap();
    let mut text = m.config["text_config"].clone();
    text["architectures"] = serde_json::json!(["Gemma4ForCausalLM"]);
    let s = spec_from_config("text-only", &text).unwrap();
    assert_eq!(counts(&s), (7, 35, 18));
    assert_eq!(s.kv_bytes_per_token(2.0), 16_384);
    assert_eq!(s.vision_params, 0);
}

#[test]
fn gemma_4_12b_matches_the_measured_llama_cpp_cache_geometry() {
    // the dev laptop sweep's KV buffers: 8 global layers x (512 K + 512 V) and 40 SWA layers x
    // (2048 K + 2048 V) elements per cell
    let s = spec("google/gemma-4-12B-it");
    assert_eq!(counts(&s), (8, 40, 0));
    let full = s
        .layers
        .iter()
        .find(|l| l.attention == AttentionKind::Full)
        .unwrap();
    assert_eq!((full.n_embd_k_gqa(), full.n_embd_v_gqa()), (512, 512));
    assert_eq!(
        (s.layers[0].n_embd_k_gqa(), s.layers[0].n_embd_v_gqa()),
        (2048, 2048)
    );
    // 8 x 1024 x 2 bytes = 16 KiB per token
    assert_eq!(s.kv_bytes_per_token(2.0), 16_384);
    let rel = (param_counts(&s).0 as f64 * 2.0) / gib(22.28) - 1.0;
    assert!(rel.abs() < 0.01, "{rel:+.4}");
}
