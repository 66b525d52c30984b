//! GGUF metadata → [`ModelSpec`], through the same family rules as config.json: the GGUF keys
//! (llama.cpp's `LLM_KV_*`) are written into the config.json keys they came from
//! (convert_hf_to_gguf.py), then per-layer facts only a GGUF states (per-layer KV heads of
//! hybrid stacks) are applied on top.

use crate::gguf::{GgufArch, GgufFile};
use crate::hf_config::spec_from_config;
use crate::spec::{AttentionKind, FfnKind, ModelSpec, RecurrentKind, RecurrentState};
use serde_json::{json, Map, Value};

/// llama.cpp arch name → HF model_type (llama-arch.cpp LLM_ARCH_NAMES).
pub fn model_type_of(arch: &str) -> &str {
    match arch {
        "qwen2moe" => "qwen2_moe",
        "qwen3moe" => "qwen3_moe",
        "qwen3next" => "qwen3_next",
        "gemma3" => "gemma3_text",
        "gemma3n" => "gemma3n_text",
        "gemma4" => "gemma4_text",
        "gpt-oss" => "gpt_oss",
        "deepseek2" => "deepseek_v3",
        "command-r" => "cohere",
        "falcon-h1" => "falcon_h1",
        "glm4moe" => "glm4_moe",
        "gptneox" => "gpt_neox",
        "llama4" => "llama4_text",
        "nemotron_h" | "nemotron_h_moe" => "nemotron_h",
        other => other,
    }
}

pub fn spec_from_gguf(id: &str, g: &GgufFile) -> Result<ModelSpec, String> {
    let a = GgufArch::from_gguf(g).map_err(|e| e.to_string())?;
    let mt = model_type_of(&a.architecture).to_string();
    let nextn = a.nextn_predict_layers.unwrap_or(0);
    let blocks = a.block_count.ok_or("the GGUF has no block_count")?;
    check_shape(&a, blocks, nextn)?;
    let n_layer = blocks - nextn;
    let first = |v: &Option<Vec<u64>>| v.as_ref().and_then(|v| v.iter().copied().find(|x| *x > 0));
    let mut c = Map::new();
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            c.insert(k.to_string(), v);
        }
    };
    put("model_type", Some(json!(mt)));
    put("architectures", Some(json!([a.architecture.clone()])));
    put("hidden_size", a.embedding_length.map(Value::from));
    put("num_hidden_layers", Some(json!(n_layer)));
    put("num_attention_heads", first(&a.head_count).map(Value::from));
    put(
        "num_key_value_heads",
        first(&a.head_count_kv).map(Value::from),
    );
    put(
        "intermediate_size",
        first(&a.feed_forward_length).map(Value::from),
    );
    put("vocab_size", a.vocab_size.map(Value::from));
    put("max_position_embeddings", a.context_length.map(Value::from));
    put(
        "sliding_window",
        a.sliding_window.filter(|w| *w > 0).map(Value::from),
    );
    put(
        "num_local_experts",
        a.expert_count.filter(|n| *n > 1).map(Value::from),
    );
    put("num_experts_per_tok", a.expert_used_count.map(Value::from));
    put(
        "moe_intermediate_size",
        a.expert_feed_forward_length.map(Value::from),
    );
    put("n_shared_experts", a.expert_shared_count.map(Value::from));
    put(
        "shared_expert_intermediate_size",
        a.expert_shared_feed_forward_length.map(Value::from),
    );
    put(
        "first_k_dense_replace",
        a.leading_dense_block_count.map(Value::from),
    );
    put("num_nextn_predict_layers", Some(json!(nextn)));
    put(
        "full_attention_interval",
        a.full_attention_interval.map(Value::from),
    );
    if let Some(r) = a.kv_lora_rank {
        put("kv_lora_rank", Some(json!(r)));
        let rope = a.rope_dimension_count.unwrap_or(64);
        put("qk_rope_head_dim", Some(json!(rope)));
        if let Some(k) = a.key_length_mla {
            put("qk_nope_head_dim", Some(json!(k.saturating_sub(rope))));
        }
        put("v_head_dim", a.value_length_mla.map(Value::from));
    } else if mt == "gemma4_text" {
        // llama.cpp gemma4: key_length is the full layers' width (global_head_dim), key_length_swa
        // the sliding layers' (src/models/gemma4.cpp load_arch_hparams)
        put(
            "head_dim",
            a.key_length_swa.or(a.key_length).map(Value::from),
        );
        put("global_head_dim", a.key_length.map(Value::from));
        put("num_kv_shared_layers", a.shared_kv_layers.map(Value::from));
        put(
            "hidden_size_per_layer_input",
            a.embedding_length_per_layer_input.map(Value::from),
        );
        put(
            "enable_moe_block",
            Some(json!(a.expert_count.is_some_and(|n| n > 1))),
        );
    } else {
        put("head_dim", a.key_length.map(Value::from));
        if a.value_length.is_some() && a.value_length != a.key_length {
            put("v_head_dim", a.value_length.map(Value::from));
        }
    }
    if let Some(crate::gguf::arch::SlidingWindowPattern::Layers(flags)) = a
        .sliding_window_pattern
        .as_ref()
        .filter(|p| !matches!(p, crate::gguf::arch::SlidingWindowPattern::Layers(f) if (f.len() as u64) < n_layer))
    {
        let types: Vec<&str> = flags
            .iter()
            .take(n_layer as usize)
            .map(|s| {
                if *s {
                    "sliding_attention"
                } else {
                    "full_attention"
                }
            })
            .collect();
        put("layer_types", Some(json!(types)));
    } else if let Some(crate::gguf::arch::SlidingWindowPattern::Period(p)) =
        &a.sliding_window_pattern
    {
        put("sliding_window_pattern", Some(json!(p)));
    }
    // no output.weight in the file: the output head reuses token_embd
    let tied = !g.tensors.iter().any(|t| t.name == "output.weight");
    put("tie_word_embeddings", Some(json!(tied)));
    put("torch_dtype", Some(json!("bfloat16")));
    let mut spec = spec_from_config(id, &Value::Object(c)).map_err(|e| e.to_string())?;
    // hybrid stacks state per-layer KV heads; 0 marks a recurrent (or attention-free) layer
    if let Some(kv) = &a.head_count_kv {
        if kv.len() > 1 {
            for (il, l) in spec.layers.iter_mut().enumerate() {
                match kv.get(il).copied() {
                    Some(0) if a.ssm_state_size.is_some() => {
                        l.attention = AttentionKind::Recurrent(ssm_state(&a))
                    }
                    Some(0) => l.attention = AttentionKind::None,
                    Some(n) => l.n_head_kv = n,
                    None => {}
                }
            }
        }
    }
    if let Some(ff) = &a.feed_forward_length {
        if ff.len() > 1 && spec.moe.is_none() {
            for (il, l) in spec.layers.iter_mut().enumerate() {
                match ff.get(il).copied() {
                    Some(0) => l.ffn = FfnKind::None,
                    Some(n) => l.ffn = FfnKind::Dense { n_ff: n },
                    None => {}
                }
            }
        }
    }
    spec.provenance.source = format!("GGUF metadata ({} arch)", a.architecture);
    Ok(spec)
}

/// The GGUF's shape holds together, checked on its own keys so that the error names them: at
/// least one layer besides the NextN ones, a positive width, heads where the model attends, KV
/// heads no more than the heads, a plausible training context.
fn check_shape(a: &GgufArch, blocks: u64, nextn: u64) -> Result<(), String> {
    let arch = &a.architecture;
    let bad = |key: &str, value: String, hint: &str| {
        format!("GGUF key {arch}.{key} = {value}: {hint}; the file is corrupt or not a model")
    };
    if blocks == 0 || blocks <= nextn {
        return Err(bad(
            "block_count",
            blocks.to_string(),
            &format!("a model has at least one layer besides its {nextn} NextN layer(s)"),
        ));
    }
    if a.embedding_length == Some(0) {
        return Err(bad(
            "embedding_length",
            "0".into(),
            "the hidden size is positive",
        ));
    }
    let recurrent = a.ssm_state_size.is_some() || arch.contains("rwkv") || arch.contains("mamba");
    let heads = a.head_count.clone().unwrap_or_default();
    if !recurrent && !heads.is_empty() && heads.iter().all(|h| *h == 0) {
        return Err(bad(
            "attention.head_count",
            "0".into(),
            "an attention model has heads",
        ));
    }
    if let Some(kv) = &a.head_count_kv {
        if !recurrent && kv.len() == 1 && kv[0] == 0 {
            return Err(bad(
                "attention.head_count_kv",
                "0".into(),
                "an attention model has at least one KV head",
            ));
        }
        for (il, k) in kv.iter().enumerate() {
            let h = heads.get(il).or(heads.first()).copied().unwrap_or(u64::MAX);
            if *k > h {
                return Err(bad(
                    "attention.head_count_kv",
                    k.to_string(),
                    &format!("more KV heads than attention.head_count = {h}"),
                ));
            }
        }
    }
    if let Some(c) = a.context_length {
        if c == 0 || c > crate::hf_config::validate::MAX_CONTEXT {
            return Err(bad(
                "context_length",
                c.to_string(),
                "a training context is from 1 to 2^30 tokens",
            ));
        }
    }
    Ok(())
}

/// Mamba2-style state from the GGUF ssm keys (llama-hparams.cpp n_embd_r / n_embd_s).
fn ssm_state(a: &GgufArch) -> RecurrentState {
    let d_inner = a.ssm_inner_size.unwrap_or(0);
    let d_state = a.ssm_state_size.unwrap_or(0);
    let groups = a.ssm_group_count.unwrap_or(1).max(1);
    let kernel = a.ssm_conv_kernel.unwrap_or(4);
    let heads = a.ssm_time_step_rank.unwrap_or(0);
    let (kind, ssm) = if heads > 0 && groups >= 1 && a.ssm_group_count.is_some() {
        (RecurrentKind::Mamba2, d_state * d_inner)
    } else {
        (RecurrentKind::Mamba, d_state * d_inner)
    };
    let conv_channels = if kind == RecurrentKind::Mamba2 {
        d_inner + 2 * groups * d_state
    } else {
        d_inner
    };
    RecurrentState {
        kind,
        conv_elems: kernel.saturating_sub(1) * conv_channels,
        ssm_elems: ssm,
    }
}
