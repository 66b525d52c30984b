//! SGLang's default `--mem-fraction-static` before the current heuristic
//! ([`super::args::gpu_defaults`]), by release. Three rules have shipped (server_args.py):
//!
//! 1. up to v0.4.6: by tensor × pipeline parallel size only — 0.88 (1), 0.87 (≥ 2), 0.85 (≥ 4),
//!    0.81 (≥ 8), 0.79 (≥ 16). Logs print "mem_fraction_static=0.88" at TP1 on an H100
//!    (v0.4.1), an RTX 3090 (v0.4.2) and a 4 GB laptop card (v0.4.6.post2), 0.85 at TP4 (v0.4.3).
//! 2. v0.4.7 to v0.5.3: a reserve by GPU memory tier, `round((gpu_mem − reserved) / gpu_mem, 3)`
//!    with reserved = (2.8 + tp·pp/10) GiB under 35 GiB, (9.5 + tp·pp/2) GiB under 90 GiB,
//!    (12 + tp·pp/2) GiB under 160 GiB, else 32 GiB; + 2 GiB for a speculative draft (6 GiB
//!    STANDALONE), + 4 GiB with DP attention. The first release is taken as v0.4.7 (between the
//!    v0.4.6.post2 log above and a v0.4.9 log whose pool implies 0.879 on a 24 GiB card).
//! 3. from v0.5.4 (PR #10975 "General heuristics for --mem-fraction-static", later PR #15927):
//!    the reserve of activations and graphs in [`super::args::gpu_defaults`]. The first release
//!    is approximate (the PR was merged in October 2025).

use crate::vllm::Version;

/// The default fraction under rules 1 and 2, or None when the current rule applies (rule 3 or
/// an unknown release).
pub fn legacy_default(
    version: Option<Version>,
    gpu_mem_mib: f64,
    parallel: u64,
    speculative: Option<&str>,
    dp_attention: bool,
) -> Option<f64> {
    let v = version?;
    if v < Version::new(0, 4, 7) {
        return Some(match parallel {
            p if p >= 16 => 0.79,
            p if p >= 8 => 0.81,
            p if p >= 4 => 0.85,
            p if p >= 2 => 0.87,
            _ => 0.88,
        });
    }
    if v >= Version::new(0, 5, 4) {
        return None;
    }
    if gpu_mem_mib <= 0.0 {
        return Some(0.88);
    }
    let p = parallel as f64;
    let gib = 1024.0;
    let mut reserved = if gpu_mem_mib < 35.0 * gib {
        (2.8 + p / 10.0) * gib
    } else if gpu_mem_mib < 90.0 * gib {
        (9.5 + p / 2.0) * gib
    } else if gpu_mem_mib < 160.0 * gib {
        (12.0 + p / 2.0) * gib
    } else {
        32.0 * gib
    };
    match speculative.map(str::to_ascii_uppercase).as_deref() {
        Some("STANDALONE") => reserved += 6.0 * gib,
        Some(_) => reserved += 2.0 * gib,
        None => {}
    }
    if dp_attention {
        reserved += 4.0 * gib;
    }
    Some(((gpu_mem_mib - reserved) / gpu_mem_mib * 1000.0).round() / 1000.0)
}

/// SGLang's reduction of its default fraction for a model with a vision tower
/// (server_args.py `adjust_mem_fraction_for_vlm`, applied to the default only, in the tier rule's
/// code and the current heuristic's): × 0.95 × clamp(1 − 0.1 × (r − 1), 0.8, 1.05), r = the
/// tower's layers × width² over ViT-L/14's 24 × 1024². Checked on a Kimi-K2.5 TP8 log on
/// MI355X (v0.5.8.post1): 0.908 × 0.95 × (1 − 0.1 × 0.4238) = 0.8260405859375, as printed.
/// SGLang asks its multimodal architecture list; a `vision_config` stands for it here.
pub fn vlm_factor(vision_shape: Option<(u64, u64)>) -> f64 {
    let Some((layers, width)) = vision_shape else {
        return 1.0;
    };
    let ratio = (layers as f64 * width as f64 * width as f64) / (24.0 * 1024.0 * 1024.0);
    0.95 * (1.0 - 0.1 * (ratio - 1.0)).clamp(0.8, 1.05)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vision_towers_lower_the_default() {
        // MoonViT of Kimi-K2.5 (27 layers of 1152): the fraction the MI355X log printed
        let f = 0.908 * vlm_factor(Some((27, 1152)));
        assert!((f - 0.8260405859375).abs() < 1e-12, "{f}");
        assert_eq!(vlm_factor(None), 1.0);
        // a small tower is capped at 1.05 × 0.95; a huge one floored at 0.8 × 0.95
        assert!((vlm_factor(Some((16, 768))) - 0.9975).abs() < 1e-12);
        assert!((vlm_factor(Some((64, 4096))) - 0.76).abs() < 1e-12);
    }

    #[test]
    fn by_release() {
        let v = |s| Some(Version::parse(s).unwrap());
        assert_eq!(
            legacy_default(v("0.4.3.post4"), 23034.0, 4, None, false),
            Some(0.85)
        );
        assert_eq!(
            legacy_default(v("0.4.1"), 81559.0, 1, None, false),
            Some(0.88)
        );
        // 24 GiB card, TP1: (24576 − 2969.6) / 24576
        assert_eq!(
            legacy_default(v("0.4.9"), 24576.0, 1, None, false),
            Some(0.879)
        );
        assert_eq!(legacy_default(v("0.5.10"), 24576.0, 1, None, false), None);
        assert_eq!(legacy_default(None, 24576.0, 1, None, false), None);
    }
}
