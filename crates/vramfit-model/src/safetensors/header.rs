//! One safetensors file's header: an 8-byte little-endian length, then that many bytes of JSON
//! mapping tensor names to `{dtype, shape, data_offsets}` (offsets relative to the end of the
//! header), plus an optional `__metadata__` map of strings.
//!
//! We parse the header ourselves with serde_json instead of calling the official `safetensors`
//! crate: its `SafeTensors::read_metadata` (safetensors/src/tensor.rs, 0.4–0.8-dev) insists that
//! the buffer holds the whole file (`buffer_end + 8 + n == buffer.len()`), rejects unknown dtypes
//! and stops at the first inconsistency, while we read only the header (often over HTTP) and want
//! to report every problem at once.

use super::dtype::dtype_bits;
use super::StError;
use crate::source::ByteSource;
use crate::weights::{Tensor, TensorDtype, WeightSet};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Largest header we accept: the official reader's `MAX_HEADER_SIZE` (100_000_000 bytes,
/// safetensors/src/tensor.rs). Real headers are a few KiB to a few MiB.
pub const MAX_HEADER_LEN: u64 = 100_000_000;

/// Largest data offset we accept (1 EiB): beyond any real checkpoint, and it keeps sums of
/// bytes and elements within u64.
const MAX_DATA_END: u64 = 1 << 60;

/// Bytes read in the first request: the length prefix and, for most files, the whole header, so
/// that a remote header costs one round trip.
const FIRST_READ: u64 = 64 * 1024;

/// One tensor entry of a header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StTensor {
    pub name: String,
    /// the safetensors dtype name (`BF16`, `F8_E4M3`, `I32`, ...)
    pub dtype: String,
    /// PyTorch order (outermost first)
    pub shape: Vec<u64>,
    /// `[begin, end)` relative to the first byte after the header
    pub data_offsets: [u64; 2],
}

impl StTensor {
    /// Exact bytes the tensor occupies in the file.
    pub fn bytes(&self) -> u64 {
        self.data_offsets[1].saturating_sub(self.data_offsets[0])
    }

    /// Element count, `None` on overflow.
    pub fn elems(&self) -> Option<u64> {
        self.shape
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
    }

    /// Bytes that shape × dtype width implies, `None` for an unknown dtype or overflow.
    pub fn expected_bytes(&self) -> Option<u64> {
        let bits = self.elems()?.checked_mul(dtype_bits(&self.dtype)?)?;
        Some(bits.div_ceil(8))
    }
}

/// A parsed safetensors header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SafetensorsHeader {
    /// path or URL of the file
    pub file: String,
    /// length of the JSON header in bytes (the value of the 8-byte prefix)
    pub header_len: u64,
    /// the file's length when the source knows it
    pub file_len: Option<u64>,
    /// the `__metadata__` map (values that are not strings are kept as their JSON text)
    pub metadata: BTreeMap<String, String>,
    /// tensors in file order (by `data_offsets`)
    pub tensors: Vec<StTensor>,
    /// inconsistencies that do not stop the reading (bytes ≠ shape × dtype, unknown dtypes, gaps)
    pub issues: Vec<String>,
}

impl SafetensorsHeader {
    /// Offset of the first data byte in the file.
    pub fn data_start(&self) -> u64 {
        8 + self.header_len
    }

    /// Sum of the tensors' exact bytes.
    pub fn tensor_bytes(&self) -> u64 {
        self.tensors.iter().map(StTensor::bytes).sum()
    }

    /// The tensors as a [`WeightSet`]: checkpoint names, dims in ggml order (reversed shape),
    /// `TensorDtype::Named`, exact bytes from the offsets.
    pub fn to_weight_set(&self) -> WeightSet {
        WeightSet {
            tensors: self.tensors.iter().map(to_tensor).collect(),
            source: "safetensors header".to_string(),
        }
    }
}

pub(crate) fn to_tensor(t: &StTensor) -> Tensor {
    Tensor {
        name: t.name.clone(),
        dims: t.shape.iter().rev().copied().collect(),
        dtype: TensorDtype::Named(t.dtype.clone()),
        bytes: t.bytes(),
    }
}

#[derive(Deserialize)]
struct RawEntry {
    dtype: String,
    shape: Vec<u64>,
    data_offsets: [u64; 2],
}

/// Read and check the header of one safetensors file, fetching only the header's bytes.
pub fn read_safetensors_header(src: &dyn ByteSource) -> Result<SafetensorsHeader, StError> {
    let file = src.name();
    let file_len = src.len();
    let io = |e: std::io::Error| StError::io(&file, &e);

    let first = match file_len {
        Some(len) if len < 8 => return Err(StError::TooShort { file, len }),
        Some(len) => len.min(FIRST_READ),
        None => 8,
    };
    let mut head = vec![0u8; first as usize];
    src.read_at(0, &mut head).map_err(io)?;
    let header_len = u64::from_le_bytes(head[..8].try_into().expect("8 bytes were read"));
    if header_len > MAX_HEADER_LEN {
        return Err(StError::HeaderTooLarge {
            file,
            header_len,
            cap: MAX_HEADER_LEN,
        });
    }
    if let Some(len) = file_len {
        if 8 + header_len > len {
            return Err(StError::HeaderPastEnd {
                file,
                header_len,
                file_len: len,
            });
        }
    }
    let end = 8 + header_len;
    let json: Vec<u8> = if end <= first {
        head[8..end as usize].to_vec()
    } else {
        let mut rest = vec![0u8; (end - first) as usize];
        src.read_at(first, &mut rest).map_err(io)?;
        let mut json = head.split_off(8);
        json.extend_from_slice(&rest);
        json
    };
    parse_header_json(&file, header_len, file_len, &json)
}

/// Parse the JSON part of a header (exposed for fuzzing and for callers that hold the bytes).
pub fn parse_header_json(
    file: &str,
    header_len: u64,
    file_len: Option<u64>,
    json: &[u8],
) -> Result<SafetensorsHeader, StError> {
    let bad = |message: String| StError::BadHeader {
        file: file.to_string(),
        message,
    };
    // The spec allows trailing spaces as padding (writers align the data to 8 bytes).
    let map: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(json)
        .map_err(|e| bad(format!("the header is not a JSON object: {e}")))?;

    let mut metadata = BTreeMap::new();
    let mut tensors = Vec::with_capacity(map.len());
    for (name, value) in map {
        if name == "__metadata__" {
            let obj = value
                .as_object()
                .ok_or_else(|| bad("`__metadata__` is not a JSON object".to_string()))?;
            for (k, v) in obj {
                let text = v
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string());
                metadata.insert(k.clone(), text);
            }
            continue;
        }
        let raw: RawEntry = serde_json::from_value(value)
            .map_err(|e| bad(format!("tensor '{name}' has a malformed entry: {e}")))?;
        let [begin, end] = raw.data_offsets;
        if end < begin {
            return Err(bad(format!(
                "tensor '{name}' ends (byte {end}) before it begins (byte {begin})"
            )));
        }
        if end > MAX_DATA_END {
            return Err(bad(format!(
                "tensor '{name}' ends at byte {end}, beyond any real file"
            )));
        }
        let t = StTensor {
            name,
            dtype: raw.dtype,
            shape: raw.shape,
            data_offsets: raw.data_offsets,
        };
        // No dtype packs more than 8 elements per byte; a larger count is a corrupt shape, and
        // refusing it keeps every element and byte sum downstream far from u64 overflow.
        if t.elems().is_none_or(|n| n > 8 * t.bytes() + 8) {
            return Err(bad(format!(
                "tensor '{}' has shape {:?}, which cannot fit in {} bytes",
                t.name,
                t.shape,
                t.bytes()
            )));
        }
        tensors.push(t);
    }
    tensors.sort_by(|a, b| {
        a.data_offsets
            .cmp(&b.data_offsets)
            .then_with(|| a.name.cmp(&b.name))
    });
    // Overlapping data would count bytes twice (the official reader refuses any layout that is
    // not one contiguous run; we only refuse overlaps and report gaps).
    for pair in tensors.windows(2) {
        if pair[1].data_offsets[0] < pair[0].data_offsets[1] {
            return Err(bad(format!(
                "tensors '{}' and '{}' overlap in the data section",
                pair[0].name, pair[1].name
            )));
        }
    }

    if let Some(len) = file_len {
        let data_len = len.saturating_sub(8 + header_len);
        if let Some(t) = tensors.iter().find(|t| t.data_offsets[1] > data_len) {
            return Err(StError::TensorPastEnd {
                file: file.to_string(),
                tensor: t.name.clone(),
                end: 8 + header_len + t.data_offsets[1],
                file_len: len,
            });
        }
    }
    let issues = check_tensors(&tensors);
    Ok(SafetensorsHeader {
        file: file.to_string(),
        header_len,
        file_len,
        metadata,
        tensors,
        issues,
    })
}

/// Inconsistencies the official reader would refuse: bytes that disagree with shape × dtype,
/// unknown dtypes, and gaps in the data section.
fn check_tensors(tensors: &[StTensor]) -> Vec<String> {
    let mut issues = Vec::new();
    let mut expected_begin = 0u64;
    for t in tensors {
        let [begin, end] = t.data_offsets;
        if begin > expected_begin {
            issues.push(format!(
                "gap of {} bytes before tensor '{}'",
                begin - expected_begin,
                t.name
            ));
        }
        expected_begin = end;
        match (dtype_bits(&t.dtype), t.elems()) {
            (_, None) => {}
            (None, _) => issues.push(format!(
                "tensor '{}' has dtype '{}', unknown to vramfit",
                t.name, t.dtype
            )),
            (Some(bits), Some(elems)) => {
                let expected = t.expected_bytes().unwrap_or(u64::MAX);
                if elems.checked_mul(bits).is_some_and(|b| b % 8 != 0) {
                    issues.push(format!(
                        "tensor '{}' ({} × {}) does not fill whole bytes",
                        t.name, t.dtype, elems
                    ));
                }
                if expected != end - begin {
                    issues.push(format!(
                        "tensor '{}' holds {} bytes but shape {:?} × {} needs {}",
                        t.name,
                        end - begin,
                        t.shape,
                        t.dtype,
                        expected
                    ));
                }
            }
        }
    }
    issues
}
