//! The snapshot's structure, read out of a decoded pickle into typed segments, blocks and trace
//! entries. Every torch era is accepted:
//!
//! - current (torch >= 2.1): a dict with `segments`, `device_traces` and, from ~2.3, more keys;
//! - legacy (torch 2.0): blocks carry `history` instead of `frames` and have no `address`;
//! - a bare segment list, what `torch.cuda.memory_snapshot()` returns.
//!
//! Key names and types: torch/csrc/cuda/Module.cpp `THCPModule_memorySnapshot` (torch 2.1-2.9) and
//! torch/cuda/_memory_viz.py `_block_extra_legacy` (torch 2.0 history blocks).

use super::pickle::{Node, NodeId, Pickle, Value};
use std::collections::HashMap;
use thiserror::Error;

pub use super::model::{Action, Block, BlockState, Segment, Snapshot, SnapshotFormat, TraceEntry};

/// Why the decoded pickle is not a memory snapshot. One line, naming the offending value.
#[derive(Debug, Error, PartialEq)]
pub enum FormatError {
    #[error("the pickle holds {0}, not a memory snapshot (expected a dict with 'segments' or a list of segments)")]
    NotASnapshot(&'static str),
    #[error("{at}: '{key}' is missing")]
    Missing { at: String, key: &'static str },
    #[error("the file names more segments, blocks and trace entries than its {0} bytes can hold (the same objects referenced again and again); a crafted file?")]
    Amplified(usize),
    #[error("{at}: '{key}' is {found}, expected {expected}")]
    Type {
        at: String,
        key: &'static str,
        found: String,
        expected: &'static str,
    },
}

/// Reads the typed snapshot out of a decoded pickle.
pub fn from_pickle(p: &Pickle) -> Result<Snapshot, FormatError> {
    let root = p.unwrap(p.root());
    let mut reader = Reader {
        p,
        sites: Vec::new(),
        site_index: HashMap::new(),
        site_of_frames: HashMap::new(),
        budget: item_budget(p),
    };
    let (segments_v, traces_v) = if p.as_dict(root).is_some() {
        let segs = p.get(root, "segments").ok_or(FormatError::Missing {
            at: "snapshot".into(),
            key: "segments",
        })?;
        (segs, p.get(root, "device_traces"))
    } else if p.as_seq(root).is_some() {
        (root, None)
    } else {
        return Err(FormatError::NotASnapshot(kind_name(p, root)));
    };
    let segs = seq(p, segments_v, "snapshot", "segments")?;
    let mut segments = Vec::with_capacity(segs.len());
    let mut legacy = false;
    for (i, s) in segs.iter().enumerate() {
        let (seg, seg_legacy) = reader.segment(*s, i)?;
        legacy |= seg_legacy;
        segments.push(seg);
    }
    let mut device_traces = Vec::new();
    if let Some(tv) = traces_v.filter(|v| *v != Value::None) {
        for (d, dev) in seq(p, tv, "snapshot", "device_traces")?.iter().enumerate() {
            let at = format!("device_traces[{d}]");
            let entries = p
                .as_seq(p.unwrap(*dev))
                .ok_or_else(|| type_err(p, &at, "entries", *dev, "a list"))?;
            let mut out = Vec::with_capacity(entries.len());
            for (i, e) in entries.iter().enumerate() {
                out.push(reader.trace_entry(*e, d, i)?);
            }
            device_traces.push(out);
        }
    }
    let format = if p.as_seq(root).is_some() {
        SnapshotFormat::SegmentList
    } else if legacy {
        SnapshotFormat::Legacy
    } else {
        SnapshotFormat::Current
    };
    Ok(Snapshot {
        format,
        segments,
        device_traces,
        sites: reader.sites,
    })
}

struct Reader<'p> {
    p: &'p Pickle,
    sites: Vec<String>,
    site_index: HashMap<String, u32>,
    /// Frame lists are shared objects: their site is worked out once per list.
    site_of_frames: HashMap<NodeId, Option<u32>>,
    /// Segments, blocks and trace entries still allowed (see [`item_budget`]).
    budget: usize,
}

/// Each segment, block or trace entry of a real file is its own dict of several keys: at least
/// EMPTY_DICT, MARK, SETITEMS and two memo-referenced keys with their values, over 8 pickle bytes
/// (real files average ~270). Only memo references (a crafted file) can name more items than that.
fn item_budget(p: &Pickle) -> usize {
    p.input_len / 8 + 16
}

impl Reader<'_> {
    /// Counts one more item against the budget.
    fn spend(&mut self) -> Result<(), FormatError> {
        self.budget = self
            .budget
            .checked_sub(1)
            .ok_or(FormatError::Amplified(self.p.input_len))?;
        Ok(())
    }

    fn segment(&mut self, v: Value, i: usize) -> Result<(Segment, bool), FormatError> {
        self.spend()?;
        let p = self.p;
        let v = p.unwrap(v);
        let at = format!("segments[{i}]");
        if p.as_dict(v).is_none() {
            return Err(type_err(p, "snapshot", "segments", v, "a list of dicts"));
        }
        let address = uint(p, v, &at, "address")?;
        let total_size = uint(p, v, &at, "total_size")?;
        let device = opt_int(p, v, &at, "device")?.unwrap_or(0) as i64;
        // streams are cudaStream_t pointers cast to int64 (Module.cpp) or uint64 (XPU)
        let stream = opt_int(p, v, &at, "stream")?.unwrap_or(0) as u64;
        let segment_type = match p.get(v, "segment_type") {
            Some(t) => p
                .as_str(t)
                .ok_or_else(|| type_err(p, &at, "segment_type", t, "a string"))?
                .to_string(),
            None => "large".to_string(),
        };
        let pool = match p.get(v, "segment_pool_id") {
            Some(t) => {
                let items = p.as_seq(p.unwrap(t)).unwrap_or(&[]);
                match items {
                    [a, b] => (
                        p.as_int(*a).unwrap_or(0) as i64,
                        p.as_int(*b).unwrap_or(0) as i64,
                    ),
                    _ => return Err(type_err(p, &at, "segment_pool_id", t, "a pair of ints")),
                }
            }
            None => (0, 0),
        };
        let is_expandable = matches!(p.get(v, "is_expandable"), Some(Value::Bool(true)));
        let blocks_v = p.get(v, "blocks").ok_or(FormatError::Missing {
            at: at.clone(),
            key: "blocks",
        })?;
        let blocks_items = seq(p, blocks_v, &at, "blocks")?;
        let mut blocks = Vec::with_capacity(blocks_items.len());
        let mut legacy = false;
        let mut next_address = address;
        for (j, b) in blocks_items.iter().enumerate() {
            self.spend()?;
            let bat = format!("{at}.blocks[{j}]");
            let b = p.unwrap(*b);
            if p.as_dict(b).is_none() {
                return Err(type_err(p, &at, "blocks", b, "a list of dicts"));
            }
            let size = uint(p, b, &bat, "size")?;
            let state = match p.get(b, "state") {
                Some(s) => match p.as_str(s) {
                    Some("active_allocated") => BlockState::Allocated,
                    Some("active_pending_free") | Some("active_awaiting_free") => {
                        BlockState::PendingFree
                    }
                    Some("inactive") => BlockState::Inactive,
                    Some(_) => BlockState::Unknown,
                    None => return Err(type_err(p, &bat, "state", s, "a string")),
                },
                None => {
                    return Err(FormatError::Missing {
                        at: bat,
                        key: "state",
                    })
                }
            };
            // torch 2.0 blocks: no address (it follows from the segment's and the sizes before),
            // frames and real size in history[0] (_memory_viz.py `_block_extra_legacy`).
            let history0 = p
                .get(b, "history")
                .and_then(|h| p.as_seq(p.unwrap(h))?.first().copied());
            legacy |= p.get(b, "history").is_some() && p.get(b, "frames").is_none();
            let block_address = match p.get(b, "address") {
                Some(_) => uint(p, b, &bat, "address")?,
                None => next_address,
            };
            next_address = block_address.wrapping_add(size);
            let requested_size = if p.get(b, "requested_size").is_some() {
                uint(p, b, &bat, "requested_size")?
            } else if let Some(h) = history0.filter(|h| p.get(*h, "real_size").is_some()) {
                uint(p, h, &format!("{bat}.history[0]"), "real_size")?
            } else {
                size
            };
            let frames = p
                .get(b, "frames")
                .or_else(|| history0.and_then(|h| p.get(h, "frames")));
            let site = match (state, frames) {
                (BlockState::Allocated, Some(f)) => self.site(f),
                _ => None,
            };
            blocks.push(Block {
                address: block_address,
                size,
                requested_size,
                state,
                site,
            });
        }
        let seg = Segment {
            device,
            address,
            total_size,
            stream,
            segment_type,
            pool,
            is_expandable,
            blocks,
        };
        Ok((seg, legacy))
    }

    fn trace_entry(&mut self, v: Value, d: usize, i: usize) -> Result<TraceEntry, FormatError> {
        self.spend()?;
        let p = self.p;
        let v = p.unwrap(v);
        let at = format!("device_traces[{d}][{i}]");
        if p.as_dict(v).is_none() {
            return Err(type_err(
                p,
                &format!("device_traces[{d}]"),
                "entries",
                v,
                "a list of dicts",
            ));
        }
        let action_v = p.get(v, "action").ok_or(FormatError::Missing {
            at: at.clone(),
            key: "action",
        })?;
        let action_name = p
            .as_str(action_v)
            .ok_or_else(|| type_err(p, &at, "action", action_v, "a string"))?;
        let action = Action::parse(action_name);
        let addr_key = if action == Action::Oom {
            "device_free"
        } else {
            "addr"
        };
        let addr = match p.get(v, addr_key) {
            Some(_) => uint(p, v, &at, addr_key)?,
            None if action == Action::Oom => {
                return Err(FormatError::Missing {
                    at,
                    key: "device_free",
                })
            }
            None => 0,
        };
        let size = match p.get(v, "size") {
            Some(_) => uint(p, v, &at, "size")?,
            None => 0,
        };
        let stream = opt_int(p, v, &at, "stream")?.unwrap_or(0) as u64;
        let time_us = opt_int(p, v, &at, "time_us")?.map(|t| t as i64);
        // Only the OOM's stack is reported; naming every entry's site would cost most of the time.
        let site = match action {
            Action::Oom => p.get(v, "frames").and_then(|f| self.site(f)),
            _ => None,
        };
        Ok(TraceEntry {
            action,
            action_name: action_name.to_string(),
            addr,
            size,
            stream,
            time_us,
            site,
        })
    }

    /// The allocation site of a frame list, innermost frame first: the first Python frame outside
    /// torch's own package, else the first Python frame, else the first named C++ frame that is
    /// not the allocator's or the traceback recorder's own.
    fn site(&mut self, frames: Value) -> Option<u32> {
        let Value::Ref(key) = self.p.unwrap(frames) else {
            return None;
        };
        if let Some(s) = self.site_of_frames.get(&key) {
            return *s;
        }
        let label = site_label(self.p, frames);
        let id = label.map(|l| match self.site_index.get(&l) {
            Some(id) => *id,
            None => {
                let id = self.sites.len() as u32;
                self.site_index.insert(l.clone(), id);
                self.sites.push(l);
                id
            }
        });
        self.site_of_frames.insert(key, id);
        id
    }
}

/// `file:line (function)` of the frame that best names who allocated (see [`Reader::site`]).
fn site_label(p: &Pickle, frames: Value) -> Option<String> {
    let items = p.as_seq(p.unwrap(frames))?;
    let text = |f: Value, key: &str| -> &str {
        p.get(p.unwrap(f), key)
            .and_then(|v| p.as_str(v))
            .unwrap_or("")
    };
    let is_py = |f: &str| f.len() >= 3 && f.as_bytes()[f.len() - 3..].eq_ignore_ascii_case(b".py");
    let in_torch = |f: &str| f.contains("/torch/") || f.contains("\\torch\\");
    // The traceback gatherer and the allocator itself (memory_snapshot.cpp, CapturedTraceback.cpp,
    // CUDACachingAllocator.cpp) top every C++ stack and name no caller.
    let machinery = |n: &str| MACHINERY.iter().any(|m| n.contains(m));
    let frames = || items.iter().copied();
    let chosen = frames()
        .find(|f| is_py(text(*f, "filename")) && !in_torch(text(*f, "filename")))
        .or_else(|| frames().find(|f| is_py(text(*f, "filename"))))
        .or_else(|| {
            frames().find(|f| !text(*f, "name").is_empty() && !machinery(text(*f, "name")))
        })?;
    let (f, n) = (text(chosen, "filename"), text(chosen, "name"));
    let l = p
        .get(p.unwrap(chosen), "line")
        .and_then(|v| p.as_int(v))
        .unwrap_or(0);
    Some(format!("{f}:{l} ({n})"))
}

/// Function-name fragments of the frames that record a stack rather than request memory.
const MACHINERY: &[&str] = &[
    "unwind::unwind",
    "CapturedTraceback::gather",
    "gather_with_cpp",
    "CachingAllocator",
];

fn kind_name(p: &Pickle, v: Value) -> &'static str {
    match v {
        Value::None => "None",
        Value::Bool(_) => "a bool",
        Value::Int(_) => "an int",
        Value::Float(_) => "a float",
        Value::Ref(id) => match p.node(id) {
            Node::BigInt(_) => "an int",
            Node::Str(_) => "a string",
            Node::Bytes(_) => "bytes",
            Node::List(_) => "a list",
            Node::Tuple(_) => "a tuple",
            Node::Dict(_) => "a dict",
            Node::Set(_) => "a set",
            Node::Global { .. } => "a class reference",
            Node::Object { .. } => "an object",
        },
    }
}

fn type_err(
    p: &Pickle,
    at: &str,
    key: &'static str,
    v: Value,
    expected: &'static str,
) -> FormatError {
    let found = match (v, p.as_str(v)) {
        (_, Some(s)) => format!("the string {:?}", s.chars().take(40).collect::<String>()),
        (Value::Int(i), _) => format!("the int {i}"),
        _ => kind_name(p, v).to_string(),
    };
    FormatError::Type {
        at: at.to_string(),
        key,
        found,
        expected,
    }
}

fn seq<'p>(
    p: &'p Pickle,
    v: Value,
    at: &str,
    key: &'static str,
) -> Result<&'p [Value], FormatError> {
    p.as_seq(p.unwrap(v))
        .ok_or_else(|| type_err(p, at, key, v, "a list"))
}

fn opt_int(p: &Pickle, d: Value, at: &str, key: &'static str) -> Result<Option<i128>, FormatError> {
    match p.get(d, key) {
        None | Some(Value::None) => Ok(None),
        Some(v) => p
            .as_int(v)
            .map(Some)
            .ok_or_else(|| type_err(p, at, key, v, "an int")),
    }
}

/// A required non-negative int that fits u64.
fn uint(p: &Pickle, d: Value, at: &str, key: &'static str) -> Result<u64, FormatError> {
    let v = p.get(d, key).ok_or(FormatError::Missing {
        at: at.to_string(),
        key,
    })?;
    match p.as_int(v) {
        Some(i) if (0..=u64::MAX as i128).contains(&i) => Ok(i as u64),
        _ => Err(type_err(p, at, key, v, "a non-negative int")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{analyze, pickle};

    /// Protocol 2 with the TorchScript pickler's wrapper: the segment list and each segment go
    /// through `torch.jit._pickle.restore_type_tag(value, type)` (GLOBAL + REDUCE). Written by
    /// CPython 3.11 with a stand-in `torch.jit._pickle` module; one 2 MiB small-pool segment (1 MiB
    /// allocated, requested 100 bytes less, 1 MiB inactive) and an `oom` entry asking 3 MiB with
    /// 123456 bytes free.
    const TAGGED_HEX: &[&str] = &[
        "80027d71002858080000007365676d656e7473710163746f7263682e6a69742e5f7069636b6c650a726573746f72655f",
        "747970655f7461670a71025d710368027d710428580600000064657669636571054b0058070000006164647265737371",
        "068a06000000000001580a000000746f74616c5f73697a6571074a00002000580e000000616c6c6f63617465645f7369",
        "7a6571084a00001000580b0000006163746976655f73697a6571094a00001000580e0000007265717565737465645f73",
        "697a65710a4a9cff0f00580600000073747265616d710b4b00580c0000007365676d656e745f74797065710c58050000",
        "00736d616c6c710d5806000000626c6f636b73710e5d710f287d71102868068a06000000000001580400000073697a65",
        "71114a00001000680a4a9cff0f0058050000007374617465711258100000006163746976655f616c6c6f636174656471",
        "13757d71142868068a0600001000000168114a00001000680a4b0068125808000000696e616374697665711575657558",
        "0e000000446963745b7374722c20416e795d71168671175271186158140000004c6973745b446963745b7374722c2041",
        "6e795d5d711986711a52711b580d0000006465766963655f747261636573711c5d711d5d711e7d711f28580600000061",
        "6374696f6e712058030000006f6f6d7121580b0000006465766963655f6672656571224a40e2010068114a0000300068",
        "0b4b00756161752e",
    ];

    fn bytes(hex: &[&str]) -> Vec<u8> {
        let hex = hex.concat();
        (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn torchscript_type_tags_are_seen_through() {
        let p = pickle::read(&bytes(TAGGED_HEX)).unwrap();
        let snap = from_pickle(&p).unwrap();
        assert_eq!(snap.format, SnapshotFormat::Current);
        assert_eq!(snap.segments.len(), 1);
        assert_eq!(snap.segments[0].segment_type, "small");
        let r = analyze(&snap);
        assert_eq!(r.totals.reserved_bytes, 2 << 20);
        assert_eq!(r.totals.allocated_bytes, 1 << 20);
        assert_eq!(r.totals.rounding_waste_bytes, 100);
        let oom = r.oom.unwrap();
        assert_eq!(
            (oom.requested_bytes, oom.device_free_bytes),
            (3 << 20, 123456)
        );
        assert_eq!(
            oom.diagnosis, "capacity",
            "3 MiB > 1 MiB cached + 123456 free"
        );
    }

    #[test]
    fn memo_amplification_is_refused() {
        // {'segments': [s] * 20000} where s has one block: pickle writes s once and then 19999
        // BINGETs, so 40 KB name 40000 segments and blocks (two bytes per segment and block).
        let mut data = b"\x80\x02}q\x00X\x08\x00\x00\x00segmentsq\x01]q\x02(}q\x03(X\x07\x00\x00\x00addressq\x04K\x00X\n\x00\x00\x00total_sizeq\x05K\x10X\x06\x00\x00\x00blocksq\x06]q\x07}q\x08(X\x04\x00\x00\x00sizeq\tK\x10X\x05\x00\x00\x00stateq\nX\x08\x00\x00\x00inactiveq\x0bua".to_vec();
        data.extend(b"u");
        for _ in 0..19_999 {
            data.extend(b"h\x03");
        }
        data.extend(b"es.");
        let p = pickle::read(&data).unwrap();
        let e = match from_pickle(&p) {
            Ok(s) => panic!(
                "accepted {} segments from {} bytes",
                s.segments.len(),
                data.len()
            ),
            Err(e) => e,
        };
        assert_eq!(e, FormatError::Amplified(data.len()));
        assert!(e.to_string().contains("crafted"), "{e}");
    }

    #[test]
    fn not_a_snapshot_says_what_it_found() {
        // pickle.dumps(42, 2) and pickle.dumps({'segments': 'x'}, 2)
        let p = pickle::read(b"\x80\x02K*.").unwrap();
        let e = from_pickle(&p).unwrap_err().to_string();
        assert!(e.contains("an int"), "{e}");
        let p =
            pickle::read(b"\x80\x02}q\x00X\x08\x00\x00\x00segmentsq\x01X\x01\x00\x00\x00xq\x02s.")
                .unwrap();
        let e = from_pickle(&p).unwrap_err().to_string();
        assert!(e.contains("'segments'") && e.contains("\"x\""), "{e}");
    }
}
