//! What a person sees: tables with used/total bars. Colour only when stdout is a terminal and
//! NO_COLOR is unset.

use std::fmt::Write;
use vramfit_engine::{MemoryPlan, Verdict};
use vramfit_model::units::{fmt_bytes, fmt_context, GIB};

fn gib(b: u64) -> String {
    format!("{:.2}", b as f64 / GIB as f64)
}

/// Write a command's output to stdout; a closed pipe (`vramfit ... | head`) is not an error.
pub fn emit(text: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        crate::output::record_write_error(&e);
    }
}

/// A 24-cell bar of used over total; `!` past the end when over.
pub fn bar(used: u64, total: u64, width: usize) -> String {
    if total == 0 {
        return " ".repeat(width);
    }
    let frac = used as f64 / total as f64;
    let filled = ((frac.min(1.0)) * width as f64).round() as usize;
    let mut s = "#".repeat(filled) + &".".repeat(width - filled);
    if frac > 1.0 {
        s.pop();
        s.push('!');
    }
    s
}

pub fn check_report(p: &MemoryPlan) -> String {
    let mut o = String::new();
    let verdict = match p.verdict {
        Verdict::Fits => "FITS",
        Verdict::DoesNotFit => "DOES NOT FIT",
    };
    let _ = writeln!(o, "{} on {} GPU(s): {verdict}", p.model.id, p.devices.len());
    let _ = writeln!(o, "engine {} · {}", p.engine, p.model.architecture);
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "{:<28} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}  {}",
        "device (GiB)", "weights", "kv", "compute", "graphs", "other", "used", "free", "used/free"
    );
    for (i, d) in p.devices.iter().enumerate() {
        let name: String = format!("{i}: {}", d.name).chars().take(28).collect();
        let _ = writeln!(
            o,
            "{:<28} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}  [{}]",
            name,
            gib(d.weights_bytes),
            gib(d.kv_cache_bytes.max(0) as u64),
            gib(d.compute_bytes),
            gib(d.cuda_graph_bytes),
            gib(d.overhead_bytes),
            gib(d.used_bytes),
            gib(d.free_bytes),
            bar(d.used_bytes, d.free_bytes, 24)
        );
    }
    if p.host.weights_bytes + p.host.kv_cache_bytes + p.host.compute_bytes > 0 {
        let _ = writeln!(
            o,
            "{:<28} {:>8} {:>8} {:>8}",
            "host RAM",
            gib(p.host.weights_bytes),
            gib(p.host.kv_cache_bytes),
            gib(p.host.compute_bytes)
        );
    }
    let _ = writeln!(o);
    let kv = &p.kv_cache;
    if kv.tokens == 0 && kv.bytes > 0 && kv.bytes_per_token > 0 {
        // a pool too small for one full-length request: the engine refuses before it sizes the
        // cache in tokens (JSON keeps tokens 0), so say what the pool would hold
        let _ = writeln!(
            o,
            "KV cache: {} ({} per token), about {} tokens: less than one request of full length",
            fmt_bytes(kv.bytes as u64),
            fmt_bytes(kv.bytes_per_token),
            kv.bytes as u64 / kv.bytes_per_token
        );
    } else {
        let _ = writeln!(
            o,
            "KV cache: {} for {} tokens ({} per token), {:.2} requests of full length at once",
            fmt_bytes(kv.bytes.max(0) as u64),
            kv.tokens,
            fmt_bytes(kv.bytes_per_token),
            kv.max_concurrency
        );
    }
    let _ = writeln!(
        o,
        "largest context that fits with these settings: {} tokens ({})",
        p.max_model_len,
        fmt_context(p.max_model_len)
    );
    if !p.settings.is_empty() {
        let s: Vec<String> = p.settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(o, "settings: {}", s.join(" "));
    }
    for x in &p.problems {
        let _ = writeln!(o, "problem: {x}");
    }
    if !p.suggestions.is_empty() {
        let _ = writeln!(o, "to make it fit:");
        for s in &p.suggestions {
            let _ = writeln!(o, "  {s}");
        }
    }
    for n in &p.notes {
        let _ = writeln!(o, "note: {n}");
    }
    o
}
