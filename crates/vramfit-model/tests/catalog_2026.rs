//! The 2026 releases of the catalog (Qwen3.5 / Qwen3.6, MiniMax-M2.x, GLM-4.7 / 4.7-Flash / 5,
//! Kimi-K2-Thinking / K2.5): each resolves by its repo id and by every alias, reads through the
//! HF config reader into the layout its config describes, and caches the bytes per token a hand
//! computation from the config gives (numbers below written out from each config.json).

use vramfit_model::catalog::{self, find_model};
use vramfit_model::hf_config::spec_from_config;
use vramfit_model::layout::param_counts;
use vramfit_model::spec::{AttentionKind, ModelSpec, RecurrentKind};

const NEW: &[&str] = &[
    "Qwen/Qwen3.5-27B",
    "Qwen/Qwen3.5-35B-A3B",
    "Qwen/Qwen3.5-122B-A10B",
    "Qwen/Qwen3.5-397B-A17B",
    "Qwen/Qwen3.6-35B-A3B",
    "MiniMaxAI/MiniMax-M2",
    "MiniMaxAI/MiniMax-M2.1",
    "MiniMaxAI/MiniMax-M2.5",
    "MiniMaxAI/MiniMax-M2.7",
    "zai-org/GLM-4.7",
    "zai-org/GLM-4.7-Flash",
    "zai-org/GLM-5",
    "moonshotai/Kimi-K2-Thinking",
    "moonshotai/Kimi-K2.5",
];

fn spec(id: &str) -> ModelSpec {
    let m = find_model(id).unwrap_or_else(|| panic!("{id} not in the catalog"));
    spec_from_config(&m.id, &m.config).unwrap_or_else(|e| panic!("{id}: {e}"))
}

#[test]
fn every_new_entry_resolves_by_id_alias_and_name() {
    for id in NEW {
        let m = find_model(id).unwrap_or_else(|| panic!("{id}"));
        assert_eq!(&m.id, id);
        assert_eq!(find_model(&id.to_lowercase()).unwrap().id, *id);
        // the name alone, as `vllm serve` of a local dir or an Ollama-style name types it
        assert_eq!(find_model(m.name()).unwrap().id, *id, "{id} by name");
        for a in &m.aliases {
            assert_eq!(find_model(a).unwrap().id, *id, "{id} by alias {a}");
        }
        assert!(!m.sources.is_empty(), "{id} names no source");
        assert!(!m.params_official_source.is_empty(), "{id}");
    }
    // GGUF repo spellings reach the base model too
    assert_eq!(
        find_model("unsloth/Qwen3.5-27B-GGUF:Q4_K_M").unwrap().id,
        "Qwen/Qwen3.5-27B"
    );
    // a sibling never stands in for another release
    assert_eq!(
        find_model("Qwen3.6-35B-A3B").unwrap().id,
        "Qwen/Qwen3.6-35B-A3B"
    );
    assert_eq!(
        find_model("MiniMax-M2.1").unwrap().id,
        "MiniMaxAI/MiniMax-M2.1"
    );
}

#[test]
fn parameter_counts_are_the_cards_figures() {
    // (id, lowest, highest total in billions): the card's figure ± its rounding; the vision
    // towers of the Qwen3.5 wrappers are not in the text spec
    for (id, lo, hi) in [
        ("Qwen/Qwen3.5-27B", 25.5, 27.5),
        ("Qwen/Qwen3.5-35B-A3B", 33.5, 35.5),
        ("Qwen/Qwen3.5-122B-A10B", 118.0, 123.0),
        ("Qwen/Qwen3.5-397B-A17B", 390.0, 398.0),
        ("MiniMaxAI/MiniMax-M2.5", 227.0, 230.5),
        ("zai-org/GLM-4.7", 350.0, 360.0),
        ("zai-org/GLM-4.7-Flash", 29.0, 31.5),
        ("zai-org/GLM-5", 735.0, 755.0),
        ("moonshotai/Kimi-K2.5", 1000.0, 1045.0),
    ] {
        let (total, _) = param_counts(&spec(id));
        let b = total as f64 / 1e9;
        assert!((lo..=hi).contains(&b), "{id}: {b:.2}B not in {lo}..{hi}");
    }
    // MiniMax-M2.5's safetensors total (HF API, quoted in code-index id 4289690615) is
    // 228,703,644,928 including the checkpoint's FP8 scale tensors; the weights alone within 0.2 %
    let (total, active) = param_counts(&spec("MiniMaxAI/MiniMax-M2.5"));
    let rel = (total as f64 - 228_703_644_928.0).abs() / 228_703_644_928.0;
    assert!(rel < 0.002, "MiniMax-M2.5 {total} ({rel:.4})");
    assert!((9.5e9..11.5e9).contains(&(active as f64)), "{active}");
}

#[test]
fn qwen3_5_is_the_gated_deltanet_hybrid_of_its_config() {
    // Qwen3.5-27B: 64 layers, every 4th full attention (24 heads, 4 KV heads of 256); the other
    // 48 are Gated DeltaNet with 16 key and 48 value heads of 128, conv kernel 4
    let s = spec("Qwen/Qwen3.5-27B");
    assert_eq!(s.model_type, "qwen3_5_text");
    assert_eq!(s.n_layer(), 64);
    let full: Vec<usize> = (0..64)
        .filter(|&i| s.layers[i].attention == AttentionKind::Full)
        .collect();
    assert_eq!(full, (0..16).map(|k| 4 * k + 3).collect::<Vec<_>>());
    // K and V of 4 heads x 256, 2 bytes each, in 16 layers
    assert_eq!(s.kv_bytes_per_token(2.0), 16 * 2 * 4 * 256 * 2);
    let gdn = s
        .layers
        .iter()
        .filter_map(|l| match &l.attention {
            AttentionKind::Recurrent(r) => Some(r),
            _ => None,
        })
        .collect::<Vec<_>>();
    assert_eq!(gdn.len(), 48);
    assert!(gdn.iter().all(|r| r.kind == RecurrentKind::GatedDeltaNet));
    // conv: (4 - 1) x (2 x 16 x 128 + 48 x 128); state: 48 x 128 x 128 per layer
    assert_eq!(
        s.recurrent_state_elems(),
        (48 * 3 * (2 * 16 * 128 + 48 * 128), 48 * 48 * 128 * 128)
    );
    assert_eq!(s.n_nextn_layers, 1, "one MTP layer in the checkpoint");
    assert!(s.vision_params > 300_000_000, "{}", s.vision_params);

    // the MoE sizes: 10 / 12 / 15 full-attention layers of 2 KV heads x 256
    for (id, full_layers, experts, used) in [
        ("Qwen/Qwen3.5-35B-A3B", 10u64, 256u64, 8u64),
        ("Qwen/Qwen3.6-35B-A3B", 10, 256, 8),
        ("Qwen/Qwen3.5-122B-A10B", 12, 256, 8),
        ("Qwen/Qwen3.5-397B-A17B", 15, 512, 10),
    ] {
        let s = spec(id);
        assert_eq!(
            s.kv_bytes_per_token(2.0),
            full_layers * 2 * 2 * 256 * 2,
            "{id}"
        );
        let m = s.moe.as_ref().unwrap();
        assert_eq!(
            (m.n_expert, m.n_expert_used, m.n_expert_shared),
            (experts, used, 1)
        );
        assert_eq!(
            m.n_ff_shexp, m.n_ff_exp,
            "{id}: one shared expert as wide as a routed one"
        );
    }
}

#[test]
fn minimax_glm_and_kimi_cache_what_their_attention_keeps() {
    // MiniMax-M2.x: 62 full GQA layers, K and V of 8 heads x 128
    for id in [
        "MiniMaxAI/MiniMax-M2",
        "MiniMaxAI/MiniMax-M2.1",
        "MiniMaxAI/MiniMax-M2.5",
        "MiniMaxAI/MiniMax-M2.7",
    ] {
        let s = spec(id);
        assert_eq!(s.kv_bytes_per_token(2.0), 62 * 2 * 8 * 128 * 2, "{id}");
        let q = s.quant.as_ref().expect("FP8 checkpoint");
        assert_eq!((q.method.as_str(), q.bits), ("fp8", Some(8)));
        assert!(s.arch.qk_norm && s.arch.expert_bias);
    }
    // GLM-4.7: GLM-4.6's 92 GQA layers of 8 KV heads x 128
    assert_eq!(
        spec("zai-org/GLM-4.7").kv_bytes_per_token(2.0),
        92 * 2 * 8 * 128 * 2
    );
    // MLA caches the kv_lora_rank latent plus the rope key per layer: 512 + 64 values
    for (id, layers) in [
        ("zai-org/GLM-4.7-Flash", 47u64),
        ("zai-org/GLM-5", 78),
        ("moonshotai/Kimi-K2-Thinking", 61),
        ("moonshotai/Kimi-K2.5", 61),
    ] {
        let s = spec(id);
        assert!(
            s.layers
                .iter()
                .all(|l| matches!(l.attention, AttentionKind::Mla { .. })),
            "{id}"
        );
        let AttentionKind::Mla {
            kv_lora_rank,
            rope_dim,
            ..
        } = s.layers[0].attention
        else {
            unreachable!()
        };
        assert_eq!((kv_lora_rank, rope_dim), (512, 64), "{id}");
        assert_eq!(s.n_layer(), layers, "{id}");
    }
    // Kimi's routed experts are INT4 (group 32); attention and shared experts stay BF16
    for id in ["moonshotai/Kimi-K2-Thinking", "moonshotai/Kimi-K2.5"] {
        let q = spec(id).quant.unwrap();
        assert_eq!(q.method, "compressed-tensors", "{id}");
        assert_eq!((q.bits, q.group_size), (Some(4), Some(32)), "{id}");
        assert!(q.ignore.iter().any(|p| p.contains("self_attn")), "{id}");
    }
}

#[test]
fn new_entries_keep_the_catalog_rules() {
    // an id is never another entry's alias, and every alias is unique across the catalog
    let all = catalog::models();
    for id in NEW {
        let m = all.iter().find(|m| &m.id == id).unwrap();
        for a in &m.aliases {
            let owners = all
                .iter()
                .filter(|o| o.id.eq_ignore_ascii_case(a) || o.aliases.iter().any(|x| x == a))
                .count();
            assert_eq!(owners, 1, "alias {a} of {id}");
        }
    }
}
