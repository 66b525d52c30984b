//! Feed-forward tensors: dense MLPs and mixtures of experts. The converter stacks the routed
//! experts of a layer into one 3-D tensor per projection (`ffn_*_exps`,
//! `[n_embd, n_ff_exp, n_expert]`), since llama.cpp #6387 (2024-04); shapes from llama.cpp
//! @007dbbf `create_tensor` calls.

use super::families::Style;
use super::Builder;
use crate::spec::{FfnKind, LayerSpec, ModelSpec};

pub(crate) fn build(b: &mut Builder, spec: &ModelSpec, st: &Style, il: u64, l: &LayerSpec) {
    match l.ffn {
        FfnKind::Dense { n_ff } => dense(b, spec.n_embd, st, il, n_ff),
        FfnKind::Moe => moe(b, spec, st, il),
        FfnKind::None => {}
    }
}

fn dense(b: &mut Builder, n_embd: u64, st: &Style, il: u64, n_ff: u64) {
    let up_rows = if st.fused_gate_up {
        n_ff.saturating_mul(2)
    } else {
        n_ff
    };
    if st.gated && !st.fused_gate_up {
        b.blk(il, "ffn_gate", &[n_embd, n_ff]);
        if st.mlp_bias {
            b.blk_bias(il, "ffn_gate", &[n_ff]);
        }
    }
    b.blk(il, "ffn_up", &[n_embd, up_rows]);
    if st.mlp_bias {
        b.blk_bias(il, "ffn_up", &[up_rows]);
    }
    b.blk(il, "ffn_down", &[n_ff, n_embd]);
    if st.mlp_bias {
        b.blk_bias(il, "ffn_down", &[n_embd]);
    }
}

fn moe(b: &mut Builder, spec: &ModelSpec, st: &Style, il: u64) {
    let Some(m) = &spec.moe else {
        return;
    };
    let n_embd = spec.n_embd;
    let n_expert = m.n_expert;
    let n_ff = m.n_ff_exp;

    // the router stays F32 in converted files (convert_hf_to_gguf.py extra_f32 list)
    b.blk(il, "ffn_gate_inp", &[n_embd, n_expert]);
    if st.moe_bias {
        b.blk_bias(il, "ffn_gate_inp", &[n_expert]);
    }
    // DeepSeek V3 / GLM-4.5 selection bias `e_score_correction_bias` -> `exp_probs_b.bias`
    // (llama-arch.cpp LLM_TENSOR_FFN_EXP_PROBS_B)
    if spec.arch.expert_bias {
        b.blk_bias(il, "exp_probs_b", &[n_expert]);
    }
    if st.gated {
        b.blk(il, "ffn_gate_exps", &[n_embd, n_ff, n_expert]);
    }
    b.blk(il, "ffn_up_exps", &[n_embd, n_ff, n_expert]);
    b.blk(il, "ffn_down_exps", &[n_ff, n_embd, n_expert]);
    if st.moe_bias {
        // gpt-oss expert biases (llama-model.cpp LLM_ARCH_OPENAI_MOE)
        if st.gated {
            b.blk_bias(il, "ffn_gate_exps", &[n_ff, n_expert]);
        }
        b.blk_bias(il, "ffn_up_exps", &[n_ff, n_expert]);
        b.blk_bias(il, "ffn_down_exps", &[n_embd, n_expert]);
    }

    let n_ff_sh = if m.n_ff_shexp > 0 {
        m.n_ff_shexp
    } else {
        m.n_expert_shared.saturating_mul(m.n_ff_exp)
    };
    if n_ff_sh > 0 {
        if st.shexp_gate {
            // Qwen2-MoE / Qwen3-Next sigmoid gate on the shared expert, `[n_embd]`
            b.blk(il, "ffn_gate_inp_shexp", &[n_embd]);
        }
        if st.gated {
            b.blk(il, "ffn_gate_shexp", &[n_embd, n_ff_sh]);
        }
        b.blk(il, "ffn_up_shexp", &[n_embd, n_ff_sh]);
        b.blk(il, "ffn_down_shexp", &[n_ff_sh, n_embd]);
    }
}
