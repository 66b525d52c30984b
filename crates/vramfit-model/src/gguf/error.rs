//! Everything that can go wrong while reading a GGUF header, each as one line that names the
//! offending value and says what to do.

use std::path::PathBuf;

/// A GGUF file that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum GgufError {
    #[error("{file}: cannot open: {source}; check the path")]
    Open {
        file: String,
        #[source]
        source: std::io::Error,
    },

    #[error("{file}: read failed at byte {offset}: {source}; check that the file is readable")]
    Io {
        file: String,
        offset: u64,
        #[source]
        source: std::io::Error,
    },

    #[error("{file}: the file ends before {what} (at byte {offset}); it is truncated, download it again")]
    Truncated {
        file: String,
        what: String,
        offset: u64,
    },

    #[error("{file} is not a GGUF file: it starts with {found:?}, expected \"GGUF\"; pass a .gguf model file")]
    BadMagic { file: String, found: String },

    #[error("{file} is GGUF version 1, which llama.cpp no longer reads; convert the model again with a current llama.cpp")]
    Version1 { file: String },

    #[error("{file}: GGUF version {version} is not supported (only 2 and 3); the header is corrupt or from a newer GGUF")]
    UnsupportedVersion { file: String, version: u32 },

    #[error("{file}: {what} is {count}, more than the {limit} this reader accepts; the header is corrupt")]
    TooMany {
        file: String,
        what: String,
        count: u64,
        limit: u64,
    },

    #[error("{file}: {what} is {count} but only {remaining} bytes follow; the header is corrupt or the file is truncated")]
    CountPastEnd {
        file: String,
        what: String,
        count: u64,
        remaining: u64,
    },

    #[error("{file}: metadata key {key:?} has unknown value type id {type_id} (valid: 0-12); the header is corrupt")]
    BadValueType {
        file: String,
        key: String,
        type_id: u32,
    },

    #[error("{file}: metadata key {key:?} nests arrays {depth} deep (limit {limit}); the header is corrupt")]
    TooDeep {
        file: String,
        key: String,
        depth: usize,
        limit: usize,
    },

    #[error("{file}: metadata key {key:?} appears twice; the file is corrupt, convert it again")]
    DuplicateKey { file: String, key: String },

    #[error("{file}: general.alignment is {value}, expected a power of two up to {limit}; the header is corrupt")]
    BadAlignment {
        file: String,
        value: String,
        limit: u64,
    },

    #[error("{file}: tensor {tensor:?} has {n_dims} dimensions, ggml allows at most {max} (GGML_MAX_DIMS); the header is corrupt")]
    TooManyDims {
        file: String,
        tensor: String,
        n_dims: u32,
        max: u32,
    },

    #[error("{file}: tensor {tensor:?} has unknown ggml type id {type_id}; the file needs a newer vramfit, or is corrupt")]
    UnknownTensorType {
        file: String,
        tensor: String,
        type_id: u32,
    },

    #[error("{file}: tensor {tensor:?} of type {ggml_type} has shape {dims:?}, {why}; the header is corrupt")]
    BadShape {
        file: String,
        tensor: String,
        ggml_type: String,
        dims: Vec<u64>,
        why: String,
    },

    #[error("{file}: tensor name {tensor:?} appears twice; the file is corrupt, convert it again")]
    DuplicateTensor { file: String, tensor: String },

    #[error("{file}: tensor {tensor:?} data offset {offset} is not a multiple of the alignment {alignment}; the header is corrupt")]
    MisalignedTensor {
        file: String,
        tensor: String,
        offset: u64,
        alignment: u64,
    },

    #[error("{file}: tensor {tensor:?} ends at byte {end} but the file has {len} bytes; it is truncated, download it again")]
    TensorPastEnd {
        file: String,
        tensor: String,
        end: u64,
        len: u64,
    },

    #[error("{file}: the tensor data starts at byte {data_offset} but the file has {len} bytes; it is truncated, download it again")]
    DataPastEnd {
        file: String,
        data_offset: u64,
        len: u64,
    },

    #[error("{file}: metadata key {key:?} holds {found}, expected {expected}; the file does not follow llama.cpp's conventions")]
    KeyType {
        file: String,
        key: String,
        expected: &'static str,
        found: String,
    },

    #[error("{file}: metadata key {key:?} has {len} entries but the model has {block_count} layers; the file is corrupt")]
    PerLayerLength {
        file: String,
        key: String,
        len: u64,
        block_count: u64,
    },

    #[error("{file}: no general.architecture key; this GGUF holds no model (a LoRA or vocab-only file?)")]
    NoArchitecture { file: String },

    #[error("{file}: {key} = {value} is out of range ({why}); the header is corrupt")]
    OutOfRange {
        file: String,
        key: String,
        value: u64,
        why: String,
    },

    #[error("missing split shard {}: {count} shards are expected next to the first; download all of them", path.display())]
    MissingShard { path: PathBuf, count: u64 },

    #[error(
        "{file}: {detail}; the split set is inconsistent, download all shards of one release again"
    )]
    SplitMismatch { file: String, detail: String },
}
