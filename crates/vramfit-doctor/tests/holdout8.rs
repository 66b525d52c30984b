//! holdout8 (`oom_gathered7.jsonl`, 55 reports gathered blind in session 8 and never shown to
//! the rule writer), scored once on session 8's merged rules (main at the merge of h8/doctor):
//! 24/55, the same as the rules before that session. Its misses are unread; until they are
//! read and it joins crossval.rs's read sets, this only keeps the first-sight score from falling.

#[path = "support/cases.rs"]
mod cases;

use vramfit_doctor::diagnose;

const HOLDOUT8_N: usize = 55;
const HOLDOUT8_FIRST_SIGHT: usize = 24;

#[test]
fn holdout8_first_sight_does_not_fall() {
    let held8 = cases::holdout(8);
    assert_eq!(held8.len(), HOLDOUT8_N, "holdout8 size");
    let right = held8
        .iter()
        .filter(|c| diagnose(&c.excerpt).cause == c.expected)
        .count();
    println!("holdout8 (oom_gathered7; first sight 24/55, unread): {right}/{HOLDOUT8_N}");
    assert!(
        right >= HOLDOUT8_FIRST_SIGHT,
        "holdout8 {right}/{HOLDOUT8_N} fell below its first sight"
    );
}
