//! `vramfit table` columns of several GPUs (`2x RTX 3090`), the native-format row of a natively
//! quantized model, the IQ2 rows where they are the only thing that fits, and monotonicity in
//! memory (more memory per column or fewer bits per row never gives less context). Offline.

use std::process::Command;

fn table(args: &[&str]) -> serde_json::Value {
    let dir = std::env::temp_dir().join("vramfit-table-columns-empty-hub");
    let _ = std::fs::create_dir_all(&dir);
    let mut a = vec!["table"];
    a.extend_from_slice(args);
    a.push("--json");
    let o = Command::new(env!("CARGO_BIN_EXE_vramfit"))
        .args(&a)
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HUB_CACHE", &dir)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

fn cell(v: &serde_json::Value, gpu: &str, quant: &str) -> u64 {
    v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["gpu"] == gpu && c["quant"] == quant)
        .unwrap_or_else(|| panic!("no cell {gpu} {quant}"))["max_context"]
        .as_u64()
        .unwrap_or(0)
}

#[test]
fn multi_gpu_columns_last_resort_rows_and_monotonic_memory() {
    let v = table(&[
        "meta-llama/Llama-3.3-70B-Instruct",
        "--gpus",
        "RTX 4090,2x RTX 3090,4x RTX 3090",
    ]);
    let gpus: Vec<&str> = v["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_str().unwrap())
        .collect();
    assert_eq!(gpus.len(), 3);
    assert!(
        gpus[1].starts_with("2x ") && gpus[2].starts_with("4x "),
        "{gpus:?}"
    );
    let quants: Vec<&str> = v["quants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q.as_str().unwrap())
        .collect();
    // 70B Q4_K_M (~40 GiB) needs two 24 GB cards; on one only an IQ2 quant fits
    assert!(cell(&v, gpus[1], "Q4_K_M") > 0 && cell(&v, gpus[0], "Q4_K_M") == 0);
    assert!(quants.iter().any(|q| q.starts_with("IQ2")), "{quants:?}");
    let iq2 = quants.iter().find(|q| q.starts_with("IQ2")).unwrap();
    assert!(cell(&v, gpus[0], iq2) > 0);
    // monotonic: more GPUs never less context; fewer bits never less context
    for q in &quants {
        let row: Vec<u64> = gpus.iter().map(|g| cell(&v, g, q)).collect();
        assert!(row.windows(2).all(|w| w[0] <= w[1]), "{q}: {row:?}");
    }
    for g in &gpus {
        let col: Vec<u64> = quants
            .iter()
            .filter(|q| !q.starts_with("IQ2"))
            .map(|q| cell(&v, g, q))
            .collect();
        assert!(col.windows(2).all(|w| w[0] <= w[1]), "{g}: {col:?}");
    }
}

#[test]
fn a_natively_quantized_model_gets_its_native_row_only() {
    let v = table(&["openai/gpt-oss-20b", "--gpus", "RTX 4060 Ti 16GB,RTX 4090"]);
    let quants: Vec<&str> = v["quants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q.as_str().unwrap())
        .collect();
    assert_eq!(quants, ["MXFP4_MOE"]);
    let g: Vec<&str> = v["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_str().unwrap())
        .collect();
    assert!(cell(&v, g[1], "MXFP4_MOE") >= 65536);
    let v = table(&[
        "openai/gpt-oss-20b",
        "--engine",
        "vllm",
        "--gpus",
        "RTX 4090",
    ]);
    assert_eq!(v["quants"][0], "MXFP4");
}

#[test]
fn several_gpus_per_column_only_for_engines_that_split() {
    let dir = std::env::temp_dir().join("vramfit-table-columns-empty-hub");
    let o = Command::new(env!("CARGO_BIN_EXE_vramfit"))
        .args([
            "table",
            "Qwen/Qwen3-8B",
            "--engine",
            "ollama",
            "--gpus",
            "2x RTX 3090",
        ])
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HUB_CACHE", &dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("llama.cpp and vllm") && e.trim_end().lines().count() == 1,
        "{e}"
    );
}

/// Operators type `--gpu` as `fit` and `check` take it (an expert question found it refused),
/// and an Ollama name plans the model Ollama pulls for that tag (`qwen3:30b` had planned
/// Qwen3-8B: the size tag was read as a GGUF quant and dropped).
#[test]
fn gpu_spelled_as_fit_spells_it_and_ollama_names_keep_their_size() {
    let v = table(&["qwen3:30b", "--gpu", "RTX 4090"]);
    assert_eq!(v["model"], "Qwen/Qwen3-30B-A3B");
    assert_eq!(v["gpus"].as_array().unwrap().len(), 1);
}
