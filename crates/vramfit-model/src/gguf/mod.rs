//! GGUF headers: metadata, tensor table and exact tensor bytes, from a local or remote file.
//!
//! A GGUF file is a header (magic `GGUF`, version, tensor count, metadata count, the metadata
//! key/values, one info per tensor) followed by the tensor data, aligned to `general.alignment`
//! (default 32). Everything vramfit needs to predict memory is in the header: the tensor table
//! gives the exact bytes of every weight, the metadata the architecture. Only the header is
//! read, through [`ByteSource`], so a remote 40 GB file costs a few range requests.
//!
//! Versions 2 and 3 are read, little- and big-endian; version 1 is refused (as llama.cpp does).
//! Layout and validation follow ggml's `gguf_init_from_file_impl` (ggml/src/gguf.cpp).
//!
//! ```no_run
//! use vramfit_model::gguf::read_gguf;
//! use vramfit_model::source::FileSource;
//! let src = FileSource::open("model.gguf".as_ref()).unwrap();
//! let gguf = read_gguf(&src).unwrap();
//! println!("{} tensors, {} bytes", gguf.tensors.len(), gguf.weight_set().total_bytes());
//! ```

pub mod arch;
mod cursor;
mod error;
mod header;
mod split;
mod value;

pub use arch::{GgufArch, SlidingWindowPattern};
pub use error::GgufError;
pub use header::DEFAULT_ALIGNMENT;
pub use split::{
    read_gguf_split, read_gguf_split_sources, read_gguf_split_with, split_shard_paths,
};
pub use value::{GgufValue, GgufValueType};

use crate::ggml::GgmlType;
use crate::source::ByteSource;
use crate::weights::{Tensor, TensorDtype, WeightSet};

/// Arrays longer than this are walked over and kept only as element type and length unless
/// [`ReadOptions::keep_large_arrays`] is set (vocabularies, merges, scores: memory estimation
/// needs only their lengths).
pub const LARGE_ARRAY_LEN: u64 = 1024;

/// How much of the metadata to keep.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// keep every element of arrays longer than [`LARGE_ARRAY_LEN`] (default: keep only
    /// element type and length, as [`GgufValue::SkippedArray`])
    pub keep_large_arrays: bool,
}

/// A GGUF header.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GgufFile {
    /// 2 or 3
    pub version: u32,
    /// metadata key/values in file order
    pub metadata: Vec<(String, GgufValue)>,
    /// tensor infos in file order
    pub tensors: Vec<GgufTensorInfo>,
    /// absolute offset of the tensor data section (the header end rounded up to the alignment)
    pub data_offset: u64,
    /// bytes of the header proper, magic through the last tensor info (before padding)
    pub header_bytes: u64,
}

/// One tensor's entry in the header.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GgufTensorInfo {
    pub name: String,
    /// dimensions in ggml order (`ne[0]` = row length), 1 to 4 of them
    pub dims: Vec<u64>,
    pub ggml_type: GgmlType,
    /// offset of the tensor's data from [`GgufFile::data_offset`] (of its own shard)
    pub offset: u64,
    /// exact bytes of the data (`ggml_nbytes`), without alignment padding
    pub bytes: u64,
}

/// Read a GGUF header, skipping the elements of large arrays (see [`ReadOptions`]).
pub fn read_gguf(src: &dyn ByteSource) -> Result<GgufFile, GgufError> {
    read_gguf_with(src, ReadOptions::default())
}

/// Read a GGUF header with explicit options.
pub fn read_gguf_with(src: &dyn ByteSource, opts: ReadOptions) -> Result<GgufFile, GgufError> {
    header::read_header(src, opts)
}

impl GgufFile {
    /// The value of a metadata key.
    pub fn get(&self, key: &str) -> Option<&GgufValue> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// An integer key of any width (negative values give `None`).
    pub fn get_u64(&self, key: &str) -> Option<u64> {
        self.get(key)?.as_u64()
    }

    /// A numeric key as f64.
    pub fn get_f64(&self, key: &str) -> Option<f64> {
        self.get(key)?.as_f64()
    }

    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key)?.as_str()
    }

    pub fn get_bool(&self, key: &str) -> Option<bool> {
        self.get(key)?.as_bool()
    }

    /// A kept array whose elements are all non-negative integers.
    pub fn get_u64_array(&self, key: &str) -> Option<Vec<u64>> {
        self.get(key)?
            .as_array()?
            .iter()
            .map(GgufValue::as_u64)
            .collect()
    }

    /// The length of an array key, kept or skipped (`tokenizer.ggml.tokens` = vocab size).
    pub fn array_len(&self, key: &str) -> Option<u64> {
        self.get(key)?.array_len()
    }

    /// `general.architecture` (`llama`, `qwen3moe`, `gemma3`, ...).
    pub fn architecture(&self) -> Option<&str> {
        self.get_str("general.architecture")
    }

    /// `general.alignment`, or the default 32.
    pub fn alignment(&self) -> u64 {
        self.get_u64("general.alignment")
            .unwrap_or(DEFAULT_ALIGNMENT)
    }

    /// A tensor by name.
    pub fn tensor(&self, name: &str) -> Option<&GgufTensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// The tensors as a [`WeightSet`] (names, ggml dims, ggml types, exact bytes).
    pub fn weight_set(&self) -> WeightSet {
        WeightSet {
            tensors: self
                .tensors
                .iter()
                .map(|t| Tensor {
                    name: t.name.clone(),
                    dims: t.dims.clone(),
                    dtype: TensorDtype::Ggml(t.ggml_type),
                    bytes: t.bytes,
                })
                .collect(),
            source: "GGUF header".to_string(),
        }
    }

    /// The model's architecture hyperparameters, read from the `{arch}.*` keys.
    pub fn arch(&self) -> Result<GgufArch, GgufError> {
        GgufArch::from_gguf(self)
    }
}
