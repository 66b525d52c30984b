//! Finding catalog entries by the names people type.
//!
//! **Models** ([`find_model`]), first rule that matches wins:
//! 1. the query as given, against repo ids and aliases (case-insensitive);
//! 2. the same after dropping a `:QUANT` tag (`ORG/NAME-GGUF:Q4_K_M`, llama.cpp's `-hf` form)
//!    and a trailing `-GGUF`/`-gguf`; a name spelled `ORG_NAME` (bartowski's GGUF repos) reads as
//!    `ORG/NAME` when ORG is an organisation of the catalog;
//! 3. the name part (after `ORG/`) against the name part of every repo id, across organisations,
//!    then against aliases;
//! 4. the same with a trailing `-Instruct`, `-it`, `-Chat` (or `-hf`) ignored on both
//!    sides, because base and tuned checkpoints share the architecture;
//! 5. last resort: the query's words (with a size among them) start one name, or names that
//!    all extend the shortest (`qwen3-coder-30b` → Qwen3-Coder-30B-A3B-Instruct).
//!
//! An org-less `NAME:TAG` (an Ollama name) only loses its tag when the tag is a quant or
//! `latest`: `qwen3:30b` never falls back to `qwen3` (another size).
//!
//! **GPUs** ([`find_gpu`]): names are split into lowercase tokens at non-alphanumerics and at
//! letter/digit boundaries (`RTX4090` → `rtx 4090`, `A100-80G` → `a 100 80 gb`); vendor words
//! (`nvidia`, `geforce`, `tesla`, `amd`, `radeon`, `instinct`, `apple`, `intel`, `(R)`, `(TM)`,
//! `graphics`, `gpu`, `generation`, `edition`) are dropped and `g`/`gib` after a number read as `gb`.
//! 1. an id, name or alias whose tokens equal the query's wins;
//! 2. else every entry whose tokens (plus its marketing size, `24 gb`) contain all the query's
//!    tokens and its model number (`4090`; `L4`'s `4` beside its letter: never a lone letter, a
//!    lone digit or the size alone, so `x` is not the MI250X) is a candidate, and the one with the fewest extra name tokens wins (`3090` → RTX
//!    3090, not 3090 Ti; `3090 Ti` never matches the RTX 3090). Ties go to the entry listed first
//!    in the catalog (the RTX 4060 Ti 16 GB before the 8 GB card, which the driver names alike).
//!
//! A bare family name that covers several variants picks the most common variant because the
//! catalog gives that variant the family name as an alias (`A100` → A100-SXM4-80GB, `H100` →
//! H100 80GB HBM3 (SXM5), `V100` → V100-SXM2-16GB, the AWS p3 card); see `catalog/gpus.json`.

use super::{gpus, models, CatalogGpu, CatalogModel};
use std::fmt;

/// An unknown or empty GPU name; the message lists the closest catalog names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuLookupError {
    pub query: String,
    /// Up to five catalog names closest to the query, best first.
    pub suggestions: Vec<String>,
}

impl fmt::Display for GpuLookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.query.trim().is_empty() {
            return write!(
                f,
                "empty GPU name; give a name such as 'RTX 4090' or a size such as 24GiB"
            );
        }
        write!(f, "unknown GPU '{}'", self.query)?;
        if !self.suggestions.is_empty() {
            write!(f, "; closest: {}", self.suggestions.join(", "))?;
        }
        write!(f, " (or give the memory size instead, e.g. 24GiB)")
    }
}

impl std::error::Error for GpuLookupError {}

/// The model whose repo id, name or alias matches `query` (rules in the module docs).
pub fn find_model(query: &str) -> Option<&'static CatalogModel> {
    find_model_in(models(), query)
}

/// [`find_model`] over any list of models.
pub fn find_model_in<'a>(catalog: &'a [CatalogModel], query: &str) -> Option<&'a CatalogModel> {
    let q = query.trim();
    if q.is_empty() {
        return None;
    }
    let eq = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    let full = |q: &str| {
        catalog
            .iter()
            .find(|m| eq(&m.id, q))
            .or_else(|| catalog.iter().find(|m| m.aliases.iter().any(|a| eq(a, q))))
    };
    if let Some(m) = full(q) {
        return Some(m);
    }
    // an org-less `NAME:TAG` is an Ollama name: its tag is a size (`qwen3:30b`), and dropping
    // it would answer another size of the family (`qwen3` is Qwen3-8B); only a quant or
    // `latest` tag may go
    if !q.contains('/') && q.split_once(':').is_some_and(|(_, t)| !droppable_tag(t)) {
        return None;
    }
    let base = strip_gguf(strip_tag(q));
    if let Some(m) = full(base) {
        return Some(m);
    }
    let mut name = name_part(base);
    // bartowski-style GGUF repos spell the source repo as ORG_NAME: `Qwen_Qwen3-8B-GGUF`.
    if let Some((org, rest)) = name.split_once('_') {
        let known_org = catalog
            .iter()
            .any(|m| m.id.split('/').next().is_some_and(|o| eq(o, org)));
        if known_org {
            if let Some(m) = full(&format!("{org}/{rest}")) {
                return Some(m);
            }
            name = rest;
        }
    }
    let by_name = |name: &str, norm: fn(&str) -> &str| {
        let n = norm(name);
        catalog.iter().find(|m| eq(norm(m.name()), n)).or_else(|| {
            catalog
                .iter()
                .find(|m| m.aliases.iter().any(|a| eq(norm(name_part(a)), n)))
        })
    };
    by_name(name, |s| s)
        .or_else(|| by_name(name, strip_tuning_suffix))
        .or_else(|| by_name_prefix(catalog, name))
}

/// A tag that names no size: a quant (`Q4_K_M`, `iq4_xs`, `f16`, `bf16`, `mxfp4`) or `latest`.
pub(crate) fn droppable_tag(tag: &str) -> bool {
    let t = tag.to_ascii_lowercase();
    let quant = |t: &str| {
        (t.starts_with('q') || t.starts_with("iq")) && t.chars().any(|c| c.is_ascii_digit())
            || matches!(t, "f16" | "fp16" | "bf16" | "f32" | "mxfp4" | "mxfp4_moe")
    };
    t == "latest" || quant(&t) || t.strip_prefix("ud-").is_some_and(quant)
}

/// Rule 5: the query's dash-separated words start exactly one catalog name, or several that
/// all extend the shortest (`qwen3-coder-30b` → Qwen3-Coder-30B-A3B-Instruct; `qwen3-30b` →
/// Qwen3-30B-A3B, which Qwen3-30B-A3B-Instruct-2507 extends). The query must name a size (a
/// word with a digit after the first) so that a family name alone (`qwen3`) matches nothing.
fn by_name_prefix<'a>(catalog: &'a [CatalogModel], name: &str) -> Option<&'a CatalogModel> {
    let words = |s: &str| -> Vec<String> {
        s.split(['-', '_', ' '])
            .filter(|w| !w.is_empty())
            .map(str::to_ascii_lowercase)
            .collect()
    };
    let q = words(name);
    if q.len() < 2 || !q[1..].iter().any(|w| w.chars().any(|c| c.is_ascii_digit())) {
        return None;
    }
    let mut hits: Vec<(&CatalogModel, Vec<String>)> = catalog
        .iter()
        .map(|m| (m, words(m.name())))
        .filter(|(_, w)| w.len() > q.len() && w[..q.len()] == q[..])
        .collect();
    hits.sort_by_key(|(_, w)| w.len());
    let (first, shortest) = hits.first()?;
    hits.iter()
        .all(|(_, w)| w[..shortest.len()] == shortest[..])
        .then_some(*first)
}

/// `ORG/NAME-GGUF:Q4_K_M` → `ORG/NAME-GGUF`. Only a tag after the last `/` counts.
fn strip_tag(q: &str) -> &str {
    let slash = q.rfind('/').map_or(0, |i| i + 1);
    match q[slash..].rfind(':') {
        Some(i) => &q[..slash + i],
        None => q,
    }
}

fn strip_gguf(q: &str) -> &str {
    for suffix in ["-GGUF", "-gguf", "_GGUF", "-Gguf"] {
        if let Some(s) = q.strip_suffix(suffix) {
            return s;
        }
    }
    q
}

fn name_part(q: &str) -> &str {
    q.rsplit('/').next().unwrap_or(q)
}

/// `Qwen2.5-7B-Instruct` → `Qwen2.5-7B`; `gemma-2-9b-it` → `gemma-2-9b`.
fn strip_tuning_suffix(name: &str) -> &str {
    let lower = name.to_ascii_lowercase();
    for suffix in ["-instruct", "-chat", "-it", "-hf"] {
        if lower.ends_with(suffix) {
            return &name[..name.len() - suffix.len()];
        }
    }
    name
}

/// The GPU named by `query` (rules in the module docs), or an error listing the closest names.
pub fn find_gpu(query: &str) -> Result<&'static CatalogGpu, GpuLookupError> {
    find_gpu_in(gpus(), query)
}

/// [`find_gpu`] over any list of GPUs.
pub fn find_gpu_in<'a>(
    catalog: &'a [CatalogGpu],
    query: &str,
) -> Result<&'a CatalogGpu, GpuLookupError> {
    let q = gpu_tokens(query);
    if q.is_empty() {
        return Err(GpuLookupError {
            query: query.to_string(),
            suggestions: Vec::new(),
        });
    }
    let names = |g: &'a CatalogGpu| {
        std::iter::once(&g.id)
            .chain(std::iter::once(&g.name))
            .chain(g.aliases.iter())
    };
    if let Some(g) = catalog
        .iter()
        .find(|g| names(g).any(|n| gpu_tokens(n) == q))
    {
        return Ok(g);
    }
    let mut best: Option<(usize, &CatalogGpu)> = None;
    for g in catalog {
        // The marketing size counts as part of every name: "RTX 4090 24GB" finds the RTX 4090.
        let size = [
            format!("{}", g.memory_marketing_gb.round() as u64),
            "gb".to_string(),
        ];
        let extra = names(g)
            .filter_map(|n| {
                let t = gpu_tokens(n);
                let covered = q.iter().all(|w| t.contains(w) || size.contains(w));
                (covered && names_model(&q, &t))
                    .then(|| t.iter().filter(|w| !q.contains(w)).count())
            })
            .min();
        if let Some(extra) = extra {
            if best.is_none_or(|(e, _)| extra < e) {
                best = Some((extra, g));
            }
        }
    }
    best.map(|(_, g)| g).ok_or_else(|| GpuLookupError {
        query: query.to_string(),
        suggestions: suggest(catalog, &q),
    })
}

/// Whether the query names the card's model number, not only a letter or its memory size: a
/// number of two or more digits in the name (`4090`, `100` of A100), or a one-digit one beside a
/// letter of the name (`L4`). `x` (of MI250X), `1` (of M1) or `24 gb` alone name no card.
fn names_model(q: &[String], name: &[String]) -> bool {
    let digits = |w: &String| w.chars().all(|c| c.is_ascii_digit());
    let shared = |w: &&String| name.contains(w);
    let letter = q.iter().filter(shared).any(|w| !digits(w));
    q.iter()
        .filter(shared)
        .filter(|w| digits(w))
        .any(|w| w.len() >= 2 || letter)
}

/// Words that vendors print but people leave out.
const NOISE: &[&str] = &[
    "nvidia",
    "geforce",
    "tesla",
    "amd",
    "radeon",
    "instinct",
    "apple",
    "intel",
    "r",
    "tm",
    "graphics",
    "gpu",
    "generation",
    "edition",
];

/// Lowercase tokens of a GPU name, split at non-alphanumerics and letter/digit boundaries,
/// without vendor words, with `g`/`gib` after a number read as `gb`. Tokens are de-duplicated.
pub fn gpu_tokens(name: &str) -> Vec<String> {
    let mut raw: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut prev: Option<char> = None;
    for c in name.chars().flat_map(char::to_lowercase) {
        if !c.is_ascii_alphanumeric() {
            if !cur.is_empty() {
                raw.push(std::mem::take(&mut cur));
            }
            prev = None;
            continue;
        }
        if let Some(p) = prev {
            if p.is_ascii_digit() != c.is_ascii_digit() && !cur.is_empty() {
                raw.push(std::mem::take(&mut cur));
            }
        }
        cur.push(c);
        prev = Some(c);
    }
    if !cur.is_empty() {
        raw.push(cur);
    }
    let mut out: Vec<String> = Vec::new();
    for (i, t) in raw.iter().enumerate() {
        if NOISE.contains(&t.as_str()) {
            continue;
        }
        let after_number = i > 0 && raw[i - 1].chars().all(|c| c.is_ascii_digit());
        let t = if after_number && (t == "g" || t == "gib") {
            "gb".to_string()
        } else {
            t.clone()
        };
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// The five catalog names closest to the query: most shared tokens first, then the smallest edit
/// distance to any spelling of the entry (id, name, alias).
fn suggest(catalog: &[CatalogGpu], q: &[String]) -> Vec<String> {
    let joined = q.concat();
    let mut scored: Vec<(usize, usize, &str)> = catalog
        .iter()
        .map(|g| {
            let spellings = std::iter::once(&g.id)
                .chain(std::iter::once(&g.name))
                .chain(g.aliases.iter());
            let (mut shared, mut dist) = (0, usize::MAX);
            for t in spellings.map(|n| gpu_tokens(n)) {
                shared = shared.max(q.iter().filter(|w| t.contains(w)).count());
                dist = dist.min(edit_distance(&joined, &t.concat()));
            }
            (shared, dist, g.name.as_str())
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(5)
        .map(|(_, _, n)| n.to_string())
        .collect()
}

/// Levenshtein distance over bytes (names are ASCII).
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_split_letters_from_digits_and_drop_vendor_words() {
        assert_eq!(gpu_tokens("NVIDIA GeForce RTX 4090"), ["rtx", "4090"]);
        assert_eq!(gpu_tokens("rtx4090"), ["rtx", "4090"]);
        assert_eq!(gpu_tokens("A100-80G"), ["a", "100", "80", "gb"]);
        assert_eq!(
            gpu_tokens("Tesla V100-SXM2-16GB"),
            ["v", "100", "sxm", "2", "16", "gb"]
        );
        assert!(gpu_tokens(" - ").is_empty());
    }

    #[test]
    fn gguf_tags_and_suffixes_are_stripped() {
        assert_eq!(
            strip_tag("unsloth/Qwen3-8B-GGUF:Q4_K_M"),
            "unsloth/Qwen3-8B-GGUF"
        );
        assert_eq!(strip_tag("qwen3:8b"), "qwen3");
        assert_eq!(strip_gguf("unsloth/Qwen3-8B-GGUF"), "unsloth/Qwen3-8B");
        assert_eq!(strip_tuning_suffix("gemma-2-9b-it"), "gemma-2-9b");
        assert_eq!(strip_tuning_suffix("Qwen3-8B"), "Qwen3-8B");
    }

    #[test]
    fn ollama_size_tags_are_never_dropped_to_another_size() {
        // `qwen3` alone is an alias of Qwen3-8B: `qwen3:30b` must not answer that
        assert!(find_model("qwen3:9b").is_none());
        assert!(find_model("gpt-oss:120b-cloud").is_none());
        assert_eq!(find_model("qwen3:30b").unwrap().id, "Qwen/Qwen3-30B-A3B");
        assert_eq!(find_model("qwen3:8b").unwrap().id, "Qwen/Qwen3-8B");
        assert_eq!(find_model("qwen3:latest").unwrap().id, "Qwen/Qwen3-8B");
        assert_eq!(find_model("Qwen3-8B:Q4_K_M").unwrap().id, "Qwen/Qwen3-8B");
        assert_eq!(
            find_model("unsloth/Qwen3-8B-GGUF:UD-Q4_K_XL").unwrap().id,
            "Qwen/Qwen3-8B"
        );
    }

    #[test]
    fn a_name_that_starts_one_model_finds_it() {
        let id = |q: &str| find_model(q).map(|m| m.id.as_str());
        assert_eq!(
            id("qwen3-coder-30b"),
            Some("Qwen/Qwen3-Coder-30B-A3B-Instruct")
        );
        assert_eq!(
            id("mistral-small-3.2"),
            Some("mistralai/Mistral-Small-3.2-24B-Instruct-2506")
        );
        assert_eq!(id("qwen3-30b"), Some("Qwen/Qwen3-30B-A3B"));
        // a family alone, or words that start several unrelated names, find nothing
        assert_eq!(id("qwen3-coder"), None);
        assert_eq!(id("gemma-3"), None);
        assert_eq!(id("deepseek-r1-distill"), None);
    }

    #[test]
    fn edit_distance_counts_single_edits() {
        assert_eq!(edit_distance("rtx4090", "rtx4080"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("h100", "h100"), 0);
    }
}
