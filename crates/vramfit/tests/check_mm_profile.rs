//! vLLM's multimodal profiling pass (gpu_model_runner.py profile_run): the encoder's dummy image
//! batch is sized as the engine sizes it, and what it adds over the text batch's peak comes out
//! of the KV pool. Anchor: dev record vllm-log-037 (gemma-3-27b-it, v0.11.0rc2, ROCm), whose
//! log prints "Encoder cache will be initialized with a budget of 8192 tokens, and profiled with
//! 31 image items of the maximum feature size."

use serde_json::Value;

mod common;

fn check(args: &[&str]) -> (i32, Value, String) {
    common::check_cli(args)
}

fn kv(j: &Value) -> i64 {
    j["kv_cache"]["bytes"].as_i64().unwrap()
}

#[test]
fn gemma3_27b_profiles_31_images_as_the_log_says() {
    let base = [
        "--json",
        "--gpu",
        "MI300X",
        "--engine-version",
        "0.11.0",
        "--",
        "vllm",
        "serve",
        "google/gemma-3-27b-it",
        "--max-model-len",
        "4096",
    ];
    let mut args = base.to_vec();
    args.extend_from_slice(&["--limit-mm-per-prompt", r#"{"image": 2}"#]);
    let (rc, j, err) = check(&args);
    assert_eq!(rc, 0, "{err}");
    let n = j["notes"].to_string();
    assert!(
        n.contains("31 images of 896 x 896") && n.contains("budget 8192 tokens"),
        "{n}"
    );
    assert!(!n.contains("profiling pass is not modelled"), "{n}");
    // 31 x 260 x 5376 x 2 bytes of encoder outputs held while the text batch runs (the text
    // batch's peak, with 1024 sequences of logits, is above the encoder's)
    let (_, off, _) = check(&{
        let mut a = base.to_vec();
        a.extend_from_slice(&["--limit-mm-per-prompt", r#"{"image": 0}"#]);
        a
    });
    assert_eq!(kv(&off) - kv(&j), 31 * 260 * 5376 * 2);
    // measured: 109.86 GiB of KV on a 191.98 GiB MI300X at 0.9 (vllm-log-037); the model is
    // within 2 % (the log's weights are 0.71 GiB above the checkpoint's tensors)
    let gib = kv(&j) as f64 / (1u64 << 30) as f64;
    assert!((gib - 109.86).abs() / 109.86 < 0.02, "{gib:.2} GiB");
}

#[test]
fn a_large_encoder_batch_over_the_text_peak_shrinks_the_pool() {
    // 16384 batched tokens and 4 sequences: 63 images of 4096 patches in one encoder pass,
    // whose MLP activations pass the text batch's peak
    let base = [
        "--json",
        "--gpu",
        "RTX 4090",
        "--",
        "vllm",
        "serve",
        "google/gemma-3-4b-it",
        "--max-model-len",
        "8192",
        "--max-num-batched-tokens",
        "16384",
        "--max-num-seqs",
        "4",
    ];
    let (rc, j, err) = check(&base);
    assert_eq!(rc, 0, "{err}");
    assert!(
        j["notes"].to_string().contains("63 images"),
        "{}",
        j["notes"]
    );
    let mut skip = base.to_vec();
    skip.push("--skip-mm-profiling");
    let (rc, s, err) = check(&skip);
    assert_eq!(rc, 0, "{err}");
    assert!(s["notes"]
        .to_string()
        .contains("--skip-mm-profiling: vLLM does not profile"));
    assert!(kv(&s) - kv(&j) > 1 << 30, "{} vs {}", kv(&s), kv(&j));
}
