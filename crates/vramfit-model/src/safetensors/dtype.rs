//! The safetensors dtype names and their element widths.

/// Element width in bits of a safetensors dtype name, `None` for a name this table does not know.
///
/// The names and widths mirror `Dtype` / `Dtype::bitsize` in huggingface/safetensors
/// `safetensors/src/tensor.rs` (0.6 added the sub-byte F4/F6 types and F8_E8M0; FNUZ and C64 came
/// with 0.7/0.8-dev). A sub-byte type's shape counts elements, so `F4` with shape `[4096, 4096]`
/// holds 8 Mi bytes.
pub fn dtype_bits(name: &str) -> Option<u64> {
    let bits = match name {
        // OCP microscaling FP4 (e2m1), two per byte
        "F4" => 4,
        // OCP microscaling FP6 variants
        "F6_E2M3" | "F6_E3M2" => 6,
        "BOOL" | "U8" | "I8" => 8,
        "F8_E4M3" | "F8_E5M2" | "F8_E8M0" | "F8_E4M3FNUZ" | "F8_E5M2FNUZ" => 8,
        "I16" | "U16" | "F16" | "BF16" => 16,
        "I32" | "U32" | "F32" => 32,
        "I64" | "U64" | "F64" | "C64" => 64,
        _ => return None,
    };
    Some(bits)
}

/// Whether a dtype holds floating-point values (as opposed to packed integers or raw bytes).
pub fn is_float(name: &str) -> bool {
    name.starts_with('F') || name == "BF16" || name == "C64"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths() {
        assert_eq!(dtype_bits("BF16"), Some(16));
        assert_eq!(dtype_bits("F8_E4M3"), Some(8));
        assert_eq!(dtype_bits("F4"), Some(4));
        assert_eq!(dtype_bits("I32"), Some(32));
        assert_eq!(dtype_bits("bf16"), None);
        assert!(is_float("F8_E8M0") && is_float("BF16") && !is_float("U8") && !is_float("I32"));
    }
}
