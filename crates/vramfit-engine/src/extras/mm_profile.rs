//! vLLM's multimodal profiling pass (V1 `gpu_model_runner.py` `profile_run`, v0.10–v0.11): before
//! the text dummy batch, the worker runs the vision encoder once on a dummy batch of images of
//! the largest size and keeps the encoder outputs in the encoder cache while the text batch
//! runs; the memory profile's peak is therefore
//! `max(encoder peak, encoder outputs + text peak)`, and the KV pool is what is left under it.
//!
//! How many images (`vllm/multimodal/budget.py` `MultiModalBudget._get_max_items`, and
//! `vllm/v1/core/encoder_cache_manager.py` `compute_mm_encoder_budget`):
//! - encoder budget = `max(max_num_batched_tokens, tokens per image)` (both the encoder compute
//!   budget and the encoder cache size default to `max_num_batched_tokens`);
//! - per prompt = `max(1, min(--limit-mm-per-prompt image, max_model_len // tokens per image))`;
//! - in the batch = `max(1, min(budget // tokens per image, max_num_seqs × per prompt))`
//!   (chunked prefill on, the V1 default).
//!
//! The worker logs "Encoder cache will be initialized with a budget of B tokens, and profiled
//! with N image items of the maximum feature size." Checked against a real log: gemma-3-27b-it,
//! v0.11.0rc2, `max_num_batched_tokens` 8192, `--limit-mm-per-prompt '{"image": 2}'` → budget
//! 8192, 31 items (dev record vllm-log-037).

/// Tokens one image of the largest size takes in the prompt, as vLLM's processor counts them,
/// for the model families whose processor is read; `None` for the others.
///
/// Gemma 3 (`vllm/model_executor/models/gemma3_mm.py`, no pan-and-scan, the default): the
/// replacement is `"\n\n" <start_of_image> mm_tokens_per_image × <image_soft_token>
/// <end_of_image> "\n\n"`, `mm_tokens_per_image + 4` tokens (260: 8192 // 260 = 31 items, the
/// count vllm-log-037 prints; 256 alone would give 32).
pub fn tokens_per_image(config: &serde_json::Value) -> Option<u64> {
    match config.get("model_type")?.as_str()? {
        "gemma3" => Some(config.get("mm_tokens_per_image")?.as_u64()? + 4),
        _ => None,
    }
}

/// What the scheduler settled, as the vLLM plan reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scheduler {
    pub max_num_batched_tokens: u64,
    pub max_num_seqs: u64,
    pub max_model_len: u64,
}

/// `(encoder budget in tokens, images in the dummy batch)`.
pub fn dummy_batch(s: &Scheduler, tokens_per_item: u64, limit_per_prompt: u64) -> (u64, u64) {
    let t = tokens_per_item.max(1);
    let budget = s.max_num_batched_tokens.max(t);
    let per_prompt = limit_per_prompt.min(s.max_model_len / t).max(1);
    let items = (budget / t).min(s.max_num_seqs * per_prompt).max(1);
    (budget, items)
}

/// The `image` entry of `--limit-mm-per-prompt` (`{"image": 2}`, or the older `image=2`);
/// `None` when the flag does not name images.
pub fn image_limit(flag: &str) -> Option<u64> {
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(flag) {
        return v.get("image").and_then(|x| {
            x.as_u64()
                .or_else(|| x.get("count").and_then(serde_json::Value::as_u64))
        });
    }
    flag.split(',').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k.trim() == "image").then(|| v.trim().parse().ok())?
    })
}

/// Peak bytes of the vision encoder on `items` images of `patches` patches each, in 2-byte
/// activations: inside an encoder layer's MLP the residual stream, its layer-norm output, the
/// fc1 output and its activation are alive at once (`n_ff` twice, `n_embd` twice), plus the
/// pixel batch (3 channels of `patch²` values a patch). Attention itself runs through a fused
/// (flash / memory-efficient) kernel, which keeps no per-head score matrix.
pub fn encoder_peak_bytes(
    items: u64,
    patches: u64,
    patch_size: u64,
    n_embd: u64,
    n_ff: u64,
) -> u64 {
    let n = items * patches;
    2 * n * (2 * n_ff + 2 * n_embd) + 2 * n * 3 * patch_size * patch_size
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemma3_27b_dummy_batch_matches_vllm_log_037() {
        // "Encoder cache will be initialized with a budget of 8192 tokens, and profiled with 31
        // image items of the maximum feature size." (v0.11.0rc2, max_num_seqs 1024, 4096 len)
        let cfg = serde_json::json!({"model_type": "gemma3", "mm_tokens_per_image": 256});
        let t = tokens_per_image(&cfg).unwrap();
        let s = Scheduler {
            max_num_batched_tokens: 8192,
            max_num_seqs: 1024,
            max_model_len: 4096,
        };
        assert_eq!(
            dummy_batch(&s, t, image_limit(r#"{"image": 2}"#).unwrap()),
            (8192, 31)
        );
        // a small batch budget still profiles one image; the decoder side binds with one
        // sequence of a short context
        let small = Scheduler {
            max_num_batched_tokens: 128,
            max_num_seqs: 1,
            max_model_len: 200,
        };
        assert_eq!(dummy_batch(&small, t, 999), (260, 1));
        let two = Scheduler {
            max_num_batched_tokens: 16384,
            max_num_seqs: 2,
            max_model_len: 4096,
        };
        assert_eq!(dummy_batch(&two, t, 1), (16384, 2));
        assert_eq!(
            tokens_per_image(&serde_json::json!({"model_type": "llama4"})),
            None
        );
    }

    #[test]
    fn reads_the_limit_flag_forms() {
        assert_eq!(image_limit(r#"{"image": 2, "video": 1}"#), Some(2));
        assert_eq!(image_limit(r#"{"image": {"count": 3}}"#), Some(3));
        assert_eq!(image_limit("image=4,video=0"), Some(4));
        assert_eq!(image_limit(r#"{"video": 1}"#), None);
    }

    #[test]
    fn siglip_peak_for_31_images() {
        // 31 images of 64 × 64 patches through SigLIP-So400m (1152 wide, 4304 FFN): 2.58 GiB
        // of MLP activations plus 0.14 GiB of pixels
        let b = encoder_peak_bytes(31, 4096, 14, 1152, 4304);
        let gib = b as f64 / (1u64 << 30) as f64;
        assert!((2.6..2.8).contains(&gib), "{gib:.2} GiB");
    }
}
