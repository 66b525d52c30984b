//! Bytes of one linear layer's weight under each quantization vLLM loads, and which modules a
//! checkpoint leaves unquantized.

use super::args::VllmConfig;
use vramfit_model::{Dtype, ModelSpec, QuantConfig};

/// How a quantizable linear layer is stored on the GPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LinearStorage {
    /// unquantized, in the model dtype (bytes per element)
    Dense { bytes: u64 },
    /// integer weights packed `bits` per element with a 16-bit scale per `group` input
    /// elements (AWQ, GPTQ, compressed-tensors pack-quantized), plus packed zero points
    IntGroup { bits: u64, group: u64, zeros: bool },
    /// 8-bit weights (FP8 or INT8) with one fp32 scale per output row
    Byte8Channel,
    /// FP8 weights with fp32 scales per `block`×`block` tile (DeepSeek-style block quant)
    Fp8Block { block: u64 },
    /// FP8 weights with one scale per tensor (online `--quantization fp8`, per-tensor ckpts)
    Fp8Tensor,
    /// NVFP4: 4-bit values, an FP8 scale per 16 elements, two fp32 global scales
    Nvfp4,
    /// MXFP4: 4-bit values, an E8M0 scale per 32 elements (gpt-oss experts)
    Mxfp4,
    /// bitsandbytes NF4/FP4: 4-bit values with a double-quantized absmax per 64 elements
    Bnb4,
}

impl LinearStorage {
    /// Bytes of a weight of `n_in` × `n_out` elements.
    pub fn bytes(self, n_in: u64, n_out: u64) -> u64 {
        let elems = n_in * n_out;
        match self {
            LinearStorage::Dense { bytes } => elems * bytes,
            LinearStorage::IntGroup { bits, group, zeros } => {
                let groups = n_in.div_ceil(group.max(1));
                let packed = elems * bits / 8;
                // awq/gptq checkpoints: fp16 scales [groups, out]; qzeros int32-packed [groups, out*bits/32]
                let scales = groups * n_out * 2;
                let zero_bytes = if zeros { groups * n_out * bits / 8 } else { 0 };
                packed + scales + zero_bytes
            }
            LinearStorage::Byte8Channel => elems + n_out * 4,
            LinearStorage::Fp8Block { block } => {
                elems + n_in.div_ceil(block) * n_out.div_ceil(block) * 4
            }
            LinearStorage::Fp8Tensor => elems + 8,
            // modelopt / compressed-tensors NVFP4: weight_packed u8 [out, in/2], weight_scale
            // fp8 [out, in/16], weight_global_scale + input_global_scale fp32
            LinearStorage::Nvfp4 => elems / 2 + elems / 16 + 8,
            // gpt-oss mxfp4 experts: blocks u8 [.., in/2], scales u8 [.., in/32]
            LinearStorage::Mxfp4 => elems / 2 + elems / 32,
            // bitsandbytes 4-bit: packed u8 [elems/2]; nested-quantized absmax u8 per 64
            // plus fp32 absmax per 256 blocks
            LinearStorage::Bnb4 => elems / 2 + elems / 64 + elems / (64 * 256) * 4,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            LinearStorage::Dense { .. } => "unquantized",
            LinearStorage::IntGroup { bits: 4, .. } => "int4 grouped",
            LinearStorage::IntGroup { .. } => "int grouped",
            LinearStorage::Byte8Channel => "8-bit per-channel",
            LinearStorage::Fp8Block { .. } => "fp8 block",
            LinearStorage::Fp8Tensor => "fp8 per-tensor",
            LinearStorage::Nvfp4 => "nvfp4",
            LinearStorage::Mxfp4 => "mxfp4",
            LinearStorage::Bnb4 => "bitsandbytes 4-bit",
        }
    }
}

/// What the weights of this run look like: the dtype of unquantized tensors, the storage of
/// quantized linears, and which linears are quantized.
#[derive(Debug, Clone)]
pub struct WeightScheme {
    /// bytes per element of unquantized tensors (embeddings, norms, lm_head)
    pub dense_bytes: u64,
    /// storage of the quantized linear layers (attention and MLP projections)
    pub linear: LinearStorage,
    /// only the routed experts are quantized (gpt-oss MXFP4)
    pub experts_only: bool,
    /// module patterns the checkpoint keeps unquantized
    pub ignore: Vec<String>,
    pub quant_name: Option<String>,
}

impl WeightScheme {
    pub fn of(spec: &ModelSpec, cfg: &VllmConfig) -> WeightScheme {
        let dense_bytes = model_dtype(spec, cfg).bytes();
        let dense = LinearStorage::Dense { bytes: dense_bytes };
        let mut scheme = WeightScheme {
            dense_bytes,
            linear: dense,
            experts_only: false,
            ignore: Vec::new(),
            quant_name: None,
        };
        if let Some(q) = &spec.quant {
            scheme.linear = storage_of_checkpoint(q);
            scheme.experts_only = q.method == "mxfp4";
            scheme.ignore = q.ignore.clone();
            scheme.quant_name = Some(q.method.clone());
        } else if let Some(online) = cfg.quantization.as_deref() {
            // quantization applied while loading an unquantized checkpoint
            scheme.linear = match online.to_ascii_lowercase().as_str() {
                // fp8.py Fp8LinearMethod: dynamic per-tensor scale when the ckpt is not fp8
                "fp8" | "ptpc_fp8" => LinearStorage::Fp8Tensor,
                "bitsandbytes" => LinearStorage::Bnb4,
                _ => dense,
            };
            scheme.quant_name = Some(online.to_string());
        }
        scheme
    }

    /// Storage of the linear `name` (`model.layers.3.self_attn.q_proj`); `expert` marks routed
    /// experts.
    pub fn linear_for(&self, name: &str, expert: bool) -> LinearStorage {
        let dense = LinearStorage::Dense {
            bytes: self.dense_bytes,
        };
        if self.experts_only && !expert {
            return dense;
        }
        if self.is_ignored(name) {
            return dense;
        }
        self.linear
    }

    /// vLLM's `is_layer_skipped` / `should_ignore_layer`: `re:` patterns are regexes, others
    /// match as substrings of the module name (AWQ `modules_to_not_convert`) or exactly.
    pub fn is_ignored(&self, name: &str) -> bool {
        self.ignore.iter().any(|p| match p.strip_prefix("re:") {
            Some(re) => regex::Regex::new(re).is_ok_and(|r| r.is_match(name)),
            None => name.contains(p.as_str()),
        })
    }
}

/// The dtype unquantized weights are loaded in: `--dtype`, else the checkpoint's (float32
/// checkpoints load as bfloat16: vllm/config/model.py `_get_and_verify_dtype`).
pub fn model_dtype(spec: &ModelSpec, cfg: &VllmConfig) -> Dtype {
    let given = cfg
        .dtype
        .as_deref()
        .filter(|d| !d.eq_ignore_ascii_case("auto"))
        .and_then(Dtype::parse);
    match given.unwrap_or(spec.dtype) {
        Dtype::F32 if given.is_none() => Dtype::Bf16,
        Dtype::F8 => Dtype::Bf16,
        d => d,
    }
}

fn storage_of_checkpoint(q: &QuantConfig) -> LinearStorage {
    let format = q.format.clone().unwrap_or_default().to_ascii_lowercase();
    let bits = q.bits.unwrap_or(4) as u64;
    let group = q.group_size.unwrap_or(128);
    match q.method.as_str() {
        "awq" | "gptq" | "awq_marlin" | "gptq_marlin" | "auto-round" | "auto_round" => {
            LinearStorage::IntGroup {
                bits,
                group,
                zeros: true,
            }
        }
        "fp8" => match format.strip_prefix("fp8 block ") {
            Some(dims) => LinearStorage::Fp8Block {
                block: dims
                    .split('x')
                    .next()
                    .and_then(|d| d.parse().ok())
                    .unwrap_or(128),
            },
            None => LinearStorage::Fp8Tensor,
        },
        "mxfp4" => LinearStorage::Mxfp4,
        "bitsandbytes" if bits == 8 => LinearStorage::Byte8Channel,
        "bitsandbytes" => LinearStorage::Bnb4,
        "modelopt" | "modelopt_fp4" => {
            if format.contains("fp4") || q.method == "modelopt_fp4" || bits == 4 {
                LinearStorage::Nvfp4
            } else {
                LinearStorage::Fp8Tensor
            }
        }
        "compressed-tensors" | "compressed_tensors" => {
            if format.contains("nvfp4") || (format.contains("float") && bits == 4) {
                LinearStorage::Nvfp4
            } else if bits == 8 {
                LinearStorage::Byte8Channel
            } else {
                // pack-quantized w4a16 / w8a16: symmetric unless the scheme says otherwise
                LinearStorage::IntGroup {
                    bits,
                    group: q.group_size.unwrap_or(u64::MAX),
                    zeros: false,
                }
            }
        }
        _ if bits == 8 => LinearStorage::Byte8Channel,
        _ => LinearStorage::IntGroup {
            bits,
            group,
            zeros: true,
        },
    }
}
