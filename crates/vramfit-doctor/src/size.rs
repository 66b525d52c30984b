//! Sizes as the engines print them in their logs.
//!
//! Every engine we read prints binary quantities, whatever the label says: PyTorch's
//! `format_size` divides by 1024 (c10/cuda/CUDACachingAllocator.cpp), older MPS builds print the
//! same numbers as `GB`/`MB` (torch 2.1 MPSAllocator.mm), vLLM 0.8.2 printed `GB` for values it
//! divided by 2**30 (vllm/v1/core/kv_cache_utils.py @0.8.2), llama.cpp prints MiB. So a log's
//! `GB` is read as GiB here, unlike `vramfit_model::units::parse_size`, which reads what a
//! person types.

use vramfit_model::units::{GIB, KIB, MIB, TIB};

/// The regex fragment for one size: a number and an optional unit. Used inside the event regexes.
pub(crate) const SIZE: &str = r"(\d+(?:\.\d+)?\s*(?:bytes|[KMGT]i?B|[KMGT]|B)?)";

/// Parse `16.00 GiB`, `4.43 GB`, `563.62 MB`, `0 bytes`, `121.80 MiB`, `0.46 G` into bytes.
/// A bare number is bytes. Returns None for anything else or absurd values (> 1 EiB).
pub fn parse_log_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let v: f64 = num.parse().ok()?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" | "bytes" => 1,
        "k" | "kb" | "kib" => KIB,
        "m" | "mb" | "mib" => MIB,
        "g" | "gb" | "gib" => GIB,
        "t" | "tb" | "tib" => TIB,
        _ => return None,
    };
    let bytes = v * mult as f64;
    if !bytes.is_finite() || bytes > 1e18 {
        return None;
    }
    Some(bytes.round() as u64)
}

/// A size printed with the unit given (`mib`), e.g. llama.cpp's `5120.00 MiB` fields.
pub(crate) fn mib(v: &str) -> Option<u64> {
    let f: f64 = v.trim().parse().ok()?;
    if !(0.0..=1e12).contains(&f) {
        return None;
    }
    Some((f * MIB as f64).round() as u64)
}

/// `15.77GiB` style GiB number without a unit (vLLM's `(15.77GiB)`, `(31.44/47.38 GiB)`).
pub(crate) fn gib(v: &str) -> Option<u64> {
    let f: f64 = v.trim().parse().ok()?;
    if !(0.0..=1e9).contains(&f) {
        return None;
    }
    Some((f * GIB as f64).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_sizes_are_binary() {
        assert_eq!(parse_log_size("16.00 GiB"), Some(16 * GIB));
        assert_eq!(
            parse_log_size("4.43 GB"),
            Some((4.43 * GIB as f64).round() as u64)
        );
        assert_eq!(parse_log_size("563.62 MB"), parse_log_size("563.62 MiB"));
        assert_eq!(parse_log_size("0 bytes"), Some(0));
        assert_eq!(parse_log_size("238551040 bytes"), Some(238_551_040));
        assert_eq!(parse_log_size("448.00 KiB"), Some(448 * KIB));
        assert_eq!(
            parse_log_size("0.46 G"),
            Some((0.46 * GIB as f64).round() as u64)
        );
        assert_eq!(parse_log_size("12 parsecs"), None);
        assert_eq!(parse_log_size("99999999999999999999 TiB"), None);
    }
}
