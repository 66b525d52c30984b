//! `ModelSpec`: everything about a model that decides its memory, per layer.
//!
//! Readers (HF `config.json`, GGUF metadata, the catalog) fill a `ModelSpec`; engines read it.
//! Names follow llama.cpp's hparams where they exist (`n_embd`, `n_head_kv`, `n_ff`) so the engine
//! code can be held next to the engine's own source.

use serde::{Deserialize, Serialize};

/// How one layer attends, which decides what it caches per token and per sequence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AttentionKind {
    /// Causal attention over the whole context: K and V per token.
    Full,
    /// Attention over the last `window` tokens only (Gemma 2/3, gpt-oss, Mistral v0.1, Cohere2).
    SlidingWindow { window: u64 },
    /// Attention within fixed chunks of `chunk` tokens (Llama 4 local layers).
    Chunked { chunk: u64 },
    /// Multi-head latent attention (DeepSeek V2/V3, Kimi K2): the cache holds one latent of
    /// `kv_lora_rank + rope_dim` values per token, shared by all heads.
    Mla {
        kv_lora_rank: u64,
        rope_dim: u64,
        /// per-head no-rope part of K (`qk_nope_head_dim`), used by engines that cache the
        /// decompressed heads (pre-MLA llama.cpp)
        nope_dim: u64,
        v_head_dim: u64,
    },
    /// A recurrent / linear-attention layer with a fixed state per sequence.
    Recurrent(RecurrentState),
    /// No attention and no state (an MLP-only or MoE-only layer of a hybrid stack).
    None,
}

impl AttentionKind {
    /// The short name used in JSON (`full`, `sliding_window`, `chunked`, `mla`, `recurrent`, `none`).
    pub fn name(&self) -> &'static str {
        match self {
            AttentionKind::Full => "full",
            AttentionKind::SlidingWindow { .. } => "sliding_window",
            AttentionKind::Chunked { .. } => "chunked",
            AttentionKind::Mla { .. } => "mla",
            AttentionKind::Recurrent(_) => "recurrent",
            AttentionKind::None => "none",
        }
    }

    /// The window (sliding) or chunk (chunked) size, if any.
    pub fn window(&self) -> Option<u64> {
        match self {
            AttentionKind::SlidingWindow { window } => Some(*window),
            AttentionKind::Chunked { chunk } => Some(*chunk),
            _ => None,
        }
    }

    /// True when the layer keeps a per-token cache (anything but recurrent and none).
    pub fn has_kv(&self) -> bool {
        !matches!(self, AttentionKind::Recurrent(_) | AttentionKind::None)
    }
}

/// Which family of recurrent layer; decides how engines size the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecurrentKind {
    Mamba,
    Mamba2,
    GatedDeltaNet,
    Rwkv,
    Other,
}

/// Per-sequence state of a recurrent layer, in elements (engines apply the dtype).
/// Mirrors llama.cpp's `n_embd_r()` (conv/shift state) and `n_embd_s()` (ssm/wkv state).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecurrentState {
    pub kind: RecurrentKind,
    /// convolution (or token-shift) state elements per sequence
    pub conv_elems: u64,
    /// ssm / recurrent matrix state elements per sequence
    pub ssm_elems: u64,
}

/// The feed-forward part of one layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FfnKind {
    /// A dense MLP with this intermediate size (`n_ff`).
    Dense { n_ff: u64 },
    /// A mixture of experts; sizes in [`MoeSpec`].
    Moe,
    /// No feed-forward block in this layer (a pure mixer layer of a hybrid stack).
    None,
}

/// One transformer (or mixer) layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerSpec {
    pub attention: AttentionKind,
    pub n_head: u64,
    pub n_head_kv: u64,
    pub head_dim_k: u64,
    pub head_dim_v: u64,
    pub ffn: FfnKind,
    /// The layer reuses an earlier layer's KV cache and allocates none (Gemma 3n / Gemma 4).
    #[serde(default)]
    pub kv_shared: bool,
    /// A recurrent mixer running beside the attention in the same layer (Falcon-H1's parallel
    /// attention + Mamba2): its state is per sequence, on top of the layer's KV.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_ssm: Option<RecurrentState>,
}

impl LayerSpec {
    /// K elements per token this layer caches (`n_embd_k_gqa` in llama.cpp), 0 without KV.
    pub fn n_embd_k_gqa(&self) -> u64 {
        match &self.attention {
            AttentionKind::Mla {
                kv_lora_rank,
                rope_dim,
                ..
            } => kv_lora_rank + rope_dim,
            a if a.has_kv() && !self.kv_shared => self.n_head_kv * self.head_dim_k,
            _ => 0,
        }
    }

    /// V elements per token this layer caches (`n_embd_v_gqa`); MLA stores no separate V.
    pub fn n_embd_v_gqa(&self) -> u64 {
        match &self.attention {
            AttentionKind::Mla { .. } => 0,
            a if a.has_kv() && !self.kv_shared => self.n_head_kv * self.head_dim_v,
            _ => 0,
        }
    }
}

/// Mixture-of-experts layout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MoeSpec {
    /// routed experts per MoE layer
    pub n_expert: u64,
    /// routed experts used per token
    pub n_expert_used: u64,
    /// shared (always-on) experts per MoE layer
    pub n_expert_shared: u64,
    /// intermediate size of one routed expert
    pub n_ff_exp: u64,
    /// intermediate size of the shared expert block (all shared experts together)
    pub n_ff_shexp: u64,
    /// leading layers that are dense instead of MoE (DeepSeek `first_k_dense_replace`)
    pub n_leading_dense: u64,
}

/// How the checkpoint's weights are quantized (HF `quantization_config`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuantConfig {
    /// `awq`, `gptq`, `fp8`, `compressed-tensors`, `bitsandbytes`, `mxfp4`, `modelopt`, ...
    pub method: String,
    /// weight bits (4, 8) where the config says
    pub bits: Option<u32>,
    /// group size of the scales where the config says
    pub group_size: Option<u64>,
    /// a short description (`nvfp4`, `fp8 block 128x128`, `w4a16`)
    pub format: Option<String>,
    /// module name patterns kept unquantized (`lm_head`, vision tower)
    pub ignore: Vec<String>,
}

/// The numeric type a checkpoint stores its unquantized weights in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    F32,
    F16,
    Bf16,
    F8,
}

impl Dtype {
    pub fn bytes(self) -> u64 {
        match self {
            Dtype::F32 => 4,
            Dtype::F16 | Dtype::Bf16 => 2,
            Dtype::F8 => 1,
        }
    }

    /// Parse `torch_dtype` / `dtype` strings (`bfloat16`, `float16`, `fp16`, `auto`).
    pub fn parse(s: &str) -> Option<Dtype> {
        match s
            .trim()
            .trim_start_matches("torch.")
            .to_ascii_lowercase()
            .as_str()
        {
            "float32" | "fp32" | "f32" | "float" => Some(Dtype::F32),
            "float16" | "fp16" | "f16" | "half" => Some(Dtype::F16),
            "bfloat16" | "bf16" => Some(Dtype::Bf16),
            "float8" | "fp8" | "float8_e4m3fn" => Some(Dtype::F8),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::F16 => "f16",
            Dtype::Bf16 => "bf16",
            Dtype::F8 => "fp8",
        }
    }
}

/// Where a fact about the model came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// `config.json at ...`, `GGUF metadata of ...`, `embedded catalog`, `default of model_type X`
    pub source: String,
    /// fields that were not in the source and took a default (named with the default used)
    pub defaulted: Vec<String>,
    /// warnings a user should see (unknown model_type, guessed fields)
    pub warnings: Vec<String>,
}

/// Everything about a model that decides its memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSpec {
    /// repo id or file name the user gave
    pub id: String,
    /// HF architecture class (`LlamaForCausalLM`) or GGUF `general.architecture` mapped to it
    pub architecture: String,
    /// HF `model_type` of the text model (`llama`, `qwen3_moe`, `gemma3_text`)
    pub model_type: String,
    pub n_embd: u64,
    pub n_vocab: u64,
    /// training context (`max_position_embeddings`, GGUF `context_length`)
    pub n_ctx_train: u64,
    pub tie_word_embeddings: bool,
    /// the checkpoint's unquantized dtype
    pub dtype: Dtype,
    pub layers: Vec<LayerSpec>,
    pub moe: Option<MoeSpec>,
    pub quant: Option<QuantConfig>,
    /// multi-token-prediction layers shipped beside the main stack (DeepSeek V3, GLM-4.5 NextN)
    pub n_nextn_layers: u64,
    /// parameters of a vision/audio tower that ships in the same checkpoint, if known
    pub vision_params: u64,
    /// `vision_config`'s `num_hidden_layers` and `hidden_size` (24 and 1024 where absent, as
    /// SGLang reads them to size its default memory fraction); `None` without a vision_config
    #[serde(default)]
    pub vision_shape: Option<(u64, u64)>,
    /// the rotary-embedding cos/sin tables the model builds (one per distinct RoPE setting)
    #[serde(default)]
    pub rope_tables: Vec<RopeTable>,
    /// norm flavour and other arch quirks that change tensor lists
    pub arch: ArchFlags,
    pub provenance: Provenance,
}

/// One cos/sin table of a rotary embedding: `positions` rows of `rotary_dim` values (cos and sin
/// halves), built once per distinct RoPE setting and held beside the weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RopeTable {
    pub positions: u64,
    pub rotary_dim: u64,
}

impl RopeTable {
    /// Elements of the table.
    pub fn elems(&self) -> u64 {
        self.positions.saturating_mul(self.rotary_dim)
    }
}

/// Architecture details that change the tensor list but not the attention layout.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ArchFlags {
    /// Q/K/V projections carry biases (Qwen2, gpt-oss, GLM-4.5)
    pub qkv_bias: bool,
    /// attention output projection carries a bias
    pub o_bias: bool,
    /// MLP projections carry biases (GPT-NeoX, Falcon, gpt-oss experts)
    pub mlp_bias: bool,
    /// per-head RMS norm on Q and K (Qwen3, Gemma 3, GLM-4.5 with use_qk_norm)
    pub qk_norm: bool,
    /// LayerNorm with bias rather than RMSNorm (GPT-NeoX, Falcon)
    pub norm_bias: bool,
    /// the MLP has a gate (SwiGLU/GeGLU); false for GELU MLPs (GPT-NeoX, Falcon)
    pub gated_mlp: bool,
    /// extra norms after attention and after the MLP (Gemma 2/3, GLM-4)
    pub post_norms: bool,
    /// attention and MLP share one input norm (parallel block: GPT-NeoX, Falcon, Cohere, Phi-2)
    pub parallel_block: bool,
    /// learned attention sinks, one per head (gpt-oss)
    pub attn_sinks: bool,
    /// routed-expert bias used for selection (DeepSeek V3 `e_score_correction_bias`)
    pub expert_bias: bool,
    /// full-attention layers have no V projection: V is computed by the K projection (Gemma 4
    /// `attention_k_eq_v`); the cache still holds V (vLLM gemma4.py loads K into the V slot,
    /// llama.cpp gemma4 uses Kcur as Vcur)
    #[serde(default)]
    pub v_from_k: bool,
    /// width of the per-layer token embeddings (Gemma 3n / Gemma 4 E2B/E4B
    /// `hidden_size_per_layer_input`; 0 = none): a `[n_vocab, n_layer * width]` table, a
    /// `[n_embd, n_layer * width]` projection and a gate/projection pair in every layer
    #[serde(default)]
    pub per_layer_embd: u64,
}

impl ModelSpec {
    pub fn n_layer(&self) -> u64 {
        self.layers.len() as u64
    }

    /// The attention heads of the first attention layer (the model's nominal `n_head`).
    pub fn n_head(&self) -> u64 {
        self.layers
            .iter()
            .find(|l| l.attention.has_kv())
            .or(self.layers.first())
            .map(|l| l.n_head)
            .unwrap_or(0)
    }

    /// Layers grouped by attention kind, in order of first appearance: (kind name, count, window).
    pub fn attention_summary(&self) -> Vec<(&'static str, u64, Option<u64>)> {
        let mut out: Vec<(&'static str, u64, Option<u64>)> = Vec::new();
        for l in &self.layers {
            let key = (l.attention.name(), l.attention.window());
            match out.iter_mut().find(|(n, _, w)| (*n, *w) == key) {
                Some(e) => e.1 += 1,
                None => out.push((key.0, 1, key.1)),
            }
        }
        out
    }

    /// "40 sliding window (1024) + 8 full" style description.
    pub fn attention_words(&self) -> String {
        let parts: Vec<String> = self
            .attention_summary()
            .iter()
            .map(|(name, n, w)| {
                let words = name.replace('_', " ");
                match (name, w) {
                    (&"mla", _) => format!("{n} MLA"),
                    (_, Some(w)) => format!("{n} {words} ({w})"),
                    _ => format!("{n} {words}"),
                }
            })
            .collect();
        parts.join(" + ")
    }

    /// Bytes per token of context summed over the layers whose cache grows with the context
    /// (full attention and MLA), for a cache element of `elem_bytes` bytes.
    pub fn kv_bytes_per_token(&self, elem_bytes: f64) -> u64 {
        let elems: u64 = self
            .layers
            .iter()
            .filter(|l| matches!(l.attention, AttentionKind::Full | AttentionKind::Mla { .. }))
            .map(|l| l.n_embd_k_gqa() + l.n_embd_v_gqa())
            .sum();
        (elems as f64 * elem_bytes).round() as u64
    }

    /// Bytes of one sequence's cache in the sliding-window and chunked layers once the context
    /// reaches their window.
    pub fn kv_bytes_windowed(&self, elem_bytes: f64) -> u64 {
        let v: f64 = self
            .layers
            .iter()
            .filter_map(|l| {
                l.attention
                    .window()
                    .map(|w| (w * (l.n_embd_k_gqa() + l.n_embd_v_gqa())) as f64 * elem_bytes)
            })
            .sum();
        v.round() as u64
    }

    /// Elements of recurrent state per sequence, summed over recurrent layers: (conv, ssm).
    pub fn recurrent_state_elems(&self) -> (u64, u64) {
        let states = self.layers.iter().flat_map(|l| {
            let own = match &l.attention {
                AttentionKind::Recurrent(s) => Some(s),
                _ => None,
            };
            own.into_iter().chain(l.parallel_ssm.as_ref())
        });
        states.fold((0, 0), |acc, s| (acc.0 + s.conv_elems, acc.1 + s.ssm_elems))
    }

    pub fn is_moe(&self) -> bool {
        self.moe.is_some()
    }
}
