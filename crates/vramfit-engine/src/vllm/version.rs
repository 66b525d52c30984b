//! vLLM releases, and the behaviour that changed between them.

use crate::error::EngineError;
use std::fmt;

/// A vLLM release (`0.15.2`; `v0.29.1rc1.dev17+gd2d649e67` reads as 0.29.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl Version {
    pub const fn new(major: u32, minor: u32, patch: u32) -> Version {
        Version {
            major,
            minor,
            patch,
        }
    }

    /// The release whose behaviour vramfit assumes when no `--engine-version` is given.
    pub const CURRENT: Version = Version::new(0, 31, 0);

    pub fn parse(text: &str) -> Result<Version, EngineError> {
        let bad = || EngineError::BadVersion(text.to_string());
        let t = text.trim().trim_start_matches(['v', 'V']);
        let mut nums = [0u32; 3];
        let mut parts = t.splitn(3, '.').peekable();
        for (i, slot) in nums.iter_mut().enumerate() {
            match parts.next() {
                Some(p) => {
                    let digits: String = p.chars().take_while(|c| c.is_ascii_digit()).collect();
                    if digits.is_empty() {
                        return Err(bad());
                    }
                    // after the numbers only a PEP 440 tail may follow (`rc1`, `.dev17`,
                    // `+gd2d649e67`, `.post1`, a fourth number): `32kk` is not a release
                    let tail = &p[digits.len()..];
                    let last = parts.peek().is_none();
                    let pep440 = ["rc", "a", "b", "dev", "post", "+", "-", "."]
                        .iter()
                        .any(|s| tail.starts_with(s));
                    if !tail.is_empty() && !(last && pep440) {
                        return Err(bad());
                    }
                    *slot = digits.parse().map_err(|_| bad())?;
                }
                None if i >= 1 => break,
                None => return Err(bad()),
            }
        }
        Ok(Version::new(nums[0], nums[1], nums[2]))
    }

    /// The default `--gpu-memory-utilization`: 0.9, raised to 0.92 by vLLM PR #38284
    /// (vllm/config/cache.py `gpu_memory_utilization` Field default; 0.92 in v0.25.0, v0.28.0 and
    /// v0.31.0 logs). The first release with 0.92 is v0.20.0: v0.19.0's config/cache.py still has
    /// `default=0.9`, and a v0.19.1 log (code-index id 57978845466) suggests "utilization 0.9596"
    /// for its 2.35 GiB graph estimate on a 39.50 GiB A100, i.e. 0.90 + 2.35 / 39.50.
    pub fn default_gpu_memory_utilization(self) -> f64 {
        if self >= Version::new(0, 20, 0) {
            0.92
        } else {
            0.9
        }
    }

    /// CUDA-graph memory is estimated during profiling (PR #30515) and taken out of the KV budget
    /// by default from v0.20.0: envs.py's `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS` defaults to
    /// "0" in v0.19.0 and "1" in v0.20.0 (PR #38284, the change that also raised the default
    /// utilization; later logs word it "default since v0.21.0", and the v0.20.0 log of dev record
    /// vllm-h2-007 deducts its 1.10 GiB estimate). Before, graphs were captured after KV sizing,
    /// on top of the budget.
    pub fn deducts_cuda_graphs(self) -> bool {
        self >= Version::new(0, 20, 0)
    }

    /// How "GPU KV cache size: N tokens" is computed (kv_cache_utils.py, by release).
    pub fn token_report(self) -> TokenReport {
        if self >= Version::new(0, 21, 0) {
            TokenReport::ConcurrencyTimesLen
        } else if self >= Version::new(0, 11, 0) {
            TokenReport::BlocksPerGroup
        } else {
            TokenReport::BlocksPerLayerGroup
        }
    }
}

/// The definitions "GPU KV cache size" has had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenReport {
    /// v0.9–v0.10: `num_blocks * block_size`, hybrid `num_blocks // len(grouped_layers) * block`
    BlocksPerLayerGroup,
    /// ~v0.11–v0.20 `_report_kv_cache_config`: `num_blocks // len(groups) * min_block_size`
    BlocksPerGroup,
    /// ~v0.21+ `get_kv_cache_capacity`: `int(max_concurrency * max_model_len)`
    ConcurrencyTimesLen,
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_release_strings() {
        assert_eq!(Version::parse("0.15.2").unwrap(), Version::new(0, 15, 2));
        assert_eq!(Version::parse("v0.9").unwrap(), Version::new(0, 9, 0));
        assert_eq!(
            Version::parse("0.29.1rc1.dev17+gd2d649e67").unwrap(),
            Version::new(0, 29, 1)
        );
        assert_eq!(
            Version::parse("0.11.0rc2.dev98+g393de22d2").unwrap(),
            Version::new(0, 11, 0)
        );
        assert_eq!(Version::parse("0.10.1.1").unwrap(), Version::new(0, 10, 1));
        assert_eq!(
            Version::parse("0.11.0+cu128").unwrap(),
            Version::new(0, 11, 0)
        );
        assert!(Version::parse("32kk").is_err());
        assert!(Version::parse("0.x.1").is_err());
        assert!(Version::parse("0.15kk.2").is_err());
        assert!(Version::parse("latest").is_err());
        assert!(Version::parse("").is_err());
    }

    #[test]
    fn defaults_by_release() {
        assert_eq!(Version::new(0, 10, 1).default_gpu_memory_utilization(), 0.9);
        assert_eq!(Version::new(0, 19, 1).default_gpu_memory_utilization(), 0.9);
        assert_eq!(
            Version::new(0, 20, 0).default_gpu_memory_utilization(),
            0.92
        );
        assert_eq!(
            Version::new(0, 31, 0).default_gpu_memory_utilization(),
            0.92
        );
        assert!(!Version::new(0, 19, 1).deducts_cuda_graphs());
        assert!(Version::new(0, 20, 0).deducts_cuda_graphs());
    }
}
