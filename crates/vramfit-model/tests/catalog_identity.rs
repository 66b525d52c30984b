//! Model identity: a release with its own config.json is its own catalog entry, an alias never
//! changes the config, each entry's evidence agrees with its config, the most used models
//! resolve offline, and an unknown name gets "did you mean" with a remedy for its kind.

use serde_json::Value;
use vramfit_model::catalog::{self, find_model, CatalogModel};
use vramfit_model::remote::HubConfig;
use vramfit_model::resolve::{resolve, ResolveOptions};

fn offline() -> ResolveOptions {
    ResolveOptions {
        cache: None,
        hub: HubConfig::from_vars(|k| (k == "HF_HUB_OFFLINE").then(|| "1".to_string())),
        read_headers: false,
    }
}

fn text(m: &CatalogModel) -> &Value {
    m.config.get("text_config").unwrap_or(&m.config)
}

fn u(m: &CatalogModel, key: &str) -> Option<u64> {
    text(m).get(key).and_then(Value::as_u64)
}

/// Releases whose config.json differs from the earlier model of the same family, with the key
/// that differs and its value (each figure is in the entry's sources).
#[test]
fn distinct_releases_are_distinct_entries() {
    let cases: &[(&str, &str, &str, u64)] = &[
        // (release, earlier model, key, the release's value)
        (
            "Qwen/Qwen3-4B-Instruct-2507",
            "Qwen/Qwen3-4B",
            "max_position_embeddings",
            262144,
        ),
        (
            "Qwen/Qwen3-4B-Thinking-2507",
            "Qwen/Qwen3-4B",
            "max_position_embeddings",
            262144,
        ),
        (
            "Qwen/Qwen3-30B-A3B-Instruct-2507",
            "Qwen/Qwen3-30B-A3B",
            "max_position_embeddings",
            262144,
        ),
        (
            "Qwen/Qwen3-Coder-30B-A3B-Instruct",
            "Qwen/Qwen3-30B-A3B-Instruct-2507",
            "intermediate_size",
            5472,
        ),
        (
            "Qwen/Qwen3-Coder-480B-A35B-Instruct",
            "Qwen/Qwen3-235B-A22B",
            "num_experts",
            160,
        ),
        (
            "Qwen/Qwen3-235B-A22B-Instruct-2507",
            "Qwen/Qwen3-235B-A22B",
            "max_position_embeddings",
            262144,
        ),
        (
            "zai-org/GLM-4.6",
            "zai-org/GLM-4.5",
            "max_position_embeddings",
            202752,
        ),
        (
            "moonshotai/Kimi-K2-Instruct-0905",
            "moonshotai/Kimi-K2-Instruct",
            "max_position_embeddings",
            262144,
        ),
        (
            "deepseek-ai/DeepSeek-V3.2-Exp",
            "deepseek-ai/DeepSeek-V3",
            "index_n_heads",
            64,
        ),
    ];
    for (release, earlier, key, want) in cases {
        let r = find_model(release).unwrap_or_else(|| panic!("{release} missing"));
        let e = find_model(earlier).unwrap_or_else(|| panic!("{earlier} missing"));
        assert_ne!(r.id, e.id, "{release} resolves to {earlier}");
        assert_eq!(u(r, key), Some(*want), "{release} {key}");
        assert_ne!(u(e, key), Some(*want), "{earlier} {key} should differ");
    }
    let ds32 = find_model("deepseek-ai/DeepSeek-V3.2-Exp").unwrap();
    assert_eq!(ds32.model_type(), "deepseek_v32");
    assert_eq!(u(ds32, "kv_lora_rank"), Some(512));
    // a known model type: read as V3's MLA with no "unknown model_type" warning
    assert!(vramfit_model::hf_config::KNOWN_MODEL_TYPES.contains(&"deepseek_v32"));
    let s = resolve("deepseek-ai/DeepSeek-V3.2-Exp", &offline())
        .unwrap()
        .spec;
    let w = &s.provenance.warnings;
    assert!(
        w.iter().all(|w| !w.contains("is not one vramfit knows")),
        "{w:?}"
    );
}

/// An alias never changes the config: the FP8 Maverick repo is a quantized variant with its own
/// quantization_config, the BF16 id has none.
#[test]
fn maverick_fp8_resolves_to_its_own_quantized_checkpoint() {
    let fp8 = resolve(
        "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8",
        &offline(),
    )
    .unwrap();
    let q = fp8
        .spec
        .quant
        .as_ref()
        .expect("FP8 repo carries its quantization_config");
    assert_eq!(q.bits, Some(8));
    let bf16 = resolve("meta-llama/Llama-4-Maverick-17B-128E-Instruct", &offline()).unwrap();
    assert!(bf16.spec.quant.is_none());
    assert_eq!(fp8.spec.n_layer(), bf16.spec.n_layer());
    // no catalog alias names a -FP8/-AWQ/-GPTQ checkpoint: those are variants with their own
    // quantization_config (catalog/quantized.json)
    for m in catalog::models() {
        for a in &m.aliases {
            let l = a.to_ascii_lowercase();
            assert!(
                !["-fp8", "-awq", "-gptq", "-int4", "-int8"]
                    .iter()
                    .any(|t| l.ends_with(t)),
                "{a} (alias of {}) names a quantized checkpoint",
                m.id
            );
        }
    }
}

/// The case: the 2507 release resolves to its own config, 262144 tokens, not Qwen3-4B's.
#[test]
fn qwen3_4b_2507_resolves_to_its_own_context() {
    let r = resolve("Qwen/Qwen3-4B-Instruct-2507", &offline()).unwrap();
    assert_eq!(r.spec.n_ctx_train, 262144, "{}", r.source);
    assert!(
        r.source.contains("Qwen/Qwen3-4B-Instruct-2507"),
        "{}",
        r.source
    );
    let base = resolve("Qwen/Qwen3-4B", &offline()).unwrap();
    assert_eq!(base.spec.n_ctx_train, 40960);
    // its FP8 checkpoint sits on the 2507 entry, not on Qwen3-4B
    let fp8 = resolve("Qwen/Qwen3-4B-Instruct-2507-FP8", &offline()).unwrap();
    assert_eq!(fp8.spec.n_ctx_train, 262144);
    // GGUF repos of the release find the release
    let g = resolve("unsloth/Qwen3-4B-Instruct-2507-GGUF:Q4_K_M", &offline()).unwrap();
    assert_eq!(g.spec.n_ctx_train, 262144);
}

/// An alias that carries a release tag (a 4-digit date such as 2507, 0905, 0528) the entry's
/// own id lacks names a different checkpoint; it may stay an alias only where that checkpoint's
/// config.json is known to be the same (listed here with the reason).
#[test]
fn aliases_with_a_release_tag_name_the_same_config() {
    let same_config: &[(&str, &str)] = &[
        (
            "DeepSeek-V3-0324",
            "V3-0324 config.json equals V3's (same 671B checkpoint format)",
        ),
        ("DeepSeek-R1-0528", "R1-0528 config.json equals R1's"),
        (
            "DeepSeek-V2-Chat-0628",
            "a retrained V2-Chat: the same 236B DeepseekV2ForCausalLM config",
        ),
        ("DeepSeek-V2.5-1210", "a retrained V2.5: the same config"),
        (
            "GLM-4-32B-0414",
            "GLM-Z1-32B-0414 is GLM-4-32B-0414 further trained",
        ),
    ];
    let tag = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|t| t.len() == 4 && t.chars().all(|c| c.is_ascii_digit()))
            .filter(|t| {
                matches!(
                    &t[..2],
                    "01" | "02"
                        | "03"
                        | "04"
                        | "05"
                        | "06"
                        | "07"
                        | "08"
                        | "09"
                        | "10"
                        | "11"
                        | "12"
                        | "24"
                        | "25"
                )
            })
            .map(str::to_string)
            .collect()
    };
    let mut bad = Vec::new();
    for m in catalog::models() {
        let own = tag(&m.id);
        for a in &m.aliases {
            let extra: Vec<String> = tag(a).into_iter().filter(|t| !own.contains(t)).collect();
            if !extra.is_empty() && !same_config.iter().any(|(n, _)| n.eq_ignore_ascii_case(a)) {
                bad.push(format!("{a} (of {})", m.id));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "aliases naming another release: give each its own entry or list why its config is the same: {bad:?}"
    );
}

/// Figures an entry's sources quote ("max_position_embeddings 262144", "92 layers") agree with
/// its config, so a copied entry cannot keep its parent's numbers by mistake.
#[test]
fn evidence_quoted_in_sources_matches_the_config() {
    let mut checked = 0;
    for m in catalog::models() {
        for s in &m.sources {
            // only the entry's own config copies: a source about a variant says so
            let other_release = ["Base", "2507", "0905", "GLM-4.6"]
                .iter()
                .any(|r| s.contains(r) && !m.id.contains(r));
            if s.contains("derived from") || other_release {
                continue;
            }
            for (phrase, key) in [
                ("max_position_embeddings ", "max_position_embeddings"),
                ("index_n_heads ", "index_n_heads"),
            ] {
                let mut rest = s.as_str();
                while let Some(i) = rest.find(phrase) {
                    rest = &rest[i + phrase.len()..];
                    let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    if let Ok(n) = n.parse::<u64>() {
                        assert_eq!(u(m, key), Some(n), "{}: source says {phrase}{n}: {s}", m.id);
                        checked += 1;
                    }
                }
            }
            // the decoder's layer count: a vision tower's comes after the word "vision"
            let decoder = s.split("vision").next().unwrap_or(s);
            if let Some(i) = decoder.find(" layers/") {
                let digits: String = decoder[..i]
                    .chars()
                    .rev()
                    .take_while(char::is_ascii_digit)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                if let Ok(n) = digits.parse::<u64>() {
                    assert_eq!(
                        m.num_layers(),
                        Some(n),
                        "{}: source says {n} layers: {s}",
                        m.id
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 10, "only {checked} quoted figures checked");
}

/// Text-generation models with the most Hub downloads in 2025-26 (as listed on the Hub's
/// "most downloads" page over that period, written down by hand; no network in tests). Each
/// resolves offline to the entry of that exact checkpoint or to an alias of the same config.
#[test]
fn the_most_used_models_resolve_offline() {
    let top: &[&str] = &[
        "Qwen/Qwen2.5-7B-Instruct",
        "Qwen/Qwen2.5-1.5B-Instruct",
        "Qwen/Qwen2.5-0.5B-Instruct",
        "Qwen/Qwen2.5-3B-Instruct",
        "Qwen/Qwen3-0.6B",
        "Qwen/Qwen3-1.7B",
        "Qwen/Qwen3-4B",
        "Qwen/Qwen3-8B",
        "Qwen/Qwen3-32B",
        "Qwen/Qwen3-4B-Instruct-2507",
        "Qwen/Qwen3-30B-A3B-Instruct-2507",
        "Qwen/Qwen3-Coder-30B-A3B-Instruct",
        "Qwen/Qwen3-Next-80B-A3B-Instruct",
        "meta-llama/Llama-3.1-8B-Instruct",
        "meta-llama/Llama-3.1-8B",
        "meta-llama/Llama-3.2-1B-Instruct",
        "meta-llama/Llama-3.2-3B-Instruct",
        "meta-llama/Meta-Llama-3-8B-Instruct",
        "meta-llama/Llama-3.3-70B-Instruct",
        "openai/gpt-oss-20b",
        "openai/gpt-oss-120b",
        "google/gemma-3-1b-it",
        "google/gemma-3-4b-it",
        "google/gemma-3-27b-it",
        "mistralai/Mistral-7B-Instruct-v0.3",
        "microsoft/Phi-3-mini-4k-instruct",
        "microsoft/phi-4",
        "deepseek-ai/DeepSeek-R1",
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B",
        "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
    ];
    assert_eq!(top.len(), 30);
    for id in top {
        let r = resolve(id, &offline()).unwrap_or_else(|e| panic!("{id}: {e}"));
        let m = find_model(id).unwrap();
        let name = id.rsplit('/').next().unwrap();
        assert!(
            m.id.eq_ignore_ascii_case(id) || m.aliases.iter().any(|a| a.eq_ignore_ascii_case(name)),
            "{id} resolves to {} by a loose rule",
            m.id
        );
        let want = u(m, "max_position_embeddings");
        if let Some(want) = want {
            assert_eq!(r.spec.n_ctx_train, want, "{id}");
        }
    }
}

#[test]
fn unknown_names_get_did_you_mean_and_a_remedy_for_their_kind() {
    let err = resolve("Qwen/Qwen3-4B-Instruct-2508", &offline())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Did you mean Qwen/Qwen3-4B-Instruct-2507"),
        "{err}"
    );
    assert!(
        err.contains("huggingface-cli download Qwen/Qwen3-4B-Instruct-2508 config.json"),
        "{err}"
    );
    let err = resolve("someone/Frobnicator-9B-GGUF:Q6_K", &offline())
        .unwrap_err()
        .to_string();
    assert!(err.contains("--include \"*Q6_K*.gguf\""), "{err}");
    let err = resolve("./no/such/model.gguf", &offline())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("No file or folder at './no/such/model.gguf'"),
        "{err}"
    );
    assert!(!err.contains("huggingface-cli"), "{err}");
    let err = resolve("https://127.0.0.1:9/model.gguf", &offline())
        .unwrap_err()
        .to_string();
    assert!(err.contains("give its local path"), "{err}");
    for e in [&err] {
        assert!(!e.contains('\n'), "{e}");
    }
}

#[test]
fn qat_gguf_repos_default_to_their_q4_0_file() {
    let r = resolve("google/gemma-3-27b-it-qat-q4_0-gguf", &offline()).unwrap();
    assert_eq!(r.gguf_quant.as_deref(), Some("Q4_0"));
    assert_eq!(r.spec.n_layer(), 62);
    let r = resolve("google/gemma-3-27b-it-qat-q4_0-unquantized", &offline()).unwrap();
    assert_eq!(r.spec.n_layer(), 62);
    assert!(r.gguf_quant.is_none());
}
