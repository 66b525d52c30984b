//! llama.cpp behaviour by build number (`bNNNN` = commits on master since the start).
//!
//! Each entry names the PR that changed memory-relevant behaviour and the first build that has
//! it; build numbers are `git rev-list --count` of the merge commit on ggml-org/llama.cpp master.

/// A llama.cpp build number (`b5274` → 5274).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Build(pub u32);

/// The build vramfit models when none is given: master at 82bb48500 (2026-08-07).
pub const CURRENT: Build = Build(9725);

/// Memory-relevant changes, each the first build with the new behaviour.
pub mod change {
    use super::Build;
    /// #7257 (2024-05-13): KV size padded to 256 with flash attention, 32 without.
    pub const KV_PAD_32_WITHOUT_FA: Build = Build(2871);
    /// #12801 (2025-04-15): DeepSeek MLA caches the latent (K 576 + V 512 per layer) instead of
    /// the decompressed heads.
    pub const MLA_LATENT_CACHE: Build = Build(5137);
    /// #13194 (2025-05-20): interleaved sliding-window models get a window-sized SWA cache.
    pub const ISWA_CACHE: Build = Build(5429);
    /// #13920 (2025-06-01): the SWA cache adds n_ubatch (not n_batch) to the window.
    pub const SWA_PLUS_UBATCH: Build = Build(5559);
    /// #14363 (2025-07-16): per-sequence streams; the SWA window scales with n_seq_max only for
    /// a unified cache.
    pub const KV_STREAMS: Build = Build(5913);
    /// #15434 (2025-08-30): flash attention `auto` and all layers on the GPU by default.
    pub const FA_AUTO_DEFAULT: Build = Build(6325);
    /// #16812 (2025-10-28): no KV size padding.
    pub const NO_KV_PAD: Build = Build(6868);
    /// #16736 (2025-11-02): llama-server defaults to 4 slots sharing a unified KV cache.
    pub const SERVER_NP4_UNIFIED: Build = Build(6925);
    /// #17046 (2025-11-07): context padded to 256 again (SWA cache too).
    pub const KV_PAD_256: Build = Build(6975);
    /// #16653 (2025-12-15): `--fit` on by default; default context = the training context.
    pub const FIT_DEFAULT: Build = Build(7407);
    /// #18148 (2025-12-18): `-ngl N` counts the output layer first.
    pub const OUTPUT_LAYER_FIRST: Build = Build(7467);
    /// #19067 (2026-01-25): MLA caches no V (the latent serves as both).
    pub const MLA_NO_V: Build = Build(7832);
    /// #21489 (merged 2026-05-20): `--fit` in llama-server/llama-cli keeps the vision
    /// projector's memory (weights + warm-up compute, `mtmd_get_memory_usage`) free on the first
    /// device. The build is estimated from the merge date between #19067 (b7832, 2026-01-25)
    /// and #23861 (b9460, 2026-06-01), about 13 builds a day: ± 50 builds.
    pub const MMPROJ_FIT: Build = Build(9306);
    /// #23861 (2026-06-01): llama-server reserves logits for n_parallel outputs, not n_ubatch.
    pub const SERVER_FEW_OUTPUTS: Build = Build(9460);
}

impl Build {
    /// Parse `b5274`, `5274` or `b5274 (d541533a)`.
    pub fn parse(s: &str) -> Option<Build> {
        let s = s.trim();
        let s = s
            .strip_prefix('b')
            .or_else(|| s.strip_prefix('B'))
            .unwrap_or(s);
        let digits: String = s.chars().take_while(|c| c.is_ascii_digit()).collect();
        // after the number only the commit may follow (`5274 (d541533a)`, `b5274-d541533`)
        let tail = &s[digits.len()..];
        if !(tail.is_empty() || tail.starts_with([' ', '-', '('])) {
            return None;
        }
        digits.parse().ok().filter(|n| *n > 0).map(Build)
    }

    pub fn has(self, change: Build) -> bool {
        self >= change
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_builds() {
        assert_eq!(Build::parse("b5274"), Some(Build(5274)));
        assert_eq!(Build::parse("5274 (d541533a)"), Some(Build(5274)));
        assert_eq!(Build::parse("latest"), None);
        assert_eq!(Build::parse("b32kk"), None);
        assert!(Build(6168).has(change::ISWA_CACHE));
        assert!(!Build(5274).has(change::ISWA_CACHE));
    }
}
