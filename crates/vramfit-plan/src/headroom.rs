//! Headroom: memory the solver leaves free on each GPU beyond what the engine model predicts,
//! sized from the model's measured error rather than a flat allowance.
//!
//! The errors are those of `vramfit check` against the real engine logs of
//! ../shared/data/dev (`../shared/bin/eval-check`, the same cases as
//! crates/vramfit/tests/accuracy.rs), taken at the 90th percentile of the cases where the
//! prediction was *below* the measurement (an over-prediction only wastes memory):
//!
//! - llama.cpp: GPU weight buffers p90 under-prediction `LLAMA_WEIGHTS_P90` of the weights on
//!   the device; compute buffers `LLAMA_COMPUTE_P90_BYTES`; the KV cache is exact (0.5 %
//!   class) and the CUDA context is already in the plan (`llamacpp::CUDA_CONTEXT_BYTES`).
//! - vLLM: the KV pool `VLLM_KV_P90_BYTES` (vLLM sizes the pool from what it measures, so an
//!   error shows up as a pool smaller than planned and a `--max-model-len` that no longer
//!   starts); it is taken out of `--gpu-memory-utilization`.
//! - SGLang: the token pool `SGLANG_POOL_OVER`, relative. SGLang sizes its pool from the free
//!   memory it measures at start (`pool = free × --mem-fraction-static − weights`), so the
//!   solver plans against free memory less `headroom ÷ fraction` per GPU: on the card itself
//!   the pool then comes out that much larger than planned, which covers an over-prediction
//!   of that size, and the planned `--context-length` still fits one full request.
//! - transformers: no dev log; `TRANSFORMERS_P90_BYTES` comes from 46 `generate` runs measured
//!   on an H100 for the purpose (the fixtures named at the constant).

use crate::plan::Setting;
use vramfit_engine::Hardware;
use vramfit_model::units::{fmt_bytes, MIB};
use vramfit_model::WeightSet;

/// p90 of (measured − predicted) / measured over the 12 llama.cpp GPU weight comparisons, an
/// over-prediction counted as 0 (eval-check 2026-11-22 on the 21 dev cases: 1.9e-6; the
/// largest under-prediction was 3.7 KiB). The held-out tolerance promised is 5 %.
pub const LLAMA_WEIGHTS_P90: f64 = 1.9e-6;
/// p90 of measured − predicted compute buffer bytes over the 17 llama.cpp compute comparisons,
/// an over-prediction counted as 0 (same run: 48.0 MiB; largest 64.1 MiB).
pub const LLAMA_COMPUTE_P90_BYTES: u64 = 48 * MIB;
/// p90 of predicted − measured vLLM KV pool bytes over the 4 vLLM pool comparisons, an
/// under-prediction counted as 0 (same run: with 4 values the p90 is the largest, 206.8 MiB).
pub const VLLM_KV_P90_BYTES: u64 = 207 * MIB;

/// (predicted − measured) / measured of the SGLang token pool on the one SGLang log with a
/// pool, vllm-log-024 (Qwen3-235B-A22B-FP8, TP4 on H100 80GB, fraction 0.93): 370,904
/// predicted vs 367,404 tokens (`cargo test -p vramfit-engine --test sglang_plan vllm_log_024
/// -- --nocapture` prints both), +0.95 %, taken up to 1.0 %. With one record its error is the
/// p90; a second SGLang log would make this a percentile. Relative, not bytes: the error of one
/// TP4 run of a 235B model says nothing of its size in bytes on a 24 GB card.
pub const SGLANG_POOL_OVER: f64 = 0.010;

/// Bytes kept free per GPU, and the reason in words.
#[derive(Debug, Clone, PartialEq)]
pub struct Headroom {
    pub bytes: Vec<u64>,
    pub why: String,
}

impl Headroom {
    pub fn setting(&self) -> Setting {
        Setting {
            knob: "headroom".into(),
            value: self
                .bytes
                .iter()
                .map(|b| fmt_bytes(*b))
                .collect::<Vec<_>>()
                .join(","),
            why: self.why.clone(),
        }
    }
}

/// llama.cpp: per GPU, the weight error on its share of the GGUF plus the compute error, and
/// never less than llama.cpp's own `--fit-target` ([`vramfit_engine::margin`]).
pub fn llamacpp(w: &WeightSet, hw: &Hardware) -> Headroom {
    let n = hw.gpus.len().max(1) as u64;
    let share = w.total_bytes() / n;
    let measured: Vec<u64> = hw
        .gpus
        .iter()
        .map(|g| {
            let on_gpu = share.min(g.free_bytes);
            (on_gpu as f64 * LLAMA_WEIGHTS_P90) as u64 + LLAMA_COMPUTE_P90_BYTES
        })
        .collect();
    let bytes = measured
        .iter()
        .map(|m| vramfit_engine::margin::margin("llama.cpp", *m))
        .collect();
    Headroom {
        bytes,
        why: format!(
            "kept free per GPU: the larger of llama.cpp's own --fit-target default ({}, common/fit.cpp) and the p90 under-prediction on the dev logs ({:.4} % of its weights + {})",
            fmt_bytes(vramfit_engine::margin::LLAMACPP_FIT_TARGET_BYTES),
            LLAMA_WEIGHTS_P90 * 100.0,
            fmt_bytes(LLAMA_COMPUTE_P90_BYTES)
        ),
    }
}

/// vLLM: the KV pool error, per GPU.
pub fn vllm(hw: &Hardware) -> Headroom {
    Headroom {
        bytes: vec![VLLM_KV_P90_BYTES; hw.gpus.len()],
        why: format!(
            "the release default less {} per GPU, the p90 over-prediction of the KV pool on the dev logs",
            fmt_bytes(VLLM_KV_P90_BYTES)
        ),
    }
}

/// SGLang: per GPU, `SGLANG_POOL_OVER` of the token pool planned there (`pool_bytes`, at the
/// fraction `fraction`), as free memory left out of the plan: `pool × 1.0 % ÷ fraction`, so the
/// pool SGLang measures on the card is that 1.0 % larger than the plan's. GPUs past the end
/// of `pool_bytes` (not used by the launch) keep nothing.
pub fn sglang(hw: &Hardware, pool_bytes: &[u64], fraction: f64) -> Headroom {
    let bytes = (0..hw.gpus.len())
        .map(|i| {
            let pool = pool_bytes.get(i).copied().unwrap_or(0) as f64;
            ((pool * SGLANG_POOL_OVER / fraction.max(0.05)).ceil() as u64).div_ceil(MIB) * MIB
        })
        .collect();
    Headroom {
        bytes,
        why: format!(
            "planned against free memory less this per GPU: SGLang sizes its token pool from the free memory it measures, so on the card the pool comes out {:.1} % larger than planned, the over-prediction of the SGLang pool on the dev logs (vllm-log-024: +0.95 %)",
            SGLANG_POOL_OVER * 100.0
        ),
    }
}

/// transformers: per GPU, the p90 under-prediction of `vramfit check` against `generate` runs.
pub fn transformers(hw: &Hardware) -> Headroom {
    Headroom {
        bytes: vec![TRANSFORMERS_P90_BYTES; hw.gpus.len()],
        why: format!(
            "kept free per GPU: {}, the p90 under-prediction of peak memory on measured transformers generate runs",
            fmt_bytes(TRANSFORMERS_P90_BYTES)
        ),
    }
}

/// p90 (nearest rank) of measured − predicted peak GPU memory of `generate`, an
/// over-prediction counted as 0, over the 46 runs measured on one H100 (torch 2.11,
/// transformers 5.17; random-initialised models built from the catalog configs; peak = max
/// reserved + memory outside the allocator): the 37 of
/// crates/vramfit/tests/fixtures/transformers_h100.jsonl (default allocator) and the 9 of
/// transformers_h100_expandable.jsonl (`expandable_segments:True`, as the plans set). The
/// largest under-predictions are gemma-3-1b's (1021, 632, 626 MiB: its sliding-window masks),
/// then 440 and 438 MiB. The engine model was fitted on the same runs, so this is optimistic
/// for models unlike them.
pub const TRANSFORMERS_P90_BYTES: u64 = 438 * MIB;

/// A fixed amount per GPU, as the user asked (`--headroom`).
pub fn fixed(hw: &Hardware, bytes: u64) -> Headroom {
    Headroom {
        bytes: vec![bytes; hw.gpus.len()],
        why: format!(
            "kept free per GPU: {} as asked with --headroom",
            fmt_bytes(bytes)
        ),
    }
}

/// The margin `vramfit check` reports against for an engine's launch, per GPU: the same policy
/// as the plans (the engine model's measured p90 error, never below what the engine keeps itself,
/// [`vramfit_engine::margin`]). SGLang's is relative to its pool; 1 % of `pool_bytes` here.
pub fn policy_bytes(engine: &str, pool_bytes: u64) -> u64 {
    let measured = match engine {
        "llama.cpp" | "ollama" => LLAMA_COMPUTE_P90_BYTES,
        "vllm" => VLLM_KV_P90_BYTES,
        "sglang" => (pool_bytes as f64 * SGLANG_POOL_OVER) as u64,
        "transformers" => TRANSFORMERS_P90_BYTES,
        _ => 0,
    };
    vramfit_engine::margin::margin(engine, measured)
}
