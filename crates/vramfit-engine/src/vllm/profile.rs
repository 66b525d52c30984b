//! What vLLM's start-up profiling measures besides the weights: the activation peak of the
//! dummy forward and sampler run, non-torch memory, and the CUDA-graph pool.
//!
//! `profile_run` (vllm/v1/worker/gpu_model_runner.py) runs one forward of
//! `max_num_batched_tokens` tokens spread over `min(max_num_batched_tokens, max_num_seqs)`
//! requests, then the sampler on one row per request (`[num_reqs, vocab]` logits in fp32 plus
//! the top-k/top-p temporaries). The torch peak of that run is the activation peak; it does not
//! depend on `max_model_len`. The constants below that are not tensor shapes are calibrated on the
//! dev logs in ../shared/data/dev/vllm_logs.dev.jsonl (see each constant).

use std::ops::Range;
use vramfit_model::units::MIB;
use vramfit_model::{AttentionKind, FfnKind, ModelSpec};

/// Sampler bytes per (request × vocab) element: fp32 logits, temperature-scaled copy, softmax
/// probabilities, sorted values + int64 indices for top-k/top-p, the random draw.
/// Calibrated on the dev logs whose budget, weights and pool are known (vllm-log-005, -009, -012,
/// -017 and the tokens of -006): 36 leaves every pool 0–5 % high, 40 centres them (−1 % to +3 %).
pub const SAMPLER_BYTES_PER_ELEM: u64 = 40;

/// Non-torch memory created during profiling on one GPU (cuBLAS/attention workspaces; NCCL
/// buffers are allocated before the baseline snapshot). Calibrated: consumed − weights in records
/// vllm-log-005 (0.26–0.30 GiB), -042 (0.47), -043 (0.23); TP runs print 0.21 (research record
/// 003, TP8) and 0.13 (vllm-log-022, TP4), so no per-TP term.
pub const NON_TORCH_BYTES: u64 = 256 * MIB;

/// CUDA-graph pool per layer and captured token, as multiples of the layer's per-token buffers:
/// the hidden state (`hidden × 2` bytes) and, for MoE layers, the fused-MoE caches
/// (`top_k × (3·n_ff_exp/tp + hidden) × 2` bytes). Calibrated on the graph pools the logs print at
/// max capture size 512: vllm-log-005 (Llama-3.1-8B: 0.23 GiB, model 0.25), -037 (Gemma-3-27B:
/// 1.02, model 0.64), research record 003 (Qwen3-235B-A22B-FP8 TP8: 3.45, model 3.3).
pub const GRAPH_HIDDEN_FACTOR: f64 = 2.0;
pub const GRAPH_MOE_FACTOR: f64 = 0.8;

/// The fitted constants above, together, so that the accuracy harness can judge each on logs it
/// was not fitted on (leave-one-log-out: crates/vramfit/tests/accuracy_cv.rs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Constants {
    pub sampler_bytes_per_elem: f64,
    pub non_torch_bytes: u64,
    pub graph_hidden_factor: f64,
    pub graph_moe_factor: f64,
}

impl Constants {
    /// The values in force.
    pub const FITTED: Constants = Constants {
        sampler_bytes_per_elem: SAMPLER_BYTES_PER_ELEM as f64,
        non_torch_bytes: NON_TORCH_BYTES,
        graph_hidden_factor: GRAPH_HIDDEN_FACTOR,
        graph_moe_factor: GRAPH_MOE_FACTOR,
    };
}

thread_local! {
    static OVERRIDE: std::cell::Cell<Option<Constants>> = const { std::cell::Cell::new(None) };
}

/// Run `f` with other constants on this thread (the cross-validation harness refits them).
pub fn with_constants<R>(c: Constants, f: impl FnOnce() -> R) -> R {
    let old = OVERRIDE.with(|o| o.replace(Some(c)));
    let r = f();
    OVERRIDE.with(|o| o.set(old));
    r
}

fn constants() -> Constants {
    OVERRIDE.with(|o| o.get()).unwrap_or(Constants::FITTED)
}

/// What profiling sees on one worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Profile {
    /// torch peak increase of the dummy forward + sampler
    pub activation_bytes: u64,
    pub non_torch_bytes: u64,
    /// CUDA-graph pool (the estimate vLLM charges from v0.21; what capture takes before)
    pub cuda_graph_bytes: u64,
}

/// Inputs of the profile that come from the scheduler settings.
#[derive(Debug, Clone, Copy)]
pub struct ProfileInputs {
    pub max_num_batched_tokens: u64,
    pub max_num_seqs: u64,
    pub tp: u64,
    pub is_last_stage: bool,
    pub cuda_graphs: bool,
    /// bytes per activation element (the model dtype)
    pub act_bytes: u64,
    /// `--enable-expert-parallel`: experts are whole on each rank, so the fused-MoE buffers hold
    /// the full intermediate size (FusedMoEParallelConfig: the MoE's tp_size becomes 1 under EP)
    pub expert_parallel: bool,
    /// Model Runner V2's lean profile ([`super::runner::lean_profile`]): it samples without
    /// sampling parameters, so only the LM head's logits are allocated
    pub model_runner_v2: bool,
}

/// The activation peak, non-torch memory and CUDA-graph pool of one pipeline stage.
pub fn profile(spec: &ModelSpec, layers: Range<u64>, p: ProfileInputs) -> Profile {
    let c = constants();
    let t = p.max_num_batched_tokens;
    let e = spec.n_embd;
    let b = p.act_bytes;
    let tp = p.tp.max(1);
    // hidden states and the residual stream live through the whole forward
    let residual = 2 * t * e * b;
    let mut layer_peak = 0u64;
    let layer_specs: Vec<_> = spec
        .layers
        .iter()
        .skip(layers.start as usize)
        .take((layers.end - layers.start) as usize)
        .collect();
    for l in &layer_specs {
        let attn = match &l.attention {
            AttentionKind::Mla {
                kv_lora_rank,
                rope_dim,
                nope_dim,
                v_head_dim,
            } => {
                let heads = l.n_head.div_ceil(tp);
                t * (heads * (nope_dim + rope_dim + v_head_dim) + kv_lora_rank + rope_dim) * b
                    + t * heads * (nope_dim + v_head_dim) * b
            }
            AttentionKind::None => 0,
            AttentionKind::Recurrent(_) => t * 5 * e / tp * b + t * 2 * e / tp * b,
            _ => {
                let q = l.n_head.div_ceil(tp) * l.head_dim_k;
                let kv = (l.n_head_kv / tp).max(1) * (l.head_dim_k + l.head_dim_v);
                // qkv output, attention output, o_proj output
                t * (q + kv) * b + t * l.n_head.div_ceil(tp) * l.head_dim_v * b + t * e * b
            }
        };
        let gates = if spec.arch.gated_mlp { 2 } else { 1 };
        let ffn = match (&l.ffn, &spec.moe) {
            (FfnKind::Dense { n_ff }, _) => {
                let n = n_ff.div_ceil(tp);
                // gate_up output, activation output, down output
                t * gates * n * b + t * n * b + t * e * b
            }
            (FfnKind::Moe, Some(m)) => {
                let n = m.n_ff_exp.div_ceil(if p.expert_parallel { 1 } else { tp });
                let k = m.n_expert_used;
                // fused_moe intermediate caches: [T, topk, 2N], [T·topk, N], [T, topk, H];
                // router logits fp32 [T, E]
                t * k * (gates * n + n + e) * b
                    + t * m.n_expert * 4
                    + t * (m.n_ff_shexp.div_ceil(tp)) * (gates + 1) * b
            }
            _ => 0,
        };
        layer_peak = layer_peak.max(attn.max(ffn));
    }
    let forward = residual + layer_peak;
    let sampler = if p.is_last_stage && p.model_runner_v2 {
        // `[num_reqs, vocab]` logits in the model dtype, nothing else (runner.rs)
        let num_reqs = t.min(p.max_num_seqs);
        residual / 2 + num_reqs * spec.n_vocab * b
    } else if p.is_last_stage {
        let num_reqs = t.min(p.max_num_seqs);
        // the sampled rows of hidden state stay alive; logits are [num_reqs, vocab]
        residual / 2 + (num_reqs as f64 * spec.n_vocab as f64 * c.sampler_bytes_per_elem) as u64
    } else {
        0
    };
    let non_torch = c.non_torch_bytes;
    let cuda_graph_bytes = if p.cuda_graphs {
        // capture sizes [1, 2, 4, 8, 16, ...] up to min(2·max_num_seqs, 512)
        // (vllm/config/compilation.py default max_cudagraph_capture_size)
        let max_capture = (2 * p.max_num_seqs).clamp(1, 512).min(t.max(1));
        let per_token: f64 = layer_specs
            .iter()
            .map(|l| {
                let moe = match (&l.ffn, &spec.moe) {
                    (FfnKind::Moe, Some(m)) => {
                        c.graph_moe_factor
                            * (m.n_expert_used * (3 * m.n_ff_exp.div_ceil(tp) + e) * 2) as f64
                    }
                    _ => 0.0,
                };
                c.graph_hidden_factor * (e * 2) as f64 + moe
            })
            .sum();
        (per_token * max_capture as f64) as u64
    } else {
        0
    };
    Profile {
        activation_bytes: forward.max(sampler),
        non_torch_bytes: non_torch,
        cuda_graph_bytes,
    }
}
