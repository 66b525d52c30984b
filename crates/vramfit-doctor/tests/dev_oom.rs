//! The dev set of real OOM reports (../shared/data/dev/oom_errors.dev.jsonl): every excerpt is
//! diagnosed and compared with its established cause; a confusion matrix is printed and the
//! share right on records whose cause is established (class != -1) must reach 85%.
//!
//! The records' facts (id, excerpt, established class) are carried in tests/fixtures so the test
//! runs without ../shared; when ../shared is present its file is used and must agree.

use std::collections::BTreeMap;

use serde_json::Value;
use vramfit_doctor::{diagnose, Cause};

const FIXTURE: &str = include_str!("fixtures/oom_dev.jsonl");

fn shared_path() -> String {
    format!(
        "{}/../../../shared/data/dev/oom_errors.dev.jsonl",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn records(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("valid JSONL record"))
        .collect()
}

/// Diagnose each record; returns (id, expected, got) for the established ones.
fn run(recs: &[Value]) -> Vec<(String, Cause, Cause)> {
    recs.iter()
        .filter_map(|r| {
            let class = r["root_cause_class"].as_i64()?;
            let expected = Cause::from_class(class)?;
            if expected == Cause::Unknown {
                return None;
            }
            let got = diagnose(r["error_excerpt"].as_str()?).cause;
            Some((r["id"].as_str()?.to_string(), expected, got))
        })
        .collect()
}

fn print_matrix(results: &[(String, Cause, Cause)]) {
    let mut m: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    let idx = |c: Cause| Cause::ALL.iter().position(|x| *x == c).unwrap();
    for (_, e, g) in results {
        *m.entry((idx(*e), idx(*g))).or_default() += 1;
    }
    let short = |c: Cause| c.as_str().chars().take(6).collect::<String>();
    print!("{:>20} |", "expected \\ got");
    for c in Cause::ALL {
        print!(" {:>6}", short(c));
    }
    println!();
    for e in Cause::ALL {
        let row: Vec<usize> = Cause::ALL
            .iter()
            .map(|g| *m.get(&(idx(e), idx(*g))).unwrap_or(&0))
            .collect();
        if row.iter().all(|n| *n == 0) {
            continue;
        }
        print!("{:>20} |", e.as_str());
        for n in row {
            print!(
                " {:>6}",
                if n == 0 {
                    ".".to_string()
                } else {
                    n.to_string()
                }
            );
        }
        println!();
    }
    for (id, e, g) in results.iter().filter(|(_, e, g)| e != g) {
        println!("miss: {id}: expected {}, got {}", e.as_str(), g.as_str());
    }
}

fn check(recs: &[Value], label: &str) {
    let results = run(recs);
    assert!(
        results.len() >= 10,
        "{label}: too few established records ({})",
        results.len()
    );
    let right = results.iter().filter(|(_, e, g)| e == g).count();
    let share = right as f64 / results.len() as f64;
    println!(
        "{label}: {right}/{} right ({:.1}%) on records with an established cause",
        results.len(),
        share * 100.0
    );
    print_matrix(&results);
    assert!(share >= 0.85, "{label}: {:.1}% < 85%", share * 100.0);
}

#[test]
fn dev_set_in_tree() {
    check(&records(FIXTURE), "fixture");
}

#[test]
fn dev_set_from_shared() {
    let path = shared_path();
    let Ok(text) = std::fs::read_to_string(&path) else {
        println!("skipped: {path} not found (../shared is absent); the in-tree fixture covers it");
        return;
    };
    check(&records(&text), "shared");
}

#[test]
fn unknown_records_are_not_called_confidently() {
    // taggui-188, vllm-rocm-lemonade-5: free >> requested yet OOM; nobody established why
    for r in records(FIXTURE)
        .iter()
        .filter(|r| r["root_cause_class"] == -1)
    {
        let d = diagnose(r["error_excerpt"].as_str().unwrap());
        assert!(
            d.confidence <= 0.5,
            "{}: {:?} at {}",
            r["id"],
            d.cause,
            d.confidence
        );
    }
}
