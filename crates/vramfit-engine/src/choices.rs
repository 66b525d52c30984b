//! The values each engine's own argument parser accepts for the flags that change memory, so
//! that a value the engine would reject (`--kv-cache-dtype fp3`, `--quantization magic`,
//! `--dtype float1024`) is refused here too instead of being planned around. Each list is the
//! union over the releases vramfit models (a value one release added is accepted for all), with
//! its source.

use crate::error::EngineError;

/// vLLM `--kv-cache-dtype`: vllm/config/cache.py `CacheDType` (v0.31 main), plus `fp8_inc`
/// (v0.8–v0.11).
pub const VLLM_KV_CACHE_DTYPES: &[&str] = &[
    "auto",
    "float16",
    "bfloat16",
    "fp8",
    "fp8_e4m3",
    "fp8_e5m2",
    "fp8_inc",
    "fp8_ds_mla",
    "nvfp4_ds_mla",
    "turboquant_k8v4",
    "turboquant_4bit_nc",
    "turboquant_k3v4_nc",
    "turboquant_3bit_nc",
    "int4_per_token_head",
    "int8_per_token_head",
    "fp8_per_token_head",
    "nvfp4",
    "nvfp4_4over6",
];

/// vLLM `--quantization`: vllm/model_executor/layers/quantization/__init__.py
/// `QuantizationMethods` (v0.8 through v0.31; ModelConfig refuses any other unless a plugin
/// registers it).
pub const VLLM_QUANTIZATIONS: &[&str] = &[
    "aqlm",
    "awq",
    "awq_marlin",
    "auto-round",
    "bitblas",
    "bitsandbytes",
    "compressed-tensors",
    "cpu_awq",
    "cpu_gptq",
    "deepgemm_fp8",
    "deepseek_v4_fp8",
    "deepspeedfp",
    "experts_int8",
    "fbgemm_fp8",
    "fp8",
    "fp_quant",
    "gguf",
    "gpt_oss_mxfp4",
    "gptq",
    "gptq_bitblas",
    "gptq_marlin",
    "gptq_marlin_24",
    "hqq",
    "inc",
    "ipex",
    "marlin",
    "modelopt",
    "modelopt_fp4",
    "modelopt_mixed",
    "modelopt_mxfp8",
    "moe_wna16",
    "mxfp4",
    "mxfp8",
    "neuron_quant",
    "petit_nvfp4",
    "ptpc_fp8",
    "qqq",
    "quark",
    "rtn",
    "torchao",
    "tpu_int8",
];

/// vLLM and SGLang `--dtype`: vllm/config/model.py `ModelDType`; sglang server_args.py
/// `--dtype` choices (the same six).
pub const MODEL_DTYPES: &[&str] = &["auto", "half", "float16", "bfloat16", "float", "float32"];

/// SGLang `--kv-cache-dtype`: python/sglang/srt/server_args.py choices (v0.4 `auto`, `fp8_e5m2`,
/// `fp8_e4m3`; v0.5 adds `bf16`, `bfloat16`, `fp4_e2m1`).
pub const SGLANG_KV_CACHE_DTYPES: &[&str] = &[
    "auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1",
];

/// SGLang `--quantization`: python/sglang/srt/server_args.py `QUANTIZATION_CHOICES` (v0.4.x to
/// v0.5.x main).
pub const SGLANG_QUANTIZATIONS: &[&str] = &[
    "awq",
    "fp8",
    "mxfp8",
    "gptq",
    "marlin",
    "gptq_marlin",
    "awq_marlin",
    "bitsandbytes",
    "gguf",
    "modelopt",
    "modelopt_fp8",
    "modelopt_fp4",
    "modelopt_mixed",
    "nvfp4_online",
    "petit_nvfp4",
    "w8a8_int8",
    "w8a8_fp8",
    "moe_wna16",
    "qoq",
    "w4afp8",
    "mxfp4",
    "auto-round",
    "auto-round-int8",
    "compressed-tensors",
    "modelslim",
    "quark",
    "quark_int4fp8_moe",
    "quark_mxfp4",
    "blockwise_int8",
    "unquant",
];

/// `Ok` when `value` is one of `choices` (as argparse compares: exactly), else the engine's own
/// refusal as a one-line error that lists the choices.
pub fn check(
    engine: &str,
    flag: &str,
    value: Option<&str>,
    choices: &[&str],
) -> Result<(), EngineError> {
    match value {
        Some(v) if !choices.contains(&v) => Err(EngineError::BadValue {
            flag: flag.to_string(),
            value: v.to_string(),
            expected: format!("{engine} accepts {}", choices.join(", ")),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engines_values_pass_and_nonsense_does_not() {
        assert!(check(
            "vLLM",
            "--kv-cache-dtype",
            Some("fp8"),
            VLLM_KV_CACHE_DTYPES
        )
        .is_ok());
        assert!(check("vLLM", "--quantization", Some("awq"), VLLM_QUANTIZATIONS).is_ok());
        assert!(check("vLLM", "--dtype", None, MODEL_DTYPES).is_ok());
        let e = check(
            "vLLM",
            "--kv-cache-dtype",
            Some("fp3"),
            VLLM_KV_CACHE_DTYPES,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("\"fp3\"") && e.contains("fp8_e5m2"), "{e}");
        assert!(check("vLLM", "--quantization", Some("magic"), VLLM_QUANTIZATIONS).is_err());
        assert!(check("SGLang", "--dtype", Some("float1024"), MODEL_DTYPES).is_err());
        assert!(check(
            "SGLang",
            "--kv-cache-dtype",
            Some("fp8"),
            SGLANG_KV_CACHE_DTYPES
        )
        .is_err());
    }
}
