//! `probe` on tensor-parallel vLLM: a stub `vllm` replays the startup lines of real TP logs
//! (tests/fixtures/vllm_tp_logs.jsonl: every dev-set vLLM log with TP × PP > 1 that shows its
//! KV memory, verbatim) and probe must read the ranks, take the binding one, find the boundary
//! in at most 2 launches and leave nothing running. No GPU needed: `--gpu`/`--gpu-free` stand
//! in for NVML where the GPUs matter.

use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

const GIB: f64 = 1073741824.0;

fn records() -> Vec<Value> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vllm_tp_logs.jsonl");
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A `vllm` that prints `excerpt` and comes up when `--max-model-len` ≤ `cap`, else exits 1
/// (what vLLM does at its KV check). Its `sleep` carries a value only this test uses.
fn stub(dir: &Path, excerpt: &str, cap: u64, nap: &str) -> std::path::PathBuf {
    let log = dir.join("startup.log");
    std::fs::write(&log, excerpt).unwrap();
    let stub = dir.join("vllm");
    std::fs::write(
        &stub,
        format!(
            "#!/bin/sh\nprev=; len=0\nfor a in \"$@\"; do [ \"$prev\" = --max-model-len ] && len=$a; prev=$a; done\n\
             cat '{}' >&2\nif [ \"$len\" -gt {cap} ]; then exit 1; fi\n\
             echo 'INFO:     Application startup complete.'\nexec sleep {nap}\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    stub
}

fn sleeping(nap: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read_to_string(e.path().join("cmdline"))
            .is_ok_and(|c| c == format!("sleep\u{0}{nap}\u{0}"))
    })
}

fn probe(pre: &[&str], env: &[&str], stub: &Path, rest: &[String]) -> (i32, Value, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_vramfit"));
    c.args(["probe", "--json", "--timeout", "30"])
        .args(pre)
        .arg("--");
    c.args(env).arg(stub).args(rest);
    let out = c.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn probe_reads_every_rank_of_real_tp_logs_and_finds_the_boundary_in_two_launches() {
    let recs = records();
    assert!(recs.len() >= 6, "{} TP logs", recs.len());
    for (k, r) in recs.iter().enumerate() {
        let id = r["id"].as_str().unwrap();
        let tp = r["tensor_parallel_size"].as_u64().unwrap();
        let ok = r["outcome"] == "ok";
        // the engine's boundary: the KV cache's tokens, or its estimate on a refusal
        let cap = if ok {
            r["kv_cache_tokens"].as_u64().unwrap()
        } else {
            r["error_estimated_max_model_len"].as_u64().unwrap()
        };
        let dir = tempfile::tempdir().unwrap();
        let nap = format!("297.{}{k}", std::process::id() % 1000);
        let s = stub(dir.path(), r["raw_excerpt"].as_str().unwrap(), cap, &nap);
        let len = r["max_model_len"].as_u64().unwrap();
        let rest: Vec<String> = [
            "serve",
            r["model"].as_str().unwrap(),
            "--tensor-parallel-size",
            &tp.to_string(),
            "--max-model-len",
            &len.to_string(),
        ]
        .iter()
        .map(|x| x.to_string())
        .collect();
        let (code, rep, err) = probe(&[], &[], &s, &rest);
        assert_eq!(code, 0, "{id}: {err}");
        assert!(rep["launches"].as_u64().unwrap() <= 2, "{id}: {rep}");
        assert_eq!(rep["group"]["ranks"]["tp"], tp, "{id}");
        // the boundary is the engine's, in vLLM's 16-token blocks, and no longer than the
        // model's own maximum when the model resolves offline (the catalog); a launch that came
        // up at the length asked keeps it when the boundary is not above it
        let model_max = rep["model_max_len"].as_u64().unwrap_or(u64::MAX);
        let b = (cap / 16 * 16).min(model_max);
        let want = if !ok || b > len { b } else { len };
        assert_eq!(rep["verified_context"], want, "{id}: {rep}");
        // the binding rank is the worker that printed the available KV memory, with its number
        let a0 = &rep["attempts"][0];
        let ranks = a0["ranks"].as_array().unwrap();
        let bind = ranks
            .iter()
            .filter(|x| x["available_kv_bytes"].is_i64())
            .min_by_key(|x| x["available_kv_bytes"].as_i64())
            .unwrap();
        let gib = bind["available_kv_bytes"].as_i64().unwrap() as f64 / GIB;
        let want_gib = r["available_kv_cache_gib"].as_f64().unwrap();
        assert!((gib - want_gib).abs() < 0.006, "{id}: {gib} vs {want_gib}");
        if ranks.len() > 1 {
            assert_eq!(a0["binding_rank"], bind["rank"], "{id}");
        }
        let held = ranks.iter().filter_map(|x| x["kv_tokens"].as_u64()).min();
        if ok {
            assert_eq!(held, Some(cap), "{id}");
        }
        assert!(!sleeping(&nap), "{id}: the stub engine was left running");
        eprintln!(
            "{id}: TP {tp}, {} launch(es), verified {want} (model max {}), binding {} at {gib:.2} GiB",
            rep["launches"], rep["model_max_len"], bind["rank"]
        );
    }
}

#[test]
fn probe_reads_the_gpus_cuda_visible_devices_gives_the_tp_group() {
    // vllm-h2-010: 8 x H200 NVL (143771 MiB), CUDA_VISIBLE_DEVICES=1,7, TP 2, utilization 0.78;
    // GPU 1 had 141773 MiB free (the log); GPU 7's free memory is set here
    let r = records()
        .into_iter()
        .find(|r| r["id"] == "vllm-h2-010")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let nap = format!("296.{}", std::process::id() % 1000);
    let s = stub(dir.path(), r["raw_excerpt"].as_str().unwrap(), 90841, &nap);
    let rest: Vec<String> = "serve deepseek-ai/DeepSeek-V4-Flash --max-model-len 4096 --tensor-parallel-size 2 --gpu-memory-utilization 0.78"
        .split(' ')
        .map(String::from)
        .collect();
    let free = |g7: &str| format!("1000MiB,141773MiB,1000MiB,1000MiB,1000MiB,1000MiB,1000MiB,{g7}");
    let gpus = ["--gpu", "8x 143771MiB", "--gpu-free"];
    let f = free("120000MiB");
    let (code, rep, err) = probe(
        &[gpus[0], gpus[1], gpus[2], &f],
        &["CUDA_VISIBLE_DEVICES=1,7"],
        &s,
        &rest,
    );
    assert_eq!(code, 0, "{err}");
    let idx: Vec<u64> = rep["group"]["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["index"].as_u64().unwrap())
        .collect();
    assert_eq!(idx, vec![1, 7], "{rep}");
    assert_eq!(rep["group"]["binding_gpu"], 7);
    // GPU 7 below 0.78 × 143771 MiB: vLLM would refuse; probe says so without a launch
    let f = free("100000MiB");
    let (code, rep, err) = probe(
        &[gpus[0], gpus[1], gpus[2], &f],
        &["CUDA_VISIBLE_DEVICES=1,7"],
        &s,
        &rest,
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(rep["launches"], 0, "{rep}");
    let note = rep["notes"][0].as_str().unwrap();
    assert!(
        note.contains("GPU 7") && note.contains("--gpu-memory-utilization 0.69"),
        "{note}"
    );
    // more ranks than visible GPUs: one line, exit 2, nothing launched
    let (code, _, err) = probe(&[gpus[0], gpus[1]], &["CUDA_VISIBLE_DEVICES=1"], &s, &rest);
    assert_eq!(code, 2);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("needs 2 GPUs"), "{err}");
    assert!(!sleeping(&nap));
}

#[test]
fn probe_reads_the_ranks_of_a_real_sglang_tp8_log() {
    // sglang#11716: eight TP ranks, each printing `KV Cache is allocated. #tokens: 2795207`
    // (the excerpt shows four of them); a stub `sglang` replays it and comes up at a context
    // length within that capacity
    let log = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/logs/sglang_tp8_kv.log");
    let dir = tempfile::tempdir().unwrap();
    let nap = format!("294.{}", std::process::id() % 1000);
    let stub = dir.path().join("sglang");
    std::fs::write(
        &stub,
        format!(
            "#!/bin/sh\nprev=; len=0\nfor a in \"$@\"; do [ \"$prev\" = --context-length ] && len=$a; prev=$a; done\n\
             cat '{}' >&2\nif [ \"$len\" -gt 2795207 ]; then exit 1; fi\n\
             echo 'The server is fired up and ready to roll!'\nexec sleep {nap}\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    // a model the catalog knows: the relaunch stops at its own maximum (40960), which SGLang
    // would not let the context pass
    let rest: Vec<String> = "serve --model-path Qwen/Qwen3-235B-A22B --tp 8 --context-length 32768"
        .split(' ')
        .map(String::from)
        .collect();
    let (code, rep, err) = probe(&[], &[], &stub, &rest);
    assert_eq!(code, 0, "{err}");
    assert_eq!(rep["engine"], "sglang");
    assert_eq!(rep["group"]["ranks"]["tp"], 8);
    assert_eq!(rep["launches"], 2, "{rep}");
    assert_eq!(rep["model_max_len"], 40960, "{rep}");
    assert_eq!(rep["verified_context"], 40960, "{rep}");
    // one the catalog does not know: the KV capacity is the boundary
    let rest: Vec<String> = "serve --model-path /models/local-tp8 --tp 8 --context-length 32768"
        .split(' ')
        .map(String::from)
        .collect();
    let (code, rep, err) = probe(&[], &[], &stub, &rest);
    assert_eq!(code, 0, "{err}");
    assert_eq!(rep["verified_context"], 2795207, "{rep}");
    let ranks: Vec<&str> = rep["attempts"][0]["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rank"].as_str().unwrap())
        .collect();
    assert_eq!(ranks, vec!["TP5", "TP1", "TP3", "TP6"], "{rep}");
    assert!(!sleeping(&nap));
}
