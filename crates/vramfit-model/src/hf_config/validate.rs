//! Consistency checks on a config.json before it becomes a [`crate::ModelSpec`]: a value that is
//! present but not what the key holds (a negative vocabulary, a context of 1e300, heads that do
//! not divide the hidden size, a dtype torch does not have) is refused with the key and the
//! value, never replaced by a default or guessed around.

use super::fields::{as_u64, Cfg};
use super::ConfigError;
use serde_json::Value;

/// The longest training context believed: Llama 4 Scout's 10M tokens (its config.json) with two
/// orders of magnitude to spare; 2^63 or 1e300 is a broken file, not a context.
pub const MAX_CONTEXT: u64 = 1 << 30;

/// Keys that hold a count or a size: when present (and not null) each is a whole number ≥ 0.
const COUNT_KEYS: &[&str] = &[
    "hidden_size",
    "n_embd",
    "d_model",
    "num_hidden_layers",
    "n_layer",
    "num_layers",
    "num_attention_heads",
    "n_head",
    "num_heads",
    "num_key_value_heads",
    "n_head_kv",
    "num_kv_heads",
    "multi_query_group_num",
    "head_dim",
    "kv_channels",
    "vocab_size",
    "padded_vocab_size",
    "max_position_embeddings",
    "seq_length",
    "max_seq_len",
    "n_positions",
    "intermediate_size",
    "moe_intermediate_size",
    "num_experts",
    "num_local_experts",
    "n_routed_experts",
    "num_experts_per_tok",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
];

/// The keys without which no layout can be read: a string or a list there is an error too.
const CORE_KEYS: &[&str] = &[
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "vocab_size",
    "max_position_embeddings",
];

/// Every dtype name torch has (torch/_tensor_str.py and torch.dtype attributes, torch 2.8), with
/// `auto`: a `torch_dtype` outside these is a typo or a broken file.
const TORCH_DTYPES: &[&str] = &[
    "auto",
    "float16",
    "half",
    "bfloat16",
    "float32",
    "float",
    "float64",
    "double",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "float4_e2m1fn_x2",
    "int8",
    "uint8",
    "int16",
    "int32",
    "int64",
    "bool",
    "fp16",
    "fp32",
    "bf16",
    "fp8",
];

fn invalid(id: &str, key: &str, value: &Value, hint: &str) -> ConfigError {
    let mut shown = value.to_string();
    if shown.len() > 80 {
        let cut = (0..=80)
            .rev()
            .find(|i| shown.is_char_boundary(*i))
            .unwrap_or(0);
        shown.truncate(cut);
        shown.push('…');
    }
    ConfigError::Invalid {
        id: id.to_string(),
        key: key.to_string(),
        value: shown,
        hint: hint.to_string(),
    }
}

/// Values present in the config that no model can have.
pub fn raw_values(id: &str, cfg: &Cfg) -> Result<(), ConfigError> {
    for key in COUNT_KEYS {
        let Some(v) = cfg.raw(key) else { continue };
        let ok = match v {
            Value::Number(_) => as_u64(v).is_some(),
            // `sliding_window: false` (no window) and per-layer lists are valid spellings
            _ => !CORE_KEYS.contains(key),
        };
        if !ok {
            return Err(invalid(
                id,
                key,
                v,
                "a count or size is a whole number from 0 to 10^18",
            ));
        }
    }
    for key in ["torch_dtype", "dtype"] {
        if let Some(v) = cfg.raw(key) {
            let known = v.as_str().is_some_and(|s| {
                let s = s.trim().trim_start_matches("torch.").to_ascii_lowercase();
                TORCH_DTYPES.contains(&s.as_str())
            });
            if !known {
                return Err(invalid(
                    id,
                    key,
                    v,
                    "not a torch dtype; the checkpoint's is one of bfloat16, float16, float32",
                ));
            }
        }
    }
    if let Some(q) = cfg
        .outer
        .get("quantization_config")
        .filter(|q| q.is_object())
    {
        for key in ["bits", "w_bit", "weight_bits"] {
            if let Some(v) = q.get(key).filter(|v| !v.is_null()) {
                if !as_u64(v).is_some_and(|b| (1..=32).contains(&b)) {
                    return Err(invalid(
                        id,
                        key,
                        v,
                        "quantization_config bits are a whole number from 1 to 32",
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The shape read from the config holds together: heads divide the hidden size (when no
/// `head_dim` is given), KV heads divide the heads, the context is plausible, and a per-layer
/// type list has one entry per layer.
pub fn shape(
    id: &str,
    cfg: &Cfg,
    n_embd: u64,
    n_layer: u64,
    n_head: u64,
    n_head_kv: u64,
    n_ctx_train: u64,
) -> Result<(), ConfigError> {
    // MLA heads are qk_nope_head_dim + qk_rope_head_dim wide whatever hidden_size is
    // (GLM-4.7-Flash: 20 heads over 2048; modeling_deepseek_v3.py)
    let explicit_head_dim = [
        "head_dim",
        "kv_channels",
        "attention_head_dim",
        "kv_lora_rank",
    ]
    .iter()
    .any(|k| cfg.raw(k).is_some());
    if !explicit_head_dim && n_embd % n_head != 0 {
        return Err(invalid(
            id,
            "num_attention_heads",
            &Value::from(n_head),
            &format!("it does not divide hidden_size = {n_embd} and no head_dim is given"),
        ));
    }
    if n_head_kv > n_head || n_head % n_head_kv != 0 {
        return Err(invalid(
            id,
            "num_key_value_heads",
            &Value::from(n_head_kv),
            &format!("KV heads are at most num_attention_heads = {n_head} and divide it"),
        ));
    }
    if n_ctx_train == 0 || n_ctx_train > MAX_CONTEXT {
        return Err(invalid(
            id,
            "max_position_embeddings",
            &Value::from(n_ctx_train),
            "a training context is from 1 to 2^30 tokens",
        ));
    }
    if let Some(types) = cfg.raw("layer_types").and_then(|v| v.as_array()) {
        if types.len() as u64 != n_layer {
            return Err(invalid(
                id,
                "layer_types",
                &Value::from(format!("a list of {} entries", types.len())),
                &format!("it needs one entry per layer (num_hidden_layers = {n_layer})"),
            ));
        }
    }
    Ok(())
}
