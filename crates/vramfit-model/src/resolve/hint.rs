//! What to tell a user whose model name resolved to nothing: the catalog repo ids closest to it
//! ("did you mean") and the remedy that works for the kind of name given — a local path, a URL,
//! a GGUF repo (`ORG/NAME-GGUF[:QUANT]`), an Ollama tag (`NAME:TAG`), a Hub repo id or a bare
//! name. Each remedy is a command or a value the user can type as printed.

use super::split_gguf_repo;
use crate::catalog::suggest_models;

/// The kind of name a model query is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    Url,
    LocalPath,
    GgufRepo,
    OllamaTag,
    RepoId,
    Bare,
}

/// Which kind of name `query` is (the first rule that applies, in the enum's order).
pub fn name_kind(query: &str) -> NameKind {
    let q = query.trim();
    let lower = q.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return NameKind::Url;
    }
    let file_ext = [".gguf", ".json", ".safetensors", ".bin"]
        .iter()
        .any(|e| lower.ends_with(e));
    if q.starts_with(['/', '.', '~']) || q.contains('\\') || q.matches('/').count() >= 2 || file_ext
    {
        return NameKind::LocalPath;
    }
    if !q.contains('/') && q.contains(':') {
        return NameKind::OllamaTag;
    }
    let (_, _, is_gguf) = split_gguf_repo(q);
    if is_gguf {
        return NameKind::GgufRepo;
    }
    if q.contains('/') {
        NameKind::RepoId
    } else {
        NameKind::Bare
    }
}

/// "Did you mean ..." (when a catalog name is close) followed by the remedy for this kind of
/// name; one line. `offline`: HF_HUB_OFFLINE is set, so the Hub was not asked.
pub fn not_found_hint(query: &str, offline: bool) -> String {
    let q = query.trim();
    let mut out = String::new();
    let close = suggest_models(q, 3);
    if !close.is_empty() {
        out.push_str(&format!(
            "Did you mean {}? (names vramfit knows offline: `vramfit catalog models`) ",
            close.join(", ")
        ));
    }
    let hub = if offline {
        " (or unset HF_HUB_OFFLINE to read it from the Hub)"
    } else {
        ""
    };
    let remedy = match name_kind(q) {
        NameKind::Url => "Check that the URL answers (a .gguf file, a config.json, or the folder that holds them), or download the file and give its local path".to_string(),
        NameKind::LocalPath => {
            let tilde = if q.starts_with('~') {
                "; '~' is not expanded inside quotes, write $HOME"
            } else {
                ""
            };
            format!("No file or folder at '{q}': give the path of a .gguf file (the first shard of a split set), of a folder holding config.json, or of a config.json{tilde}")
        }
        NameKind::GgufRepo => {
            let (_, quant, _) = split_gguf_repo(q);
            let repo = q.split(':').next().unwrap_or(q);
            let quant = quant.unwrap_or_else(|| "Q4_K_M".into());
            format!("Download the file with `huggingface-cli download {repo} --include \"*{quant}*.gguf\" --local-dir models` and give the .gguf path (llama-server -m PATH){hub}")
        }
        NameKind::OllamaTag => "For an Ollama model, give the GGUF it runs: `ollama show --modelfile NAME` prints its path on the FROM line".to_string(),
        NameKind::RepoId => format!("Download its config with `huggingface-cli download {q} config.json --local-dir models/{}` and give that folder{hub}", q.rsplit('/').next().unwrap_or(q)),
        NameKind::Bare => format!("Give the Hub repo id as ORG/NAME, a local .gguf or config.json path, or a URL{hub}"),
    };
    out.push_str(&remedy);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_of_names() {
        assert_eq!(name_kind("https://x.org/a.gguf"), NameKind::Url);
        assert_eq!(name_kind("./models/a.gguf"), NameKind::LocalPath);
        assert_eq!(name_kind("model.gguf"), NameKind::LocalPath);
        assert_eq!(name_kind("/srv/models/qwen"), NameKind::LocalPath);
        assert_eq!(name_kind("~/m/config.json"), NameKind::LocalPath);
        assert_eq!(name_kind("unsloth/Foo-GGUF:Q4_K_M"), NameKind::GgufRepo);
        assert_eq!(name_kind("bartowski/Foo-GGUF"), NameKind::GgufRepo);
        assert_eq!(name_kind("qwen3:99b"), NameKind::OllamaTag);
        assert_eq!(name_kind("acme/Foo-7B"), NameKind::RepoId);
        assert_eq!(name_kind("Foo-7B"), NameKind::Bare);
    }

    #[test]
    fn each_kind_gets_its_own_remedy() {
        let h = not_found_hint("unsloth/Foo-9B-GGUF:Q5_K_M", true);
        assert!(
            h.contains("huggingface-cli download unsloth/Foo-9B-GGUF --include \"*Q5_K_M*.gguf\""),
            "{h}"
        );
        assert!(h.contains("HF_HUB_OFFLINE"), "{h}");
        let h = not_found_hint("./nope/model.gguf", true);
        assert!(
            h.contains("No file or folder at './nope/model.gguf'"),
            "{h}"
        );
        assert!(!h.contains("huggingface-cli"), "{h}");
        let h = not_found_hint("acme/Foo-7B", false);
        assert!(
            h.contains("huggingface-cli download acme/Foo-7B config.json"),
            "{h}"
        );
        assert!(!h.contains("HF_HUB_OFFLINE"), "{h}");
        let h = not_found_hint("qwen3:99b", true);
        assert!(h.contains("ollama show --modelfile"), "{h}");
        for q in ["acme/Foo-7B", "./x.gguf", "https://h/x.gguf", "Foo", "q:1"] {
            assert!(!not_found_hint(q, true).contains('\n'), "{q}");
        }
    }

    #[test]
    fn a_near_miss_is_named() {
        let h = not_found_hint("Qwen/Qwen3-4B-Instruct-2508", true);
        assert!(
            h.starts_with("Did you mean Qwen/Qwen3-4B-Instruct-2507"),
            "{h}"
        );
    }
}
