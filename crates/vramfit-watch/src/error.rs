//! The watch crate's one error type. Each message is a single line that names the offending
//! value and says what to do.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum WatchError {
    #[error("NVML is not available ({0}); is the NVIDIA driver installed? Use --replay FILE to watch a recorded trace instead")]
    NvmlUnavailable(String),
    #[error("NVML query failed: {0}")]
    Nvml(String),
    #[error("trace {path} line {line}: {reason}; each line must be a JSON object like {{\"t\": 0.0, \"gpu\": 0, \"total_bytes\": N, \"used_bytes\": N, \"processes\": []}}")]
    TraceLine {
        path: String,
        line: usize,
        reason: String,
    },
    #[error("trace {path} line {line}: time {t} goes backwards (previous {prev}); a trace must be in time order")]
    TraceTimeOrder {
        path: String,
        line: usize,
        t: f64,
        prev: f64,
    },
    #[error("cannot read trace {path}: {reason}")]
    TraceIo { path: String, reason: String },
    #[error("trace {0} has no samples; record one with `vramfit watch --record FILE`")]
    TraceEmpty(String),
    #[error("cannot write {path}: {reason}")]
    Write { path: String, reason: String },
    #[error("engine URL '{url}': {reason}")]
    EngineUrl { url: String, reason: String },
    #[error("cannot open the terminal dashboard ({0}); use --json or --prometheus ADDR to run without a terminal")]
    Terminal(String),
    #[error(
        "cannot listen on {addr}: {reason}; pick a free port, e.g. --prometheus 127.0.0.1:9400"
    )]
    Listen { addr: String, reason: String },
}
