//! ggml tensor types and their exact storage sizes.
//!
//! Block sizes and bytes per block mirror `ggml/src/ggml-common.h` (the `static_assert`s on each
//! block struct) and the type ids of `ggml/include/ggml.h`, llama.cpp @82bb48500 (2026-08).
//! A tensor row of `ne0` elements takes `ne0 / block_elems * block_bytes` bytes; `ne0` must be a
//! multiple of the block size (ggml rejects other shapes).

use serde::{Deserialize, Serialize};

/// One ggml tensor type. The discriminant is the on-disk GGUF type id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[allow(non_camel_case_types)]
pub enum GgmlType {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
    NVFP4 = 40,
    Q1_0 = 41,
    Q2_0 = 42,
}

/// (type, name as ggml prints it, elements per block, bytes per block)
/// Source: ggml-common.h block structs and ggml.c `type_traits` @82bb48500.
const TABLE: &[(GgmlType, &str, u64, u64)] = &[
    (GgmlType::F32, "f32", 1, 4),
    (GgmlType::F16, "f16", 1, 2),
    (GgmlType::Q4_0, "q4_0", 32, 18),
    (GgmlType::Q4_1, "q4_1", 32, 20),
    (GgmlType::Q5_0, "q5_0", 32, 22),
    (GgmlType::Q5_1, "q5_1", 32, 24),
    (GgmlType::Q8_0, "q8_0", 32, 34),
    (GgmlType::Q8_1, "q8_1", 32, 36),
    (GgmlType::Q2_K, "q2_K", 256, 84),
    (GgmlType::Q3_K, "q3_K", 256, 110),
    (GgmlType::Q4_K, "q4_K", 256, 144),
    (GgmlType::Q5_K, "q5_K", 256, 176),
    (GgmlType::Q6_K, "q6_K", 256, 210),
    (GgmlType::Q8_K, "q8_K", 256, 292),
    (GgmlType::IQ2_XXS, "iq2_xxs", 256, 66),
    (GgmlType::IQ2_XS, "iq2_xs", 256, 74),
    (GgmlType::IQ3_XXS, "iq3_xxs", 256, 98),
    (GgmlType::IQ1_S, "iq1_s", 256, 50),
    (GgmlType::IQ4_NL, "iq4_nl", 32, 18),
    (GgmlType::IQ3_S, "iq3_s", 256, 110),
    (GgmlType::IQ2_S, "iq2_s", 256, 82),
    (GgmlType::IQ4_XS, "iq4_xs", 256, 136),
    (GgmlType::I8, "i8", 1, 1),
    (GgmlType::I16, "i16", 1, 2),
    (GgmlType::I32, "i32", 1, 4),
    (GgmlType::I64, "i64", 1, 8),
    (GgmlType::F64, "f64", 1, 8),
    (GgmlType::IQ1_M, "iq1_m", 256, 56),
    (GgmlType::BF16, "bf16", 1, 2),
    (GgmlType::TQ1_0, "tq1_0", 256, 54),
    (GgmlType::TQ2_0, "tq2_0", 256, 66),
    (GgmlType::MXFP4, "mxfp4", 32, 17),
    (GgmlType::NVFP4, "nvfp4", 64, 36),
    (GgmlType::Q1_0, "q1_0", 128, 18),
    (GgmlType::Q2_0, "q2_0", 64, 18),
];

impl GgmlType {
    /// The type for a GGUF type id, or `None` for ids that are unknown or removed
    /// (4, 5 and 31-33, 36-38 are gone or exist only as runtime repacks).
    pub fn from_id(id: u32) -> Option<GgmlType> {
        TABLE.iter().find(|t| t.0 as u32 == id).map(|t| t.0)
    }

    /// The GGUF type id.
    pub fn id(self) -> u32 {
        self as u32
    }

    fn row(self) -> &'static (GgmlType, &'static str, u64, u64) {
        TABLE
            .iter()
            .find(|t| t.0 == self)
            .expect("every GgmlType variant has a table row")
    }

    /// Name as ggml prints it (`q4_K`, `iq4_xs`, `f16`).
    pub fn name(self) -> &'static str {
        self.row().1
    }

    /// Parse a ggml type name, case-insensitively (`q8_0`, `Q4_K`, `bf16`).
    pub fn from_name(name: &str) -> Option<GgmlType> {
        TABLE
            .iter()
            .find(|t| t.1.eq_ignore_ascii_case(name))
            .map(|t| t.0)
    }

    /// Elements per quantization block.
    pub fn block_elems(self) -> u64 {
        self.row().2
    }

    /// Bytes per quantization block.
    pub fn block_bytes(self) -> u64 {
        self.row().3
    }

    /// True for block-quantized types (everything with a block of more than one element).
    pub fn is_quantized(self) -> bool {
        self.block_elems() > 1
    }

    /// Bytes of one row of `ne0` elements, or `None` when `ne0` is not a whole number of blocks.
    pub fn row_bytes(self, ne0: u64) -> Option<u64> {
        let b = self.block_elems();
        if ne0 % b != 0 {
            return None;
        }
        (ne0 / b).checked_mul(self.block_bytes())
    }

    /// Exact bytes of a tensor with these dimensions (ggml order: `ne[0]` is the row length), as
    /// `ggml_nbytes` computes them; `None` on overflow or a row that is not a whole number of blocks.
    pub fn tensor_bytes(self, dims: &[u64]) -> Option<u64> {
        let ne0 = *dims.first().unwrap_or(&1);
        let mut bytes = self.row_bytes(ne0)?;
        for &d in dims.iter().skip(1) {
            bytes = bytes.checked_mul(d)?;
        }
        Some(bytes)
    }

    /// Average bytes per element (for KV cache types: q8_0 = 34/32).
    pub fn bytes_per_elem(self) -> f64 {
        self.block_bytes() as f64 / self.block_elems() as f64
    }

    /// Every known type.
    pub fn all() -> impl Iterator<Item = GgmlType> {
        TABLE.iter().map(|t| t.0)
    }
}

impl std::fmt::Display for GgmlType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        for t in GgmlType::all() {
            assert_eq!(GgmlType::from_id(t.id()), Some(t));
            assert_eq!(GgmlType::from_name(t.name()), Some(t));
        }
        assert_eq!(GgmlType::from_id(4), None);
        assert_eq!(GgmlType::from_id(1000), None);
    }

    #[test]
    fn known_sizes() {
        // Llama-3-8B token_embd at Q4_K: 128256 x 4096 -> 281.81 MiB (a real CPU_Mapped buffer)
        let b = GgmlType::Q4_K.tensor_bytes(&[4096, 128256]).unwrap();
        assert_eq!(b, 295_501_824);
        assert_eq!(GgmlType::Q8_0.bytes_per_elem(), 34.0 / 32.0);
        assert_eq!(GgmlType::Q4_K.row_bytes(100), None);
        assert_eq!(GgmlType::F32.tensor_bytes(&[u64::MAX, 2]), None);
    }
}
