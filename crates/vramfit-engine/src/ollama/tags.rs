//! Ollama library names (`llama3.1:8b`, `qwen3:30b-a3b`, `gemma3:27b-it-qat`) → the Hugging Face
//! repo the GGUF was made from and the quant Ollama's tag ships.
//!
//! Data, not logic. Sources: the tag pages of ollama.com/library (each default tag is an alias of
//! a `SIZE-instruct-QUANT` tag: `q4_K_M` for most models, `q4_0` for older uploads and Google's
//! QAT builds, the native MXFP4 for gpt-oss), written from memory of those pages (not reachable
//! offline); checked against the download sizes of the Ollama README's model table
//! (ollama/ollama README.md @379fd64fa, 2026-02-12) where it lists the tag: that check moved
//! `mistral` to q4_0 (4.1 GB) and `llama3.2:1b` to q8_0 (1.3 GB). The README's `llama3.1` sizes
//! (4.7 GB, 405b 231 GB) are Q4_0's; the table keeps Q4_K_M (believed re-uploaded, 4.9 GB) —
//! unverified. An explicit quant in the tag (`llama3.1:8b-instruct-q8_0`) always wins.

/// One library model: name, size tag, HF repo, default quant.
pub struct Tag {
    pub name: &'static str,
    pub size: &'static str,
    pub repo: &'static str,
    pub quant: &'static str,
}

const fn t(name: &'static str, size: &'static str, repo: &'static str, quant: &'static str) -> Tag {
    Tag {
        name,
        size,
        repo,
        quant,
    }
}

/// The first entry of a name is what the bare name (`llama3.1`, `:latest`) pulls.
#[rustfmt::skip]
pub const TAGS: &[Tag] = &[
    t("llama3.1", "8b", "meta-llama/Llama-3.1-8B-Instruct", "Q4_K_M"),
    t("llama3.1", "70b", "meta-llama/Llama-3.1-70B-Instruct", "Q4_K_M"),
    t("llama3.1", "405b", "meta-llama/Llama-3.1-405B-Instruct", "Q4_K_M"),
    t("llama3.2", "3b", "meta-llama/Llama-3.2-3B-Instruct", "Q4_K_M"),
    t("llama3.2", "1b", "meta-llama/Llama-3.2-1B-Instruct", "Q8_0"),
    t("llama3.3", "70b", "meta-llama/Llama-3.3-70B-Instruct", "Q4_K_M"),
    t("llama3", "8b", "meta-llama/Meta-Llama-3-8B-Instruct", "Q4_0"),
    t("llama3", "70b", "meta-llama/Meta-Llama-3-70B-Instruct", "Q4_0"),
    t("llama2", "7b", "meta-llama/Llama-2-7b-hf", "Q4_0"),
    t("llama2", "13b", "meta-llama/Llama-2-13b-hf", "Q4_0"),
    t("llama2", "70b", "meta-llama/Llama-2-70b-hf", "Q4_0"),
    t("llama4", "16x17b", "meta-llama/Llama-4-Scout-17B-16E-Instruct", "Q4_K_M"),
    t("llama4", "128x17b", "meta-llama/Llama-4-Maverick-17B-128E-Instruct", "Q4_K_M"),
    t("qwen3", "8b", "Qwen/Qwen3-8B", "Q4_K_M"),
    t("qwen3", "0.6b", "Qwen/Qwen3-0.6B", "Q4_K_M"),
    t("qwen3", "1.7b", "Qwen/Qwen3-1.7B", "Q4_K_M"),
    t("qwen3", "4b", "Qwen/Qwen3-4B", "Q4_K_M"),
    t("qwen3", "14b", "Qwen/Qwen3-14B", "Q4_K_M"),
    t("qwen3", "32b", "Qwen/Qwen3-32B", "Q4_K_M"),
    t("qwen3", "30b-a3b", "Qwen/Qwen3-30B-A3B", "Q4_K_M"),
    // the July 2025 refresh is its own config (262144 tokens): `ollama pull
    // qwen3:30b-a3b-instruct-2507` (vramfit's GGUF catalog, gguf_repos.json)
    t("qwen3", "30b-a3b-instruct-2507", "Qwen/Qwen3-30B-A3B-Instruct-2507", "Q4_K_M"),
    t("qwen3", "30b", "Qwen/Qwen3-30B-A3B", "Q4_K_M"),
    t("qwen3", "235b-a22b", "Qwen/Qwen3-235B-A22B", "Q4_K_M"),
    t("qwen3", "235b", "Qwen/Qwen3-235B-A22B", "Q4_K_M"),
    t("qwen3-next", "80b", "Qwen/Qwen3-Next-80B-A3B-Instruct", "Q4_K_M"),
    // Qwen3.5 / Qwen3.6 (ollama.com/library/qwen3.5/tags, qwen3.6/tags as quoted in public
    // scripts: `qwen3.5:27b-q4_K_M`, `qwen3.5:35b-a3b`, `qwen3.5:122b` (81 GB), `qwen3.5:397b`,
    // `qwen3.6:35b-a3b-q4_K_M`); their default tags are sizes the catalog lacks (NO_LATEST)
    t("qwen3.5", "27b", "Qwen/Qwen3.5-27B", "Q4_K_M"),
    t("qwen3.5", "35b-a3b", "Qwen/Qwen3.5-35B-A3B", "Q4_K_M"),
    t("qwen3.5", "35b", "Qwen/Qwen3.5-35B-A3B", "Q4_K_M"),
    t("qwen3.5", "122b-a10b", "Qwen/Qwen3.5-122B-A10B", "Q4_K_M"),
    t("qwen3.5", "122b", "Qwen/Qwen3.5-122B-A10B", "Q4_K_M"),
    t("qwen3.5", "397b-a17b", "Qwen/Qwen3.5-397B-A17B", "Q4_K_M"),
    t("qwen3.5", "397b", "Qwen/Qwen3.5-397B-A17B", "Q4_K_M"),
    t("qwen3.6", "35b-a3b", "Qwen/Qwen3.6-35B-A3B", "Q4_K_M"),
    t("qwen3.6", "35b", "Qwen/Qwen3.6-35B-A3B", "Q4_K_M"),
    // GLM-4.7-Flash: one size, so its tags are quants or `latest` (`glm-4.7-flash:q4_K_M`,
    // `glm-4.7-flash:latest`); an empty size matches any tag
    t("glm-4.7-flash", "", "zai-org/GLM-4.7-Flash", "Q4_K_M"),
    t("qwen2.5", "7b", "Qwen/Qwen2.5-7B-Instruct", "Q4_K_M"),
    t("qwen2.5", "0.5b", "Qwen/Qwen2.5-0.5B-Instruct", "Q4_K_M"),
    t("qwen2.5", "1.5b", "Qwen/Qwen2.5-1.5B-Instruct", "Q4_K_M"),
    t("qwen2.5", "3b", "Qwen/Qwen2.5-3B-Instruct", "Q4_K_M"),
    t("qwen2.5", "14b", "Qwen/Qwen2.5-14B-Instruct", "Q4_K_M"),
    t("qwen2.5", "32b", "Qwen/Qwen2.5-32B-Instruct", "Q4_K_M"),
    t("qwen2.5", "72b", "Qwen/Qwen2.5-72B-Instruct", "Q4_K_M"),
    // Qwen3-Coder (ollama.com/library/qwen3-coder: `qwen3-coder:30b` 19 GB is the default,
    // `qwen3-coder:30b-a3b-q8_0`, `qwen3-coder:480b`; vramfit's GGUF catalog names the first two)
    t("qwen3-coder", "30b-a3b", "Qwen/Qwen3-Coder-30B-A3B-Instruct", "Q4_K_M"),
    t("qwen3-coder", "30b", "Qwen/Qwen3-Coder-30B-A3B-Instruct", "Q4_K_M"),
    t("qwen3-coder", "480b-a35b", "Qwen/Qwen3-Coder-480B-A35B-Instruct", "Q4_K_M"),
    t("qwen3-coder", "480b", "Qwen/Qwen3-Coder-480B-A35B-Instruct", "Q4_K_M"),
    t("qwen2.5-coder", "7b", "Qwen/Qwen2.5-Coder-7B-Instruct", "Q4_K_M"),
    t("qwen2.5-coder", "32b", "Qwen/Qwen2.5-Coder-32B-Instruct", "Q4_K_M"),
    t("qwq", "32b", "Qwen/QwQ-32B", "Q4_K_M"),
    t("gemma3", "4b", "google/gemma-3-4b-it", "Q4_K_M"),
    t("gemma3", "1b", "google/gemma-3-1b-it", "Q4_K_M"),
    t("gemma3", "12b", "google/gemma-3-12b-it", "Q4_K_M"),
    t("gemma3", "27b", "google/gemma-3-27b-it", "Q4_K_M"),
    // Gemma 4 (ollama.com/library/gemma4/tags: e2b 7.2 GB, latest = e4b 9.6 GB, 26b 18 GB,
    // 31b 20 GB; `gemma4:e4b-it-q4_K_M`, `gemma4:26b-a4b-it-q8_0` 28 GB)
    t("gemma4", "e4b", "google/gemma-4-E4B-it", "Q4_K_M"),
    t("gemma4", "e2b", "google/gemma-4-E2B-it", "Q4_K_M"),
    t("gemma4", "26b-a4b", "google/gemma-4-26B-A4B-it", "Q4_K_M"),
    t("gemma4", "26b", "google/gemma-4-26B-A4B-it", "Q4_K_M"),
    t("gemma4", "31b", "google/gemma-4-31B-it", "Q4_K_M"),
    t("gemma2", "9b", "google/gemma-2-9b-it", "Q4_0"),
    t("gemma2", "2b", "google/gemma-2-2b-it", "Q4_0"),
    t("gemma2", "27b", "google/gemma-2-27b-it", "Q4_0"),
    t("mistral", "7b", "mistralai/Mistral-7B-Instruct-v0.3", "Q4_0"),
    t("mistral-nemo", "12b", "mistralai/Mistral-Nemo-Instruct-2407", "Q4_0"),
    t("mistral-small", "24b", "mistralai/Mistral-Small-24B-Instruct-2501", "Q4_K_M"),
    t("mistral-small3.1", "24b", "mistralai/Mistral-Small-3.1-24B-Instruct-2503", "Q4_K_M"),
    // `ollama pull mistral-small3.2:24b` (vramfit's GGUF catalog, gguf_repos.json)
    t("mistral-small3.2", "24b", "mistralai/Mistral-Small-3.2-24B-Instruct-2506", "Q4_K_M"),
    t("mixtral", "8x7b", "mistralai/Mixtral-8x7B-Instruct-v0.1", "Q4_0"),
    t("mixtral", "8x22b", "mistralai/Mixtral-8x22B-Instruct-v0.1", "Q4_0"),
    t("phi4", "14b", "microsoft/phi-4", "Q4_K_M"),
    t("phi4-mini", "3.8b", "microsoft/Phi-4-mini-instruct", "Q4_K_M"),
    t("phi3.5", "3.8b", "microsoft/Phi-3.5-mini-instruct", "Q4_0"),
    t("gpt-oss", "20b", "openai/gpt-oss-20b", "MXFP4_MOE"),
    t("gpt-oss", "120b", "openai/gpt-oss-120b", "MXFP4_MOE"),
    t("deepseek-r1", "7b", "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "Q4_K_M"),
    t("deepseek-r1", "1.5b", "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", "Q4_K_M"),
    t("deepseek-r1", "14b", "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B", "Q4_K_M"),
    t("deepseek-r1", "32b", "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "Q4_K_M"),
    t("deepseek-r1", "70b", "deepseek-ai/DeepSeek-R1-Distill-Llama-70B", "Q4_K_M"),
    t("deepseek-r1", "671b", "deepseek-ai/DeepSeek-R1", "Q4_K_M"),
    t("deepseek-v3", "671b", "deepseek-ai/DeepSeek-V3", "Q4_K_M"),
    t("deepseek-v2", "16b", "deepseek-ai/DeepSeek-V2-Lite", "Q4_0"),
    t("command-r", "35b", "CohereForAI/c4ai-command-r-v01", "Q4_0"),
    t("command-r7b", "7b", "CohereForAI/c4ai-command-r7b-12-2024", "Q4_K_M"),
    t("granite3.1-dense", "8b", "ibm-granite/granite-3.1-8b-instruct", "Q4_K_M"),
    t("smollm2", "1.7b", "HuggingFaceTB/SmolLM2-1.7B-Instruct", "Q8_0"),
    t("smollm2", "135m", "HuggingFaceTB/SmolLM2-135M-Instruct", "F16"),
    t("smollm2", "360m", "HuggingFaceTB/SmolLM2-360M-Instruct", "F16"),
    t("tinyllama", "1.1b", "TinyLlama/TinyLlama-1.1B-Chat-v1.0", "Q4_0"),
    t("falcon3", "7b", "tiiuae/Falcon3-7B-Instruct", "Q4_K_M"),
    t("glm4", "9b", "THUDM/GLM-4-9B-0414", "Q4_K_M"),
];

/// Names whose default (`latest`) tag is a size the table does not hold: the bare name is
/// refused rather than resolved to another size.
const NO_LATEST: &[&str] = &["qwen3.5", "qwen3.6"];

/// How an Ollama model name resolves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OllamaModel {
    /// a library tag found in [`TAGS`]: the base repo and the quant
    Library { repo: String, quant: String },
    /// `hf.co/ORG/NAME-GGUF[:QUANT]` (Ollama pulls GGUF repos from the Hub): a llama.cpp `-hf` id
    HfRepo(String),
    /// a local GGUF path (`ollama create` FROM a file, or `--model PATH.gguf`)
    Path(String),
}

/// The quant named at the end of a tag (`8b-instruct-q8_0` → `Q8_0`, `27b-it-qat` → `Q4_0`).
fn quant_in_tag(tag: &str) -> Option<String> {
    let lower = tag.to_ascii_lowercase();
    if lower.ends_with("-qat") {
        return Some("Q4_0".into());
    }
    let last = lower.rsplit('-').next()?;
    let known = last.starts_with('q') && last.chars().nth(1).is_some_and(|c| c.is_ascii_digit())
        || matches!(last, "fp16" | "f16" | "bf16" | "mxfp4")
        || last.starts_with("iq");
    known.then(|| match last {
        "fp16" => "F16".to_string(),
        "mxfp4" => "MXFP4_MOE".to_string(),
        q => q.to_ascii_uppercase(),
    })
}

/// An Ollama Cloud name (`gpt-oss:120b-cloud`, `qwen3-coder:480b-cloud`, `glm-4.6:cloud`):
/// Ollama forwards its requests to ollama.com, so it loads nothing on the local GPU
/// (ollama.com/cloud: "cloud models ... run on datacenter-grade hardware"; the `-cloud` tags of
/// the library pages). Returns the local tag of the same model when the name has one
/// (`gpt-oss:120b-cloud` → `Some("gpt-oss:120b")`), `Some("")` when it has none.
pub fn cloud_tag(name: &str) -> Option<String> {
    let n = name.trim();
    if n.contains(".gguf") || n.starts_with("hf.co/") || n.starts_with("huggingface.co/") {
        return None;
    }
    let n = n.rsplit('/').next().unwrap_or(n);
    let (base, tag) = n.split_once(':')?;
    let t = tag.to_ascii_lowercase();
    if t == "cloud" {
        return Some(String::new());
    }
    let local = t.strip_suffix("-cloud")?;
    Some(format!("{base}:{local}"))
}

/// The one-line answer for an Ollama Cloud name: nothing to plan on this GPU.
pub fn cloud_message(name: &str) -> Option<String> {
    let local = cloud_tag(name)?;
    let hint = if local.is_empty() {
        "pick a local tag of the model (ollama.com/library) to plan it on this GPU".to_string()
    } else {
        format!("to run it on this GPU, plan the local tag '{local}' instead")
    };
    Some(format!(
        "'{}' is an Ollama Cloud model: Ollama sends its requests to ollama.com and loads nothing on your GPU, so it takes no local VRAM and there is nothing to plan; {hint}",
        name.trim()
    ))
}

/// Resolve an Ollama model name; `None` when it is a library name the table does not hold, or
/// an Ollama Cloud name ([`cloud_tag`]), which has no local weights.
pub fn resolve(name: &str) -> Option<OllamaModel> {
    let n = name.trim();
    if cloud_tag(n).is_some() {
        return None;
    }
    for prefix in ["hf.co/", "huggingface.co/", "https://huggingface.co/"] {
        if let Some(rest) = n.strip_prefix(prefix) {
            return Some(OllamaModel::HfRepo(rest.to_string()));
        }
    }
    if n.ends_with(".gguf") || n.starts_with('/') || n.starts_with("./") {
        return Some(OllamaModel::Path(n.to_string()));
    }
    // registry.ollama.ai/library/NAME:TAG and library/NAME:TAG
    let n = n.rsplit('/').next().unwrap_or(n);
    let (base, tag) = n.split_once(':').unwrap_or((n, "latest"));
    let base = base.to_ascii_lowercase();
    let tag_l = tag.to_ascii_lowercase();
    let entry = if tag_l == "latest" {
        if NO_LATEST.contains(&base.as_str()) {
            return None;
        }
        TAGS.iter().find(|t| t.name == base)
    } else {
        // the longest size that starts the tag (`30b-a3b-instruct-2507-q4_K_M` → `30b-a3b`)
        TAGS.iter()
            .filter(|t| {
                t.name == base
                    && (t.size.is_empty()
                        || tag_l == t.size
                        || tag_l.starts_with(&format!("{}-", t.size)))
            })
            .max_by_key(|t| t.size.len())
    }?;
    Some(OllamaModel::Library {
        repo: entry.repo.to_string(),
        quant: quant_in_tag(tag).unwrap_or_else(|| entry.quant.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lib(name: &str) -> Option<(String, String)> {
        match resolve(name)? {
            OllamaModel::Library { repo, quant } => Some((repo, quant)),
            _ => None,
        }
    }

    #[test]
    fn gemma4_tags_map_onto_the_catalog() {
        let e4b = Some(("google/gemma-4-E4B-it".to_string(), "Q4_K_M".to_string()));
        assert_eq!(lib("gemma4"), e4b);
        assert_eq!(lib("gemma4:latest"), e4b);
        assert_eq!(lib("gemma4:e4b-it-q4_K_M"), e4b);
        assert_eq!(
            lib("gemma4:26b-a4b-it-q8_0"),
            Some(("google/gemma-4-26B-A4B-it".into(), "Q8_0".into()))
        );
        assert_eq!(lib("gemma4:31b").unwrap().0, "google/gemma-4-31B-it");
        assert_eq!(lib("gemma4:e2b").unwrap().0, "google/gemma-4-E2B-it");
    }

    #[test]
    fn qwen3_5_and_3_6_tags_and_their_missing_default() {
        assert_eq!(lib("qwen3.5:27b").unwrap().0, "Qwen/Qwen3.5-27B");
        assert_eq!(
            lib("qwen3.5:35b-a3b-q4_K_M"),
            Some(("Qwen/Qwen3.5-35B-A3B".into(), "Q4_K_M".into()))
        );
        assert_eq!(lib("qwen3.5:122b").unwrap().0, "Qwen/Qwen3.5-122B-A10B");
        assert_eq!(lib("qwen3.5:397b").unwrap().0, "Qwen/Qwen3.5-397B-A17B");
        assert_eq!(lib("qwen3.6:35b-a3b").unwrap().0, "Qwen/Qwen3.6-35B-A3B");
        // the default tags are sizes the catalog lacks: refused, not resolved to another size
        assert_eq!(resolve("qwen3.5"), None);
        assert_eq!(resolve("qwen3.6:latest"), None);
        assert_eq!(resolve("qwen3.5:9b"), None);
    }

    #[test]
    fn cloud_tags_are_not_local_models() {
        assert_eq!(resolve("gpt-oss:120b-cloud"), None);
        assert_eq!(resolve("qwen3-coder:480b-cloud"), None);
        assert_eq!(resolve("glm-4.6:cloud"), None);
        assert_eq!(
            cloud_tag("gpt-oss:120b-cloud").as_deref(),
            Some("gpt-oss:120b")
        );
        assert_eq!(cloud_tag("glm-4.6:cloud").as_deref(), Some(""));
        assert_eq!(cloud_tag("gpt-oss:120b"), None);
        assert_eq!(cloud_tag("hf.co/unsloth/gpt-oss-20b-GGUF:Q4_K_M"), None);
        let m = cloud_message("gpt-oss:120b-cloud").unwrap();
        assert!(
            m.contains("no local VRAM") && m.contains("'gpt-oss:120b'"),
            "{m}"
        );
        // the local tag still resolves
        assert_eq!(lib("gpt-oss:120b").unwrap().0, "openai/gpt-oss-120b");
    }

    /// Every Ollama name vramfit's GGUF catalog prints in `fit` (`FROM NAME` in a Modelfile)
    /// resolves here to the same model and quant, so `check` takes what `fit` prints.
    #[test]
    fn every_name_fit_prints_resolves_to_its_model() {
        for o in &vramfit_model::catalog::gguf_repos::catalog().ollama {
            let got = lib(&o.name);
            assert_eq!(
                got.as_ref().map(|(r, _)| r.to_ascii_lowercase()),
                Some(o.model.to_ascii_lowercase()),
                "{} resolves to {got:?}, the GGUF catalog says {}",
                o.name,
                o.model
            );
            let q = got.unwrap().1;
            let norm = |s: &str| s.to_ascii_uppercase().replace("MXFP4_MOE", "MXFP4");
            assert_eq!(norm(&q), norm(&o.quant), "{}", o.name);
        }
    }

    #[test]
    fn single_size_models_take_quant_tags() {
        assert_eq!(
            lib("glm-4.7-flash"),
            Some(("zai-org/GLM-4.7-Flash".into(), "Q4_K_M".into()))
        );
        assert_eq!(
            lib("glm-4.7-flash:q8_0"),
            Some(("zai-org/GLM-4.7-Flash".into(), "Q8_0".into()))
        );
    }
}
