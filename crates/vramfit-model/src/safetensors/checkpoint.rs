//! A whole checkpoint: one `model.safetensors`, or the shards that
//! `model.safetensors.index.json` names (its `weight_map`: tensor name → shard file, as written by
//! transformers `modeling_utils.py` `save_pretrained` / huggingface_hub `split_state_dict_into_shards`),
//! read from a local directory or over HTTP.

use super::header::{read_safetensors_header, to_tensor, SafetensorsHeader};
use super::StError;
use crate::remote::{FetchStats, HttpSource, HubClient, RemoteError, SMALL_FILE_CAP};
use crate::source::{ByteSource, FileSource};
use crate::weights::WeightSet;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

/// The shard index file name (transformers `utils/__init__.py`: `SAFE_WEIGHTS_INDEX_NAME`).
pub const INDEX_FILE: &str = "model.safetensors.index.json";
/// The single-file checkpoint name (transformers `utils/__init__.py`: `SAFE_WEIGHTS_NAME`).
pub const SINGLE_FILE: &str = "model.safetensors";

/// One shard as read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardSummary {
    /// file name relative to the checkpoint location
    pub file: String,
    pub header_len: u64,
    pub file_len: Option<u64>,
    pub tensors: usize,
    pub tensor_bytes: u64,
}

/// All tensors of a checkpoint, merged over its shards.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// the directory or base URL
    pub location: String,
    /// shards in the order read
    pub shards: Vec<ShardSummary>,
    /// every tensor, shard by shard in file order
    pub weights: WeightSet,
    /// `__metadata__` of the first shard (`format: pt`, quantizer notes)
    pub metadata: BTreeMap<String, String>,
    /// `metadata.total_size` of the index, when there is one
    pub index_total_size: Option<u64>,
    /// inconsistencies across headers and index (each names the tensor or shard)
    pub issues: Vec<String>,
    /// network cost when read remotely
    pub fetch: Option<FetchStats>,
}

#[derive(Deserialize)]
struct RawIndex {
    #[serde(default)]
    metadata: Option<serde_json::Map<String, serde_json::Value>>,
    weight_map: BTreeMap<String, String>,
}

struct Index {
    total_size: Option<u64>,
    weight_map: BTreeMap<String, String>,
}

fn parse_index(file: &str, bytes: &[u8]) -> Result<Index, StError> {
    let bad = |message: String| StError::BadIndex {
        file: file.to_string(),
        message,
    };
    let raw: RawIndex = serde_json::from_slice(bytes).map_err(|e| {
        bad(format!(
            "not a safetensors index (expected {{\"weight_map\": {{...}}}}): {e}"
        ))
    })?;
    for shard in raw.weight_map.values() {
        check_shard_name(shard).map_err(&bad)?;
    }
    if raw.weight_map.is_empty() {
        return Err(bad("the weight_map is empty".to_string()));
    }
    // total_size is an integer in transformers' indexes, a float in some older writers
    let total_size = raw
        .metadata
        .as_ref()
        .and_then(|m| m.get("total_size"))
        .and_then(|v| {
            v.as_u64()
                .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
        });
    Ok(Index {
        total_size,
        weight_map: raw.weight_map,
    })
}

/// A shard name must stay inside the checkpoint: relative, no `..`, no backslashes.
fn check_shard_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && !name.starts_with('/')
        && !name.contains('\\')
        && !name.contains(':')
        && name
            .split('/')
            .all(|c| !c.is_empty() && c != ".." && c != ".");
    if ok {
        Ok(())
    } else {
        Err(format!(
            "shard file name '{name}' is not a plain relative file name"
        ))
    }
}

/// Read the checkpoint at `path`: a directory, an index.json, or one .safetensors file.
pub fn read_checkpoint(path: &Path) -> Result<Checkpoint, StError> {
    if path.is_dir() {
        return read_checkpoint_dir(path);
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let dir = path.parent().unwrap_or(Path::new("."));
    let location = dir.display().to_string();
    let open_local = |f: &str| open_file(&dir.join(f));
    if name.ends_with(".index.json") {
        let bytes = read_local_small(path)?;
        let index = parse_index(&path.display().to_string(), &bytes)?;
        merge_shards(&location, Some(index), Vec::new(), open_local, drop)
    } else {
        merge_shards(&location, None, vec![name], open_local, drop)
    }
}

/// Read a local checkpoint directory: its index.json, else `model.safetensors`, else every
/// `*.safetensors` file in it (sorted by name).
pub fn read_checkpoint_dir(dir: &Path) -> Result<Checkpoint, StError> {
    let location = dir.display().to_string();
    let open_local = |f: &str| open_file(&dir.join(f));
    let index_path = dir.join(INDEX_FILE);
    if index_path.is_file() {
        let index = parse_index(
            &index_path.display().to_string(),
            &read_local_small(&index_path)?,
        )?;
        return merge_shards(&location, Some(index), Vec::new(), open_local, drop);
    }
    if dir.join(SINGLE_FILE).is_file() {
        return merge_shards(
            &location,
            None,
            vec![SINGLE_FILE.to_string()],
            open_local,
            drop,
        );
    }
    let entries = std::fs::read_dir(dir).map_err(|e| StError::io(&location, &e))?;
    let mut files: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".safetensors"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(StError::NoCheckpoint { dir: location });
    }
    merge_shards(&location, None, files, open_local, drop)
}

/// Read a remote checkpoint by range requests. `url` is a `.safetensors` file, an index.json,
/// or a base URL under which `model.safetensors.index.json` (else `model.safetensors`) lives.
pub fn read_checkpoint_url(client: &HubClient, url: &str) -> Result<Checkpoint, StError> {
    let url = url.trim_end_matches('/');
    let (base, leaf) = match url.rsplit_once('/') {
        Some((b, l)) if l.ends_with(".safetensors") || l.ends_with(".index.json") => (b, Some(l)),
        _ => (url, None),
    };
    let mut index_cost = FetchStats::default();
    let index = match leaf {
        Some(l) if l.ends_with(".safetensors") => None,
        _ => {
            let index_url = format!("{base}/{}", leaf.unwrap_or(INDEX_FILE));
            index_cost.round_trips += 1;
            match client.fetch_small(&index_url, SMALL_FILE_CAP) {
                Ok(bytes) => {
                    index_cost.bytes_fetched += bytes.len() as u64;
                    Some(parse_index(&index_url, &bytes)?)
                }
                // no index: a single-file checkpoint, unless the index was named explicitly
                Err(RemoteError::NotFound { .. }) if leaf.is_none() => None,
                Err(e) => return Err(e.into()),
            }
        }
    };
    let files = match (&index, leaf) {
        (Some(_), _) => Vec::new(),
        (None, Some(l)) => vec![l.to_string()],
        (None, None) => vec![SINGLE_FILE.to_string()],
    };
    read_remote(client, base, index, files, index_cost)
}

/// Read the shards under `base` (the index's, or `files`), adding their cost to `cost`.
fn read_remote(
    client: &HubClient,
    base: &str,
    index: Option<Index>,
    files: Vec<String>,
    cost: FetchStats,
) -> Result<Checkpoint, StError> {
    let mut total = cost;
    let mut ckpt = merge_shards(
        base,
        index,
        files,
        |f| Ok(HttpSource::open(client, &format!("{base}/{f}"))?),
        |src| {
            let s = src.stats();
            total.bytes_fetched += s.bytes_fetched;
            total.round_trips += s.round_trips;
        },
    )?;
    ckpt.fetch = Some(total);
    Ok(ckpt)
}

/// Read a Hub repo's checkpoint at `revision` by range requests.
pub fn read_checkpoint_hub(
    client: &HubClient,
    repo: &str,
    revision: &str,
) -> Result<Checkpoint, StError> {
    crate::remote::check_repo_id(repo)?;
    let base = client.config.file_url(repo, revision, "");
    let base = base.trim_end_matches('/');
    match read_checkpoint_url(client, base) {
        // neither index nor model.safetensors: ask the Hub which safetensors files the repo
        // has at its top level (`consolidated.safetensors`, unindexed shards) and read those
        Err(StError::Remote(RemoteError::NotFound { url })) if url.ends_with(SINGLE_FILE) => {
            let mut files: Vec<String> = client
                .list_files(repo, revision)?
                .into_iter()
                .filter(|f| f.ends_with(".safetensors") && !f.contains('/'))
                .collect();
            files.sort();
            if files.is_empty() {
                return Err(StError::NoCheckpoint {
                    dir: format!("{repo}@{revision}"),
                });
            }
            // two requests that found nothing, one listing
            let cost = FetchStats {
                bytes_fetched: 0,
                round_trips: 3,
            };
            read_remote(client, base, None, files, cost)
        }
        other => other,
    }
}

fn open_file(path: &Path) -> Result<FileSource, StError> {
    FileSource::open(path).map_err(|e| StError::io(&path.display().to_string(), &e))
}

fn read_local_small(path: &Path) -> Result<Vec<u8>, StError> {
    let name = path.display().to_string();
    let len = std::fs::metadata(path)
        .map_err(|e| StError::io(&name, &e))?
        .len();
    if len > SMALL_FILE_CAP {
        return Err(StError::BadIndex {
            file: name,
            message: format!("{len} bytes is too large for an index"),
        });
    }
    std::fs::read(path).map_err(|e| StError::io(&name, &e))
}

/// Read every shard's header (those the index names, in name order, or `files`) and merge.
/// `open` opens a shard by file name; `done` gets each source once its header is read.
fn merge_shards<S: ByteSource>(
    location: &str,
    index: Option<Index>,
    files: Vec<String>,
    mut open: impl FnMut(&str) -> Result<S, StError>,
    mut done: impl FnMut(S),
) -> Result<Checkpoint, StError> {
    let files: Vec<String> = match &index {
        Some(ix) => ix
            .weight_map
            .values()
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect(),
        None => files,
    };
    let mut headers: Vec<(String, SafetensorsHeader)> = Vec::with_capacity(files.len());
    for f in files {
        let src = open(&f)?;
        let header = read_safetensors_header(&src)?;
        done(src);
        headers.push((f, header));
    }

    let mut issues = Vec::new();
    let mut seen: HashMap<&str, &str> = HashMap::new();
    for (file, h) in &headers {
        issues.extend(h.issues.iter().map(|i| format!("{file}: {i}")));
        for t in &h.tensors {
            if let Some(first) = seen.insert(&t.name, file) {
                issues.push(format!("tensor '{}' is in both {first} and {file}", t.name));
            }
            if let Some(ix) = &index {
                match ix.weight_map.get(&t.name) {
                    None => {
                        issues.push(format!("tensor '{}' in {file} is not in the index", t.name))
                    }
                    Some(s) if s != file => issues.push(format!(
                        "the index puts tensor '{}' in {s}, but {file} holds it",
                        t.name
                    )),
                    Some(_) => {}
                }
            }
        }
    }
    let mut total = 0u64;
    let mut shards = Vec::with_capacity(headers.len());
    let mut tensors = Vec::new();
    for (file, h) in &headers {
        total += h.tensor_bytes();
        shards.push(ShardSummary {
            file: file.clone(),
            header_len: h.header_len,
            file_len: h.file_len,
            tensors: h.tensors.len(),
            tensor_bytes: h.tensor_bytes(),
        });
        tensors.extend(h.tensors.iter().map(to_tensor));
    }
    let index_total_size = index.as_ref().and_then(|ix| ix.total_size);
    if let Some(ix) = &index {
        let missing: Vec<&String> = ix
            .weight_map
            .keys()
            .filter(|k| !seen.contains_key(k.as_str()))
            .collect();
        if let Some(first) = missing.first() {
            issues.push(format!(
                "{} tensors of the index are in no shard (first: '{first}')",
                missing.len()
            ));
        }
        if let Some(size) = ix.total_size.filter(|&s| s != total) {
            issues.push(format!(
                "the index's total_size is {size} bytes, the shards hold {total}"
            ));
        }
    }
    let metadata = headers
        .first()
        .map(|(_, h)| h.metadata.clone())
        .unwrap_or_default();
    let source = if shards.len() == 1 {
        "safetensors header"
    } else {
        "safetensors headers"
    };
    Ok(Checkpoint {
        location: location.to_string(),
        shards,
        weights: WeightSet {
            tensors,
            source: source.to_string(),
        },
        metadata,
        index_total_size,
        issues,
        fetch: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_names() {
        assert!(check_shard_name("model-00001-of-00002.safetensors").is_ok());
        assert!(check_shard_name("sub/model.safetensors").is_ok());
        for bad in [
            "",
            "/etc/passwd",
            "../x.safetensors",
            "a/../../b",
            "C:\\x",
            "a//b",
            "./a",
        ] {
            assert!(check_shard_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn index_total_size_int_or_float() {
        let ix = parse_index(
            "i",
            br#"{"metadata":{"total_size":16.0},"weight_map":{"a":"x.safetensors"}}"#,
        )
        .unwrap();
        assert_eq!(ix.total_size, Some(16));
        let ix = parse_index("i", br#"{"weight_map":{"a":"x.safetensors"}}"#).unwrap();
        assert_eq!(ix.total_size, None);
        assert!(parse_index("i", br#"{"weight_map":{}}"#).is_err());
        assert!(parse_index("i", br#"{"weight_map":{"a":"../x"}}"#).is_err());
    }
}
