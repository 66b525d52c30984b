//! What the `check` report says about llama.cpp's own `--fit` ([`super::autofit`]): the host RAM
//! its moves need, what they cost in decode speed, and the change that lets `--fit` work when
//! the command pins what it would move.

use super::autofit::{self, FitRun, Outcome};
use super::placement::PreparedWeights;
use super::{layout_prepared, Layout, LlamaCppConfig};
use crate::hardware::{Gpu, Hardware};
use vramfit_model::units::fmt_bytes;
use vramfit_model::{ModelSpec, WeightSet};

/// Host-RAM bandwidth assumed for weights the CPU reads each token: dual-channel DDR5-4800
/// (2 × 38.4 GB/s peak) at ~80 % efficiency. An assumption, named in the report.
pub const HOST_RAM_GBPS: f64 = 60.0;

/// Host RAM the layout needs, its decode-speed cost, as report lines.
pub fn offload_notes(
    spec: &ModelSpec,
    weights: &WeightSet,
    l: &Layout,
    gpus: &[Gpu],
    _run: &FitRun,
) -> Vec<String> {
    let mut out = Vec::new();
    let host = l.host_weights + l.host_kv + l.host_compute;
    let embd = weights
        .get("token_embd.weight")
        .map(|t| t.bytes)
        .unwrap_or(0);
    let moved = l.host_weights.saturating_sub(embd);
    if moved == 0 {
        return out;
    }
    out.push(format!(
        "host RAM needed: {} ({} of weights the GPU does not hold, {} of which --fit moved; page cache with mmap, resident with --no-mmap)",
        fmt_bytes(host),
        fmt_bytes(l.host_weights),
        fmt_bytes(moved)
    ));
    // decode reads every dense weight and the active share of the routed experts once per token
    let frac = spec
        .moe
        .as_ref()
        .filter(|m| m.n_expert > 0)
        .map(|m| m.n_expert_used as f64 / m.n_expert as f64)
        .unwrap_or(1.0);
    let experts: u64 = weights
        .tensors
        .iter()
        .filter(|t| t.name.contains("_exps"))
        .map(|t| t.bytes)
        .sum();
    let host_exp = moved.min(experts) as f64;
    let host_read = host_exp * frac + (moved as f64 - host_exp);
    let gpu_w: u64 = l.weights.iter().sum();
    let gpu_exp = (experts as f64 - host_exp).max(0.0);
    let gpu_read = (gpu_w as f64 - gpu_exp * (1.0 - frac)).max(0.0);
    if gpus.iter().any(|g| g.unified) {
        // one memory for the CPU and the GPU: no PCIe or host-RAM penalty to estimate here
        out.push(format!(
            "the CPU runs the layers it holds from the same unified memory ({} read per token)",
            fmt_bytes(host_read as u64)
        ));
        return out;
    }
    let bw = gpus
        .iter()
        .filter_map(|g| g.bandwidth_gbps)
        .fold(f64::INFINITY, f64::min);
    if !bw.is_finite() || bw <= 0.0 {
        return out;
    }
    let t_split = gpu_read / (bw * 1e9) + host_read / (HOST_RAM_GBPS * 1e9);
    let t_gpu = (gpu_read + host_read) / (bw * 1e9);
    if t_split > 0.0 {
        out.push(format!(
            "speed cost: the CPU reads {} per token from host RAM: decode at most ~{:.0} tok/s instead of ~{:.0} tok/s with everything on the GPU ({:.1}x slower; bandwidth bound, {bw:.0} GB/s GPU, {HOST_RAM_GBPS:.0} GB/s host RAM assumed)",
            fmt_bytes(host_read as u64),
            1.0 / t_split,
            1.0 / t_gpu,
            t_split / t_gpu
        ));
    }
    out
}

/// The host RAM the layout needs is more than the machine has (given, or one pool with the
/// GPU on unified-memory machines).
pub fn host_ram_problem(l: &Layout, hw: &Hardware) -> Option<String> {
    let host = l.host_weights + l.host_kv + l.host_compute;
    let ram = hw.host_ram_bytes?;
    let gpu_side: u64 = hw
        .gpus
        .iter()
        .enumerate()
        .filter(|(_, g)| g.unified)
        .map(|(d, _)| l.used(d))
        .sum();
    let need = host + gpu_side;
    (need > ram).then(|| {
        format!(
            "host RAM: needs {} (weights and buffers left on the CPU{}) but the machine has {}",
            fmt_bytes(need),
            if gpu_side > 0 {
                ", plus the GPU's share of the same unified memory"
            } else {
                ""
            },
            fmt_bytes(ram)
        )
    })
}

/// When `--fit` is off or gave up on a pinned setting: the change that lets it place layers,
/// when that fits.
pub fn fit_suggestions(
    spec: &ModelSpec,
    pw: &PreparedWeights,
    orig: &LlamaCppConfig,
    hw: &Hardware,
    fit: Option<&FitRun>,
) -> Vec<String> {
    let mut c = orig.clone();
    let what = match fit.map(|r| &r.outcome) {
        None if orig.fit == Some(false) => {
            c.fit = Some(true);
            "drop --fit off".to_string()
        }
        Some(Outcome::Failed(_)) => {
            let mut dropped = Vec::new();
            if c.n_gpu_layers.is_some_and(|n| n != -1) {
                dropped.push("-ngl");
                c.n_gpu_layers = None;
            }
            if c.tensor_split.is_some() {
                dropped.push("-ts");
                c.tensor_split = None;
            }
            if !c.overrides.is_empty() {
                dropped.push("-ot");
                c.overrides.clear();
            }
            if c.n_cpu_moe.is_some() {
                dropped.push("--cpu-moe/--n-cpu-moe");
                c.n_cpu_moe = None;
            }
            if dropped.is_empty() {
                return Vec::new();
            }
            format!("drop {}", dropped.join(" "))
        }
        _ => return Vec::new(),
    };
    let Some(r) = autofit::run(spec, pw, &c, hw) else {
        return Vec::new();
    };
    if matches!(r.outcome, Outcome::Failed(_)) {
        return Vec::new();
    }
    let l = layout_prepared(spec, pw, &r.cfg, hw, r.n_ctx);
    if !l.fits(super::visible(&r.cfg, hw)) {
        return Vec::new();
    }
    let moves = autofit::describe(&r, pw.n_blocks);
    let how = if moves.is_empty() {
        "it then fits as is".to_string()
    } else {
        moves
            .iter()
            .map(|m| m.trim_start_matches("--fit ").to_string())
            .collect::<Vec<_>>()
            .join("; ")
    };
    vec![format!(
        "{what}: llama.cpp's --fit then places the model itself ({how})"
    )]
}
