//! Reading config.json values: the aliases different model families use for the same fact, and
//! the defaults of transformers' config classes for keys a config.json leaves out.

use serde_json::Value;

/// A config.json object with the text model's keys first (multimodal wrappers nest them under
/// `text_config`) and the wrapper's keys as fallback.
pub struct Cfg<'a> {
    pub text: &'a Value,
    pub outer: &'a Value,
    /// keys that fell back to a class default, with the value used
    pub defaulted: std::cell::RefCell<Vec<String>>,
}

impl<'a> Cfg<'a> {
    pub fn new(outer: &'a Value) -> Cfg<'a> {
        let text = outer
            .get("text_config")
            .filter(|v| v.is_object())
            .or_else(|| outer.get("llm_config").filter(|v| v.is_object()))
            .unwrap_or(outer);
        Cfg {
            text,
            outer,
            defaulted: Default::default(),
        }
    }

    pub fn raw(&self, key: &str) -> Option<&'a Value> {
        self.text
            .get(key)
            .filter(|v| !v.is_null())
            .or_else(|| self.outer.get(key).filter(|v| !v.is_null()))
    }

    /// First present key among `keys`, as an unsigned integer (floats with no fraction accepted).
    pub fn u64_any(&self, keys: &[&str]) -> Option<u64> {
        keys.iter().find_map(|k| self.raw(k).and_then(as_u64))
    }

    pub fn u64(&self, key: &str) -> Option<u64> {
        self.u64_any(&[key])
    }

    pub fn bool(&self, key: &str) -> Option<bool> {
        self.raw(key).and_then(|v| v.as_bool())
    }

    pub fn str(&self, key: &str) -> Option<&'a str> {
        self.raw(key).and_then(|v| v.as_str())
    }

    /// A value with a class default: records the default when the key is absent.
    pub fn u64_or(&self, keys: &[&str], default: u64) -> u64 {
        match self.u64_any(keys) {
            Some(v) => v,
            None => {
                self.defaulted
                    .borrow_mut()
                    .push(format!("{}={}", keys[0], default));
                default
            }
        }
    }

    /// A list of unsigned integers (`mlp_only_layers`, `no_rope_layers`).
    pub fn u64_list(&self, key: &str) -> Option<Vec<u64>> {
        self.raw(key)?
            .as_array()
            .map(|a| a.iter().filter_map(as_u64).collect())
    }

    /// A list of strings (`layer_types`, `layers_block_type`).
    pub fn str_list(&self, key: &str) -> Option<Vec<String>> {
        self.raw(key)?.as_array().map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
    }
}

pub fn as_u64(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < 1e18)
            .map(|f| f as u64)
    })
}

/// Defaults of transformers' config classes for the keys configs most often omit, by
/// `model_type`. Source: transformers `models/<name>/configuration_<name>.py` (v4.56).
pub struct ClassDefaults {
    pub tie_word_embeddings: bool,
    pub vocab_size: u64,
    pub max_position_embeddings: u64,
}

pub fn class_defaults(model_type: &str) -> ClassDefaults {
    let d = |tie, vocab, maxpos| ClassDefaults {
        tie_word_embeddings: tie,
        vocab_size: vocab,
        max_position_embeddings: maxpos,
    };
    match model_type {
        // Gemma*Config default to tied embeddings (configuration_gemma*.py)
        "gemma" => d(true, 256000, 8192),
        "gemma2" => d(true, 256000, 8192),
        "gemma3_text" | "gemma3" => d(true, 262208, 131072),
        // Gemma4TextConfig (configuration_gemma4.py)
        "gemma4" | "gemma4_text" | "gemma4_unified" | "gemma4_unified_text" => {
            d(true, 262144, 131072)
        }
        "cohere" | "cohere2" => d(true, 256000, 8192),
        // FalconConfig inherits PretrainedConfig's tie_word_embeddings=True
        "falcon" => d(true, 65024, 2048),
        "gpt_neox" => d(false, 50432, 2048),
        "starcoder2" => d(true, 49152, 4096),
        "llama" | "mistral" | "mixtral" | "qwen2" | "qwen2_moe" | "qwen3" | "qwen3_moe"
        | "qwen3_next" | "phi3" | "deepseek_v2" | "deepseek_v3" | "deepseek_v32" | "gpt_oss"
        | "glm4" | "glm4_moe" | "granite" | "granitemoe" | "chatglm" | "jamba" | "nemotron_h"
        | "falcon_h1" | "olmo2" | "llama4_text" | "llama4" | "qwen3_5" | "qwen3_5_text"
        | "qwen3_5_moe" | "qwen3_5_moe_text" | "minimax_m2" | "glm4_moe_lite" | "glm_moe_dsa"
        | "kimi_k25" => d(false, 32000, 4096),
        // PretrainedConfig's own default
        _ => d(true, 32000, 4096),
    }
}
