//! `vramfit check` decides as the engine will (issue 11): llama-server's own `--fit` and Ollama on
//! top of it, engine releases read from image tags and pip lines, unified-memory machines.
//! Through the real binary, offline.

use serde_json::Value;

mod common;

fn check(args: &[&str]) -> (i32, Value, String) {
    common::check_cli(&[&["--json"], args].concat())
}

fn lines(j: &Value, key: &str) -> String {
    j[key]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

fn setting(j: &Value, key: &str) -> String {
    // settings: [[key, value], ...] or {key: value}
    match &j["settings"] {
        Value::Array(a) => a
            .iter()
            .find(|kv| kv[0] == key)
            .and_then(|kv| kv[1].as_str())
            .unwrap_or("")
            .to_string(),
        Value::Object(m) => m
            .get(key)
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string(),
        _ => String::new(),
    }
}

#[test]
fn moe_on_a_3060_fits_with_experts_in_host_ram() {
    let (rc, j, err) = check(&[
        "--gpu",
        "RTX 3060",
        "--",
        "llama-server",
        "-hf",
        "unsloth/Qwen3-30B-A3B-Instruct-2507-GGUF:Q4_K_M",
        "--jinja",
    ]);
    assert_eq!(rc, 0, "{err} {j}");
    assert_eq!(j["verdict"], "fits");
    let notes = lines(&j, "notes");
    assert!(notes.contains("lowers the context"), "{notes}");
    assert!(notes.contains("routed experts"), "{notes}");
    assert!(notes.contains("host RAM needed"), "{notes}");
    assert!(notes.contains("speed cost"), "{notes}");
}

#[test]
fn dense_70b_on_a_4090_fits_with_layers_on_the_cpu() {
    let (rc, j, err) = check(&[
        "--gpu",
        "RTX 4090",
        "--",
        "llama-server",
        "-hf",
        "bartowski/Llama-3.3-70B-Instruct-GGUF:Q4_K_M",
    ]);
    assert_eq!(rc, 0, "{err} {j}");
    let notes = lines(&j, "notes");
    assert!(notes.contains("layers on the CPU (-ngl"), "{notes}");
    assert!(j["host"]["weights_bytes"].as_u64().unwrap() > 10 << 30);
}

#[test]
fn fit_off_that_cannot_fit_says_so() {
    let (rc, j, err) = check(&[
        "--gpu",
        "RTX 3060",
        "--",
        "llama-server",
        "-hf",
        "unsloth/Qwen3-30B-A3B-Instruct-2507-GGUF:Q4_K_M",
        "--fit",
        "off",
        "-c",
        "8192",
    ]);
    assert_eq!(rc, 1, "{err} {j}");
    assert_eq!(j["verdict"], "does_not_fit");
    let s = lines(&j, "suggestions");
    assert!(s.contains("drop --fit off"), "{s}");
}

#[test]
fn ollama_gemma3_27b_on_a_3060_fits_in_ollama_words() {
    let (rc, j, err) = check(&["--gpu", "RTX 3060", "--", "ollama", "run", "gemma3:27b"]);
    assert_eq!(rc, 0, "{err} {j}");
    let notes = lines(&j, "notes");
    assert!(notes.contains("num_gpu"), "{notes}");
    // pinned num_gpu: --fit gives up, and the fixes are Ollama options, never llama-server flags
    let (rc, j, _) = check(&[
        "--gpu",
        "RTX 3060",
        "--",
        "ollama",
        "run",
        "gemma3:27b",
        "--num-gpu",
        "63",
    ]);
    assert_eq!(rc, 1);
    let s = lines(&j, "suggestions");
    assert!(s.contains("remove PARAMETER num_gpu"), "{s}");
    for line in s.lines() {
        assert!(
            !line.starts_with('-'),
            "llama-server flag in an Ollama fix: {line}"
        );
        assert!(!line.contains("-ngl"), "{line}");
    }
}

#[test]
fn versions_from_images_and_pip_lines() {
    let (_, j, err) = check(&[
        "--gpu",
        "RTX 4090",
        "--",
        "docker run --gpus all vllm/vllm-openai:v0.10.1 --model Qwen/Qwen3-8B",
    ]);
    assert_eq!(setting(&j, "vllm_version"), "0.10.1", "{err} {j}");
    let (_, j, _) = check(&[
        "--gpu",
        "RTX 4090",
        "--",
        "pip install vllm==0.9.2\nvllm serve Qwen/Qwen3-8B",
    ]);
    assert_eq!(setting(&j, "vllm_version"), "0.9.2", "{j}");
    // --engine-version wins over the image
    let (_, j, _) = check(&[
        "--gpu",
        "RTX 4090",
        "--engine-version",
        "0.11.0",
        "--",
        "docker run vllm/vllm-openai:v0.10.1 --model Qwen/Qwen3-8B",
    ]);
    assert_eq!(setting(&j, "vllm_version"), "0.11.0", "{j}");
    let (_, j, _) = check(&[
        "--gpu",
        "RTX 4090",
        "--",
        "docker run ghcr.io/ggml-org/llama.cpp:server-cuda-b5274 -hf unsloth/Qwen3-8B-GGUF:Q4_K_M -c 8192",
    ]);
    assert_eq!(setting(&j, "build"), "b5274", "{j}");
    let (rc, _, err) = check(&[
        "--gpu",
        "RTX 4090",
        "--",
        "docker run vllm/vllm-openai:banana --model Qwen/Qwen3-8B",
    ]);
    assert_eq!(rc, 2);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("banana") && err.contains("--engine-version"),
        "{err}"
    );
}

#[test]
fn apple_silicon_uses_the_wired_limit_and_refuses_vllm() {
    let (rc, j, err) = check(&[
        "--gpu",
        "M2 Max",
        "--",
        "llama-server",
        "-hf",
        "bartowski/Llama-3.3-70B-Instruct-GGUF:Q4_K_M",
        "-c",
        "8192",
    ]);
    assert_eq!(rc, 0, "{err}");
    // 96 GiB M2 Max: 3/4 = 72 GiB (llama.cpp#3213: recommendedMaxWorkingSetSize 73728 MiB)
    assert_eq!(j["devices"][0]["total_bytes"].as_u64(), Some(72 << 30));
    assert_eq!(j["devices"][0]["overhead_bytes"].as_u64(), Some(0));
    let (_, j, _) = check(&[
        "--gpu",
        "M2 Max",
        "--",
        "sudo sysctl iogpu.wired_limit_mb=90000 && llama-server -hf bartowski/Llama-3.3-70B-Instruct-GGUF:Q4_K_M -c 8192",
    ]);
    assert_eq!(j["devices"][0]["total_bytes"].as_u64(), Some(90000 << 20));
    let (rc, _, err) = check(&["--gpu", "M2 Max", "--", "vllm", "serve", "Qwen/Qwen3-8B"]);
    assert_eq!(rc, 2);
    assert!(err.contains("Metal"), "{err}");
}

#[test]
fn an_unreadable_image_tag_is_fine_with_engine_version() {
    let (rc, j, err) = check(&[
        "--gpu",
        "RTX 4090",
        "--engine-version",
        "0.10.1",
        "--",
        "docker run vllm/vllm-openai:mybuild --model Qwen/Qwen3-8B",
    ]);
    assert!(rc == 0 || rc == 1, "{err}");
    assert_eq!(setting(&j, "vllm_version"), "0.10.1", "{j}");
}

#[test]
fn bad_values_are_one_line_errors() {
    for cmd in [
        "llama-server -hf unsloth/Qwen3-8B-GGUF:Q4_K_M --fit maybe",
        "llama-server -hf unsloth/Qwen3-8B-GGUF:Q4_K_M --fit-target lots",
        "sudo sysctl iogpu.wired_limit_mb=lots && llama-server -hf unsloth/Qwen3-8B-GGUF:Q4_K_M",
        "docker run lmsysorg/sglang:banana python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B",
    ] {
        let (rc, _, err) = check(&["--gpu", "M2 Max", "--", cmd]);
        assert_eq!(rc, 2, "{cmd}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{cmd}: {err}");
    }
}
