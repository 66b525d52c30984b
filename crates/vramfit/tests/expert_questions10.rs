//! Operator questions of the session-10 expert review (docs/expert-review.md), each a command as
//! people paste it, with the answer an expert expects. Offline (catalog models only).

mod common;
use common::cli;

/// `vramfit ARGS` through the real binary, offline, as the human report: exit code and stdout.
fn human(args: &[&str]) -> (i32, String) {
    let tmp = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vramfit"))
        .args(args)
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HOME", tmp.path().join("hf"))
        .env("HF_HUB_CACHE", tmp.path().join("hf/hub"))
        .env("VRAMFIT_CALIBRATION", "off")
        .env("NO_COLOR", "1")
        .current_dir(tmp.path())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}

/// Qwen3.6-35B-A3B has public GGUFs (unsloth, ggml-org) and an Ollama tag: `fit` on a 5090 said
/// "no known GGUF repo" and put bitsandbytes NF4 in vLLM first. It now plans the Q4_K_M file.
#[test]
fn qwen36_moe_plans_its_published_gguf() {
    let (code, v, err) = cli(
        "fit",
        &[
            "Qwen/Qwen3.6-35B-A3B",
            "--gpu",
            "RTX 5090",
            "--ram",
            "64GiB",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let cmds: Vec<String> = v["plans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["command"].to_string())
        .collect();
    assert!(
        cmds[0].contains("llama-server -hf ") && cmds[0].contains("Qwen3.6-35B-A3B-GGUF:Q4_K_M"),
        "{cmds:?}"
    );
    let ollama = v["plans"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["engine"] == "ollama" && p.to_string().contains("FROM qwen3.6:35b-a3b"));
    assert!(ollama, "{cmds:?}");
}

/// The idle-GPU assumption names the tool that reads free memory on that machine: none on a Mac
/// (Metal's working set is said instead), rocm-smi on AMD, `free -m` on a DGX Spark.
#[test]
fn idle_assumption_names_the_machines_own_tool() {
    let (code, out) = human(&["fit", "Qwen/Qwen3-8B", "--gpu", "M3 Max 64GB"]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("nvidia-smi"), "{out}");
    let (_, out) = human(&["fit", "Qwen/Qwen3-8B", "--gpu", "MI300X"]);
    assert!(out.contains("rocm-smi"), "{out}");
    assert!(!out.contains("nvidia-smi"), "{out}");
    let (_, out) = human(&["fit", "Qwen/Qwen3-8B", "--gpu", "DGX Spark"]);
    assert!(out.contains("free -m"), "{out}");
    let (_, out) = human(&[
        "check",
        "--gpu",
        "MI300X",
        "--",
        "vllm",
        "serve",
        "Qwen/Qwen3-8B",
    ]);
    assert!(
        out.contains("rocm-smi") && !out.contains("nvidia-smi"),
        "{out}"
    );
    let (_, out) = human(&["fit", "Qwen/Qwen3-8B", "--gpu", "RTX 4090"]);
    assert!(out.contains("nvidia-smi"), "{out}");
}
