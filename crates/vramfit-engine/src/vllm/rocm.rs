//! What vLLM on ROCm (AMD Instinct) holds beyond the CUDA path's weights.

use super::args::VllmConfig;
use super::quant::{LinearStorage, WeightScheme};
use std::ops::Range;
use vramfit_model::{FfnKind, ModelSpec};

/// Bytes ROCm adds to one rank's unquantized fused-MoE weights in a pipeline stage: after
/// loading, `UnquantizedFusedMoEMethod._maybe_pad_weight` re-allocates `w13` and `w2` with 256
/// bytes more per row whenever a row is a multiple of 512 bytes (`F.pad(weight, (0, 256 //
/// element_size))[..., :-pad]`, `VLLM_ROCM_MOE_PADDING` on by default; vllm
/// model_executor/layers/fused_moe/ unquantized_fused_moe_method.py, "better performance on
/// ROCm"). The padded copy replaces the parameter, so "Model loading took" counts it:
/// Qwen3-30B-A3B in bf16 on one MI300X holds 5.25 GiB more (its hidden 2048 and expert width
/// 768 are both 512-byte rows). Quantized experts take other methods and are not padded here;
/// `VLLM_ROCM_MOE_PADDING=0` in the command turns it off.
pub fn moe_padding_bytes(spec: &ModelSpec, cfg: &VllmConfig, layers: Range<u64>) -> u64 {
    let Some(m) = &spec.moe else {
        return 0;
    };
    if !cfg.rocm_moe_padding {
        return 0;
    }
    let scheme = WeightScheme::of(spec, cfg);
    let LinearStorage::Dense { bytes: b } =
        scheme.linear_for("model.layers.0.mlp.experts.w13", true)
    else {
        return 0;
    };
    let tp = cfg.tensor_parallel_size.max(1);
    // expert parallelism keeps whole experts on a rank, else every expert's width is split
    let (experts, width) = if cfg.enable_expert_parallel {
        (m.n_expert.div_ceil(tp), m.n_ff_exp)
    } else {
        (m.n_expert, m.n_ff_exp.div_ceil(tp))
    };
    let gates = if spec.arch.gated_mlp { 2 } else { 1 };
    let h = spec.n_embd;
    let padded = |rows: u64, row_elems: u64| {
        if (row_elems * b) % 512 == 0 {
            rows * 256
        } else {
            0
        }
    };
    // w13: [experts, gates·width, hidden]; w2: [experts, hidden, width]
    let per_layer = padded(experts * gates * width, h) + padded(experts * h, width);
    moe_layers_in(spec, layers) * per_layer
}

/// How many of the layers in `layers` (this rank's share) hold routed experts.
pub fn moe_layers_in(spec: &ModelSpec, layers: Range<u64>) -> u64 {
    spec.layers
        .iter()
        .skip(layers.start as usize)
        .take((layers.end - layers.start) as usize)
        .filter(|l| matches!(l.ffn, FfnKind::Moe))
        .count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmdline::Command;

    fn cfg(argv: &str) -> VllmConfig {
        let words: Vec<String> = argv.split_whitespace().map(str::to_string).collect();
        super::super::parse(&Command::parse(&words).unwrap(), Some("0.28.0")).unwrap()
    }

    fn spec(id: &str) -> ModelSpec {
        let m = vramfit_model::catalog::find_model(id).unwrap();
        vramfit_model::hf_config::spec_from_config(&m.id, &m.config).unwrap()
    }

    #[test]
    fn unquantized_moe_rows_grow_by_256_bytes() {
        let s = spec("Qwen/Qwen3-30B-A3B-Instruct-2507");
        let c = cfg("vllm serve Qwen/Qwen3-30B-A3B-Instruct-2507");
        // 48 layers × (128 × 2 × 768 rows of w13 + 128 × 2048 rows of w2) × 256 bytes
        let want = 48 * (128 * 2 * 768 + 128 * 2048) * 256;
        assert_eq!(moe_padding_bytes(&s, &c, 0..48), want);
        let off = cfg("VLLM_ROCM_MOE_PADDING=0 vllm serve Qwen/Qwen3-30B-A3B-Instruct-2507");
        assert_eq!(moe_padding_bytes(&s, &off, 0..48), 0);
        // a dense model has no fused-MoE weights
        let d = spec("meta-llama/Llama-3.1-8B-Instruct");
        assert_eq!(moe_padding_bytes(&d, &c, 0..32), 0);
    }
}
