//! The embedded catalog of pre-quantized checkpoints (`catalog/quantized.json`): every entry's
//! base is a catalog model, every config parses with the quantization it names, the evidence is
//! recorded; and such repos resolve offline to their own spec, after local paths and the HF
//! cache and before the Hub.

use std::collections::HashSet;
use std::path::PathBuf;
use vramfit_model::catalog::{
    self, find_model, find_variant, quantized_variants, variants, variants_of_checkpoint,
};
use vramfit_model::hf_config::spec_from_config;
use vramfit_model::remote::HubConfig;
use vramfit_model::resolve::{resolve, ResolveOptions};

fn offline_opts(cache: Option<PathBuf>) -> ResolveOptions {
    ResolveOptions {
        cache,
        hub: HubConfig::from_vars(|k| (k == "HF_HUB_OFFLINE").then(|| "1".to_string())),
        read_headers: false,
    }
}

fn empty_cache(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vramfit-quantized-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn every_entry_has_a_catalog_base_a_parsing_config_and_evidence() {
    let all = variants();
    assert!(all.len() >= 30, "{} variants", all.len());
    let mut seen = HashSet::new();
    for v in all {
        let what = &v.repo;
        assert!(seen.insert(v.repo.to_ascii_lowercase()), "{what} twice");
        assert!(v.repo.contains('/'), "{what}: not ORG/NAME");
        let base = v
            .base_model()
            .unwrap_or_else(|| panic!("{what}: base {} not in the catalog", v.base));
        assert!(
            find_model(&v.repo).is_none_or(|m| m.id != v.repo),
            "{what} is itself a catalog model id"
        );
        for k in v.config_overrides.keys() {
            assert!(
                base.config.get(k).is_some(),
                "{what}: override {k} is not a key of {}",
                v.base
            );
        }
        let q = v
            .quant()
            .unwrap_or_else(|| panic!("{what}: quantization_config does not parse"));
        assert!(
            ["awq", "gptq", "fp8", "compressed-tensors"].contains(&q.method.as_str()),
            "{what}: method {}",
            q.method
        );
        assert!(
            matches!(q.bits, Some(4) | Some(8)),
            "{what}: bits {:?}",
            q.bits
        );
        if matches!(q.method.as_str(), "awq" | "gptq") {
            assert_eq!(q.group_size, Some(128), "{what}");
        }
        let config = v.config().unwrap();
        let spec = spec_from_config(&v.repo, &config).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(
            spec.quant.as_ref(),
            Some(&q),
            "{what}: the spec carries the quantization"
        );
        let base_spec = spec_from_config(&v.base, &base.config).unwrap();
        assert_eq!(spec.n_layer(), base_spec.n_layer(), "{what}");
        assert!(!v.format_name().is_empty());
        assert!(!v.params_source.is_empty(), "{what}: params_source");
        assert!(v.evidence_hits >= 1, "{what}: no evidence hits");
        assert!(!v.evidence.is_empty(), "{what}: no evidence");
        for e in &v.evidence {
            assert!(
                !e.id.is_empty() && e.id.chars().all(|c| c.is_ascii_digit()),
                "{what}: evidence id {}",
                e.id
            );
            assert!(!e.context.trim().is_empty(), "{what}: evidence context");
        }
        if let Some(src) = &v.source_repo {
            // the source checkpoint shares the base's architecture (an alias of it)
            assert_eq!(
                find_model(src).map(|m| m.id.as_str()),
                Some(v.base.as_str()),
                "{what}"
            );
        }
        for a in &v.source_aliases {
            assert_eq!(
                find_model(a).map(|m| m.id.as_str()),
                Some(v.base.as_str()),
                "{what}: {a}"
            );
        }
    }
}

#[test]
fn the_file_covers_the_families_asked_for() {
    for repo in [
        "Qwen/Qwen3-8B-AWQ",
        "Qwen/Qwen3-32B-FP8",
        "Qwen/Qwen3-30B-A3B-FP8",
        "Qwen/Qwen3-235B-A22B-FP8",
        "Qwen/Qwen2.5-7B-Instruct-AWQ",
        "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4",
        "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8",
        "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4",
        "hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4",
        "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic",
        "TheBloke/Mixtral-8x7B-Instruct-v0.1-AWQ",
    ] {
        assert!(find_variant(repo).is_some(), "{repo}");
    }
}

#[test]
fn known_parameters_are_the_publishers() {
    let q = find_variant("Qwen/Qwen3-8B-AWQ").unwrap().quant().unwrap();
    assert_eq!(
        (q.method.as_str(), q.bits, q.group_size),
        ("awq", Some(4), Some(128))
    );
    let q = find_variant("Qwen/Qwen3-8B-FP8").unwrap().quant().unwrap();
    assert_eq!(q.method, "fp8");
    assert_eq!(q.format.as_deref(), Some("fp8 block 128x128"));
    let q = find_variant("Qwen/Qwen2.5-14B-Instruct-GPTQ-Int8")
        .unwrap()
        .quant()
        .unwrap();
    assert_eq!((q.method.as_str(), q.bits), ("gptq", Some(8)));
    let v = find_variant("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic").unwrap();
    assert_eq!(v.quant().unwrap().method, "compressed-tensors");
    assert_eq!(v.format_name(), "FP8 per-channel (compressed-tensors)");
    assert_eq!(
        find_variant("Qwen/Qwen3-14B-AWQ").unwrap().format_name(),
        "AWQ 4-bit g128"
    );
    assert_eq!(
        find_variant("Qwen/Qwen3-14B-FP8").unwrap().format_name(),
        "FP8 block 128x128"
    );
}

#[test]
fn variants_are_listed_by_base_and_by_checkpoint() {
    let qwen8: Vec<&str> = quantized_variants("Qwen/Qwen3-8B")
        .iter()
        .map(|v| v.repo.as_str())
        .collect();
    assert_eq!(qwen8, ["Qwen/Qwen3-8B-AWQ", "Qwen/Qwen3-8B-FP8"]);
    assert_eq!(quantized_variants("qwen/qwen3-8b").len(), 2);
    assert!(quantized_variants("Qwen/Qwen3-8B-AWQ").is_empty());
    assert!(quantized_variants("no/such-model").is_empty());
    // the 2507 release shares Qwen3-4B's architecture but not its weights
    let base4: Vec<&str> = variants_of_checkpoint("Qwen/Qwen3-4B")
        .iter()
        .map(|v| v.repo.as_str())
        .collect();
    assert_eq!(base4, ["Qwen/Qwen3-4B-AWQ", "Qwen/Qwen3-4B-FP8"]);
    let r2507: Vec<&str> = variants_of_checkpoint("Qwen/Qwen3-4B-Instruct-2507")
        .iter()
        .map(|v| v.repo.as_str())
        .collect();
    assert_eq!(r2507, ["Qwen/Qwen3-4B-Instruct-2507-FP8"]);
    assert_eq!(quantized_variants("Qwen/Qwen3-4B").len(), 2);
    assert_eq!(quantized_variants("Qwen/Qwen3-4B-Instruct-2507").len(), 1);
    // a renamed repo is the same checkpoint
    let old = variants_of_checkpoint("meta-llama/Meta-Llama-3.1-8B-Instruct");
    let new = variants_of_checkpoint("meta-llama/Llama-3.1-8B-Instruct");
    assert_eq!(old.len(), new.len());
    assert!(new
        .iter()
        .any(|v| v.repo == "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4"));
}

#[test]
fn a_variant_resolves_offline_to_its_own_spec() {
    let cache = empty_cache("resolve");
    let r = resolve("Qwen/Qwen3-8B-AWQ", &offline_opts(Some(cache))).unwrap();
    assert_eq!(r.spec.id, "Qwen/Qwen3-8B-AWQ");
    let q = r.spec.quant.as_ref().unwrap();
    assert_eq!(
        (q.method.as_str(), q.bits, q.group_size),
        ("awq", Some(4), Some(128))
    );
    assert!(
        r.source.contains("embedded catalog") && r.source.contains("Qwen/Qwen3-8B"),
        "{}",
        r.source
    );
    assert_eq!(r.spec.provenance.source, r.source);
    assert!(r.weights.is_none() && r.gguf_quant.is_none());
    // the architecture is the base's
    let base = resolve("Qwen/Qwen3-8B", &offline_opts(None)).unwrap();
    assert_eq!(r.spec.layers, base.spec.layers);
    assert!(base.spec.quant.is_none());
    // by name alone when one variant has it (the catalog's own alias of the base would give
    // the 16-bit spec)
    let r = resolve("Qwen3-235B-A22B-FP8", &offline_opts(None)).unwrap();
    assert_eq!(r.spec.id, "Qwen/Qwen3-235B-A22B-FP8");
    assert!(r.spec.quant.is_some());
    assert!(find_variant("other-org/Qwen3-8B-AWQ").is_none());
    // case-insensitive, spaces around ignored by the catalog lookup
    let r = resolve("qwen/qwen3-8b-fp8", &offline_opts(None)).unwrap();
    assert_eq!(r.spec.id, "Qwen/Qwen3-8B-FP8");
    assert_eq!(
        r.spec.quant.unwrap().format.as_deref(),
        Some("fp8 block 128x128")
    );
}

#[test]
fn overrides_reach_the_spec() {
    let r = resolve("Qwen/Qwen2.5-72B-Instruct-AWQ", &offline_opts(None)).unwrap();
    let n_ff = |s: &vramfit_model::ModelSpec| match s.layers[0].ffn {
        vramfit_model::FfnKind::Dense { n_ff } => n_ff,
        _ => 0,
    };
    assert_eq!(n_ff(&r.spec), 29696, "padded for tensor parallel 8");
    let base = resolve("Qwen/Qwen2.5-72B-Instruct", &offline_opts(None)).unwrap();
    assert_eq!(n_ff(&base.spec), 29568);
    let r = resolve("Qwen/Qwen3-4B-Instruct-2507-FP8", &offline_opts(None)).unwrap();
    assert_eq!(r.spec.n_ctx_train, 262144);
    assert!(
        r.source.contains("Qwen/Qwen3-4B-Instruct-2507"),
        "{}",
        r.source
    );
}

#[test]
fn the_hf_cache_and_local_paths_come_first() {
    let cache = empty_cache("precedence");
    let snap = cache
        .join("models--Qwen--Qwen3-8B-AWQ")
        .join("snapshots")
        .join("abc");
    std::fs::create_dir_all(&snap).unwrap();
    std::fs::create_dir_all(cache.join("models--Qwen--Qwen3-8B-AWQ").join("refs")).unwrap();
    std::fs::write(
        cache
            .join("models--Qwen--Qwen3-8B-AWQ")
            .join("refs")
            .join("main"),
        "abc",
    )
    .unwrap();
    let mut config = find_variant("Qwen/Qwen3-8B-AWQ").unwrap().config().unwrap();
    // a cached config that differs from the catalog's: the cache wins
    config["num_hidden_layers"] = serde_json::json!(2);
    std::fs::write(
        snap.join("config.json"),
        serde_json::to_vec(&config).unwrap(),
    )
    .unwrap();
    let r = resolve("Qwen/Qwen3-8B-AWQ", &offline_opts(Some(cache.clone()))).unwrap();
    assert_eq!(r.spec.n_layer(), 2);
    assert!(r.source.contains("HF cache"), "{}", r.source);
    let local = snap.join("config.json");
    let r = resolve(local.to_str().unwrap(), &offline_opts(None)).unwrap();
    assert_eq!(r.spec.n_layer(), 2);
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
fn unknown_quantized_names_still_fail_offline_with_the_places_tried() {
    let err = resolve("Qwen/Qwen3-8B-AWQ-not-a-repo", &offline_opts(None))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("not found") && err.contains("HF_HUB_OFFLINE"),
        "{err}"
    );
    assert!(!err.contains('\n'), "one line: {err}");
    // a GGUF name of a variant is not the variant
    let r = resolve("Qwen/Qwen3-8B-GGUF:Q4_K_M", &offline_opts(None)).unwrap();
    assert_eq!(r.spec.id, "Qwen/Qwen3-8B");
    assert!(r.spec.quant.is_none());
}

#[test]
fn parse_rejects_a_malformed_file() {
    assert!(catalog::quantized::parse_variants("[]").is_err());
    assert!(catalog::quantized::parse_variants("{\"variants\": [{\"repo\": 3}]}").is_err());
    assert_eq!(
        catalog::quantized::parse_variants("{\"variants\": []}")
            .unwrap()
            .len(),
        0
    );
}
