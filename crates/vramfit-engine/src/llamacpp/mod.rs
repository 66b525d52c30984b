//! llama.cpp (llama-server, llama-cli, llama-bench, ...; Ollama's runner is llama-server too).
//!
//! ModelSpec × exact GGUF tensors × [`LlamaCppConfig`] × Hardware → [`MemoryPlan`], with the
//! engine's own semantics by build: which tensors each device gets ([`placement`]), the KV cells
//! and bytes per device ([`kv`]), the compute buffers ([`compute`]), and what `--fit` would
//! change ([`fit`]). Names follow llama.cpp (`n_ctx`, `n_ubatch`, `n_embd_k_gqa`).

pub mod args;
pub mod autofit;
pub mod compute;
pub mod cpu;
pub mod fit;
pub mod kv;
pub mod placement;
pub mod report;
pub mod version;

use crate::hardware::Hardware;
use crate::plan::{DevicePlan, HostPlan, KvSummary, MemoryPlan, ModelRef, Verdict};
pub use args::{parse, LlamaCppConfig};
use vramfit_model::units::{fmt_bytes, fmt_bytes_signed, MIB};
use vramfit_model::weights::layer_of;
use vramfit_model::{ModelSpec, WeightSet};

/// CUDA context, cuBLAS handles and the ggml CUDA pool's first blocks per GPU: outside
/// llama.cpp's own accounting ("unaccounted" in llama_memory_breakdown_print). 400 MiB: the
/// reserve an 8 GB laptop GPU showed with a context and no model (dev record
/// code_gemma4_12b_qat_udq4kxl_8gb_laptop_np_kvtype_sweep: 406 MiB).
pub const CUDA_CONTEXT_BYTES: u64 = 400 * MIB;

/// Everything computed for one setting of the knobs.
#[derive(Debug, Clone)]
pub struct Layout {
    pub ctx: kv::Context,
    pub fa: bool,
    pub weights: Vec<u64>,
    pub kv: Vec<u64>,
    pub compute: Vec<u64>,
    pub overhead: Vec<u64>,
    pub host_weights: u64,
    pub host_kv: u64,
    pub host_compute: u64,
    pub kv_bytes_per_token: u64,
    pub offloaded: (u64, u64),
}

impl Layout {
    /// What stays in host RAM: weights, KV cells and the host compute buffer.
    pub fn host_plan(&self) -> HostPlan {
        HostPlan {
            weights_bytes: self.host_weights,
            kv_cache_bytes: self.host_kv,
            compute_bytes: self.host_compute,
        }
    }

    /// The KV cache over every device and the host, and the slots of `n_ctx_seq` it holds.
    pub fn kv_summary(&self) -> KvSummary {
        KvSummary {
            bytes: (self.kv.iter().sum::<u64>() + self.host_kv) as i64,
            tokens: self.ctx.n_ctx,
            bytes_per_token: self.kv_bytes_per_token,
            max_concurrency: self.ctx.n_ctx as f64 / self.ctx.n_ctx_seq.max(1) as f64,
        }
    }

    pub fn used(&self, d: usize) -> u64 {
        self.weights[d] + self.kv[d] + self.compute[d] + self.overhead[d]
    }

    /// True when every GPU holds what this layout puts on it.
    pub fn fits(&self, gpus: &[crate::hardware::Gpu]) -> bool {
        gpus.iter()
            .enumerate()
            .all(|(d, g)| self.used(d) <= g.free_bytes)
    }

    /// The per-device rows of the `check` report for this layout.
    pub fn device_plans(&self, gpus: &[crate::hardware::Gpu]) -> Vec<DevicePlan> {
        gpus.iter()
            .enumerate()
            .map(|(d, g)| {
                let mut dp = DevicePlan {
                    name: g.name.clone(),
                    total_bytes: g.total_bytes,
                    free_bytes: g.free_bytes,
                    weights_bytes: self.weights[d],
                    kv_cache_bytes: self.kv[d] as i64,
                    compute_bytes: self.compute[d],
                    cuda_graph_bytes: 0,
                    overhead_bytes: self.overhead[d],
                    used_bytes: 0,
                };
                dp.finish();
                dp
            })
            .collect()
    }
}

/// Repeating blocks llama.cpp sees: the spec's layers, or more when the GGUF ships extra blocks
/// (GLM-4.5's NextN layer counts in block_count).
pub fn n_blocks(spec: &ModelSpec, weights: &WeightSet) -> u64 {
    let from_tensors = weights
        .tensors
        .iter()
        .filter_map(|t| layer_of(&t.name))
        .max()
        .map(|m| m + 1)
        .unwrap_or(0);
    spec.n_layer().max(from_tensors)
}

/// The context llama.cpp uses when `-c` is not given (or 0): 4096 before #16653, then the
/// training context (common/common.h n_ctx default).
pub fn default_ctx(cfg: &LlamaCppConfig, spec: &ModelSpec) -> u64 {
    if let Some(t) = cfg.bench_tokens {
        return t;
    }
    match cfg.n_ctx {
        Some(0) => spec.n_ctx_train,
        Some(n) => n,
        None if cfg.build.has(version::change::FIT_DEFAULT) => spec.n_ctx_train,
        None => 4096,
    }
}

/// The weights read once for placement ([`placement::PreparedWeights`]): for searches that
/// lay out one model at many settings.
pub fn prepare<'a>(spec: &ModelSpec, weights: &'a WeightSet) -> placement::PreparedWeights<'a> {
    placement::PreparedWeights::new(weights, spec.n_layer(), spec.tie_word_embeddings)
}

/// Lay the model out for one requested context.
pub fn layout(
    spec: &ModelSpec,
    weights: &WeightSet,
    cfg: &LlamaCppConfig,
    hw: &Hardware,
    n_ctx_req: u64,
) -> Layout {
    layout_prepared(spec, &prepare(spec, weights), cfg, hw, n_ctx_req)
}

/// [`layout`] of weights read beforehand with [`prepare`] (same result, without reading every
/// tensor name again).
pub fn layout_prepared(
    spec: &ModelSpec,
    pw: &placement::PreparedWeights,
    cfg: &LlamaCppConfig,
    hw: &Hardware,
    n_ctx_req: u64,
) -> Layout {
    let gpus = visible(cfg, hw);
    let free: Vec<u64> = gpus.iter().map(|g| g.free_bytes).collect();
    let pl = placement::place_prepared(cfg, pw, &free);
    let fa = cfg.flash_attn_on();
    let ctx = kv::context(cfg, n_ctx_req, fa);
    let kva = kv::allocate(cfg, spec, &pl.layer_dev, free.len(), &ctx, fa);
    let cb = compute::buffers(cfg, spec, &pl, &kva, &ctx, fa);
    let overhead = gpus
        .iter()
        .enumerate()
        .map(|(d, g)| {
            let used = pl.gpu_weights[d] + kva.gpu[d] + cb.gpu[d] > 0 || d == 0;
            if g.unified || !used {
                0
            } else {
                CUDA_CONTEXT_BYTES
            }
        })
        .collect();
    Layout {
        ctx,
        fa,
        weights: pl.gpu_weights.clone(),
        kv: kva.gpu.clone(),
        compute: cb.gpu,
        overhead,
        host_weights: pl.host_weights,
        host_kv: kva.host,
        // no GPU: a CPU-only build, whose CPU backend computes the whole graph (cpu.rs)
        host_compute: if gpus.is_empty() {
            cpu::compute_buffer(cfg, spec, &kva, &ctx, fa)
        } else {
            cb.host
        },
        kv_bytes_per_token: kva.bytes_per_token,
        offloaded: pl.offloaded,
    }
}

pub(crate) fn visible<'a>(cfg: &LlamaCppConfig, hw: &'a Hardware) -> &'a [crate::hardware::Gpu] {
    match &cfg.devices {
        Some(d) => &hw.gpus[..d.len().min(hw.gpus.len())],
        None => &hw.gpus,
    }
}

fn fits(l: &Layout, hw: &[crate::hardware::Gpu]) -> bool {
    l.fits(hw)
}

/// The largest context (a multiple of 256) that fits with everything else unchanged, up to
/// `limit`; 0 when not even 256 tokens fit.
pub fn max_context(
    spec: &ModelSpec,
    weights: &WeightSet,
    cfg: &LlamaCppConfig,
    hw: &Hardware,
    limit: u64,
) -> u64 {
    let gpus = visible(cfg, hw);
    let pw = prepare(spec, weights);
    let ok = |c: u64| {
        let l = layout_prepared(spec, &pw, cfg, hw, c);
        fits(&l, gpus) && cpu::host_fits(spec, &l, hw)
    };
    crate::search::largest_fitting(256, limit / 256 * 256, 256, ok).unwrap_or(0)
}

/// The full `check` answer.
pub fn plan(
    spec: &ModelSpec,
    weights: &WeightSet,
    cfg: &LlamaCppConfig,
    hw: &Hardware,
) -> MemoryPlan {
    let orig = cfg;
    let gpus = visible(cfg, hw);
    let mut problems = Vec::new();
    let mut notes = cfg.notes.clone();
    let pw = prepare(spec, weights);
    // llama.cpp's own --fit runs before anything is allocated and rewrites the settings
    let fit = autofit::run(spec, &pw, cfg, hw);
    let (eff, n_ctx_req) = match &fit {
        Some(r) => (r.cfg.clone(), r.n_ctx),
        None => (cfg.clone(), default_ctx(cfg, spec)),
    };
    let cfg = &eff;
    let l = layout_prepared(spec, &pw, cfg, hw, n_ctx_req);
    let limit = spec.n_ctx_train.max(n_ctx_req);
    if let Some(r) = &fit {
        notes.extend(autofit::describe(r, pw.n_blocks));
        if let autofit::Outcome::Failed(why) = &r.outcome {
            notes.push(format!(
                "--fit does not place layers ({why}; common/fit.cpp gives up): llama.cpp loads them as given"
            ));
        }
    }
    if cfg.type_v.is_quantized() && !l.fa {
        problems.push(format!(
            "-ctv {} needs flash attention: llama.cpp refuses a quantized V cache with -fa off",
            cfg.type_v
        ));
    }
    let max_ctx = max_context(spec, weights, cfg, hw, limit);
    let devices = l.device_plans(gpus);
    for (d, (g, dp)) in gpus.iter().zip(&devices).enumerate() {
        if dp.used_bytes > g.free_bytes {
            problems.push(format!(
                "{} (GPU {d}) needs {} but has {} free: short by {}",
                g.name,
                fmt_bytes(dp.used_bytes),
                fmt_bytes(g.free_bytes),
                fmt_bytes_signed(dp.used_bytes as i64 - g.free_bytes as i64)
            ));
        }
    }
    problems.extend(cpu::host_problem(spec, &l, hw));
    let fits_now = problems.is_empty() || problems.iter().all(|p| !p.contains("short by"));
    let host_short = report::host_ram_problem(&l, hw);
    let fits_now = fits_now && host_short.is_none();
    problems.extend(host_short);
    let verdict = if fits_now && !(cfg.type_v.is_quantized() && !l.fa) {
        Verdict::Fits
    } else {
        Verdict::DoesNotFit
    };
    let mut suggestions = Vec::new();
    if verdict == Verdict::DoesNotFit {
        suggestions = fit::suggestions(spec, weights, cfg, hw, max_ctx);
        suggestions.extend(report::fit_suggestions(spec, &pw, orig, hw, fit.as_ref()));
    }
    if let Some(r) = fit.as_ref().filter(|r| r.layers.is_some()) {
        notes.extend(report::offload_notes(spec, weights, &l, gpus, r));
    }
    if gpus.is_empty() {
        notes.push(format!(
            "no GPU: planned for a CPU-only build (host RAM the only device); llama.cpp output buffer {}",
            vramfit_model::units::fmt_bytes(cpu::output_buffer(spec, &l.ctx))
        ));
    }
    if cfg.tool == args::Tool::Server && !cfg.build_given && l.ctx.n_ubatch > l.ctx.n_seq_max {
        let saved = spec.n_vocab * (l.ctx.n_ubatch - l.ctx.n_seq_max) * 4;
        notes.push(format!(
            "build not given: logits reserved for {} tokens as every build before b9460 does; llama-server b9460+ (#23861) reserves {} rows, {} less compute",
            l.ctx.n_ubatch,
            l.ctx.n_seq_max,
            fmt_bytes(saved)
        ));
    }
    let mut settings = vec![
        ("n_ctx".to_string(), l.ctx.n_ctx.to_string()),
        ("n_ctx_seq".to_string(), l.ctx.n_ctx_seq.to_string()),
        ("n_seq_max".to_string(), l.ctx.n_seq_max.to_string()),
        ("kv_unified".to_string(), l.ctx.unified.to_string()),
        ("n_batch".to_string(), l.ctx.n_batch.to_string()),
        ("n_ubatch".to_string(), l.ctx.n_ubatch.to_string()),
        ("flash_attn".to_string(), l.fa.to_string()),
        ("type_k".to_string(), cfg.type_k.to_string()),
        ("type_v".to_string(), cfg.type_v.to_string()),
        (
            "offloaded_layers".to_string(),
            format!("{}/{}", l.offloaded.0, l.offloaded.1),
        ),
        (
            "build".to_string(),
            format!(
                "b{}{}",
                cfg.build.0,
                if cfg.build_given {
                    ""
                } else {
                    " (assumed: current)"
                }
            ),
        ),
    ];
    settings.push((
        "fit".to_string(),
        match fit.as_ref().map(|r| &r.outcome) {
            None => "off".to_string(),
            Some(autofit::Outcome::NoChange) => "on: no change needed".to_string(),
            Some(autofit::Outcome::Context) => "on: context lowered".to_string(),
            Some(autofit::Outcome::Layers) => format!(
                "on: layers placed (-ngl {}{})",
                cfg.n_gpu_layers.unwrap_or(-1),
                cfg.tensor_split
                    .as_ref()
                    .map(|t| format!(
                        " -ts {}",
                        t.iter()
                            .map(|v| v.to_string())
                            .collect::<Vec<_>>()
                            .join(",")
                    ))
                    .unwrap_or_default()
            ),
            Some(autofit::Outcome::Failed(why)) => format!("on: gave up ({why})"),
        },
    ));
    MemoryPlan {
        engine: "llama.cpp".into(),
        model: ModelRef {
            id: spec.id.clone(),
            architecture: spec.architecture.clone(),
            params: weights.total_elems(),
        },
        verdict,
        devices,
        host: l.host_plan(),
        kv_cache: l.kv_summary(),
        max_model_len: max_ctx,
        problems,
        suggestions,
        settings,
        notes,
    }
}
