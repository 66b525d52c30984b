//! SGLang plans (`python -m sglang.launch_server`): weight precision (the checkpoint, or
//! SGLang's in-flight `--quantization fp8`), KV dtype, tensor/pipeline parallel over the given
//! GPUs, `--mem-fraction-static`, and `--context-length` / `--max-running-requests` at the
//! exact boundary of the token pool.
//!
//! SGLang sizes its token pool from the free memory it measures once the weights are loaded
//! (`rest = free_after_weights − free_at_start × (1 − mem_fraction_static)`,
//! `profile_max_num_token` in model_executor/model_runner_kv_cache_mixin.py, v0.5.x) and
//! starts with any pool above zero tokens ("Not enough memory" only at ≤ 0, same file). A
//! request longer than the pool is refused: `max_req_len = min(context_len − 1, pool − 1)`
//! (managers/tp_worker.py). So a plan sets `--context-length` to at most the pool: one request
//! of the full length always fits. `--max-running-requests` is left to SGLang unless a
//! concurrency is asked for: SGLang then keeps `min(clamp(pool ÷ context × 512, 2048, 4096),
//! pool ÷ 2)` request slots (model_executor/model_runner_kv_cache_mixin.py
//! `_resolve_max_num_reqs`, v0.5.x), which share the pool; with `--concurrency N` the flag is
//! pinned to N and the context shortened until N requests of it fit the pool.
//!
//! Each plan is evaluated by `vramfit_engine::sglang::plan` on the config parsed from the very
//! command the plan prints, against the free memory it was planned for (`vramfit check` of it,
//! with the plan's `--gpu-free`, gives the same numbers).

mod render;
mod table;

pub use table::table_cells;

use crate::headroom::{self, Headroom};
use crate::model::Model;
use crate::plan::Plan;
use crate::request::{Request, MIN_CONTEXT};
use std::collections::BTreeMap;
use vramfit_engine::cmdline::Command;
use vramfit_engine::sglang::{self, args::gpu_defaults};
use vramfit_engine::{Hardware, MemoryPlan, Verdict};
use vramfit_model::units::MIB;
use vramfit_model::{AttentionKind, FfnKind, ModelSpec, WeightSet};

/// Weight precision as SGLang loads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weights {
    /// the checkpoint as published (its dtype or its own quantization)
    Checkpoint,
    /// `--quantization fp8`: an unquantized checkpoint quantized to FP8 at load
    Fp8,
    /// a pre-quantized checkpoint of the model (AWQ, GPTQ, FP8 repo of the catalog), served by
    /// its repo id; the plan's spec and `--model-path` are that repo's ([`crate::variants`])
    Variant(&'static str),
}

impl Weights {
    pub fn flag(self) -> Option<&'static str> {
        match self {
            Weights::Checkpoint | Weights::Variant(_) => None,
            Weights::Fp8 => Some("fp8"),
        }
    }
}

/// The KV dtype plans offer besides `auto`. `fp8_e4m3` rather than `fp8_e5m2` (same bytes):
/// FlashAttention 3, the default backend on Hopper, takes only e4m3 and SGLang swaps it for
/// Triton when given e5m2 (server_args.py, "FlashAttention3 only supports fp8_e4m3").
pub const KV_FP8: &str = "fp8_e4m3";

/// One SGLang launch.
#[derive(Debug, Clone, PartialEq)]
pub struct Knobs {
    pub weights: Weights,
    /// `--kv-cache-dtype`: `auto` or [`KV_FP8`]
    pub kv: &'static str,
    pub tp: u64,
    pub pp: u64,
    /// `--mem-fraction-static`, 3 decimals (as SGLang rounds its own default)
    pub mfs: f64,
    pub context_length: u64,
    /// `--max-running-requests`: None leaves SGLang's own limit (only `--concurrency` pins it)
    pub max_running_requests: Option<u64>,
    pub chunked_prefill_size: i64,
    pub cuda_graph_max_bs: u64,
    /// `--page-size`: tokens per KV page ([`page_size`])
    pub page_size: u64,
}

/// What is planned for: the model and the GPUs with their free memory less the headroom.
pub struct Setup<'a> {
    pub spec: &'a ModelSpec,
    pub weights: Option<&'a WeightSet>,
    /// `--model-path`
    pub model: String,
    /// the GPUs with `free_bytes` reduced by the headroom (whole MiB, so that the `check`
    /// line's `--gpu-free` in MiB is exact)
    pub hw: Hardware,
    pub headroom: Headroom,
}

impl<'a> Setup<'a> {
    pub fn new(
        spec: &'a ModelSpec,
        weights: Option<&'a WeightSet>,
        model: String,
        given: &Hardware,
        headroom: Headroom,
    ) -> Setup<'a> {
        let mut hw = given.clone();
        for (i, g) in hw.gpus.iter_mut().enumerate() {
            let h = headroom.bytes.get(i).copied().unwrap_or(0);
            g.free_bytes = g.free_bytes.saturating_sub(h) / MIB * MIB;
        }
        Setup {
            spec,
            weights,
            model,
            hw,
            headroom,
        }
    }

    pub fn env(&self) -> BTreeMap<String, String> {
        // PyTorch's allocator reads it in every SGLang process; SGLang leaves it alone and its
        // users clear fragmentation OOMs with it (sglang#34155, v0.5.17). It breaks only
        // --enable-memory-saver (torch_memory_saver#24), which plans do not use.
        crate::plan::expandable_segments_env()
    }

    pub fn argv(&self, k: &Knobs) -> Vec<String> {
        let mut a: Vec<String> = vec![
            "python".into(),
            "-m".into(),
            "sglang.launch_server".into(),
            "--model-path".into(),
            self.model.clone(),
        ];
        for (f, v) in [
            ("--context-length", k.context_length.to_string()),
            ("--mem-fraction-static", format!("{:.3}", k.mfs)),
        ] {
            a.push(f.into());
            a.push(v);
        }
        if let Some(n) = k.max_running_requests {
            a.push("--max-running-requests".into());
            a.push(n.to_string());
        }
        for (f, v) in [
            ("--chunked-prefill-size", k.chunked_prefill_size.to_string()),
            ("--cuda-graph-max-bs", k.cuda_graph_max_bs.to_string()),
            ("--page-size", k.page_size.to_string()),
            ("--kv-cache-dtype", k.kv.to_string()),
            ("--tp-size", k.tp.to_string()),
            ("--pp-size", k.pp.to_string()),
        ] {
            a.push(f.into());
            a.push(v);
        }
        if let Some(q) = k.weights.flag() {
            a.push("--quantization".into());
            a.push(q.into());
        }
        if crate::plan::needs_remote_code(&self.model, &self.spec.id) {
            a.push("--trust-remote-code".into());
        }
        a
    }

    /// The engine's plan of the command for these knobs (None only if the solver's own command
    /// does not parse, which would be a solver bug: no plan rather than a panic).
    pub fn evaluate(&self, k: &Knobs) -> Option<MemoryPlan> {
        let mut words: Vec<String> = self.env().iter().map(|(k, v)| format!("{k}={v}")).collect();
        words.extend(self.argv(k));
        let cmd = Command::parse(&words).ok()?;
        let cfg = sglang::parse(&cmd).ok()?;
        Some(sglang::plan(self.spec, self.weights, &cfg, &self.hw))
    }

    /// `--context-length c` starts and its pool holds one request of `c` tokens.
    pub fn fits_at(&self, k: &Knobs, c: u64) -> bool {
        let mut kk = k.clone();
        kk.context_length = c;
        self.evaluate(&kk)
            .is_some_and(|p| p.verdict == Verdict::Fits && p.kv_cache.tokens >= c)
    }

    /// The largest `--mem-fraction-static` at most `k.mfs` with which the launch fits: when
    /// the share SGLang leaves outside its static pool cannot hold the activations, CUDA graphs
    /// and NCCL buffers on this free memory (other tenants), the fraction is lowered by the
    /// overshoot (the pool shrinks by the same bytes). None when the weights leave no pool.
    pub fn fit_fraction(&self, k: &Knobs) -> Option<f64> {
        let mut k = k.clone();
        for _ in 0..8 {
            let p = self.evaluate(&k)?;
            if p.kv_cache.tokens == 0 {
                return None;
            }
            if p.verdict == Verdict::Fits {
                return Some(k.mfs);
            }
            // what SGLang's ranks lose before measuring free memory: the engine model's own
            // terms per GPU (NVLink-class custom all-reduce buffers vs NCCL's on PCIe cards)
            let over = p
                .devices
                .iter()
                .zip(&self.hw.gpus)
                .map(|(d, g)| {
                    let init = sglang::init_bytes(g, k.tp);
                    (d.used_bytes as f64 - g.free_bytes as f64)
                        / g.free_bytes.saturating_sub(init).max(1) as f64
                })
                .fold(0.0, f64::max);
            if over <= 0.0 {
                // it fails for a reason a lower fraction does not cure
                return None;
            }
            let next = ((k.mfs - over) * 1000.0).floor() / 1000.0;
            k.mfs = if next < k.mfs { next } else { k.mfs - 0.001 };
            if k.mfs < 0.05 {
                return None;
            }
        }
        None
    }
}

/// Tensor × pipeline parallel for `n` GPUs (SGLang v0.5.x):
///
/// - TP must divide the attention heads, and divide the KV heads or be a multiple of them
///   (the models' attention `__init__`, e.g. srt/models/llama.py, qwen3.py);
/// - it is taken as the largest power of two that does, sizes SGLang's custom all-reduce
///   takes (`_SUPPORTED_WORLD_SIZES = [2, 4, 6, 8]`,
///   srt/distributed/device_communicators/custom_all_reduce.py; others fall back to NCCL);
/// - checkpoints with FP8 block scales need every MLP's and expert's intermediate size ÷ TP in
///   whole blocks, or SGLang stops while loading ("The output_size of gate's and up's weight
///   = 192 is not divisible by weight quantization block_n = 128", layers/quantization/fp8.py;
///   so Qwen3-235B-A22B-FP8, experts of 1536, runs at TP4, not TP8);
/// - integer (AWQ, GPTQ) checkpoints need whole scale groups on every rank
///   ([`crate::variants::tp_ok`]);
/// - the rest of the GPUs become pipeline stages (layers split evenly,
///   srt/distributed/utils.py `get_pp_indices`).
pub fn parallel_layout(spec: &ModelSpec, n: u64) -> (u64, u64) {
    let heads = spec.n_head().max(1);
    let mla = spec
        .layers
        .iter()
        .any(|l| matches!(l.attention, AttentionKind::Mla { .. }));
    let kv = spec
        .layers
        .iter()
        .find(|l| l.attention.has_kv())
        .map(|l| l.n_head_kv.max(1))
        .unwrap_or(heads);
    let block_n = spec
        .quant
        .as_ref()
        .and_then(|q| q.format.as_deref())
        .and_then(|f| f.strip_prefix("fp8 block "))
        .and_then(|b| b.split('x').next())
        .and_then(|b| b.parse::<u64>().ok());
    let ok = |t: u64| {
        let kv_ok = mla || kv.is_multiple_of(t) || t.is_multiple_of(kv);
        let whole = |n_ff: u64| block_n.is_none_or(|b| b == 0 || (n_ff / t).is_multiple_of(b));
        let block_ok = spec.moe.as_ref().is_none_or(|m| whole(m.n_ff_exp))
            && spec.layers.iter().all(|l| match l.ffn {
                FfnKind::Dense { n_ff } => whole(n_ff),
                _ => true,
            });
        heads.is_multiple_of(t) && kv_ok && block_ok && crate::variants::tp_ok(spec, t)
    };
    let mut tp = 1;
    let mut t = 2;
    while t <= n {
        if n.is_multiple_of(t) && ok(t) {
            tp = t;
        }
        t *= 2;
    }
    let pp = (n / tp).min(spec.n_layer().max(1));
    (tp, pp)
}

/// Tokens per KV page as SGLang runs this GPU's default attention backend: 1 (its default,
/// server_args.py), except on SM100-class Blackwell (compute capability 10.x), whose default
/// TRT-LLM MHA / MLA backends take 16, 32 or 64 and where SGLang sets 64 ("TensorRT-LLM MHA
/// only supports page_size of 16, 32 or 64, changing page_size ... to 64", server_args.py
/// v0.5.x). Pinned, so that the pool (a whole number of pages) is the one planned.
pub fn page_size(hw: &Hardware) -> u64 {
    let sm100 = !hw.gpus.is_empty()
        && hw.gpus.iter().all(|g| {
            g.compute_capability
                .is_some_and(|c| (10.0..11.0).contains(&c))
        });
    if sm100 {
        64
    } else {
        1
    }
}

/// The weakest compute capability of the GPUs (None when any is unknown).
fn min_cc(hw: &Hardware) -> Option<f64> {
    hw.gpus
        .iter()
        .map(|g| g.compute_capability)
        .try_fold(f64::INFINITY, |m, c| c.map(|c| m.min(c)))
        .filter(|c| c.is_finite())
}

/// Whether SGLang can load these weights here: in-flight FP8 needs an unquantized checkpoint
/// and compute capability 8.0 (layers/quantization/fp8.py `get_min_capability`: 80; Ampere
/// runs it through the Marlin W8A16 kernel, Ada/Hopper natively). An unknown GPU is given the
/// benefit of the doubt, as the vLLM planner does.
pub fn weights_supported(spec: &ModelSpec, hw: &Hardware, w: Weights) -> bool {
    match w {
        Weights::Checkpoint => true,
        Weights::Fp8 => spec.quant.is_none() && min_cc(hw).is_none_or(|c| c >= 8.0),
        // the variant's own spec: its method's minimum capability
        Weights::Variant(_) => {
            crate::variants::supported(crate::variants::Engine::Sglang, spec, hw).is_ok()
        }
    }
}

/// Whether SGLang's default attention backend reads this KV dtype here (SGLang v0.5.x
/// defaults, server_args.py `_get_default_attn_backend`; FP8 support from the "FP8 KV Cache"
/// columns of docs advanced_features/attention_backend):
///
/// - MHA: FlashInfer (default below Hopper and on consumer Blackwell), FA3 (Hopper) and
///   TRT-LLM MHA (datacenter Blackwell) all read FP8 KV: compute capability 8.0 and up;
/// - MLA: FA3, Triton and FlashInfer MLA, the defaults up to Hopper, do not; TRT-LLM MLA, the
///   default on SM100-class Blackwell (10.x), does.
///
/// A GPU of unknown compute capability gets no FP8 KV.
pub fn kv_supported(spec: &ModelSpec, hw: &Hardware, kv: &str) -> bool {
    if kv == "auto" {
        return true;
    }
    let mla = spec
        .layers
        .iter()
        .any(|l| matches!(l.attention, AttentionKind::Mla { .. }));
    let all =
        |ok: &dyn Fn(f64) -> bool| hw.gpus.iter().all(|g| g.compute_capability.is_some_and(ok));
    if mla {
        all(&|c| (10.0..11.0).contains(&c))
    } else {
        all(&|c| c >= 8.0)
    }
}

/// Every SGLang plan that fits `hw`, unranked.
pub fn plans(m: &Model, hw: &Hardware, req: &Request) -> Vec<Plan> {
    plans_for(
        m.spec(),
        m.resolved.weights.as_ref(),
        &m.repo(),
        hw,
        req,
        &[Weights::Checkpoint, Weights::Fp8],
        &["auto", KV_FP8],
    )
}

/// Plans serving the catalog's pre-quantized checkpoints of the model (`--model-path
/// Qwen/Qwen3-8B-AWQ`), those SGLang runs on these GPUs, each with the variant's own spec.
pub fn variant_plans(offers: &[crate::variants::Offer], hw: &Hardware, req: &Request) -> Vec<Plan> {
    offers
        .iter()
        .flat_map(|o| {
            plans_for(
                &o.resolved.spec,
                o.resolved.weights.as_ref(),
                &o.variant.repo,
                hw,
                req,
                &[Weights::Variant(o.variant.repo.as_str())],
                &["auto", KV_FP8],
            )
        })
        .collect()
}

/// Plans for the given weight precisions and KV dtypes, those SGLang supports on `hw`.
pub fn plans_for(
    spec: &ModelSpec,
    weights: Option<&WeightSet>,
    model: &str,
    hw: &Hardware,
    req: &Request,
    weight_opts: &[Weights],
    kv_opts: &[&'static str],
) -> Vec<Plan> {
    let mut out = Vec::new();
    if hw.gpus.is_empty() {
        return out;
    }
    for &w in weight_opts {
        if !weights_supported(spec, hw, w) {
            continue;
        }
        for &kv in kv_opts {
            if !kv_supported(spec, hw, kv) {
                continue;
            }
            if let Some(p) = solve_one(spec, weights, model, hw, req, w, kv) {
                out.push(p);
            }
        }
    }
    out
}

/// SGLang's own defaults for this layout on the first GPU: `(chunked_prefill_size,
/// cuda_graph_max_bs, mem_fraction_static)` (server_args.py `_handle_gpu_memory_settings`, as
/// `vramfit_engine::sglang::args::gpu_defaults` models it).
fn defaults(model: &str, hw: &Hardware, tp: u64, pp: u64) -> Option<(i64, u64, f64)> {
    let words: Vec<String> = [
        "python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        model,
        "--tp-size",
        &tp.to_string(),
        "--pp-size",
        &pp.to_string(),
    ]
    .iter()
    .map(|w| w.to_string())
    .collect();
    let cfg = sglang::parse(&Command::parse(&words).ok()?).ok()?;
    let total_mib = hw.gpus.first()?.total_bytes as f64 / MIB as f64;
    let d = gpu_defaults(&cfg, total_mib);
    Some((
        d.chunked_prefill_size,
        d.cuda_graph_max_bs,
        d.mem_fraction_static,
    ))
}

/// The plan for one weight precision and KV dtype, or None when it does not fit the request.
fn solve_one(
    spec: &ModelSpec,
    weights: Option<&WeightSet>,
    model: &str,
    hw: &Hardware,
    req: &Request,
    w: Weights,
    kv: &'static str,
) -> Option<Plan> {
    let n_ctx = if spec.n_ctx_train > 0 {
        spec.n_ctx_train
    } else {
        // configs/model_config.py: 2048 when the config names no length (as the engine model)
        2048
    };
    let (tp, pp) = parallel_layout(spec, hw.gpus.len() as u64);
    let (chunk, graph_bs, default_mfs) = defaults(model, hw, tp, pp)?;
    let min_len = req.context.unwrap_or(MIN_CONTEXT.min(n_ctx));
    let mut k = Knobs {
        weights: w,
        kv,
        tp,
        pp,
        mfs: default_mfs,
        context_length: min_len.min(n_ctx),
        max_running_requests: req.concurrency,
        chunked_prefill_size: chunk,
        cuda_graph_max_bs: graph_bs,
        page_size: page_size(hw),
    };
    // the pool on the free memory as given, for the measured-error headroom
    let zero = headroom::fixed(hw, 0);
    let bare = Setup::new(spec, weights, model.to_string(), hw, zero);
    let p0 = bare.evaluate(&k)?;
    if p0.kv_cache.tokens == 0 {
        return None;
    }
    let h = match req.headroom {
        Some(b) => headroom::fixed(hw, b),
        None => {
            let pools: Vec<u64> = p0
                .devices
                .iter()
                .map(|d| d.kv_cache_bytes.max(0) as u64)
                .collect();
            headroom::sglang(hw, &pools, default_mfs)
        }
    };
    let setup = Setup::new(spec, weights, model.to_string(), hw, h);
    // fraction, then context and concurrency from the pool; a context or concurrency that
    // makes the launch overshoot lowers the fraction again (a few rounds at most)
    let mut solved = None;
    for _ in 0..4 {
        k.mfs = setup.fit_fraction(&k)?;
        let tokens = setup.evaluate(&k)?.kv_cache.tokens;
        let ctx = match (req.context, req.concurrency) {
            (Some(c), _) => c,
            // whole pages per request, so that n of them fit page by page too
            (None, Some(n)) => n_ctx.min(tokens / n.max(1) / k.page_size * k.page_size),
            (None, None) => n_ctx.min(tokens),
        };
        if ctx == 0 || ctx < min_len || ctx > n_ctx || ctx > tokens {
            return None;
        }
        let most = tokens / ctx;
        let n = req.concurrency.unwrap_or(most);
        if n == 0 || n > most {
            return None;
        }
        k.context_length = ctx;
        k.max_running_requests = req.concurrency;
        let mp = setup.evaluate(&k)?;
        if mp.verdict == Verdict::Fits && mp.kv_cache.tokens >= ctx * n {
            solved = Some(mp);
            break;
        }
    }
    let mp = solved?;
    let max_context = max_context(&setup, &k, n_ctx.min(mp.kv_cache.tokens));
    let max_conc = mp.kv_cache.tokens / k.context_length;
    Some(render::render(
        &setup,
        &k,
        mp,
        max_context,
        max_conc,
        default_mfs,
    ))
}

/// The largest `--context-length` up to `hi` (the pool, or the model's length) that fits with
/// the other knobs unchanged; `k.context_length` is known to fit. A longer context only grows
/// the request table (`max_running_requests × context × 4` bytes), so fitting is monotone.
fn max_context(setup: &Setup, k: &Knobs, hi: u64) -> u64 {
    let mut lo = k.context_length;
    if hi <= lo {
        return lo;
    }
    if setup.fits_at(k, hi) {
        return hi;
    }
    let mut hi = hi;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if setup.fits_at(k, mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests;
