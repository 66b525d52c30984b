//! Decodes segments, blocks and trace entries while the pickle is read, so the whole tree never
//! exists at once. The pickle machine asks [`Collector::role`] what a new list is (from the dict
//! key on the stack: `segments`, `blocks`, `frames`, `device_traces`; or from its parent, for one
//! device's trace), and hands every item appended to such a list to [`Collector::append`], which
//! decodes it into the typed model and frees the dict. A `frames` list keeps only the frames a
//! site label can come from ([`SiteFrames`]).
//!
//! Key names and types: torch/csrc/cuda/Module.cpp `THCPModule_memorySnapshot` (torch 2.1-2.9) and
//! torch/cuda/_memory_viz.py `_block_extra_legacy` (torch 2.0 history blocks).

use super::format::{type_err, FormatError};
use super::model::{Action, Block, BlockState, Segment, TraceEntry};
use super::pickle::heap::Strings;
use super::pickle::{Heap, Node, NodeId, StrId, Value};
use std::collections::HashMap;

mod sites;
pub use sites::{Frame, SiteFrames};

/// A block before its segment's address is known (torch 2.0 blocks have none of their own).
#[derive(Clone, Debug)]
pub struct PendingBlock {
    address: Option<u64>,
    size: u64,
    requested_size: u64,
    state: BlockState,
    site: Option<u32>,
    legacy: bool,
}

#[derive(Clone, Debug, Default)]
pub struct BlockList {
    /// Index of the segment, for error messages.
    segment: usize,
    blocks: Vec<PendingBlock>,
}

#[derive(Clone, Debug, Default)]
pub struct SegmentList {
    pub segments: Vec<Segment>,
    pub legacy: bool,
}

#[derive(Clone, Debug, Default)]
pub struct TraceList {
    /// Index of the device, for error messages.
    device: usize,
    pub entries: Vec<TraceEntry>,
}

macro_rules! keys {
    ($($field:ident),*) => {
        /// Interned ids of the keys the snapshot reader looks up (None: not in this file).
        #[derive(Clone, Copy, Debug, Default)]
        struct Keys { $($field: Option<StrId>),* }
        impl Keys {
            fn intern(s: &mut Strings) -> Keys {
                Keys { $($field: Some(s.intern(stringify!($field)))),* }
            }
            fn find(s: &Strings) -> Keys {
                Keys { $($field: s.find(stringify!($field))),* }
            }
        }
    };
}

keys!(
    segments,
    blocks,
    frames,
    device_traces,
    history,
    filename,
    line,
    name,
    size,
    state,
    address,
    requested_size,
    real_size,
    action,
    addr,
    device_free,
    stream,
    time_us,
    total_size,
    device,
    segment_type,
    segment_pool_id,
    is_expandable
);

/// The typed output of a read, and the state of decoding.
#[derive(Debug, Default)]
pub struct Collector {
    keys: Keys,
    /// The input's length when known; else the budget follows the bytes read so far.
    known_len: Option<u64>,
    consumed: u64,
    spent: usize,
    /// The first decoding error; reported once the pickle itself has been read to the end.
    pub(crate) error: Option<FormatError>,
    segments_done: usize,
    pub(crate) sites: Vec<String>,
    site_index: HashMap<String, u32>,
    site_of_frame: HashMap<Frame, u32>,
    pub(crate) action_names: Vec<String>,
    action_index: HashMap<StrId, u32>,
    /// Per string id: KNOWN | PY | TORCH | MACHINE, worked out once.
    class: Vec<u8>,
    /// Distinct frames that dict tags point to.
    frame_table: Vec<Frame>,
    frame_index: HashMap<Frame, u32>,
}

impl Collector {
    pub fn new(known_len: Option<u64>) -> Collector {
        Collector {
            known_len,
            ..Collector::default()
        }
    }

    pub(crate) fn intern_keys(&mut self, s: &mut Strings) {
        self.keys = Keys::intern(s);
    }

    pub(crate) fn find_keys(&mut self, s: &Strings) {
        self.keys = Keys::find(s);
    }

    pub(crate) fn set_consumed(&mut self, at: u64) {
        self.consumed = at;
    }

    pub(crate) fn input_len(&self) -> u64 {
        self.known_len.unwrap_or(self.consumed)
    }

    /// Counts one more segment, block or trace entry. Each is its own dict of several keys in a
    /// real file: at least EMPTY_DICT, MARK, SETITEMS and two memo-referenced keys with their
    /// values, over 8 pickle bytes (real files average ~270). Only memo references (a crafted
    /// file) can name more items than that.
    fn spend(&mut self, n: usize) -> Result<(), FormatError> {
        self.spent = self.spent.saturating_add(n);
        let len = self.input_len();
        if self.spent as u64 > len / 8 + 16 {
            return Err(FormatError::Amplified(len as usize));
        }
        Ok(())
    }

    fn get(&self, heap: &Heap, dict: Value, key: Option<StrId>) -> Option<Value> {
        heap.get_id(dict, key?)
    }

    /// What a new list is, from what the stack holds when it is created.
    pub(crate) fn role(&self, heap: &Heap, stack: &[Value], marks: &[usize]) -> Option<Node> {
        let k = &self.keys;
        match stack.last() {
            // the root list: torch.cuda.memory_snapshot()'s list of segments
            None if marks.is_empty() => return Some(Node::Segments(Box::default())),
            Some(Value::Str(key)) => {
                let key = Some(*key);
                return if key == k.segments {
                    Some(Node::Segments(Box::default()))
                } else if key == k.blocks {
                    let segment = self.pending_segment(heap, stack, marks);
                    Some(Node::Blocks(Box::new(BlockList {
                        segment,
                        blocks: Vec::new(),
                    })))
                } else if key == k.frames {
                    Some(Node::Frames(Box::default()))
                } else if key == k.device_traces {
                    Some(Node::DeviceTraces(Vec::new()))
                } else {
                    None
                };
            }
            _ => {}
        }
        // a list appended to `device_traces`: one device's trace
        let traces = |v: &Value| match v {
            Value::Ref(id) => match heap.node(*id) {
                Node::DeviceTraces(items) => Some(items.len()),
                _ => None,
            },
            _ => None,
        };
        let device = match (stack.last().and_then(traces), marks.last()) {
            (Some(n), _) => Some(n),
            (None, Some(&m)) if m >= 1 && m <= stack.len() => {
                traces(&stack[m - 1]).map(|n| n + stack.len() - m)
            }
            _ => None,
        };
        device.map(|device| {
            Node::Trace(Box::new(TraceList {
                device,
                entries: Vec::new(),
            }))
        })
    }

    /// Index of the segment whose dict is being filled, for error messages.
    fn pending_segment(&self, heap: &Heap, stack: &[Value], marks: &[usize]) -> usize {
        let segments = |v: Option<&Value>| match v {
            Some(Value::Ref(id)) => match heap.node(*id) {
                Node::Segments(s) => Some(s.segments.len()),
                _ => None,
            },
            _ => None,
        };
        let n = marks.len();
        if n >= 2 && marks[n - 2] >= 1 && marks[n - 1] > marks[n - 2] {
            if let Some(done) = segments(stack.get(marks[n - 2] - 1)) {
                return done + marks[n - 1] - 1 - marks[n - 2];
            }
        }
        self.segments_done
    }

    fn fail(&mut self, e: FormatError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    /// Decodes `items` into the snapshot list `id` and frees them.
    pub(crate) fn append(&mut self, heap: &mut Heap, id: NodeId, items: &[Value], at: u64) {
        self.consumed = at;
        let node = std::mem::take(heap.node_mut(id));
        let node = match node {
            Node::Frames(mut f) => {
                for &v in items {
                    self.frame(heap, &mut f, v);
                    heap.release(v);
                }
                Node::Frames(f)
            }
            Node::Blocks(mut b) => {
                for &v in items {
                    if self.error.is_none() {
                        match self.block(heap, v, b.segment, b.blocks.len()) {
                            Ok(block) => b.blocks.push(block),
                            Err(e) => self.fail(e),
                        }
                    }
                    heap.release(v);
                }
                Node::Blocks(b)
            }
            Node::Segments(mut s) => {
                for &v in items {
                    if self.error.is_none() {
                        let i = s.segments.len();
                        match self.segment(heap, v, i) {
                            Ok((seg, legacy)) => {
                                s.segments.push(seg);
                                s.legacy |= legacy;
                                self.segments_done += 1;
                            }
                            Err(e) => self.fail(e),
                        }
                    }
                    heap.release(v);
                }
                Node::Segments(s)
            }
            Node::DeviceTraces(mut list) => {
                list.extend_from_slice(items);
                Node::DeviceTraces(list)
            }
            Node::Trace(mut t) => {
                for &v in items {
                    if self.error.is_none() {
                        match self.trace_entry(heap, v, t.device, t.entries.len()) {
                            Ok(e) => t.entries.push(e),
                            Err(e) => self.fail(e),
                        }
                    }
                    heap.release(v);
                }
                Node::Trace(t)
            }
            other => other,
        };
        *heap.node_mut(id) = node;
    }

    /// One segment dict; its blocks were decoded while its `blocks` list filled.
    pub(crate) fn segment(
        &mut self,
        heap: &mut Heap,
        v: Value,
        i: usize,
    ) -> Result<(Segment, bool), FormatError> {
        self.spend(1)?;
        let k = self.keys;
        let h: &Heap = heap;
        let v = h.unwrap(v);
        let at = move || format!("segments[{i}]");
        if h.as_dict(v).is_none() {
            return Err(type_err(h, "snapshot", "segments", v, "a list of dicts"));
        }
        let address = uint(h, v, at, k.address, "address")?;
        let total_size = uint(h, v, at, k.total_size, "total_size")?;
        let device = opt_int(h, v, at, k.device, "device")?.unwrap_or(0) as i64;
        // streams are cudaStream_t pointers cast to int64 (Module.cpp) or uint64 (XPU)
        let stream = opt_int(h, v, at, k.stream, "stream")?.unwrap_or(0) as u64;
        let segment_type = match self.get(h, v, k.segment_type) {
            Some(t) => h
                .as_str(t)
                .ok_or_else(|| type_err(h, &at(), "segment_type", t, "a string"))?
                .to_string(),
            None => "large".to_string(),
        };
        let pool = match self.get(h, v, k.segment_pool_id) {
            Some(t) => {
                let items = h.as_seq(h.unwrap(t)).unwrap_or(&[]);
                match items {
                    [a, b] => (
                        h.as_int(*a).unwrap_or(0) as i64,
                        h.as_int(*b).unwrap_or(0) as i64,
                    ),
                    _ => return Err(type_err(h, &at(), "segment_pool_id", t, "a pair of ints")),
                }
            }
            None => (0, 0),
        };
        let is_expandable = matches!(self.get(h, v, k.is_expandable), Some(Value::Bool(true)));
        let blocks_v = self
            .get(h, v, k.blocks)
            .ok_or_else(|| FormatError::Missing {
                at: at(),
                key: "blocks",
            })?;
        let pending = match h.unwrap(blocks_v) {
            Value::Ref(id) if matches!(h.node(id), Node::Blocks(_)) => {
                let pinned = heap.is_pinned(id);
                let Node::Blocks(list) = heap.node_mut(id) else {
                    unreachable!("matched above")
                };
                if pinned {
                    // a blocks list shared by several segments counts for each
                    let blocks = list.blocks.clone();
                    self.spend(blocks.len())?;
                    blocks
                } else {
                    std::mem::take(&mut list.blocks)
                }
            }
            _ => {
                let items = seq(h, blocks_v, &at(), "blocks")?.to_vec();
                let mut out = Vec::with_capacity(items.len());
                for (j, b) in items.into_iter().enumerate() {
                    out.push(self.block(heap, b, i, j)?);
                }
                out
            }
        };
        let mut legacy = false;
        let mut next_address = address;
        let blocks = pending
            .into_iter()
            .map(|b| {
                legacy |= b.legacy;
                let address = b.address.unwrap_or(next_address);
                next_address = address.wrapping_add(b.size);
                Block {
                    address,
                    size: b.size,
                    requested_size: b.requested_size,
                    state: b.state,
                    site: b.site,
                }
            })
            .collect();
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

    /// One block dict of segment `i`.
    fn block(
        &mut self,
        heap: &Heap,
        b: Value,
        i: usize,
        j: usize,
    ) -> Result<PendingBlock, FormatError> {
        self.spend(1)?;
        let (k, p) = (self.keys, heap);
        let bat = move || format!("segments[{i}].blocks[{j}]");
        let b = p.unwrap(b);
        if p.as_dict(b).is_none() {
            return Err(type_err(
                p,
                &format!("segments[{i}]"),
                "blocks",
                b,
                "a list of dicts",
            ));
        }
        let size = uint(p, b, bat, k.size, "size")?;
        let state = match self.get(p, b, k.state) {
            Some(s) => match p.as_str(s) {
                Some("active_allocated") => BlockState::Allocated,
                Some("active_pending_free") | Some("active_awaiting_free") => {
                    BlockState::PendingFree
                }
                Some("inactive") => BlockState::Inactive,
                Some(_) => BlockState::Unknown,
                None => return Err(type_err(p, &bat(), "state", s, "a string")),
            },
            None => {
                return Err(FormatError::Missing {
                    at: bat(),
                    key: "state",
                })
            }
        };
        // torch 2.0 blocks: no address (it follows from the segment's and the sizes before),
        // frames and real size in history[0] (_memory_viz.py `_block_extra_legacy`).
        let history = self.get(p, b, k.history);
        let history0 = history.and_then(|h| p.as_seq(p.unwrap(h))?.first().copied());
        let frames_v = self.get(p, b, k.frames);
        let legacy = history.is_some() && frames_v.is_none();
        let address = match self.get(p, b, k.address) {
            Some(_) => Some(uint(p, b, bat, k.address, "address")?),
            None => None,
        };
        let requested_size = if self.get(p, b, k.requested_size).is_some() {
            uint(p, b, bat, k.requested_size, "requested_size")?
        } else if let Some(h) = history0.filter(|h| self.get(p, *h, k.real_size).is_some()) {
            uint(
                p,
                h,
                || format!("{}.history[0]", bat()),
                k.real_size,
                "real_size",
            )?
        } else {
            size
        };
        let frames = frames_v.or_else(|| history0.and_then(|h| self.get(p, h, k.frames)));
        let site = match (state, frames) {
            (BlockState::Allocated, Some(f)) => self.site(p, f),
            _ => None,
        };
        Ok(PendingBlock {
            address,
            size,
            requested_size,
            state,
            site,
            legacy,
        })
    }

    /// One `device_traces[d][i]` dict.
    pub(crate) fn trace_entry(
        &mut self,
        p: &Heap,
        v: Value,
        d: usize,
        i: usize,
    ) -> Result<TraceEntry, FormatError> {
        self.spend(1)?;
        let k = self.keys;
        let v = p.unwrap(v);
        let at = move || format!("device_traces[{d}][{i}]");
        if p.as_dict(v).is_none() {
            return Err(type_err(
                p,
                &format!("device_traces[{d}]"),
                "entries",
                v,
                "a list of dicts",
            ));
        }
        let action_v = self
            .get(p, v, k.action)
            .ok_or_else(|| FormatError::Missing {
                at: at(),
                key: "action",
            })?;
        let Value::Str(action_id) = p.unwrap(action_v) else {
            return Err(type_err(p, &at(), "action", action_v, "a string"));
        };
        let action_name = self.action_name(p, action_id);
        let action = Action::parse(&self.action_names[action_name as usize]);
        let (addr_key, addr_name) = if action == Action::Oom {
            (k.device_free, "device_free")
        } else {
            (k.addr, "addr")
        };
        let addr = match self.get(p, v, addr_key) {
            Some(_) => uint(p, v, at, addr_key, addr_name)?,
            None if action == Action::Oom => {
                return Err(FormatError::Missing {
                    at: at(),
                    key: "device_free",
                })
            }
            None => 0,
        };
        let size = match self.get(p, v, k.size) {
            Some(_) => uint(p, v, at, k.size, "size")?,
            None => 0,
        };
        let stream = opt_int(p, v, at, k.stream, "stream")?.unwrap_or(0) as u64;
        let time_us = opt_int(p, v, at, k.time_us, "time_us")?.map(|t| t as i64);
        // Only the OOM's stack is reported; naming every entry's site would cost most of the time.
        let site = match action {
            Action::Oom => self.get(p, v, k.frames).and_then(|f| self.site(p, f)),
            _ => None,
        };
        Ok(TraceEntry {
            action,
            action_name,
            addr,
            size,
            stream,
            time_us,
            site,
        })
    }

    fn action_name(&mut self, p: &Heap, id: StrId) -> u32 {
        if let Some(n) = self.action_index.get(&id) {
            return *n;
        }
        let n = self.action_names.len() as u32;
        self.action_names.push(p.strings.get(id).to_string());
        self.action_index.insert(id, n);
        n
    }
}

pub(crate) fn seq<'p>(
    p: &'p Heap,
    v: Value,
    at: &str,
    key: &'static str,
) -> Result<&'p [Value], FormatError> {
    p.as_seq(p.unwrap(v))
        .ok_or_else(|| type_err(p, at, key, v, "a list"))
}

fn opt_int(
    p: &Heap,
    d: Value,
    at: impl Fn() -> String,
    key: Option<StrId>,
    name: &'static str,
) -> Result<Option<i128>, FormatError> {
    match key.and_then(|key| p.get_id(d, key)) {
        None | Some(Value::None) => Ok(None),
        Some(v) => p
            .as_int(v)
            .map(Some)
            .ok_or_else(|| type_err(p, &at(), name, v, "an int")),
    }
}

/// A required non-negative int that fits u64.
fn uint(
    p: &Heap,
    d: Value,
    at: impl Fn() -> String,
    key: Option<StrId>,
    name: &'static str,
) -> Result<u64, FormatError> {
    let v = key
        .and_then(|key| p.get_id(d, key))
        .ok_or_else(|| FormatError::Missing {
            at: at(),
            key: name,
        })?;
    match p.as_int(v) {
        Some(i) if (0..=u64::MAX as i128).contains(&i) => Ok(i as u64),
        _ => Err(type_err(p, &at(), name, v, "a non-negative int")),
    }
}
