//! vLLM (V1 engine): its command line, its defaults by release, and its memory model.
//!
//! ```text
//! requested  = total × gpu_memory_utilization            (gpu_worker.py init_device)
//! available  = requested − weights − activation peak − non-torch − CUDA-graph estimate (v0.20+)
//! num_blocks = available // page // group_size, minimum over workers
//! ```
//!
//! - [`args`]: `vllm serve` flags and environment → [`VllmConfig`]
//! - [`weights`] and [`quant`]: weight bytes per worker (quantization, TP sharding, PP stages)
//! - [`profile`]: activation peak, non-torch memory, CUDA-graph pool
//! - [`kv`]: pages, groups, blocks, per-request need, estimated max model length
//! - [`plan`](fn@plan): all of it → [`crate::plan::MemoryPlan`]

pub mod args;
pub mod calibrated;
pub mod kv;
pub mod mla;
pub mod mxfp4;
pub mod plan;
pub mod profile;
pub mod quant;
pub mod rocm;
pub mod runner;
mod suggest;
pub mod version;
pub mod weights;

pub use args::{parse, MaxModelLen, VllmConfig};
pub use plan::{plan, plan_without_suggestions};
pub use version::Version;

use crate::hardware::{Gpu, Hardware};
use vramfit_model::{ModelSpec, WeightSet};

/// The calibration in force ([`crate::calibrate::registry`]) for this command on this GPU.
fn find_calibration(
    spec: &ModelSpec,
    cfg: &VllmConfig,
    gpu: &Gpu,
) -> Option<crate::calibrate::Calibration> {
    let version = cfg.version_given.then(|| cfg.version.to_string());
    crate::calibrate::registry::find("vllm", &cfg.model, version.as_deref(), gpu)
        .or_else(|| crate::calibrate::registry::find("vllm", &spec.id, version.as_deref(), gpu))
}

/// The calibration prepared for evaluating `cfg` on `gpu`, if one is in force.
pub(crate) fn calibrated_for(
    spec: &ModelSpec,
    weights: Option<&WeightSet>,
    cfg: &VllmConfig,
    gpu: &Gpu,
) -> Option<calibrated::Calibrated> {
    find_calibration(spec, cfg, gpu)
        .map(|c| calibrated::Calibrated::new(spec, weights, cfg, gpu, c))
        .filter(|c| c.plausible())
}

/// A command that names no release, evaluated with a calibration, takes the log's release (and
/// its default utilization when the command sets none).
pub(crate) fn with_calibration_version(
    spec: &ModelSpec,
    cfg: &VllmConfig,
    hw: &Hardware,
) -> Option<VllmConfig> {
    if cfg.version_given {
        return None;
    }
    let gpu = hw.gpus.first()?;
    let cal = find_calibration(spec, cfg, gpu)?;
    let v = Version::parse(cal.engine_version.as_deref()?).ok()?;
    let mut c = cfg.clone();
    if (c.gpu_memory_utilization - c.version.default_gpu_memory_utilization()).abs() < 1e-9 {
        c.gpu_memory_utilization = v.default_gpu_memory_utilization();
    }
    c.version = v;
    c.version_given = true;
    Some(c)
}
