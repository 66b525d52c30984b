//! The values a pickle builds: scalars and interned strings inline, containers in an arena whose
//! slots are reused once a decoded container is freed.

use super::source::SharedKeys;
use crate::snapshot::collect::{BlockList, SegmentList, SiteFrames, TraceList};
use std::collections::HashMap;
use std::sync::Arc;

/// No memo key noted for a slot.
const NO_KEY: u32 = u32::MAX;

/// An index into the [`Heap`]'s arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NodeId(pub(crate) u32);

/// An interned string: the same text always has the same id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StrId(pub(crate) u32);

/// A pickled value: scalars and strings inline, containers a reference into the arena.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    /// Python `int` that fits 64 bits (larger ones are [`Node::BigInt`]).
    Int(i64),
    Float(f64),
    Str(StrId),
    Ref(NodeId),
}

/// The result of REDUCE / NEWOBJ (never executed), updated by BUILD, APPENDS and SETITEMS.
#[derive(Debug)]
pub struct Object {
    pub callable: Value,
    pub args: Value,
    pub state: Option<Value>,
    pub list_items: Vec<Value>,
    pub dict_items: Vec<(Value, Value)>,
}

/// A heap object of the pickle.
#[derive(Debug, Default)]
pub enum Node {
    /// A slot whose object was decoded and freed.
    #[default]
    Free,
    /// An int too large for i64: little-endian two's complement bytes, as LONG1/LONG4 store it.
    BigInt(Box<[u8]>),
    Bytes(Box<[u8]>),
    List(Vec<Value>),
    Tuple(Box<[Value]>),
    Dict(Vec<(Value, Value)>),
    Set(Vec<Value>),
    /// What GLOBAL / STACK_GLOBAL push: a class or function named by module and name.
    Global {
        module: Box<str>,
        name: Box<str>,
    },
    Object(Box<Object>),
    /// A snapshot's `frames` list, reduced as it was filled to the frames a site can come from.
    Frames(Box<SiteFrames>),
    /// A snapshot's `blocks` list, its blocks decoded as they arrived.
    Blocks(Box<BlockList>),
    /// A snapshot's `segments` list (or the root list), segments decoded as they arrived.
    Segments(Box<SegmentList>),
    /// A snapshot's `device_traces` list: references to one trace list per device.
    DeviceTraces(Vec<Value>),
    /// One device's trace, its entries decoded as they arrived.
    Trace(Box<TraceList>),
}

impl Node {
    /// A list the snapshot reader decodes as it fills.
    pub fn is_snapshot_list(&self) -> bool {
        matches!(
            self,
            Node::Frames(_)
                | Node::Blocks(_)
                | Node::Segments(_)
                | Node::DeviceTraces(_)
                | Node::Trace(_)
        )
    }
}

/// Interned strings.
#[derive(Debug, Default)]
pub struct Strings {
    list: Vec<Box<str>>,
    index: HashMap<Box<str>, u32>,
}

impl Strings {
    /// The id of `bytes` as text (lossy UTF-8: lone surrogates become U+FFFD).
    pub fn intern_bytes(&mut self, bytes: &[u8]) -> StrId {
        match std::str::from_utf8(bytes) {
            Ok(s) => self.intern(s),
            Err(_) => self.intern(&String::from_utf8_lossy(bytes)),
        }
    }

    pub fn intern(&mut self, s: &str) -> StrId {
        if let Some(id) = self.index.get(s) {
            return StrId(*id);
        }
        let id = self.list.len() as u32;
        self.list.push(s.into());
        self.index.insert(s.into(), id);
        StrId(id)
    }

    pub fn find(&self, s: &str) -> Option<StrId> {
        self.index.get(s).map(|id| StrId(*id))
    }

    pub fn get(&self, id: StrId) -> &str {
        &self.list[id.0 as usize]
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// The arena and the string table.
#[derive(Debug, Default)]
pub struct Heap {
    nodes: Vec<Node>,
    /// Slots that may be referenced more than once (memo entries fetched later, DUP): never freed.
    pinned: Vec<bool>,
    /// A reader's note on each slot (0: none), cleared when the slot is freed or reused.
    tags: Vec<u32>,
    free: Vec<u32>,
    /// The work list of [`Heap::release`], kept to avoid allocating per call.
    scratch: Vec<Value>,
    /// While a first pass still runs beside the reader: the memo key a slot was stored under
    /// ([`NO_KEY`]: none), the keys that pass has seen fetched, and the slots whose freeing waits
    /// for its answer.
    memo_key: Vec<u32>,
    shared: Option<Arc<SharedKeys>>,
    deferred: Vec<u32>,
    created: usize,
    pub strings: Strings,
}

impl Heap {
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.0 as usize]
    }

    pub(crate) fn node_mut(&mut self, id: NodeId) -> &mut Node {
        &mut self.nodes[id.0 as usize]
    }

    /// Objects created so far (freed slots that were reused count again).
    pub fn created(&self) -> usize {
        self.created
    }

    pub(crate) fn alloc(&mut self, node: Node) -> NodeId {
        self.created += 1;
        if let Some(i) = self.free.pop() {
            self.nodes[i as usize] = node;
            self.tags[i as usize] = 0;
            self.memo_key[i as usize] = NO_KEY;
            return NodeId(i);
        }
        self.nodes.push(node);
        self.pinned.push(false);
        self.tags.push(0);
        self.memo_key.push(NO_KEY);
        NodeId((self.nodes.len() - 1) as u32)
    }

    pub(crate) fn pin(&mut self, v: Value) {
        if let Value::Ref(id) = v {
            self.pinned[id.0 as usize] = true;
        }
    }

    pub(crate) fn is_pinned(&self, id: NodeId) -> bool {
        self.pinned[id.0 as usize]
    }

    pub(crate) fn share_keys(&mut self, keys: Arc<SharedKeys>) {
        self.shared = Some(keys);
    }

    /// Notes that `v` is stored under memo `key` while whether it is fetched is not yet known.
    pub(crate) fn note_memo(&mut self, v: Value, key: u64) {
        if let Value::Ref(id) = v {
            let i = id.0 as usize;
            if self.memo_key[i] == NO_KEY && key < NO_KEY as u64 {
                self.memo_key[i] = key as u32;
            } else {
                self.pinned[i] = true; // several keys, or a huge one: keep it
            }
        }
    }

    /// Frees what waited for the first pass, once it has finished.
    pub(crate) fn flush_deferred(&mut self) {
        if self.shared.as_ref().is_some_and(|s| s.done()) && !self.deferred.is_empty() {
            let ids = std::mem::take(&mut self.deferred);
            for i in ids {
                self.release_slow(Value::Ref(NodeId(i)));
            }
        }
    }

    #[inline]
    pub(crate) fn tag(&self, id: NodeId) -> u32 {
        self.tags[id.0 as usize]
    }

    pub(crate) fn set_tag(&mut self, id: NodeId, tag: u32) {
        self.tags[id.0 as usize] = tag;
    }

    /// Frees `v` and what only it held: every object reachable from it that is not pinned.
    #[inline]
    pub(crate) fn release(&mut self, v: Value) {
        match v {
            Value::Ref(id) if !self.pinned[id.0 as usize] => self.release_slow(v),
            _ => {}
        }
    }

    fn release_slow(&mut self, v: Value) {
        let mut work = std::mem::take(&mut self.scratch);
        work.push(v);
        if let Some(s) = &self.shared {
            if s.done() && !self.deferred.is_empty() {
                work.extend(self.deferred.drain(..).map(|i| Value::Ref(NodeId(i))));
            }
        }
        while let Some(v) = work.pop() {
            let Value::Ref(id) = v else { continue };
            let i = id.0 as usize;
            if self.pinned[i] {
                continue;
            }
            let key = self.memo_key[i];
            if key != NO_KEY {
                if let Some(s) = &self.shared {
                    // read before `contains`, as in Memo::put: only a pass already finished may
                    // let an unseen key go
                    let done = s.done();
                    if s.contains(key as u64) {
                        self.pinned[i] = true;
                        continue;
                    }
                    if !done {
                        self.deferred.push(i as u32);
                        continue;
                    }
                }
            }
            match std::mem::take(&mut self.nodes[i]) {
                Node::Free => continue,
                Node::List(items) | Node::Set(items) | Node::DeviceTraces(items) => {
                    work.extend(items)
                }
                Node::Tuple(items) => work.extend(items.iter().copied()),
                Node::Dict(pairs) => work.extend(pairs.into_iter().flat_map(|(k, v)| [k, v])),
                Node::Object(o) => {
                    work.extend([o.callable, o.args]);
                    work.extend(o.state);
                    work.extend(o.list_items);
                    work.extend(o.dict_items.into_iter().flat_map(|(k, v)| [k, v]));
                }
                _ => {}
            }
            self.tags[i] = 0;
            self.memo_key[i] = NO_KEY;
            self.free.push(i as u32);
        }
        self.scratch = work;
    }

    fn node_of(&self, v: Value) -> Option<&Node> {
        match self.unwrap(v) {
            Value::Ref(id) => Some(self.node(id)),
            _ => None,
        }
    }

    /// Sees through torch helpers that only wrap a container: the TorchScript pickler's
    /// `torch.jit._pickle.restore_type_tag(obj, type)` and `build_{int,double,bool,tensor}list(list)`
    /// (torch/csrc/jit/serialization/pickler.cpp), and `collections.OrderedDict` (its items arrive
    /// through SETITEMS). Any other value is returned unchanged.
    pub fn unwrap(&self, v: Value) -> Value {
        let mut v = v;
        // A wrapper's argument may itself be a wrapper; a few levels is all torch writes.
        for _ in 0..4 {
            let Value::Ref(id) = v else { return v };
            let Node::Object(o) = self.node(id) else {
                return v;
            };
            let Some((module, name)) = self.global_name(o.callable) else {
                return v;
            };
            let first_arg = || match o.args {
                Value::Ref(a) => match self.node(a) {
                    Node::Tuple(items) => items.first().copied(),
                    _ => None,
                },
                _ => None,
            };
            v = match (module, name) {
                ("torch.jit._pickle", "restore_type_tag")
                | ("torch.jit._pickle", "build_intlist")
                | ("torch.jit._pickle", "build_doublelist")
                | ("torch.jit._pickle", "build_boollist")
                | ("torch.jit._pickle", "build_tensorlist") => match first_arg() {
                    Some(inner) => inner,
                    None => return v,
                },
                _ => return v,
            };
        }
        v
    }

    /// `(module, name)` when `v` is a GLOBAL.
    pub fn global_name(&self, v: Value) -> Option<(&str, &str)> {
        match v {
            Value::Ref(id) => match self.node(id) {
                Node::Global { module, name } => Some((module, name)),
                _ => None,
            },
            _ => None,
        }
    }

    pub fn as_str(&self, v: Value) -> Option<&str> {
        match self.unwrap(v) {
            Value::Str(id) => Some(self.strings.get(id)),
            _ => None,
        }
    }

    /// The int value, when it fits i128.
    pub fn as_int(&self, v: Value) -> Option<i128> {
        match v {
            Value::Int(i) => Some(i as i128),
            Value::Bool(b) => Some(b as i128),
            Value::Ref(id) => match self.node(id) {
                Node::BigInt(bytes) if bytes.len() <= 16 => Some(le_signed(bytes)),
                _ => None,
            },
            _ => None,
        }
    }

    /// Items of a list, tuple, set, or an OrderedDict-like object's appended items.
    pub fn as_seq(&self, v: Value) -> Option<&[Value]> {
        match self.node_of(v)? {
            Node::List(items) | Node::Set(items) | Node::DeviceTraces(items) => Some(items),
            Node::Tuple(items) => Some(items),
            Node::Object(o) if o.dict_items.is_empty() => Some(&o.list_items),
            _ => None,
        }
    }

    /// Items of a dict, or of an object that received SETITEMS (OrderedDict).
    pub fn as_dict(&self, v: Value) -> Option<&[(Value, Value)]> {
        match self.node_of(v)? {
            Node::Dict(items) => Some(items),
            Node::Object(o) if o.list_items.is_empty() => Some(&o.dict_items),
            _ => None,
        }
    }

    /// `dict[key]` for a string key; the last assignment wins, as in Python.
    pub fn get(&self, dict: Value, key: &str) -> Option<Value> {
        self.get_id(dict, self.strings.find(key)?)
    }

    /// `dict[key]` for an interned key.
    pub fn get_id(&self, dict: Value, key: StrId) -> Option<Value> {
        let items = self.as_dict(dict)?;
        let key = Value::Str(key);
        items.iter().rev().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }
}

/// Little-endian two's complement, at most 16 bytes.
pub(crate) fn le_signed(bytes: &[u8]) -> i128 {
    let mut v: i128 = 0;
    for (i, b) in bytes.iter().enumerate() {
        v |= (*b as i128) << (8 * i);
    }
    // sign-extend from the top byte written
    if let Some(&last) = bytes.last() {
        if last & 0x80 != 0 && bytes.len() < 16 {
            v |= -1i128 << (8 * bytes.len());
        }
    }
    v
}
