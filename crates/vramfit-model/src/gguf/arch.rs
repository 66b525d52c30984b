//! The architecture hyperparameters of a GGUF model, read in one place.
//!
//! Key names mirror llama.cpp's `LLM_KV_NAMES` (src/llama-arch.cpp, llama.cpp @82bb48500,
//! 2026-08): model keys are prefixed with `general.architecture` (`llama.block_count`,
//! `qwen3moe.expert_count`). Field names drop the prefix and keep llama.cpp's spelling, so
//! `head_count_kv` is `{arch}.attention.head_count_kv`. Keys that llama.cpp reads with
//! `get_key_or_arr` (one value, or one per layer) are `Vec`s here: one entry when the file stores
//! a scalar, `block_count` entries when it stores an array; [`GgufArch::at`] reads either.
//!
//! Turning this into a [`crate::spec::ModelSpec`] (which layers slide, which are recurrent, MLA
//! cache widths) needs per-architecture rules and lives with the spec builder.

use serde::Serialize;

use super::{GgufError, GgufFile, GgufValue};

/// Sanity cap on `block_count`, only to bound per-layer allocations downstream; llama.cpp's own
/// limit is LLAMA_MAX_LAYERS = 512 (src/llama-hparams.h).
const MAX_BLOCK_COUNT: u64 = 1 << 16;

const FILE: &str = "GGUF metadata";

/// `{arch}.attention.sliding_window_pattern` as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SlidingWindowPattern {
    /// A period `n`: llama.cpp's `set_swa_pattern(n, dense_first)` (src/llama-hparams.cpp)
    /// makes one layer in every `n` full attention: the last of each period, or the first for
    /// architectures that pass `dense_first`; `n == 0` makes every layer sliding.
    Period(u64),
    /// One flag per layer, `true` = sliding-window attention (bool or integer array).
    Layers(Vec<bool>),
}

/// Architecture metadata of a GGUF (`None` = key absent).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GgufArch {
    /// `general.architecture` (`llama`, `qwen3moe`, `gemma3`, `deepseek2`, `qwen3next`, ...)
    pub architecture: String,
    /// `general.name`
    pub name: Option<String>,
    /// `general.basename`
    pub basename: Option<String>,
    /// `general.size_label` (`8B`, `30B-A3B`)
    pub size_label: Option<String>,
    /// `general.file_type`: llama.cpp's `llama_ftype` (15 = MOSTLY_Q4_K_M, 7 = MOSTLY_Q8_0)
    pub file_type: Option<u64>,
    /// `general.quantization_version`
    pub quantization_version: Option<u64>,

    /// `{arch}.context_length`: the training context (llama.cpp's `n_ctx_train`)
    pub context_length: Option<u64>,
    /// `{arch}.embedding_length` (`n_embd`)
    pub embedding_length: Option<u64>,
    /// `{arch}.embedding_length_per_layer_input` (Gemma 3n per-layer inputs)
    pub embedding_length_per_layer_input: Option<u64>,
    /// `{arch}.block_count` (`n_layer`, including any MTP/NextN layers)
    pub block_count: Option<u64>,
    /// `{arch}.feed_forward_length` (`n_ff`, scalar or per layer)
    pub feed_forward_length: Option<Vec<u64>>,
    /// `{arch}.attention.head_count` (`n_head`, scalar or per layer)
    pub head_count: Option<Vec<u64>>,
    /// `{arch}.attention.head_count_kv` (`n_head_kv`, scalar or per layer; 0 = no attention)
    pub head_count_kv: Option<Vec<u64>>,
    /// `{arch}.attention.key_length` (`n_embd_head_k`; default n_embd / n_head)
    pub key_length: Option<u64>,
    /// `{arch}.attention.value_length` (`n_embd_head_v`)
    pub value_length: Option<u64>,
    /// `{arch}.attention.key_length_swa` (head size of sliding-window layers, where it differs)
    pub key_length_swa: Option<u64>,
    /// `{arch}.attention.value_length_swa`
    pub value_length_swa: Option<u64>,
    /// `{arch}.attention.key_length_mla` (MLA: per-head K width before absorption)
    pub key_length_mla: Option<u64>,
    /// `{arch}.attention.value_length_mla`
    pub value_length_mla: Option<u64>,
    /// `{arch}.attention.kv_lora_rank` (MLA latent width, `n_lora_kv`)
    pub kv_lora_rank: Option<u64>,
    /// `{arch}.attention.q_lora_rank` (`n_lora_q`)
    pub q_lora_rank: Option<u64>,
    /// `{arch}.rope.dimension_count` (`n_rot`)
    pub rope_dimension_count: Option<u64>,
    /// `{arch}.attention.sliding_window` (`n_swa`, tokens)
    pub sliding_window: Option<u64>,
    /// `{arch}.attention.sliding_window_pattern`
    pub sliding_window_pattern: Option<SlidingWindowPattern>,
    /// `{arch}.attention.shared_kv_layers` (Gemma 3n: trailing layers that reuse earlier KV)
    pub shared_kv_layers: Option<u64>,

    /// `{arch}.expert_count` (`n_expert`)
    pub expert_count: Option<u64>,
    /// `{arch}.expert_used_count` (`n_expert_used`)
    pub expert_used_count: Option<u64>,
    /// `{arch}.expert_shared_count` (`n_expert_shared`)
    pub expert_shared_count: Option<u64>,
    /// `{arch}.expert_feed_forward_length` (`n_ff_exp`)
    pub expert_feed_forward_length: Option<u64>,
    /// `{arch}.expert_shared_feed_forward_length` (`n_ff_shexp`)
    pub expert_shared_feed_forward_length: Option<u64>,
    /// `{arch}.leading_dense_block_count` (`n_layer_dense_lead`)
    pub leading_dense_block_count: Option<u64>,
    /// `{arch}.nextn_predict_layers` (MTP layers at the end of `block_count`)
    pub nextn_predict_layers: Option<u64>,

    /// `{arch}.ssm.conv_kernel` (`ssm_d_conv`)
    pub ssm_conv_kernel: Option<u64>,
    /// `{arch}.ssm.inner_size` (`ssm_d_inner`)
    pub ssm_inner_size: Option<u64>,
    /// `{arch}.ssm.state_size` (`ssm_d_state`)
    pub ssm_state_size: Option<u64>,
    /// `{arch}.ssm.group_count` (`ssm_n_group`)
    pub ssm_group_count: Option<u64>,
    /// `{arch}.ssm.time_step_rank` (`ssm_dt_rank`)
    pub ssm_time_step_rank: Option<u64>,
    /// `{arch}.wkv.head_size` (RWKV)
    pub wkv_head_size: Option<u64>,
    /// `{arch}.full_attention_interval` (hybrid models: every n-th layer is attention)
    pub full_attention_interval: Option<u64>,

    /// `{arch}.vocab_size`, else the length of `tokenizer.ggml.tokens`
    pub vocab_size: Option<u64>,

    /// `split.count` (shards in the set)
    pub split_count: Option<u64>,
    /// `split.no` (0-based shard index)
    pub split_no: Option<u64>,
    /// `split.tensors.count` (tensors in the whole set)
    pub split_tensors_count: Option<u64>,
}

impl GgufArch {
    /// Read the architecture keys; an error when `general.architecture` is missing, a key has the
    /// wrong type, or a per-layer array's length is not `block_count`.
    pub fn from_gguf(g: &GgufFile) -> Result<GgufArch, GgufError> {
        let architecture = string(g, "general.architecture")?
            .ok_or(GgufError::NoArchitecture { file: FILE.into() })?;
        let k = |suffix: &str| format!("{architecture}.{suffix}");
        let block_count = int(g, &k("block_count"))?;
        if let Some(n) = block_count.filter(|&n| n > MAX_BLOCK_COUNT) {
            let why = format!("at most {MAX_BLOCK_COUNT} layers");
            return Err(GgufError::OutOfRange {
                file: FILE.into(),
                key: k("block_count"),
                value: n,
                why,
            });
        }
        let per_layer = |suffix: &str| per_layer(g, &k(suffix), block_count);
        let vocab_size = match int(g, &k("vocab_size"))? {
            Some(v) => Some(v),
            None => g.array_len("tokenizer.ggml.tokens"),
        };
        Ok(GgufArch {
            name: string(g, "general.name")?,
            basename: string(g, "general.basename")?,
            size_label: string(g, "general.size_label")?,
            file_type: int(g, "general.file_type")?,
            quantization_version: int(g, "general.quantization_version")?,
            context_length: int(g, &k("context_length"))?,
            embedding_length: int(g, &k("embedding_length"))?,
            embedding_length_per_layer_input: int(g, &k("embedding_length_per_layer_input"))?,
            block_count,
            feed_forward_length: per_layer("feed_forward_length")?,
            head_count: per_layer("attention.head_count")?,
            head_count_kv: per_layer("attention.head_count_kv")?,
            key_length: int(g, &k("attention.key_length"))?,
            value_length: int(g, &k("attention.value_length"))?,
            key_length_swa: int(g, &k("attention.key_length_swa"))?,
            value_length_swa: int(g, &k("attention.value_length_swa"))?,
            key_length_mla: int(g, &k("attention.key_length_mla"))?,
            value_length_mla: int(g, &k("attention.value_length_mla"))?,
            kv_lora_rank: int(g, &k("attention.kv_lora_rank"))?,
            q_lora_rank: int(g, &k("attention.q_lora_rank"))?,
            rope_dimension_count: int(g, &k("rope.dimension_count"))?,
            sliding_window: int(g, &k("attention.sliding_window"))?,
            sliding_window_pattern: swa_pattern(
                g,
                &k("attention.sliding_window_pattern"),
                block_count,
            )?,
            shared_kv_layers: int(g, &k("attention.shared_kv_layers"))?,
            expert_count: int(g, &k("expert_count"))?,
            expert_used_count: int(g, &k("expert_used_count"))?,
            expert_shared_count: int(g, &k("expert_shared_count"))?,
            expert_feed_forward_length: int(g, &k("expert_feed_forward_length"))?,
            expert_shared_feed_forward_length: int(g, &k("expert_shared_feed_forward_length"))?,
            leading_dense_block_count: int(g, &k("leading_dense_block_count"))?,
            nextn_predict_layers: int(g, &k("nextn_predict_layers"))?,
            ssm_conv_kernel: int(g, &k("ssm.conv_kernel"))?,
            ssm_inner_size: int(g, &k("ssm.inner_size"))?,
            ssm_state_size: int(g, &k("ssm.state_size"))?,
            ssm_group_count: int(g, &k("ssm.group_count"))?,
            ssm_time_step_rank: int(g, &k("ssm.time_step_rank"))?,
            wkv_head_size: int(g, &k("wkv.head_size"))?,
            full_attention_interval: int(g, &k("full_attention_interval"))?,
            vocab_size,
            split_count: int(g, "split.count")?,
            split_no: int(g, "split.no")?,
            split_tensors_count: int(g, "split.tensors.count")?,
            architecture,
        })
    }

    /// The value for layer `il` of a scalar-or-per-layer key: the single entry for every layer,
    /// else entry `il` (as llama.cpp's `get_key_or_arr` fills its per-layer arrays).
    pub fn at(values: &[u64], il: usize) -> Option<u64> {
        match values {
            [one] => Some(*one),
            many => many.get(il).copied(),
        }
    }

    /// `n_head` of layer `il`.
    pub fn head_count_at(&self, il: usize) -> Option<u64> {
        Self::at(self.head_count.as_deref()?, il)
    }

    /// `n_head_kv` of layer `il` (defaults to `n_head`, as in llama.cpp's loader).
    pub fn head_count_kv_at(&self, il: usize) -> Option<u64> {
        match self.head_count_kv.as_deref() {
            Some(v) => Self::at(v, il),
            None => self.head_count_at(il),
        }
    }

    /// `n_ff` of layer `il`.
    pub fn feed_forward_length_at(&self, il: usize) -> Option<u64> {
        Self::at(self.feed_forward_length.as_deref()?, il)
    }
}

fn type_error(key: &str, expected: &'static str, v: &GgufValue) -> GgufError {
    GgufError::KeyType {
        file: FILE.into(),
        key: key.into(),
        expected,
        found: v.describe(),
    }
}

/// A non-negative integer key of any width.
fn int(g: &GgufFile, key: &str) -> Result<Option<u64>, GgufError> {
    match g.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| type_error(key, "a non-negative integer", v)),
    }
}

fn string(g: &GgufFile, key: &str) -> Result<Option<String>, GgufError> {
    match g.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_str()
            .map(|s| Some(s.to_string()))
            .ok_or_else(|| type_error(key, "a string", v)),
    }
}

/// A per-layer array must have exactly `block_count` entries (llama.cpp's `get_key_or_arr`
/// refuses any other length).
fn check_len(key: &str, len: usize, block_count: Option<u64>) -> Result<(), GgufError> {
    match block_count {
        Some(n) if n != len as u64 => Err(GgufError::PerLayerLength {
            file: FILE.into(),
            key: key.into(),
            len: len as u64,
            block_count: n,
        }),
        _ => Ok(()),
    }
}

/// A key that is one integer or an array of one integer per layer.
fn per_layer(
    g: &GgufFile,
    key: &str,
    block_count: Option<u64>,
) -> Result<Option<Vec<u64>>, GgufError> {
    let Some(v) = g.get(key) else { return Ok(None) };
    if let Some(x) = v.as_u64() {
        return Ok(Some(vec![x]));
    }
    let expected = "an integer or one integer per layer";
    let items = v.as_array().ok_or_else(|| type_error(key, expected, v))?;
    let values: Option<Vec<u64>> = items.iter().map(GgufValue::as_u64).collect();
    let values = values.ok_or_else(|| type_error(key, expected, v))?;
    check_len(key, values.len(), block_count)?;
    Ok(Some(values))
}

fn swa_pattern(
    g: &GgufFile,
    key: &str,
    block_count: Option<u64>,
) -> Result<Option<SlidingWindowPattern>, GgufError> {
    let Some(v) = g.get(key) else { return Ok(None) };
    if let Some(n) = v.as_u64() {
        return Ok(Some(SlidingWindowPattern::Period(n)));
    }
    let expected = "an integer period or one bool per layer";
    let items = v.as_array().ok_or_else(|| type_error(key, expected, v))?;
    let flags: Option<Vec<bool>> = items
        .iter()
        .map(|x| x.as_bool().or_else(|| x.as_u64().map(|n| n != 0)))
        .collect();
    let flags = flags.ok_or_else(|| type_error(key, expected, v))?;
    check_len(key, flags.len(), block_count)?;
    Ok(Some(SlidingWindowPattern::Layers(flags)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::GgufValueType;

    fn file(kv: Vec<(&str, GgufValue)>) -> GgufFile {
        GgufFile {
            version: 3,
            metadata: kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            tensors: vec![],
            data_offset: 32,
            header_bytes: 24,
        }
    }

    fn u32s(v: &[u32]) -> GgufValue {
        GgufValue::Array(v.iter().map(|&x| GgufValue::U32(x)).collect())
    }

    #[test]
    fn per_layer_arrays_and_patterns() {
        let g = file(vec![
            ("general.architecture", GgufValue::String("gemma3".into())),
            ("gemma3.block_count", GgufValue::U32(3)),
            ("gemma3.attention.head_count", u32s(&[8, 8, 16])),
            ("gemma3.attention.head_count_kv", GgufValue::I32(4)),
            ("gemma3.feed_forward_length", u32s(&[100, 200, 300])),
            ("gemma3.attention.sliding_window_pattern", GgufValue::U32(6)),
            ("gemma3.vocab_size", GgufValue::U64(262_144)),
            (
                "tokenizer.ggml.tokens",
                GgufValue::SkippedArray {
                    elem_type: GgufValueType::String,
                    len: 5,
                },
            ),
        ]);
        let a = GgufArch::from_gguf(&g).unwrap();
        assert_eq!(a.head_count_at(2), Some(16));
        assert_eq!(a.head_count_kv_at(2), Some(4));
        assert_eq!(a.feed_forward_length_at(1), Some(200));
        assert_eq!(a.feed_forward_length_at(3), None);
        assert_eq!(
            a.sliding_window_pattern,
            Some(SlidingWindowPattern::Period(6))
        );
        // {arch}.vocab_size wins over the token list
        assert_eq!(a.vocab_size, Some(262_144));
    }

    #[test]
    fn wrong_types_and_lengths_are_named() {
        let base = |k: &str, v: GgufValue| {
            file(vec![
                ("general.architecture", GgufValue::String("llama".into())),
                ("llama.block_count", GgufValue::U32(4)),
                (k, v),
            ])
        };
        let err =
            GgufArch::from_gguf(&base("llama.attention.head_count", u32s(&[8, 8]))).unwrap_err();
        assert!(
            matches!(
                err,
                GgufError::PerLayerLength {
                    len: 2,
                    block_count: 4,
                    ..
                }
            ),
            "{err}"
        );
        let err = GgufArch::from_gguf(&base(
            "llama.context_length",
            GgufValue::String("8k".into()),
        ))
        .unwrap_err();
        assert!(err.to_string().contains("llama.context_length") && err.to_string().contains("8k"));
        let err =
            GgufArch::from_gguf(&base("llama.embedding_length", GgufValue::I32(-1))).unwrap_err();
        assert!(matches!(err, GgufError::KeyType { .. }), "{err}");
        let err = GgufArch::from_gguf(&base(
            "llama.attention.sliding_window_pattern",
            GgufValue::Array(vec![GgufValue::F32(1.0); 4]),
        ))
        .unwrap_err();
        assert!(err.to_string().contains("one bool per layer"), "{err}");
        let mut g = file(vec![(
            "general.architecture",
            GgufValue::String("llama".into()),
        )]);
        g.metadata
            .push(("llama.block_count".into(), GgufValue::U64(1 << 40)));
        let err = GgufArch::from_gguf(&g).unwrap_err();
        assert!(matches!(err, GgufError::OutOfRange { .. }), "{err}");
        let err = GgufArch::from_gguf(&file(vec![])).unwrap_err();
        assert!(matches!(err, GgufError::NoArchitecture { .. }), "{err}");
        // bool flags per layer, and integer flags too
        let g = base(
            "llama.attention.sliding_window_pattern",
            GgufValue::Array(vec![
                GgufValue::I32(1),
                GgufValue::I32(0),
                GgufValue::I32(1),
                GgufValue::I32(1),
            ]),
        );
        let a = GgufArch::from_gguf(&g).unwrap();
        assert_eq!(
            a.sliding_window_pattern,
            Some(SlidingWindowPattern::Layers(vec![true, false, true, true]))
        );
    }
}
