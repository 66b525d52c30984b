//! Sizes and context lengths as people type them, and as vramfit prints them.
//!
//! Sizes: `24GiB`, `24564MiB`, `80GB`, `80G`, `1.5T`, plain bytes. Binary units (`KiB`, `MiB`,
//! `GiB`, `TiB`) are powers of 1024; decimal units (`KB`, `MB`, `GB`, `TB`) powers of 1000; a bare
//! letter (`K`, `M`, `G`, `T`) is taken as binary, as nvidia-smi and most tools mean it.
//! Contexts: `32768`, `32k`, `128K` (k = 1024), `1M`.

use thiserror::Error;

pub const KIB: u64 = 1 << 10;
pub const MIB: u64 = 1 << 20;
pub const GIB: u64 = 1 << 30;
pub const TIB: u64 = 1 << 40;

#[derive(Debug, Error, PartialEq)]
pub enum UnitError {
    #[error("size '{0}' is not understood: write it like 24GiB, 24564MiB, 80GB or 80G")]
    Size(String),
    #[error("context '{0}' is not understood: write it like 32768, 32k or 128K")]
    Context(String),
}

fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_' || c == ','))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let num: String = num.chars().filter(|c| *c != '_' && *c != ',').collect();
    if num.is_empty() {
        return None;
    }
    let v: f64 = num.parse().ok()?;
    if !v.is_finite() || v < 0.0 {
        return None;
    }
    Some((v, unit.trim()))
}

/// Parse a memory size into bytes.
pub fn parse_size(s: &str) -> Result<u64, UnitError> {
    let err = || UnitError::Size(s.to_string());
    let (v, unit) = split_number(s).ok_or_else(err)?;
    let mult: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" | "ki" => KIB as f64,
        "m" | "mib" | "mi" => MIB as f64,
        "g" | "gib" | "gi" => GIB as f64,
        "t" | "tib" | "ti" => TIB as f64,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        _ => return Err(err()),
    };
    let bytes = v * mult;
    if bytes > 1e18 {
        return Err(err());
    }
    Ok(bytes.round() as u64)
}

/// Parse a context length in tokens (`32k` = 32768).
pub fn parse_context(s: &str) -> Result<u64, UnitError> {
    let err = || UnitError::Context(s.to_string());
    let (v, unit) = split_number(s).ok_or_else(err)?;
    let mult = match unit {
        "" => 1.0,
        "k" | "K" => 1024.0,
        "m" | "M" => 1024.0 * 1024.0,
        _ => return Err(err()),
    };
    let n = v * mult;
    if n > 1e12 || n.fract() != 0.0 {
        return Err(err());
    }
    Ok(n as u64)
}

/// `12.34 GiB`, `512.0 MiB`, `900 B`: the largest binary unit that keeps the number >= 1.
pub fn fmt_bytes(bytes: u64) -> String {
    fmt_bytes_signed(bytes as i64)
}

/// Signed variant of [`fmt_bytes`] for deficits.
pub fn fmt_bytes_signed(bytes: i64) -> String {
    let a = bytes.unsigned_abs();
    let sign = if bytes < 0 { "-" } else { "" };
    if a >= TIB {
        format!("{sign}{:.2} TiB", a as f64 / TIB as f64)
    } else if a >= GIB {
        format!("{sign}{:.2} GiB", a as f64 / GIB as f64)
    } else if a >= MIB {
        format!("{sign}{:.1} MiB", a as f64 / MIB as f64)
    } else if a >= KIB {
        format!("{sign}{:.1} KiB", a as f64 / KIB as f64)
    } else {
        format!("{sign}{a} B")
    }
}

/// `131072` -> `128k`, `40960` -> `40k`, `1000` -> `1000`.
pub fn fmt_context(tokens: u64) -> String {
    if tokens >= 1024 && tokens % 1024 == 0 {
        format!("{}k", tokens / 1024)
    } else {
        tokens.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("24GiB").unwrap(), 24 * GIB);
        assert_eq!(parse_size("24564MiB").unwrap(), 24564 * MIB);
        assert_eq!(parse_size("80GB").unwrap(), 80_000_000_000);
        assert_eq!(parse_size("80G").unwrap(), 80 * GIB);
        assert_eq!(parse_size("79.25GiB").unwrap(), (79.25 * GIB as f64) as u64);
        assert_eq!(parse_size(" 1024 ").unwrap(), 1024);
        assert!(parse_size("lots").is_err());
        assert!(parse_size("12XB").is_err());
        assert!(parse_size("-3G").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("1e300G").is_err());
    }

    #[test]
    fn contexts() {
        assert_eq!(parse_context("32768").unwrap(), 32768);
        assert_eq!(parse_context("32k").unwrap(), 32768);
        assert_eq!(parse_context("128K").unwrap(), 131072);
        assert!(parse_context("12 tokens").is_err());
        assert!(parse_context("1.5").is_err());
    }

    #[test]
    fn formatting() {
        assert_eq!(fmt_bytes(16 * GIB + GIB / 4), "16.25 GiB");
        assert_eq!(fmt_bytes(512 * MIB), "512.0 MiB");
        assert_eq!(fmt_context(131072), "128k");
        assert_eq!(fmt_context(1000), "1000");
    }
}
