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

use std::collections::HashMap;
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
    Machine {
        data,
        pos: 0,
        op_at: 0,
        limits,
        nodes: Vec::new(),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: Vec::new(),
        sparse_memo: HashMap::new(),
        protocol: 0,
    }
    .run()
}

struct Machine<'a> {
    data: &'a [u8],
    pos: usize,
    op_at: usize,
    limits: Limits,
    nodes: Vec<Node>,
    stack: Vec<Value>,
    /// Stack lengths at each open MARK.
    marks: Vec<usize>,
    /// Memo keys 0, 1, 2, ... (what MEMOIZE and sequential BINPUTs write) live in `memo`;
    /// out-of-order keys in `sparse_memo`. The two never share a key.
    memo: Vec<Value>,
    sparse_memo: HashMap<u64, Value>,
    protocol: u8,
}

type Step<T> = Result<T, PickleErrorKind>;

impl<'a> Machine<'a> {
    fn run(mut self) -> Result<Pickle, PickleError> {
        loop {
            self.op_at = self.pos;
            match self.step() {
                Ok(true) => {
                    let root = self.stack.pop().ok_or(PickleError {
                        offset: self.op_at,
                        kind: PickleErrorKind::StackUnderflow(b'.'),
                    })?;
                    return Ok(Pickle {
                        nodes: self.nodes,
                        root,
                        protocol: self.protocol,
                    });
                }
                Ok(false) => {}
                Err(kind) => {
                    return Err(PickleError {
                        offset: self.op_at,
                        kind,
                    })
                }
            }
        }
    }

    fn take(&mut self, n: usize) -> Step<&'a [u8]> {
        let end = self.pos.checked_add(n).ok_or(PickleErrorKind::Truncated)?;
        let bytes = self
            .data
            .get(self.pos..end)
            .ok_or(PickleErrorKind::Truncated)?;
        self.pos = end;
        Ok(bytes)
    }

    fn u8(&mut self) -> Step<u8> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Step<u16> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Step<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Step<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// A length-prefixed payload; the length is checked against what remains before reading.
    fn sized(&mut self, len: u64) -> Step<&'a [u8]> {
        let remaining = (self.data.len() - self.pos) as u64;
        if len > remaining {
            return Err(PickleErrorKind::BadLength(len));
        }
        self.take(len as usize)
    }

    /// A newline-terminated text argument (GLOBAL).
    fn line(&mut self) -> Step<&'a str> {
        let rest = &self.data[self.pos..];
        let nl = rest
            .iter()
            .position(|&b| b == b'\n')
            .ok_or(PickleErrorKind::Truncated)?;
        self.pos += nl + 1;
        std::str::from_utf8(&rest[..nl]).map_err(|_| PickleErrorKind::BadGlobal)
    }

    fn alloc(&mut self, node: Node) -> Step<Value> {
        if self.nodes.len() >= self.limits.max_objects || self.nodes.len() >= u32::MAX as usize {
            return Err(PickleErrorKind::Limit {
                what: "object",
                limit: self.limits.max_objects,
            });
        }
        self.nodes.push(node);
        Ok(Value::Ref(NodeId((self.nodes.len() - 1) as u32)))
    }

    fn push(&mut self, v: Value) -> Step<()> {
        if self.stack.len() >= self.limits.max_stack {
            return Err(PickleErrorKind::Limit {
                what: "stack",
                limit: self.limits.max_stack,
            });
        }
        self.stack.push(v);
        Ok(())
    }

    fn push_node(&mut self, node: Node) -> Step<()> {
        let v = self.alloc(node)?;
        self.push(v)
    }

    fn pop(&mut self, op: u8) -> Step<Value> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(PickleErrorKind::StackUnderflow(op));
        }
        Ok(self.stack.pop().expect("length checked above"))
    }

    fn top(&self, op: u8) -> Step<Value> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(PickleErrorKind::StackUnderflow(op));
        }
        Ok(self.stack[self.stack.len() - 1])
    }

    /// Removes and returns everything above the innermost MARK.
    fn pop_mark(&mut self, op: u8) -> Step<Vec<Value>> {
        let at = self.marks.pop().ok_or(PickleErrorKind::NoMark(op))?;
        Ok(self.stack.split_off(at))
    }

    fn memo_put(&mut self, key: u64) -> Step<()> {
        let v = self.top(b'p')?;
        let dense = self.memo.len() as u64;
        if key < dense {
            self.memo[key as usize] = v;
            return Ok(());
        }
        let in_sparse = self.sparse_memo.contains_key(&key);
        if !in_sparse && self.memo.len() + self.sparse_memo.len() >= self.limits.max_memo {
            return Err(PickleErrorKind::Limit {
                what: "memo",
                limit: self.limits.max_memo,
            });
        }
        if key == dense && !in_sparse {
            self.memo.push(v);
        } else {
            self.sparse_memo.insert(key, v);
        }
        Ok(())
    }

    fn memo_get(&mut self, key: u64) -> Step<()> {
        let v = match usize::try_from(key).ok().and_then(|k| self.memo.get(k)) {
            Some(v) => *v,
            None => *self
                .sparse_memo
                .get(&key)
                .ok_or(PickleErrorKind::MissingMemo(key))?,
        };
        self.push(v)
    }

    fn text(&mut self, bytes: &[u8]) -> Step<()> {
        // Python decodes with 'utf-8', 'surrogatepass'; lone surrogates become U+FFFD here.
        let s = String::from_utf8_lossy(bytes).into_owned().into_boxed_str();
        self.push_node(Node::Str(s))
    }

    fn long(&mut self, bytes: &[u8]) -> Step<()> {
        let v = if bytes.len() <= 16 {
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
            Value::Int(v)
        } else {
            self.alloc(Node::BigInt(bytes.into()))?
        };
        self.push(v)
    }

    fn tuple(&mut self, items: Vec<Value>) -> Step<()> {
        self.push_node(Node::Tuple(items.into_boxed_slice()))
    }

    fn node_mut(&mut self, v: Value, op: u8) -> Step<&mut Node> {
        match v {
            Value::Ref(id) => Ok(&mut self.nodes[id.0 as usize]),
            _ => Err(PickleErrorKind::WrongType(op)),
        }
    }

    fn append(&mut self, target: Value, items: Vec<Value>, op: u8) -> Step<()> {
        match self.node_mut(target, op)? {
            Node::List(list) => list.extend(items),
            Node::Object { list_items, .. } => list_items.extend(items),
            _ => return Err(PickleErrorKind::WrongType(op)),
        }
        Ok(())
    }

    fn set_items(&mut self, target: Value, items: Vec<Value>, op: u8) -> Step<()> {
        if items.len() % 2 == 1 {
            return Err(PickleErrorKind::StackUnderflow(op));
        }
        let pairs = items.chunks_exact(2).map(|kv| (kv[0], kv[1]));
        match self.node_mut(target, op)? {
            Node::Dict(dict) => dict.extend(pairs),
            Node::Object { dict_items, .. } => dict_items.extend(pairs),
            _ => return Err(PickleErrorKind::WrongType(op)),
        }
        Ok(())
    }

    fn object(&mut self, callable: Value, args: Value) -> Step<()> {
        self.push_node(Node::Object {
            callable,
            args,
            state: None,
            list_items: Vec::new(),
            dict_items: Vec::new(),
        })
    }

    /// Executes one opcode; `Ok(true)` at STOP.
    // Opcode values and argument layouts: CPython Lib/pickletools.py (3.11), protocols 2-5.
    fn step(&mut self) -> Step<bool> {
        let op = match self.take(1) {
            Ok(b) => b[0],
            Err(_) if self.data.is_empty() => return Err(PickleErrorKind::Empty),
            Err(_) => return Err(PickleErrorKind::NoStop),
        };
        if self.op_at == 0 && op != 0x80 {
            return Err(PickleErrorKind::NotPickle(op));
        }
        match op {
            0x80 => {
                // PROTO
                let p = self.u8()?;
                if !(2..=5).contains(&p) {
                    return Err(PickleErrorKind::Protocol(p));
                }
                self.protocol = p;
            }
            0x95 => {
                // FRAME: a length hint for buffering; the opcodes simply follow.
                let len = self.u64()?;
                if len > (self.data.len() - self.pos) as u64 {
                    return Err(PickleErrorKind::Truncated);
                }
            }
            b'.' => return Ok(true),
            b'(' => {
                if self.marks.len() >= self.limits.max_depth {
                    return Err(PickleErrorKind::Limit {
                        what: "nesting depth",
                        limit: self.limits.max_depth,
                    });
                }
                self.marks.push(self.stack.len());
            }
            b'0' => {
                // POP: drops the top item, or the innermost mark if nothing is above it.
                let floor = self.marks.last().copied();
                if floor == Some(self.stack.len()) {
                    self.marks.pop();
                } else {
                    self.pop(op)?;
                }
            }
            b'1' => {
                self.pop_mark(op)?;
            }
            b'2' => {
                let v = self.top(op)?;
                self.push(v)?;
            }
            b'N' => self.push(Value::None)?,
            0x88 => self.push(Value::Bool(true))?,
            0x89 => self.push(Value::Bool(false))?,
            b'J' => {
                let v = self.u32()? as i32;
                self.push(Value::Int(v as i128))?;
            }
            b'K' => {
                let v = self.u8()?;
                self.push(Value::Int(v as i128))?;
            }
            b'M' => {
                let v = self.u16()?;
                self.push(Value::Int(v as i128))?;
            }
            0x8a => {
                let n = self.u8()? as u64;
                let bytes = self.sized(n)?;
                self.long(bytes)?;
            }
            0x8b => {
                let n = self.u32()? as i32;
                if n < 0 {
                    return Err(PickleErrorKind::BadLength(n as u64));
                }
                let bytes = self.sized(n as u64)?;
                self.long(bytes)?;
            }
            b'G' => {
                let b = self.take(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                self.push(Value::Float(f64::from_be_bytes(a)))?;
            }
            0x8c => {
                let n = self.u8()? as u64;
                let b = self.sized(n)?;
                self.text(b)?;
            }
            b'X' => {
                let n = self.u32()? as u64;
                let b = self.sized(n)?;
                self.text(b)?;
            }
            0x8d => {
                let n = self.u64()?;
                let b = self.sized(n)?;
                self.text(b)?;
            }
            // SHORT_BINSTRING / BINSTRING: Python 2 str, read as text like pickle's encoding='latin1'
            // would not; lossy UTF-8 keeps it readable.
            b'U' => {
                let n = self.u8()? as u64;
                let b = self.sized(n)?;
                self.text(b)?;
            }
            b'T' => {
                let n = self.u32()? as i32;
                if n < 0 {
                    return Err(PickleErrorKind::BadLength(n as u64));
                }
                let b = self.sized(n as u64)?;
                self.text(b)?;
            }
            b'C' => {
                let n = self.u8()? as u64;
                let b = self.sized(n)?;
                self.push_node(Node::Bytes(b.into()))?;
            }
            b'B' => {
                let n = self.u32()? as u64;
                let b = self.sized(n)?;
                self.push_node(Node::Bytes(b.into()))?;
            }
            0x8e | 0x96 => {
                // BINBYTES8, BYTEARRAY8
                let n = self.u64()?;
                let b = self.sized(n)?;
                self.push_node(Node::Bytes(b.into()))?;
            }
            b')' => self.tuple(Vec::new())?,
            0x85 => {
                let a = self.pop(op)?;
                self.tuple(vec![a])?;
            }
            0x86 => {
                let b = self.pop(op)?;
                let a = self.pop(op)?;
                self.tuple(vec![a, b])?;
            }
            0x87 => {
                let c = self.pop(op)?;
                let b = self.pop(op)?;
                let a = self.pop(op)?;
                self.tuple(vec![a, b, c])?;
            }
            b't' => {
                let items = self.pop_mark(op)?;
                self.tuple(items)?;
            }
            b']' => self.push_node(Node::List(Vec::new()))?,
            b'l' => {
                let items = self.pop_mark(op)?;
                self.push_node(Node::List(items))?;
            }
            b'}' => self.push_node(Node::Dict(Vec::new()))?,
            b'd' => {
                let items = self.pop_mark(op)?;
                let d = self.alloc(Node::Dict(Vec::new()))?;
                self.set_items(d, items, op)?;
                self.push(d)?;
            }
            0x8f => self.push_node(Node::Set(Vec::new()))?,
            0x91 => {
                let items = self.pop_mark(op)?;
                self.push_node(Node::Set(items))?;
            }
            0x90 => {
                let items = self.pop_mark(op)?;
                let target = self.top(op)?;
                match self.node_mut(target, op)? {
                    Node::Set(set) => set.extend(items),
                    _ => return Err(PickleErrorKind::WrongType(op)),
                }
            }
            b'a' => {
                let item = self.pop(op)?;
                let target = self.top(op)?;
                self.append(target, vec![item], op)?;
            }
            b'e' => {
                let items = self.pop_mark(op)?;
                let target = self.top(op)?;
                self.append(target, items, op)?;
            }
            b's' => {
                let v = self.pop(op)?;
                let k = self.pop(op)?;
                let target = self.top(op)?;
                self.set_items(target, vec![k, v], op)?;
            }
            b'u' => {
                let items = self.pop_mark(op)?;
                let target = self.top(op)?;
                self.set_items(target, items, op)?;
            }
            0x94 => {
                // MEMOIZE stores under the memo's size (CPython Lib/pickle.py `memoize`)
                let key = (self.memo.len() + self.sparse_memo.len()) as u64;
                self.memo_put(key)?;
            }
            b'q' => {
                let key = self.u8()? as u64;
                self.memo_put(key)?;
            }
            b'r' => {
                let key = self.u32()? as u64;
                self.memo_put(key)?;
            }
            b'h' => {
                let key = self.u8()? as u64;
                self.memo_get(key)?;
            }
            b'j' => {
                let key = self.u32()? as u64;
                self.memo_get(key)?;
            }
            b'c' => {
                let module = self.line()?.into();
                let name = self.line()?.into();
                self.push_node(Node::Global { module, name })?;
            }
            0x93 => {
                let name = self.pop(op)?;
                let module = self.pop(op)?;
                let module = self.str_of(module).ok_or(PickleErrorKind::BadGlobal)?;
                let name = self.str_of(name).ok_or(PickleErrorKind::BadGlobal)?;
                self.push_node(Node::Global { module, name })?;
            }
            b'R' | 0x81 => {
                // REDUCE (callable, args) and NEWOBJ (cls, args): recorded, never called.
                let args = self.pop(op)?;
                let callable = self.pop(op)?;
                self.object(callable, args)?;
            }
            0x92 => {
                // NEWOBJ_EX (cls, args, kwargs): kwargs are dropped.
                let _kwargs = self.pop(op)?;
                let args = self.pop(op)?;
                let cls = self.pop(op)?;
                self.object(cls, args)?;
            }
            b'b' => {
                let state = self.pop(op)?;
                let target = self.top(op)?;
                match self.node_mut(target, op)? {
                    Node::Object { state: s, .. } => *s = Some(state),
                    _ => return Err(PickleErrorKind::WrongType(op)),
                }
            }
            other => return Err(PickleErrorKind::Opcode(other)),
        }
        Ok(false)
    }

    fn str_of(&self, v: Value) -> Option<Box<str>> {
        match v {
            Value::Ref(id) => match &self.nodes[id.0 as usize] {
                Node::Str(s) => Some(s.clone()),
                _ => None,
            },
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Bytes below are what CPython 3.11 `pickle.dumps(obj, protocol)` writes, except where noted.

    #[test]
    fn reads_shared_frames_without_copying() {
        // pickle.dumps({'a': x, 'b': x}, 4) with x = [{'filename': 'a.py', 'line': 1, 'name': 'f'}]
        // -- the case serde-pickle rejects as "recursive structure".
        let data: &[u8] = b"\x80\x04\x95\x3c\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01a\x94]\x94}\x94(\x8c\x08filename\x94\x8c\x04a.py\x94\x8c\x04line\x94K\x01\x8c\x04name\x94\x8c\x01f\x94ua\x8c\x01b\x94h\x02u.";
        let p = read(data).unwrap();
        let a = p.get(p.root(), "a").unwrap();
        let b = p.get(p.root(), "b").unwrap();
        assert_eq!(a, b, "both keys must point at the one shared list");
        let frame = p.as_seq(a).unwrap()[0];
        assert_eq!(p.as_str(p.get(frame, "filename").unwrap()), Some("a.py"));
        assert_eq!(p.as_int(p.get(frame, "line").unwrap()), Some(1));
    }

    #[test]
    fn long1_is_signed_little_endian() {
        // pickle.dumps(140499822313472, 2), pickle.dumps(-1, 2), and -129 as a 2-byte LONG1
        let p = read(b"\x80\x02\x8a\x06\x00\x00\x00\xaa\xc8\x7f.").unwrap();
        assert_eq!(p.as_int(p.root()), Some(140499822313472));
        let p = read(b"\x80\x02J\xff\xff\xff\xff.").unwrap();
        assert_eq!(p.as_int(p.root()), Some(-1));
        let p = read(b"\x80\x02\x8a\x02\x7f\xff.").unwrap();
        assert_eq!(p.as_int(p.root()), Some(-129));
    }

    #[test]
    fn globals_are_recorded_not_called() {
        // pickle.dumps(collections.OrderedDict(a=1), 2)
        let data: &[u8] =
            b"\x80\x02ccollections\nOrderedDict\nq\x00)Rq\x01X\x01\x00\x00\x00aq\x02K\x01s.";
        let p = read(data).unwrap();
        assert_eq!(p.as_int(p.get(p.root(), "a").unwrap()), Some(1));
    }

    #[test]
    fn hostile_lengths_and_memo_keys_are_errors() {
        // BINUNICODE8 claiming 2^63 bytes
        let e = read(b"\x80\x04\x8d\x00\x00\x00\x00\x00\x00\x00\x80.").unwrap_err();
        assert!(matches!(e.kind, PickleErrorKind::BadLength(_)), "{e}");
        // BINGET of a key never written
        let e = read(b"\x80\x04h\x07.").unwrap_err();
        assert_eq!(e.kind, PickleErrorKind::MissingMemo(7));
        // no STOP
        let e = read(b"\x80\x04]").unwrap_err();
        assert_eq!(e.kind, PickleErrorKind::NoStop);
        // protocol 0 (no PROTO), and a protocol 0 text opcode after PROTO
        let e = read(b"I1\n.").unwrap_err();
        assert_eq!(e.kind, PickleErrorKind::NotPickle(b'I'));
        let e = read(b"\x80\x02I1\n.").unwrap_err();
        assert_eq!(e.kind, PickleErrorKind::Opcode(b'I'));
        // a FRAME longer than the file
        let e = read(b"\x80\x04\x95\xff\x00\x00\x00\x00\x00\x00\x00N.").unwrap_err();
        assert_eq!(e.kind, PickleErrorKind::Truncated);
    }

    #[test]
    fn out_of_order_memo_keys_resolve() {
        // hand-written protocol 2: x = 'a' under key 5, y = 'b' under key 0, [x, y, x]
        let p = read(b"\x80\x02(X\x01\x00\x00\x00aq\x05X\x01\x00\x00\x00bq\x00h\x05l.").unwrap();
        let items = p.as_seq(p.root()).unwrap();
        let texts: Vec<_> = items.iter().map(|v| p.as_str(*v).unwrap()).collect();
        assert_eq!(texts, ["a", "b", "a"]);
        // MEMOIZE after a sparse key stores under the memo's size (2 here), as CPython does
        let p =
            read(b"\x80\x04(\x8c\x01a\x94\x8c\x01bq\x07\x8c\x01c\x94h\x02h\x07h\x00l.").unwrap();
        let items = p.as_seq(p.root()).unwrap();
        let texts: Vec<_> = items.iter().map(|v| p.as_str(*v).unwrap()).collect();
        assert_eq!(texts, ["a", "b", "c", "c", "b", "a"]);
    }

    #[test]
    fn nesting_depth_is_capped() {
        let mut data = vec![0x80, 0x04];
        data.extend(std::iter::repeat_n(b'(', 5000));
        let e = read(&data).unwrap_err();
        assert!(
            matches!(
                e.kind,
                PickleErrorKind::Limit {
                    what: "nesting depth",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn self_referencing_list_is_fine() {
        // l = []; l.append(l); pickle.dumps(l, 4)
        let p = read(b"\x80\x04\x95\x06\x00\x00\x00\x00\x00\x00\x00]\x94h\x00a.").unwrap();
        let items = p.as_seq(p.root()).unwrap();
        assert_eq!(items[0], p.root());
    }
}
