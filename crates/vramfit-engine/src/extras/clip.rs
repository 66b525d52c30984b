//! The vision projector's warm-up compute buffer in llama.cpp (tools/mtmd/clip.cpp): at load,
//! `warmup` builds the encoder graph for one image of `warmup_image_size` (by default the
//! projector's `clip.vision.image_size`) and `alloc_compute_meta` reserves the ggml buffer that
//! graph needs, on the projector's backend. With flash attention (tried first when
//! `--flash-attn` is auto or on) the peak is the FFN intermediate of every patch plus a few
//! copies of the residual stream, all f32: `4 × n_pos × (n_ff + 3·n_embd)`. Without it the f32
//! attention scores of every head are added: `4 × n_head × n_pos²`.
//!
//! Checked against a real log: a Qwen3.6-27B projector (n_embd 1152, n_ff 4304, patch 16)
//! warmed up at 1472 × 1472 with flash attention reserves 248.10 MiB on CUDA0 (code-index id
//! 56678392724, `alloc_compute_meta: CUDA0 compute buffer size = 248.10 MiB`); the formula
//! gives 250.5 MiB. Dynamic-resolution projectors (Qwen-VL) set their warm-up size from their
//! token limits rather than `image_size`; for those the estimate uses `image_size` and says so.

/// The encoder widths the estimate needs (GGUF `clip.vision.*` keys or a `vision_config`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClipDims {
    pub image_size: u64,
    pub patch_size: u64,
    pub n_embd: u64,
    pub n_ff: u64,
    pub n_head: u64,
}

impl ClipDims {
    /// From a HF `vision_config` object (SigLIP, Pixtral, Llama 4 vision).
    pub fn from_vision_config(v: &serde_json::Value) -> Option<ClipDims> {
        let u = |k: &str| v.get(k).and_then(serde_json::Value::as_u64);
        Some(ClipDims {
            image_size: u("image_size")?,
            patch_size: u("patch_size")?,
            n_embd: u("hidden_size")?,
            n_ff: u("intermediate_size")?,
            n_head: u("num_attention_heads")?,
        })
        .filter(|d| d.patch_size > 0 && d.image_size >= d.patch_size)
    }
}

/// Bytes of the warm-up compute buffer for one image of `warmup` pixels a side.
pub fn warmup_bytes(d: &ClipDims, warmup: u64, flash_attn: bool) -> u64 {
    let side = warmup / d.patch_size.max(1);
    let n_pos = side * side;
    let mut b = 4 * n_pos * (d.n_ff + 3 * d.n_embd);
    if !flash_attn {
        b += 4 * d.n_head * n_pos * n_pos;
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_qwen36_projector_log() {
        // load_hparams of the Qwen3 VL family projector: n_embd 1152, n_ff 4304, 16 heads,
        // patch 16; "warmup: warmup with image size = 1472 x 1472", flash attention enabled
        let d = ClipDims {
            image_size: 1472,
            patch_size: 16,
            n_embd: 1152,
            n_ff: 4304,
            n_head: 16,
        };
        let mib = warmup_bytes(&d, 1472, true) as f64 / (1u64 << 20) as f64;
        assert!(
            (mib - 248.10).abs() / 248.10 < 0.02,
            "{mib:.2} MiB vs 248.10 measured"
        );
        // without flash attention the scores of 16 heads over 8464 patches dominate (4.3 GiB)
        assert!(warmup_bytes(&d, 1472, false) > 4 * (1u64 << 30));
    }

    #[test]
    fn reads_a_vision_config() {
        let v = serde_json::json!({"hidden_size": 1152, "intermediate_size": 4304,
            "num_attention_heads": 16, "image_size": 896, "patch_size": 14});
        let d = ClipDims::from_vision_config(&v).unwrap();
        assert_eq!(d.image_size / d.patch_size, 64);
        assert!(ClipDims::from_vision_config(&serde_json::json!({"hidden_size": 1})).is_none());
    }
}
