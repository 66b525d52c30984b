//! SGLang (`python -m sglang.launch_server`): its command line, its GPU-dependent defaults and
//! its memory model.
//!
//! ```text
//! F          = free memory per rank after CUDA/NCCL init      (model_runner.py init_torch_distributed)
//! rest       = (F − weights) − F × (1 − mem_fraction_static)   (profile_max_num_token)
//! tokens     = rest // cell_size, to a multiple of page_size, ≤ --max-total-tokens
//! cell_size  = Σ layers kv_heads_per_rank × (head_dim_k + head_dim_v) × dtype bytes
//!              MLA: (kv_lora_rank + qk_rope_head_dim) × dtype bytes, on every rank
//! ```
//!
//! Unlike vLLM, SGLang profiles no activation peak: activations and CUDA graphs live in the
//! `1 − mem_fraction_static` share it leaves free, which its default fraction sizes with a
//! heuristic ([`args::gpu_defaults`]). Weights per rank are vLLM's (same sharding of linear
//! layers over TP, vocab-parallel embeddings): [`crate::vllm::weights`].

pub mod args;
pub mod fraction;
pub mod suggest;
pub mod swa;

use crate::cmdline::{Command, EngineKind};
use crate::hardware::{Gpu, Hardware};
use crate::plan::{DevicePlan, HostPlan, KvSummary, MemoryPlan, ModelRef, Verdict};
use crate::vllm;
use crate::vllm::kv::{kv_elem_bytes, kv_heads_per_rank};
pub use args::{parse, SglangConfig};
use std::ops::Range;
use vramfit_model::units::{fmt_bytes, GIB, MIB};
use vramfit_model::{AttentionKind, ModelSpec, TensorDtype, WeightSet};

/// Memory a rank loses before SGLang measures `total_gpu_memory`: the CUDA context and torch's
/// first allocations (~0.5 GiB on Hopper, as vLLM's logs show), plus NCCL and the custom
/// all-reduce buffers once TP > 1. The TP term is calibrated on vllm-log-024 (SGLang,
/// Qwen3-235B-A22B-FP8, TP4 on H100 80GB, fraction 0.93 → 367,404 tokens): 2 GiB more. The log
/// prints neither the weights nor the free memory, so the split between this term and the
/// weights (ours: 55.1 GiB per rank, vLLM measured 2 × 27.72 at TP8) rests on that one record.
pub const INIT_BYTES: u64 = 512 * MIB;
pub const INIT_TP_BYTES: u64 = 2 * GIB;
/// The same TP term on GPUs joined by PCIe only (consumer and PCIe data-centre cards): SGLang's
/// custom all-reduce needs P2P/NVLink (`CustomAllreduce` disables itself otherwise), leaving
/// NCCL's buffers. Measured, not fitted: a 4x L4 TP4 log prints "Load weight begin. avail
/// mem=21.63 GB" on a 22.49 GiB card, 0.86 GiB for the context and NCCL together.
pub const INIT_TP_PCIE_BYTES: u64 = 384 * MIB;

/// Memory SGLang's "mem usage" of 'Load weight end' counts beyond the weight tensors and the
/// RoPE cache ([`rope_cache_bytes`]). model_runner.py `load_model` takes "mem usage" as the drop
/// in `get_available_gpu_memory` (`torch.cuda.mem_get_info` after `empty_cache`) across
/// `get_model`, so it also holds what the CUDA context gains while the weights load (kernel
/// modules loaded on first use, allocator segments) — the kind of memory vLLM calls non-torch.
/// Its size is not in SGLang's source: fitted on the public SGLang logs ('mem usage' minus the
/// tensors and the RoPE cache: 0.00–0.26 GiB over nine starts, v0.4.1–v0.5.10) and judged
/// leave-one-log-out by crates/vramfit/tests/accuracy_cv_sglang.rs. It is charged with the
/// weights because SGLang sizes its pool from the free memory left after loading.
pub const LOAD_NON_TORCH_BYTES: u64 = 72 * MIB;

/// SGLang's RoPE `cos_sin_cache`, built on the GPU while the model is constructed: one
/// `[max_position_embeddings, rotary_dim]` table kept in float32 on CUDA
/// (layers/rotary_embedding.py `RotaryEmbedding.__init__`: "cache needs to be in FP32 for
/// numerical stability", for sgl_kernel's `apply_rope_with_cos_sin_cache_inplace`), shared by
/// every layer (`get_rope` caches it). The rotary width is the MLA rope part or the head size.
pub fn rope_cache_bytes(spec: &ModelSpec) -> u64 {
    let rotary = spec
        .layers
        .iter()
        .find(|l| l.attention.has_kv())
        .map(|l| match &l.attention {
            AttentionKind::Mla { rope_dim, .. } => *rope_dim,
            _ => l.head_dim_k,
        })
        .unwrap_or(0);
    spec.n_ctx_train * rotary * 4
}

thread_local! {
    static LOAD_OVERRIDE: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// Run `f` with another [`LOAD_NON_TORCH_BYTES`] on this thread (the cross-validation harness
/// refits it on the logs it leaves in).
pub fn with_load_non_torch<R>(bytes: u64, f: impl FnOnce() -> R) -> R {
    let old = LOAD_OVERRIDE.with(|o| o.replace(Some(bytes)));
    let r = f();
    LOAD_OVERRIDE.with(|o| o.set(old));
    r
}

fn load_non_torch() -> u64 {
    LOAD_OVERRIDE
        .with(|o| o.get())
        .unwrap_or(LOAD_NON_TORCH_BYTES)
}

/// Memory a rank on `gpu` loses before SGLang's "Load weight begin" (the CUDA context, and the
/// TP group's communication buffers when `tp` > 1): the free memory SGLang sizes its pool from
/// is the free memory at launch less this.
pub fn init_bytes(gpu: &Gpu, tp: u64) -> u64 {
    INIT_BYTES
        + match (tp > 1, nvlink_class(&gpu.name)) {
            (false, _) => 0,
            (true, true) => INIT_TP_BYTES,
            (true, false) => INIT_TP_PCIE_BYTES,
        }
}

/// GPUs that come in NVLink/xGMI-joined boards (SXM/OAM), where SGLang's custom all-reduce
/// allocates its buffers; a "PCIe" name or any other card is taken as PCIe-only.
fn nvlink_class(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    !n.contains("pcie")
        && [
            "h100", "h200", "h20", "h800", "a100", "a800", "b200", "b300", "gb200", "gb300",
            "mi300", "mi325", "mi355",
        ]
        .iter()
        .any(|k| n.contains(k))
}

/// SGLang's constant metadata reserve (server_args.py `_handle_gpu_memory_settings`: 512 MB).
/// Its other reserve terms (`chunked_prefill_size × 1.5` MB, `cuda_graph_max_bs × 2` MB) are
/// deliberately generous: vllm-log-024 runs at fraction 0.93 with 5.6 GiB left for them. The
/// activation memory is planned with the vLLM profile of the same shapes instead
/// ([`crate::vllm::profile`]: a `chunked_prefill_size` forward and the sampler rows).
pub const METADATA_BYTES: u64 = 512 * MIB;
/// CUDA graphs: SGLang's own 2 MB per batch size of the largest captured (same function). vLLM's
/// estimate for the same capture sizes (4 GiB here) would not let vllm-log-024 fit in 80 GB.
pub const GRAPH_BYTES_PER_BS: u64 = 2 * MIB;

/// KV bytes one token takes on a rank holding `layers`.
pub fn cell_size(spec: &ModelSpec, layers: Range<u64>, tp: u64, elem: u64) -> u64 {
    spec.layers
        .iter()
        .enumerate()
        .filter(|(i, _)| layers.contains(&(*i as u64)))
        .map(|(_, l)| match &l.attention {
            AttentionKind::Mla {
                kv_lora_rank,
                rope_dim,
                ..
            } => (kv_lora_rank + rope_dim) * elem,
            a if a.has_kv() && !l.kv_shared => {
                kv_heads_per_rank(l.n_head_kv, tp) * (l.head_dim_k + l.head_dim_v) * elem
            }
            _ => 0,
        })
        .sum()
}

/// The vLLM view of the same weights: SGLang shards linear layers and the vocabulary as vLLM does.
fn weight_view(cfg: &SglangConfig) -> Option<vllm::VllmConfig> {
    let mut words = vec![
        "vllm".to_string(),
        "serve".into(),
        cfg.model.clone(),
        "--tensor-parallel-size".into(),
        cfg.tp_size.to_string(),
        "--pipeline-parallel-size".into(),
        cfg.pp_size.to_string(),
    ];
    if let Some(q) = &cfg.quantization {
        words.extend(["--quantization".into(), q.clone()]);
    }
    if let Some(d) = &cfg.dtype {
        words.extend(["--dtype".into(), d.clone()]);
    }
    let cmd = Command {
        env: Vec::new(),
        program: "vllm".into(),
        args: words[1..].to_vec(),
        engine: Some(EngineKind::Vllm),
        hints: Default::default(),
    };
    vllm::parse(&cmd, None).ok()
}

/// Weight bytes per pipeline stage (every TP rank of a stage holds the same).
pub fn stage_weights(
    spec: &ModelSpec,
    weights: Option<&WeightSet>,
    cfg: &SglangConfig,
) -> (Vec<Range<u64>>, Vec<u64>) {
    let ranges = vllm::weights::pp_layer_ranges(spec.n_layer(), cfg.pp_size, None)
        .unwrap_or_else(|_| std::iter::once(0..spec.n_layer()).collect());
    let Some(vcfg) = weight_view(cfg) else {
        return (ranges.clone(), vec![0; ranges.len()]);
    };
    let exact = weights.filter(|w| {
        !w.tensors.is_empty()
            && w.tensors
                .iter()
                .all(|t| !matches!(t.dtype, TensorDtype::Ggml(_)))
    });
    let bytes = match exact {
        Some(w) => vllm::weights::exact_stage_bytes(w, spec, &vcfg, &ranges),
        None => vllm::weights::predicted_stage_bytes(spec, &vcfg, &ranges),
    };
    (ranges, bytes)
}

fn model_dtype_bytes(spec: &ModelSpec, cfg: &SglangConfig) -> u64 {
    match cfg.dtype.as_deref().map(str::to_ascii_lowercase).as_deref() {
        Some("float32" | "fp32") => 4,
        Some("float16" | "half" | "bfloat16" | "bf16" | "fp16") => 2,
        _ => spec.dtype.bytes().clamp(2, 4),
    }
}

/// The GPUs SGLang's ranks run on, in order.
fn rank_gpus(
    notes: &mut Vec<String>,
    cfg: &SglangConfig,
    hw: &Hardware,
    problems: &mut Vec<String>,
) -> Vec<Gpu> {
    let visible = hw
        .visible(cfg.visible_devices.as_deref())
        .into_report(notes, problems);
    // --enable-dp-attention runs DP inside the TP group: tp GPUs in all; plain --dp N replicas
    let dp = if cfg.enable_dp_attention {
        1
    } else {
        cfg.dp_size
    };
    let world = (cfg.tp_size * cfg.pp_size * dp) as usize;
    if visible.len() < world {
        problems.push(format!(
            "tp × pp × dp = {world} GPUs needed, but {} are visible: add GPUs or lower --tp/--dp",
            visible.len()
        ));
    }
    visible.into_iter().take(world).collect()
}

/// Whether a stored calibration is of this layout (same TP and PP) and measured the load.
fn calib_applies(c: Option<&crate::calibrate::Calibration>, cfg: &SglangConfig) -> bool {
    c.is_some_and(|c| {
        c.settings.tensor_parallel_size.unwrap_or(1) == cfg.tp_size
            && c.settings.pipeline_parallel_size.unwrap_or(1) == cfg.pp_size
            && c.measured.avail_after_load_bytes.is_some()
            && c.measured.weights_bytes.is_some()
    })
}

/// The full `check` answer for a SGLang launch.
pub fn plan(
    spec: &ModelSpec,
    weights: Option<&WeightSet>,
    cfg: &SglangConfig,
    hw: &Hardware,
) -> MemoryPlan {
    let mut problems = Vec::new();
    let mut notes = cfg.notes.clone();
    let gpus = rank_gpus(&mut notes, cfg, hw, &mut problems);
    let total_mib = gpus.first().map(|g| g.total_bytes as f64 / MIB as f64);
    let defaults = args::gpu_defaults(cfg, total_mib.unwrap_or(0.0));
    // a calibration from this deployment's own log (crate::calibrate): the free memory the ranks
    // saw before loading (avail mem + mem usage of 'Load weight end') and the weights replace
    // the predicted ones when the layout is the log's
    let calib = gpus.first().and_then(|g| {
        crate::calibrate::registry::find("sglang", &cfg.model, None, g)
            .or_else(|| crate::calibrate::registry::find("sglang", &spec.id, None, g))
    });
    // the vision tower's reduction of the default (fraction.rs; not in the TP-size rule before
    // v0.4.7, where it was not checked)
    let vlm = match cfg.version {
        Some(v) if v < vllm::Version::new(0, 4, 7) => 1.0,
        _ => fraction::vlm_factor(spec.vision_shape),
    };
    let mfs = match (cfg.mem_fraction_static, total_mib) {
        (Some(f), _) => f,
        // the fraction this deployment's own log printed is its release's default on this GPU
        (None, _) if calib_applies(calib.as_ref(), cfg) => calib
            .as_ref()
            .and_then(|c| c.settings.mem_fraction_static)
            .unwrap_or(defaults.mem_fraction_static),
        (None, Some(_)) => defaults.mem_fraction_static * vlm,
        // server_args.py: 0.88 when the GPU memory is unknown
        (None, None) => 0.88 * vlm,
    };
    if cfg.mem_fraction_static.is_none() && !calib_applies(calib.as_ref(), cfg) && vlm != 1.0 {
        notes.push(format!("--mem-fraction-static not given: SGLang lowers its default {:.3} by {vlm:.4} for the vision tower (server_args.py adjust_mem_fraction_for_vlm)", mfs / vlm));
    }
    if cfg.mem_fraction_static.is_none() && calib_applies(calib.as_ref(), cfg) {
        notes.push(format!("--mem-fraction-static not given: {mfs} as the calibration log's run printed it (that release's default on this GPU, unless that run set it)"));
    }
    let model_len = if spec.n_ctx_train > 0 {
        spec.n_ctx_train
    } else {
        2048
    };
    let context_len = cfg.context_length.unwrap_or(model_len);
    if context_len > model_len {
        // configs/model_config.py: refused unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1
        problems.push(format!(
            "--context-length {context_len} is longer than the model's {model_len}: SGLang refuses it unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"
        ));
    }
    let (ranges, mut stage_bytes) = stage_weights(spec, weights, cfg);
    // SGLang's weights are its 'mem usage': the tensors, the RoPE cache and the context growth
    // while loading
    for b in stage_bytes.iter_mut().filter(|b| **b > 0) {
        *b += rope_cache_bytes(spec) + load_non_torch();
    }
    let mut measured_free = None;
    if let Some(c) = &calib {
        let m = &c.measured;
        let same_layout = c.settings.tensor_parallel_size.unwrap_or(1) == cfg.tp_size
            && c.settings.pipeline_parallel_size.unwrap_or(1) == cfg.pp_size;
        match (m.avail_after_load_bytes, m.weights_bytes, same_layout) {
            (Some(a), Some(w), true) => {
                // 'Load weight begin' when printed, else what loading took back from the end
                measured_free = Some(m.free_at_start_bytes.unwrap_or(a + w));
                let top = stage_bytes.iter().copied().max().unwrap_or(0).max(1);
                for b in stage_bytes.iter_mut() {
                    *b = (*b as f64 * w as f64 / top as f64).round() as u64;
                }
                notes.push(format!(
                    "calibrated from {}: weights and the free memory at load measured ({})",
                    c.source,
                    crate::calibrate::store::key(c)
                ));
            }
            _ => notes.push(format!(
                "calibration {} not applied: it was measured with another --tp-size/--pp-size or lacks the 'Load weight end' line",
                c.source
            )),
        }
    }
    let elem = kv_elem_bytes(&cfg.kv_cache_dtype, model_dtype_bytes(spec, cfg));
    let tp = cfg.tp_size;
    if !cfg.enable_dp_attention {
        notes.extend(crate::tp_split::tp_note(spec, tp, "--tp-size"));
    }
    // with DP attention each attention group is tp / dp ranks wide (get_attention_tp_size)
    let attn_tp = if cfg.enable_dp_attention {
        (cfg.tp_size / cfg.dp_size.max(1)).max(1)
    } else {
        tp
    };
    let init_of = |g: &Gpu| init_bytes(g, tp);
    let stage_of = |rank: usize| (rank / tp as usize) % cfg.pp_size as usize;
    // rest memory is taken as the minimum over ranks (get_available_gpu_memory distributed=True)
    let mut tokens = u64::MAX;
    let mut rest_min = i64::MAX;
    for (r, g) in gpus.iter().enumerate() {
        let s = stage_of(r);
        let f = measured_free.unwrap_or_else(|| g.free_bytes.saturating_sub(init_of(g))) as f64;
        let rest = f - stage_bytes[s] as f64 - f * (1.0 - mfs);
        let cell = cell_size(spec, ranges[s].clone(), attn_tp, elem).max(1);
        rest_min = rest_min.min(rest as i64);
        tokens = tokens.min(if rest > 0.0 {
            (rest / cell as f64) as u64
        } else {
            0
        });
    }
    if gpus.is_empty() {
        tokens = 0;
        rest_min = 0;
    }
    if let Some(cap) = cfg.max_total_tokens {
        tokens = tokens.min(cap);
    }
    tokens = tokens / cfg.page_size * cfg.page_size;
    // the hybrid sliding-window pool splits the same bytes into two pools (swa.rs)
    let (full_b, swa_b) = swa::split_cell(spec, ranges[0].clone(), attn_tp, elem);
    let mut swa_tokens = None;
    match swa::hybrid_ratio(spec, cfg, gpus.first()) {
        Some(Ok(r)) if swa_b > 0 && !gpus.is_empty() => {
            let (f, s) = swa::split_tokens(tokens, full_b, swa_b, r, cfg.page_size);
            notes.push(format!(
                "SGLang's hybrid sliding-window pool: {f} tokens for the full-attention layers, {s} for the sliding-window layers (--swa-full-tokens-ratio {r}; model_runner_kv_cache_mixin.py set_num_tokens_hybrid_swa)"
            ));
            tokens = f;
            swa_tokens = Some(s);
        }
        Some(Err(why)) => notes.push(format!("sliding-window layers: {why}")),
        _ => {}
    }
    if !gpus.is_empty() && tokens == 0 {
        problems.push(format!(
            "weights leave no KV pool: {} of weights per GPU, {} left under --mem-fraction-static {mfs} (SGLang: \"Not enough memory. Please try to increase --mem-fraction-static.\")",
            fmt_bytes(stage_bytes.iter().copied().max().unwrap_or(0)),
            fmt_bytes(rest_min.max(0) as u64),
        ));
    }
    if spec
        .layers
        .iter()
        .any(|l| matches!(l.attention, AttentionKind::Recurrent(_)) || l.parallel_ssm.is_some())
    {
        problems.push("recurrent (Mamba / linear-attention) layers: SGLang's state pool is not modelled; the token pool is for the attention layers only".into());
    }
    // scheduler request slots: model_runner.py `max_num_reqs` default, and its int32 token table
    let max_num_reqs = cfg
        .max_running_requests
        .map(|m| (m / cfg.dp_size).min(tokens / 2))
        .unwrap_or_else(|| {
            let est = (tokens as f64 / context_len.max(1) as f64 * 512.0) as u64;
            est.clamp(2048, 4096).min(tokens.max(1) / 2).max(1)
        });
    let req_table = (max_num_reqs + 1) * (context_len + 4) * 4;
    let chunk = if defaults.chunked_prefill_size > 0 {
        defaults.chunked_prefill_size as u64
    } else {
        cfg.max_prefill_tokens
    };
    let profile_of = |stage: usize| {
        vllm::profile::profile(
            spec,
            ranges[stage].clone(),
            vllm::profile::ProfileInputs {
                max_num_batched_tokens: chunk,
                // sampler rows: the largest decode batch SGLang captures a graph for
                max_num_seqs: defaults.cuda_graph_max_bs.max(1),
                tp,
                is_last_stage: stage + 1 == ranges.len(),
                cuda_graphs: false,
                act_bytes: model_dtype_bytes(spec, cfg),
                expert_parallel: false,
                sampler: vllm::profile::Sampler::Sorting,
                nvls: false,
                device_wide: None,
                fixed_capture: None,
            },
        )
    };
    let mut devices = Vec::new();
    let mut fits = problems.is_empty();
    problems.extend(cfg.unmodelled.iter().cloned());
    for (r, g) in gpus.iter().enumerate() {
        let s = stage_of(r);
        let cell = cell_size(spec, ranges[s].clone(), attn_tp, elem);
        let prof = profile_of(s);
        let mut d = DevicePlan {
            name: g.name.clone(),
            total_bytes: g.total_bytes,
            free_bytes: g.free_bytes,
            weights_bytes: stage_bytes[s],
            kv_cache_bytes: match swa_tokens {
                Some(st) => {
                    let (f, w) = swa::split_cell(spec, ranges[s].clone(), attn_tp, elem);
                    (tokens * f + st * w) as i64
                }
                None => (tokens * cell) as i64,
            },
            compute_bytes: prof.activation_bytes,
            cuda_graph_bytes: if cfg.disable_cuda_graph {
                0
            } else {
                defaults.cuda_graph_max_bs * GRAPH_BYTES_PER_BS
            },
            overhead_bytes: init_of(g) + METADATA_BYTES + prof.non_torch_bytes + req_table,
            used_bytes: 0,
        };
        d.finish();
        if d.used_bytes > g.free_bytes && cfg.sysmem_fallback && tokens > 0 {
            // written after the 4 GB WSL2 log (v0.4.6.post2): its pool left "avail mem=0.00 GB"
            // and the attention workspace and CUDA graphs still came up
            notes.push(format!(
                "{} (GPU {r}) needs {} but has {} free: under Windows/WSL2 the driver's sysmem fallback puts the overrun in shared system memory, so SGLang starts but runs slower; lower --mem-fraction-static to stay on the card",
                g.name,
                fmt_bytes(d.used_bytes),
                fmt_bytes(g.free_bytes)
            ));
        } else if d.used_bytes > g.free_bytes {
            fits = false;
            problems.push(format!(
                "{} (GPU {r}) needs {} (weights and pool under fraction {mfs}, plus activations and graphs) but has {} free: lower --mem-fraction-static or --chunked-prefill-size / --cuda-graph-max-bs",
                g.name,
                fmt_bytes(d.used_bytes),
                fmt_bytes(g.free_bytes)
            ));
        }
        devices.push(d);
    }
    if fits && tokens > 0 && tokens < context_len {
        // SGLang starts anyway and caps each request at min(context_len, pool) − 1 tokens
        // (scheduler / tp_worker.py max_req_input_len): a longer prompt is refused at request time
        notes.push(format!(
            "the token pool ({tokens}) is shorter than --context-length {context_len}: SGLang starts, but refuses any request over {} tokens; lower --context-length to {tokens} or free memory",
            tokens - 1
        ));
    }
    // per token of the full-attention pool, the sliding-window pool's share included
    let cell0 = match swa_tokens {
        Some(st) if tokens > 0 => full_b + swa_b * st / tokens,
        _ => cell_size(spec, ranges[0].clone(), attn_tp, elem),
    };
    let kv_total: u64 = devices.iter().map(|d| d.kv_cache_bytes.max(0) as u64).sum();
    let mut suggestions = Vec::new();
    if !fits && tokens == 0 && stage_bytes.iter().any(|&w| w > 0) {
        suggestions.push(format!(
            "raise --tp-size (weights split over more GPUs) or use a quantized checkpoint; {} per GPU of weights need a fraction above {:.2}",
            fmt_bytes(stage_bytes[0]),
            gpus.first()
                .map(|g| stage_bytes[0] as f64 / g.free_bytes.saturating_sub(init_of(g)).max(1) as f64)
                .unwrap_or(1.0)
        ));
    }
    let settings = vec![
        (
            "mem_fraction_static".to_string(),
            format!(
                "{mfs}{}",
                if cfg.mem_fraction_static.is_none() {
                    " (default for this GPU)"
                } else {
                    ""
                }
            ),
        ),
        ("context_length".into(), context_len.to_string()),
        ("max_total_num_tokens".into(), tokens.to_string()),
        ("max_running_requests".into(), max_num_reqs.to_string()),
        (
            "chunked_prefill_size".into(),
            defaults.chunked_prefill_size.to_string(),
        ),
        (
            "cuda_graph_max_bs".into(),
            if cfg.disable_cuda_graph {
                "disabled".into()
            } else {
                defaults.cuda_graph_max_bs.to_string()
            },
        ),
        (
            "cuda_graph_batch_sizes".into(),
            if cfg.disable_cuda_graph {
                "0".into()
            } else {
                args::cuda_graph_batch_sizes(defaults.cuda_graph_max_bs)
                    .len()
                    .to_string()
            },
        ),
        (
            "kv_cache_dtype".into(),
            format!("{} ({elem} bytes)", cfg.kv_cache_dtype),
        ),
        ("tp_size".into(), tp.to_string()),
    ];
    MemoryPlan {
        engine: "sglang".into(),
        model: ModelRef {
            id: spec.id.clone(),
            architecture: spec.architecture.clone(),
            params: weights.map(|w| w.total_elems()).unwrap_or(0),
        },
        verdict: if fits {
            Verdict::Fits
        } else {
            Verdict::DoesNotFit
        },
        devices,
        host: HostPlan::default(),
        kv_cache: KvSummary {
            bytes: kv_total as i64,
            tokens,
            bytes_per_token: cell0,
            max_concurrency: tokens as f64 / context_len.max(1) as f64,
        },
        max_model_len: tokens.min(context_len),
        problems,
        suggestions,
        settings,
        notes,
    }
}
