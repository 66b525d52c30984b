//! Engine memory models for vramfit.
//!
//! One module per engine, each with the engine's real semantics: its command-line reader
//! (flags → its config, with its defaults by version) and its memory model
//! (`ModelSpec` × config × `Hardware` → [`MemoryPlan`]).

pub mod calibrate;
pub mod choices;
pub mod cmdline;
pub mod error;
pub mod extras;
pub mod hardware;
pub mod llamacpp;
pub mod margin;
pub mod ollama;
pub mod plan;
pub mod python;
pub mod search;
pub mod sglang;
pub mod tp_split;
pub mod transformers;
pub mod vllm;

pub use hardware::{Gpu, Hardware};
pub use plan::{DevicePlan, HostPlan, KvSummary, MemoryPlan, ModelRef, Verdict};
