//! The HTTP client: Hub settings from the environment, one ureq agent with our timeouts, and the
//! mapping of HTTP failures to one-line [`RemoteError`]s.

use super::{check_repo_id, RemoteError, DEFAULT_ENDPOINT, SMALL_FILE_CAP};
use std::io::Read;
use std::time::Duration;
use ureq::http::Response;
use ureq::Body;

/// Connect timeout for every request.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Timeout for the response head and, separately, for its body.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Hub settings, as huggingface_hub reads them (`constants.py`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubConfig {
    /// `HF_ENDPOINT`, default `https://huggingface.co`, without a trailing slash
    pub endpoint: String,
    /// `HF_TOKEN`, else the older `HUGGING_FACE_HUB_TOKEN`; sent only to `endpoint`
    pub token: Option<String>,
    /// `HF_HUB_OFFLINE`: no request at all
    pub offline: bool,
}

impl HubConfig {
    /// Settings from the process environment.
    pub fn from_env() -> HubConfig {
        HubConfig::from_vars(|k| std::env::var(k).ok())
    }

    /// Settings from any variable lookup (tests pass a map).
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> HubConfig {
        let non_empty = |k: &str| {
            get(k)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let endpoint = non_empty("HF_ENDPOINT").unwrap_or_else(|| DEFAULT_ENDPOINT.to_string());
        // huggingface_hub `constants.py` `_is_true`: "1", "ON", "YES", "TRUE", any case.
        let offline = non_empty("HF_HUB_OFFLINE").is_some_and(|v| {
            matches!(v.to_ascii_uppercase().as_str(), "1" | "ON" | "YES" | "TRUE")
        });
        HubConfig {
            endpoint: endpoint.trim_end_matches('/').to_string(),
            token: non_empty("HF_TOKEN").or_else(|| non_empty("HUGGING_FACE_HUB_TOKEN")),
            offline,
        }
    }

    /// `{endpoint}/{repo}/resolve/{rev}/{file}`; a revision with slashes (`refs/pr/1`) is
    /// percent-encoded as the Hub expects.
    pub fn file_url(&self, repo: &str, revision: &str, file: &str) -> String {
        let rev = revision.replace('/', "%2F");
        format!(
            "{}/{}/resolve/{}/{}",
            self.endpoint,
            repo,
            rev,
            file.trim_start_matches('/')
        )
    }

    /// Whether `url` is on the Hub endpoint (so it may carry the token).
    fn is_hub(&self, url: &str) -> bool {
        url.strip_prefix(&self.endpoint)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    }
}

/// Settings plus a ureq agent (its connection pool is shared by clones).
#[derive(Clone)]
pub struct HubClient {
    pub config: HubConfig,
    agent: ureq::Agent,
}

impl HubClient {
    pub fn new(config: HubConfig) -> HubClient {
        let agent_config = ureq::Agent::config_builder()
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .timeout_recv_response(Some(READ_TIMEOUT))
            .timeout_recv_body(Some(READ_TIMEOUT))
            .http_status_as_error(false)
            // HF resolve URLs answer 302 to a CDN on another host: the token stays behind.
            .redirect_auth_headers(ureq::config::RedirectAuthHeaders::SameHost)
            .max_redirects(10)
            .user_agent(concat!("vramfit/", env!("CARGO_PKG_VERSION")))
            .build();
        HubClient {
            config,
            agent: ureq::Agent::new_with_config(agent_config),
        }
    }

    pub fn from_env() -> HubClient {
        HubClient::new(HubConfig::from_env())
    }

    /// One GET, with `Range: bytes=first-last` when asked. Returns the response only for 2xx
    /// and 416 (the caller reads Content-Range); everything else becomes a [`RemoteError`].
    pub(crate) fn get(
        &self,
        url: &str,
        range: Option<(u64, u64)>,
    ) -> Result<Response<Body>, RemoteError> {
        if self.config.offline {
            return Err(RemoteError::Offline {
                url: url.to_string(),
            });
        }
        let mut req = self.agent.get(url);
        if let Some((first, last)) = range {
            // identity: a compressed body would make byte ranges meaningless
            req = req
                .header("Range", &format!("bytes={first}-{last}"))
                .header("Accept-Encoding", "identity");
        }
        if let (Some(token), true) = (&self.config.token, self.config.is_hub(url)) {
            req = req.header("Authorization", &format!("Bearer {token}"));
        }
        let resp = req.call().map_err(|e| network_error(url, e))?;
        let status = resp.status().as_u16();
        match status {
            200..=299 | 416 => Ok(resp),
            401 | 403 => Err(RemoteError::Unauthorized {
                url: url.to_string(),
                status,
            }),
            404 => Err(RemoteError::NotFound {
                url: url.to_string(),
            }),
            _ => Err(RemoteError::Status {
                url: url.to_string(),
                status,
                reason: resp.status().canonical_reason().unwrap_or("").to_string(),
            }),
        }
    }

    /// A whole small file, refused past `cap` bytes (checked on Content-Length and while reading).
    pub fn fetch_small(&self, url: &str, cap: u64) -> Result<Vec<u8>, RemoteError> {
        let resp = self.get(url, None)?;
        if resp.status().as_u16() != 200 {
            return Err(bad_response(
                url,
                format!("expected HTTP 200, got {}", resp.status().as_u16()),
            ));
        }
        let declared = content_length(&resp);
        if let Some(size) = declared.filter(|&n| n > cap) {
            return Err(RemoteError::TooLarge {
                url: url.to_string(),
                size,
                cap,
            });
        }
        let mut out = Vec::new();
        resp.into_body()
            .into_reader()
            .take(cap + 1)
            .read_to_end(&mut out)
            .map_err(|e| RemoteError::Network {
                url: url.to_string(),
                message: e.to_string(),
            })?;
        if out.len() as u64 > cap {
            return Err(RemoteError::TooLarge {
                url: url.to_string(),
                size: out.len() as u64,
                cap,
            });
        }
        Ok(out)
    }

    /// The files of a Hub repo at a revision, from `{endpoint}/api/models/{repo}[/revision/{rev}]`
    /// (`siblings[].rfilename`, huggingface_hub `hf_api.py` `model_info`).
    pub fn list_files(&self, repo: &str, revision: &str) -> Result<Vec<String>, RemoteError> {
        check_repo_id(repo)?;
        let url = if revision == "main" {
            format!("{}/api/models/{}", self.config.endpoint, repo)
        } else {
            format!(
                "{}/api/models/{}/revision/{}",
                self.config.endpoint,
                repo,
                revision.replace('/', "%2F")
            )
        };
        let body = self.fetch_small(&url, SMALL_FILE_CAP)?;
        let info: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|e| bad_response(&url, format!("model info is not JSON: {e}")))?;
        let siblings = info
            .get("siblings")
            .and_then(|s| s.as_array())
            .ok_or_else(|| bad_response(&url, "model info has no `siblings` list".to_string()))?;
        Ok(siblings
            .iter()
            .filter_map(|s| s.get("rfilename")?.as_str().map(str::to_string))
            .collect())
    }
}

pub(crate) fn bad_response(url: &str, message: String) -> RemoteError {
    RemoteError::BadResponse {
        url: url.to_string(),
        message,
    }
}

pub(crate) fn content_length(resp: &Response<Body>) -> Option<u64> {
    resp.headers()
        .get("content-length")?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn network_error(url: &str, e: ureq::Error) -> RemoteError {
    let message = match &e {
        ureq::Error::Timeout(t) => format!("timed out ({t})"),
        ureq::Error::HostNotFound => "host not found".to_string(),
        ureq::Error::ConnectionFailed => "connection failed".to_string(),
        ureq::Error::TooManyRedirects => "too many redirects".to_string(),
        other => other.to_string(),
    };
    RemoteError::Network {
        url: url.to_string(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(vars: &[(&str, &str)]) -> HubConfig {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        HubConfig::from_vars(|k| m.get(k).cloned())
    }

    #[test]
    fn env_settings() {
        let c = cfg(&[]);
        assert_eq!(c.endpoint, "https://huggingface.co");
        assert_eq!(c.token, None);
        assert!(!c.offline);
        let c = cfg(&[
            ("HF_ENDPOINT", "https://hf-mirror.com/"),
            ("HUGGING_FACE_HUB_TOKEN", "old"),
            ("HF_HUB_OFFLINE", "yes"),
        ]);
        assert_eq!(c.endpoint, "https://hf-mirror.com");
        assert_eq!(c.token.as_deref(), Some("old"));
        assert!(c.offline);
        let c = cfg(&[
            ("HF_TOKEN", "new"),
            ("HUGGING_FACE_HUB_TOKEN", "old"),
            ("HF_HUB_OFFLINE", "0"),
        ]);
        assert_eq!(c.token.as_deref(), Some("new"));
        assert!(!c.offline);
    }

    #[test]
    fn urls() {
        let c = cfg(&[]);
        assert_eq!(
            c.file_url("Qwen/Qwen3-8B", "main", "config.json"),
            "https://huggingface.co/Qwen/Qwen3-8B/resolve/main/config.json"
        );
        assert_eq!(
            c.file_url("a/b", "refs/pr/3", "x/y.json"),
            "https://huggingface.co/a/b/resolve/refs%2Fpr%2F3/x/y.json"
        );
        assert!(c.is_hub("https://huggingface.co/a/b"));
        assert!(!c.is_hub("https://huggingface.co.evil.example/a"));
        assert!(!c.is_hub("https://cdn-lfs.hf.co/a"));
    }
}
