//! Remote model sources: the Hugging Face Hub (or any HTTP server) read by range requests, so
//! that inspecting a multi-GB checkpoint costs a few round trips and a few hundred KiB.
//!
//! - [`HttpSource`]: a [`ByteSource`](crate::source::ByteSource) over `Range: bytes=a-b`
//!   requests, with counters of bytes fetched and round trips.
//! - [`HubConfig`]: `HF_ENDPOINT`, `HF_TOKEN` / `HUGGING_FACE_HUB_TOKEN` and `HF_HUB_OFFLINE`, read
//!   once; the token is sent only to the Hub endpoint.
//! - [`hub_file_url`], [`hub_list_files`], [`fetch_small`]: Hub URLs, a repo's file list and
//!   small files (`config.json`, `model.safetensors.index.json`) with a size cap.
//!
//! We use ureq (blocking, rustls) rather than the `hf-hub` crate: hf-hub 1.0 pulls in reqwest,
//! tokio and hf-xet for downloads we never make, while all we need is a few range requests and
//! one JSON call — ureq is already a dependency and builds in a fraction of the time on 2 cores.
//!
//! ```no_run
//! use vramfit_model::remote::{hub_file_url, HttpSource, HubClient};
//! let client = HubClient::from_env();
//! let url = hub_file_url("Qwen/Qwen3-8B", "main", "model-00001-of-00005.safetensors");
//! let src = HttpSource::open(&client, &url).unwrap();
//! let header = vramfit_model::safetensors::read_safetensors_header(&src).unwrap();
//! println!("{} tensors, {:?}", header.tensors.len(), src.stats());
//! ```

mod client;
mod http;

pub use client::{HubClient, HubConfig};
pub use http::{FetchStats, HttpSource};

use thiserror::Error;

/// Default Hub endpoint (huggingface_hub `constants.py`: `ENDPOINT`, overridable by
/// `HF_ENDPOINT`).
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// Cap on [`fetch_small`]: config.json and index.json are KiB to a few MiB; a DeepSeek-V3 index
/// (~90k tensors) is about 9 MiB.
pub const SMALL_FILE_CAP: u64 = 64 * 1024 * 1024;

/// What went wrong talking to a server; each message is one line naming the URL and what to do.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum RemoteError {
    #[error("HF_HUB_OFFLINE is set, so {url} is not fetched: unset HF_HUB_OFFLINE or use a local copy of the model")]
    Offline { url: String },
    #[error("{url}: HTTP {status}: access denied; set HF_TOKEN (or HUGGING_FACE_HUB_TOKEN) or accept the model's license on its Hub page")]
    Unauthorized { url: String, status: u16 },
    #[error(
        "{url}: HTTP 404: the file or repo is not there; check the repo id, revision and file name"
    )]
    NotFound { url: String },
    #[error("{url}: HTTP {status} {reason}")]
    Status {
        url: String,
        status: u16,
        reason: String,
    },
    #[error("{url}: network error: {message}; check the connection, or set HF_HUB_OFFLINE=1 and use a local copy")]
    Network { url: String, message: String },
    #[error("{url}: the server sent a response vramfit cannot use: {message}")]
    BadResponse { url: String, message: String },
    #[error("{url}: larger than the {cap}-byte cap for small files ({size} bytes)")]
    TooLarge { url: String, size: u64, cap: u64 },
    #[error(
        "'{repo}' is not a Hub repo id: write it as ORG/NAME (letters, digits, '-', '_', '.')"
    )]
    BadRepoId { repo: String },
}

/// The URL of a file in a Hub repo at a revision: `{endpoint}/{repo}/resolve/{rev}/{file}`
/// (huggingface_hub `constants.py`: `HUGGINGFACE_CO_URL_TEMPLATE`), with the endpoint from
/// `HF_ENDPOINT`.
pub fn hub_file_url(repo: &str, revision: &str, file: &str) -> String {
    HubConfig::from_env().file_url(repo, revision, file)
}

/// The files of a Hub repo (its `siblings` in `{endpoint}/api/models/{repo}`).
pub fn hub_list_files(repo: &str) -> Result<Vec<String>, RemoteError> {
    HubClient::from_env().list_files(repo, "main")
}

/// A small file (config.json, index.json) fetched whole, refused past [`SMALL_FILE_CAP`].
pub fn fetch_small(url: &str) -> Result<Vec<u8>, RemoteError> {
    HubClient::from_env().fetch_small(url, SMALL_FILE_CAP)
}

/// Whether `s` looks like an http(s) URL rather than a path or repo id.
pub fn is_url(s: &str) -> bool {
    s.starts_with("https://") || s.starts_with("http://")
}

/// Check a Hub repo id (`ORG/NAME` or a legacy `NAME`).
pub fn check_repo_id(repo: &str) -> Result<(), RemoteError> {
    let ok_part = |p: &str| {
        !p.is_empty()
            && p.len() <= 96
            && !p.starts_with(['.', '-'])
            && !p.contains("..")
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    let parts: Vec<&str> = repo.split('/').collect();
    if parts.len() <= 2 && parts.iter().all(|p| ok_part(p)) {
        Ok(())
    } else {
        Err(RemoteError::BadRepoId {
            repo: repo.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_ids() {
        assert!(check_repo_id("Qwen/Qwen3-8B").is_ok());
        assert!(check_repo_id("gpt2").is_ok());
        assert!(check_repo_id("unsloth/Llama-3.1-8B-Instruct-GGUF").is_ok());
        for bad in ["", "a/b/c", "../etc", "a/..", "a b/c", "org/"] {
            assert!(check_repo_id(bad).is_err(), "{bad}");
        }
    }
}
