//! Where the GGUFs of catalog models live (`catalog/gguf_repos.json`): the Hub repos that
//! publish them (the vendor's own, ggml-org, unsloth, bartowski, lmstudio-community), the quant
//! tags each publishes, and the Ollama library names that pull them. Every tag carries the
//! public scripts or READMEs that name that very file (a tag without evidence is not listed).
//! `fit` prints only repos, tags and names found here.
//!
//! ```
//! use vramfit_model::catalog::gguf_repos::{ollama_name, repo_for};
//! let r = repo_for("openai/gpt-oss-20b", "MXFP4_MOE").unwrap();
//! assert_eq!(r.hf_arg("MXFP4_MOE"), "ggml-org/gpt-oss-20b-GGUF");
//! assert!(repo_for("openai/gpt-oss-20b", "BF16").is_none());
//! assert_eq!(ollama_name("Qwen/Qwen3-30B-A3B", "Q4_K_M").unwrap().name, "qwen3:30b-a3b");
//! ```

use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

const JSON: &str = include_str!("../../catalog/gguf_repos.json");

/// One Hub repo of GGUF files.
#[derive(Debug, Clone, Deserialize)]
pub struct GgufRepo {
    /// the catalog model id the GGUFs were made from
    pub model: String,
    /// `ORG/NAME-GGUF`
    pub repo: String,
    /// a repo of one file in the checkpoint's own format: its llama-quantize file type
    #[serde(default)]
    pub native: Option<String>,
    /// the format every file of the repo keeps the MoE experts in, whatever its tag (gpt-oss:
    /// `MXFP4`; the tag quantizes the other tensors)
    #[serde(default)]
    pub experts: Option<String>,
    /// the quant tags the evidence names (the only ones planned)
    pub tags: Vec<String>,
    /// file bytes per tag, where a source gives them
    #[serde(default)]
    pub sizes: BTreeMap<String, u64>,
    pub evidence: Vec<String>,
}

/// One Ollama library name.
#[derive(Debug, Clone, Deserialize)]
pub struct OllamaName {
    pub model: String,
    /// `NAME:TAG` as `ollama pull` takes it
    pub name: String,
    /// the llama-quantize file type the tag ships
    pub quant: String,
    pub evidence: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct GgufCatalog {
    pub about: String,
    pub repos: Vec<GgufRepo>,
    pub ollama: Vec<OllamaName>,
}

fn norm(q: &str) -> String {
    let u = q.trim().to_ascii_uppercase();
    match u.as_str() {
        "MXFP4" => "MXFP4_MOE".into(),
        "FP16" => "F16".into(),
        _ => u,
    }
}

impl GgufRepo {
    /// The quant tags the repo publishes, upper-case (`MXFP4_MOE` for a native MXFP4 file).
    pub fn tags(&self) -> Vec<String> {
        if let Some(n) = &self.native {
            return vec![norm(n)];
        }
        self.tags.iter().map(|t| norm(t)).collect()
    }

    /// The file size of a tag, where a source gives it.
    pub fn size_of(&self, quant: &str) -> Option<u64> {
        let q = norm(quant);
        self.sizes
            .iter()
            .find(|(t, _)| norm(t) == q)
            .map(|(_, b)| *b)
    }

    pub fn publishes(&self, quant: &str) -> bool {
        self.tags().contains(&norm(quant))
    }

    /// llama.cpp's `-hf` value: `REPO:TAG`, or `REPO` alone for a one-file native repo.
    pub fn hf_arg(&self, quant: &str) -> String {
        if self.native.is_some() {
            self.repo.clone()
        } else {
            format!("{}:{}", self.repo, norm(quant))
        }
    }

    /// Preference among repos of one model: the vendor's own, ggml-org, unsloth, bartowski,
    /// lmstudio-community, then the rest.
    fn rank(&self) -> u8 {
        let org = self
            .repo
            .split('/')
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        let vendor = self
            .model
            .split('/')
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        match org.as_str() {
            o if o == vendor => 0,
            "ggml-org" => 1,
            "unsloth" => 2,
            "bartowski" => 3,
            "lmstudio-community" => 4,
            _ => 5,
        }
    }
}

/// Parse a catalog file (the embedded one, or a test's).
pub fn parse(json: &str) -> Result<GgufCatalog, serde_json::Error> {
    serde_json::from_str(json)
}

/// The embedded catalog.
pub fn catalog() -> &'static GgufCatalog {
    static C: OnceLock<GgufCatalog> = OnceLock::new();
    C.get_or_init(|| parse(JSON).expect("embedded catalog/gguf_repos.json parses"))
}

/// The repos of a model id, most preferred first.
pub fn repos_of(model: &str) -> Vec<&'static GgufRepo> {
    let mut v: Vec<&GgufRepo> = catalog()
        .repos
        .iter()
        .filter(|r| r.model.eq_ignore_ascii_case(model))
        .collect();
    v.sort_by_key(|r| r.rank());
    v
}

/// The preferred repo of a model that publishes `quant`.
pub fn repo_for(model: &str, quant: &str) -> Option<&'static GgufRepo> {
    repos_of(model).into_iter().find(|r| r.publishes(quant))
}

/// The quant of a model's native GGUF (`MXFP4_MOE` for gpt-oss), when its repos publish one.
pub fn native_quant(model: &str) -> Option<String> {
    repos_of(model)
        .into_iter()
        .find_map(|r| r.native.as_deref().map(norm))
}

/// A repo by its id (`ORG/NAME-GGUF`, a `:TAG` ignored), case-insensitive.
pub fn find_repo(repo: &str) -> Option<&'static GgufRepo> {
    let id = repo.split(':').next().unwrap_or(repo);
    catalog()
        .repos
        .iter()
        .find(|r| r.repo.eq_ignore_ascii_case(id))
}

/// The Ollama library name of a model at a quant.
pub fn ollama_name(model: &str, quant: &str) -> Option<&'static OllamaName> {
    let q = norm(quant);
    catalog()
        .ollama
        .iter()
        .find(|o| o.model.eq_ignore_ascii_case(model) && norm(&o.quant) == q)
}

/// Every `-hf` value and Ollama name the catalog allows, for tests of printed commands.
pub fn is_known_hf_arg(arg: &str) -> bool {
    let (id, tag) = match arg.split_once(':') {
        Some((r, t)) => (r, Some(t)),
        None => (arg, None),
    };
    match find_repo(id) {
        Some(r) => match tag {
            Some(t) => r.native.is_none() && r.publishes(t),
            None => r.native.is_some(),
        },
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_repo_and_tag_is_named_by_its_evidence_and_the_model_is_in_the_catalog() {
        let c = catalog();
        assert!(!c.repos.is_empty());
        for r in &c.repos {
            let ev = r.evidence.join(" ").to_ascii_uppercase();
            assert!(ev.contains(&r.repo.to_ascii_uppercase()), "{}", r.repo);
            assert!(!r.tags().is_empty(), "{}: no evidenced tag", r.repo);
            for t in r.tags() {
                // the evidence names the very file: `REPO:TAG`, `NAME-TAG.gguf` (MXFP4_MOE
                // files are named MXFP4)
                let named = t.replace("MXFP4_MOE", "MXFP4");
                assert!(ev.contains(&named), "{}: no evidence names {t}", r.repo);
            }
            for t in r.sizes.keys() {
                assert!(r.publishes(t), "{}: size of an unlisted tag {t}", r.repo);
            }
            assert!(
                r.experts.as_deref().is_none_or(|e| e == "MXFP4"),
                "{}",
                r.repo
            );
            assert!(r.repo.to_ascii_uppercase().ends_with("-GGUF"), "{}", r.repo);
            assert!(
                crate::catalog::find_model(&r.model).is_some(),
                "{}",
                r.model
            );
            for t in r.tags() {
                assert!(
                    crate::quant::FileType::parse(&t).is_some(),
                    "{}: {t}",
                    r.repo
                );
            }
        }
        for o in &c.ollama {
            assert!(!o.evidence.is_empty(), "{}", o.name);
            let ev = o.evidence.join(" ").to_ascii_lowercase();
            assert!(ev.contains(&o.name.to_ascii_lowercase()), "{}", o.name);
            assert!(
                crate::catalog::find_model(&o.model).is_some(),
                "{}",
                o.model
            );
            assert!(
                crate::quant::FileType::parse(&o.quant).is_some(),
                "{}",
                o.name
            );
        }
    }

    #[test]
    fn the_vendor_repo_comes_first_and_native_repos_take_no_tag() {
        assert_eq!(
            repo_for("Qwen/Qwen3-8B", "Q4_K_M").unwrap().repo,
            "Qwen/Qwen3-8B-GGUF"
        );
        // Qwen's own repo has no IQ4_XS: nothing else in the catalog does either
        assert!(repo_for("Qwen/Qwen3-8B", "IQ4_XS").is_none());
        // Q2_K: only unsloth's repo is known to publish it
        assert_eq!(
            repo_for("Qwen/Qwen3-30B-A3B", "Q2_K").unwrap().repo,
            "unsloth/Qwen3-30B-A3B-GGUF"
        );
        assert_eq!(
            native_quant("openai/gpt-oss-120b").as_deref(),
            Some("MXFP4_MOE")
        );
        assert!(is_known_hf_arg("ggml-org/gpt-oss-20b-GGUF"));
        assert!(!is_known_hf_arg("openai/gpt-oss-20b-GGUF:BF16"));
        assert!(is_known_hf_arg("unsloth/Qwen3-30B-A3B-GGUF:Q6_K"));
        // the vendor's own repo is preferred where the evidence shows the tag
        assert_eq!(
            repo_for("Qwen/Qwen3-30B-A3B", "Q6_K").unwrap().repo,
            "Qwen/Qwen3-30B-A3B-GGUF"
        );
        // unsloth's gpt-oss files: tags over MXFP4 experts, never the native pick
        let u = find_repo("unsloth/gpt-oss-120b-GGUF").unwrap();
        assert_eq!(u.experts.as_deref(), Some("MXFP4"));
        // 60.88 GiB as published
        assert_eq!(u.size_of("F16").map(|b| b / (1 << 20)), Some(62341));
        assert_eq!(
            repo_for("openai/gpt-oss-120b", "MXFP4_MOE").unwrap().repo,
            "ggml-org/gpt-oss-120b-GGUF"
        );
        assert!(is_known_hf_arg("unsloth/gpt-oss-20b-GGUF:F16"));
        // a ladder tag no evidence names is not offered
        assert!(!is_known_hf_arg("unsloth/Qwen3-30B-A3B-GGUF:IQ4_XS"));
    }
}
