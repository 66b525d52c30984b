//! llama.cpp file types (`enum llama_ftype` in include/llama.h @007dbbf): the names people use
//! for GGUF quants, their ids in `general.file_type`, and each one's default tensor type
//! (`llama_ftype_get_default_type` in src/llama-quant.cpp).

use crate::ggml::GgmlType;
use serde::{Deserialize, Serialize};

/// A llama.cpp file type. The discriminant is the `llama_ftype` id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[allow(non_camel_case_types)]
pub enum FileType {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q8_0 = 7,
    Q5_0 = 8,
    Q5_1 = 9,
    Q2_K = 10,
    Q3_K_S = 11,
    Q3_K_M = 12,
    Q3_K_L = 13,
    Q4_K_S = 14,
    Q4_K_M = 15,
    Q5_K_S = 16,
    Q5_K_M = 17,
    Q6_K = 18,
    IQ2_XXS = 19,
    IQ2_XS = 20,
    Q2_K_S = 21,
    IQ3_XS = 22,
    IQ3_XXS = 23,
    IQ1_S = 24,
    IQ4_NL = 25,
    IQ3_S = 26,
    IQ3_M = 27,
    IQ2_S = 28,
    IQ2_M = 29,
    IQ4_XS = 30,
    IQ1_M = 31,
    BF16 = 32,
    TQ1_0 = 36,
    TQ2_0 = 37,
    MXFP4_MOE = 38,
}

/// (file type, canonical name, default ggml type)
const TABLE: &[(FileType, &str, GgmlType)] = &[
    (FileType::F32, "F32", GgmlType::F32),
    (FileType::F16, "F16", GgmlType::F16),
    (FileType::BF16, "BF16", GgmlType::BF16),
    (FileType::Q8_0, "Q8_0", GgmlType::Q8_0),
    (FileType::Q6_K, "Q6_K", GgmlType::Q6_K),
    (FileType::Q5_K_M, "Q5_K_M", GgmlType::Q5_K),
    (FileType::Q5_K_S, "Q5_K_S", GgmlType::Q5_K),
    (FileType::Q5_0, "Q5_0", GgmlType::Q5_0),
    (FileType::Q5_1, "Q5_1", GgmlType::Q5_1),
    (FileType::Q4_K_M, "Q4_K_M", GgmlType::Q4_K),
    (FileType::Q4_K_S, "Q4_K_S", GgmlType::Q4_K),
    (FileType::Q4_0, "Q4_0", GgmlType::Q4_0),
    (FileType::Q4_1, "Q4_1", GgmlType::Q4_1),
    (FileType::Q3_K_L, "Q3_K_L", GgmlType::Q3_K),
    (FileType::Q3_K_M, "Q3_K_M", GgmlType::Q3_K),
    (FileType::Q3_K_S, "Q3_K_S", GgmlType::Q3_K),
    (FileType::Q2_K, "Q2_K", GgmlType::Q2_K),
    (FileType::Q2_K_S, "Q2_K_S", GgmlType::Q2_K),
    (FileType::IQ4_XS, "IQ4_XS", GgmlType::IQ4_XS),
    (FileType::IQ4_NL, "IQ4_NL", GgmlType::IQ4_NL),
    // IQ3_M and IQ3_S default to iq3_s; IQ3_XS to iq3_s too (its attn/ffn rules pull it down)
    (FileType::IQ3_M, "IQ3_M", GgmlType::IQ3_S),
    (FileType::IQ3_S, "IQ3_S", GgmlType::IQ3_S),
    (FileType::IQ3_XS, "IQ3_XS", GgmlType::IQ3_S),
    (FileType::IQ3_XXS, "IQ3_XXS", GgmlType::IQ3_XXS),
    // IQ2_M defaults to iq2_s and IQ2_S to iq2_xs (llama_ftype_get_default_type)
    (FileType::IQ2_M, "IQ2_M", GgmlType::IQ2_S),
    (FileType::IQ2_S, "IQ2_S", GgmlType::IQ2_XS),
    (FileType::IQ2_XS, "IQ2_XS", GgmlType::IQ2_XS),
    (FileType::IQ2_XXS, "IQ2_XXS", GgmlType::IQ2_XXS),
    (FileType::IQ1_M, "IQ1_M", GgmlType::IQ1_M),
    (FileType::IQ1_S, "IQ1_S", GgmlType::IQ1_S),
    (FileType::TQ1_0, "TQ1_0", GgmlType::TQ1_0),
    (FileType::TQ2_0, "TQ2_0", GgmlType::TQ2_0),
    (FileType::MXFP4_MOE, "MXFP4_MOE", GgmlType::MXFP4),
];

/// A parsed quant name: the base file type and whether it named a third-party mix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParsedFileType {
    pub ftype: FileType,
    /// `UD-` (unsloth dynamic) or an `_XL` suffix: a custom per-tensor mix that only
    /// approximately follows `ftype`'s rules (unsloth keeps more tensors at higher precision)
    pub custom_mix: bool,
    /// the name as given
    pub given: String,
}

impl FileType {
    fn row(self) -> &'static (FileType, &'static str, GgmlType) {
        TABLE
            .iter()
            .find(|r| r.0 == self)
            .expect("every FileType has a table row")
    }

    /// Canonical name (`Q4_K_M`, `IQ4_XS`, `MXFP4_MOE`).
    pub fn name(self) -> &'static str {
        self.row().1
    }

    /// The `llama_ftype` id stored in `general.file_type`.
    pub fn id(self) -> u32 {
        self as u32
    }

    /// The file type for a `general.file_type` id.
    pub fn from_id(id: u32) -> Option<FileType> {
        TABLE.iter().find(|r| r.0 as u32 == id).map(|r| r.0)
    }

    /// The tensor type most weights get (`llama_ftype_get_default_type`).
    pub fn default_type(self) -> GgmlType {
        self.row().2
    }

    /// Every file type.
    pub fn all() -> impl Iterator<Item = FileType> {
        TABLE.iter().map(|r| r.0)
    }

    /// Parse a quant name as people write it: case-insensitive, `-` or `_`, with or without a
    /// file-name context (`Q4_K_M`, `q4_k_m`, `Q4-K-M`, `UD-Q4_K_XL`, `IQ4_XS`, `Q4_K` = Q4_K_M,
    /// `Q5_K` = Q5_K_M, `Q3_K` = Q3_K_M as llama-quantize's aliases, `FP16`, `MXFP4`).
    pub fn parse(name: &str) -> Option<ParsedFileType> {
        let given = name.trim().to_string();
        let mut s = given.to_ascii_uppercase().replace('-', "_");
        let mut custom_mix = false;
        if let Some(rest) = s.strip_prefix("UD_") {
            s = rest.to_string();
            custom_mix = true;
        }
        // unsloth's `_XL` mixes are the `_M` recipe with more tensors kept at higher precision
        if let Some(base) = s.strip_suffix("_XL") {
            s = format!("{base}_M");
            custom_mix = true;
        }
        let canonical = match s.as_str() {
            "FP32" | "FLOAT32" => "F32",
            "FP16" | "FLOAT16" | "HALF" => "F16",
            "BFLOAT16" => "BF16",
            "Q4_K" => "Q4_K_M",
            "Q5_K" => "Q5_K_M",
            "Q3_K" => "Q3_K_M",
            "MXFP4" => "MXFP4_MOE",
            "Q2_K_M" => "Q2_K",
            "Q6_K_M" | "Q6_K_L" => "Q6_K",
            "Q8_0_M" | "Q8_K_M" => "Q8_0",
            other => other,
        };
        let ftype = TABLE.iter().find(|r| r.1 == canonical).map(|r| r.0)?;
        Some(ParsedFileType {
            ftype,
            custom_mix,
            given,
        })
    }
}

impl std::fmt::Display for FileType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ids_round_trip() {
        for ft in FileType::all() {
            assert_eq!(FileType::from_id(ft.id()), Some(ft));
            assert_eq!(FileType::parse(ft.name()).unwrap().ftype, ft);
            assert_eq!(
                FileType::parse(&ft.name().to_lowercase()).unwrap().ftype,
                ft
            );
        }
        assert_eq!(FileType::Q4_K_M.id(), 15);
        assert_eq!(FileType::Q5_0.id(), 8);
        assert_eq!(FileType::MXFP4_MOE.id(), 38);
    }

    #[test]
    fn aliases_and_unsloth() {
        let p = FileType::parse("UD-Q4_K_XL").unwrap();
        assert_eq!(p.ftype, FileType::Q4_K_M);
        assert!(p.custom_mix);
        let p = FileType::parse("ud-q2_k_xl").unwrap();
        assert_eq!(p.ftype, FileType::Q2_K);
        assert!(p.custom_mix);
        assert_eq!(FileType::parse("q4-k-m").unwrap().ftype, FileType::Q4_K_M);
        assert!(!FileType::parse("Q4_K_M").unwrap().custom_mix);
        assert_eq!(FileType::parse("fp16").unwrap().ftype, FileType::F16);
        assert_eq!(FileType::parse("Q4_K").unwrap().ftype, FileType::Q4_K_M);
        assert!(FileType::parse("Q9_Z").is_none());
        assert!(FileType::parse("").is_none());
    }
}
