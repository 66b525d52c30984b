//! Model knowledge for vramfit.
//!
//! Everything vramfit predicts starts from knowing the model exactly: per-layer attention kind
//! (full, sliding window, chunked, MLA, recurrent, none), heads and head dims, MoE layout, vocab,
//! and the exact bytes of every tensor. This crate turns any model source into a [`ModelSpec`]
//! and a [`WeightSet`]:
//!
//! - HF `config.json` (local file, snapshot dir, the HF cache, or the Hub),
//! - safetensors headers (single or sharded, local or remote by HTTP range requests),
//! - GGUF v2/v3 headers (single or split, local or remote),
//! - the embedded catalog of model architectures and GPUs,
//! - llama.cpp's quantizer rules, to predict the tensor types of a GGUF quant not downloaded.
//!
//! ```
//! use vramfit_model::units::{parse_size, GIB};
//! assert_eq!(parse_size("24GiB").unwrap(), 24 * GIB);
//! ```

pub mod catalog;
pub mod ggml;
pub mod gguf;
pub mod hf_config;
pub mod layout;
pub mod quant;
pub mod remote;
pub mod resolve;
pub mod safetensors;
pub mod source;
pub mod spec;
pub mod units;
pub mod weights;

pub use ggml::GgmlType;
pub use spec::{
    AttentionKind, Dtype, FfnKind, LayerSpec, ModelSpec, MoeSpec, QuantConfig, RopeTable,
};
pub use weights::{Tensor, TensorDtype, WeightSet};
