//! holdout9 (`oom_gathered8.jsonl`, 54 reports), the first holdout sampled systematically: fixed
//! queries of pasted error strings, hits taken in the search tool's order, every hit with an
//! established cause labelled (fixtures/oom_gathered8_sampling.md), blind to the tool; a second
//! reader re-labelled all 54 blind (second_reader_holdout9.jsonl). Scored once in session 9:
//! 38/54 on the merged rules, and 38/54 on the rules before that session (main 4c2f851).
//! Its 16 misses were read in session 10 (first_sight_misses.tsv) and it joined the read sets
//! (crossval.rs, carryover.rs); the guard below holds the figure reached after reading, which
//! is not a held-out figure.

#[path = "support/cases.rs"]
mod cases;

use vramfit_doctor::diagnose;

const HOLDOUT9_N: usize = 54;
const HOLDOUT9_FIRST_SIGHT: usize = 38;
/// holdout9 after its misses were read (session 10): a guard, not a held-out figure.
const HOLDOUT9_READ: usize = 51;

#[test]
fn holdout9_read_does_not_fall() {
    let held9 = cases::holdout(9);
    assert_eq!(held9.len(), HOLDOUT9_N, "holdout9 size");
    let right = held9
        .iter()
        .filter(|c| diagnose(&c.excerpt).cause == c.expected)
        .count();
    println!(
        "holdout9 (oom_gathered8; first sight 38/54, read in session 10): {right}/{HOLDOUT9_N}"
    );
    assert!(HOLDOUT9_READ >= HOLDOUT9_FIRST_SIGHT);
    assert!(
        right >= HOLDOUT9_READ,
        "holdout9 {right}/{HOLDOUT9_N} fell below the figure after reading"
    );
}
