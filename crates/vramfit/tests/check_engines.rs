//! `vramfit check` on Ollama, SGLang and transformers commands, through the real binary, offline
//! (an empty HF cache: catalog models resolve from the embedded catalog).

use serde_json::Value;

mod common;

fn check(args: &[&str]) -> (i32, Value, String) {
    common::check_cli(args)
}

#[test]
fn ollama_library_tag_on_a_4090() {
    let (rc, j, err) = check(&[
        "--json",
        "--gpu",
        "RTX 4090",
        "--",
        "OLLAMA_NUM_PARALLEL=2",
        "ollama",
        "run",
        "llama3.1:8b",
    ]);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(j["engine"], "ollama");
    assert_eq!(j["model"]["id"], "meta-llama/Llama-3.1-8B-Instruct");
    // 24 GiB → num_ctx 32768, two slots → 65536 cells of 128 KiB (f16)
    assert_eq!(j["kv_cache"]["tokens"], 65536);
    assert_eq!(j["kv_cache"]["bytes"], 65536u64 * 131072);
    assert_eq!(j["devices"].as_array().unwrap().len(), 1);
    let w = j["devices"][0]["weights_bytes"].as_u64().unwrap();
    assert!(
        w > 4_000_000_000 && w < 5_200_000_000,
        "Q4_K_M 8B on the GPU: {w}"
    );
}

#[test]
fn ollama_unknown_tag_is_one_line() {
    let (rc, _, err) = check(&["--gpu", "RTX 4090", "--", "ollama", "run", "frobnitz:7b"]);
    assert_eq!(rc, 2);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("frobnitz:7b") && err.contains("hf.co/"),
        "{err}"
    );
}

#[test]
fn sglang_pool_on_h100s() {
    let (rc, j, err) = check(&[
        "--json",
        "--gpu",
        "2x H100",
        "--",
        "python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "Qwen/Qwen3-8B",
        "--tp",
        "2",
        "--mem-fraction-static",
        "0.85",
    ]);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(j["engine"], "sglang");
    assert_eq!(j["devices"].as_array().unwrap().len(), 2);
    // 36 layers × 4 KV heads per rank × 256 × 2 bytes per token
    assert_eq!(j["kv_cache"]["bytes_per_token"], 36 * 4 * 256 * 2);
    let tokens = j["kv_cache"]["tokens"].as_u64().unwrap();
    assert!(tokens > 500_000, "{tokens}");
    assert_eq!(j["max_model_len"], 40960);
}

#[test]
fn transformers_generate_does_not_fit_then_fits_in_4bit() {
    let base = [
        "--json",
        "--gpu",
        "RTX 3060",
        "--",
        "transformers",
        "Qwen/Qwen3-8B",
        "--dtype",
        "bf16",
        "--batch-size",
        "2",
        "--prompt-tokens",
        "2048",
        "--max-new-tokens",
        "256",
    ];
    let (rc, j, err) = check(&base);
    assert_eq!(rc, 1, "{err}");
    assert_eq!(j["verdict"], "does_not_fit");
    assert!(!j["suggestions"].as_array().unwrap().is_empty());
    let mut q = base.to_vec();
    q.push("--load-in-4bit");
    let (rc, j, err) = check(&q);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(j["engine"], "transformers");
    assert_eq!(j["kv_cache"]["tokens"], 2 * 2304);
}
