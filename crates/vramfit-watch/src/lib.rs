//! vramfit-watch: live GPU memory, watched.
//!
//! Data flows one way: a [`sampler::Sampler`] (NVML, or a recorded trace) yields
//! [`sample::Tick`]s; the [`monitor::Monitor`] keeps each GPU's [`series`], runs the
//! [`detect`]ors (leak, spike, headroom, new process) and the [`forecast`] (time to OOM), and
//! returns a [`monitor::Report`] per interval; the outputs ([`tui`], [`export::prometheus`], JSON
//! lines) only read reports. The sampler knows nothing of the screen; the screen nothing of NVML.
//!
//! ```
//! use vramfit_watch::{monitor::Monitor, detect::DetectConfig, sample::{GpuSample, Tick}};
//! let mut m = Monitor::new(DetectConfig::default());
//! let g = GpuSample { t: 0.0, gpu: 0, total_bytes: 24 << 30, used_bytes: 23_900 << 20,
//!     free_bytes: None, reserved_bytes: None, name: None, mig: None, processes: vec![], engine: None };
//! let report = m.observe(&Tick { t: 0.0, gpus: vec![g] });
//! assert_eq!(report.alerts[0].kind.as_str(), "headroom");
//! ```

pub mod collect;
pub mod detect;
pub mod engine_metrics;
pub mod error;
pub mod export;
pub mod forecast;
pub mod http;
pub mod monitor;
pub mod pipeline;
pub mod promtext;
pub mod sample;
pub mod sampler;
pub mod series;
pub mod synth;
pub mod trace;
pub mod tui;

pub use error::WatchError;
