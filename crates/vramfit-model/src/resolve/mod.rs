//! Model resolution, in the order DESIGN.md fixes: a local path (GGUF file, HF snapshot dir,
//! config.json); the Hugging Face cache; the embedded catalog (a pre-quantized variant by its
//! repo id, `Qwen/Qwen3-8B-AWQ`, or its name when one variant has it; then a model by repo id,
//! then by name across orgs); the
//! Hub over the network unless `HF_HUB_OFFLINE=1`. A GGUF repo id
//! `ORG/NAME-GGUF[:QUANT]` whose GGUF is not at hand resolves to its base model `ORG/NAME`, with
//! the GGUF's tensor types left to be predicted for QUANT (default Q4_K_M, as llama.cpp's `-hf`).

mod gguf_spec;
mod hf_cache;
mod hint;

pub use gguf_spec::{model_type_of, spec_from_gguf};
pub use hf_cache::{hub_cache_dir, HfCache};
pub use hint::not_found_hint;

use crate::hf_config::spec_from_config;
use crate::remote::{HubClient, HubConfig};
use crate::source::FileSource;
use crate::spec::ModelSpec;
use crate::weights::WeightSet;
use std::path::{Path, PathBuf};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ResolveError {
    /// `hint`: "did you mean" over the catalog's repo ids and the remedy for this kind of name
    /// (see [`not_found_hint`]).
    #[error("model '{query}' not found; tried {tried}. {hint}")]
    NotFound {
        query: String,
        tried: String,
        hint: String,
    },
    #[error("{0}")]
    Read(String),
}

/// A resolved model: its spec, the exact tensors when a header was read, and where it came from.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub spec: ModelSpec,
    /// exact tensors (GGUF header, safetensors headers) when they were read
    pub weights: Option<WeightSet>,
    /// the GGUF quant the user asked for (`-hf ORG/NAME-GGUF:Q6_K` → `Q6_K`), when the GGUF
    /// itself was not read
    pub gguf_quant: Option<String>,
    /// general.file_type of a GGUF that was read
    pub gguf_file_type: Option<u64>,
    /// a human description of the source
    pub source: String,
}

/// Where to look.
#[derive(Debug, Clone)]
pub struct ResolveOptions {
    pub cache: Option<PathBuf>,
    pub hub: HubConfig,
    /// read safetensors headers when they are at hand (exact weights); false for speed
    pub read_headers: bool,
}

impl ResolveOptions {
    pub fn from_env() -> ResolveOptions {
        ResolveOptions {
            cache: hub_cache_dir(),
            hub: HubConfig::from_env(),
            read_headers: true,
        }
    }
}

/// `ORG/NAME-GGUF:QUANT` → (`ORG/NAME`, Some(QUANT)); `ORG/NAME:QUANT` likewise.
pub fn split_gguf_repo(query: &str) -> (String, Option<String>, bool) {
    // an org-less `NAME:SIZE` is an Ollama name (`qwen3:30b`), not a GGUF repo and its quant
    if !query.contains('/')
        && query
            .rsplit_once(':')
            .is_some_and(|(_, t)| !crate::catalog::lookup::droppable_tag(t))
    {
        return (query.to_string(), None, false);
    }
    let (repo, quant) = match query.rsplit_once(':') {
        Some((r, q)) if !q.contains('/') && !r.is_empty() && !q.is_empty() => {
            (r.to_string(), Some(q.to_string()))
        }
        _ => (query.to_string(), None),
    };
    let lower = repo.to_ascii_lowercase();
    let is_gguf = lower.ends_with("-gguf") || lower.ends_with("_gguf") || quant.is_some();
    let base = if lower.ends_with("-gguf") || lower.ends_with("_gguf") {
        repo[..repo.len() - 5].to_string()
    } else {
        repo
    };
    (base, quant, is_gguf)
}

fn read_gguf_path(query: &str, p: &Path) -> Result<Resolved, ResolveError> {
    let g = if crate::gguf::split_shard_paths(p).is_some() {
        crate::gguf::read_gguf_split(p)
    } else {
        let src = FileSource::open(p)
            .map_err(|e| ResolveError::Read(format!("cannot open {}: {e}", p.display())))?;
        crate::gguf::read_gguf(&src)
    }
    .map_err(|e| ResolveError::Read(format!("{}: {e}", p.display())))?;
    from_gguf(query, &g, format!("GGUF header of {}", p.display()))
}

/// A model read from a GGUF header: its spec from the metadata, its exact tensors.
fn from_gguf(
    id: &str,
    g: &crate::gguf::GgufFile,
    source: String,
) -> Result<Resolved, ResolveError> {
    let spec = spec_from_gguf(id, g).map_err(|e| ResolveError::Read(format!("{source}: {e}")))?;
    Ok(Resolved {
        weights: Some(g.weight_set()),
        spec,
        gguf_quant: None,
        gguf_file_type: g.get_u64("general.file_type"),
        source,
    })
}

fn read_config_file(id: &str, p: &Path) -> Result<ModelSpec, ResolveError> {
    // a config.json is a few KiB; 16 MiB leaves room for any, and stops a device or a huge file
    let text = crate::source::read_small_file(p, 16 << 20).map_err(|e| {
        ResolveError::Read(format!(
            "cannot read {}: {e}; give a GGUF file, a config.json or a model folder",
            p.display()
        ))
    })?;
    let v: serde_json::Value = serde_json::from_slice(&text).map_err(|e| {
        ResolveError::Read(format!(
            "{} is not valid JSON ({e}): give the model's config.json",
            p.display()
        ))
    })?;
    let mut spec = spec_from_config(id, &v).map_err(|e| ResolveError::Read(e.to_string()))?;
    spec.provenance.source = format!("config.json at {}", p.display());
    Ok(spec)
}

fn from_dir(id: &str, dir: &Path, opts: &ResolveOptions) -> Result<Resolved, ResolveError> {
    let spec = read_config_file(id, &dir.join("config.json"))?;
    let weights = if opts.read_headers {
        local_checkpoint(dir)?
    } else {
        None
    };
    let source = spec.provenance.source.clone();
    Ok(Resolved {
        spec,
        weights,
        gguf_quant: None,
        gguf_file_type: None,
        source,
    })
}

/// The exact tensors of the safetensors checkpoint beside a config.json. No checkpoint there, or
/// shards the index names but that are not downloaded, leave the weights to be predicted; a
/// checkpoint file that is present but unreadable or corrupt is an error naming the file, never
/// a silent fallback to a prediction.
fn local_checkpoint(dir: &Path) -> Result<Option<WeightSet>, ResolveError> {
    use crate::safetensors::StError;
    match crate::safetensors::read_checkpoint_dir(dir) {
        Ok(c) => Ok(Some(c.weights).filter(|w| !w.tensors.is_empty())),
        Err(StError::NoCheckpoint { .. }) => Ok(None),
        Err(StError::Io { file, .. }) if !Path::new(&file).exists() => Ok(None),
        Err(e) => Err(ResolveError::Read(format!(
            "{e} (the checkpoint beside {}; fix or re-download it, or pass the config.json alone to predict the weights)",
            dir.join("config.json").display()
        ))),
    }
}

/// The quant `-hf REPO` loads when no tag is given: the native file of a one-file repo of the
/// GGUF catalog (gpt-oss's MXFP4), else llama.cpp's default (common/arg.cpp; Q4_0 for QAT repos).
fn default_quant(query: &str, base: &str) -> String {
    crate::catalog::gguf_repos::find_repo(query)
        .and_then(|r| r.native.clone())
        .unwrap_or_else(|| default_gguf_quant(base))
}

/// Resolve a model name, path or repo id.
pub fn resolve(query: &str, opts: &ResolveOptions) -> Result<Resolved, ResolveError> {
    let mut tried = Vec::new();
    if query.starts_with("http://") || query.starts_with("https://") {
        return from_url(query, opts).map_err(|e| match e {
            ResolveError::Read(m) => {
                ResolveError::Read(format!("{m}. {}", not_found_hint(query, opts.hub.offline)))
            }
            other => other,
        });
    }
    let p = Path::new(query);
    if p.exists() {
        if p.is_dir() {
            if p.join("config.json").is_file() {
                return from_dir(query, p, opts);
            }
            if let Some(g) = first_gguf(p, None) {
                return read_gguf_path(query, &g);
            }
            return Err(ResolveError::Read(format!(
                "{} holds neither config.json nor a .gguf file",
                p.display()
            )));
        }
        if query.to_ascii_lowercase().ends_with(".gguf") {
            return read_gguf_path(query, p);
        }
        let spec = read_config_file(query, p)?;
        let source = spec.provenance.source.clone();
        return Ok(Resolved {
            spec,
            weights: None,
            gguf_quant: None,
            gguf_file_type: None,
            source,
        });
    }
    tried.push(format!("local path {query}"));
    let (base, quant, is_gguf) = split_gguf_repo(query);
    let cache = opts.cache.as_ref().map(|c| HfCache::new(c.clone()));
    if let Some(cache) = &cache {
        if is_gguf {
            let gguf_repo = query.split(':').next().unwrap_or(query);
            if let Some(snap) = cache.snapshot(gguf_repo) {
                if let Some(g) = first_gguf(&snap, quant.as_deref()) {
                    let mut r = read_gguf_path(&base, &g)?;
                    r.spec.id = base.clone();
                    return Ok(r);
                }
            }
        }
        if let Some(snap) = cache.snapshot(&base) {
            if snap.join("config.json").is_file() {
                let mut r = from_dir(&base, &snap, opts)?;
                r.source = format!("HF cache: {}", snap.join("config.json").display());
                r.spec.provenance.source = r.source.clone();
                if is_gguf {
                    r.weights = None;
                    r.gguf_quant =
                        Some(quant.clone().unwrap_or_else(|| default_quant(query, &base)));
                }
                return Ok(r);
            }
        }
        tried.push(format!("HF cache {}", cache.root().display()));
    } else {
        tried.push("HF cache (no HF_HUB_CACHE, HF_HOME or home directory)".into());
    }
    if !is_gguf {
        if let Some(v) = crate::catalog::find_variant(&base) {
            return from_variant(v);
        }
    }
    if let Some(m) = crate::catalog::find_model(&base) {
        let mut spec = spec_from_config(&m.id, &m.config)
            .map_err(|e| ResolveError::Read(format!("embedded catalog entry {}: {e}", m.id)))?;
        spec.provenance.source = format!("embedded catalog ({})", m.id);
        let source = spec.provenance.source.clone();
        return Ok(Resolved {
            spec,
            weights: None,
            gguf_quant: is_gguf
                .then(|| quant.clone().unwrap_or_else(|| default_quant(query, &base))),
            gguf_file_type: None,
            source,
        });
    }
    tried.push("the embedded catalog".into());
    if opts.hub.offline {
        tried.push("the Hub (skipped: HF_HUB_OFFLINE=1)".into());
    } else if base.contains('/') {
        match from_hub(&base, opts) {
            Ok(mut r) => {
                if is_gguf {
                    r.weights = None;
                    r.gguf_quant = Some(quant.unwrap_or_else(|| default_quant(query, &base)));
                }
                return Ok(r);
            }
            Err(e) => tried.push(format!("the Hub ({e})")),
        }
    }
    Err(ResolveError::NotFound {
        query: query.to_string(),
        tried: tried.join(", "),
        hint: not_found_hint(query, opts.hub.offline),
    })
}

/// A pre-quantized checkpoint of the catalog (`Qwen/Qwen3-8B-AWQ`): the base model's config
/// with the repo's `quantization_config` laid over it, under the variant's own id.
fn from_variant(v: &crate::catalog::Variant) -> Result<Resolved, ResolveError> {
    let config = v.config().ok_or_else(|| {
        ResolveError::Read(format!(
            "embedded catalog variant {}: base model {} is not in the catalog",
            v.repo, v.base
        ))
    })?;
    let mut spec = spec_from_config(&v.repo, &config)
        .map_err(|e| ResolveError::Read(format!("embedded catalog variant {}: {e}", v.repo)))?;
    let arch = if v.source() == v.base {
        String::new()
    } else {
        format!(", architecture of {}", v.base)
    };
    spec.provenance.source = format!(
        "embedded catalog: {}, {} checkpoint of {}{arch}",
        v.repo,
        v.format_name(),
        v.source(),
    );
    if !v.inferred.is_empty() {
        spec.provenance.warnings.push(format!(
            "{}: part of this catalog entry is inferred, not read from the repo's config.json ({} note(s) in catalog/quantized.json); download its config.json for exact numbers",
            v.repo,
            v.inferred.len()
        ));
    }
    let source = spec.provenance.source.clone();
    Ok(Resolved {
        spec,
        weights: None,
        gguf_quant: None,
        gguf_file_type: None,
        source,
    })
}

fn from_hub(repo: &str, opts: &ResolveOptions) -> Result<Resolved, String> {
    let client = HubClient::new(opts.hub.clone());
    let url = opts.hub.file_url(repo, "main", "config.json");
    let bytes = client
        .fetch_small(&url, 16 << 20)
        .map_err(|e| e.to_string())?;
    let v: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| format!("config.json is not JSON: {e}"))?;
    let mut spec = spec_from_config(repo, &v).map_err(|e| e.to_string())?;
    spec.provenance.source = format!("the Hub: {url}");
    let weights = if opts.read_headers {
        crate::safetensors::read_checkpoint_hub(&client, repo, "main")
            .ok()
            .map(|c| c.weights)
    } else {
        None
    };
    let source = spec.provenance.source.clone();
    Ok(Resolved {
        spec,
        weights,
        gguf_quant: None,
        gguf_file_type: None,
        source,
    })
}

/// A model behind a URL: a `.gguf` (header read by range requests), a `.safetensors` file or
/// `model.safetensors.index.json` (headers, with `config.json` from the same folder), or a
/// `config.json`.
fn from_url(url: &str, opts: &ResolveOptions) -> Result<Resolved, ResolveError> {
    let client = HubClient::new(opts.hub.clone());
    let lower = url.to_ascii_lowercase();
    let path = lower.split(['?', '#']).next().unwrap_or(&lower).to_string();
    let base = url.rsplit_once('/').map(|(b, _)| b).unwrap_or(url);
    let name = url
        .rsplit('/')
        .next()
        .unwrap_or(url)
        .split(['?', '#'])
        .next()
        .unwrap_or(url)
        .to_string();
    let read_err = |e: String| ResolveError::Read(format!("{url}: {e}"));
    if path.ends_with(".gguf") {
        let src =
            crate::remote::HttpSource::open(&client, url).map_err(|e| read_err(e.to_string()))?;
        let g = crate::gguf::read_gguf(&src).map_err(|e| read_err(e.to_string()))?;
        let st = src.stats();
        let source = format!(
            "GGUF header of {url} ({} bytes in {} requests)",
            st.bytes_fetched, st.round_trips
        );
        return from_gguf(&name, &g, source);
    }
    let config_url = if path.ends_with("config.json") {
        url.to_string()
    } else {
        format!("{base}/config.json")
    };
    let bytes = client
        .fetch_small(&config_url, 16 << 20)
        .map_err(|e| read_err(e.to_string()))?;
    let v: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| read_err(format!("config.json is not JSON: {e}")))?;
    let id = base.rsplit('/').next().unwrap_or(&name).to_string();
    let mut spec = spec_from_config(&id, &v).map_err(|e| read_err(e.to_string()))?;
    spec.provenance.source = format!("config.json at {config_url}");
    let ckpt_url = if path.ends_with(".safetensors") || path.ends_with(".index.json") {
        url.to_string()
    } else {
        base.to_string()
    };
    let ckpt = if opts.read_headers {
        crate::safetensors::read_checkpoint_url(&client, &ckpt_url).ok()
    } else {
        None
    };
    let source = match ckpt.as_ref().and_then(|c| c.fetch) {
        Some(f) => format!(
            "{} + safetensors headers ({} bytes in {} requests)",
            spec.provenance.source, f.bytes_fetched, f.round_trips
        ),
        None => spec.provenance.source.clone(),
    };
    Ok(Resolved {
        spec,
        weights: ckpt.map(|c| c.weights),
        gguf_quant: None,
        gguf_file_type: None,
        source,
    })
}

/// The quant a GGUF repo named without `:QUANT` is taken to hold: llama.cpp's `-hf` default
/// Q4_K_M, except Google's QAT repos (`gemma-3-27b-it-qat-q4_0-gguf`), which hold one Q4_0 file.
fn default_gguf_quant(base: &str) -> String {
    if base.to_ascii_lowercase().contains("qat-q4_0") {
        "Q4_0".into()
    } else {
        "Q4_K_M".into()
    }
}

/// The first `.gguf` in a directory whose name contains `quant` (case-insensitive), preferring
/// the first shard of a split set.
fn first_gguf(dir: &Path, quant: Option<&str>) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    let mut visited = 0;
    while let Some(d) = stack.pop() {
        visited += 1;
        if visited > 256 {
            break;
        }
        for e in std::fs::read_dir(&d).ok()?.flatten() {
            let path = e.path();
            if path.is_dir() {
                stack.push(path);
            } else if path
                .extension()
                .map(|x| x.eq_ignore_ascii_case("gguf"))
                .unwrap_or(false)
            {
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().to_ascii_lowercase())
                    .unwrap_or_default();
                if name.contains("mmproj") {
                    continue;
                }
                let split_ok = !name.contains("-of-") || name.contains("-00001-of-");
                let q_ok = quant
                    .map(|q| name.contains(&q.to_ascii_lowercase()))
                    .unwrap_or(true);
                if split_ok && q_ok {
                    found.push(path);
                }
            }
        }
    }
    found.sort();
    found.into_iter().next()
}
