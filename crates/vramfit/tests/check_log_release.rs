//! `check --from-log LOG -- <command>`: the release the log's own startup line states selects the
//! release modelled, and a different release named by the command (image tag, `pip install`
//! line) is reported as a conflict. Real logs: fixtures/logs/ (SOURCES.md) and real Ollama
//! server lines (code-index ids in each test).

use serde_json::Value;
use std::path::PathBuf;

mod common;

fn log(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/logs")
        .join(name)
        .display()
        .to_string()
}

fn notes(j: &Value) -> String {
    j["notes"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

fn setting(j: &Value, key: &str) -> String {
    match &j["settings"] {
        Value::Array(a) => a
            .iter()
            .find(|kv| kv[0] == key)
            .and_then(|kv| kv[1].as_str())
            .unwrap_or("")
            .to_string(),
        Value::Object(m) => m.get(key).and_then(Value::as_str).unwrap_or("").to_string(),
        _ => String::new(),
    }
}

const GLM: &str = "bartowski/THUDM_GLM-Z1-32B-0414-GGUF:IQ4_XS";

/// llama.cpp b5274's log (`build: 5274 (d541533a)`), the command in an image of b6000.
fn glm(extra: &[&str], command_prefix: &[&str]) -> (i32, Value, String) {
    let l = log("llamacpp-b5274-glm-z1-32b-iq4xs-3090ti.log");
    let mut a = vec!["--json", "--from-log", l.as_str()];
    a.extend_from_slice(extra);
    a.push("--");
    a.extend_from_slice(command_prefix);
    a.extend_from_slice(&["-hf", GLM, "-c", "32768", "-fa", "-ngl", "99"]);
    let a: Vec<&str> = a.to_vec();
    common::check_cli(&a)
}

#[test]
fn the_llama_cpp_build_comes_from_the_logs_startup_line() {
    let (rc, j, err) = glm(&[], &["llama-server"]);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(setting(&j, "build"), "b5274", "{j}");
    let n = notes(&j);
    assert!(
        n.contains("engine release b5274 read from the log's startup line `build: 5274 (d541533a)"),
        "{n}"
    );
    assert!(!n.contains("conflict"), "{n}");
}

#[test]
fn an_image_of_another_build_is_a_reported_conflict() {
    let image = "ghcr.io/ggml-org/llama.cpp:server-cuda-b6000";
    let (rc, j, err) = glm(&[], &["docker", "run", "--gpus", "all", image]);
    assert_eq!(rc, 0, "{err}");
    // the log's release is the one that ran, so it is the one modelled
    assert_eq!(setting(&j, "build"), "b5274", "{j}");
    let n = notes(&j);
    assert!(
        n.contains(&format!(
            "conflict: the command's image {image} names b6000, but the log ran b5274"
        )),
        "{n}"
    );
    // the same build in the image: no conflict
    let (rc, j, _) = glm(
        &[],
        &[
            "docker",
            "run",
            "ghcr.io/ggml-org/llama.cpp:server-cuda-b5274",
        ],
    );
    assert_eq!(rc, 0);
    assert!(!notes(&j).contains("conflict"), "{}", notes(&j));
}

#[test]
fn engine_version_given_wins_over_the_log_and_says_so() {
    let (rc, j, err) = glm(&["--engine-version", "b6000"], &["llama-server"]);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(setting(&j, "build"), "b6000", "{j}");
    let n = notes(&j);
    assert!(
        n.contains("--engine-version b6000 is used, not the b5274 of the log's startup line"),
        "{n}"
    );
}

/// An Ollama server log: only its release is read (calibrate reads no Ollama logs). The lines
/// are real (code-index id 46549402413: Ollama 0.16.1 on Linux).
fn ollama_log(dir: &std::path::Path, version: &str) -> String {
    let text = format!(
        "time=2026-02-21T14:13:56.331-06:00 level=INFO source=images.go:480 msg=\"total unused blobs removed: 0\"\n\
         time=2026-02-21T14:13:56.331-06:00 level=INFO source=routes.go:1689 msg=\"Listening on 127.0.0.1:11434 (version {version})\"\n\
         time=2026-02-21T14:13:56.335-06:00 level=INFO source=runner.go:67 msg=\"discovering available GPUs...\"\n"
    );
    let p = dir.join("server.log");
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn the_ollama_release_comes_from_its_listening_line() {
    let tmp = tempfile::tempdir().unwrap();
    let l = ollama_log(tmp.path(), "0.16.1");
    let (rc, j, err) = common::check_cli(&[
        "--json",
        "--gpu",
        "RTX 3090",
        "--from-log",
        &l,
        "--",
        "ollama",
        "run",
        "gemma3:12b",
    ]);
    assert!(rc == 0 || rc == 1, "{err}");
    let n = notes(&j);
    assert!(
        n.contains("engine release 0.16.1 read from the log's startup line"),
        "{n}"
    );
    // the image says 0.30.0: reported, the log's release modelled
    let (_, j, err) = common::check_cli(&[
        "--json", "--gpu", "RTX 3090", "--from-log", &l, "--",
        "docker run -d --gpus=all -p 11434:11434 --name ollama ollama/ollama:0.30.0 && docker exec -it ollama ollama run gemma3:12b",
    ]);
    let n = notes(&j);
    assert!(
        n.contains("conflict: the command's image ollama/ollama:0.30.0 names 0.30.0, but the log ran 0.16.1"),
        "{n} {err}"
    );
    // a source build (0.0.0) names no release: nothing is claimed
    let l = ollama_log(tmp.path(), "0.0.0");
    let (_, j, err) = common::check_cli(&[
        "--json",
        "--gpu",
        "RTX 3090",
        "--from-log",
        &l,
        "--",
        "ollama",
        "run",
        "gemma3:12b",
    ]);
    assert!(
        !notes(&j).contains("read from the log"),
        "{} {err}",
        notes(&j)
    );
}

#[test]
fn a_log_of_another_engine_for_an_ollama_command_is_refused() {
    let l = log("vllm-0.10.1-qwen2-7b-tp2-a100.log");
    let (rc, _, err) = common::check_cli(&[
        "--gpu",
        "RTX 3090",
        "--from-log",
        &l,
        "--",
        "ollama",
        "run",
        "gemma3:12b",
    ]);
    assert_eq!(rc, 2, "{err}");
    assert!(
        err.contains("is a vllm log, the command runs ollama"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
