//! holdout8 (`oom_gathered7.jsonl`, 55 reports gathered blind in session 8 and never shown to
//! the rule writer), scored once on session 8's merged rules (main 4c2f851): 24/55, the same as
//! the rules before that session. Its 31 misses were read in session 9 (first_sight_misses.tsv)
//! and it joined the read sets (crossval.rs, carryover.rs); the guard below holds the figure
//! reached after reading, which is not a held-out figure.

#[path = "support/cases.rs"]
mod cases;

use vramfit_doctor::diagnose;

const HOLDOUT8_N: usize = 55;
const HOLDOUT8_FIRST_SIGHT: usize = 24;
/// holdout8 after its misses were read (session 9): a guard, not a held-out figure.
const HOLDOUT8_READ: usize = 44;

#[test]
fn holdout8_read_does_not_fall() {
    let held8 = cases::holdout(8);
    assert_eq!(held8.len(), HOLDOUT8_N, "holdout8 size");
    let right = held8
        .iter()
        .filter(|c| diagnose(&c.excerpt).cause == c.expected)
        .count();
    println!(
        "holdout8 (oom_gathered7; first sight 24/55, read in session 9): {right}/{HOLDOUT8_N}"
    );
    assert!(HOLDOUT8_READ >= HOLDOUT8_FIRST_SIGHT);
    assert!(
        right >= HOLDOUT8_READ,
        "holdout8 {right}/{HOLDOUT8_N} fell below the figure after reading"
    );
}
