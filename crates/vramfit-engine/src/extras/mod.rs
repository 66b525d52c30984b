//! What a serving command loads besides the model — LoRA adapter slots, a speculative draft
//! model, a vision projector — counted in the plan by each engine's own rule:
//!
//! - **LoRA, vLLM** (`--enable-lora --max-loras N --max-lora-rank R`): every LoRA-wrapped linear
//!   preallocates `N` slots at load, A `[N, R, in]` and B `[N, out, R]` per stacked slice, the
//!   input of row-parallel and the output of column-parallel layers split over TP
//!   (vllm/lora/layers/base_linear.py `create_lora_weights`), in the model dtype (`--lora-dtype
//!   auto`). The buffers exist before the memory profile, so they come out of the KV pool.
//! - **LoRA, SGLang** (`--enable-lora` / `--lora-paths`, `--max-loras-per-batch` 8,
//!   `--max-lora-rank`): the same shapes with `max_loras_per_batch` slots
//!   (sglang/srt/lora/mem_pool.py `get_lora_A_shape`/`get_lora_B_shape`), allocated before the
//!   token pool is sized, so they come out of it too.
//! - **LoRA, llama.cpp** (`--lora F`, `--lora-scaled F S`): the adapter GGUF's tensors, loaded
//!   beside the layers they adapt (common.cpp `common_init_from_params` →
//!   `llama_adapter_lora_init`).
//! - **Draft, llama.cpp** (`-md`/`-hfd`, `-ngld`, `-cd`, `-ctkd`/`-ctvd`): a second model with
//!   its own context of `-cd` cells, by default the target's per-slot context (tools/server
//!   `load_model`: `n_ctx = speculative.n_ctx == 0 ? n_ctx / n_parallel : speculative.n_ctx`),
//!   its layers on the GPU as `-ngld` says (all by default).
//! - **Draft, vLLM** (`--speculative-config '{"model": ...}'`) and **SGLang**
//!   (`--speculative-draft-model-path`): the draft's weights load beside the target's and its
//!   layers take KV in the same pool, so the pool holds fewer tokens. MTP heads that ship in the
//!   checkpoint are counted by the vLLM model itself.
//! - **Vision projector, llama.cpp** (`--mmproj F`; `-hf` fetches the repo's projector unless
//!   `--no-mmproj`): the projector GGUF's tensors on the GPU unless `--no-mmproj-offload`
//!   (tools/mtmd/clip.cpp `clip_model_loader`), and the compute buffer its warm-up reserves
//!   for one image (`clip.rs`: from the projector's GGUF `clip.vision.*` keys or the model's
//!   `vision_config`).
//!
//! - **Multimodal profile, vLLM** (`--limit-mm-per-prompt`, `--skip-mm-profiling`): the
//!   encoder's dummy image batch in the memory profile (`mm_profile.rs`): what it adds over the
//!   text batch's peak comes out of the KV pool.
//!
//! [`apply`] adds them to a plan: for the engines that size their KV pool from what is left
//! (vLLM, SGLang) the pool shrinks and the verdict follows the engine's start-up check; for
//! llama.cpp and Ollama they add to the device's use.

pub mod clip;
mod collect;
mod lora;
pub mod mm_profile;

pub use collect::{collect, Context, Loaded, MmProfile};
pub use lora::lora_slot_bytes;

use crate::plan::{MemoryPlan, Verdict};

/// One extra allocation.
#[derive(Debug, Clone, PartialEq)]
pub struct Extra {
    /// what it is, for people: "LoRA slots (--max-loras 4, rank 64)"
    pub what: String,
    /// bytes on each GPU the engine uses (one entry per device of the plan; missing = 0)
    pub device_bytes: Vec<u64>,
    /// bytes in host RAM
    pub host_bytes: u64,
    /// bytes of KV cache per token of context that the extra adds to every cached token
    /// (a draft model's layers); 0 for weights-only extras
    pub kv_bytes_per_token: u64,
    /// activation memory in the engine's profile (counted as compute, not weights)
    pub activation: bool,
    /// where the rule comes from (engine source file)
    pub source: &'static str,
}

/// How the engine treats memory it did not plan for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// the KV pool is sized from what is left after load (vLLM, SGLang)
    KvPool,
    /// every buffer is allocated on its own; the device must hold them all (llama.cpp, Ollama)
    Additive,
}

/// Add `extras` to `plan`. `configured_len`: the context every request must fit in (vLLM
/// `max_model_len`, SGLang `context_length`), for the pool engines' start-up check.
pub fn apply(plan: &mut MemoryPlan, extras: &[Extra], budget: Budget, configured_len: Option<u64>) {
    if extras.is_empty() {
        return;
    }
    let old_kv: i64 = plan.devices.iter().map(|d| d.kv_cache_bytes).sum();
    for e in extras {
        let total: u64 = e.device_bytes.iter().sum();
        plan.notes.push(format!(
            "{}: {} on the GPU{}{} ({})",
            e.what,
            gib(total),
            if e.host_bytes > 0 {
                format!(", {} in host RAM", gib(e.host_bytes))
            } else {
                String::new()
            },
            if e.kv_bytes_per_token > 0 {
                format!(", {} KiB of KV per token", e.kv_bytes_per_token / 1024)
            } else {
                String::new()
            },
            e.source
        ));
        for (d, b) in plan.devices.iter_mut().zip(&e.device_bytes) {
            if e.activation {
                d.compute_bytes += b;
            } else {
                d.weights_bytes += b;
            }
            if budget == Budget::KvPool {
                d.kv_cache_bytes -= *b as i64;
            }
        }
        plan.host.weights_bytes += e.host_bytes;
    }
    let extra_per_token: u64 = extras.iter().map(|e| e.kv_bytes_per_token).sum();
    match budget {
        Budget::KvPool => shrink_pool(plan, old_kv, extra_per_token, configured_len),
        Budget::Additive => {
            // a draft's KV is allocated for its own context: counted in device_bytes already
            for d in plan.devices.iter_mut() {
                d.finish();
            }
            let over: Vec<String> = plan
                .devices
                .iter()
                .enumerate()
                .filter(|(_, d)| d.used_bytes > d.free_bytes)
                .map(|(i, d)| {
                    format!(
                        "GPU {i} needs {} of {} free",
                        gib(d.used_bytes),
                        gib(d.free_bytes)
                    )
                })
                .collect();
            if !over.is_empty() && plan.verdict == Verdict::Fits {
                plan.verdict = Verdict::DoesNotFit;
                plan.problems.push(format!(
                    "with {}: {}",
                    extras
                        .iter()
                        .map(|e| e.what.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    over.join("; ")
                ));
            }
        }
    }
}

fn shrink_pool(
    plan: &mut MemoryPlan,
    old_kv: i64,
    extra_per_token: u64,
    configured_len: Option<u64>,
) {
    let new_kv: i64 = plan.devices.iter().map(|d| d.kv_cache_bytes).sum();
    for d in plan.devices.iter_mut() {
        d.finish();
    }
    let per_token = plan.kv_cache.bytes_per_token.max(1);
    let ratio = if old_kv > 0 {
        new_kv.max(0) as f64 / old_kv as f64
    } else {
        0.0
    };
    let per_token_ratio = per_token as f64 / (per_token + extra_per_token) as f64;
    let tokens = (plan.kv_cache.tokens as f64 * ratio * per_token_ratio).floor() as u64;
    let scale = if plan.kv_cache.tokens > 0 {
        tokens as f64 / plan.kv_cache.tokens as f64
    } else {
        0.0
    };
    plan.kv_cache.bytes = new_kv.max(0);
    plan.kv_cache.tokens = tokens;
    plan.kv_cache.max_concurrency *= scale;
    plan.max_model_len = plan.max_model_len.min(tokens);
    if plan.verdict != Verdict::Fits {
        return;
    }
    if new_kv <= 0 {
        plan.verdict = Verdict::DoesNotFit;
        plan.problems
            .push("the extras leave no memory for the KV cache: the engine stops at start".into());
        return;
    }
    if let Some(len) = configured_len {
        // vLLM's check is one request's blocks against the pool (kv_cache_utils.py
        // `check_enough_kv_cache_memory`): the concurrency at that length, which for sliding-window
        // models is not the printed token count over the length; the token count when none is known
        let short = if plan.kv_cache.max_concurrency > 0.0 {
            plan.kv_cache.max_concurrency < 1.0
        } else {
            tokens < len
        };
        if short {
            plan.verdict = Verdict::DoesNotFit;
            plan.problems.push(format!(
                "with the extras the KV pool holds {tokens} tokens, fewer than the {len} one request may use: the engine stops at start"
            ));
            plan.suggestions.push(format!(
                "lower the context to {tokens} tokens or fewer, or shrink the extras"
            ));
        }
    }
}

fn gib(b: u64) -> String {
    if b < 1 << 30 {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    } else {
        format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64)
    }
}

/// `--flag value` / `--flag=value` (last one wins) among `args`, for any of `names`.
pub fn flag<'a>(args: &'a [String], names: &[&str]) -> Option<&'a str> {
    let mut found = None;
    for (i, a) in args.iter().enumerate() {
        for n in names {
            if a == n {
                found = args.get(i + 1).map(String::as_str);
            } else if let Some(v) = a.strip_prefix(n).and_then(|r| r.strip_prefix('=')) {
                found = Some(v);
            }
        }
    }
    found
}

/// Every value of a repeatable flag (`--lora A --lora B`).
pub fn flag_all<'a>(args: &'a [String], names: &[&str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        for n in names {
            if a == n {
                if let Some(v) = args.get(i + 1) {
                    out.push(v.as_str());
                }
            } else if let Some(v) = a.strip_prefix(n).and_then(|r| r.strip_prefix('=')) {
                out.push(v);
            }
        }
    }
    out
}

/// Whether a boolean flag is on (`--x`, `--x=true`).
pub fn has(args: &[String], names: &[&str]) -> bool {
    args.iter().any(|a| {
        names
            .iter()
            .any(|n| a == n || a.strip_prefix(n).is_some_and(|r| r == "=true" || r == "=1"))
    })
}

#[cfg(test)]
mod tests;
