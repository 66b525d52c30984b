//! Split GGUF sets written by llama.cpp's `gguf-split` (and gguf-py's `GGUFWriter` with
//! `split_max_tensors`/`split_max_size`): files named `PREFIX-00001-of-00003.gguf`, each with
//! the keys `split.no` (0-based), `split.count` and `split.tensors.count` (tensors in the whole
//! set); the first shard holds the model metadata (tools/gguf-split/gguf-split.cpp, and
//! `llama_split_path` in src/llama.cpp for the file name format).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::{read_gguf_with, GgufError, GgufFile, ReadOptions};
use crate::source::{ByteSource, FileSource};

/// The paths of every shard of a split set, in order, given the path of any one of them:
/// `dir/PREFIX-00002-of-00003.gguf` gives `PREFIX-0000{1,2,3}-of-00003.gguf`. `None` when the
/// file name does not follow llama.cpp's `%s-%05d-of-%05d.gguf` pattern.
pub fn split_shard_paths(path: &Path) -> Option<Vec<PathBuf>> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".gguf")?;
    // "-NNNNN-of-MMMMM": 15 bytes, digits at 1..6 and 10..15
    let tail = stem.get(stem.len().checked_sub(15)?..)?;
    if !tail.is_ascii() {
        return None;
    }
    let prefix = &stem[..stem.len() - 15];
    let b = tail.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if b[0] != b'-'
        || &tail[6..10] != "-of-"
        || !digits(1..6)
        || !digits(10..15)
        || prefix.is_empty()
    {
        return None;
    }
    let count: u32 = tail[10..15].parse().ok()?;
    let no: u32 = tail[1..6].parse().ok()?;
    if count == 0 || no == 0 || no > count {
        return None;
    }
    let dir = path.parent().unwrap_or(Path::new(""));
    Some(
        (1..=count)
            .map(|i| dir.join(format!("{prefix}-{i:05}-of-{count:05}.gguf")))
            .collect(),
    )
}

/// Read a GGUF that may be split: given the path of any shard of a `-NNNNN-of-MMMMM.gguf` set,
/// read every shard's header and return one [`GgufFile`] with the first shard's metadata and
/// all tensors. An unsplit file is read as is.
pub fn read_gguf_split(path: &Path) -> Result<GgufFile, GgufError> {
    read_gguf_split_with(path, ReadOptions::default())
}

/// [`read_gguf_split`] with explicit options.
pub fn read_gguf_split_with(path: &Path, opts: ReadOptions) -> Result<GgufFile, GgufError> {
    let given = read_path(path, opts)?;
    let count = split_count(&given).unwrap_or(1);
    if count <= 1 {
        return Ok(given);
    }
    let mismatch = |detail: String| GgufError::SplitMismatch {
        file: path.display().to_string(),
        detail,
    };
    let Some(paths) = split_shard_paths(path) else {
        return Err(mismatch(format!(
            "split.count is {count} but the file name does not end in -NNNNN-of-{count:05}.gguf, \
             so its siblings cannot be found"
        )));
    };
    if paths.len() as u64 != count {
        let n = paths.len();
        return Err(mismatch(format!(
            "split.count is {count} but the file name says {n} shards"
        )));
    }
    for p in &paths {
        if !p.exists() {
            return Err(GgufError::MissingShard {
                path: p.clone(),
                count,
            });
        }
    }
    let mut given = Some(given);
    let mut shards = Vec::with_capacity(paths.len());
    for p in &paths {
        let header = match given.take_if(|_| p.file_name() == path.file_name()) {
            Some(g) => g,
            None => read_path(p, opts)?,
        };
        shards.push((p.display().to_string(), header));
    }
    merge(shards)
}

/// Read a split set from byte sources given in shard order (remote shards).
pub fn read_gguf_split_sources(
    sources: &[&dyn ByteSource],
    opts: ReadOptions,
) -> Result<GgufFile, GgufError> {
    let mut shards = Vec::with_capacity(sources.len());
    for src in sources {
        shards.push((src.name(), read_gguf_with(*src, opts)?));
    }
    merge(shards)
}

fn read_path(path: &Path, opts: ReadOptions) -> Result<GgufFile, GgufError> {
    let src = FileSource::open(path).map_err(|source| GgufError::Open {
        file: path.display().to_string(),
        source,
    })?;
    read_gguf_with(&src, opts)
}

fn split_count(f: &GgufFile) -> Option<u64> {
    f.get_u64("split.count")
}

/// Check that the shards form one complete set and join their tensor tables.
fn merge(shards: Vec<(String, GgufFile)>) -> Result<GgufFile, GgufError> {
    let mismatch = |file: &str, detail: String| GgufError::SplitMismatch {
        file: file.to_string(),
        detail,
    };
    let Some((first_name, first)) = shards.first() else {
        return Err(mismatch("(no shards)", "no shard was given".into()));
    };
    let first_name = first_name.clone();
    let count = split_count(first).unwrap_or(1);
    if count != shards.len() as u64 {
        return Err(mismatch(
            &first_name,
            format!(
                "split.count is {count} but {} shards were given",
                shards.len()
            ),
        ));
    }
    let mut merged = first.clone();
    merged.tensors.clear();
    merged.header_bytes = 0;
    let mut names = HashSet::new();
    for (i, (name, shard)) in shards.into_iter().enumerate() {
        let no = shard.get_u64("split.no").unwrap_or(0);
        if no != i as u64 {
            return Err(mismatch(
                &name,
                format!(
                    "split.no is {no}, expected {i} for shard {} of {count}",
                    i + 1
                ),
            ));
        }
        if let Some(c) = split_count(&shard).filter(|&c| c != count) {
            return Err(mismatch(
                &name,
                format!("split.count is {c} but the first shard says {count}"),
            ));
        }
        for t in &shard.tensors {
            if !names.insert(t.name.clone()) {
                return Err(mismatch(
                    &name,
                    format!("tensor {:?} is also in an earlier shard", t.name),
                ));
            }
        }
        merged.header_bytes += shard.header_bytes;
        merged.tensors.extend(shard.tensors);
    }
    if let Some(total) = merged.get_u64("split.tensors.count") {
        if total != merged.tensors.len() as u64 {
            let detail = format!(
                "split.tensors.count is {total} but the shards hold {} tensors",
                merged.tensors.len()
            );
            return Err(mismatch(&first_name, detail));
        }
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_names() {
        let p = split_shard_paths(Path::new("/m/Qwen3-235B-Q4_K_M-00002-of-00003.gguf")).unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p[0], Path::new("/m/Qwen3-235B-Q4_K_M-00001-of-00003.gguf"));
        assert_eq!(p[2], Path::new("/m/Qwen3-235B-Q4_K_M-00003-of-00003.gguf"));
        assert_eq!(split_shard_paths(Path::new("model.gguf")), None);
        assert_eq!(split_shard_paths(Path::new("-00001-of-00002.gguf")), None);
        assert_eq!(split_shard_paths(Path::new("m-00004-of-00003.gguf")), None);
        assert_eq!(split_shard_paths(Path::new("m-0000a-of-00003.gguf")), None);
        assert_eq!(split_shard_paths(Path::new("m-00001-of-00000.gguf")), None);
    }
}
