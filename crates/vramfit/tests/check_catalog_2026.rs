//! `vramfit check` on commands that serve the 2026 catalog models, offline (an empty HF cache:
//! the models resolve from the embedded catalog). Bytes per token are written out from each
//! model's config.json; the two measured figures come from the dev logs named beside them.

use serde_json::Value;

mod common;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

fn check(args: &[&str]) -> (i32, Value, String) {
    common::check_cli(args)
}

fn dev(j: &Value, i: usize, key: &str) -> f64 {
    j["devices"][i][key].as_f64().unwrap()
}

#[test]
fn qwen3_5_27b_on_a_5090_is_refused_for_its_weights() {
    // the operator's case: a 27B BF16 checkpoint (49.9 GiB) on a 32 GB card
    let (rc, j, err) = common::check_on("RTX 5090", "vllm serve Qwen/Qwen3.5-27B");
    assert_eq!(rc, 1, "{err}");
    assert_eq!(j["model"]["id"], "Qwen/Qwen3.5-27B");
    assert_eq!(j["verdict"], "does_not_fit");
    // 16 full-attention layers x K and V x 4 KV heads x 256 x 2 bytes
    assert_eq!(j["kv_cache"]["bytes_per_token"], 16 * 2 * 4 * 256 * 2);
    let w = dev(&j, 0, "weights_bytes") / GIB;
    assert!((49.0..52.0).contains(&w), "weights {w:.2} GiB");
    assert!(!j["problems"].as_array().unwrap().is_empty());
}

#[test]
fn qwen3_5_35b_a3b_tp4_matches_the_logged_weights() {
    // vllm-log-022 (vllm#50722): Qwen3.5-35B-A3B BF16, TP4 on 80 GB H100s, utilization 0.85:
    // "16.92 GiB for weight" per GPU, which includes the DFlash drafter the issue runs beside it
    let (rc, j, err) = common::check_on(
        "4x H100",
        "vllm serve Qwen/Qwen3.5-35B-A3B -tp 4 --gpu-memory-utilization 0.85",
    );
    assert_eq!(rc, 0, "{err}");
    let w = dev(&j, 0, "weights_bytes") / GIB;
    assert!(
        w < 16.92 && w > 16.92 * 0.95,
        "{w:.2} GiB vs the log's 16.92"
    );
    // 10 full-attention layers x K and V x 2 KV heads x 256 x 2 bytes, on each of 4 ranks
    // (2 KV heads over TP 4: each rank keeps one head)
    let per_token = j["kv_cache"]["bytes_per_token"].as_u64().unwrap();
    assert_eq!(per_token, 4 * 10 * 2 * 256 * 2);
}

#[test]
fn minimax_m2_5_tp4_on_h200s_carries_its_fp8_weights() {
    let (rc, j, err) = common::check_on(
        "4x H200",
        "vllm serve MiniMaxAI/MiniMax-M2.5 -tp 4 --max-model-len 131072",
    );
    assert_eq!(rc, 0, "{err}");
    // 62 layers x K and V x 8 KV heads x 128 x 2 bytes (2 heads per rank at TP 4)
    assert_eq!(j["kv_cache"]["bytes_per_token"], 62 * 2 * 8 * 128 * 2);
    // the released files hold 214.32 GiB of tensors (MiniMax-M2.7's identical layout, code-index
    // id 62693775865); a quarter of that per rank, plus the replicated norms and router
    let w = dev(&j, 0, "weights_bytes") / GIB;
    assert!(
        (214.32 / 4.0 * 0.98..214.32 / 4.0 * 1.03).contains(&w),
        "{w:.2}"
    );
}

#[test]
fn mla_models_cache_one_latent_per_rank() {
    // vLLM keeps the whole 576-value MLA latent on every tensor-parallel rank
    for (gpu, model, tp, layers) in [
        ("8x H200", "moonshotai/Kimi-K2.5", "8", 61u64),
        ("H100", "zai-org/GLM-4.7-Flash", "1", 47),
    ] {
        let (rc, j, err) = check(&[
            "--json",
            "--gpu",
            gpu,
            "--",
            "vllm",
            "serve",
            model,
            "-tp",
            tp,
            "--max-model-len",
            "65536",
        ]);
        assert_eq!(rc, 0, "{model}: {err}");
        let tp: u64 = tp.parse().unwrap();
        assert_eq!(
            j["kv_cache"]["bytes_per_token"].as_u64().unwrap(),
            tp * layers * (512 + 64) * 2,
            "{model}"
        );
    }
    // Kimi-K2.5: INT4 routed experts, 553 GiB over 8 ranks
    let (_, j, _) = common::check_on("8x H200", "vllm serve moonshotai/Kimi-K2.5 -tp 8");
    let w = dev(&j, 0, "weights_bytes") / GIB;
    assert!((65.0..75.0).contains(&w), "Kimi-K2.5 per rank {w:.2} GiB");
}

#[test]
fn bf16_flagships_that_do_not_fit_say_so() {
    // GLM-4.7 BF16 (355B) needs ~83 GiB per rank at TP 8: more than an H100 holds
    let (rc, j, err) = common::check_on("8x H100", "vllm serve zai-org/GLM-4.7 -tp 8");
    assert_eq!(rc, 1, "{err}");
    // 92 layers x K and V x 8 KV heads x 128 x 2 bytes, one KV head on each of the 8 ranks
    assert_eq!(j["kv_cache"]["bytes_per_token"], 92 * 2 * 8 * 128 * 2);
    assert!(dev(&j, 0, "weights_bytes") / GIB > 80.0);
}

#[test]
fn qwen3_5_gguf_on_a_5090_with_llama_cpp() {
    let (rc, j, err) = common::check_on(
        "RTX 5090",
        "llama-server -hf unsloth/Qwen3.5-35B-A3B-GGUF:Q4_K_M -c 65536 -ngl 99 -fa on",
    );
    assert_eq!(rc, 0, "{err}");
    assert_eq!(j["model"]["id"], "Qwen/Qwen3.5-35B-A3B");
    // 65536 cells of 10 full-attention layers x 2 x 2 KV heads x 256 x f16, plus the f32
    // recurrent state of the 30 Gated DeltaNet layers for each of llama-server's 4 slots:
    // conv (4 - 1) x (2 x 16 x 128 + 32 x 128) and state 32 x 128 x 128 per layer
    let state = 30u64 * (3 * (2 * 16 * 128 + 32 * 128) + 32 * 128 * 128) * 4;
    assert_eq!(
        j["kv_cache"]["bytes"],
        65536u64 * 10 * 2 * 2 * 256 * 2 + 4 * state
    );
    // unsloth's Q4_K_M file is 22.92 GB (code-index 69759639649); the predicted tensor types
    // land within 10 % of it
    let w = dev(&j, 0, "weights_bytes") / 1e9;
    assert!((20.6..25.3).contains(&w), "{w:.2} GB");
}
