//! The cross-validated accuracy of `doctor` on every real report in the tree, and the
//! check that no fix is a no-op or another engine's flag.
//!
//! Data (all in tests/fixtures, JSONL, one report per line with its established cause):
//! - `oom_dev.jsonl`: the first harvest (20 reports);
//! - `oom_apart.jsonl`: 7 reports collected after the first rules were written;
//! - `oom_h2.jsonl`: the second harvest (12), measured before any rule was changed for it;
//! - `oom_gathered.jsonl`: reports gathered for issue 13 from public issues, each with its
//!   source URL and the evidence that established the cause, split by a hash of the id into a
//!   `tune` half and a `score` half before any rule was run on them.
//!
//! Folds: the rules are hand-written, so "tuned" means "a person looked at the diagnoses of
//! these reports while writing rules".
//! - seen: dev + apart + h2 (measured once before any rule changed for it, 3/12, then looked
//!   at) + gathered `tune` and `score` halves (their baseline was printed once before the
//!   rules changed, so both count as seen);
//! - holdout: gathered `holdout`, 18 reports collected after the rules were written, whose
//!   diagnoses were not run until the final measurement. This is the cross-validated number.
//! - holdout2: 6 more gathered after that measurement (with only a bug fix for long logs and
//!   formatting changed in between), diagnosed once.
//! - holdout3: `oom_gathered2.jsonl`, 59 reports gathered apart from the rules (by another
//!   person, from other threads), scored once before any rule changed for it: 24/59.
//!
//! - holdout4 / holdout5: `oom_gathered3.jsonl` / `oom_gathered4.jsonl` (session 5), each scored at
//!   first sight (24/53, 22/51), read in session 6;
//! - holdout6: `oom_gathered5.jsonl` (session 6), gathered blind and never shown to the rule
//!   writer, scored once on that round's final rules: 26/52; its misses were read in session 7
//!   and rules written for the mechanisms whose evidence is in the text, so it is now seen.
//!
//! - holdout7: `oom_gathered6.jsonl` (session 7), gathered blind, scored once on that
//!   session's merged rules: 23/53; its 30 misses were read in session 8 (first_sight_misses.tsv)
//!   and rules written for the mechanisms whose evidence is in the text, so it is now seen.
//!
//! The first measurement of each holdout is the cross-validated number (docs/doctor.md). Once
//! measured, a holdout's misses were read and rules written for the mechanisms they show, so
//! the guards below only keep what is right now from regressing; they are not the held-out
//! figures. Every file above has now been read.
//!
//! - holdout8: `oom_gathered7.jsonl` (session 8), gathered blind while the rules changed and
//!   never shown to the rule writer, scored once on that session's merged rules: 24/55 (the
//!   rules before that session's changes also name 24). Its 31 misses were read in session 9
//!   (first_sight_misses.tsv) and rules written for the mechanisms whose evidence is in the
//!   text, so it is now seen; holdout8.rs keeps its first-sight and after-reading guards.
//!
//! - holdout9: `oom_gathered8.jsonl` (session 9), the first holdout sampled systematically,
//!   scored once on that session's merged rules: 38/54. Its 16 misses were read in session 10
//!   (first_sight_misses.tsv); holdout9.rs keeps its first-sight and after-reading guards.
//!
//! A tenth holdout must be scored once, on the rules as they stand, before any rule is changed
//! for it; that first score is the cross-validated figure (carryover.rs judges mechanisms the
//! same way).
//!
//! Run with `cargo test -p vramfit-doctor --test crossval -- --nocapture` for the matrices.

#[path = "support/prior.rs"]
mod prior;

#[path = "support/cases.rs"]
mod cases;

use std::collections::BTreeMap;

use cases::{holdout, seen_fold, Case};
use vramfit_doctor::fixes::{already_set, belongs};
use vramfit_doctor::{diagnose, Cause};

/// holdout6's size and its first-sight score (measured once, session 6, before it was read).
const HOLDOUT6_N: usize = 52;
const HOLDOUT6_FIRST_SIGHT: usize = 26;
/// holdout6 after its misses were read (session 7): a guard, not a held-out figure.
const HOLDOUT6_READ: usize = 42;
/// holdout7's size and its first-sight score (measured once, at the end of session 7, on the
/// merged rules, before anyone read its misses).
const HOLDOUT7_N: usize = 53;
const HOLDOUT7_FIRST_SIGHT: usize = 23;
/// holdout7 after its misses were read (session 8): a guard, not a held-out figure.
const HOLDOUT7_READ: usize = 39;

/// The first-sight misses (all holdouts) the rules name right today (a guard).
const MISSES_RIGHT_NOW: usize = 133;
/// Every labelled report and how many of them the rules name right in-sample (a guard).
const EVERY_N: usize = 483;
const EVERY_RIGHT: usize = 398;

fn holdout_fold() -> Vec<Case> {
    holdout(1)
}

fn holdout2_fold() -> Vec<Case> {
    holdout(2)
}

fn holdout3_fold() -> Vec<Case> {
    holdout(3)
}

/// `oom_gathered4.jsonl`: gathered in session 5, held apart from the rule writer, scored once
/// on that round's final rules: 22/51.
fn holdout5_fold() -> Vec<Case> {
    holdout(5)
}

/// `oom_gathered5.jsonl`: gathered blind in session 6 by a person who neither ran doctor on it
/// nor saw the rules change; the rule writer never saw it. Scored once, on that round's final
/// rules (main at the merge of h5/doctor5).
fn holdout6_fold() -> Vec<Case> {
    holdout(6)
}

/// `oom_gathered6.jsonl`: gathered blind in session 7 by a person who neither ran doctor on it
/// nor saw the rules change; scored once on the merged rules of that session (main at
/// f4a387f): 23/53. Its misses were read in session 8.
fn holdout7_fold() -> Vec<Case> {
    holdout(7)
}

/// `oom_gathered3.jsonl`, gathered by another person in batches (one commit each on h4/ddata)
/// while the rules were being changed; each batch scored once when it arrived, misses unread,
/// with the rules of that moment (main's binary scored the same on every batch):
/// a110bc6 3/8, 13792e7 1/4, 89ddd1a 0/3 (13:07 UTC); 1316c4a 2/3, 813539f 2/3, 9e211b6 0/3,
/// b2beb90 3/4, 957807e 0/2, 28a9cc8 1/3, 2659044 1/1, 6161a7c 0/2 (13:13 UTC); eb22f73 2/3,
/// 025be6e 2/3, 4a2c9d9 0/2 (13:15 UTC); 3887eb3 1/2, 87a2ff6 2/2 (13:16 UTC); 9b1f1db 2/2
/// (main's rules 1/2), 676541b 0/1 (13:17 UTC); 0d416be 2/2 (13:18 UTC): 24/53 (main's rules
/// 23/53). That was the last batch; the same rules scored blind at 14:09 named 24/53. Its
/// misses were read from 14:10 and rules written for the mechanisms they show: 33/53 since.
fn holdout4_fold() -> Vec<Case> {
    holdout(4)
}

struct Scored {
    right: usize,
    total: usize,
    per_class: BTreeMap<&'static str, (usize, usize)>,
}

fn score(label: &str, cases: &[Case], show_misses: bool) -> Scored {
    let idx = |c: Cause| Cause::ALL.iter().position(|x| *x == c).unwrap_or(0);
    let mut m: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    let mut per_class: BTreeMap<&'static str, (usize, usize)> = BTreeMap::new();
    let mut right = 0;
    let mut misses = Vec::new();
    for c in cases {
        let d = diagnose(&c.excerpt);
        let got = d.cause;
        if std::env::var_os("DOCTOR_DUMP").is_some() {
            println!(
                "DUMP {}\t{}\t{}\t{}\t{:.2}\t{}\t{}",
                c.set,
                c.id,
                c.expected.as_str(),
                got.as_str(),
                d.confidence,
                d.basis.key(),
                if d.basis.fallback { "FALLBACK" } else { "" }
            );
        }
        *m.entry((idx(c.expected), idx(got))).or_default() += 1;
        let e = per_class.entry(c.expected.as_str()).or_default();
        e.1 += 1;
        if got == c.expected {
            right += 1;
            e.0 += 1;
        } else {
            misses.push(format!(
                "  miss {}/{}: expected {}, got {}",
                c.set,
                c.id,
                c.expected.as_str(),
                got.as_str()
            ));
            // DOCTOR_SHOW_MISSES=1 prints why (for a person reading the misses)
            if std::env::var_os("DOCTOR_SHOW_MISSES").is_some() {
                misses.push(format!(
                    "      engine {} ({:.2}): {} | {}",
                    d.engine.as_str(),
                    d.confidence,
                    d.summary,
                    d.evidence.join(" | ")
                ));
            }
        }
    }
    println!(
        "{label}: {right}/{} right ({:.1}%)",
        cases.len(),
        100.0 * right as f64 / cases.len().max(1) as f64
    );
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
            let cell = if n == 0 {
                ".".to_string()
            } else {
                n.to_string()
            };
            print!(" {cell:>6}");
        }
        println!();
    }
    for (class, (r, t)) in &per_class {
        println!("  {class}: {r}/{t}");
    }
    if show_misses {
        for m in misses {
            println!("{m}");
        }
    }
    Scored {
        right,
        total: cases.len(),
        per_class,
    }
}

#[test]
fn cross_validated_accuracy() {
    let seen = seen_fold();
    let held = holdout_fold();
    let s = score("seen (rules written looking at these)", &seen, true);
    let h = score("holdout (first measured 6/18, since read)", &held, true);
    let held2 = holdout2_fold();
    let h2 = score("holdout2 (first measured 4/6, since read)", &held2, true);
    let held3 = holdout3_fold();
    let h3 = score(
        "holdout3 (oom_gathered2; first measured 24/59, since read)",
        &held3,
        true,
    );
    let held4 = holdout4_fold();
    let h4 = score(
        "holdout4 (oom_gathered3; first sight 24/53, read since)",
        &held4,
        true,
    );
    // holdout5 (oom_gathered4): gathered by another person while the rules changed, held apart
    // from the rule writers, scored once on the final rules of this round
    let held5 = holdout5_fold();
    let h5 = score(
        "holdout5 (oom_gathered4; first sight 22/51, read in session 6)",
        &held5,
        true,
    );
    assert_eq!(held5.len(), 51, "holdout5 has 51 reports");
    // first measurement 22/51 (docs/doctor.md); its misses were read in session 6 and rules
    // written for the mechanisms whose evidence is in the text: today's figures, not held out
    assert!(
        h5.right >= 40,
        "holdout5 {}/{} fell below the figure after reading",
        h5.right,
        h5.total
    );
    assert!(
        h4.right >= 39,
        "holdout4 {}/{} fell below the figure after reading",
        h4.right,
        h4.total
    );
    // holdout6 (oom_gathered5): held apart from the rule writer of session 6, scored once on
    // the final rules of that round. This is the cross-validated figure of that round.
    let held6 = holdout6_fold();
    let h6 = score(
        "holdout6 (oom_gathered5; first sight 26/52, read in session 7)",
        &held6,
        true,
    );
    assert_eq!(held6.len(), HOLDOUT6_N, "holdout6 size");
    assert!(HOLDOUT6_READ > HOLDOUT6_FIRST_SIGHT);
    assert!(
        h6.right >= HOLDOUT6_READ,
        "holdout6 {}/{} fell below the figure after reading",
        h6.right,
        h6.total
    );
    // holdout7 (oom_gathered6): held apart from every rule writer until the end of session 7,
    // scored once on that session's merged rules: the cross-validated figure of that round
    let held7 = holdout7_fold();
    let h7 = score(
        "holdout7 (oom_gathered6; first sight 23/53, read in session 8)",
        &held7,
        true,
    );
    assert_eq!(held7.len(), HOLDOUT7_N, "holdout7 size");
    assert!(HOLDOUT7_READ >= HOLDOUT7_FIRST_SIGHT);
    assert!(
        h7.right >= HOLDOUT7_READ,
        "holdout7 {}/{} fell below the figure after reading",
        h7.right,
        h7.total
    );
    // every labelled report (483), in-sample: the confusion matrix docs/accuracy-doctor.md publishes
    let every: Vec<Case> = kfold_reports()
        .into_iter()
        .chain(held4.iter().cloned())
        .chain(held5.iter().cloned())
        .chain(held6.iter().cloned())
        .chain(held7.iter().cloned())
        .chain(holdout(8))
        .chain(holdout(9))
        .collect();
    let e = score("every labelled report (in-sample)", &every, false);
    assert_eq!(every.len(), EVERY_N);
    assert!(
        e.right >= EVERY_RIGHT,
        "all {EVERY_N}: {}/{}",
        e.right,
        e.total
    );
    for (class, (r, n)) in &e.per_class {
        assert!(
            *r as f64 >= 0.7 * *n as f64,
            "all {EVERY_N}, class {class}: {r}/{n} below 70%"
        );
    }
    let all: Vec<Case> = seen
        .into_iter()
        .chain(held)
        .chain(held2)
        .chain(held3)
        .collect();
    let a = score("all reports with an established cause", &all, false);
    assert!(
        all.len() >= 100,
        "only {} reports with an established cause",
        all.len()
    );
    let share = s.right as f64 / s.total as f64;
    assert!(share >= 0.90, "seen: {:.1}% < 90%", share * 100.0);
    for (class, (r, n)) in &s.per_class {
        assert!(
            *r as f64 >= 0.7 * *n as f64,
            "seen class {class}: {r}/{n} below 70%"
        );
    }
    // First (clean) measurements: holdout 6/18, holdout2 4/6, holdout3 24/59 (docs/doctor.md).
    // The guards hold today's figures, reached after their misses were read.
    assert!(
        h.right >= 15,
        "holdout {}/{} fell below its first measurement",
        h.right,
        h.total
    );
    assert!(
        h2.right >= 6,
        "holdout2 {}/{} fell below its first measurement",
        h2.right,
        h2.total
    );
    assert!(
        h3.right >= 47,
        "holdout3 {}/{} fell below its first measurement",
        h3.right,
        h3.total
    );
    assert!(
        a.right as f64 >= 0.85 * a.total as f64,
        "all: {}/{}",
        a.right,
        a.total
    );
    for (class, (r, n)) in &a.per_class {
        assert!(
            *r as f64 >= 0.7 * *n as f64,
            "all reports, class {class}: {r}/{n} below 70%"
        );
    }
}

#[test]
fn every_fix_is_the_engines_own_and_changes_something() {
    let all: Vec<Case> = cases::every_report();
    assert_eq!(all.len(), EVERY_N);
    let mut fixes = 0;
    for c in &all {
        let d = diagnose(&c.excerpt);
        for f in &d.fixes {
            if f.flag.is_empty() {
                continue;
            }
            fixes += 1;
            // the vocabulary and the settings comparison are fixes.rs's own (the one list
            // `vet` filters with): this checks that every path through the rules is vetted
            assert!(
                belongs(d.engine, &f.flag),
                "{}: engine {} got another engine's flag {} {}",
                c.id,
                d.engine.as_str(),
                f.flag,
                f.value
            );
            assert!(
                !already_set(f, &d.settings),
                "{}: fix {} {} is the value already set",
                c.id,
                f.flag,
                f.value
            );
            assert!(
                f.value != "fewer" && f.value != "lower",
                "{}: fix {} has no computed value",
                c.id,
                f.flag
            );
        }
    }
    println!("{fixes} flag fixes checked");
}

/// The fold of a report in the k-fold measurement: FNV-1a of a fixed seed and its id.
fn kfold_of(id: &str, k: u64) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in format!("vramfit-doctor-kfold-1:{id}").bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % k) as usize
}

/// Every labelled report of the earlier folds, scored by the k-fold figure (holdout4 stays out:
/// it is the data neither the rules nor the prior saw when the decision was made).
fn kfold_reports() -> Vec<Case> {
    let mut all = seen_fold();
    all.extend(holdout_fold());
    all.extend(holdout2_fold());
    all.extend(holdout3_fold());
    all
}

/// Does a learned prior P(cause | phase, engine family, stack, numbers present) beat the hand
/// rules? k = 5 folds by a hash of the id (fixed seed); the prior is counted on four folds
/// and used on the fifth only where the rules decided without a mechanism-specific fact
/// (`basis.fallback`); the rules are scored on the same folds.
#[test]
fn kfold_rules_vs_prior() {
    // every labelled report, holdouts 4-6 included now that all have been read
    let every = cases::every_report();
    let (rules, with_prior, low_prior) = kfold(&every);
    println!(
        "all {}: rules {rules}, rules+prior at fallbacks {with_prior}, at conf<=0.45 {low_prior}",
        every.len()
    );
    assert!(
        with_prior <= rules && low_prior <= rules,
        "on all {} the prior beats the rules ({with_prior} / {low_prior} vs {rules}): reconsider it",
        every.len()
    );
    kfold_165();
}

/// The answers with the learned prior: (at the rules' fallbacks, at confidence <= 0.45); the
/// rules' own cause where the prior is not consulted or has no guess.
fn prior_answers(prior: &prior::Prior, d: &vramfit_doctor::Diagnosis) -> (Cause, Cause) {
    let guess = prior.predict(&d.basis).map(|(c, _, _)| c);
    let at = |use_prior: bool| {
        if use_prior {
            guess.unwrap_or(d.cause)
        } else {
            d.cause
        }
    };
    (at(d.basis.fallback), at(d.confidence <= 0.45))
}

/// Rules vs rules + prior by k-fold over `reports`: (rules, prior at fallbacks, prior at
/// confidence <= 0.45), each a count of right answers.
fn kfold(reports: &[Case]) -> (usize, usize, usize) {
    kfold_folds(reports)
        .1
        .iter()
        .fold((0, 0, 0), |(r, p, l), f| (r + f.1, p + f.2, l + f.3))
}

/// The k-fold comparison fold by fold: each fold's (n, rules, prior at fallbacks, prior at
/// confidence <= 0.45), the prior fitted on the other folds; and every report's diagnosis.
#[allow(clippy::type_complexity)]
fn kfold_folds(
    reports: &[Case],
) -> (
    Vec<(usize, vramfit_doctor::Diagnosis, Cause)>,
    Vec<(usize, usize, usize, usize)>,
) {
    use prior::Prior;
    const K: u64 = 5;
    let scored: Vec<(usize, vramfit_doctor::Diagnosis, Cause)> = reports
        .iter()
        .map(|c| (kfold_of(&c.id, K), diagnose(&c.excerpt), c.expected))
        .collect();
    let mut folds = Vec::new();
    for k in 0..K as usize {
        let prior = Prior::fit(
            scored
                .iter()
                .filter(|(f, _, _)| *f != k)
                .map(|(_, d, e)| (&d.basis, *e)),
        );
        let (mut r, mut p, mut l, mut m) = (0, 0, 0, 0);
        for (_, d, e) in scored.iter().filter(|(f, _, _)| *f == k) {
            m += 1;
            r += usize::from(d.cause == *e);
            let (by_fallback, by_low) = prior_answers(&prior, d);
            p += usize::from(by_fallback == *e);
            l += usize::from(by_low == *e);
        }
        folds.push((m, r, p, l));
    }
    (scored, folds)
}

fn kfold_165() {
    use prior::Prior;
    let reports = kfold_reports();
    let (scored, folds) = kfold_folds(&reports);
    let (mut rules, mut with_prior, mut low_prior, mut n) = (0, 0, 0, 0);
    println!("fold  n  rules  rules+prior(fallback)  rules+prior(conf<=0.45)");
    for (k, (m, r, p, l)) in folds.into_iter().enumerate() {
        println!("{k:>4} {m:>3} {r:>6} {p:>22} {l:>24}");
        rules += r;
        with_prior += p;
        low_prior += l;
        n += m;
    }
    println!("all  {n:>3} {rules:>6} {with_prior:>22} {low_prior:>24}");
    assert_eq!(n, reports.len());
    // the decision docs/accuracy-doctor.md states: the prior is not used because it does not beat
    // the rules; if that changes, this fails and the decision must be made again
    assert!(
        with_prior <= rules && low_prior <= rules,
        "the prior now beats the rules ({with_prior} / {low_prior} vs {rules}): reconsider it"
    );
    // the same comparison on holdout4, which neither the rules nor the prior saw: the prior
    // counted on all the reports above (counts only; holdout4's misses stay unread)
    let prior = Prior::fit(scored.iter().map(|(_, d, e)| (&d.basis, *e)));
    let (mut r, mut p) = (0, 0);
    let held4 = holdout4_fold();
    for c in &held4 {
        let d = diagnose(&c.excerpt);
        r += usize::from(d.cause == c.expected);
        p += usize::from(prior_answers(&prior, &d).0 == c.expected);
    }
    println!(
        "holdout4 {}: rules {r}, rules+prior(fallback) {p}",
        held4.len()
    );
}

/// `first_sight_misses.tsv`: every report each holdout's first measurement missed (210 of
/// 401), with the answer of that moment's rules (rebuilt from the commit each holdout was first
/// scored at; holdout6's from session 6's final rules, holdout7's from session 7's merged
/// rules, holdout8's from session 8's merged rules, main 4c2f851; holdout9's from session 9's merged rules, main 1757392), the kind of miss and what in the text establishes the label (docs/accuracy-doctor.md).
#[test]
fn first_sight_misses_table() {
    let table = cases::FIRST_SIGHT_MISSES;
    let all: Vec<Case> = (1..=9).flat_map(holdout).collect();
    let mut kinds: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    let mut right_now = 0;
    let mut rows = 0;
    for line in table.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 8, "{line}");
        let c = all
            .iter()
            .find(|c| c.id == f[1])
            .unwrap_or_else(|| panic!("{} is no labelled report", f[1]));
        assert_eq!(c.expected.as_str(), f[2], "{}", f[1]);
        assert_ne!(f[2], f[3], "{}: a first-sight miss", f[1]);
        assert!(["N", "M", "P", "E", "A"].contains(&f[5]), "{}", f[1]);
        *kinds.entry((f[0], f[5])).or_default() += 1;
        rows += 1;
        right_now += usize::from(diagnose(&c.excerpt).cause == c.expected);
    }
    println!("first-sight misses by fold and kind: {kinds:?}; right today: {right_now}/{rows}");
    assert_eq!(rows, 210, "191 of 401 right at first sight");
    // every holdout's first-sight score follows from the table
    let first: usize = all
        .iter()
        .filter(|c| cases::first_sight(c) == c.expected)
        .count();
    assert_eq!(first, 191);
    assert!(
        right_now >= MISSES_RIGHT_NOW,
        "{right_now}/210 first-sight misses right today"
    );
}
