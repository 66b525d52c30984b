//! A learned prior P(cause | phase, engine family, stack, numbers present): counts of the
//! established causes of labelled reports, keyed by their [`Basis`]. It was meant for the
//! decisions the rules make without a mechanism-specific fact (`Basis::fallback`) and is
//! measured against the rules by k-fold cross-validation (crossval.rs `kfold_rules_vs_prior`).
//! It did not beat the rules (docs/accuracy-doctor.md), so `diagnose` does not use it; it lives with
//! the test that measures it.
//!
//! Back-off: the most specific key with at least [`MIN_COUNT`] reports decides (phase, family,
//! stack, totals → phase, family, stack → family, stack → stack). Ties go to the cause listed
//! first in [`Cause::ALL`].

use std::collections::BTreeMap;

use vramfit_doctor::classify::Basis;
use vramfit_doctor::Cause;

/// A key needs this many labelled reports before its counts decide.
pub const MIN_COUNT: u32 = 3;

/// Counts of established causes per basis key, at every back-off level.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prior {
    counts: BTreeMap<String, [u32; 10]>,
}

/// The back-off keys of a basis, most specific first.
pub fn keys(b: &Basis) -> [String; 4] {
    let totals = if b.has_totals { "totals" } else { "no_totals" };
    let (w, f, s) = (b.when.as_str(), b.family, b.stack.as_str());
    [
        format!("{w}|{f}|{s}|{totals}"),
        format!("{w}|{f}|{s}|*"),
        format!("*|{f}|{s}|*"),
        format!("*|*|{s}|*"),
    ]
}

fn index(c: Cause) -> usize {
    Cause::ALL.iter().position(|x| *x == c).unwrap_or(9)
}

impl Prior {
    /// Count the established causes of labelled reports.
    pub fn fit<'a>(reports: impl IntoIterator<Item = (&'a Basis, Cause)>) -> Prior {
        let mut p = Prior::default();
        for (b, c) in reports {
            for k in keys(b) {
                p.counts.entry(k).or_insert([0; 10])[index(c)] += 1;
            }
        }
        p
    }

    /// The most frequent cause at the most specific key with enough reports, with that key's
    /// count and the cause's share of it.
    pub fn predict(&self, b: &Basis) -> Option<(Cause, u32, f64)> {
        keys(b).iter().find_map(|k| {
            let row = self.counts.get(k)?;
            let n: u32 = row.iter().sum();
            if n < MIN_COUNT {
                return None;
            }
            let (i, best) = row
                .iter()
                .enumerate()
                .max_by_key(|(i, c)| (**c, std::cmp::Reverse(*i)))?;
            Some((Cause::ALL[i], n, *best as f64 / n as f64))
        })
    }
}
