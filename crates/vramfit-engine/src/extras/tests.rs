use super::*;
use crate::plan::{DevicePlan, HostPlan, KvSummary, ModelRef};
use vramfit_model::catalog::find_model;
use vramfit_model::hf_config::spec_from_config;

fn spec(id: &str) -> vramfit_model::ModelSpec {
    let m = find_model(id).unwrap();
    spec_from_config(&m.id, &m.config).unwrap()
}

/// Llama-3.1-8B, rank 16, one slot, bf16, per layer: qkv 3·16·4096 + 16·6144, o 16·4096 +
/// 16·4096, gate_up 2·16·4096 + 16·28672, down 16·14336 + 16·4096 = 1,310,720 elements; x 32
/// layers x 2 bytes = 80 MiB.
#[test]
fn vllm_lora_slots_for_llama_8b() {
    let s = spec("meta-llama/Llama-3.1-8B-Instruct");
    let (b, moe) = lora_slot_bytes(&s, 16, 1, 1, false, 2);
    assert_eq!(b, 1_310_720 * 32 * 2);
    assert!(!moe);
    // 4 slots of rank 64: 16 times as much
    assert_eq!(lora_slot_bytes(&s, 64, 4, 1, false, 2).0, b * 16);
    // TP 2: the split halves of each projection, the replicated A/B of the other side stay
    let (b2, _) = lora_slot_bytes(&s, 16, 1, 2, false, 2);
    assert!(b2 > b / 2 && b2 < b, "{b2} vs {b}");
    let (_, moe) = lora_slot_bytes(&spec("Qwen/Qwen3-30B-A3B"), 16, 1, 1, false, 2);
    assert!(moe);
}

fn plan(kv: i64, tokens: u64) -> MemoryPlan {
    let mut d = DevicePlan {
        name: "GPU".into(),
        total_bytes: 24 << 30,
        free_bytes: 24 << 30,
        weights_bytes: 16 << 30,
        kv_cache_bytes: kv,
        ..Default::default()
    };
    d.finish();
    MemoryPlan {
        engine: "vllm".into(),
        model: ModelRef::default(),
        verdict: Verdict::Fits,
        devices: vec![d],
        host: HostPlan::default(),
        kv_cache: KvSummary {
            bytes: kv,
            tokens,
            bytes_per_token: 131072,
            max_concurrency: 4.0,
        },
        max_model_len: tokens,
        problems: vec![],
        suggestions: vec![],
        settings: vec![],
        notes: vec![],
    }
}

fn extra(bytes: u64, per_token: u64) -> Extra {
    Extra {
        what: "x".into(),
        device_bytes: vec![bytes],
        host_bytes: 0,
        kv_bytes_per_token: per_token,
        activation: false,
        source: "test",
    }
}

#[test]
fn a_pool_engine_gives_the_extras_kv_memory() {
    let mut p = plan(4 << 30, 32768);
    apply(&mut p, &[extra(1 << 30, 0)], Budget::KvPool, Some(8192));
    assert_eq!(p.kv_cache.tokens, 24576);
    assert_eq!(p.devices[0].kv_cache_bytes, 3 << 30);
    assert_eq!(p.verdict, Verdict::Fits);
    // a draft whose layers cache as much per token as the target's halves what is left
    let mut p = plan(4 << 30, 32768);
    apply(&mut p, &[extra(0, 131072)], Budget::KvPool, Some(8192));
    assert_eq!(p.kv_cache.tokens, 16384);
    // below the configured length the engine stops at start (2 requests of 16384 before)
    let mut p = plan(4 << 30, 32768);
    p.kv_cache.max_concurrency = 2.0;
    apply(&mut p, &[extra(3 << 30, 0)], Budget::KvPool, Some(16384));
    assert_eq!(p.verdict, Verdict::DoesNotFit);
    assert!(p.problems[0].contains("8192 tokens"), "{:?}", p.problems);
    // a sliding-window pool prints fewer tokens than the length and still holds one request
    // (gemma-3-27b at 32k on an A100-80GB, v0.19.0, started: held-apart set 5)
    let mut p = plan(4 << 30, 32768);
    p.kv_cache.max_concurrency = 4.5;
    apply(&mut p, &[extra(1 << 28, 0)], Budget::KvPool, Some(32768));
    assert_eq!(p.verdict, Verdict::Fits, "{:?}", p.problems);
}

#[test]
fn an_additive_engine_must_hold_them_all() {
    let mut p = plan(4 << 30, 32768);
    apply(&mut p, &[extra(3 << 30, 0)], Budget::Additive, None);
    assert_eq!(p.verdict, Verdict::Fits);
    assert_eq!(p.devices[0].used_bytes, 23 << 30);
    apply(&mut p, &[extra(2 << 30, 0)], Budget::Additive, None);
    assert_eq!(p.verdict, Verdict::DoesNotFit);
}

#[test]
fn flags_are_read_in_both_spellings() {
    let a: Vec<String> = [
        "--max-loras=4",
        "--lora",
        "a.gguf",
        "--lora",
        "b.gguf",
        "--enable-lora",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(flag(&a, &["--max-loras"]), Some("4"));
    assert_eq!(flag_all(&a, &["--lora"]), ["a.gguf", "b.gguf"]);
    assert!(has(&a, &["--enable-lora"]));
    assert!(!has(&a, &["--fully-sharded-loras"]));
}
