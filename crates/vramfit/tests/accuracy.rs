//! Accuracy harness: every dev case (real engine logs with measured memory; facts carried in
//! fixtures/dev_cases.jsonl from ../shared/data/dev/cases_check.dev.jsonl) run through the real
//! `vramfit check --json` binary exactly as ../shared/bin/eval-check runs it (a fresh offline HF
//! cache holding the case's config.json), compared per component with the same tolerance
//! classes, with the error distribution printed:
//!
//!     cargo test -p vramfit --release --test accuracy -- --nocapture
//!
//! The assertions pin the bars the project has reached, so a regression fails the build.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const MIB: f64 = (1u64 << 20) as f64;
const GIB: f64 = (1u64 << 30) as f64;

fn tolerance(class: &str) -> (f64, f64) {
    match class {
        "exact" => (0.005, 0.0),
        "weights_predicted" => (0.05, 0.0),
        "compute" => (0.15, 64.0 * MIB),
        "weights" => (0.03, 0.0),
        "available_kv" => (0.08, 0.5 * GIB),
        _ => (0.08, 0.0),
    }
}

fn predicted(out: &Value, key: &str, device: Option<u64>) -> Option<f64> {
    let dev = |field: &str| -> Option<f64> {
        let d = device.unwrap_or(0) as usize;
        let devs = out["devices"].as_array()?;
        Some(
            devs.get(d)
                .map(|x| x[field].as_f64().unwrap_or(0.0))
                .unwrap_or(0.0),
        )
    };
    match key {
        "kv_total_bytes" => out["kv_cache"]["bytes"].as_f64(),
        "gpu_model_bytes" | "weights_bytes" => dev("weights_bytes"),
        "gpu_compute_bytes" => dev("compute_bytes"),
        "available_kv_bytes" => dev("kv_cache_bytes"),
        "kv_tokens" => out["kv_cache"]["tokens"].as_f64(),
        "max_concurrency" => out["kv_cache"]["max_concurrency"].as_f64(),
        "estimated_max_model_len" => out["max_model_len"].as_f64(),
        _ => None,
    }
}

fn run_case(case: &Value, tmp: &Path) -> Value {
    let hf_id = case["hf_id"].as_str().unwrap();
    let hub = tmp.join("hf_home").join("hub");
    let repo = hub.join(format!("models--{}", hf_id.replace('/', "--")));
    let rev = "0".repeat(40);
    std::fs::create_dir_all(repo.join("snapshots").join(&rev)).unwrap();
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs").join("main"), &rev).unwrap();
    std::fs::write(
        repo.join("snapshots").join(&rev).join("config.json"),
        case["config"].to_string(),
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vramfit"));
    cmd.args(["check", "--json", "--gpu", case["gpu"].as_str().unwrap()]);
    if let Some(f) = case["gpu_free"].as_str() {
        cmd.args(["--gpu-free", f]);
    }
    if let Some(v) = case["engine_version"].as_str() {
        cmd.args(["--engine-version", v]);
    }
    cmd.arg("--");
    for a in case["argv"].as_array().unwrap() {
        cmd.arg(a.as_str().unwrap());
    }
    cmd.current_dir(tmp)
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HUB_CACHE", &hub)
        .env("HF_HOME", tmp.join("hf_home"))
        .env("NO_COLOR", "1")
        .env_remove("HF_TOKEN");
    let out = cmd.output().expect("run vramfit");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "{}: no JSON; stderr: {}",
            case["id"],
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn dev_cases_within_tolerance() {
    let text = include_str!("fixtures/dev_cases.jsonl");
    let mut rows: BTreeMap<String, Vec<(String, f64, bool)>> = BTreeMap::new();
    let mut verdicts = (0, 0);
    let tmp_root = std::env::temp_dir().join(format!("vramfit-acc-{}", std::process::id()));
    for (i, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let case: Value = serde_json::from_str(line).unwrap();
        let tmp = tmp_root.join(i.to_string());
        let out = run_case(&case, &tmp);
        let engine = case["engine"].as_str().unwrap();
        for (key, spec) in case["expect"].as_object().unwrap() {
            if key == "verdict" {
                verdicts.1 += 1;
                if out["verdict"] == spec["value"] {
                    verdicts.0 += 1;
                } else {
                    println!(
                        "WRONG VERDICT {}: {} vs {}",
                        case["id"], out["verdict"], spec["value"]
                    );
                }
                continue;
            }
            let items: Vec<&Value> = match spec.as_array() {
                Some(a) => a.iter().collect(),
                None => vec![spec],
            };
            for it in items {
                let class = it["class"].as_str().unwrap();
                let want = it["value"].as_f64().unwrap();
                let got = predicted(&out, key, it["device"].as_u64()).unwrap_or(f64::NAN);
                let (rel, floor) = tolerance(class);
                let (w, g) = if class == "available_kv" {
                    (want.max(0.0), got.max(0.0))
                } else {
                    (want, got)
                };
                let ok = if w == 0.0 {
                    g.abs() < MIB.max(floor)
                } else {
                    (g - w).abs() <= (rel * w.abs()).max(floor)
                };
                let err = if w != 0.0 { 100.0 * (g - w) / w } else { 0.0 };
                if !ok {
                    println!(
                        "OUT {} {key}[{}]: measured {want:.0} predicted {got:.0} ({err:+.1}%)",
                        case["id"], it["device"]
                    );
                }
                rows.entry(format!("{engine} {key}")).or_default().push((
                    case["id"].to_string(),
                    err,
                    ok,
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&tmp_root);
    println!(
        "{:<34} {:>3} {:>3} {:>9} {:>7} {:>7} {:>7}",
        "component", "n", "ok", "med|err|%", "p90%", "max%", "bias%"
    );
    let mut total = (0, 0);
    for (k, v) in &rows {
        let mut abs: Vec<f64> = v.iter().map(|r| r.1.abs()).collect();
        abs.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let mut signed: Vec<f64> = v.iter().map(|r| r.1).collect();
        signed.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let ok = v.iter().filter(|r| r.2).count();
        total.0 += ok;
        total.1 += v.len();
        let p90 = abs[((abs.len() - 1) as f64 * 0.9).round() as usize];
        println!(
            "{:<34} {:>3} {:>3} {:>9.2} {:>7.2} {:>7.2} {:>+7.2}",
            k,
            v.len(),
            ok,
            abs[abs.len() / 2],
            p90,
            abs[abs.len() - 1],
            signed[signed.len() / 2]
        );
    }
    println!(
        "within tolerance: {}/{}; verdicts {}/{}",
        total.0, total.1, verdicts.0, verdicts.1
    );
    // the bar reached so far; raise it as the models improve
    assert!(
        total.0 * 100 >= total.1 * 85,
        "only {}/{} comparisons within tolerance",
        total.0,
        total.1
    );
    assert_eq!(verdicts.0, verdicts.1, "wrong verdicts");
    let kv = &rows["llama.cpp kv_total_bytes"];
    assert!(
        kv.iter().all(|r| r.2),
        "llama.cpp KV must be exact on every case"
    );
}
