//! The Hugging Face cache: `HF_HUB_CACHE`, else `HF_HOME/hub`, else `~/.cache/huggingface/hub`;
//! layout `models--ORG--NAME/snapshots/REV/...` with `refs/main` naming REV (huggingface_hub
//! `constants.py` and `file_download.py`).

use std::path::{Path, PathBuf};

pub fn hub_cache_dir() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("HF_HUB_CACHE")
        .or_else(|| var("HUGGINGFACE_HUB_CACHE"))
        .or_else(|| var("HF_HOME").map(|h| h.join("hub")))
        .or_else(|| var("XDG_CACHE_HOME").map(|h| h.join("huggingface").join("hub")))
        .or_else(|| var("HOME").map(|h| h.join(".cache").join("huggingface").join("hub")))
}

pub struct HfCache {
    root: PathBuf,
}

impl HfCache {
    pub fn new(root: PathBuf) -> HfCache {
        HfCache { root }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The snapshot directory of `ORG/NAME` at `refs/main` (or the only snapshot there is).
    pub fn snapshot(&self, repo: &str) -> Option<PathBuf> {
        if repo.contains("..") || repo.starts_with('/') {
            return None;
        }
        let dir = self
            .root
            .join(format!("models--{}", repo.replace('/', "--")));
        if !dir.is_dir() {
            return self.snapshot_case_insensitive(repo);
        }
        let snaps = dir.join("snapshots");
        if let Ok(rev) = std::fs::read_to_string(dir.join("refs").join("main")) {
            let p = snaps.join(rev.trim());
            if rev.trim().len() < 200 && p.is_dir() {
                return Some(p);
            }
        }
        let mut all: Vec<PathBuf> = std::fs::read_dir(&snaps)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        all.sort();
        all.pop()
    }

    fn snapshot_case_insensitive(&self, repo: &str) -> Option<PathBuf> {
        let want = format!("models--{}", repo.replace('/', "--")).to_ascii_lowercase();
        let entry = std::fs::read_dir(&self.root)
            .ok()?
            .flatten()
            .find(|e| e.file_name().to_string_lossy().to_ascii_lowercase() == want)?;
        let name = entry.file_name().to_string_lossy().to_string();
        let real = name.trim_start_matches("models--").replacen("--", "/", 1);
        if real.eq_ignore_ascii_case(repo) && real != repo {
            return self.snapshot(&real);
        }
        None
    }
}
