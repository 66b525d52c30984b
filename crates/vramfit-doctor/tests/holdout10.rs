//! holdout10 (`oom_gathered9.jsonl`, 51 reports), sampled systematically like holdout9 but with
//! new query strings fixed before any labelling (fixtures/oom_gathered9_sampling.md), labelled
//! blind to the tool; a second reader re-labelled all 51 blind (second_reader_holdout10.jsonl,
//! 48/51 agree). Its queries returned mostly self-explaining host-RAM and lookalike messages
//! (23 host RAM, 14 not an OOM). Scored once in session 10: 20/51 on the merged rules, and 19/51
//! on the rules before that session (main 1757392). Its misses are unread; until they are, this
//! only keeps the first-sight score from falling.

#[path = "support/cases.rs"]
mod cases;

use vramfit_doctor::diagnose;

const HOLDOUT10_N: usize = 51;
const HOLDOUT10_FIRST_SIGHT: usize = 20;

#[test]
fn holdout10_first_sight_does_not_fall() {
    let held = cases::holdout(10);
    assert_eq!(held.len(), HOLDOUT10_N, "holdout10 size");
    let right = held
        .iter()
        .filter(|c| diagnose(&c.excerpt).cause == c.expected)
        .count();
    println!("holdout10 (oom_gathered9; first sight 20/51, unread): {right}/{HOLDOUT10_N}");
    assert!(
        right >= HOLDOUT10_FIRST_SIGHT,
        "holdout10 {right}/{HOLDOUT10_N} fell below its first sight"
    );
}
