//! How far the labels themselves can be trusted: a second reader re-labelled a blind sample of
//! holdouts 3-7 (session 8). The sample was drawn on main at 2678253 as 45 reports where
//! `doctor` disagreed with the first reader and 45 where it agreed, shuffled; the second reader
//! saw the excerpt, the stack description and the source thread, never the first label nor the
//! tool's answer, and could answer "unclear". `fixtures/second_reader.jsonl` keeps both labels,
//! doctor's answer when sampled and the second reader's reason.
//!
//! The figures this prints are the inter-reader agreement docs/accuracy-doctor.md publishes; the test
//! also keeps the fixture honest (every first label still the one in its holdout file).
//!
//!     cargo test -p vramfit-doctor --test second_reader -- --nocapture

use std::collections::BTreeMap;

use serde_json::Value;
use vramfit_doctor::{diagnose, Cause};

const SECOND: &str = include_str!("fixtures/second_reader.jsonl");
const HOLDOUTS: [(u64, &str); 5] = [
    (3, include_str!("fixtures/oom_gathered2.jsonl")),
    (4, include_str!("fixtures/oom_gathered3.jsonl")),
    (5, include_str!("fixtures/oom_gathered4.jsonl")),
    (6, include_str!("fixtures/oom_gathered5.jsonl")),
    (7, include_str!("fixtures/oom_gathered6.jsonl")),
];

fn lines(text: &str) -> impl Iterator<Item = Value> + '_ {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("valid JSONL"))
}

/// id → (holdout, first label, excerpt) from the holdout files as they stand.
fn reports() -> BTreeMap<String, (u64, &'static str, String)> {
    let mut m = BTreeMap::new();
    for (k, text) in HOLDOUTS {
        for r in lines(text) {
            let Some(cause) = r["root_cause_class"].as_i64().and_then(Cause::from_class) else {
                continue;
            };
            let id = r["id"].as_str().unwrap_or_default().to_string();
            let excerpt = r["error_excerpt"].as_str().unwrap_or_default().to_string();
            m.insert(id, (k, cause.as_str(), excerpt));
        }
    }
    m
}

#[derive(Default)]
struct Tally {
    n: usize,
    unclear: usize,
    with_first: usize,
    with_doctor: usize,
}

#[test]
fn second_reader_agreement() {
    let reports = reports();
    let mut by_group: BTreeMap<&str, Tally> = BTreeMap::new();
    let (mut now_first, mut now_second, mut labelled) = (0, 0, 0);
    let mut rows = 0;
    for s in lines(SECOND) {
        rows += 1;
        let id = s["id"].as_str().unwrap();
        let (k, first, excerpt) = reports
            .get(id)
            .unwrap_or_else(|| panic!("{id}: not in any holdout file"));
        assert_eq!(s["holdout"].as_u64(), Some(*k), "{id}: holdout");
        assert_eq!(
            s["first_reader"].as_str(),
            Some(*first),
            "{id}: the first label changed after the second reading; re-read or update both"
        );
        let second = s["second_reader"].as_str().unwrap();
        let doctor = s["doctor_when_sampled"].as_str().unwrap();
        let group = if doctor == *first {
            "doctor agreed with the first reader"
        } else {
            "doctor disagreed with the first reader"
        };
        let t = by_group.entry(group).or_default();
        t.n += 1;
        if second == "unclear" {
            t.unclear += 1;
            continue;
        }
        assert!(
            Cause::ALL.iter().any(|c| c.as_str() == second),
            "{id}: unknown class {second}"
        );
        t.with_first += usize::from(second == *first);
        t.with_doctor += usize::from(second == doctor);
        let now = diagnose(excerpt).cause.as_str();
        labelled += 1;
        now_first += usize::from(now == *first);
        now_second += usize::from(now == second);
    }
    assert_eq!(rows, 90);
    for (g, t) in &by_group {
        println!(
            "{g}: {} reports, {} unclear; second reader = first reader {}, = doctor {}",
            t.n, t.unclear, t.with_first, t.with_doctor
        );
    }
    println!(
        "doctor today on the {labelled} the second reader labelled: = first reader {now_first}, \
         = second reader {now_second}"
    );
    // the figures docs/accuracy-doctor.md publishes (session 8)
    let agreed = &by_group["doctor agreed with the first reader"];
    let disagreed = &by_group["doctor disagreed with the first reader"];
    assert_eq!((agreed.n, agreed.unclear, agreed.with_first), (45, 1, 42));
    assert_eq!(
        (
            disagreed.n,
            disagreed.unclear,
            disagreed.with_first,
            disagreed.with_doctor
        ),
        (45, 3, 30, 5)
    );
}
