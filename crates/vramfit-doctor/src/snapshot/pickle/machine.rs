//! The pickle virtual machine: one opcode at a time onto a stack, with a memo and an arena.

use super::heap::{le_signed, Heap, Node, NodeId, Object, Value};
use super::memo::{Keep, Memo};
use super::source::Source;
use super::{Limits, PickleError, PickleErrorKind};
use crate::snapshot::collect::Collector;
use std::io::Read;

/// Runs the machine to STOP. With `fetched` (the memo keys a first pass saw fetched) only those
/// memo entries are kept; with `sink`, snapshot lists are decoded as they fill.
pub(crate) fn run<R: Read>(
    src: &mut Source<'_, R>,
    limits: Limits,
    keep: Keep,
    sink: Option<&mut Collector>,
) -> Result<(Heap, Value, u8), PickleError> {
    let dense_limit = limits.max_memo as u64;
    let mut heap = Heap::default();
    let memo = Memo::new(keep, &mut heap, dense_limit);
    let mut sink = sink;
    if let Some(c) = sink.as_deref_mut() {
        c.intern_keys(&mut heap.strings);
    }
    let mut m = Machine {
        src,
        op_at: 0,
        limits,
        heap,
        stack: Vec::new(),
        marks: Vec::new(),
        memo,
        protocol: 0,
        sink,
    };
    loop {
        m.op_at = m.src.offset();
        match m.step() {
            Ok(true) => {
                let root = m.stack.pop().ok_or(PickleError {
                    offset: m.op_at,
                    kind: PickleErrorKind::StackUnderflow(b'.'),
                })?;
                return Ok((m.heap, root, m.protocol));
            }
            Ok(false) => {}
            Err(kind) => {
                return Err(PickleError {
                    offset: m.op_at,
                    kind,
                })
            }
        }
    }
}

struct Machine<'a, 'p, 's, R> {
    src: &'a mut Source<'p, R>,
    op_at: u64,
    limits: Limits,
    heap: Heap,
    stack: Vec<Value>,
    /// Stack lengths at each open MARK.
    marks: Vec<usize>,
    memo: Memo,
    protocol: u8,
    sink: Option<&'s mut Collector>,
}

type Step<T> = Result<T, PickleErrorKind>;

fn le(b: &[u8]) -> u64 {
    b.iter().rev().fold(0u64, |a, x| (a << 8) | *x as u64)
}

impl<R: Read> Machine<'_, '_, '_, R> {
    fn u8(&mut self) -> Step<u8> {
        Ok(self.src.take(1)?[0])
    }

    fn uint(&mut self, n: usize) -> Step<u64> {
        Ok(le(self.src.take(n)?))
    }

    /// Checks a payload length against what remains (when the length of the input is known).
    fn check_len(&self, len: u64) -> Step<usize> {
        if self.src.remaining().is_some_and(|r| len > r) || len > usize::MAX as u64 {
            return Err(PickleErrorKind::BadLength(len));
        }
        Ok(len as usize)
    }

    /// A length-prefixed payload.
    fn sized(&mut self, len: u64) -> Step<&[u8]> {
        let n = self.check_len(len)?;
        self.src.take(n).map_err(|e| match e {
            PickleErrorKind::Truncated => PickleErrorKind::BadLength(len),
            e => e,
        })
    }

    /// A newline-terminated text argument (GLOBAL).
    fn line(&mut self) -> Step<Box<str>> {
        let mut out = Vec::new();
        loop {
            match self.src.byte()? {
                Some(b'\n') => break,
                Some(b) => out.push(b),
                None => return Err(PickleErrorKind::Truncated),
            }
        }
        String::from_utf8(out)
            .map(String::into_boxed_str)
            .map_err(|_| PickleErrorKind::BadGlobal)
    }

    fn alloc(&mut self, node: Node) -> Step<Value> {
        let n = self.heap.created();
        if n >= self.limits.max_objects || n >= u32::MAX as usize {
            return Err(PickleErrorKind::Limit {
                what: "object",
                limit: self.limits.max_objects as u64,
            });
        }
        Ok(Value::Ref(self.heap.alloc(node)))
    }

    #[inline]
    fn push(&mut self, v: Value) -> Step<()> {
        if self.stack.len() >= self.limits.max_stack {
            return Err(PickleErrorKind::Limit {
                what: "stack",
                limit: self.limits.max_stack as u64,
            });
        }
        self.stack.push(v);
        Ok(())
    }

    fn push_node(&mut self, node: Node) -> Step<()> {
        let v = self.alloc(node)?;
        self.push(v)
    }

    fn floor(&self) -> usize {
        self.marks.last().copied().unwrap_or(0)
    }

    fn pop(&mut self, op: u8) -> Step<Value> {
        if self.stack.len() <= self.floor() {
            return Err(PickleErrorKind::StackUnderflow(op));
        }
        Ok(self.stack.pop().expect("length checked above"))
    }

    fn top(&self, op: u8) -> Step<Value> {
        if self.stack.len() <= self.floor() {
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
        self.memo.put(&mut self.heap, key, v, self.limits.max_memo)
    }

    #[inline]
    fn memo_get(&mut self, key: u64) -> Step<()> {
        let v = self.memo.get(key);
        self.push(v.ok_or(PickleErrorKind::MissingMemo(key))?)
    }

    fn text(&mut self, len: u64) -> Step<()> {
        let n = self.check_len(len)?;
        let bytes = self.src.take(n).map_err(|e| match e {
            PickleErrorKind::Truncated => PickleErrorKind::BadLength(len),
            e => e,
        })?;
        // Python decodes with 'utf-8', 'surrogatepass'; lone surrogates become U+FFFD here.
        let id = self.heap.strings.intern_bytes(bytes);
        self.push(Value::Str(id))
    }

    fn long(&mut self, len: u64) -> Step<()> {
        let bytes = self.sized(len)?;
        let v = if bytes.len() <= 8 {
            Value::Int(le_signed(bytes) as i64)
        } else {
            let b: Box<[u8]> = bytes.into();
            self.alloc(Node::BigInt(b))?
        };
        self.push(v)
    }

    fn bytes(&mut self, len: u64) -> Step<()> {
        let b: Box<[u8]> = self.sized(len)?.into();
        self.push_node(Node::Bytes(b))
    }

    fn tuple(&mut self, items: Vec<Value>) -> Step<()> {
        self.push_node(Node::Tuple(items.into_boxed_slice()))
    }

    fn target(&self, v: Value, op: u8) -> Step<NodeId> {
        match v {
            Value::Ref(id) => Ok(id),
            _ => Err(PickleErrorKind::WrongType(op)),
        }
    }

    /// A new list: a snapshot list where the stack says which (see [`Collector::role`]).
    fn list(&mut self, items: Vec<Value>) -> Step<()> {
        let node = match &self.sink {
            Some(c) => c.role(&self.heap, &self.stack, &self.marks),
            None => None,
        };
        let v = self.alloc(node.unwrap_or(Node::List(Vec::new())))?;
        if !items.is_empty() {
            self.append(v, items, b'l')?;
        }
        self.push(v)
    }

    fn append(&mut self, target: Value, items: Vec<Value>, op: u8) -> Step<()> {
        let id = self.target(target, op)?;
        if self.heap.node(id).is_snapshot_list() {
            return match self.sink.as_deref_mut() {
                Some(c) => {
                    c.append(&mut self.heap, id, &items, self.src.offset());
                    Ok(())
                }
                None => Err(PickleErrorKind::WrongType(op)),
            };
        }
        match self.heap.node_mut(id) {
            Node::List(list) => list.extend(items),
            Node::Object(o) => o.list_items.extend(items),
            _ => return Err(PickleErrorKind::WrongType(op)),
        }
        Ok(())
    }

    fn set_items(&mut self, target: Value, items: Vec<Value>, op: u8) -> Step<()> {
        if items.len() % 2 == 1 {
            return Err(PickleErrorKind::StackUnderflow(op));
        }
        let pairs = items.chunks_exact(2).map(|kv| (kv[0], kv[1]));
        let id = self.target(target, op)?;
        match self.heap.node_mut(id) {
            Node::Dict(dict) => dict.extend(pairs),
            Node::Object(o) => {
                o.dict_items.extend(pairs);
                return Ok(());
            }
            _ => return Err(PickleErrorKind::WrongType(op)),
        }
        if let Some(c) = self.sink.as_deref_mut() {
            c.dict_done(&mut self.heap, id);
        }
        Ok(())
    }

    fn object(&mut self, callable: Value, args: Value) -> Step<()> {
        self.push_node(Node::Object(Box::new(Object {
            callable,
            args,
            state: None,
            list_items: Vec::new(),
            dict_items: Vec::new(),
        })))
    }

    /// Executes one opcode; `Ok(true)` at STOP.
    // Opcode values and argument layouts: CPython Lib/pickletools.py (3.11), protocols 2-5.
    fn step(&mut self) -> Step<bool> {
        let op = match self.src.byte()? {
            Some(b) => b,
            None if self.op_at == 0 => return Err(PickleErrorKind::Empty),
            None => return Err(PickleErrorKind::NoStop),
        };
        if self.op_at == 0 && op != 0x80 {
            return Err(PickleErrorKind::NotPickle(op));
        }
        match op {
            b'h' => {
                let key = self.u8()? as u64;
                self.memo_get(key)?;
            }
            b'j' => {
                let key = self.uint(4)?;
                self.memo_get(key)?;
            }
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
                let len = self.uint(8)?;
                if self.src.remaining().is_some_and(|r| len > r) {
                    return Err(PickleErrorKind::Truncated);
                }
            }
            b'.' => return Ok(true),
            b'(' => {
                if self.marks.len() >= self.limits.max_depth {
                    return Err(PickleErrorKind::Limit {
                        what: "nesting depth",
                        limit: self.limits.max_depth as u64,
                    });
                }
                self.marks.push(self.stack.len());
            }
            b'0' => {
                // POP: drops the top item, or the innermost mark if nothing is above it.
                if self.marks.last().copied() == Some(self.stack.len()) {
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
                // a second reference to the same object: never free it
                self.heap.pin(v);
                self.push(v)?;
            }
            b'N' => self.push(Value::None)?,
            0x88 => self.push(Value::Bool(true))?,
            0x89 => self.push(Value::Bool(false))?,
            b'J' => {
                let v = self.uint(4)? as u32 as i32;
                self.push(Value::Int(v as i64))?;
            }
            b'K' => {
                let v = self.u8()?;
                self.push(Value::Int(v as i64))?;
            }
            b'M' => {
                let v = self.uint(2)?;
                self.push(Value::Int(v as i64))?;
            }
            0x8a => {
                let n = self.u8()? as u64;
                self.long(n)?;
            }
            0x8b => {
                let n = self.uint(4)? as u32 as i32;
                if n < 0 {
                    return Err(PickleErrorKind::BadLength(n as u64));
                }
                self.long(n as u64)?;
            }
            b'G' => {
                let b = self.src.take(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                self.push(Value::Float(f64::from_be_bytes(a)))?;
            }
            // SHORT_BINUNICODE; SHORT_BINSTRING / BINSTRING are Python 2 str, read as text like
            // pickle's encoding='latin1' would not; lossy UTF-8 keeps it readable.
            0x8c | b'U' => {
                let n = self.u8()? as u64;
                self.text(n)?;
            }
            b'X' => {
                let n = self.uint(4)?;
                self.text(n)?;
            }
            0x8d => {
                let n = self.uint(8)?;
                self.text(n)?;
            }
            b'T' => {
                let n = self.uint(4)? as u32 as i32;
                if n < 0 {
                    return Err(PickleErrorKind::BadLength(n as u64));
                }
                self.text(n as u64)?;
            }
            b'C' => {
                let n = self.u8()? as u64;
                self.bytes(n)?;
            }
            b'B' => {
                let n = self.uint(4)?;
                self.bytes(n)?;
            }
            0x8e | 0x96 => {
                // BINBYTES8, BYTEARRAY8
                let n = self.uint(8)?;
                self.bytes(n)?;
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
            b']' => self.list(Vec::new())?,
            b'l' => {
                let items = self.pop_mark(op)?;
                self.list(items)?;
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
                let id = self.target(target, op)?;
                match self.heap.node_mut(id) {
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
                // APPENDS: the items go from the stack into the list without an interim Vec
                let at = self.marks.pop().ok_or(PickleErrorKind::NoMark(op))?;
                if at <= self.floor() {
                    return Err(PickleErrorKind::StackUnderflow(op));
                }
                let id = self.target(self.stack[at - 1], op)?;
                let items = &self.stack[at..];
                if self.heap.node(id).is_snapshot_list() {
                    match self.sink.as_deref_mut() {
                        Some(c) => c.append(&mut self.heap, id, items, self.src.offset()),
                        None => return Err(PickleErrorKind::WrongType(op)),
                    }
                } else {
                    match self.heap.node_mut(id) {
                        Node::List(list) => list.extend_from_slice(items),
                        Node::Object(o) => o.list_items.extend_from_slice(items),
                        _ => return Err(PickleErrorKind::WrongType(op)),
                    }
                }
                self.stack.truncate(at);
            }
            b's' => {
                let v = self.pop(op)?;
                let k = self.pop(op)?;
                let target = self.top(op)?;
                self.set_items(target, vec![k, v], op)?;
            }
            b'u' => {
                // SETITEMS: the pairs go from the stack into the dict without an interim Vec
                let at = self.marks.pop().ok_or(PickleErrorKind::NoMark(op))?;
                if at <= self.floor() || (self.stack.len() - at) % 2 == 1 {
                    return Err(PickleErrorKind::StackUnderflow(op));
                }
                let id = self.target(self.stack[at - 1], op)?;
                let pairs = self.stack[at..].chunks_exact(2).map(|kv| (kv[0], kv[1]));
                match self.heap.node_mut(id) {
                    Node::Dict(dict) => dict.extend(pairs),
                    Node::Object(o) => o.dict_items.extend(pairs),
                    _ => return Err(PickleErrorKind::WrongType(op)),
                }
                self.stack.truncate(at);
                if let Some(c) = self.sink.as_deref_mut() {
                    if matches!(self.heap.node(id), Node::Dict(_)) {
                        c.dict_done(&mut self.heap, id);
                    }
                }
            }
            0x94 => {
                // MEMOIZE stores under the memo's size (CPython Lib/pickle.py `memoize`)
                let key = self.memo.size();
                self.memo_put(key)?;
            }
            b'q' => {
                let key = self.u8()? as u64;
                self.memo_put(key)?;
            }
            b'r' => {
                let key = self.uint(4)?;
                self.memo_put(key)?;
            }
            b'c' => {
                let module = self.line()?;
                let name = self.line()?;
                self.push_node(Node::Global { module, name })?;
            }
            0x93 => {
                let name = self.pop(op)?;
                let module = self.pop(op)?;
                let module = self.heap.as_str(module).ok_or(PickleErrorKind::BadGlobal)?;
                let module: Box<str> = module.into();
                let name: Box<str> = self
                    .heap
                    .as_str(name)
                    .ok_or(PickleErrorKind::BadGlobal)?
                    .into();
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
                let id = self.target(target, op)?;
                match self.heap.node_mut(id) {
                    Node::Object(o) => o.state = Some(state),
                    _ => return Err(PickleErrorKind::WrongType(op)),
                }
            }
            other => return Err(PickleErrorKind::Opcode(other)),
        }
        Ok(false)
    }
}
