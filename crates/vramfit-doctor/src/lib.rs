//! vramfit-doctor: from a crash log to the cause and the fix.
//!
//! A log from vLLM, SGLang, TGI, llama.cpp/llama-server, Ollama or plain PyTorch/transformers
//! (whole or a pasted fragment; the Linux OOM killer, dmesg and Kubernetes too) is read into
//! typed [`events`] with the numbers they carry, the [`settings`] it echoes, and classified
//! into a [`Cause`] with a confidence, the evidence lines and fixes computed from the log's own
//! numbers (or, through [`FixEngine`], from the engine memory models).
//!
//! ```
//! let log = "ValueError: To serve at least one request with the models's max seq len (131072), \
//!   (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (9.20 GiB).";
//! let d = vramfit_doctor::diagnose(log);
//! assert_eq!(d.cause, vramfit_doctor::Cause::KvCache);
//! assert_eq!(d.fixes[0].flag, "--max-model-len");
//! assert_eq!(d.fixes[0].value, "75360");
//! ```

pub mod classify;
pub mod events;
pub mod fixes;
pub mod input;
pub mod render;
pub mod settings;
pub mod size;
pub mod snapshot;

pub use classify::{diagnose, diagnose_with, Cause, Diagnosis};
pub use events::{read_events, LogEvent};
pub use fixes::{Fix, FixEngine, LogOnly};
pub use input::{read_log, read_log_file, InputError, LogText, MAX_LOG_BYTES, MAX_STREAM_BYTES};
pub use settings::{read_settings, EchoedSettings, Engine};
