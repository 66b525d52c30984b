//! ModelSpec × VllmConfig × Hardware → MemoryPlan: what each vLLM worker holds, whether the
//! engine starts, and the smallest changes that make it start.
//!
//! The start-up sequence mirrored here (vllm/v1/worker/gpu_worker.py, kv_cache_utils.py):
//! 1. `init_device`: requested = total × gpu_memory_utilization; fail if free < requested.
//! 2. `determine_available_memory`: available KV = requested − weights − activation peak −
//!    non-torch (− the CUDA-graph estimate from v0.20); `--kv-cache-memory-bytes` replaces it.
//! 3. `_check_enough_kv_cache_memory`: fail if available ≤ 0, or if one request of
//!    max_model_len needs more (then vLLM prints its estimated maximum model length).
//! 4. num_blocks = available // page // group_size, the minimum over workers.

use super::args::{MaxModelLen, VllmConfig};
use super::kv::{KvLayout, LayoutInputs};
use super::profile::{profile, Profile, ProfileInputs};
use super::quant::model_dtype;
use super::version::TokenReport;
use super::weights::{pp_layer_ranges, stage_bytes};
use crate::hardware::{Gpu, Hardware};
use crate::plan::{DevicePlan, HostPlan, KvSummary, MemoryPlan, ModelRef, Verdict};
use std::ops::Range;
use vramfit_model::units::{fmt_bytes, fmt_bytes_signed, GIB};
use vramfit_model::{ModelSpec, WeightSet};

/// One worker's numbers.
#[derive(Debug, Clone)]
pub(super) struct Worker {
    pub(super) gpu: Gpu,
    pub(super) stage: usize,
    pub(super) weights: u64,
    pub(super) offloaded: u64,
    pub(super) requested: u64,
    pub(super) profile: Profile,
    /// the KV pool vLLM sizes (negative when nothing is left)
    pub(super) available: i64,
}

/// Everything `plan` works out before it is rendered.
#[derive(Debug, Clone)]
pub(super) struct Outcome {
    pub(super) workers: Vec<Worker>,
    pub(super) layouts: Vec<KvLayout>,
    pub(super) max_model_len: u64,
    pub(super) num_blocks: u64,
    pub(super) binding_stage: usize,
    pub(super) problems: Vec<String>,
    /// a start-up check failed
    pub(super) fails: bool,
    /// the engine sized and printed the pool before it refused to start (V0's length check)
    pub(super) pool_printed: bool,
    /// the start runs the V0 engine ([`VllmConfig::runs_v0`] with the GPU's compute capability)
    pub(super) v0: bool,
    /// vLLM's estimate when the KV check failed, or the largest length that fits
    pub(super) fit_len: u64,
    pub(super) settings: Vec<(String, String)>,
    pub(super) notes: Vec<String>,
}

/// The memory plan of a vLLM command on this hardware. `weights`: the checkpoint's tensors when
/// known (exact bytes), else they are predicted from the spec.
pub fn plan(
    spec: &ModelSpec,
    weights: Option<&WeightSet>,
    cfg: &VllmConfig,
    hw: &Hardware,
) -> MemoryPlan {
    let out = evaluate(spec, weights, cfg, hw);
    let suggestions = if out.fails {
        super::suggest::suggest(spec, weights, cfg, hw, &out)
    } else {
        Vec::new()
    };
    render(spec, cfg, out, suggestions)
}

/// [`plan`] without the search for changes that would make a failing command start (its
/// `suggestions` stay empty; every other field is the same): for planners that evaluate many
/// candidate commands and only keep the ones that start.
pub fn plan_without_suggestions(
    spec: &ModelSpec,
    weights: Option<&WeightSet>,
    cfg: &VllmConfig,
    hw: &Hardware,
) -> MemoryPlan {
    render(spec, cfg, evaluate(spec, weights, cfg, hw), Vec::new())
}

/// AMD GPUs run vLLM on ROCm.
fn is_rocm(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("amd") || n.contains("instinct") || n.contains("radeon") || n.contains("mi300")
}

/// The GPUs the workers run on: `CUDA_VISIBLE_DEVICES` picks and orders them.
fn worker_gpus(
    notes: &mut Vec<String>,
    cfg: &VllmConfig,
    hw: &Hardware,
    problems: &mut Vec<String>,
) -> Vec<Gpu> {
    let visible = hw
        .visible(cfg.visible_devices.as_deref())
        .into_report(notes, problems);
    let world = cfg.world_size() as usize;
    if visible.len() < world {
        problems.push(format!(
            "tensor × pipeline parallel = {world} workers, but only {} GPU(s) are visible: add GPUs or lower -tp/-pp",
            visible.len()
        ));
    }
    visible.into_iter().take(world).collect()
}

pub(super) fn evaluate(
    spec: &ModelSpec,
    weights: Option<&WeightSet>,
    cfg: &VllmConfig,
    hw: &Hardware,
) -> Outcome {
    let owned;
    let cfg = match super::with_calibration_version(spec, cfg, hw) {
        Some(c) => {
            owned = c;
            &owned
        }
        None => cfg,
    };
    let mut problems = Vec::new();
    let mut notes = cfg.notes.clone();
    let mut settings = Vec::new();
    let gpus = worker_gpus(&mut notes, cfg, hw, &mut problems);
    let mut fails = !problems.is_empty();
    let tp = cfg.tensor_parallel_size;
    let pp = cfg.pipeline_parallel_size;
    // expert parallel keeps experts whole, so only a dense checkpoint's split is judged then
    if !cfg.enable_expert_parallel || spec.moe.is_none() {
        notes.extend(crate::tp_split::tp_note(spec, tp, "--tensor-parallel-size"));
    }
    let model_max_len = if spec.n_ctx_train > 0 {
        spec.n_ctx_train
    } else {
        2048
    };
    let configured = match cfg.max_model_len {
        MaxModelLen::Tokens(n) => n,
        MaxModelLen::FromModel | MaxModelLen::Auto => model_max_len,
    };
    if configured > model_max_len && !cfg.allow_long_max_model_len {
        // vllm/config/model.py `_get_and_verify_max_len`: refused unless
        // VLLM_ALLOW_LONG_MAX_MODEL_LEN=1
        problems.push(format!(
            "--max-model-len {configured} is longer than the model's {model_max_len}: vLLM refuses to start (set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 to override)"
        ));
        fails = true;
    }
    let ranges: Vec<Range<u64>> =
        match pp_layer_ranges(spec.n_layer(), pp, cfg.pp_layer_partition.as_deref()) {
            Ok(r) => r,
            Err(e) => {
                problems.push(e.to_string());
                fails = true;
                pp_layer_ranges(spec.n_layer(), pp, None)
                    .unwrap_or_else(|_| std::iter::once(0..spec.n_layer()).collect())
            }
        };
    let first = gpus.first().cloned().unwrap_or(Gpu {
        name: "no GPU".into(),
        total_bytes: 0,
        free_bytes: 0,
        bandwidth_gbps: None,
        compute_capability: None,
        unified: false,
    });
    let cfg_gpu;
    let cfg = if (cfg.compute_capability.is_none() && first.compute_capability.is_some())
        || is_rocm(&first.name) != cfg.rocm
    {
        cfg_gpu = VllmConfig {
            compute_capability: cfg.compute_capability.or(first.compute_capability),
            rocm: is_rocm(&first.name),
            ..cfg.clone()
        };
        &cfg_gpu
    } else {
        cfg
    };
    let calib = super::calibrated_for(spec, weights, cfg, &first);
    let (mnbt, mns) = cfg.batch_limits(first.total_bytes, &first.name, configured);
    let dtype = model_dtype(spec, cfg);
    let stage_weights = stage_bytes(spec, weights, cfg, &ranges);
    let layouts: Vec<KvLayout> = ranges
        .iter()
        .map(|r| {
            KvLayout::new(
                spec,
                r.clone(),
                LayoutInputs {
                    tp,
                    kv_cache_dtype: &cfg.kv_cache_dtype,
                    model_dtype_bytes: dtype.bytes(),
                    block_size: cfg.block_size,
                    max_num_batched_tokens: mnbt,
                    disable_hybrid: cfg.disable_hybrid_kv_cache_manager,
                    compute_capability: first.compute_capability,
                    mla_cache: super::kv::MlaCache::of(cfg.version),
                    ssm_dtype_bytes: super::kv::ssm_state_bytes(
                        spec,
                        cfg.mamba_ssm_cache_dtype.as_deref(),
                        cfg.version,
                        dtype.bytes(),
                    ),
                },
            )
        })
        .map(|l| KvLayout {
            context_parallel: cfg.decode_context_parallel_size,
            ..l
        })
        .collect();
    let runner = super::runner::runner(spec, cfg);
    let lean = runner == super::runner::Runner::V2 && super::runner::lean_profile(cfg.version);
    // Model Runner V2's CUDA-graph estimate is a placeholder returning 0 (runner.rs)
    let estimate_charged = cfg.deducts_cuda_graphs() && !lean;
    let mut workers = Vec::new();
    for (i, gpu) in gpus.iter().enumerate() {
        // rank = pp_rank · tp + tp_rank: consecutive GPUs form one pipeline stage
        let stage = (i as u64 / tp).min(pp - 1) as usize;
        let rocm = is_rocm(&gpu.name);
        // ROCm's padded MoE weights are part of the stage's weights (weights::stage_bytes)
        let w = stage_weights[stage];
        let requested = (gpu.total_bytes as f64 * cfg.gpu_memory_utilization).ceil() as u64;
        let prof = profile(
            spec,
            ranges[stage].clone(),
            ProfileInputs {
                max_num_batched_tokens: mnbt,
                max_num_seqs: mns,
                tp,
                is_last_stage: stage == ranges.len() - 1,
                cuda_graphs: cfg.uses_cuda_graphs(),
                act_bytes: dtype.bytes(),
                expert_parallel: cfg.enable_expert_parallel,
                sampler: super::runner::sampler(spec, cfg),
                nvls: super::runner::nccl_nvls(cfg, &gpu.name),
                device_wide: super::profile::device_wide(cfg, gpu),
                fixed_capture: super::runner::fixed_capture_size(spec, cfg),
            },
        );
        // gpu_worker.py: the estimate is skipped on ROCm in the v0.21+ code read
        let charges = estimate_charged && !rocm;
        let mut prof = prof;
        let w = match &calib {
            Some(c) => c.adjust(w, &mut prof, charges),
            None => w,
        };
        let offloaded = cfg.cpu_offload_bytes.min(w);
        let graphs_charged = if charges { prof.cuda_graph_bytes } else { 0 };
        let available = match cfg.kv_cache_memory_bytes {
            Some(b) => b as i64,
            None => {
                requested as i64
                    - (w - offloaded) as i64
                    - prof.activation_bytes as i64
                    - prof.non_torch_bytes as i64
                    - graphs_charged as i64
            }
        };
        workers.push(Worker {
            gpu: gpu.clone(),
            stage,
            weights: w - offloaded,
            offloaded,
            requested,
            profile: prof,
            available,
        });
    }

    // start-up checks, in vLLM's order
    for (i, w) in workers.iter().enumerate() {
        if w.gpu.free_bytes < w.requested {
            problems.push(format!(
                "GPU {i}: free memory at start ({}) is less than gpu_memory_utilization {} × total ({}): vLLM stops at start-up",
                fmt_bytes(w.gpu.free_bytes),
                cfg.gpu_memory_utilization,
                fmt_bytes(w.requested)
            ));
            fails = true;
        }
    }
    let num_blocks_of = |w: &Worker| {
        cfg.num_gpu_blocks_override
            .unwrap_or_else(|| layouts[w.stage].num_blocks(w.available))
    };
    let (binding, num_blocks) = workers
        .iter()
        .map(|w| (w.stage, num_blocks_of(w)))
        .min_by_key(|(_, b)| *b)
        .unwrap_or((0, 0));
    let mut fit_len = workers
        .iter()
        .map(|w| {
            layouts[w.stage].estimate_max_model_len(w.available, model_max_len.max(configured))
        })
        .min()
        .unwrap_or(0);
    let any_kv = layouts.iter().any(|l| !l.is_empty());
    let mut pool_printed = false;
    if any_kv && !fails {
        if let Some(w) = workers.iter().find(|w| w.available <= 0) {
            problems.push(format!(
                "no memory left for the KV cache on GPU {} ({} short of the {} budget): vLLM stops with 'No available memory for the cache blocks'",
                workers.iter().position(|x| std::ptr::eq(x, w)).unwrap_or(0),
                fmt_bytes_signed(-w.available),
                fmt_bytes(w.requested)
            ));
            fails = true;
        } else if matches!(cfg.max_model_len, MaxModelLen::Auto) {
            // `_auto_fit_max_model_len`: the longest length that fits, up to the model's
            if fit_len == 0 {
                problems.push(
                    "--max-model-len auto: not even one token of KV cache fits (vLLM: 'Cannot auto-fit max_model_len')".into(),
                );
                fails = true;
            } else {
                notes.push(format!("--max-model-len auto: fitted to {fit_len} tokens"));
            }
        } else {
            let short = workers
                .iter()
                .find(|w| layouts[w.stage].bytes_per_request(configured) as i64 > w.available);
            if let Some(w) = short {
                // V0 logs "# GPU blocks" and "Maximum concurrency" (executor_base.py
                // `initialize_cache`, v0.6.x–v0.7.x) before the worker's
                // `raise_if_cache_size_invalid` refuses the length; V1 checks first
                // (kv_cache_utils.py `check_enough_kv_cache_memory`) and prints no pool
                pool_printed = cfg.runs_v0();
                let est = layouts[w.stage].estimate_max_model_len(w.available, configured);
                problems.push(format!(
                    "one request of max_model_len {configured} needs {} of KV cache, more than the {} available: vLLM stops (its estimated maximum model length is {est})",
                    fmt_bytes(layouts[w.stage].bytes_per_request(configured)),
                    fmt_bytes_signed(w.available)
                ));
                fit_len = est;
                fails = true;
            }
        }
    }
    let max_model_len = match cfg.max_model_len {
        MaxModelLen::Auto => fit_len.min(model_max_len),
        _ => configured,
    };
    if !fails && cfg.kv_cache_memory_bytes.is_some() {
        // --kv-cache-memory-bytes skips the budget: the pool is allocated whatever is free
        for (i, w) in workers.iter().enumerate() {
            let used = w.weights
                + w.profile.activation_bytes
                + w.profile.non_torch_bytes
                + w.profile.cuda_graph_bytes
                + w.available.max(0) as u64;
            if used > w.gpu.free_bytes {
                problems.push(format!(
                    "GPU {i}: --kv-cache-memory-bytes {} with {} of weights, activations and graphs exceeds the {} free: expect an OOM when the KV cache is allocated",
                    fmt_bytes(w.available.max(0) as u64),
                    fmt_bytes(used - w.available.max(0) as u64),
                    fmt_bytes(w.gpu.free_bytes)
                ));
                fails = true;
            }
        }
    }
    if cfg.runs_v0() {
        notes.push(format!(
            "vLLM {} runs the V0 engine here{}: its profile run takes max(max_model_len, 2048) tokens unless the context is over 32K (chunked prefill off); the rest is modelled with V1's semantics",
            cfg.version,
            if cfg.version >= super::Version::new(0, 8, 0) {
                " (VLLM_USE_V1=0, or a GPU of compute capability below 8.0)"
            } else {
                ""
            }
        ));
    }
    if !fails && !estimate_charged && cfg.uses_cuda_graphs() {
        for (i, w) in workers.iter().enumerate() {
            let used = w.requested + w.profile.cuda_graph_bytes;
            if used > w.gpu.free_bytes {
                problems.push(format!(
                    "GPU {i}: CUDA graphs ({}) are captured on top of the {} budget (before v0.20, or under Model Runner V2) and exceed free memory: expect an OOM during graph capture",
                    fmt_bytes(w.profile.cuda_graph_bytes),
                    fmt_bytes(w.requested)
                ));
                fails = true;
            }
        }
    }
    settings.extend([
        (
            "vllm_version".to_string(),
            format!(
                "{}{}",
                cfg.version,
                if cfg.version_given {
                    ""
                } else {
                    " (assumed current)"
                }
            ),
        ),
        (
            "gpu_memory_utilization".to_string(),
            cfg.gpu_memory_utilization.to_string(),
        ),
        (
            "max_num_batched_tokens".to_string(),
            if cfg.max_num_batched_tokens.is_some() {
                mnbt.to_string()
            } else {
                format!(
                    "{mnbt} (default for a {} GiB {})",
                    first.total_bytes / GIB,
                    first.name
                )
            },
        ),
        ("max_num_seqs".to_string(), mns.to_string()),
        (
            "block_size".to_string(),
            layouts
                .first()
                .map(|l| l.block_size)
                .unwrap_or(16)
                .to_string(),
        ),
        ("kv_cache_dtype".to_string(), cfg.kv_cache_dtype.clone()),
        (
            "weights".to_string(),
            super::weights::describe_scheme(spec, cfg),
        ),
        (
            "cuda_graphs".to_string(),
            if !cfg.uses_cuda_graphs() {
                "off".into()
            } else if estimate_charged {
                "estimate charged to the budget".into()
            } else if lean && cfg.deducts_cuda_graphs() {
                "Model Runner V2: estimate 0, captured after KV sizing".into()
            } else {
                "captured after KV sizing".into()
            },
        ),
    ]);
    if let Some(c) = &calib {
        settings.push((
            "calibration".into(),
            format!(
                "{} ({})",
                c.cal.source,
                crate::calibrate::store::key(&c.cal)
            ),
        ));
        for (what, how) in c.provenance() {
            settings.push((format!("source of {what}"), how));
        }
        if !c.what_if.is_empty() {
            notes.push(format!(
                "calibrated from {}; changed from the log: {}",
                c.cal.source,
                c.what_if.join(", ")
            ));
        }
        notes.extend(c.cal.warnings.iter().map(|w| format!("calibration: {w}")));
    }
    if lean {
        notes.push(format!(
            "vLLM {} runs {} on Model Runner V2, whose start-up profile samples without sampling parameters and charges no CUDA-graph estimate (set VLLM_USE_V2_MODEL_RUNNER=0 in the command if yours runs V1)",
            cfg.version, spec.architecture
        ));
    }
    if spec.vision_params > 0 {
        notes.push("the multimodal encoder's profiling pass is not modelled: the activation peak may be larger".into());
    }
    if let Some(s) = &cfg.speculative {
        if s.draft_model.is_some() || !s.method.contains("mtp") {
            notes.push(format!(
                "speculative decoding ({}): the drafter's weights and KV are not counted",
                s.method
            ));
        }
    }
    for u in &cfg.unknown_flags {
        notes.push(format!("flag not modelled: {u}"));
    }
    Outcome {
        workers,
        layouts,
        max_model_len,
        num_blocks,
        binding_stage: binding,
        problems,
        fails,
        pool_printed: pool_printed && fails,
        v0: cfg.runs_v0(),
        fit_len,
        settings,
        notes,
    }
}

fn render(
    spec: &ModelSpec,
    cfg: &VllmConfig,
    out: Outcome,
    suggestions: Vec<String>,
) -> MemoryPlan {
    let layout = &out.layouts[out.binding_stage.min(out.layouts.len() - 1)];
    let per_req = layout.blocks_per_request(out.max_model_len.max(1));
    let reported = !out.fails || out.pool_printed;
    let concurrency = if per_req == 0 || !reported {
        0.0
    } else if out.v0 {
        // V0 (executor_base.py `initialize_cache`): blocks × block_size / max_model_len
        (out.num_blocks * layout.block_size) as f64 / out.max_model_len.max(1) as f64
    } else {
        out.num_blocks as f64 / per_req as f64
    };
    let tokens = if !reported {
        0
    } else if out.v0 {
        // V0 prints blocks; its refusal names `num_gpu_blocks * block_size` tokens
        out.num_blocks * layout.block_size
    } else {
        match cfg.version.token_report() {
            TokenReport::ConcurrencyTimesLen => (concurrency * out.max_model_len as f64) as u64,
            // × dcp: "Multiplying the GPU KV cache size by the dcp_world_size" (PR #23734)
            TokenReport::BlocksPerGroup | TokenReport::BlocksPerLayerGroup => {
                let dcp = cfg.decode_context_parallel_size.max(1);
                out.num_blocks / layout.n_groups().max(1) * layout.block_size * dcp
            }
        }
    };
    let devices: Vec<DevicePlan> = out
        .workers
        .iter()
        .map(|w| {
            let mut d = DevicePlan {
                name: w.gpu.name.clone(),
                total_bytes: w.gpu.total_bytes,
                free_bytes: w.gpu.free_bytes,
                weights_bytes: w.weights,
                kv_cache_bytes: w.available,
                compute_bytes: w.profile.activation_bytes,
                cuda_graph_bytes: w.profile.cuda_graph_bytes,
                overhead_bytes: w.profile.non_torch_bytes,
                used_bytes: 0,
            };
            d.finish();
            d
        })
        .collect();
    let bytes_per_token: u64 = out
        .workers
        .iter()
        .map(|w| out.layouts[w.stage].bytes_per_token())
        .sum();
    // the largest length that fits with the other settings (for a failed KV check, vLLM's estimate)
    let max_model_len = out.fit_len;
    let mut settings = out.settings;
    settings.push(("max_model_len".into(), out.max_model_len.to_string()));
    MemoryPlan {
        engine: "vllm".into(),
        model: ModelRef {
            id: spec.id.clone(),
            architecture: spec.architecture.clone(),
            params: vramfit_model::layout::param_counts(spec).0,
        },
        verdict: if out.fails {
            Verdict::DoesNotFit
        } else {
            Verdict::Fits
        },
        host: HostPlan {
            weights_bytes: out.workers.iter().map(|w| w.offloaded).sum(),
            kv_cache_bytes: 0,
            compute_bytes: 0,
        },
        kv_cache: KvSummary {
            bytes: devices.iter().map(|d| d.kv_cache_bytes).sum(),
            tokens,
            bytes_per_token,
            // printed with two decimals (`Maximum concurrency ... %.2fx`)
            max_concurrency: (concurrency * 100.0).round() / 100.0,
        },
        devices,
        max_model_len,
        problems: out.problems,
        suggestions,
        settings,
        notes: out.notes,
    }
}
