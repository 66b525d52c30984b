//! The calibrations in force for this process: the binary installs the stored ones (or the one
//! log of `check --from-log`) once at start; the engine models look up the one that matches the
//! model, engine, version and GPU they evaluate. Nothing is installed in library use unless the
//! caller installs it, so predictions stay pure predictions by default.

use super::{model_stem, Calibration};
use crate::hardware::Gpu;
use std::sync::RwLock;

static INSTALLED: RwLock<Vec<Calibration>> = RwLock::new(Vec::new());

/// Replace the calibrations in force.
pub fn install(cals: Vec<Calibration>) {
    if let Ok(mut g) = INSTALLED.write() {
        *g = cals;
    }
}

/// The calibrations in force.
pub fn installed() -> Vec<Calibration> {
    INSTALLED.read().map(|g| g.clone()).unwrap_or_default()
}

/// GPU names compared loosely: `NVIDIA GeForce RTX 4090` = `RTX 4090` = `rtx4090`.
fn gpu_norm(name: &str) -> String {
    name.to_ascii_lowercase()
        .replace("nvidia", "")
        .replace("geforce", "")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect()
}

/// True when a calibration measured on `c`'s GPU holds for `gpu`.
pub fn gpu_matches(c: &Calibration, gpu: &Gpu) -> bool {
    if let Some(t) = c.gpu_total_bytes {
        // cudaMemGetInfo totals of one card model differ by a few MiB across drivers
        let rel = (t as f64 - gpu.total_bytes as f64).abs() / gpu.total_bytes.max(1) as f64;
        if rel > 0.015 {
            return false;
        }
    }
    match &c.gpu_name {
        Some(n) => {
            let (a, b) = (gpu_norm(n), gpu_norm(&gpu.name));
            a == b || (!a.is_empty() && !b.is_empty() && (a.contains(&b) || b.contains(&a)))
        }
        None => c.gpu_total_bytes.is_some(),
    }
}

/// Release strings compared by major.minor.patch (`0.10.1.1` = `0.10.1`, `v0.31.0` = `0.31.0`).
pub fn same_version(a: &str, b: &str) -> bool {
    use crate::cmdline::startup::release_numbers;
    release_numbers(a) == release_numbers(b)
}

/// The calibration in force for this model on this GPU with this engine release (`version`:
/// None when the user named none, so any release's calibration applies, with its release).
pub fn find(engine: &str, model: &str, version: Option<&str>, gpu: &Gpu) -> Option<Calibration> {
    let stem = model_stem(model);
    let g = INSTALLED.read().ok()?;
    g.iter()
        .filter(|c| c.engine == engine && model_stem(&c.model) == stem && gpu_matches(c, gpu))
        .filter(|c| match (version, &c.engine_version) {
            (Some(v), Some(cv)) => same_version(v, cv),
            _ => true,
        })
        .last()
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_gpus_match_loosely() {
        assert!(same_version("0.10.1.1", "0.10.1"));
        assert!(same_version("v0.31.0", "0.31.0"));
        assert!(!same_version("0.20.0", "0.21.0"));
        assert!(same_version("b5274", "5274"));
        let gpu = Gpu {
            name: "NVIDIA GeForce RTX 4090".into(),
            total_bytes: 25757220864,
            free_bytes: 25757220864,
            bandwidth_gbps: None,
            compute_capability: None,
            unified: false,
        };
        let mut c =
            crate::calibrate::read_log("INFO Available KV cache memory: 1.00 GiB\n", "x.log")
                .unwrap();
        assert!(
            !gpu_matches(&c, &gpu),
            "no GPU named, no total: not applied"
        );
        c.gpu_name = Some("RTX 4090".into());
        assert!(gpu_matches(&c, &gpu));
        c.gpu_total_bytes = Some(34190917632);
        assert!(
            !gpu_matches(&c, &gpu),
            "a 32 GB card's log is not a 24 GB card's"
        );
    }
}
