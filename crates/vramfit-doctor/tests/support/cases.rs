//! The labelled reports of tests/fixtures, by fold, for crossval.rs and carryover.rs.
//!
//! Folds in the order they were gathered (each holdout first scored before any rule was
//! changed for it; crossval.rs's header says what each first measured):
//! - seen: dev + apart + h2 + gathered `tune` and `score`;
//! - holdout 1, 2: gathered `holdout`, `holdout2`;
//! - holdout 3, 4, 5, 6, 7, 8, 9: `oom_gathered2.jsonl` .. `oom_gathered8.jsonl`.
#![allow(dead_code)]

use serde_json::Value;
use vramfit_doctor::{diagnose, Cause, Diagnosis};

pub const DEV: &str = include_str!("../fixtures/oom_dev.jsonl");
pub const APART: &str = include_str!("../fixtures/oom_apart.jsonl");
pub const H2: &str = include_str!("../fixtures/oom_h2.jsonl");
pub const GATHERED: &str = include_str!("../fixtures/oom_gathered.jsonl");
pub const GATHERED2: &str = include_str!("../fixtures/oom_gathered2.jsonl");
pub const GATHERED3: &str = include_str!("../fixtures/oom_gathered3.jsonl");
pub const GATHERED4: &str = include_str!("../fixtures/oom_gathered4.jsonl");
pub const GATHERED5: &str = include_str!("../fixtures/oom_gathered5.jsonl");
pub const GATHERED6: &str = include_str!("../fixtures/oom_gathered6.jsonl");
pub const GATHERED7: &str = include_str!("../fixtures/oom_gathered7.jsonl");
/// holdout9: sampled systematically in session 9 (fixtures/oom_gathered8_sampling.md); first
/// sight 38/54, its misses read in session 10.
pub const GATHERED8: &str = include_str!("../fixtures/oom_gathered8.jsonl");
/// holdout10: sampled systematically in session 10 (fixtures/oom_gathered9_sampling.md); unread.
pub const GATHERED9: &str = include_str!("../fixtures/oom_gathered9.jsonl");
/// Every first-sight miss of the holdouts (docs/accuracy-doctor.md).
pub const FIRST_SIGHT_MISSES: &str = include_str!("../fixtures/first_sight_misses.tsv");

/// One report with its established cause.
#[derive(Clone)]
pub struct Case {
    pub id: String,
    pub set: &'static str,
    pub excerpt: String,
    pub expected: Cause,
}

fn parse(text: &'static str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("valid JSONL record"))
        .collect()
}

fn expected_of(r: &Value) -> Option<Cause> {
    if let Some(c) = r["root_cause_class"].as_i64() {
        return Cause::from_class(c);
    }
    let name = r["cause"].as_str()?;
    Cause::ALL.into_iter().find(|c| c.as_str() == name)
}

/// The labelled reports of one file (those of one fold when `fold` is given); reports whose
/// established cause is "unknown" are left out.
pub fn cases(text: &'static str, set: &'static str, fold: Option<&str>) -> Vec<Case> {
    parse(text)
        .into_iter()
        .filter(|r| fold.is_none_or(|f| r["fold"].as_str() == Some(f)))
        .filter_map(|r| {
            let expected = expected_of(&r)?;
            (expected != Cause::Unknown).then(|| Case {
                id: r["id"].as_str().unwrap_or("?").to_string(),
                set,
                excerpt: r["error_excerpt"].as_str().unwrap_or("").to_string(),
                expected,
            })
        })
        .collect()
}

pub fn seen_fold() -> Vec<Case> {
    let mut v = cases(DEV, "dev", None);
    v.extend(cases(APART, "apart", None));
    v.extend(cases(H2, "h2", None));
    v.extend(cases(GATHERED, "gathered", Some("tune")));
    v.extend(cases(GATHERED, "gathered", Some("score")));
    v
}

/// Holdout `k` (1-10), in the order they were gathered.
pub fn holdout(k: usize) -> Vec<Case> {
    match k {
        1 => cases(GATHERED, "gathered", Some("holdout")),
        2 => cases(GATHERED, "gathered", Some("holdout2")),
        3 => cases(GATHERED2, "gathered2", Some("holdout3")),
        4 => cases(GATHERED3, "gathered3", Some("holdout4")),
        5 => cases(GATHERED4, "gathered4", Some("holdout5")),
        6 => cases(GATHERED5, "gathered5", Some("holdout6")),
        7 => cases(GATHERED6, "gathered6", Some("holdout7")),
        8 => cases(GATHERED7, "gathered7", Some("holdout8")),
        9 => cases(GATHERED8, "gathered8", Some("holdout9")),
        10 => cases(GATHERED9, "gathered9", Some("holdout10")),
        _ => Vec::new(),
    }
}

/// Every labelled report: the seen fold, then holdouts 1-9 (483).
pub fn every_report() -> Vec<Case> {
    let mut v = seen_fold();
    for k in 1..=9 {
        v.extend(holdout(k));
    }
    v
}

/// The first-sight answer of every holdout report: the miss table's answer where it lists
/// the report, else the established cause (it was right at first sight).
pub fn first_sight(c: &Case) -> Cause {
    FIRST_SIGHT_MISSES
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .find(|f| f.len() > 3 && f[1] == c.id)
        .and_then(|f| Cause::ALL.into_iter().find(|x| x.as_str() == f[3]))
        .unwrap_or(c.expected)
}

/// The excerpt of the labelled report `id` (mechanism tests read their real reports by id).
pub fn excerpt(id: &str) -> String {
    every_report()
        .into_iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no fixture {id}"))
        .excerpt
}

pub fn cause(text: &str) -> Cause {
    diagnose(text).cause
}

/// The value of the fix `name` in a diagnosis, if it offers one.
pub fn flag<'a>(d: &'a Diagnosis, name: &str) -> Option<&'a str> {
    d.fixes
        .iter()
        .find(|f| f.flag == name)
        .map(|f| f.value.as_str())
}
