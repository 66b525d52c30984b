//! What a person sees: the cause first, a paragraph with the numbers, the fixes in order, then
//! the evidence. And the JSON contract of `vramfit doctor --json` (docs/DESIGN.md).

use std::fmt::Write;

use serde_json::{json, Value};

use crate::classify::Diagnosis;

/// The human report.
pub fn human(d: &Diagnosis) -> String {
    let mut s = String::new();
    // a fallback is the likeliest cause for the phase and engine, not a fact the log showed
    let low = if d.basis.fallback {
        " low: no fact in the log decided it,"
    } else {
        ""
    };
    let _ = writeln!(
        s,
        "cause: {} (confidence {:.2},{low} engine {})",
        d.cause.as_str(),
        d.confidence,
        d.engine.as_str()
    );
    let _ = writeln!(s);
    let _ = writeln!(s, "{}", wrap(&d.summary, 96));
    if !d.fixes.is_empty() {
        let _ = writeln!(s);
        let _ = writeln!(s, "fixes, in order:");
        for (i, f) in d.fixes.iter().enumerate() {
            let head = match (f.flag.is_empty(), f.value.is_empty()) {
                (true, _) => String::new(),
                (false, true) => format!("{}: ", f.flag),
                (false, false) if f.flag.starts_with('-') => format!("{} {}: ", f.flag, f.value),
                (false, false) => format!("{}={}: ", f.flag, f.value),
            };
            let _ = writeln!(s, "  {}. {head}{}", i + 1, f.why);
            if let Some(c) = &f.checked {
                let _ = writeln!(s, "     ({c})");
            }
        }
    }
    if !d.evidence.is_empty() {
        let _ = writeln!(s);
        let _ = writeln!(s, "evidence:");
        for e in &d.evidence {
            let _ = writeln!(s, "  - {e}");
        }
    }
    s
}

fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut col = 0;
    for word in text.split_whitespace() {
        if col > 0 && col + 1 + word.len() > width {
            out.push('\n');
            col = 0;
        } else if col > 0 {
            out.push(' ');
            col += 1;
        }
        out.push_str(word);
        col += word.len();
    }
    out
}

/// The JSON report. Stable keys: cause, confidence, engine, evidence, fixes[{flag, value, why}];
/// added: summary, settings, events, basis (phase, stack, engine family, totals printed, and
/// `fallback`: true when no fact decided the cause, only the fallback for its phase and engine).
pub fn json(d: &Diagnosis) -> Value {
    json!({
        "cause": d.cause.as_str(),
        "confidence": d.confidence,
        "engine": d.engine.as_str(),
        "summary": d.summary,
        "evidence": d.evidence,
        "fixes": d.fixes,
        "settings": d.settings,
        "events": d.events,
        "basis": d.basis,
    })
}
