//! GGUF metadata values: the thirteen on-disk value types and the decoded values.

use serde::Serialize;

/// A GGUF metadata value type; the discriminant is the on-disk id (`enum gguf_type` in
/// ggml/include/gguf.h, unchanged since GGUF v2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GgufValueType {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
}

impl GgufValueType {
    /// The type for an on-disk id, `None` for ids outside 0..=12.
    pub fn from_id(id: u32) -> Option<GgufValueType> {
        use GgufValueType::*;
        Some(match id {
            0 => U8,
            1 => I8,
            2 => U16,
            3 => I16,
            4 => U32,
            5 => I32,
            6 => F32,
            7 => Bool,
            8 => String,
            9 => Array,
            10 => U64,
            11 => I64,
            12 => F64,
            _ => return None,
        })
    }

    /// Bytes of one value of a fixed-size type; `None` for strings and arrays.
    pub fn fixed_size(self) -> Option<u64> {
        use GgufValueType::*;
        match self {
            U8 | I8 | Bool => Some(1),
            U16 | I16 => Some(2),
            U32 | I32 | F32 => Some(4),
            U64 | I64 | F64 => Some(8),
            String | Array => None,
        }
    }

    /// The fewest bytes one value can take on disk: a string is at least its u64 length, an
    /// array at least its u32 element type and u64 length.
    pub fn min_size(self) -> u64 {
        match self {
            GgufValueType::String => 8,
            GgufValueType::Array => 12,
            t => t.fixed_size().unwrap_or(1),
        }
    }

    /// Name as gguf-py prints it (`UINT32`, `STRING`, ...), lower-cased.
    pub fn name(self) -> &'static str {
        use GgufValueType::*;
        match self {
            U8 => "uint8",
            I8 => "int8",
            U16 => "uint16",
            I16 => "int16",
            U32 => "uint32",
            I32 => "int32",
            F32 => "float32",
            Bool => "bool",
            String => "string",
            Array => "array",
            U64 => "uint64",
            I64 => "int64",
            F64 => "float64",
        }
    }
}

/// One decoded metadata value.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum GgufValue {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    Array(Vec<GgufValue>),
    U64(u64),
    I64(i64),
    F64(f64),
    /// An array longer than [`super::LARGE_ARRAY_LEN`] read without
    /// [`super::ReadOptions::keep_large_arrays`]: its elements were walked over, not kept
    /// (a 150k-token vocabulary, BPE merges, token scores).
    SkippedArray {
        elem_type: GgufValueType,
        len: u64,
    },
}

impl GgufValue {
    /// The value's type (`Array` for kept and skipped arrays).
    pub fn value_type(&self) -> GgufValueType {
        use GgufValue as V;
        match self {
            V::U8(_) => GgufValueType::U8,
            V::I8(_) => GgufValueType::I8,
            V::U16(_) => GgufValueType::U16,
            V::I16(_) => GgufValueType::I16,
            V::U32(_) => GgufValueType::U32,
            V::I32(_) => GgufValueType::I32,
            V::F32(_) => GgufValueType::F32,
            V::Bool(_) => GgufValueType::Bool,
            V::String(_) => GgufValueType::String,
            V::Array(_) | V::SkippedArray { .. } => GgufValueType::Array,
            V::U64(_) => GgufValueType::U64,
            V::I64(_) => GgufValueType::I64,
            V::F64(_) => GgufValueType::F64,
        }
    }

    /// An integer of any width as u64; `None` for negative numbers, floats, strings, arrays.
    /// (Converters store the same key as u32 or i32 depending on the model, so readers accept
    /// any integer type, as llama.cpp's `get_arr_n`/`get_key` casts do.)
    pub fn as_u64(&self) -> Option<u64> {
        use GgufValue as V;
        match *self {
            V::U8(v) => Some(v.into()),
            V::U16(v) => Some(v.into()),
            V::U32(v) => Some(v.into()),
            V::U64(v) => Some(v),
            V::I8(v) => u64::try_from(v).ok(),
            V::I16(v) => u64::try_from(v).ok(),
            V::I32(v) => u64::try_from(v).ok(),
            V::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// A signed integer of any width as i64.
    pub fn as_i64(&self) -> Option<i64> {
        use GgufValue as V;
        match *self {
            V::I8(v) => Some(v.into()),
            V::I16(v) => Some(v.into()),
            V::I32(v) => Some(v.into()),
            V::I64(v) => Some(v),
            _ => self.as_u64().and_then(|v| i64::try_from(v).ok()),
        }
    }

    /// Any number as f64 (floats and integers).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            GgufValue::F32(v) => Some(v.into()),
            GgufValue::F64(v) => Some(v),
            _ => self
                .as_i64()
                .map(|v| v as f64)
                .or_else(|| self.as_u64().map(|v| v as f64)),
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            GgufValue::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            GgufValue::String(s) => Some(s),
            _ => None,
        }
    }

    /// The elements of a kept array; `None` for a skipped array and for non-arrays.
    pub fn as_array(&self) -> Option<&[GgufValue]> {
        match self {
            GgufValue::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The length of an array, kept or skipped.
    pub fn array_len(&self) -> Option<u64> {
        match self {
            GgufValue::Array(a) => Some(a.len() as u64),
            GgufValue::SkippedArray { len, .. } => Some(*len),
            _ => None,
        }
    }

    /// A short description for error messages: `uint32 7`, `string "llama"`, `array[151936]`.
    pub fn describe(&self) -> String {
        match self {
            GgufValue::String(s) if s.len() > 40 => format!("a string of {} bytes", s.len()),
            GgufValue::String(s) => format!("string {s:?}"),
            GgufValue::Array(a) => format!("an array of {}", a.len()),
            GgufValue::SkippedArray { elem_type, len } => {
                format!("an array of {len} {}", elem_type.name())
            }
            v => format!(
                "{} {}",
                v.value_type().name(),
                v.as_f64().unwrap_or(f64::NAN)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_widths_convert() {
        assert_eq!(GgufValue::U8(7).as_u64(), Some(7));
        assert_eq!(GgufValue::I32(-1).as_u64(), None);
        assert_eq!(GgufValue::I32(-1).as_i64(), Some(-1));
        assert_eq!(GgufValue::U64(u64::MAX).as_i64(), None);
        assert_eq!(GgufValue::F32(0.5).as_f64(), Some(0.5));
        assert_eq!(GgufValue::String("x".into()).as_u64(), None);
        assert_eq!(GgufValue::Bool(true).as_u64(), None);
        let skipped = GgufValue::SkippedArray {
            elem_type: GgufValueType::String,
            len: 5,
        };
        assert_eq!(skipped.array_len(), Some(5));
        assert_eq!(skipped.as_array(), None);
    }

    #[test]
    fn type_ids_round_trip() {
        for id in 0..=12 {
            let t = GgufValueType::from_id(id).unwrap();
            assert_eq!(t as u32, id);
        }
        assert_eq!(GgufValueType::from_id(13), None);
    }
}
