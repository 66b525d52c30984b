//! The snapshot's structure, read out of a decoded pickle into typed segments, blocks and trace
//! entries. Every torch era is accepted:
//!
//! - current (torch >= 2.1): a dict with `segments`, `device_traces` and, from ~2.3, more keys;
//! - legacy (torch 2.0): blocks carry `history` instead of `frames` and have no `address`;
//! - a bare segment list, what `torch.cuda.memory_snapshot()` returns.
//!
//! Key names and types: torch/csrc/cuda/Module.cpp `THCPModule_memorySnapshot` (torch 2.1-2.9) and
//! torch/cuda/_memory_viz.py `_block_extra_legacy` (torch 2.0 history blocks).

use super::collect::{seq, Collector};
use super::pickle::{Heap, Node, Pickle, Value};
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

/// Reads the typed snapshot out of a pickle read whole ([`super::pickle::read`]).
pub fn from_pickle(p: Pickle) -> Result<Snapshot, FormatError> {
    let mut c = Collector::new(Some(p.input_len as u64));
    c.find_keys(&p.heap.strings);
    let root = p.root();
    let mut heap = p.heap;
    assemble(&mut heap, root, &mut c)
}

/// The typed snapshot once the pickle has been read: segments and traces that were decoded as
/// they arrived are taken as they are, any others (a list wrapped by the TorchScript pickler) are
/// decoded now.
pub(crate) fn assemble(
    heap: &mut Heap,
    root: Value,
    c: &mut Collector,
) -> Result<Snapshot, FormatError> {
    let root = heap.unwrap(root);
    let is_list = |h: &Heap| h.as_seq(root).is_some() || segments_node(h, root);
    let (segments_v, traces_v) = if heap.as_dict(root).is_some() {
        let segs = heap.get(root, "segments").ok_or(FormatError::Missing {
            at: "snapshot".into(),
            key: "segments",
        })?;
        (segs, heap.get(root, "device_traces"))
    } else if is_list(heap) {
        (root, None)
    } else {
        return Err(FormatError::NotASnapshot(kind_name(heap, root)));
    };
    let list_root = is_list(heap);
    if !segments_node(heap, heap.unwrap(segments_v)) {
        seq(heap, segments_v, "snapshot", "segments")?;
    }
    if let Some(e) = c.error.take() {
        return Err(e);
    }
    let (segments, legacy) = match heap.unwrap(segments_v) {
        Value::Ref(id) if segments_node(heap, Value::Ref(id)) => {
            let Node::Segments(list) = heap.node_mut(id) else {
                unreachable!("checked above")
            };
            let list = std::mem::take(list.as_mut());
            (list.segments, list.legacy)
        }
        _ => {
            let items = seq(heap, segments_v, "snapshot", "segments")?.to_vec();
            let mut segments = Vec::with_capacity(items.len());
            let mut legacy = false;
            for (i, s) in items.into_iter().enumerate() {
                let (seg, seg_legacy) = c.segment(heap, s, i)?;
                legacy |= seg_legacy;
                segments.push(seg);
            }
            (segments, legacy)
        }
    };
    let mut device_traces = Vec::new();
    if let Some(tv) = traces_v.filter(|v| *v != Value::None) {
        let devices = seq(heap, tv, "snapshot", "device_traces")?.to_vec();
        for (d, dev) in devices.into_iter().enumerate() {
            let dev = heap.unwrap(dev);
            if let Value::Ref(id) = dev {
                if let Node::Trace(t) = heap.node_mut(id) {
                    device_traces.push(std::mem::take(&mut t.entries));
                    continue;
                }
            }
            let at = format!("device_traces[{d}]");
            let entries = heap
                .as_seq(dev)
                .ok_or_else(|| type_err(heap, &at, "entries", dev, "a list"))?
                .to_vec();
            let mut out = Vec::with_capacity(entries.len());
            for (i, e) in entries.into_iter().enumerate() {
                out.push(c.trace_entry(heap, e, d, i)?);
            }
            device_traces.push(out);
        }
    }
    let format = if list_root {
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
        sites: std::mem::take(&mut c.sites),
        action_names: std::mem::take(&mut c.action_names),
    })
}

fn segments_node(heap: &Heap, v: Value) -> bool {
    matches!(v, Value::Ref(id) if matches!(heap.node(id), Node::Segments(_)))
}

pub(crate) fn kind_name(p: &Heap, v: Value) -> &'static str {
    match v {
        Value::None => "None",
        Value::Bool(_) => "a bool",
        Value::Int(_) => "an int",
        Value::Float(_) => "a float",
        Value::Str(_) => "a string",
        Value::Ref(id) => match p.node(id) {
            Node::BigInt(_) => "an int",
            Node::Bytes(_) => "bytes",
            Node::List(_)
            | Node::Frames(_)
            | Node::Blocks(_)
            | Node::Segments(_)
            | Node::DeviceTraces(_)
            | Node::Trace(_) => "a list",
            Node::Tuple(_) => "a tuple",
            Node::Dict(_) => "a dict",
            Node::Set(_) => "a set",
            Node::Global { .. } => "a class reference",
            Node::Object(_) => "an object",
            Node::Free => "a freed object",
        },
    }
}

pub(crate) fn type_err(
    p: &Heap,
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
        let snap = from_pickle(p).unwrap();
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
        let e = match from_pickle(p) {
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
        let e = from_pickle(p).unwrap_err().to_string();
        assert!(e.contains("an int"), "{e}");
        let p =
            pickle::read(b"\x80\x02}q\x00X\x08\x00\x00\x00segmentsq\x01X\x01\x00\x00\x00xq\x02s.")
                .unwrap();
        let e = from_pickle(p).unwrap_err().to_string();
        assert!(e.contains("'segments'") && e.contains("\"x\""), "{e}");
    }
}
