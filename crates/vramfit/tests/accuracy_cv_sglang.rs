//! Cross-validated accuracy of the SGLang model on every public SGLang start the project holds
//! (fixtures/sglang_public_logs.jsonl). The one constant fitted on these logs,
//! `vramfit_engine::sglang::LOAD_NON_TORCH_BYTES` (what SGLang's 'mem usage' counts beyond the
//! weight tensors), is refitted on all the other logs for each log left out, and the left-out
//! log is predicted with it; the table prints the in-sample error (constant in force) beside
//! the leave-one-out error, per component.
//!
//!     cargo test -p vramfit --release --test accuracy_cv_sglang -- --nocapture
//!
//! `VRAMFIT_CV_VERBOSE=1` adds one line per log. Tolerances as for the vLLM logs: weights 3 %,
//! the KV pool max(8 %, 0.5 GiB), tokens 8 %, verdict exact.
//!
//! `gpu_free` in these cases is the free memory SGLang itself prints at 'Load weight begin'
//! (after its CUDA context and the TP group's buffers), because that is what the logs show; the
//! free memory at launch that `check` takes (`--gpu-free`, nvidia-smi) is that plus the start-up
//! memory the model charges (`sglang::init_bytes`), so the start-up term is not taken twice.

mod common;

use common::Tally;

use serde_json::Value;
use vramfit_engine::cmdline::Command;
use vramfit_engine::{sglang, vllm, Hardware, MemoryPlan, Verdict};
use vramfit_model::units::parse_size;
use vramfit_model::ModelSpec;

const GIB: f64 = (1u64 << 30) as f64;
const MIB: u64 = 1 << 20;

struct Case {
    id: String,
    spec: ModelSpec,
    cfg: sglang::SglangConfig,
    hw: Hardware,
    expect: Value,
}

fn load_cases() -> Vec<Case> {
    let mut cases = cases_of(include_str!("fixtures/sglang_public_logs.jsonl"));
    // held apart in session 8 and scored once there (11/11, verdicts 3/3); now joined
    cases.extend(cases_of(include_str!(
        "fixtures/sglang_heldapart4_logs.jsonl"
    )));
    // held apart in session 9 and scored once there (10/19, verdicts 4/5; 12/19 and 5/5 after
    // the visible-devices fix); now joined
    cases.extend(cases_of(include_str!(
        "fixtures/sglang_heldapart5_logs.jsonl"
    )));
    cases
}

fn cases_of(text: &str) -> Vec<Case> {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        let c: Value = serde_json::from_str(line).unwrap();
        let hf = c["hf_id"].as_str().unwrap();
        let spec = match c.get("config").filter(|v| v.is_object()) {
            Some(cfg) => vramfit_model::hf_config::spec_from_config(hf, cfg).unwrap(),
            None => {
                vramfit_plan::model::load(hf)
                    .unwrap_or_else(|e| panic!("{hf}: {e}"))
                    .spec
            }
        };
        let argv: Vec<String> = c["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        let mut cfg = sglang::parse(&Command::parse(&argv).unwrap()).unwrap();
        // Windows / WSL2 hosts, as the log's paths or the author say (fixture `platform`)
        cfg.sysmem_fallback = c["platform"].as_str() == Some("wsl2");
        cfg.version = c["engine_version"]
            .as_str()
            .and_then(|v| vllm::Version::parse(v).ok());
        let mut gs = common::fixture_gpus(c["gpu"].as_str().unwrap());
        if let Some(f) = c["gpu_free"].as_str() {
            let seen = parse_size(f).unwrap();
            for g in gs.iter_mut() {
                g.free_bytes = (seen + sglang::init_bytes(g, cfg.tp_size)).min(g.total_bytes);
            }
        }
        out.push(Case {
            id: c["id"].as_str().unwrap().to_string(),
            spec,
            cfg,
            hw: common::hw(gs),
            expect: c["expect"].clone(),
        });
    }
    out
}

fn run(c: &Case, load_non_torch: u64) -> MemoryPlan {
    sglang::with_load_non_torch(load_non_torch, || {
        sglang::plan(&c.spec, None, &c.cfg, &c.hw)
    })
}

/// (component, signed relative error, within tolerance) for every measured number of a case.
fn score(c: &Case, p: &MemoryPlan) -> Vec<(&'static str, f64, bool)> {
    let mut out = Vec::new();
    for (key, spec) in c.expect.as_object().unwrap() {
        if key == "verdict" {
            let fits = p.verdict == Verdict::Fits;
            out.push(("verdict", 0.0, (spec["value"] == "fits") == fits));
            continue;
        }
        let items: Vec<&Value> = spec
            .as_array()
            .map(|a| a.iter().collect())
            .unwrap_or_else(|| vec![spec]);
        for it in items {
            let want = it["value"].as_f64().unwrap();
            let dev = p.devices.get(it["device"].as_u64().unwrap_or(0) as usize);
            let (name, got, rel, floor) = match key.as_str() {
                "weights_bytes" => (
                    "weights_bytes",
                    dev.map_or(0.0, |d| d.weights_bytes as f64),
                    0.03,
                    0.0,
                ),
                "available_kv_bytes" => (
                    "available_kv_bytes",
                    dev.map_or(0.0, |d| d.kv_cache_bytes.max(0) as f64),
                    0.08,
                    0.5 * GIB,
                ),
                "kv_tokens" => ("kv_tokens", p.kv_cache.tokens as f64, 0.08, 0.0),
                _ => continue,
            };
            let ok = (got - want).abs() <= (rel * want).max(floor);
            out.push((name, (got - want) / want, ok));
        }
    }
    out
}

/// Candidates for the refit: 0 to 256 MiB in 8 MiB steps (the value in force is on it).
fn grid() -> Vec<u64> {
    (0..=32).map(|i| i * 8 * MIB).collect()
}

/// Out-of-tolerance numbers first, then the size of the errors (weights by case, not by rank).
fn loss(rows: &[(&str, f64, bool)]) -> f64 {
    let mut seen_weights = false;
    rows.iter()
        .filter(|r| {
            let first = r.0 != "weights_bytes" || !seen_weights;
            seen_weights |= r.0 == "weights_bytes";
            first
        })
        .map(|r| r.1.abs().min(0.5) + if r.2 { 0.0 } else { 1.0 })
        .sum()
}

#[test]
fn sglang_leave_one_log_out() {
    common::offline(&format!("vramfit-cv-sglang-{}", std::process::id()));
    let cases = load_cases();
    assert!(cases.len() >= 11, "only {} SGLang cases", cases.len());
    let grid = grid();
    let in_force = grid
        .iter()
        .position(|&g| g == sglang::LOAD_NON_TORCH_BYTES)
        .expect("the constant in force is on the grid");
    let table: Vec<Vec<_>> = cases
        .iter()
        .map(|c| grid.iter().map(|&g| score(c, &run(c, g))).collect())
        .collect();
    // the constant in force is the fit on every log (in-sample)
    let fit_all = (0..grid.len())
        .min_by(|&a, &b| {
            let l = |k: usize| -> f64 { table.iter().map(|t| loss(&t[k])).sum() };
            l(a).partial_cmp(&l(b)).unwrap().then(a.cmp(&b))
        })
        .unwrap();
    println!(
        "LOAD_NON_TORCH_BYTES in force {} MiB, fitted on all {} logs {} MiB",
        grid[in_force] / MIB,
        cases.len(),
        grid[fit_all] / MIB
    );
    let verbose = std::env::var_os("VRAMFIT_CV_VERBOSE").is_some();
    let mut tallies: std::collections::BTreeMap<&str, (Tally, Tally)> = Default::default();
    for (i, c) in cases.iter().enumerate() {
        let refit = |k: usize| -> f64 {
            (0..cases.len())
                .filter(|&j| j != i)
                .map(|j| loss(&table[j][k]))
                .sum()
        };
        let best = (0..grid.len())
            .min_by(|&a, &b| refit(a).partial_cmp(&refit(b)).unwrap().then(a.cmp(&b)))
            .unwrap();
        for (r_in, r_cv) in table[i][in_force].iter().zip(&table[i][best]) {
            let t = tallies.entry(r_in.0).or_default();
            t.0.add(r_in.1, r_in.2);
            t.1.add(r_cv.1, r_cv.2);
        }
        if verbose {
            let p = run(c, grid[in_force]);
            let rows: Vec<String> = table[i][in_force]
                .iter()
                .zip(&table[i][best])
                .map(|(a, b)| {
                    let out = |ok: bool| if ok { "" } else { " OUT" };
                    format!(
                        "{} {:+.1}%{} (LOO {:+.1}%{})",
                        a.0,
                        a.1 * 100.0,
                        out(a.2),
                        b.1 * 100.0,
                        out(b.2)
                    )
                })
                .collect();
            println!(
                "CASE {} v{} weights {:.2} GiB pool {:.2} GiB tokens {} (refit {} MiB): {}",
                c.id,
                c.cfg.version.map(|v| v.to_string()).unwrap_or("?".into()),
                p.devices
                    .first()
                    .map_or(0.0, |d| d.weights_bytes as f64 / GIB),
                p.devices
                    .first()
                    .map_or(0.0, |d| d.kv_cache_bytes as f64 / GIB),
                p.kv_cache.tokens,
                grid[best] / MIB,
                rows.join(", ")
            );
        }
    }
    println!(
        "{:<20} {:>16} {:>16}",
        "SGLang component", "in-sample ok med", "LOO ok med"
    );
    for (comp, (a, b)) in tallies.iter_mut() {
        println!("{comp:<20} {:>16} {:>16}", a.show(), b.show());
    }
    // below the bars reached on 11 logs (leave-one-out: pool 9/9, tokens 10/10, weights 12/15,
    // verdicts 10/11), with room for logs still being gathered; tokens 80 since set 5 joined
    // (20/24: its ROCm and Gemma 4 E4B misses, docs/accuracy-vllm.md)
    let t = |k: &str| tallies.get(k).map_or((0, 0), |t| (t.1.ok, t.1.n));
    for (k, pct) in [
        ("available_kv_bytes", 85),
        ("kv_tokens", 80),
        ("weights_bytes", 75),
        ("verdict", 85),
    ] {
        let (ok, n) = t(k);
        assert!(ok * 100 >= n * pct, "SGLang {k}: {ok}/{n} leave-one-out");
    }
}

/// The held-apart SGLang starts (`sglang_heldapart_logs.jsonl`): gathered while the model changed,
/// never shown to its writer, scored once with the constant in force (nothing refitted on them).
#[test]
fn sglang_held_apart_logs() {
    held_apart(include_str!("fixtures/sglang_heldapart_logs.jsonl"), 6);
}

/// The second held-apart set (`sglang_heldapart2_logs.jsonl`, session 6), scored the same way.
#[test]
fn sglang_held_apart_logs_2() {
    held_apart(include_str!("fixtures/sglang_heldapart2_logs.jsonl"), 5);
}

/// The third held-apart set (`sglang_heldapart3_logs.jsonl`, session 7; first scored 5/5 tokens
/// and verdicts by a script on the merged tree), scored the same way.
#[test]
fn sglang_held_apart_logs_3() {
    held_apart(include_str!("fixtures/sglang_heldapart3_logs.jsonl"), 5);
}

/// The fourth held-apart set (`sglang_heldapart4_logs.jsonl`, session 8), scored once on the
/// merged model of that session, the same way.
#[test]
fn sglang_held_apart_logs_4() {
    held_apart(include_str!("fixtures/sglang_heldapart4_logs.jsonl"), 3);
}

/// The fifth held-apart set (`sglang_heldapart5_logs.jsonl`, session 9), scored once on the
/// merged model of that session: 10/19 comparisons, verdicts 4/5 — the miss was a parsing bug
/// (`CUDA_VISIBLE_DEVICES=2` with one GPU described planned zero GPUs), fixed after it was seen
/// (tests/check_visible_devices.rs): 12/19, verdicts 5/5.
#[test]
fn sglang_held_apart_logs_5() {
    held_apart(include_str!("fixtures/sglang_heldapart5_logs.jsonl"), 5);
}

/// The sixth held-apart set (`sglang_heldapart6_logs.jsonl`, session 10, sampled by fixed
/// queries: fixtures/heldapart6_sampling.md), scored once on the merged model of that session:
/// 21/26 comparisons, verdicts 4/5 (Qwen3.6-35B-A3B FP8 on 4x RTX 4090, whose quantization block
/// was written from the base config, not found verbatim). Unread; the guard keeps its first sight.
#[test]
fn sglang_held_apart_logs_6() {
    held_apart_at(include_str!("fixtures/sglang_heldapart6_logs.jsonl"), 6, 1);
}

fn held_apart(text: &str, n: usize) {
    held_apart_at(text, n, 0);
}

/// Scores a held-apart file; `wrong_verdicts` is how many wrong verdicts its first sight had.
fn held_apart_at(text: &str, n: usize, wrong_verdicts: usize) {
    common::offline(&format!(
        "vramfit-cv-sglang-apart-{n}-{}",
        std::process::id()
    ));
    let cases = cases_of(text);
    assert_eq!(cases.len(), n);
    let mut tallies: std::collections::BTreeMap<&str, Tally> = Default::default();
    for c in &cases {
        let rows = score(c, &run(c, sglang::LOAD_NON_TORCH_BYTES));
        println!(
            "HELD-APART {}: {}",
            c.id,
            common::signed_rows(&rows).join(", ")
        );
        for r in rows {
            tallies.entry(r.0).or_default().add(r.1, r.2);
        }
    }
    for (comp, t) in tallies.iter_mut() {
        println!("held-apart {comp:<20} {:>16}", t.show());
    }
    // first sight on that round's final model (docs/accuracy-vllm.md): no verdict worse than then
    let v = tallies.get("verdict").map_or((0, 0), |t| (t.ok, t.n));
    assert!(
        v.0 + wrong_verdicts >= v.1,
        "held-apart SGLang verdicts {}/{}",
        v.0,
        v.1
    );
}
