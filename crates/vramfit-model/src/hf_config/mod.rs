//! HF `config.json` → [`ModelSpec`].
//!
//! One entry point, [`spec_from_config`], for every model family. The family-specific parts live
//! beside it: [`pattern`] decides each layer's attention kind (sliding-window interleaving,
//! hybrid recurrent stacks), [`ffn`] each layer's MLP or MoE, [`quant`] the checkpoint's
//! quantization. An unknown `model_type` takes the llama-like path with a warning that lists the
//! fields it used.

mod ffn;
mod fields;
pub(crate) mod gemma4;
mod pattern;
pub(crate) mod quant;
mod rope;
pub mod validate;

use crate::spec::{ArchFlags, Dtype, LayerSpec, ModelSpec, Provenance};
use fields::{class_defaults, Cfg};
use serde_json::Value;
use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
pub enum ConfigError {
    #[error("config.json of {id} is not a JSON object: give the model's config.json")]
    NotObject { id: String },
    #[error("config.json of {id} has no usable '{key}': {hint}")]
    Missing {
        id: String,
        key: &'static str,
        hint: &'static str,
    },
    #[error("config.json of {id} has an implausible {key} = {value}: check the file")]
    Implausible {
        id: String,
        key: &'static str,
        value: u64,
    },
    #[error("config.json of {id} has {key} = {value}: {hint}; check the file")]
    Invalid {
        id: String,
        key: String,
        value: String,
        hint: String,
    },
}

/// `model_type`s whose layout vramfit knows; anything else takes the generic path.
pub const KNOWN_MODEL_TYPES: &[&str] = &[
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "qwen3_next",
    // Qwen3.5 / Qwen3.6: Qwen3-Next's gated DeltaNet + gated attention stack under a
    // multimodal wrapper (transformers models/qwen3_5, qwen3_5_moe; vLLM qwen3_5.py)
    "qwen3_5",
    "qwen3_5_text",
    "qwen3_5_moe",
    "qwen3_5_moe_text",
    // MiniMax-M2 / M2.1 / M2.5: GQA with full-width QK norm, 256 sigmoid-routed experts
    // (vLLM model_executor/models/minimax_m2.py)
    "minimax_m2",
    "gemma",
    "gemma2",
    "gemma3",
    "gemma3_text",
    // Gemma 4: Gemma 3's interleave with per-layer head widths, KV sharing, per-layer
    // embeddings and a MoE beside the MLP (vLLM gemma4.py, llama.cpp src/models/gemma4.cpp)
    "gemma4",
    "gemma4_text",
    "gemma4_unified",
    "gemma4_unified_text",
    "gpt_oss",
    "deepseek_v2",
    "deepseek_v3",
    // DeepSeek-V3.2(-Exp): V3's MLA/MoE plus the lightning indexer (DeepseekV32ForCausalLM)
    "deepseek_v32",
    "kimi_k2",
    // Kimi-K2.5: a vision wrapper around a DeepSeek-V3 text config (text_config.model_type
    // deepseek_v3 / kimi_k2; transformers models/kimi_k25/configuration_kimi_k25.py)
    "kimi_k25",
    // GLM-4.7-Flash: DeepSeek-V2/V3-style MLA + MoE (vLLM glm4_moe_lite.py subclasses the
    // DeepSeek-V2 model); GLM-5: the same with DeepSeek-V3.2's lightning indexer (glm_moe_dsa)
    "glm4_moe_lite",
    "glm_moe_dsa",
    "phi3",
    "cohere",
    "cohere2",
    "falcon",
    "falcon_h1",
    "jamba",
    "nemotron_h",
    "glm4",
    "glm4_moe",
    "chatglm",
    "granite",
    "granitemoe",
    "gpt_neox",
    "llama4",
    "llama4_text",
    "starcoder2",
    "olmo2",
    "phimoe",
    "exaone",
];

/// Read a model's memory-relevant facts from its config.json.
pub fn spec_from_config(id: &str, config: &Value) -> Result<ModelSpec, ConfigError> {
    if !config.is_object() {
        return Err(ConfigError::NotObject { id: id.to_string() });
    }
    let cfg = Cfg::new(config);
    validate::raw_values(id, &cfg)?;
    let model_type = cfg
        .text
        .get("model_type")
        .and_then(|v| v.as_str())
        .or_else(|| cfg.outer.get("model_type").and_then(|v| v.as_str()))
        .unwrap_or("")
        .to_string();
    let architecture = config
        .get("architectures")
        .and_then(|a| a.get(0))
        .and_then(|v| v.as_str())
        .unwrap_or("")
        .to_string();
    let defaults = class_defaults(&model_type);
    let mut warnings = Vec::new();
    let known = KNOWN_MODEL_TYPES.contains(&model_type.as_str());

    let missing = |key: &'static str, hint: &'static str| ConfigError::Missing {
        id: id.to_string(),
        key,
        hint,
    };
    let n_embd = cfg
        .u64_any(&[
            "hidden_size",
            "n_embd",
            "d_model",
            "hidden_dim",
            "model_dim",
        ])
        .ok_or_else(|| missing("hidden_size", "is this an LLM config.json?"))?;
    let n_layer = cfg
        .u64_any(&["num_hidden_layers", "n_layer", "num_layers", "n_layers"])
        .ok_or_else(|| missing("num_hidden_layers", "is this an LLM config.json?"))?;
    let n_head = cfg
        .u64_any(&["num_attention_heads", "n_head", "num_heads", "n_heads"])
        .ok_or_else(|| missing("num_attention_heads", "is this an LLM config.json?"))?;
    check_range(id, "hidden_size", n_embd, 1, 1 << 20)?;
    check_range(id, "num_hidden_layers", n_layer, 1, 10_000)?;
    check_range(id, "num_attention_heads", n_head, 1, 1 << 16)?;

    let n_head_kv = kv_heads(&cfg, &model_type, n_head);
    check_range(id, "num_key_value_heads", n_head_kv, 1, 1 << 16)?;
    let head_dim = cfg
        .u64_any(&["head_dim", "kv_channels", "attention_head_dim"])
        .unwrap_or(n_embd / n_head);
    check_range(id, "head_dim", head_dim, 1, 1 << 16)?;
    let n_vocab = cfg.u64_or(
        &["vocab_size", "padded_vocab_size", "n_vocab"],
        defaults.vocab_size,
    );
    check_range(id, "vocab_size", n_vocab, 1, 1 << 28)?;
    let n_ctx_train = cfg.u64_or(
        &[
            "max_position_embeddings",
            "seq_length",
            "max_seq_len",
            "n_positions",
            "max_sequence_length",
        ],
        defaults.max_position_embeddings,
    );
    validate::shape(id, &cfg, n_embd, n_layer, n_head, n_head_kv, n_ctx_train)?;
    let tie = cfg.bool("tie_word_embeddings").unwrap_or_else(|| {
        cfg.defaulted.borrow_mut().push(format!(
            "tie_word_embeddings={}",
            defaults.tie_word_embeddings
        ));
        defaults.tie_word_embeddings
    });
    let dtype = cfg
        .str("torch_dtype")
        .or_else(|| cfg.str("dtype"))
        .and_then(Dtype::parse)
        .unwrap_or_else(|| {
            cfg.defaulted
                .borrow_mut()
                .push("torch_dtype=bfloat16".into());
            Dtype::Bf16
        });

    let attention = pattern::layer_attention(&cfg, &model_type, n_layer, n_embd, &mut warnings);
    let ffns = ffn::layer_ffns(&cfg, &model_type, n_layer, n_embd);
    let moe = ffn::moe_spec(&cfg, &model_type);
    if ffns.iter().any(|f| matches!(f, crate::spec::FfnKind::Moe)) && moe.is_none() {
        return Err(missing(
            "num_experts",
            "the config names MoE layers but no expert counts",
        ));
    }
    if let Some(m) = &moe {
        check_range(id, "num_experts", m.n_expert, 1, 1 << 17)?;
    }

    let (head_dim_v, mla) = match attention.iter().find_map(|a| match a {
        crate::spec::AttentionKind::Mla { v_head_dim, .. } => Some(*v_head_dim),
        _ => None,
    }) {
        Some(v) => (v, true),
        None => (cfg.u64("v_head_dim").unwrap_or(head_dim), false),
    };
    let head_dim_k = if mla {
        cfg.u64("qk_nope_head_dim").unwrap_or(128) + cfg.u64("qk_rope_head_dim").unwrap_or(64)
    } else {
        head_dim
    };
    let per_layer_kv = cfg.u64_list("num_key_value_heads_per_layer");
    let layers: Vec<LayerSpec> = attention
        .into_iter()
        .zip(ffns)
        .enumerate()
        .map(|(i, (attention, ffn))| LayerSpec {
            attention,
            n_head,
            n_head_kv: per_layer_kv
                .as_ref()
                .and_then(|v| v.get(i).copied())
                .unwrap_or(if mla { n_head } else { n_head_kv }),
            head_dim_k,
            head_dim_v,
            ffn,
            kv_shared: false,
            parallel_ssm: None,
        })
        .collect();
    let mut layers = layers;
    pattern::parallel_hybrid(&cfg, &model_type, n_embd, &mut layers);
    if gemma4::is_gemma4(&model_type) {
        gemma4::apply(&cfg, &mut layers);
    }
    // sizes beyond any real model are a broken config, not a model to plan for (and would
    // overflow tensor element counts downstream)
    for l in &layers {
        if let crate::spec::FfnKind::Dense { n_ff } = l.ffn {
            check_range(id, "intermediate_size", n_ff, 1, 1 << 22)?;
        }
        if let crate::spec::AttentionKind::Mla {
            kv_lora_rank,
            rope_dim,
            nope_dim,
            v_head_dim,
        } = l.attention
        {
            check_range(id, "kv_lora_rank", kv_lora_rank, 1, 1 << 16)?;
            check_range(id, "qk_rope_head_dim", rope_dim, 0, 1 << 16)?;
            check_range(id, "qk_nope_head_dim", nope_dim, 0, 1 << 16)?;
            check_range(id, "v_head_dim", v_head_dim, 1, 1 << 16)?;
        }
        if let Some(w) = l.attention.window() {
            check_range(id, "sliding_window", w, 1, 1 << 32)?;
        }
        for st in [&l.attention]
            .into_iter()
            .filter_map(|a| match a {
                crate::spec::AttentionKind::Recurrent(s) => Some(s),
                _ => None,
            })
            .chain(l.parallel_ssm.as_ref())
        {
            check_range(
                id,
                "recurrent state size",
                st.conv_elems.max(st.ssm_elems),
                0,
                1 << 32,
            )?;
        }
    }
    if let Some(m) = &moe {
        check_range(id, "moe_intermediate_size", m.n_ff_exp, 1, 1 << 22)?;
        check_range(
            id,
            "shared_expert_intermediate_size",
            m.n_ff_shexp,
            0,
            1 << 24,
        )?;
        check_range(
            id,
            "num_experts_per_tok",
            m.n_expert_used,
            1,
            m.n_expert.max(1),
        )?;
    }

    if !known {
        warnings.push(format!(
            "model_type '{model_type}' is not one vramfit knows; read it as a llama-like decoder \
             from hidden_size={n_embd}, num_hidden_layers={n_layer}, num_attention_heads={n_head}, \
             num_key_value_heads={n_head_kv}, head_dim={head_dim}, vocab_size={n_vocab}, \
             intermediate_size={}",
            cfg.u64("intermediate_size")
                .map(|v| v.to_string())
                .unwrap_or("?".into())
        ));
    }
    let n_nextn_layers = cfg
        .u64_any(&[
            "num_nextn_predict_layers",
            "num_mtp_layers",
            "mtp_num_hidden_layers",
        ])
        .unwrap_or(0);
    let vision_params = if gemma4::is_gemma4(&model_type) {
        gemma4::tower_params(cfg.outer, n_embd)
    } else {
        vision_params(cfg.outer)
    };
    let rope_tables = rope::tables(&cfg, &model_type, head_dim, n_ctx_train, &layers);
    let defaulted = cfg.defaulted.borrow().clone();
    Ok(ModelSpec {
        id: id.to_string(),
        architecture,
        model_type: model_type.clone(),
        n_embd,
        n_vocab,
        n_ctx_train,
        tie_word_embeddings: tie,
        dtype,
        layers,
        moe,
        quant: quant::quant_config(cfg.outer),
        n_nextn_layers,
        vision_params,
        vision_shape: vision_shape(cfg.outer),
        rope_tables,
        arch: arch_flags(&cfg, &model_type),
        provenance: Provenance {
            source: String::new(),
            defaulted,
            warnings,
        },
    })
}

fn check_range(id: &str, key: &'static str, v: u64, lo: u64, hi: u64) -> Result<(), ConfigError> {
    if v < lo || v > hi {
        return Err(ConfigError::Implausible {
            id: id.to_string(),
            key,
            value: v,
        });
    }
    Ok(())
}

/// KV heads: `num_key_value_heads`, or the family's own key, or MHA.
fn kv_heads(cfg: &Cfg, model_type: &str, n_head: u64) -> u64 {
    if let Some(v) = cfg.u64_any(&[
        "num_key_value_heads",
        "n_head_kv",
        "num_kv_heads",
        "multi_query_group_num",
    ]) {
        // falcon-40b style configs carry num_kv_heads only with new_decoder_architecture
        if model_type != "falcon"
            || cfg.bool("new_decoder_architecture").unwrap_or(false)
            || cfg.raw("num_key_value_heads").is_some()
        {
            return v;
        }
    }
    // Falcon-7B: multi_query=true means one KV head (configuration_falcon.py)
    if model_type == "falcon"
        && cfg.bool("multi_query").unwrap_or(true)
        && !cfg.bool("new_decoder_architecture").unwrap_or(false)
    {
        return 1;
    }
    n_head
}

/// Flags that change the tensor list; sources: each family's modeling_<name>.py in transformers.
fn arch_flags(cfg: &Cfg, mt: &str) -> ArchFlags {
    let attention_bias = cfg.bool("attention_bias");
    ArchFlags {
        qkv_bias: attention_bias.unwrap_or(false)
            || cfg.bool("add_qkv_bias").unwrap_or(false)
            || cfg.bool("qkv_bias").unwrap_or(false)
            || matches!(mt, "qwen2" | "qwen2_moe" | "gpt_neox" | "starcoder2")
            || (mt == "gpt_oss" && attention_bias.unwrap_or(true))
            || (mt == "falcon" && cfg.bool("bias").unwrap_or(false)),
        o_bias: matches!(mt, "gpt_neox" | "starcoder2")
            || (mt == "gpt_oss" && attention_bias.unwrap_or(true))
            || (mt == "falcon" && cfg.bool("bias").unwrap_or(false)),
        mlp_bias: cfg.bool("mlp_bias").unwrap_or(false)
            || matches!(mt, "gpt_neox" | "gpt_oss" | "starcoder2")
            || (mt == "falcon" && cfg.bool("bias").unwrap_or(false)),
        qk_norm: matches!(
            mt,
            "qwen3" | "qwen3_moe" | "qwen3_next" | "gemma3" | "gemma3_text" | "olmo2"
        ) || is_qwen3_5(mt)
            || gemma4::is_gemma4(mt)
            || cfg.bool("use_qk_norm").unwrap_or(false),
        norm_bias: matches!(mt, "gpt_neox" | "falcon" | "starcoder2"),
        // Nemotron-H uses a relu² MLP without a gate (modeling_nemotron_h.py)
        gated_mlp: !matches!(mt, "gpt_neox" | "falcon" | "starcoder2" | "nemotron_h"),
        post_norms: matches!(mt, "gemma2" | "gemma3" | "gemma3_text" | "glm4" | "olmo2")
            || gemma4::is_gemma4(mt),
        parallel_block: matches!(mt, "gpt_neox" | "falcon" | "cohere" | "cohere2")
            && cfg.bool("use_parallel_residual").unwrap_or(true)
            && cfg.bool("parallel_attn").unwrap_or(true),
        attn_sinks: mt == "gpt_oss",
        expert_bias: (matches!(
            mt,
            "deepseek_v3" | "deepseek_v32" | "kimi_k2" | "glm4_moe" | "glm4_moe_lite" | "glm_moe_dsa"
        ) && cfg
            .str("topk_method")
            .map(|m| m == "noaux_tc")
            .unwrap_or(true))
            // MiniMax-M2: e_score_correction_bias when use_routing_bias (minimax_m2.py)
            || (mt == "minimax_m2" && cfg.bool("use_routing_bias").unwrap_or(false)),
        v_from_k: gemma4::is_gemma4(mt) && gemma4::v_from_k(cfg),
        per_layer_embd: if gemma4::is_gemma4(mt) {
            gemma4::per_layer_embd(cfg)
        } else {
            0
        },
    }
}

/// Qwen3.5 / Qwen3.6 model types, wrapper and text (`qwen3_5`, `qwen3_5_moe_text`, ...).
pub(crate) fn is_qwen3_5(mt: &str) -> bool {
    matches!(
        mt,
        "qwen3_5" | "qwen3_5_text" | "qwen3_5_moe" | "qwen3_5_moe_text"
    )
}

/// `vision_config`'s layers and width with SGLang's fallbacks (`getattr(vision_config,
/// "num_hidden_layers", 24)`, `"hidden_size", 1024`; server_args.py `adjust_mem_fraction_for_vlm`).
fn vision_shape(outer: &Value) -> Option<(u64, u64)> {
    let v = outer.get("vision_config").filter(|v| v.is_object())?;
    let get = |k: &str, d: u64| v.get(k).and_then(fields::as_u64).unwrap_or(d);
    Some((get("num_hidden_layers", 24), get("hidden_size", 1024)))
}

/// Parameters of a vision tower shipped in the same checkpoint, from `vision_config`:
/// layers × (4·d² attention + 2·d·ffn MLP) + patch embedding, the ViT shape most towers share.
fn vision_params(outer: &Value) -> u64 {
    let Some(v) = outer.get("vision_config").filter(|v| v.is_object()) else {
        return 0;
    };
    let get = |keys: &[&str]| keys.iter().find_map(|k| v.get(*k).and_then(fields::as_u64));
    let (Some(d), Some(layers)) = (
        get(&["hidden_size", "embed_dim", "width"]),
        get(&["num_hidden_layers", "depth", "num_layers"]),
    ) else {
        return 0;
    };
    let ffn = get(&["intermediate_size", "mlp_dim"]).unwrap_or(d.saturating_mul(4));
    let patch = get(&["patch_size"]).unwrap_or(14);
    let chans = get(&["num_channels", "in_channels"]).unwrap_or(3);
    let per_layer = d
        .saturating_mul(d)
        .saturating_mul(4)
        .saturating_add(d.saturating_mul(ffn).saturating_mul(2))
        .saturating_add(d.saturating_mul(9));
    layers.saturating_mul(per_layer).saturating_add(
        patch
            .saturating_mul(patch)
            .saturating_mul(chans)
            .saturating_mul(d),
    )
}
#[cfg(test)]
mod tests;
