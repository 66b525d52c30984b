//! The checkpoint's `quantization_config` → [`QuantConfig`].

use crate::spec::QuantConfig;
use serde_json::Value;

pub fn quant_config(outer: &Value) -> Option<QuantConfig> {
    let q = outer
        .get("quantization_config")
        .or_else(|| {
            outer
                .get("text_config")
                .and_then(|t| t.get("quantization_config"))
        })
        .filter(|q| q.is_object())?;
    let method = q
        .get("quant_method")
        .and_then(|v| v.as_str())
        .unwrap_or("unknown")
        .to_ascii_lowercase();
    let num = |k: &str| q.get(k).and_then(|v| v.as_u64());
    let mut bits = num("bits").or_else(|| num("w_bit")).map(|b| b as u32);
    let mut group_size = num("group_size").or_else(|| num("q_group_size"));
    let mut format = q.get("fmt").and_then(|v| v.as_str()).map(str::to_string);
    // compressed-tensors: the weight scheme of the first config group
    // (compressed-tensors QuantizationScheme: weights.num_bits / group_size / type)
    if let Some(groups) = q.get("config_groups").and_then(|g| g.as_object()) {
        if let Some(w) = groups.values().find_map(|g| g.get("weights")) {
            bits = bits.or(w.get("num_bits").and_then(|v| v.as_u64()).map(|b| b as u32));
            group_size = group_size.or(w.get("group_size").and_then(|v| v.as_u64()));
            let kind = w.get("type").and_then(|v| v.as_str()).unwrap_or("int");
            let fmt_name = q.get("format").and_then(|v| v.as_str()).unwrap_or("");
            format = format.or_else(|| {
                Some(format!(
                    "{fmt_name} {kind}{}",
                    bits.map(|b| b.to_string()).unwrap_or_default()
                ))
            });
        }
    }
    if method == "fp8" {
        bits = bits.or(Some(8));
        if let Some(b) = q.get("weight_block_size").and_then(|v| v.as_array()) {
            let dims: Vec<String> = b
                .iter()
                .filter_map(|x| x.as_u64())
                .map(|x| x.to_string())
                .collect();
            format = Some(format!("fp8 block {}", dims.join("x")));
        }
    }
    if method == "bitsandbytes" {
        bits = if q
            .get("load_in_4bit")
            .and_then(|v| v.as_bool())
            .unwrap_or(false)
        {
            Some(4)
        } else if q
            .get("load_in_8bit")
            .and_then(|v| v.as_bool())
            .unwrap_or(false)
        {
            Some(8)
        } else {
            bits
        };
        format = q
            .get("bnb_4bit_quant_type")
            .and_then(|v| v.as_str())
            .map(str::to_string)
            .or(format);
    }
    // transformers FbgemmFp8Config (Meta's FP8 releases): FP8 weights with one scale per
    // output row; the config names no bit width
    if method == "fbgemm_fp8" {
        bits = Some(8);
        format = format.or(Some("fp8 per-channel".into()));
    }
    if method == "mxfp4" {
        bits = Some(4);
        group_size = Some(32);
    }
    let ignore = ["ignore", "modules_to_not_convert", "llm_int8_skip_modules"]
        .iter()
        .find_map(|k| q.get(*k).and_then(|v| v.as_array()))
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    Some(QuantConfig {
        method,
        bits,
        group_size,
        format,
        ignore,
    })
}
