//! Which template a model uses, chosen by its HF `model_type`, and the per-family details that
//! decide norms, fused projections and biases. Shapes follow llama.cpp @007dbbf
//! `src/llama-model.cpp` / `src/models/<arch>.cpp` (`create_tensor` calls).

use super::{attention, ffn, recurrent, Builder};
use crate::spec::{AttentionKind, LayerSpec, ModelSpec};

/// The tensor-layout family of a model (roughly one llama.cpp `LLM_ARCH_*` each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// llama, mistral, mixtral, qwen2(_moe), qwen3(_moe), granite(moe), llama4 and unknown
    /// decoder-only models: pre-norm, split Q/K/V, SwiGLU MLP or MoE.
    Llama,
    Gemma,
    /// Gemma 4: Gemma 3's block with per-layer widths, per-layer embeddings and a MoE beside
    /// the MLP (built by `layout/gemma4.rs`)
    Gemma4,
    Glm4,
    ChatGlm,
    Phi3,
    GptNeox,
    Falcon,
    Cohere,
    Olmo2,
    Starcoder2,
    Deepseek,
    Glm4Moe,
    GptOss,
    Qwen3Next,
    FalconH1,
    Jamba,
    NemotronH,
}

impl Family {
    /// The family for a spec's `model_type` (generic llama-like when unknown).
    pub fn of(spec: &ModelSpec) -> Family {
        match spec.model_type.as_str() {
            "gemma" | "gemma2" | "gemma3" | "gemma3_text" => Family::Gemma,
            m if crate::hf_config::gemma4::is_gemma4(m) => Family::Gemma4,
            "glm4" => Family::Glm4,
            "chatglm" => Family::ChatGlm,
            "phi3" => Family::Phi3,
            "gpt_neox" => Family::GptNeox,
            "falcon" => Family::Falcon,
            "cohere" | "cohere2" => Family::Cohere,
            "olmo2" => Family::Olmo2,
            "starcoder2" => Family::Starcoder2,
            // GLM-4.7-Flash and GLM-5 are DeepSeek MLA/MoE stacks (llama.cpp converts
            // Glm4MoeLiteForCausalLM as deepseek2)
            "deepseek_v2" | "deepseek_v3" | "deepseek_v32" | "kimi_k2" | "kimi_k25"
            | "glm4_moe_lite" | "glm_moe_dsa" => Family::Deepseek,
            "glm4_moe" => Family::Glm4Moe,
            "gpt_oss" => Family::GptOss,
            // Qwen3.5/3.6 split Qwen3-Next's in_proj_qkvz/in_proj_ba into in_proj_qkv/z/b/a:
            // the same elements (vLLM qwen3_5.py reuses the Qwen3-Next decoder layer)
            "qwen3_next" | "qwen3_5" | "qwen3_5_text" | "qwen3_5_moe" | "qwen3_5_moe_text" => {
                Family::Qwen3Next
            }
            "falcon_h1" => Family::FalconH1,
            "jamba" => Family::Jamba,
            "nemotron_h" => Family::NemotronH,
            _ => Family::Llama,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Family::Llama => "llama",
            Family::Gemma => "gemma",
            Family::Gemma4 => "gemma4",
            Family::Glm4 => "glm4",
            Family::ChatGlm => "chatglm",
            Family::Phi3 => "phi3",
            Family::GptNeox => "gptneox",
            Family::Falcon => "falcon",
            Family::Cohere => "command-r",
            Family::Olmo2 => "olmo2",
            Family::Starcoder2 => "starcoder2",
            Family::Deepseek => "deepseek2",
            Family::Glm4Moe => "glm4moe",
            Family::GptOss => "gpt-oss",
            Family::Qwen3Next => "qwen3next",
            Family::FalconH1 => "falcon-h1",
            Family::Jamba => "jamba",
            Family::NemotronH => "nemotron_h",
        }
    }
}

/// How a per-head Q/K norm is shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QkNorm {
    None,
    /// `[head_dim]`, shared by all heads (Qwen3, Gemma 3, GLM-4.5, Qwen3-Next)
    PerHead,
    /// one row per head, `[head_dim, n_head]` (Command R+ `use_qk_norm`)
    PerHeadRows,
    /// across all heads, `[n_head * head_dim]` (OLMo 2)
    Full,
}

/// The per-family knobs the shared builders read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Style {
    /// the norm before attention (`attn_norm`), absent in OLMo 2
    pub attn_norm: bool,
    /// the name of the norm before the FFN (`ffn_norm`, or `post_attention_norm` in GLM-4.5,
    /// gpt-oss and Qwen3-Next), `None` for parallel blocks sharing `attn_norm`
    pub ffn_norm: Option<&'static str>,
    /// `post_attention_norm` after attention and `post_ffw_norm` after the FFN
    pub post_norms: bool,
    /// LayerNorm with a bias (`*.bias` beside every norm weight)
    pub norm_bias: bool,
    /// one `attn_qkv` matrix instead of `attn_q`/`attn_k`/`attn_v`
    pub fused_qkv: bool,
    /// the MLP has a gate projection (SwiGLU / GeGLU)
    pub gated: bool,
    /// gate and up stored together in `ffn_up` (`[n_embd, 2*n_ff]`, no `ffn_gate`)
    pub fused_gate_up: bool,
    pub qk_norm: QkNorm,
    pub qkv_bias: bool,
    pub o_bias: bool,
    pub mlp_bias: bool,
    /// `attn_q` also produces the output gate (`[n_embd, 2 * n_head * head_dim]`, Qwen3-Next)
    pub gated_q: bool,
    /// `attn_sinks` `[n_head]` per layer (gpt-oss)
    pub attn_sinks: bool,
    /// MoE router and experts carry biases (gpt-oss)
    pub moe_bias: bool,
    /// a `[n_embd]` gate on the shared expert (`ffn_gate_inp_shexp`: Qwen2-MoE, Qwen3-Next)
    pub shexp_gate: bool,
}

fn style(spec: &ModelSpec, family: Family) -> Style {
    let a = &spec.arch;
    let base = Style {
        attn_norm: true,
        ffn_norm: if a.parallel_block {
            None
        } else {
            Some("ffn_norm")
        },
        post_norms: a.post_norms,
        norm_bias: a.norm_bias,
        fused_qkv: false,
        gated: true,
        fused_gate_up: false,
        qk_norm: if a.qk_norm {
            QkNorm::PerHead
        } else {
            QkNorm::None
        },
        qkv_bias: a.qkv_bias,
        o_bias: a.o_bias,
        mlp_bias: a.mlp_bias,
        gated_q: false,
        attn_sinks: a.attn_sinks,
        moe_bias: false,
        shexp_gate: false,
    };
    match family {
        // qwen2 / qwen2_moe always carry q/k/v biases (llama-model.cpp LLM_ARCH_QWEN2*)
        Family::Llama => Style {
            qkv_bias: a.qkv_bias || spec.model_type.starts_with("qwen2"),
            shexp_gate: spec.model_type == "qwen2_moe",
            // MiniMax-M2 normalises q and k over all heads at once (minimax_m2.py q_norm over
            // num_heads * head_dim; llama.cpp LLM_ARCH_MINIMAX_M2)
            qk_norm: if spec.model_type == "minimax_m2" && a.qk_norm {
                QkNorm::Full
            } else {
                base.qk_norm
            },
            ..base
        },
        // Gemma 2/3 add sandwich norms, Gemma 3 adds QK norm (LLM_ARCH_GEMMA2/GEMMA3)
        Family::Gemma => Style {
            post_norms: a.post_norms || spec.model_type != "gemma",
            qk_norm: if a.qk_norm || spec.model_type.starts_with("gemma3") {
                QkNorm::PerHead
            } else {
                QkNorm::None
            },
            ..base
        },
        // Gemma 4: sandwich norms and per-head Q/K norms (src/models/gemma4.cpp)
        Family::Gemma4 => Style {
            post_norms: true,
            qk_norm: QkNorm::PerHead,
            ..base
        },
        // GLM-4-0414: sandwich norms, fused gate+up in ffn_up (llama-model.cpp LLM_ARCH_GLM4)
        Family::Glm4 => Style {
            post_norms: true,
            fused_gate_up: true,
            ..base
        },
        // ChatGLM / GLM-4-9B (chatglm): fused QKV with bias, fused gate+up (LLM_ARCH_CHATGLM)
        Family::ChatGlm => Style {
            fused_qkv: true,
            qkv_bias: true,
            fused_gate_up: true,
            ffn_norm: Some("ffn_norm"),
            ..base
        },
        // Phi-3: fused QKV and fused gate+up (LLM_ARCH_PHI3)
        Family::Phi3 => Style {
            fused_qkv: true,
            fused_gate_up: true,
            ..base
        },
        // GPT-NeoX: LayerNorm with bias, fused QKV, GELU MLP, biases everywhere (LLM_ARCH_GPTNEOX)
        Family::GptNeox => Style {
            ffn_norm: Some("ffn_norm"),
            norm_bias: true,
            fused_qkv: true,
            gated: false,
            qkv_bias: true,
            o_bias: true,
            mlp_bias: true,
            ..base
        },
        // Falcon: parallel block, LayerNorm with bias, fused QKV, GELU MLP, no linear biases
        // (LLM_ARCH_FALCON; `attn_norm_2` is added by the layer builder for the 40B/180B layout)
        Family::Falcon => Style {
            ffn_norm: None,
            norm_bias: true,
            fused_qkv: true,
            gated: false,
            qkv_bias: false,
            o_bias: false,
            mlp_bias: false,
            ..base
        },
        // Command R: parallel block with one LayerNorm (no bias), per-head-row QK norm when used
        Family::Cohere => Style {
            ffn_norm: None,
            norm_bias: false,
            qk_norm: if a.qk_norm {
                QkNorm::PerHeadRows
            } else {
                QkNorm::None
            },
            ..base
        },
        // OLMo 2: no pre-norms, post norms only, QK norm over all heads (LLM_ARCH_OLMO2)
        Family::Olmo2 => Style {
            attn_norm: false,
            ffn_norm: None,
            post_norms: true,
            qk_norm: QkNorm::Full,
            ..base
        },
        // StarCoder2: LayerNorm with bias, biases on all linears, GELU MLP (LLM_ARCH_STARCODER2)
        Family::Starcoder2 => Style {
            norm_bias: true,
            gated: false,
            qkv_bias: true,
            o_bias: true,
            mlp_bias: true,
            ..base
        },
        Family::Deepseek => base,
        // GLM-4.5: the pre-FFN norm is named post_attention_norm (LLM_ARCH_GLM4_MOE)
        Family::Glm4Moe => Style {
            ffn_norm: Some("post_attention_norm"),
            post_norms: false,
            ..base
        },
        // gpt-oss: pre-FFN norm named post_attention_norm, biased q/k/v/o, sinks, biased MoE
        // (LLM_ARCH_OPENAI_MOE)
        Family::GptOss => Style {
            ffn_norm: Some("post_attention_norm"),
            qkv_bias: true,
            o_bias: true,
            attn_sinks: true,
            moe_bias: true,
            ..base
        },
        // Qwen3-Next: gated attention output folded into attn_q, QK norm, gated shared expert
        // (LLM_ARCH_QWEN3NEXT)
        Family::Qwen3Next => Style {
            ffn_norm: Some("post_attention_norm"),
            qk_norm: QkNorm::PerHead,
            gated_q: true,
            shexp_gate: true,
            ..base
        },
        Family::FalconH1 => base,
        Family::Jamba => base,
        // Nemotron-H: each block is one mixer (Mamba2, attention or a ReLU^2 MLP) behind one
        // norm named attn_norm (LLM_ARCH_NEMOTRON_H)
        Family::NemotronH => Style {
            ffn_norm: None,
            gated: false,
            ..base
        },
    }
}

/// Build every tensor of the model into `b`.
pub(crate) fn build(spec: &ModelSpec, b: &mut Builder) {
    let family = Family::of(spec);
    let st = style(spec, family);
    if family == Family::Gemma4 {
        return super::gemma4::build(spec, &st, b);
    }
    let n_embd = spec.n_embd;
    let n_vocab = spec.n_vocab;

    b.add("token_embd.weight", &[n_embd, n_vocab]);
    b.add("output_norm.weight", &[n_embd]);
    if st.norm_bias {
        b.add("output_norm.bias", &[n_embd]);
    }
    if !spec.tie_word_embeddings {
        b.add("output.weight", &[n_embd, n_vocab]);
    }

    for (il, layer) in spec.layers.iter().enumerate() {
        build_layer(spec, family, &st, il as u64, layer, b);
    }

    // NextN / MTP blocks follow the main stack. The converter ships them for GLM-4.5
    // (Glm4MoeModel keeps num_nextn_predict_layers blocks) but skips them for DeepSeek V2/V3
    // (DeepseekV2Model.skip_mtp) — convert_hf_to_gguf.py @007dbbf.
    if family == Family::Glm4Moe && spec.n_nextn_layers > 0 {
        let template = spec.layers.last().cloned();
        for k in 0..spec.n_nextn_layers {
            let il = spec.n_layer() + k;
            if let Some(layer) = &template {
                build_layer(spec, family, &st, il, layer, b);
            }
            // llama-model.cpp LLM_ARCH_GLM4_MOE nextn tensors. The converted files carry the
            // block's own embed_tokens and shared_head_head too (GLM-4.5-Air GGUF: 110.47 B
            // params printed = 106.85 B main + this block).
            b.blk(il, "nextn.eh_proj", &[2 * n_embd, n_embd]);
            b.blk(il, "nextn.embed_tokens", &[n_embd, n_vocab]);
            b.blk(il, "nextn.enorm", &[n_embd]);
            b.blk(il, "nextn.hnorm", &[n_embd]);
            b.blk(il, "nextn.shared_head_head", &[n_embd, n_vocab]);
            b.blk(il, "nextn.shared_head_norm", &[n_embd]);
        }
    }
}

fn norm(b: &mut Builder, st: &Style, il: u64, name: &str, n: u64) {
    b.blk(il, name, &[n]);
    if st.norm_bias {
        b.blk_bias(il, name, &[n]);
    }
}

fn build_layer(
    spec: &ModelSpec,
    family: Family,
    st: &Style,
    il: u64,
    layer: &LayerSpec,
    b: &mut Builder,
) {
    let n_embd = spec.n_embd;
    let has_mixer = !matches!(layer.attention, AttentionKind::None);

    if st.attn_norm && (has_mixer || family != Family::NemotronH) {
        norm(b, st, il, "attn_norm", n_embd);
    }
    // Falcon 40B/180B (new_decoder_architecture, grouped KV) has a second input norm for the
    // MLP branch (llama-model.cpp LLM_ARCH_FALCON `attn_norm_2`, optional); 7B is multi-query.
    if family == Family::Falcon && layer.n_head_kv > 1 {
        norm(b, st, il, "attn_norm_2", n_embd);
    }

    match &layer.attention {
        AttentionKind::Full
        | AttentionKind::SlidingWindow { .. }
        | AttentionKind::Chunked { .. } => {
            attention::standard(b, st, il, n_embd, layer);
        }
        AttentionKind::Mla { .. } => attention::mla(b, spec, il, layer),
        AttentionKind::Recurrent(state) => recurrent::mixer(b, spec, family, il, state),
        AttentionKind::None => {}
    }
    if let Some(state) = &layer.parallel_ssm {
        recurrent::mixer(b, spec, family, il, state);
    }
    if st.post_norms && has_mixer {
        norm(b, st, il, "post_attention_norm", n_embd);
    }

    let has_ffn = !matches!(layer.ffn, crate::spec::FfnKind::None);
    if has_ffn {
        if family == Family::NemotronH && !has_mixer {
            // an MLP-only block of Nemotron-H still has its one norm
            norm(b, st, il, "attn_norm", n_embd);
        }
        if let Some(name) = st.ffn_norm {
            norm(b, st, il, name, n_embd);
        }
        ffn::build(b, spec, st, il, layer);
        if st.post_norms {
            norm(b, st, il, "post_ffw_norm", n_embd);
        }
    }
}
