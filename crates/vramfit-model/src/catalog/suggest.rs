//! "Did you mean": the catalog repo ids closest to a name that resolved to nothing.
//!
//! The query is reduced as the lookup reduces it (no `:QUANT` tag, no `-GGUF` suffix, no
//! organisation), then compared, lowercase, with the name part of every model id, alias and
//! pre-quantized repo. A candidate counts when its edit distance is at most a third of the
//! longer name (at least 2), or when one name contains the other; the closest come first, and
//! each is printed as the repo id to type.

use super::lookup::edit_distance;
use super::{models, variants};

/// Up to `n` catalog repo ids close to `query`, closest first (empty when none is close).
pub fn suggest_models(query: &str, n: usize) -> Vec<String> {
    let q = reduce(query);
    if q.len() < 2 {
        return Vec::new();
    }
    let mut scored: Vec<(usize, String)> = Vec::new();
    let mut consider = |name: &str, repo: &str| {
        let c = reduce(name);
        if c.is_empty() {
            return;
        }
        let d = edit_distance(&q, &c);
        let limit = (q.len().max(c.len()) / 3).max(2);
        let contained = c.len() >= 4 && (q.contains(&c) || c.contains(&q));
        if d <= limit || contained {
            // containment scores as the length difference, so "Qwen3-4B" is near "Qwen3-4B-Instruct"
            let score = if contained {
                d.min(q.len().abs_diff(c.len()))
            } else {
                d
            };
            scored.push((score, repo.to_string()));
        }
    };
    for m in models() {
        consider(&m.id, &m.id);
        for a in &m.aliases {
            consider(a, &m.id);
        }
    }
    for v in variants() {
        consider(&v.repo, &v.repo);
    }
    scored.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out: Vec<String> = Vec::new();
    for (_, repo) in scored {
        if !out.contains(&repo) {
            out.push(repo);
        }
        if out.len() == n {
            break;
        }
    }
    out
}

/// `unsloth/Qwen3-8B-GGUF:Q4_K_M` → `qwen3-8b`.
fn reduce(name: &str) -> String {
    let name = name.trim();
    let name = name.rsplit('/').next().unwrap_or(name);
    let name = match name.rfind(':') {
        // an Ollama tag (`qwen3:8b`) is part of the name; a GGUF quant tag is not
        Some(i) if name[..i].to_ascii_lowercase().ends_with("gguf") => &name[..i],
        _ => name,
    };
    let lower = name.to_ascii_lowercase();
    let lower = lower
        .strip_suffix("-gguf")
        .or_else(|| lower.strip_suffix("_gguf"))
        .unwrap_or(&lower);
    lower.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_misses_get_the_repo_id_to_type() {
        let s = suggest_models("Qwen/Qwen3-4B-Instruct-2508", 3);
        assert_eq!(
            s.first().map(String::as_str),
            Some("Qwen/Qwen3-4B-Instruct-2507")
        );
        let s = suggest_models("meta-llama/Llama-3.1-8B-Instrukt", 3);
        assert_eq!(
            s.first().map(String::as_str),
            Some("meta-llama/Llama-3.1-8B-Instruct")
        );
        let s = suggest_models("unsloth/gpt-oss-21b-GGUF:Q4_K_M", 3);
        assert!(s.iter().any(|r| r == "openai/gpt-oss-20b"), "{s:?}");
    }

    #[test]
    fn unrelated_names_get_no_suggestion() {
        assert!(suggest_models("acme/zzzzzzzzzzzzzzzz", 3).is_empty());
        assert!(suggest_models("", 3).is_empty());
        assert!(suggest_models("x", 3).is_empty());
    }
}
