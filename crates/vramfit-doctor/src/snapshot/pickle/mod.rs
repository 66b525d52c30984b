//! A small, safe pickle reader for the subset of the format that PyTorch memory snapshots use.
//!
//! `torch.cuda.memory._dump_snapshot()` writes plain Python containers with `pickle.dump` (protocol
//! 4 on Python 3.8-3.13, 5 on 3.14); `torch::cuda::_memory_snapshot_pickled()` writes protocol 2 with
//! the TorchScript pickler. Frame dicts and frame lists are shared between blocks and trace
//! entries, so the files are full of memo back-references. This reader keeps every container in an
//! arena and hands out [`Value::Ref`] indices, so a shared object is stored once however often it is
//! referenced, and nothing is ever deep-copied.
//!
//! Nothing is executed: `GLOBAL`/`STACK_GLOBAL` only record a class name, and `REDUCE`/`NEWOBJ`/
//! `BUILD` build a generic [`Node::Object`]. A few torch helpers that merely wrap a container are
//! seen through (see [`Pickle::unwrap`]).
//!
//! Hostile input cannot make it panic, loop or allocate without bound: every length is checked
//! against the bytes that remain, and [`Limits`] caps the mark nesting depth, the stack, the memo
//! and the number of objects.

mod machine;
#[cfg(test)]
mod tests;

use thiserror::Error;

/// An index into [`Pickle`]'s arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NodeId(u32);

/// A pickled value: scalars inline, everything else a reference into the arena.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    /// Python `int` that fits 128 bits (larger ones are [`Node::BigInt`]).
    Int(i128),
    Float(f64),
    Ref(NodeId),
}

/// A heap object of the pickle.
#[derive(Debug)]
pub enum Node {
    /// An int too large for i128: little-endian two's complement bytes, as LONG1/LONG4 store it.
    BigInt(Box<[u8]>),
    Str(Box<str>),
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
    /// The result of REDUCE / NEWOBJ (never executed), updated by BUILD, APPENDS and SETITEMS.
    Object {
        callable: Value,
        args: Value,
        state: Option<Value>,
        list_items: Vec<Value>,
        dict_items: Vec<(Value, Value)>,
    },
}

/// Caps that keep hostile input bounded. [`Limits::for_input`] scales them with the input size.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Open MARKs at once (nesting of tuples/lists/dicts being built).
    pub max_depth: usize,
    /// Items on the stack at once.
    pub max_stack: usize,
    /// Memo entries.
    pub max_memo: usize,
    /// Arena objects in total.
    pub max_objects: usize,
}

impl Limits {
    /// Each opcode takes at least one byte and creates at most one object, so objects, stack
    /// and memo can never usefully exceed the input length; nesting is capped far above the 6
    /// levels real snapshots use.
    pub fn for_input(len: usize) -> Limits {
        let n = len.saturating_add(16);
        Limits {
            max_depth: 1_000,
            max_stack: n,
            max_memo: n,
            max_objects: n,
        }
    }
}

/// Why a pickle could not be read. Displays as one line with the byte offset.
#[derive(Debug, Error, PartialEq)]
#[error("pickle byte {offset}: {kind}")]
pub struct PickleError {
    pub offset: usize,
    pub kind: PickleErrorKind,
}

#[derive(Debug, Error, PartialEq)]
pub enum PickleErrorKind {
    #[error("the data ends in the middle of an opcode (truncated file?)")]
    Truncated,
    #[error("the data ends without a STOP opcode (truncated file?)")]
    NoStop,
    #[error("the file is empty")]
    Empty,
    #[error("unsupported pickle protocol {0} (2 to 5 are read)")]
    Protocol(u8),
    #[error("starts with byte 0x{0:02x}, not the PROTO opcode 0x80 that protocol 2-5 pickles start with")]
    NotPickle(u8),
    #[error("unsupported opcode 0x{0:02x} (not part of the protocol 2-5 subset snapshots use)")]
    Opcode(u8),
    #[error("opcode 0x{0:02x} needs more items on the stack than there are")]
    StackUnderflow(u8),
    #[error("opcode 0x{0:02x} needs a MARK that is not there")]
    NoMark(u8),
    #[error("opcode 0x{0:02x} applied to a value of the wrong type")]
    WrongType(u8),
    #[error("memo key {0} is read before it is written")]
    MissingMemo(u64),
    #[error("{what} limit of {limit} exceeded (hostile or corrupt input)")]
    Limit { what: &'static str, limit: usize },
    #[error("length {0} is negative or longer than the data that remains")]
    BadLength(u64),
    #[error("GLOBAL name is not text")]
    BadGlobal,
}

/// A decoded pickle: the arena and the root value.
#[derive(Debug)]
pub struct Pickle {
    nodes: Vec<Node>,
    root: Value,
    /// The protocol named by PROTO (0 when absent).
    pub protocol: u8,
    /// Size of the input in bytes: what readers of the tree compare their work against, since
    /// memo references can make a small file name the same object any number of times.
    pub input_len: usize,
}

impl Pickle {
    pub fn root(&self) -> Value {
        self.root
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.0 as usize]
    }

    /// Number of arena objects.
    pub fn objects(&self) -> usize {
        self.nodes.len()
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
            let Node::Object { callable, args, .. } = self.node(id) else {
                return v;
            };
            let Some((module, name)) = self.global_name(*callable) else {
                return v;
            };
            let first_arg = || match self.node_of(*args) {
                Some(Node::Tuple(items)) => items.first().copied(),
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
        match self.node_of(v)? {
            Node::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The int value, when it fits i128.
    pub fn as_int(&self, v: Value) -> Option<i128> {
        match v {
            Value::Int(i) => Some(i),
            Value::Bool(b) => Some(b as i128),
            _ => None,
        }
    }

    /// Items of a list, tuple, set, or an OrderedDict-like object's appended items.
    pub fn as_seq(&self, v: Value) -> Option<&[Value]> {
        match self.node_of(v)? {
            Node::List(items) | Node::Set(items) => Some(items),
            Node::Tuple(items) => Some(items),
            Node::Object {
                list_items,
                dict_items,
                ..
            } if dict_items.is_empty() => Some(list_items),
            _ => None,
        }
    }

    /// Items of a dict, or of an object that received SETITEMS (OrderedDict).
    pub fn as_dict(&self, v: Value) -> Option<&[(Value, Value)]> {
        match self.node_of(v)? {
            Node::Dict(items) => Some(items),
            Node::Object {
                dict_items,
                list_items,
                ..
            } if list_items.is_empty() => Some(dict_items),
            _ => None,
        }
    }

    /// `dict[key]` for a string key; the last assignment wins, as in Python.
    pub fn get(&self, dict: Value, key: &str) -> Option<Value> {
        let items = self.as_dict(dict)?;
        items
            .iter()
            .rev()
            .find(|(k, _)| self.as_str(*k) == Some(key))
            .map(|(_, v)| *v)
    }
}

/// Reads a pickle with limits scaled to its size.
pub fn read(data: &[u8]) -> Result<Pickle, PickleError> {
    read_with_limits(data, Limits::for_input(data.len()))
}

/// Reads a pickle with explicit limits.
pub fn read_with_limits(data: &[u8], limits: Limits) -> Result<Pickle, PickleError> {
    machine::run(data, limits)
}
