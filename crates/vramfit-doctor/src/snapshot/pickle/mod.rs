//! A small, safe pickle reader for the subset of the format that PyTorch memory snapshots use.
//!
//! `torch.cuda.memory._dump_snapshot()` writes plain Python containers with `pickle.dump` (protocol
//! 4 on Python 3.8-3.13, 5 on 3.14); `torch::cuda::_memory_snapshot_pickled()` writes protocol 2 with
//! the TorchScript pickler. Frame dicts and frame lists are shared between blocks and trace
//! entries, so the files are full of memo back-references. This reader keeps containers in an
//! arena and hands out [`Value::Ref`] indices, so a shared object is stored once however often it is
//! referenced, and nothing is ever deep-copied. Strings are interned: each distinct text is stored
//! once, however many times the file spells it out.
//!
//! Read for a snapshot ([`crate::snapshot::analyze_bytes`]), the reader does not keep the whole
//! tree: a first pass notes which memo keys are ever fetched (only those entries are kept), and the
//! second decodes segments, blocks and trace entries as their lists receive them, reduces each
//! `frames` list to the few frames a site label can come from, and frees the dicts it decoded.
//!
//! Nothing is executed: `GLOBAL`/`STACK_GLOBAL` only record a class name, and `REDUCE`/`NEWOBJ`/
//! `BUILD` build a generic [`Node::Object`]. A few torch helpers that merely wrap a container are
//! seen through (see [`Pickle::unwrap`]).
//!
//! Hostile input cannot make it panic, loop or allocate without bound: every length is checked
//! against the bytes that remain, and [`Limits`] caps the mark nesting depth, the stack, the memo
//! and the number of objects.

pub(crate) mod heap;
mod machine;
mod memo;
pub(crate) mod source;
#[cfg(test)]
mod tests;

pub use heap::{Heap, Node, NodeId, Object, StrId, Value};
pub(crate) use machine::run;
pub(crate) use memo::Keep;
pub(crate) use source::{prescan, SharedKeys, Source};

use thiserror::Error;

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
    pub offset: u64,
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
    Limit { what: &'static str, limit: u64 },
    #[error("length {0} is negative or longer than the data that remains")]
    BadLength(u64),
    #[error("GLOBAL name is not text")]
    BadGlobal,
    #[error("cannot read the input: {0}")]
    Read(String),
}

/// A decoded pickle: the arena and the root value.
#[derive(Debug)]
pub struct Pickle {
    pub heap: Heap,
    root: Value,
    /// The protocol named by PROTO (0 when absent).
    pub protocol: u8,
    /// Size of the input in bytes: what readers of the tree compare their work against, since
    /// memo references can make a small file name the same object any number of times.
    pub input_len: usize,
}

impl std::ops::Deref for Pickle {
    type Target = Heap;
    fn deref(&self) -> &Heap {
        &self.heap
    }
}

impl Pickle {
    pub fn root(&self) -> Value {
        self.root
    }

    /// Number of arena objects created while reading.
    pub fn objects(&self) -> usize {
        self.heap.created()
    }
}

/// Reads a pickle with limits scaled to its size.
pub fn read(data: &[u8]) -> Result<Pickle, PickleError> {
    read_with_limits(data, Limits::for_input(data.len()))
}

/// Reads a pickle with explicit limits, keeping the whole tree.
pub fn read_with_limits(data: &[u8], limits: Limits) -> Result<Pickle, PickleError> {
    let mut src = Source::new(data, Some(data.len() as u64), u64::MAX);
    let (heap, root, protocol) = machine::run(&mut src, limits, Keep::All, None)?;
    Ok(Pickle {
        heap,
        root,
        protocol,
        input_len: data.len(),
    })
}
