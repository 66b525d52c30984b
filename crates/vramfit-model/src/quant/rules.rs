//! llama-quantize's per-tensor type choice, ported from llama.cpp `src/llama-quant.cpp`
//! @007dbbf (2026): `llama_tensor_get_type_impl` with the counters of `quantize_state_impl`
//! (roles, the never-quantized list and the fallback are in `category.rs`).
//!
//! Changes over time that matter for sizes:
//! - Before the 2026 "tensor_category" refactor, `attn_qkv` and `attn_kv_b` did not take the
//!   `attn_v` branch: `attn_qkv` had its own rule (Q4_K_M -> q5_K, Q5_K_M -> q6_K, Q3_K_M/L and
//!   IQ3_M -> q4_K) and `attn_kv_b` kept the default type. Today both count as attn_v-like.
//! - Before the same refactor the fallback for q2_K/q3_K rows not divisible by 256 was iq4_nl;
//!   it is q4_0 now.
//! - The MXFP4_MOE file type exists since the gpt-oss release (2025-08).

use super::category::{fallback, Category};
use super::FileType;
use crate::ggml::GgmlType;
use crate::spec::ModelSpec;
use crate::weights::{Tensor, WeightSet};
/// Which generation of llama-quantize's rules to follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QuantRules {
    /// llama.cpp after the 2026 `tensor_category` refactor (read at @007dbbf): `attn_qkv` and
    /// `attn_kv_b` take the attn_v rules; q2_K/q3_K rows that do not fit fall back to q4_0.
    #[default]
    Current,
    /// llama.cpp before that refactor (every GGUF published through 2025): only `attn_v`
    /// takes the attn_v rules, `attn_qkv` has its own (Q3_K_M/L, IQ3_M -> q4_K, Q4_K_M ->
    /// q5_K, Q5_K_M -> q6_K), `attn_kv_b` keeps the default; q2_K/q3_K fall back to iq4_nl.
    Legacy,
}
/// `use_more_bits`: the first and last eighth of the layers and every third one between.
fn use_more_bits(i_layer: i64, n_layers: i64) -> bool {
    i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2
}

/// `quantize_state_impl` plus the model facts the rules read.
pub(crate) struct QuantState {
    ftype: FileType,
    rules: QuantRules,
    has_imatrix: bool,
    has_tied_embeddings: bool,
    is_falcon: bool,
    /// `LLM_TYPE_70B`: Llama-2/3 70B (80 layers, GQA) and Qwen2 80-layer models
    /// (llama-model.cpp `load_hparams` type tables)
    is_70b: bool,
    /// `hparams.n_gqa()` of layer 0: n_head / n_head_kv, 0 when layer 0 has no KV heads
    n_gqa: u64,
    n_expert: u64,
    n_attention_wv: i64,
    n_ffn_down: i64,
    n_ffn_gate: i64,
    n_ffn_up: i64,
    i_attention_wv: i64,
    i_ffn_down: i64,
    i_ffn_gate: i64,
    i_ffn_up: i64,
}

impl QuantState {
    pub(crate) fn new(
        set: &WeightSet,
        spec: &ModelSpec,
        ftype: FileType,
        imatrix: bool,
        rules: QuantRules,
    ) -> QuantState {
        let n_attention_wv = set
            .tensors
            .iter()
            .filter(|t| Category::of(&t.name).is_attn_v_like())
            .count() as i64;
        let has_output = set.tensors.iter().any(|t| t.name == "output.weight");
        // hparams.n_layer_all: the GGUF block count, NextN blocks included
        let max_blk = set
            .tensors
            .iter()
            .filter_map(|t| {
                t.name
                    .strip_prefix("blk.")?
                    .split('.')
                    .next()?
                    .parse::<i64>()
                    .ok()
            })
            .max()
            .map(|m| m + 1)
            .unwrap_or(0);
        let n_layer_all = max_blk.max(spec.n_layer() as i64);
        let n_gqa = n_gqa_of_layer0(spec);
        let n_expert = spec.moe.as_ref().map(|m| m.n_expert).unwrap_or(0);
        let n_layer = spec.n_layer();
        let first = spec.layers.first();
        let gqa_model = first.is_some_and(|l| l.n_head != l.n_head_kv);
        let is_70b = match spec.model_type.as_str() {
            "llama" | "mistral" => n_expert != 8 && n_layer == 80 && gqa_model,
            "qwen2" => n_layer == 80,
            _ => false,
        };
        QuantState {
            ftype,
            rules,
            has_imatrix: imatrix,
            has_tied_embeddings: !has_output,
            is_falcon: spec.model_type == "falcon",
            is_70b,
            n_gqa,
            n_expert,
            n_attention_wv,
            n_ffn_down: n_layer_all,
            n_ffn_gate: n_layer_all,
            n_ffn_up: n_layer_all,
            i_attention_wv: 0,
            i_ffn_down: 0,
            i_ffn_gate: 0,
            i_ffn_up: 0,
        }
    }

    /// `llama_tensor_get_type` for a tensor that allows quantization.
    pub(crate) fn tensor_type(&mut self, t: &Tensor, default_type: GgmlType) -> GgmlType {
        if !default_type.is_quantized() {
            // F32 / F16 / BF16 files: every quantizable tensor takes the default type
            return default_type;
        }
        let category = Category::of(&t.name);
        let chosen = self.mix_type(t, category, default_type);
        fallback(t, chosen, self.rules)
    }

    /// Whether the attn_v rules apply to this category under the chosen rule generation.
    fn v_like(&self, cat: Category) -> bool {
        match self.rules {
            QuantRules::Current => cat.is_attn_v_like(),
            QuantRules::Legacy => cat == Category::AttnV,
        }
    }

    /// The layer index for an FFN rule: from the name for MoE models (experts of a layer are
    /// not consecutive in old Mixtral files), else the running counter.
    fn layer_info(&self, counter: i64, n_layer: i64, name: &str) -> (i64, i64) {
        if self.n_expert > 1 {
            if let Some(il) = name
                .strip_prefix("blk.")
                .and_then(|r| r.split('.').next())
                .and_then(|n| n.parse::<i64>().ok())
            {
                return (il, n_layer);
            }
        }
        (counter, n_layer)
    }

    /// `llama_tensor_get_type_impl`: the mix rules, branch by branch in upstream order.
    fn mix_type(&mut self, t: &Tensor, cat: Category, mut new_type: GgmlType) -> GgmlType {
        use FileType as F;
        use GgmlType as G;
        let ft = self.ftype;
        let n_gqa = self.n_gqa;
        let n_expert = self.n_expert;
        let iq2_family = matches!(
            ft,
            F::IQ2_XXS | F::IQ2_XS | F::IQ1_S | F::IQ2_S | F::IQ2_M | F::IQ1_M
        );
        let iq2_s_or_m = matches!(ft, F::IQ2_S | F::IQ2_M);

        if cat == Category::Output || (self.has_tied_embeddings && cat == Category::TokenEmbd) {
            // the output matrix (or the tied embedding that serves as it)
            let nx = t.dims.first().copied().unwrap_or(0);
            // MXFP4_MOE, Falcon, and rows that do not fit the default type's block: q8_0
            if ft == F::MXFP4_MOE || self.is_falcon || nx % new_type.block_elems() != 0 {
                new_type = G::Q8_0;
            } else if matches!(
                ft,
                F::IQ2_XXS | F::IQ2_XS | F::IQ3_XXS | F::IQ1_S | F::IQ2_S | F::IQ2_M | F::IQ1_M
            ) {
                new_type = G::Q5_K;
            } else if new_type != G::Q8_0 {
                new_type = G::Q6_K;
            }
        } else if ft == F::MXFP4_MOE {
            // stacked experts (3-D) to mxfp4, every other matrix to q8_0
            let ne2 = t.dims.get(2).copied().unwrap_or(1);
            new_type = if ne2 > 1 { G::MXFP4 } else { G::Q8_0 };
        } else if cat == Category::TokenEmbd {
            if matches!(ft, F::IQ2_XXS | F::IQ2_XS | F::IQ1_S | F::IQ1_M) {
                new_type = G::Q2_K;
            } else if iq2_s_or_m || ft == F::IQ3_XXS {
                new_type = G::IQ3_S;
            } else if matches!(ft, F::TQ1_0 | F::TQ2_0) {
                new_type = G::Q4_K;
            }
        } else if iq2_family {
            if self.v_like(cat) {
                new_type = if n_gqa >= 4 || n_expert >= 4 {
                    G::Q4_K
                } else if iq2_s_or_m {
                    G::IQ3_S
                } else {
                    G::Q2_K
                };
                self.i_attention_wv += 1;
            } else if n_expert == 8 && cat == Category::AttnK {
                new_type = G::Q4_K;
            } else if cat == Category::FfnDown {
                if self.i_ffn_down < self.n_ffn_down / 8 {
                    new_type = if iq2_s_or_m { G::IQ3_S } else { G::Q2_K };
                }
                self.i_ffn_down += 1;
            } else if cat == Category::AttnOutput {
                if n_expert == 8 {
                    new_type = G::Q5_K;
                } else if matches!(ft, F::IQ1_S | F::IQ1_M) {
                    new_type = G::IQ2_XXS;
                } else if iq2_s_or_m {
                    new_type = G::IQ3_S;
                }
            }
        } else if self.v_like(cat) {
            new_type = self.attn_v_type(new_type);
            self.i_attention_wv += 1;
        } else if cat == Category::AttnK {
            if n_expert == 8 {
                // "for the 8-expert model, bumping this to Q8_0 trades just ~128MB"
                new_type = G::Q8_0;
            } else if ft == F::IQ3_XS {
                new_type = G::IQ3_XXS;
            } else if ft == F::IQ3_XXS {
                new_type = G::IQ2_S;
            }
        } else if cat == Category::AttnQ {
            if ft == F::IQ3_XS {
                new_type = G::IQ3_XXS;
            } else if ft == F::IQ3_XXS {
                new_type = G::IQ2_S;
            }
        } else if cat == Category::FfnDown {
            let (il, nl) = self.layer_info(self.i_ffn_down, self.n_ffn_down, &t.name);
            new_type = self.ffn_down_type(new_type, il, nl);
            self.i_ffn_down += 1;
        } else if cat == Category::AttnOutput {
            if !self.is_falcon {
                if n_expert == 8 {
                    if matches!(
                        ft,
                        F::Q2_K
                            | F::IQ3_XS
                            | F::IQ3_XXS
                            | F::Q3_K_S
                            | F::Q3_K_M
                            | F::IQ4_NL
                            | F::Q4_K_S
                            | F::Q4_K_M
                            | F::IQ3_S
                            | F::IQ3_M
                            | F::IQ4_XS
                    ) {
                        new_type = G::Q5_K;
                    }
                } else {
                    match ft {
                        F::Q2_K => new_type = G::Q3_K,
                        F::IQ3_XXS => new_type = G::IQ3_S,
                        F::Q3_K_M | F::IQ3_M => new_type = G::Q4_K,
                        F::Q3_K_L => new_type = G::Q5_K,
                        _ => {}
                    }
                }
            } else if ft == F::Q3_K_L {
                new_type = G::Q4_K;
            }
        } else if cat == Category::AttnQkv {
            // only reachable with the legacy rules (today attn_qkv takes the attn_v branch)
            match ft {
                F::Q3_K_M | F::Q3_K_L | F::IQ3_M => new_type = G::Q4_K,
                F::Q4_K_M => new_type = G::Q5_K,
                F::Q5_K_M => new_type = G::Q6_K,
                _ => {}
            }
        } else if cat == Category::FfnGate || cat == Category::FfnUp {
            let (il, nl) = if cat == Category::FfnGate {
                self.layer_info(self.i_ffn_gate, self.n_ffn_gate, &t.name)
            } else {
                self.layer_info(self.i_ffn_up, self.n_ffn_up, &t.name)
            };
            if ft == F::IQ3_XS && il >= nl / 8 && il < 7 * nl / 8 {
                new_type = G::IQ3_XXS;
            }
            if cat == Category::FfnGate {
                self.i_ffn_gate += 1;
            } else {
                self.i_ffn_up += 1;
            }
        }
        new_type
    }

    /// The attn_v (and attn_qkv / attn_kv_b) rule outside the IQ1/IQ2 family.
    fn attn_v_type(&self, mut new_type: GgmlType) -> GgmlType {
        use FileType as F;
        use GgmlType as G;
        let ft = self.ftype;
        let gqa4 = self.n_gqa >= 4;
        match ft {
            F::Q2_K => new_type = if gqa4 { G::Q4_K } else { G::Q3_K },
            F::Q2_K_S if gqa4 => new_type = G::Q4_K,
            F::IQ3_XXS => {
                new_type = if gqa4 {
                    G::Q4_K
                } else if !self.has_imatrix {
                    G::IQ3_S
                } else {
                    G::IQ3_XXS
                }
            }
            F::IQ3_XS | F::IQ3_S if gqa4 => new_type = G::Q4_K,
            F::IQ3_M => new_type = G::Q4_K,
            F::Q3_K_M => {
                new_type = if self.i_attention_wv < 2 {
                    G::Q5_K
                } else {
                    G::Q4_K
                }
            }
            F::Q3_K_L => new_type = G::Q5_K,
            F::IQ4_NL | F::IQ4_XS if gqa4 => new_type = G::Q5_K,
            F::Q4_K_M | F::Q5_K_M if use_more_bits(self.i_attention_wv, self.n_attention_wv) => {
                new_type = G::Q6_K
            }
            F::Q4_K_S if self.i_attention_wv < 4 => new_type = G::Q5_K,
            _ => {}
        }
        if self.is_70b && matches!(new_type, G::Q3_K | G::Q4_K) {
            // 70B: 8 heads share one attn_v, so it is 8x smaller than attn_q; more bits are cheap
            new_type = G::Q5_K;
        }
        if self.n_expert == 8 {
            new_type = G::Q8_0;
        }
        new_type
    }

    /// The ffn_down rule outside the IQ1/IQ2 family, for layer `il` of `nl`.
    fn ffn_down_type(&self, mut new_type: GgmlType, il: i64, nl: i64) -> GgmlType {
        use FileType as F;
        use GgmlType as G;
        let ft = self.ftype;
        match ft {
            F::Q2_K => new_type = G::Q3_K,
            F::Q2_K_S if il < nl / 8 => new_type = G::Q4_K,
            F::IQ3_XXS if !self.has_imatrix => {
                new_type = if il < nl / 8 { G::Q4_K } else { G::Q3_K }
            }
            F::Q3_K_M => {
                new_type = if il < nl / 16 {
                    G::Q5_K
                } else if !self.is_falcon || use_more_bits(il, nl) {
                    G::Q4_K
                } else {
                    G::Q3_K
                }
            }
            F::IQ3_M if il < nl / 8 || (self.n_expert == 8 && use_more_bits(il, nl)) => {
                new_type = G::Q4_K
            }
            F::Q3_K_L => new_type = if self.is_falcon { G::Q4_K } else { G::Q5_K },
            F::Q4_K_M => {
                if self.is_falcon {
                    new_type = if il < nl / 16 {
                        G::Q6_K
                    } else if use_more_bits(il, nl) {
                        G::Q5_K
                    } else {
                        G::Q4_K
                    };
                } else if use_more_bits(il, nl) {
                    new_type = G::Q6_K;
                }
            }
            F::IQ4_NL | F::IQ4_XS if il < nl / 8 && !self.has_imatrix => new_type = G::Q5_K,
            F::Q5_K_M if use_more_bits(il, nl) => new_type = G::Q6_K,
            F::Q4_K_S if !self.is_falcon && il < nl / 8 => new_type = G::Q5_K,
            F::Q4_0 | F::Q5_0 if self.has_imatrix && il < nl / 8 => {
                // guard the first ffn_down layers of imatrix Q4_0/Q5_0 files
                new_type = if ft == F::Q4_0 { G::Q4_1 } else { G::Q5_1 };
            }
            _ => {}
        }
        new_type
    }
}

/// `hparams.n_gqa()` (layer 0's n_head / n_head_kv, 0 without KV heads) as the GGUF states it:
/// Mamba hybrids (Jamba, Nemotron-H) write a per-layer `head_count_kv` with 0 for mixer
/// layers, so a leading Mamba layer gives 0; Qwen3-Next writes one scalar for all layers, so
/// its leading DeltaNet layer reports the attention layers' ratio.
fn n_gqa_of_layer0(spec: &ModelSpec) -> u64 {
    use crate::spec::{AttentionKind, RecurrentKind};
    let Some(first) = spec.layers.first() else {
        return 0;
    };
    let layer = match &first.attention {
        AttentionKind::Recurrent(s) if s.kind == RecurrentKind::GatedDeltaNet => {
            match spec.layers.iter().find(|l| l.attention.has_kv()) {
                Some(l) => l,
                None => return 0,
            }
        }
        a if !a.has_kv() => return 0,
        _ => first,
    };
    layer.n_head.checked_div(layer.n_head_kv).unwrap_or(0)
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn use_more_bits_for_32_layers() {
        let picked: Vec<i64> = (0..32).filter(|&i| use_more_bits(i, 32)).collect();
        assert_eq!(
            picked,
            vec![0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]
        );
    }
}
