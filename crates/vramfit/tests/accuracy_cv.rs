//! Cross-validated accuracy of the vLLM model: every constant fitted on logs
//! (`vramfit_engine::vllm::profile::Constants`: sampler bytes per logit, non-torch memory, the
//! two CUDA-graph factors, NCCL's NVLS buffers) is judged on logs it was not fitted on. For
//! each real vLLM case of fixtures/dev_cases.jsonl, fixtures/dev_cases_h2.jsonl,
//! fixtures/vllm_public_logs.jsonl, fixtures/vllm_heldapart_logs.jsonl,
//! fixtures/vllm_heldapart2_logs.jsonl, fixtures/vllm_heldapart3_logs.jsonl,
//! fixtures/vllm_heldapart4_logs.jsonl and fixtures/vllm_heldapart5_logs.jsonl (held apart in
//! sessions 5 to 9, each scored once, then joined) the
//! constants are refitted on all the other cases (a grid, scored by the tolerance classes
//! below) and the left-out case is predicted with them: leave-one-log-out, printed per component
//! and era beside the in-sample error of the constants in force.
//!
//!     cargo test -p vramfit --release --test accuracy_cv -- --nocapture
//!
//! `VRAMFIT_CV_VERBOSE=1` adds one line per case (predicted components, signed errors);
//! `VRAMFIT_CV_V1_ONLY=1` runs every vLLM start on the V1 runner (the model before
//! `vllm::runner`), for a before/after on the same logs; `VRAMFIT_CV_IN_FORCE=1` scores only the
//! constants in force (quick); `VRAMFIT_CV_GRID_REPORT=1` lists the grid points with the most
//! comparisons in-sample and whether dev case vllm-log-009 stays in; `VRAMFIT_CV_FINE=1` swaps
//! in a finer grid around the constants in force. The test fails below 89 % of the vLLM
//! comparisons within tolerance (leave-one-out). SGLang's logs have their own harness
//! (accuracy_cv_sglang.rs).
//!
//! The evaluation is in-process (the same parse → plan path as `vramfit check`, offline: models
//! from the case's config.json or the embedded catalog).

mod common;

use common::Tally;
use serde_json::Value;
use std::collections::BTreeMap;
use vramfit_engine::cmdline::Command;
use vramfit_engine::vllm::profile::{with_constants, Constants};
use vramfit_engine::{vllm, Hardware, MemoryPlan, Verdict};
use vramfit_model::units::parse_size;
use vramfit_model::ModelSpec;

const MIB: f64 = (1u64 << 20) as f64;
const GIB: f64 = (1u64 << 30) as f64;

struct Case {
    id: String,
    era: &'static str,
    spec: ModelSpec,
    argv: Vec<String>,
    version: Option<String>,
    hw: Hardware,
    expect: Value,
    hybrid: bool,
}

fn era(v: Option<&str>) -> &'static str {
    let v = v
        .and_then(|v| vllm::Version::parse(v).ok())
        .unwrap_or(vllm::Version::CURRENT);
    if v < vllm::Version::new(0, 8, 0) {
        "V0 (<0.8)"
    } else if v < vllm::Version::new(0, 20, 0) {
        "V1 0.8-0.19"
    } else {
        "V1 0.20+ (graphs charged)"
    }
}

fn load_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for text in [
        include_str!("fixtures/dev_cases.jsonl"),
        include_str!("fixtures/dev_cases_h2.jsonl"),
        include_str!("fixtures/vllm_public_logs.jsonl"),
        // held apart in session 5 and scored once there; now part of the harness
        include_str!("fixtures/vllm_heldapart_logs.jsonl"),
        // held apart in session 6 and scored once there (98/110); now part of the harness
        include_str!("fixtures/vllm_heldapart2_logs.jsonl"),
        // held apart in session 7 and scored once there (103/106, verdicts 27/30); now joined
        include_str!("fixtures/vllm_heldapart3_logs.jsonl"),
        // held apart in session 8 and scored once there (60/68, verdicts 22/23); now joined
        include_str!("fixtures/vllm_heldapart4_logs.jsonl"),
        // held apart in session 9 and scored once there (41/61, verdicts 19/23); now joined
        include_str!("fixtures/vllm_heldapart5_logs.jsonl"),
    ] {
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let c: Value = serde_json::from_str(line).unwrap();
            if c["engine"].as_str() != Some("vllm") {
                continue;
            }
            let hf = c["hf_id"].as_str().unwrap();
            let spec = match c.get("config").filter(|v| v.is_object()) {
                Some(cfg) => vramfit_model::hf_config::spec_from_config(hf, cfg).unwrap(),
                // offline: the embedded catalog (base models and their quantized variants)
                None => {
                    vramfit_plan::model::load(hf)
                        .unwrap_or_else(|e| panic!("{hf}: {e}"))
                        .spec
                }
            };
            let hybrid = spec.layers.iter().any(|l| l.attention.window().is_some())
                || spec.layers.iter().any(|l| !l.attention.has_kv());
            let version = c["engine_version"].as_str().map(str::to_string);
            cases.push(Case {
                id: c["id"].as_str().unwrap().to_string(),
                era: era(version.as_deref()),
                spec,
                argv: c["argv"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a.as_str().unwrap().to_string())
                    .collect(),
                version,
                hw: {
                    let mut hw = common::hw(common::fixture_gpus(c["gpu"].as_str().unwrap()));
                    if let Some(f) = c["gpu_free"].as_str() {
                        for (g, v) in hw.gpus.iter_mut().zip(f.split(',')) {
                            g.free_bytes = parse_size(v.trim()).unwrap();
                        }
                    }
                    hw
                },
                expect: c["expect"].clone(),
                hybrid,
            });
        }
    }
    cases
}

fn run(c: &Case) -> MemoryPlan {
    let cmd = Command::parse(&c.argv).unwrap();
    let mut cfg = vllm::parse(&cmd, c.version.as_deref()).unwrap();
    if std::env::var_os("VRAMFIT_CV_V1_ONLY").is_some() {
        // ablation: every start on the V1 runner, as the model stood before runner.rs
        cfg.use_v2_model_runner = Some(false);
    }
    vllm::plan_without_suggestions(&c.spec, None, &cfg, &c.hw)
}

/// (component, signed relative error, within tolerance) for every measured number of a case.
fn score(c: &Case, p: &MemoryPlan) -> Vec<(String, f64, bool)> {
    let mut out = Vec::new();
    for (key, spec) in c.expect.as_object().unwrap() {
        if key == "verdict" {
            let want = spec["value"].as_str().unwrap();
            let got = if p.verdict == Verdict::Fits {
                "fits"
            } else {
                "does_not_fit"
            };
            out.push(("verdict".into(), 0.0, want == got));
            continue;
        }
        let items: Vec<&Value> = match spec.as_array() {
            Some(a) => a.iter().collect(),
            None => vec![spec],
        };
        for it in items {
            let want = it["value"].as_f64().unwrap();
            let d = it["device"].as_u64().unwrap_or(0) as usize;
            let dev = p.devices.get(d);
            let (got, rel, floor) = match key.as_str() {
                "weights_bytes" => (
                    dev.map(|d| d.weights_bytes as f64).unwrap_or(0.0),
                    0.03,
                    0.0,
                ),
                "available_kv_bytes" => (
                    dev.map(|d| d.kv_cache_bytes as f64).unwrap_or(0.0),
                    0.08,
                    0.5 * GIB,
                ),
                "kv_tokens" => (p.kv_cache.tokens as f64, 0.08, 0.0),
                "max_concurrency" => (p.kv_cache.max_concurrency, 0.08, 0.0),
                "estimated_max_model_len" => (p.max_model_len as f64, 0.08, 0.0),
                _ => continue,
            };
            let (w, g) = if key == "available_kv_bytes" {
                (want.max(0.0), got.max(0.0))
            } else {
                (want, got)
            };
            let ok = if w == 0.0 {
                g.abs() < MIB.max(floor)
            } else {
                (g - w).abs() <= (rel * w.abs()).max(floor)
            };
            let err = if w != 0.0 { (g - w) / w } else { 0.0 };
            let name = if c.hybrid && matches!(key.as_str(), "kv_tokens" | "max_concurrency") {
                format!("{key} (hybrid)")
            } else {
                key.clone()
            };
            out.push((name, err, ok));
        }
    }
    out
}

/// The grid the constants are refitted on (the values in force are on it).
fn grid() -> Vec<Constants> {
    let mut g = Vec::new();
    if std::env::var_os("VRAMFIT_CV_FINE").is_some() {
        for s in [28.0, 32.0, 36.0, 40.0] {
            for n in [256u64, 320, 384, 448] {
                for h in [1.0, 1.5, 2.0] {
                    for m in [0.4, 0.8] {
                        g.push(Constants {
                            sampler_bytes_per_elem: s,
                            non_torch_bytes: n << 20,
                            graph_hidden_factor: h,
                            graph_moe_factor: m,
                            nvls_non_torch_bytes: 1920 << 20,
                        });
                    }
                }
            }
        }
        return g;
    }
    for s in [24.0, 32.0, 36.0, 40.0, 48.0] {
        for n in [128u64, 256, 384, 512] {
            for h in [1.0, 1.5, 2.0] {
                for m in [0.4, 0.8, 1.2] {
                    for v in [0u64, 1536, 1920, 2304] {
                        g.push(Constants {
                            sampler_bytes_per_elem: s,
                            non_torch_bytes: n << 20,
                            graph_hidden_factor: h,
                            graph_moe_factor: m,
                            nvls_non_torch_bytes: v << 20,
                        });
                    }
                }
            }
        }
    }
    g
}

/// The loss a fit minimises on a case: numbers out of tolerance, then the size of the errors.
fn loss(rows: &[(String, f64, bool)]) -> f64 {
    rows.iter()
        .filter(|r| r.0 != "weights_bytes" && !r.0.contains("hybrid"))
        .map(|r| {
            if r.2 {
                r.1.abs().min(0.5)
            } else {
                1.0 + r.1.abs().min(0.5)
            }
        })
        .sum()
}

#[test]
fn leave_one_log_out() {
    let empty = std::env::temp_dir().join(format!("vramfit-cv-{}", std::process::id()));
    std::env::set_var("HF_HUB_OFFLINE", "1");
    std::env::set_var("HF_HUB_CACHE", &empty);
    std::env::set_var("HF_HOME", &empty);
    let cases = load_cases();
    assert!(cases.len() >= 13, "only {} vLLM cases", cases.len());
    // `VRAMFIT_CV_IN_FORCE=1`: only the constants in force (a quick in-sample pass)
    let grid = if std::env::var_os("VRAMFIT_CV_IN_FORCE").is_some() {
        vec![Constants::FITTED]
    } else {
        grid()
    };
    // table[case][constants] = the case's rows under those constants
    let table: Vec<Vec<Vec<(String, f64, bool)>>> = cases
        .iter()
        .map(|c| {
            grid.iter()
                .map(|k| with_constants(*k, || score(c, &run(c))))
                .collect()
        })
        .collect();
    let in_force = grid
        .iter()
        .position(|k| *k == Constants::FITTED)
        .expect("constants in force on the grid");
    if std::env::var_os("VRAMFIT_CV_VERBOSE").is_some() {
        for (c, rows) in cases.iter().zip(&table) {
            let p = run(c);
            let d = &p.devices[0];
            let rows = common::signed_rows(&rows[in_force]);
            println!(
                "CASE {} v{} act {:.2} graphs {:.2} non-torch {:.2} weights {:.2} GiB: {}",
                c.id,
                c.version.as_deref().unwrap_or("?"),
                d.compute_bytes as f64 / GIB,
                d.cuda_graph_bytes as f64 / GIB,
                d.overhead_bytes as f64 / GIB,
                d.weights_bytes as f64 / GIB,
                rows.join(", ")
            );
        }
    }
    if std::env::var_os("VRAMFIT_CV_GRID_REPORT").is_some() {
        // in-sample count per grid point, and whether the dev case vllm-log-009 stays in
        let mut rep: Vec<(usize, bool, usize)> = (0..grid.len())
            .map(|k| {
                let ok: usize = table
                    .iter()
                    .map(|t| t[k].iter().filter(|r| r.2).count())
                    .sum();
                let log9 = cases
                    .iter()
                    .zip(&table)
                    .filter(|(c, _)| c.id == "vllm-log-009")
                    .all(|(_, t)| t[k].iter().all(|r| r.2));
                (ok, log9, k)
            })
            .collect();
        rep.sort_by(|a, b| b.0.cmp(&a.0));
        for (ok, log9, k) in rep.iter().take(25) {
            println!("GRID {ok} log009={log9} {:?}", grid[*k]);
        }
    }
    let losses: Vec<Vec<f64>> = table
        .iter()
        .map(|per| per.iter().map(|r| loss(r)).collect())
        .collect();
    let mut tallies: BTreeMap<(String, String), (Tally, Tally)> = BTreeMap::new();
    let mut all_in = (0, 0);
    let mut all_cv = (0, 0);
    // how often each grid point is the fold's choice: a refit of the constants in force is only
    // worth making when the choice is stable across folds
    let mut chosen: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, c) in cases.iter().enumerate() {
        let best = (0..grid.len())
            .min_by(|&a, &b| {
                let la: f64 = (0..cases.len())
                    .filter(|&j| j != i)
                    .map(|j| losses[j][a])
                    .sum();
                let lb: f64 = (0..cases.len())
                    .filter(|&j| j != i)
                    .map(|j| losses[j][b])
                    .sum();
                la.partial_cmp(&lb).unwrap().then(a.cmp(&b))
            })
            .unwrap();
        *chosen.entry(best).or_default() += 1;
        for (row_in, row_cv) in table[i][in_force].iter().zip(&table[i][best]) {
            for era in [c.era.to_string(), "vLLM, all eras".to_string()] {
                let t = tallies.entry((row_in.0.clone(), era)).or_default();
                t.0.add(row_in.1, row_in.2);
                t.1.add(row_cv.1, row_cv.2);
            }
            all_in.1 += 1;
            all_in.0 += row_in.2 as usize;
            all_cv.1 += 1;
            all_cv.0 += row_cv.2 as usize;
            if !row_cv.2 {
                println!(
                    "LOO OUT {} {}: {:+.1}% (constants {:?})",
                    c.id,
                    row_cv.0,
                    row_cv.1 * 100.0,
                    grid[best]
                );
            }
        }
    }
    for (k, n) in &chosen {
        println!(
            "fold choice {:?}: {n} of {} folds{}",
            grid[*k],
            cases.len(),
            if *k == in_force { " (in force)" } else { "" }
        );
    }
    println!(
        "{:<30} {:<26} {:>16} {:>16}",
        "component", "era", "in-sample ok med", "LOO ok med"
    );
    for ((comp, era), (a, b)) in &tallies {
        println!("{comp:<30} {era:<26} {:>16} {:>16}", a.show(), b.show());
    }
    println!(
        "cases {} vLLM; numbers within tolerance in-sample {}/{}, leave-one-out {}/{}",
        cases.len(),
        all_in.0,
        all_in.1,
        all_cv.0,
        all_cv.1
    );
    // below the bar reached (610/664 = 91.9 % leave-one-out on 147 starts, session 7), with
    // room for logs still being gathered; raise it as the model improves
    assert!(
        all_cv.0 * 100 >= all_cv.1 * 89,
        "LOO {}/{}",
        all_cv.0,
        all_cv.1
    );
}
