//! The pickle virtual machine: one opcode at a time onto a stack, with a memo and an arena.

use super::{Limits, Node, NodeId, Pickle, PickleError, PickleErrorKind, Value};
use std::collections::HashMap;

pub(super) fn run(data: &[u8], limits: Limits) -> Result<Pickle, PickleError> {
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
                        input_len: self.data.len(),
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
