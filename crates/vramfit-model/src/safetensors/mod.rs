//! Safetensors checkpoints read from their headers only: exact bytes per tensor, local or remote.
//!
//! - [`read_safetensors_header`]: one file's header through any [`ByteSource`](crate::source::ByteSource)
//!   (8-byte length, JSON, `__metadata__`), checked against the file length and shape × dtype.
//! - [`read_checkpoint`] / [`read_checkpoint_dir`]: a single `model.safetensors` or a sharded set
//!   named by `model.safetensors.index.json`, merged into one [`WeightSet`](crate::WeightSet).
//! - [`read_checkpoint_url`] / [`read_checkpoint_hub`]: the same over HTTP range requests.
//! - [`quant`]: what each tensor is (weight, scale/zero, embedding, norm), which quantization
//!   scheme packed it, and the unpacked ("logical") parameter count.
//!
//! ```no_run
//! let ckpt = vramfit_model::safetensors::read_checkpoint(std::path::Path::new("./Qwen3-8B")).unwrap();
//! println!("{} shards, {} bytes", ckpt.shards.len(), ckpt.weights.total_bytes());
//! ```

mod checkpoint;
mod dtype;
mod header;
pub mod quant;

pub use checkpoint::{
    read_checkpoint, read_checkpoint_dir, read_checkpoint_hub, read_checkpoint_url, Checkpoint,
    ShardSummary, INDEX_FILE, SINGLE_FILE,
};
pub use dtype::{dtype_bits, is_float};
pub use header::{
    parse_header_json, read_safetensors_header, SafetensorsHeader, StTensor, MAX_HEADER_LEN,
};
pub use quant::{logical_params, QuantScheme, TensorRole};

use crate::remote::RemoteError;
use thiserror::Error;

/// Why a safetensors file or checkpoint could not be read; one line, naming the file.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum StError {
    #[error("{file}: {message}")]
    Io { file: String, message: String },
    #[error(transparent)]
    Remote(#[from] RemoteError),
    #[error("{file}: {len} bytes is too short for a safetensors file (it starts with an 8-byte header length)")]
    TooShort { file: String, len: u64 },
    #[error("{file}: header length {header_len} exceeds the {cap}-byte limit; the file is not safetensors or is corrupt")]
    HeaderTooLarge {
        file: String,
        header_len: u64,
        cap: u64,
    },
    #[error("{file}: header length {header_len} runs past the end of the {file_len}-byte file; the file is truncated or not safetensors")]
    HeaderPastEnd {
        file: String,
        header_len: u64,
        file_len: u64,
    },
    #[error("{file}: {message}")]
    BadHeader { file: String, message: String },
    #[error("{file}: tensor '{tensor}' ends at byte {end}, past the end of the {file_len}-byte file; the download is truncated, fetch it again")]
    TensorPastEnd {
        file: String,
        tensor: String,
        end: u64,
        file_len: u64,
    },
    #[error("{file}: {message}")]
    BadIndex { file: String, message: String },
    #[error("{dir}: no model.safetensors.index.json, model.safetensors or other *.safetensors file there; is it a GGUF or .bin-only model?")]
    NoCheckpoint { dir: String },
}

impl StError {
    /// An I/O error while reading `file`; a remote failure keeps its own one-line message.
    pub(crate) fn io(file: &str, e: &std::io::Error) -> StError {
        if let Some(remote) = e
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<RemoteError>())
        {
            return StError::Remote(remote.clone());
        }
        StError::Io {
            file: file.to_string(),
            message: e.to_string(),
        }
    }
}
