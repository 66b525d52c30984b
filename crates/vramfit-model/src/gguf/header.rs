//! The GGUF header walk: magic, version, counts, metadata key/values, tensor infos, and the
//! layout of the data section, validated the way ggml's `gguf_init_from_file_impl`
//! (ggml/src/gguf.cpp; read in the copy vendored by ollama @0479add, unchanged in substance
//! since GGUF v3), with hard limits so hostile input cannot make us allocate or loop beyond the
//! bytes it really has.

use std::collections::HashSet;

use super::cursor::{Ctx, Cursor};
use super::value::{GgufValue, GgufValueType};
use super::{GgufError, GgufFile, GgufTensorInfo, ReadOptions, LARGE_ARRAY_LEN};
use crate::ggml::GgmlType;
use crate::source::ByteSource;

/// Hard caps on counts taken from the file. Real models stay far below them: DeepSeek-V3 has
/// ~1,100 tensors, a Llama GGUF ~50 metadata keys.
const MAX_TENSORS: u64 = 1 << 20;
const MAX_KV: u64 = 1 << 20;
/// Metadata keys are short dotted names (`qwen3.attention.head_count_kv`).
const MAX_KEY_LEN: u64 = 1 << 16;
/// ggml itself rejects names of GGML_MAX_NAME (64) bytes or more (ggml/include/ggml.h); we
/// accept longer ones so that a file llama.cpp refuses can still be inspected.
const MAX_TENSOR_NAME_LEN: u64 = 1 << 12;
/// Largest string value kept (chat templates are tens of KiB, embedded tokenizer.json a few MiB).
const MAX_STRING_LEN: u64 = 256 << 20;
/// Most array elements held in memory over the whole header (a 256k vocabulary with its scores,
/// types and merges is about 1M); bounds memory at ~32 bytes per element.
const MAX_KEPT_ELEMS: u64 = 1 << 24;
/// Most elements of one array walked over (only reached when the file length is unknown).
const MAX_ARRAY_LEN: u64 = 1 << 36;
/// Arrays of arrays are legal GGUF but rare; nothing real nests deeper than 2.
const MAX_DEPTH: usize = 8;
/// `GGML_MAX_DIMS` in ggml/include/ggml.h.
const GGML_MAX_DIMS: u32 = 4;
/// `GGUF_DEFAULT_ALIGNMENT` in ggml/include/gguf.h.
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// Sanity cap on `general.alignment` (ggml only requires a power of two).
const MAX_ALIGNMENT: u64 = 1 << 30;
/// Fewest bytes one metadata entry can take: key length (8) + type (4) + a 1-byte value.
const MIN_KV_BYTES: u64 = 13;
/// Fewest bytes one tensor info can take: name length (8) + n_dims (4) + type (4) + offset (8).
const MIN_TENSOR_INFO_BYTES: u64 = 24;

/// Read a whole GGUF header from `src`.
pub fn read_header(src: &dyn ByteSource, opts: ReadOptions) -> Result<GgufFile, GgufError> {
    let mut r = Reader {
        c: Cursor::new(src),
        opts,
        kept_elems: 0,
    };
    r.file()
}

struct Reader<'a> {
    c: Cursor<'a>,
    opts: ReadOptions,
    /// array elements kept so far, against MAX_KEPT_ELEMS
    kept_elems: u64,
}

impl Reader<'_> {
    fn file(&mut self) -> Result<GgufFile, GgufError> {
        let magic = self
            .c
            .array::<4>()
            .ctx(&self.c.file, || "the 4-byte magic".into())?;
        if &magic != b"GGUF" {
            let found = String::from_utf8_lossy(&magic).into_owned();
            return Err(GgufError::BadMagic {
                file: self.c.file.clone(),
                found,
            });
        }
        let version = self.version()?;
        let n_tensors = self
            .c
            .u64()
            .ctx(&self.c.file, || "the tensor count".into())?;
        let n_kv = self
            .c
            .u64()
            .ctx(&self.c.file, || "the metadata count".into())?;
        self.check_count(
            || "the tensor count".into(),
            n_tensors,
            MAX_TENSORS,
            MIN_TENSOR_INFO_BYTES,
        )?;
        self.check_count(|| "the metadata count".into(), n_kv, MAX_KV, MIN_KV_BYTES)?;

        let metadata = self.metadata(n_kv)?;
        let alignment = alignment(&metadata, &self.c.file)?;
        let tensors = self.tensor_infos(n_tensors)?;
        let header_bytes = self.c.pos();
        let data_offset = header_bytes.div_ceil(alignment) * alignment;
        self.check_layout(&tensors, data_offset, alignment)?;
        Ok(GgufFile {
            version,
            metadata,
            tensors,
            data_offset,
            header_bytes,
        })
    }

    /// The version, detecting a file written on a big-endian machine the way ggml does: its
    /// small version number read little-endian has all-zero low 16 bits (ggml/src/gguf.cpp).
    fn version(&mut self) -> Result<u32, GgufError> {
        let mut version = self.c.u32().ctx(&self.c.file, || "the version".into())?;
        if version & 0xFFFF == 0 && version != 0 {
            self.c.big_endian = true;
            version = version.swap_bytes();
        }
        match version {
            1 => Err(GgufError::Version1 {
                file: self.c.file.clone(),
            }),
            2 | 3 => Ok(version),
            v => Err(GgufError::UnsupportedVersion {
                file: self.c.file.clone(),
                version: v,
            }),
        }
    }

    /// A count is plausible if it is under its hard cap and the file has room for that many
    /// entries of the smallest possible size.
    fn check_count(
        &self,
        what: impl Fn() -> String,
        count: u64,
        limit: u64,
        min_each: u64,
    ) -> Result<(), GgufError> {
        let file = self.c.file.clone();
        if count > limit {
            return Err(GgufError::TooMany {
                file,
                what: what(),
                count,
                limit,
            });
        }
        match self.c.remaining() {
            Some(remaining) if count.saturating_mul(min_each) > remaining => {
                Err(GgufError::CountPastEnd {
                    file,
                    what: what(),
                    count,
                    remaining,
                })
            }
            _ => Ok(()),
        }
    }

    fn string(&mut self, limit: u64, what: &dyn Fn() -> String) -> Result<String, GgufError> {
        let n = self
            .c
            .u64()
            .ctx(&self.c.file, || format!("the length of {}", what()))?;
        if n > limit {
            let file = self.c.file.clone();
            return Err(GgufError::TooMany {
                file,
                what: format!("the length of {}", what()),
                count: n,
                limit,
            });
        }
        let bytes = self.c.bytes(n).ctx(&self.c.file, what)?;
        // ggml does not require UTF-8 (token texts may be raw bytes); keep what we can
        Ok(String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }

    fn metadata(&mut self, n_kv: u64) -> Result<Vec<(String, GgufValue)>, GgufError> {
        let mut out = Vec::with_capacity(n_kv.min(256) as usize);
        let mut seen = HashSet::new();
        for i in 0..n_kv {
            let key = self.string(MAX_KEY_LEN, &|| format!("metadata key #{i}"))?;
            let type_id = self
                .c
                .u32()
                .ctx(&self.c.file, || format!("the type of metadata key {key:?}"))?;
            let value = self.value(&key, type_id, 0)?;
            if !seen.insert(key.clone()) {
                return Err(GgufError::DuplicateKey {
                    file: self.c.file.clone(),
                    key,
                });
            }
            out.push((key, value));
        }
        Ok(out)
    }

    fn value_type(&self, key: &str, type_id: u32) -> Result<GgufValueType, GgufError> {
        GgufValueType::from_id(type_id).ok_or_else(|| GgufError::BadValueType {
            file: self.c.file.clone(),
            key: key.to_string(),
            type_id,
        })
    }

    fn value(&mut self, key: &str, type_id: u32, depth: usize) -> Result<GgufValue, GgufError> {
        use GgufValue as V;
        let t = self.value_type(key, type_id)?;
        let what = || format!("the value of metadata key {key:?}");
        let c = &mut self.c;
        let v = match t {
            GgufValueType::U8 => c.u8().map(V::U8),
            GgufValueType::I8 => c.u8().map(|v| V::I8(v as i8)),
            GgufValueType::U16 => c.u16().map(V::U16),
            GgufValueType::I16 => c.u16().map(|v| V::I16(v as i16)),
            GgufValueType::U32 => c.u32().map(V::U32),
            GgufValueType::I32 => c.u32().map(|v| V::I32(v as i32)),
            GgufValueType::F32 => c.u32().map(|v| V::F32(f32::from_bits(v))),
            // ggml reads a bool as one byte, any non-zero value is true
            GgufValueType::Bool => c.u8().map(|v| V::Bool(v != 0)),
            GgufValueType::U64 => c.u64().map(V::U64),
            GgufValueType::I64 => c.u64().map(|v| V::I64(v as i64)),
            GgufValueType::F64 => c.u64().map(|v| V::F64(f64::from_bits(v))),
            GgufValueType::String => return self.string(MAX_STRING_LEN, &what).map(V::String),
            GgufValueType::Array => return self.array(key, depth + 1),
        };
        v.ctx(&self.c.file, what)
    }

    fn array(&mut self, key: &str, depth: usize) -> Result<GgufValue, GgufError> {
        if depth > MAX_DEPTH {
            let file = self.c.file.clone();
            return Err(GgufError::TooDeep {
                file,
                key: key.into(),
                depth,
                limit: MAX_DEPTH,
            });
        }
        let elem_id = self.c.u32().ctx(&self.c.file, || {
            format!("the element type of array {key:?}")
        })?;
        let len = self
            .c
            .u64()
            .ctx(&self.c.file, || format!("the length of array {key:?}"))?;
        let elem_type = self.value_type(key, elem_id)?;
        let keep = len <= LARGE_ARRAY_LEN || self.opts.keep_large_arrays;
        let what = || format!("the length of array {key:?}");
        self.check_count(what, len, MAX_ARRAY_LEN, elem_type.min_size())?;
        if keep {
            self.kept_elems = self.kept_elems.saturating_add(len);
            if self.kept_elems > MAX_KEPT_ELEMS {
                let file = self.c.file.clone();
                let what = format!(
                    "the array elements kept up to {key:?} (read without keep_large_arrays)"
                );
                return Err(GgufError::TooMany {
                    file,
                    what,
                    count: self.kept_elems,
                    limit: MAX_KEPT_ELEMS,
                });
            }
        }
        if !keep {
            self.skip_elems(key, elem_type, len, depth)?;
            return Ok(GgufValue::SkippedArray { elem_type, len });
        }
        let mut out = Vec::with_capacity(len.min(4096) as usize);
        for _ in 0..len {
            out.push(self.value(key, elem_id, depth)?);
        }
        Ok(GgufValue::Array(out))
    }

    /// Walk over `len` elements without keeping them. GGUF stores no byte length for an array,
    /// so strings are stepped over one length prefix at a time.
    fn skip_elems(
        &mut self,
        key: &str,
        t: GgufValueType,
        len: u64,
        depth: usize,
    ) -> Result<(), GgufError> {
        let what = || format!("the elements of array {key:?}");
        match t {
            GgufValueType::String => {
                for _ in 0..len {
                    let r = self.c.skip_string();
                    r.ctx(&self.c.file, what)?;
                }
            }
            GgufValueType::Array => {
                for _ in 0..len {
                    if depth + 1 > MAX_DEPTH {
                        let file = self.c.file.clone();
                        return Err(GgufError::TooDeep {
                            file,
                            key: key.into(),
                            depth: depth + 1,
                            limit: MAX_DEPTH,
                        });
                    }
                    let inner_id = self.c.u32().ctx(&self.c.file, what)?;
                    let inner_len = self.c.u64().ctx(&self.c.file, what)?;
                    let inner = self.value_type(key, inner_id)?;
                    self.check_count(
                        || format!("the length of array {key:?}"),
                        inner_len,
                        MAX_ARRAY_LEN,
                        inner.min_size(),
                    )?;
                    self.skip_elems(key, inner, inner_len, depth + 1)?;
                }
            }
            fixed => {
                // check_count already bounded len * size by the bytes left (or MAX_ARRAY_LEN)
                let size = fixed.fixed_size().unwrap_or(1);
                let r = self.c.skip(len.saturating_mul(size));
                r.ctx(&self.c.file, what)?;
            }
        }
        Ok(())
    }

    fn tensor_infos(&mut self, n: u64) -> Result<Vec<GgufTensorInfo>, GgufError> {
        let mut out = Vec::with_capacity(n.min(4096) as usize);
        let mut names = HashSet::new();
        for i in 0..n {
            let name = self.string(MAX_TENSOR_NAME_LEN, &|| format!("the name of tensor #{i}"))?;
            let info = self.tensor_info(name)?;
            if !names.insert(info.name.clone()) {
                return Err(GgufError::DuplicateTensor {
                    file: self.c.file.clone(),
                    tensor: info.name,
                });
            }
            out.push(info);
        }
        Ok(out)
    }

    fn tensor_info(&mut self, name: String) -> Result<GgufTensorInfo, GgufError> {
        let file = self.c.file.clone();
        let n_dims = self.c.u32().ctx(&self.c.file, || {
            format!("the dimension count of tensor {name:?}")
        })?;
        if n_dims > GGML_MAX_DIMS {
            return Err(GgufError::TooManyDims {
                file,
                tensor: name,
                n_dims,
                max: GGML_MAX_DIMS,
            });
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        for d in 0..n_dims {
            dims.push(
                self.c
                    .u64()
                    .ctx(&self.c.file, || format!("dimension {d} of tensor {name:?}"))?,
            );
        }
        let type_id = self
            .c
            .u32()
            .ctx(&self.c.file, || format!("the type of tensor {name:?}"))?;
        let offset = self.c.u64().ctx(&self.c.file, || {
            format!("the data offset of tensor {name:?}")
        })?;
        let Some(ggml_type) = GgmlType::from_id(type_id) else {
            return Err(GgufError::UnknownTensorType {
                file,
                tensor: name,
                type_id,
            });
        };
        let bad = |why: String| GgufError::BadShape {
            file: file.clone(),
            tensor: name.clone(),
            ggml_type: ggml_type.name().into(),
            dims: dims.clone(),
            why,
        };
        // ggml stores ne[] as int64_t and rejects negative extents and element counts that
        // overflow int64 (gguf.cpp, "total number of elements")
        let elems = dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d));
        if elems.is_none_or(|e| e > i64::MAX as u64) {
            return Err(bad("more elements than an int64 holds".into()));
        }
        let first = dims.first().copied().unwrap_or(1);
        if first % ggml_type.block_elems() != 0 {
            return Err(bad(format!(
                "a row of {first} is not a whole number of {}-element blocks",
                ggml_type.block_elems()
            )));
        }
        let Some(bytes) = ggml_type.tensor_bytes(&dims) else {
            return Err(bad("its byte size overflows".into()));
        };
        Ok(GgufTensorInfo {
            name,
            dims,
            ggml_type,
            offset,
            bytes,
        })
    }

    /// Every tensor must be aligned and lie inside the file (when its length is known).
    fn check_layout(
        &self,
        tensors: &[GgufTensorInfo],
        data_offset: u64,
        alignment: u64,
    ) -> Result<(), GgufError> {
        let file = &self.c.file;
        for t in tensors.iter() {
            if t.offset % alignment != 0 {
                let (file, tensor) = (file.clone(), t.name.clone());
                return Err(GgufError::MisalignedTensor {
                    file,
                    tensor,
                    offset: t.offset,
                    alignment,
                });
            }
        }
        let Some(len) = self.c.len() else {
            return Ok(());
        };
        if tensors.is_empty() {
            return Ok(());
        }
        if data_offset > len {
            return Err(GgufError::DataPastEnd {
                file: file.clone(),
                data_offset,
                len,
            });
        }
        for t in tensors.iter() {
            let end = data_offset
                .checked_add(t.offset)
                .and_then(|s| s.checked_add(t.bytes));
            if end.is_none_or(|e| e > len) {
                let end = end.unwrap_or(u64::MAX);
                return Err(GgufError::TensorPastEnd {
                    file: file.clone(),
                    tensor: t.name.clone(),
                    end,
                    len,
                });
            }
        }
        Ok(())
    }
}

/// `general.alignment`, default 32; ggml requires a u32 power of two (gguf.cpp).
fn alignment(metadata: &[(String, GgufValue)], file: &str) -> Result<u64, GgufError> {
    let Some((_, v)) = metadata.iter().find(|(k, _)| k == "general.alignment") else {
        return Ok(DEFAULT_ALIGNMENT);
    };
    match v.as_u64() {
        Some(a) if a.is_power_of_two() && a <= MAX_ALIGNMENT => Ok(a),
        _ => Err(GgufError::BadAlignment {
            file: file.into(),
            value: v.describe(),
            limit: MAX_ALIGNMENT,
        }),
    }
}
