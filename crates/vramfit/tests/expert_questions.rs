//! Operator questions of the session-9 expert review (docs/expert-review.md), each a command as
//! people paste it, with the answer an expert expects. Offline (catalog models only).

mod common;
use common::cli;

/// Every command of a `fit --json` answer, as one string each.
fn commands(v: &serde_json::Value) -> Vec<String> {
    v["plans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["command"].to_string())
        .collect()
}

/// Kimi K2's tokenizer is Python code in the repo: vLLM and SGLang need --trust-remote-code, or
/// the printed command stops at load (an expert question found it missing).
#[test]
fn kimi_k2_plans_trust_the_repos_tokenizer_code() {
    let (code, v, err) = cli(
        "fit",
        &[
            "moonshotai/Kimi-K2-Thinking",
            "--gpu",
            "8x H200",
            "--engine",
            "vllm,sglang",
            "--ram",
            "2TiB",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let cmds = commands(&v);
    assert!(cmds.len() >= 2, "{cmds:?}");
    for c in &cmds {
        assert!(c.contains("--trust-remote-code"), "{c}");
    }
    // other models' commands stay as they were
    let (_, v, _) = cli(
        "fit",
        &[
            "Qwen/Qwen3-8B",
            "--gpu",
            "RTX 4090",
            "--engine",
            "vllm",
            "--json",
        ],
    );
    assert!(commands(&v)
        .iter()
        .all(|c| !c.contains("trust-remote-code")));
}

/// `ollama run gpt-oss:120b-cloud` runs on Ollama's servers: no local plan, one line saying so.
#[test]
fn ollama_cloud_tags_are_not_planned_on_the_local_gpu() {
    let (code, _, err) = cli(
        "check",
        &[
            "--gpu",
            "RTX 4090",
            "--",
            "ollama",
            "run",
            "gpt-oss:120b-cloud",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("Ollama Cloud") && err.contains("no local VRAM"),
        "{err}"
    );
    assert!(err.contains("'gpt-oss:120b'"), "{err}");
    let (code, _, err) = cli("fit", &["qwen3-coder:480b-cloud", "--gpu", "RTX 4090"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("Ollama Cloud"), "{err}");
}

/// The names `fit` prints are names `check` takes: `fit` offers `FROM qwen3-coder:30b`, and
/// `ollama run qwen3-coder:30b` was refused as unknown.
#[test]
fn ollama_names_fit_prints_are_checked() {
    let (code, v, err) = cli(
        "check",
        &[
            "--gpu",
            "RTX 4090",
            "--json",
            "--",
            "ollama",
            "run",
            "qwen3-coder:30b",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["model"]["id"], "Qwen/Qwen3-Coder-30B-A3B-Instruct");
    let (code, v, err) = cli("fit", &["qwen3-coder-30b", "--gpu", "RTX 4090", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        v["plans"][0]["command"]
            .to_string()
            .contains("Qwen3-Coder-30B-A3B-Instruct"),
        "{}",
        v["plans"][0]["command"]
    );
}
