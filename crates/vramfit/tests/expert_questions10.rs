//! Operator questions of the session-10 expert review (docs/expert-review.md), each a command as
//! people paste it, with the answer an expert expects. Offline (catalog models only).

mod common;
use common::cli;

/// `vramfit ARGS` as the human report: exit code and stdout.
fn human(args: &[&str]) -> (i32, String) {
    let out = common::run_offline(args);
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

/// Qwen3-235B on an MI300X: IQ4_XS and Q4_K_M both rate "good" and both reach the model's 256k.
/// IQ4_XS ranked first as the smaller, faster file; an operator runs Q4_K_M (the common
/// default; i-quants decode slower on Metal, the CPU and AMD). The K-quant now ranks first and
/// the i-quant's plan says why.
#[test]
fn k_quant_ranks_before_an_i_quant_of_the_same_tier_and_context() {
    let (code, v, err) = cli(
        "fit",
        &[
            "Qwen/Qwen3-235B-A22B-Instruct-2507",
            "--gpu",
            "MI300X",
            "--engine",
            "llama.cpp",
            "--ram",
            "256GiB",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let plans = v["plans"].as_array().unwrap();
    let formats: Vec<&str> = plans
        .iter()
        .map(|p| p["weight_format"].as_str().unwrap())
        .collect();
    let k = formats.iter().position(|f| *f == "Q4_K_M").unwrap();
    let i = formats.iter().position(|f| *f == "IQ4_XS").unwrap();
    assert!(k < i, "{formats:?}");
    assert_eq!(plans[k]["max_model_len"], plans[i]["max_model_len"]);
    let why = plans[i]["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["knob"] == "quant")
        .unwrap()["why"]
        .to_string();
    assert!(
        why.contains("i-quant") && why.contains("common default"),
        "{why}"
    );
}
