//! Quality: the expected loss of a weight format and a KV cache type, measured rather than
//! counted in bits, and relative to the checkpoint as published (its native format is the
//! ceiling: an MXFP4, FP8, AWQ or GPTQ checkpoint is never planned at a wider format).
//!
//! The loss is the mean KL divergence of the token distribution from the full-precision model
//! (nats), llama.cpp's measure of quantization damage:
//!
//! - GGUF quants: llama.cpp `tools/perplexity/README.md`, "LLaMA 3 8b Scoreboard" (revision
//!   f364eb6f, Wikitext-2, KLD against FP16; imatrix rows where the community quants use one).
//! - KV cache: llama.cpp PR #7412 (CUDA quantized KV cache, LLaMA 3 8B): q8_0 K and V add
//!   0.00079 KLD over an f16 cache (0.000980 vs 0.000189). q4_0 K/V: the PR lists it far
//!   below q8_0; its value here (0.02, about a q5_K_S model) is an assumption, not a reading.
//! - FP8 and INT4 checkpoints (vLLM/SGLang): Kurtic et al., "Give Me BF16 or Give Me Death?"
//!   (arXiv 2411.02355, Red Hat AI, 500k evaluations of Llama 3.1): FP8 W8A8 is lossless,
//!   INT8 loses 1–3 %, INT4 W4A16 (GPTQ/AWQ) stays within a few percent — taken as Q8_0's
//!   KLD for FP8 and INT8 and as Q4_K_M's for 4-bit AWQ/GPTQ/NVFP4. bitsandbytes NF4 at load
//!   (no calibration, absmax blocks) is taken as Q4_0's.
//! - Native formats (gpt-oss MXFP4 experts, DeepSeek FP8) lose nothing against themselves.

use serde::Serialize;

/// Mean KLD (nats) of the Llama 3 8B scoreboard per GGUF quant; None for names it lacks.
pub fn gguf_kld(quant: &str) -> Option<f64> {
    let q = quant.to_ascii_uppercase();
    Some(match q.as_str() {
        // the f16 row measures only the logit file's 16-bit rounding
        "F32" | "F16" | "BF16" => 0.0,
        "Q8_0" => 0.001355,
        "Q6_K" => 0.005452,
        "Q5_K_M" => 0.010762,
        "Q5_K_S" => 0.016595,
        "Q5_1" => 0.018045,
        "Q5_0" => 0.022239,
        "Q4_K_M" => 0.028152,
        "Q4_K_S" => 0.031951,
        "IQ4_NL" => 0.035742,
        "IQ4_XS" => 0.036334,
        "Q4_1" => 0.071683,
        "Q4_0" => 0.071940,
        "Q3_K_L" => 0.073077,
        "Q3_K_M" => 0.084358,
        "IQ3_M" => 0.102534,
        "IQ3_S" => 0.111278,
        "IQ3_XS" => 0.138693,
        "IQ3_XXS" => 0.183625,
        "Q3_K_S" => 0.199821,
        "IQ2_M" => 0.325989,
        "Q2_K" => 0.332223,
        "Q2_K_S" => 0.403360,
        "IQ2_S" => 0.439197,
        "IQ2_XS" => 0.546290,
        "IQ2_XXS" => 0.812022,
        "IQ1_M" => 1.393084,
        "IQ1_S" => 2.254554,
        // gpt-oss: the experts stay in their native MXFP4, the other matrices go to q8_0
        "MXFP4_MOE" => 0.001355,
        _ => return None,
    })
}

/// A quant the scoreboard lacks (a GGUF file of another type), by its bits per weight: the
/// scoreboard's KLD of the nearest measured quant at or below those bits.
pub fn kld_of_bits(bpw: f64) -> f64 {
    // (bits per weight of the Llama 3 8B files: GiB × 8 / 8.03e9 params, KLD)
    const BY_BITS: &[(f64, f64)] = &[
        (15.5, 0.0),
        (8.5, 0.001355),
        (6.56, 0.005452),
        (5.69, 0.010762),
        (4.89, 0.028152),
        (4.42, 0.036334),
        (4.0, 0.084358),
        (3.26, 0.183625),
        (3.16, 0.332223),
    ];
    BY_BITS
        .iter()
        .find(|(b, _)| bpw >= *b)
        .map(|(_, k)| *k)
        .unwrap_or(0.812022)
}

/// KLD added by a KV cache type (llama.cpp `-ctk/-ctv`, vLLM/SGLang `--kv-cache-dtype`).
pub fn kv_kld(kv: &str) -> f64 {
    match kv.to_ascii_lowercase().as_str() {
        "f16" | "bf16" | "f32" | "auto" => 0.0,
        // FP8 E4M3 with per-tensor scales: vLLM and SGLang document it as near-lossless; taken
        // as q8_0's cost
        "fp8" | "fp8_e4m3" | "fp8_e5m2" | "q8_0" => 0.00079,
        "q5_1" | "q5_0" => 0.0016,
        "q4_1" | "q4_0" | "iq4_nl" => 0.02,
        _ => 0.02,
    }
}

/// How good a plan's output is, in words a person reads and in the number the ranking uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// ≤ 0.002 KLD: indistinguishable (BF16, Q8_0, FP8, native formats)
    Lossless,
    /// ≤ 0.012: Q6_K, Q5_K_M
    NearLossless,
    /// ≤ 0.04: Q4_K_M, IQ4_XS, AWQ/GPTQ int4
    Good,
    /// ≤ 0.2: Q4_0, Q3_K_M, IQ3
    Fair,
    /// above: Q2_K, IQ2, IQ1 — only when nothing better fits
    Poor,
}

impl Tier {
    pub fn of(kld: f64) -> Tier {
        if kld <= 0.002 {
            Tier::Lossless
        } else if kld <= 0.012 {
            Tier::NearLossless
        } else if kld <= 0.04 {
            Tier::Good
        } else if kld <= 0.2 {
            Tier::Fair
        } else {
            Tier::Poor
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Tier::Lossless => "lossless",
            Tier::NearLossless => "near-lossless",
            Tier::Good => "good",
            Tier::Fair => "fair",
            Tier::Poor => "poor",
        }
    }

    /// Usable as a default answer (Poor only when nothing else fits).
    pub fn usable(self) -> bool {
        self <= Tier::Fair
    }
}

/// Loss of a checkpoint format served by vLLM / SGLang / transformers, relative to the
/// published checkpoint: its own format loses nothing; FP8 or 8-bit at load as Q8_0, 4-bit
/// at load (bitsandbytes NF4) as Q4_0.
pub fn checkpoint_kld(at_load: Option<&str>) -> f64 {
    match at_load.map(|s| s.to_ascii_lowercase()) {
        None => 0.0,
        Some(s) if s.contains("fp8") || s.contains("int8") || s.contains("8bit") => 0.001355,
        Some(s)
            if s.contains("nf4")
                || s.contains("bnb")
                || s.contains("bitsandbytes")
                || s.contains("4bit") =>
        {
            0.071940
        }
        Some(_) => 0.0,
    }
}

/// The format a checkpoint is published in: its quantization method and bits (`MXFP4`,
/// `FP8`, `AWQ 4-bit`, `GPTQ 8-bit`), else its dtype (`BF16`).
pub fn checkpoint_format(spec: &vramfit_model::ModelSpec) -> String {
    match &spec.quant {
        Some(q) => {
            let m = q.method.to_ascii_uppercase();
            let f = q.format.as_deref().unwrap_or("").to_ascii_uppercase();
            if f.contains("NVFP4") {
                return "NVFP4".into();
            }
            if m.contains("COMPRESSED") || m.contains("MODELOPT") {
                return match q.bits {
                    _ if f.contains("FP8") || f.contains("FLOAT") => "FP8".into(),
                    Some(b) => format!("INT{b}"),
                    None => m,
                };
            }
            match q.bits {
                Some(b) if !m.contains("FP8") && !m.contains("FP4") => format!("{m} {b}-bit"),
                _ => m,
            }
        }
        None => format!("{:?}", spec.dtype).to_ascii_uppercase(),
    }
}

/// Loss of a pre-quantized repo of a full-precision model (AWQ/GPTQ/FP8/NVFP4 variants).
pub fn variant_kld(bits: f64) -> f64 {
    if bits >= 8.0 {
        0.001355
    } else {
        0.028152
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measured_order_of_the_gguf_ladder() {
        let ladder = [
            "BF16", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "IQ4_XS", "Q3_K_M", "IQ3_XXS", "Q2_K",
        ];
        let k: Vec<f64> = ladder.iter().map(|q| gguf_kld(q).unwrap()).collect();
        assert!(k.windows(2).all(|w| w[0] < w[1]), "{k:?}");
        assert_eq!(Tier::of(gguf_kld("Q4_K_M").unwrap()), Tier::Good);
        assert_eq!(Tier::of(gguf_kld("Q2_K").unwrap()), Tier::Poor);
        assert!(kv_kld("f16") < kv_kld("q8_0") && kv_kld("q8_0") < kv_kld("q4_0"));
        assert_eq!(kv_kld("fp8"), kv_kld("q8_0"));
    }
}
