//! `vramfit check` on the commands people run Gemma 4 with, offline (the models resolve from the
//! embedded catalog). Cache sizes are worked out by hand from the config.json values in the
//! comments; weights are held against the safetensors the Hugging Face repos hold.

use serde_json::Value;

mod common;

use common::GIB;

fn weights_gib(j: &Value) -> f64 {
    j["devices"][0]["weights_bytes"].as_f64().unwrap() / GIB
}

#[test]
fn gemma_4_31b_on_a_4090_under_vllm_is_refused_for_its_weights() {
    let (rc, j, err) = common::check_on(
        "RTX 4090",
        "vllm serve google/gemma-4-31B-it --max-model-len 32768",
    );
    assert_eq!(rc, 1, "{err}");
    assert_eq!(j["model"]["id"], "google/gemma-4-31B-it");
    assert_eq!(j["verdict"], "does_not_fit");
    // 10 full layers x 4 KV heads x 512 x (K + V) x 2 bytes; the 50 sliding layers hold a window
    assert_eq!(j["kv_cache"]["bytes_per_token"], 10 * 4 * 512 * 2 * 2);
    // the repo's safetensors are 58.25 GiB; vLLM also allocates V projections for the 10 K = V
    // layers (10 x 4 x 512 x 5376 x 2 bytes = 0.41 GiB)
    let w = weights_gib(&j);
    assert!((58.25..59.5).contains(&w), "weights {w:.2} GiB");
}

#[test]
fn gemma_4_e4b_fits_a_4090_under_vllm_with_its_shared_layers_uncached() {
    let (rc, j, err) = common::check_on(
        "RTX 4090",
        "vllm serve google/gemma-4-E4B-it --max-model-len 32768",
    );
    assert_eq!(rc, 0, "{err}");
    assert_eq!(j["verdict"], "fits");
    // 4 of the 7 full layers keep a cache (the last 18 layers share): 4 x 2 x 512 x 2 x 2 bytes
    assert_eq!(j["kv_cache"]["bytes_per_token"], 4 * 2 * 512 * 2 * 2);
    // safetensors 14.89 GiB, per-layer embeddings included (vLLM keeps them on the GPU)
    let w = weights_gib(&j);
    assert!((14.6..15.4).contains(&w), "weights {w:.2} GiB");
}

#[test]
fn gemma_4_26b_a4b_gguf_under_llama_server() {
    let (rc, j, err) = common::check_on(
        "RTX 4090",
        "llama-server -hf unsloth/gemma-4-26B-A4B-it-GGUF:Q4_K_M -c 32768",
    );
    assert_eq!(rc, 0, "{err}");
    assert_eq!(j["model"]["id"], "google/gemma-4-26B-A4B-it");
    // full layers: 32768 cells x 5 layers x 2 heads x 512 x (K + V) x 2 bytes = 640 MiB;
    // sliding layers (llama-kv-cache-iswa): PAD(1024 x 4 slots + 512 ubatch, 256) = 4608 cells
    // x 25 layers x 8 x 256 x 2 x 2 bytes = 900 MiB
    let full = 32768u64 * 5 * 2 * 512 * 2 * 2;
    let swa = 4608u64 * 25 * 8 * 256 * 2 * 2;
    assert_eq!(j["kv_cache"]["bytes"].as_u64().unwrap(), full + swa);
}

#[test]
fn ollama_tags_of_gemma_4_and_qwen3_5_resolve() {
    let (rc, j, err) = common::check_on("RTX 4090", "ollama run gemma4:26b");
    assert_eq!(rc, 0, "{err}");
    assert_eq!(j["model"]["id"], "google/gemma-4-26B-A4B-it");
    assert_eq!(j["kv_cache"]["bytes_per_token"], 5 * 2 * 512 * 2 * 2);

    let (rc, j, err) = common::check_on("RTX 4090", "ollama run gemma4");
    assert_eq!(rc, 0, "{err}");
    assert_eq!(j["model"]["id"], "google/gemma-4-E4B-it");

    let (rc, j, err) = common::check_on("RTX 4090", "ollama run qwen3.5:27b");
    assert!(rc == 0 || rc == 1, "{err}");
    assert_eq!(j["model"]["id"], "Qwen/Qwen3.5-27B");

    // the default qwen3.5 tag is a size the catalog lacks: a one-line refusal, exit 2
    let (rc, _, err) = common::check_on("RTX 4090", "ollama run qwen3.5");
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("qwen3.5"), "{err}");
}

#[test]
fn gemma_4_12b_cache_matches_the_measured_llama_cpp_sweep() {
    // dev measurement code_gemma4_12b_qat_udq4kxl_8gb_laptop_np_kvtype_sweep (llama-server, 8 GB
    // laptop GPU, flash attention): the KV buffers llama.cpp printed, in MiB
    for (extra, measured_mib) in [
        (&[][..], 833.0),                          // G1: auto slots (4), q8_0, ctx 8192
        (&["-np", "1"][..], 323.0),                // G2
        (&["-np", "1", "-c", "16384"][..], 391.0), // G9
        (&["-np", "1", "-c", "4096"][..], 289.0),  // G3
    ] {
        let line = format!(
            "llama-server -hf google/gemma-4-12B-it -c 8192 -ctk q8_0 -ctv q8_0 -fa on {}",
            extra.join(" ")
        );
        let (_, j, err) = common::check_on("RTX 4060 Laptop", &line);
        let mib = j["kv_cache"]["bytes"]
            .as_f64()
            .unwrap_or_else(|| panic!("{err}"))
            / 1048576.0;
        assert!(
            (mib - measured_mib).abs() < 1.0,
            "{extra:?}: {mib:.1} vs {measured_mib} MiB"
        );
    }
    // G5: q4_0 cache, one slot
    let (_, j, err) = common::check_on(
        "RTX 4060 Laptop",
        "llama-server -hf google/gemma-4-12B-it -c 8192 -ctk q4_0 -ctv q4_0 -fa on -np 1",
    );
    let mib = j["kv_cache"]["bytes"]
        .as_f64()
        .unwrap_or_else(|| panic!("{err}"))
        / 1048576.0;
    assert!((mib - 171.0).abs() < 1.0, "G5: {mib:.1} MiB");
}
