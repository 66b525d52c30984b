//! SGLang's hybrid sliding-window pool (src/sglang/swa.rs) on catalog configs: which models get
//! it, and the split of the profiled bytes, against figures derived by hand from the configs.

use vramfit_engine::cmdline::Command;
use vramfit_engine::hardware::{Gpu, Hardware};
use vramfit_engine::sglang::{self, SglangConfig};
use vramfit_engine::MemoryPlan;
use vramfit_model::catalog::{find_gpu, find_model};
use vramfit_model::hf_config::spec_from_config;

fn plan(line: &str, gpu: &str, version: Option<&str>) -> MemoryPlan {
    let mut c: SglangConfig = sglang::parse(&Command::parse(&[line]).unwrap()).unwrap();
    c.version = version.map(|v| vramfit_engine::vllm::Version::parse(v).unwrap());
    let m = find_model(&c.model).unwrap();
    let spec = spec_from_config(&m.id, &m.config).unwrap();
    let hw = Hardware {
        gpus: vec![Gpu::from_catalog(find_gpu(gpu).unwrap())],
        host_ram_bytes: None,
    };
    sglang::plan(&spec, None, &c, &hw)
}

const LAUNCH: &str = "python -m sglang.launch_server --model-path";

#[test]
fn gemma_4_31b_splits_its_pool_by_the_ratio() {
    let off = plan(
        &format!("{LAUNCH} google/gemma-4-31B-it --disable-hybrid-swa-memory"),
        "H100",
        None,
    );
    let on = plan(&format!("{LAUNCH} google/gemma-4-31B-it"), "H100", None);
    // by hand from config.json: 50 sliding layers × 16 KV heads × (256 + 256) × 2 B = 800 KiB,
    // 10 full layers × 4 KV heads × (512 + 512) × 2 B = 80 KiB: 880 KiB a token in every layer
    assert_eq!(off.kv_cache.bytes_per_token, 880 * 1024);
    // the hybrid pool: 80 + 0.8 × 800 = 720 KiB per token of the full-layer pool (to the page:
    // both pools are whole pages, so the split's ratio is 0.8 within a token)
    let near = |a: u64, b: u64| (a as f64 / b as f64 - 1.0).abs() < 1e-3;
    assert!(near(on.kv_cache.bytes_per_token, 720 * 1024));
    assert!(near(on.kv_cache.tokens, off.kv_cache.tokens * 880 / 720));
    // the same bytes, split: never more than the profile gave
    assert!(on.kv_cache.bytes <= off.kv_cache.bytes);
    assert!(on.kv_cache.bytes as f64 > off.kv_cache.bytes as f64 * 0.999);
    assert!(on
        .notes
        .iter()
        .any(|n| n.contains("hybrid sliding-window pool")));
    // a smaller ratio leaves more tokens to the full layers
    let r = plan(
        &format!("{LAUNCH} google/gemma-4-31B-it --swa-full-tokens-ratio 0.5"),
        "H100",
        None,
    );
    assert!(near(r.kv_cache.tokens, off.kv_cache.tokens * 880 / 480));
}

#[test]
fn gpt_oss_gets_the_pool_by_release_and_attention_backend() {
    let line = format!("{LAUNCH} openai/gpt-oss-120b");
    let on = plan(&line, "H100", None);
    // 18 + 18 layers of 8 KV heads × (64 + 64) × 2 B: 36 KiB each kind; 36 + 0.8 × 36 = 28.8 + 36
    assert_eq!(on.kv_cache.bytes_per_token, 36 * 1024 + 36 * 1024 * 8 / 10);
    for (why, p) in [
        ("v0.5.8", plan(&line, "H100", Some("0.5.8"))),
        (
            "trtllm_mha",
            plan(
                &format!("{line} --attention-backend trtllm_mha"),
                "H100",
                None,
            ),
        ),
        ("B200", plan(&line, "B200", None)),
    ] {
        assert_eq!(p.kv_cache.bytes_per_token, 72 * 1024, "{why}");
        assert!(
            p.notes.iter().any(|n| n.contains("keep every token")),
            "{why}: {:?}",
            p.notes
        );
    }
    assert_eq!(
        plan(&line, "H100", Some("0.5.9")).kv_cache.tokens,
        on.kv_cache.tokens
    );
}

#[test]
fn gemma_3_keeps_every_token_in_its_sliding_layers() {
    let p = plan(&format!("{LAUNCH} google/gemma-3-27b-it"), "H100", None);
    let off = plan(
        &format!("{LAUNCH} google/gemma-3-27b-it --disable-hybrid-swa-memory"),
        "H100",
        None,
    );
    assert_eq!(p.kv_cache.tokens, off.kv_cache.tokens);
    // 62 layers × 16 KV heads × (128 + 128) × 2 B
    assert_eq!(p.kv_cache.bytes_per_token, 62 * 16 * 256 * 2);
    assert!(p.notes.iter().any(|n| n.contains("only for the classes")));
}

#[test]
fn a_ratio_that_is_not_positive_is_refused() {
    let c = Command::parse(&[format!(
        "{LAUNCH} google/gemma-4-31B-it --swa-full-tokens-ratio 0"
    )])
    .unwrap();
    let e = sglang::parse(&c).unwrap_err().to_string();
    assert!(
        e.contains("--swa-full-tokens-ratio") && e.contains("\"0\""),
        "{e}"
    );
}
