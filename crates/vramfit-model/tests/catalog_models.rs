//! The embedded model catalog: it parses, its configs are internally consistent, and every name
//! people use for a model (repo id, alias, GGUF repo, Ollama tag) finds it.

use serde_json::Value;
use vramfit_model::catalog::{self, find_model, CatalogModel};

fn text(m: &CatalogModel) -> &Value {
    m.config.get("text_config").unwrap_or(&m.config)
}

fn u(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

#[test]
fn embedded_models_parse_and_cover_the_families() {
    let models = catalog::models();
    assert!(models.len() >= 80, "only {} models", models.len());
    for family in [
        "llama",
        "llama4",
        "mistral",
        "mixtral",
        "qwen2",
        "qwen2_moe",
        "qwen3",
        "qwen3_moe",
        "qwen3_next",
        "gemma",
        "gemma2",
        "gemma3",
        "gemma3_text",
        "phi3",
        "phimoe",
        "deepseek_v2",
        "deepseek_v3",
        "gpt_oss",
        "cohere",
        "cohere2",
        "falcon",
        "falcon_h1",
        "chatglm",
        "glm4",
        "glm4_moe",
        "jamba",
        "nemotron_h",
        "granite",
        "granitemoe",
        "gpt_neox",
        "mistral3",
    ] {
        assert!(
            models.iter().any(|m| m.model_type() == family),
            "no {family} model"
        );
    }
}

#[test]
fn a_malformed_catalog_is_an_error_not_a_panic() {
    assert!(catalog::parse_models("[{\"id\": 3}]").is_err());
    assert!(catalog::parse_models("not json").is_err());
    let one = r#"[{"id": "a/b", "display_name": "B", "config": {"model_type": "llama"},
                   "params_official": {"total": 7, "active": null, "source": "card"}}]"#;
    let parsed = catalog::parse_models(one).unwrap();
    assert_eq!(parsed[0].params_official_total, Some(7));
    assert_eq!(parsed[0].params_official_active, None);
    assert!(parsed[0].unverified.is_empty());
}

#[test]
fn every_entry_has_sources_and_an_architecture() {
    for m in catalog::models() {
        assert!(!m.sources.is_empty(), "{} has no source", m.id);
        assert!(
            m.config["architectures"]
                .as_array()
                .is_some_and(|a| !a.is_empty()),
            "{} architectures",
            m.id
        );
        assert!(!m.model_type().is_empty(), "{} model_type", m.id);
        assert!(m.num_layers().is_some_and(|n| n > 0), "{} layers", m.id);
        assert!(m.id.contains('/'), "{} is not ORG/NAME", m.id);
        assert!(
            m.unverified.iter().all(|u| !u.trim().is_empty()),
            "{} has an empty unverified note",
            m.id
        );
    }
}

#[test]
fn configs_are_internally_consistent() {
    for m in catalog::models() {
        let t = text(m);
        let layers = m.num_layers().unwrap();
        if let (Some(h), Some(kv)) = (u(t, "num_attention_heads"), u(t, "num_key_value_heads")) {
            assert!(
                kv > 0 && h % kv == 0,
                "{}: {h} heads not divisible by {kv} KV heads",
                m.id
            );
        }
        if let Some(types) = t.get("layer_types").and_then(Value::as_array) {
            assert_eq!(types.len() as u64, layers, "{}: layer_types length", m.id);
        }
        if let Some(p) = t.get("hybrid_override_pattern").and_then(Value::as_str) {
            assert_eq!(
                p.len() as u64,
                layers,
                "{}: hybrid_override_pattern length",
                m.id
            );
        }
        if let (Some(total), Some(active)) = (m.params_official_total, m.params_official_active) {
            assert!(active < total, "{}: active {active} >= total {total}", m.id);
        }
        if u(t, "kv_lora_rank").is_some() {
            assert_eq!(u(t, "qk_rope_head_dim"), Some(64), "{}: MLA rope dim", m.id);
        }
    }
}

/// Facts a memory prediction depends on, each checked against the source named beside it.
#[test]
fn key_facts_match_the_real_configs() {
    let cases: &[(&str, &str, u64)] = &[
        ("meta-llama/Llama-3.1-8B-Instruct", "num_key_value_heads", 8), // llama-models card: GQA 8
        (
            "meta-llama/Llama-3.1-405B-Instruct",
            "num_hidden_layers",
            126,
        ),
        ("Qwen/Qwen3-32B", "head_dim", 128), // 64 heads x 128 != hidden 5120
        ("Qwen/Qwen3-30B-A3B", "moe_intermediate_size", 768),
        ("deepseek-ai/DeepSeek-V3", "kv_lora_rank", 512),
        ("deepseek-ai/DeepSeek-V3", "first_k_dense_replace", 3),
        ("moonshotai/Kimi-K2-Instruct", "n_routed_experts", 384),
        ("openai/gpt-oss-20b", "sliding_window", 128),
        ("google/gemma-3-27b-it", "sliding_window", 1024),
        ("google/gemma-3-27b-it", "num_hidden_layers", 62),
        ("THUDM/GLM-Z1-32B-0414", "num_key_value_heads", 2), // llama.cpp log: n_head_kv 2
        ("THUDM/GLM-Z1-32B-0414", "num_hidden_layers", 61),
        (
            "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
            "num_key_value_heads",
            2,
        ),
        (
            "Qwen/Qwen3-Next-80B-A3B-Instruct",
            "full_attention_interval",
            4,
        ),
        ("mistralai/Mistral-Nemo-Instruct-2407", "head_dim", 128),
    ];
    for (id, key, want) in cases {
        let m = find_model(id).unwrap_or_else(|| panic!("{id} missing"));
        assert_eq!(u(text(m), key), Some(*want), "{id} {key}");
    }
    let v3 = find_model("deepseek-ai/DeepSeek-V3").unwrap();
    assert_eq!(
        v3.config["quantization_config"]["weight_block_size"],
        serde_json::json!([128, 128])
    );
    let oss = find_model("openai/gpt-oss-120b").unwrap();
    assert_eq!(oss.config["quantization_config"]["quant_method"], "mxfp4");
}

#[test]
fn every_id_and_alias_finds_its_own_entry() {
    for m in catalog::models() {
        assert_eq!(find_model(&m.id).map(|f| &f.id), Some(&m.id));
        assert_eq!(
            find_model(&m.id.to_uppercase()).map(|f| &f.id),
            Some(&m.id),
            "case of {}",
            m.id
        );
        for a in &m.aliases {
            assert_eq!(find_model(a).map(|f| &f.id), Some(&m.id), "alias {a}");
        }
    }
}

#[test]
fn no_alias_names_two_entries() {
    let models = catalog::models();
    let mut seen: Vec<(String, &str)> = Vec::new();
    for m in models {
        let mut names: Vec<String> = vec![m.id.to_lowercase(), m.name().to_lowercase()];
        names.extend(m.aliases.iter().map(|a| a.to_lowercase()));
        names.sort();
        names.dedup();
        for n in names {
            if let Some((_, other)) = seen.iter().find(|(s, _)| *s == n) {
                panic!("'{n}' names both {other} and {}", m.id);
            }
            seen.push((n, &m.id));
        }
    }
}

#[test]
fn gguf_repo_ids_and_tags_resolve_to_the_base_model() {
    let cases = [
        ("unsloth/Qwen3-30B-A3B-GGUF:Q4_K_M", "Qwen/Qwen3-30B-A3B"),
        (
            "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF",
            "meta-llama/Llama-3.1-8B-Instruct",
        ),
        ("TheBloke/Llama-2-7B-Chat-GGUF", "meta-llama/Llama-2-7b-hf"),
        (
            "lmstudio-community/gemma-3-27b-it-GGUF:Q8_0",
            "google/gemma-3-27b-it",
        ),
        ("ggml-org/gpt-oss-20b-GGUF", "openai/gpt-oss-20b"),
        (
            "unsloth/DeepSeek-R1-0528-GGUF:UD-Q2_K_XL",
            "deepseek-ai/DeepSeek-R1",
        ),
        ("unsloth/GLM-4.5-Air-gguf", "zai-org/GLM-4.5-Air"),
        ("Qwen/Qwen2.5-7B-Instruct-GGUF", "Qwen/Qwen2.5-7B-Instruct"),
        ("bartowski/Qwen_Qwen3-8B-GGUF:Q4_K_M", "Qwen/Qwen3-8B"),
        (
            "bartowski/google_gemma-3-27b-it-GGUF",
            "google/gemma-3-27b-it",
        ),
        (
            "bartowski/meta-llama_Llama-3.3-70B-Instruct-GGUF",
            "meta-llama/Llama-3.3-70B-Instruct",
        ),
        (
            "QuantFactory/Meta-Llama-3-8B-Instruct-GGUF",
            "meta-llama/Meta-Llama-3-8B-Instruct",
        ),
        (
            "TheBloke/Mistral-7B-Instruct-v0.2-GGUF",
            "mistralai/Mistral-7B-Instruct-v0.2",
        ),
        ("qwen3:8b", "Qwen/Qwen3-8B"),
        ("llama3.1:8b", "meta-llama/Llama-3.1-8B-Instruct"),
        (
            "mistral-community/Mixtral-8x22B-v0.1",
            "mistralai/Mixtral-8x22B-Instruct-v0.1",
        ),
    ];
    for (query, want) in cases {
        assert_eq!(
            find_model(query).map(|m| m.id.as_str()),
            Some(want),
            "{query}"
        );
    }
}

#[test]
fn tuning_suffixes_are_ignored_only_as_a_last_resort() {
    // No catalog entry is named Qwen3-8B-Instruct: the suffix rule maps it to Qwen3-8B.
    assert_eq!(
        find_model("someone/Qwen3-8B-Instruct").map(|m| m.id.as_str()),
        Some("Qwen/Qwen3-8B")
    );
    assert_eq!(
        find_model("someone/gemma-2-9b-Chat").map(|m| m.id.as_str()),
        Some("google/gemma-2-9b-it")
    );
    // An exact name wins over the suffix rule: Qwen2.5-7B is an alias of the Instruct entry.
    assert_eq!(
        find_model("Qwen/Qwen2.5-Coder-7B-Instruct").map(|m| m.id.as_str()),
        Some("Qwen/Qwen2.5-Coder-7B-Instruct")
    );
}

#[test]
fn unknown_or_empty_names_find_nothing() {
    assert!(find_model("").is_none());
    assert!(find_model("   ").is_none());
    assert!(find_model("acme/NotAModel-7B").is_none());
    assert!(find_model("acme/NotAModel-7B-GGUF:Q4_K_M").is_none());
}
