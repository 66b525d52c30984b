//! The pickle memo, keeping only what will be fetched again when a first pass says so.

use super::heap::{Heap, Value};
use super::source::{KeySet, SharedKeys};
use super::PickleErrorKind;
use std::collections::HashMap;
use std::sync::Arc;

/// Which memo entries a read keeps.
pub(crate) enum Keep {
    /// All of them (nothing says which are fetched again).
    All,
    /// Those a finished first pass saw fetched.
    Fetched(KeySet),
    /// Those a first pass running beside this one sees fetched.
    Shared(Arc<SharedKeys>),
}

#[allow(clippy::large_enum_variant)] // one per read
pub(crate) enum Memo {
    /// Every entry kept: memo keys 0, 1, 2, ... (what MEMOIZE and sequential BINPUTs write) in
    /// `dense`, out-of-order keys in `sparse`; the two never share a key.
    /// With `shared`, an entry that pass has not seen fetched does not pin its object: the heap
    /// decides when the object is released, and once the pass is done such entries are not
    /// stored at all (None holds the key's place).
    All {
        dense: Vec<Value>,
        sparse: HashMap<u64, Value>,
        shared: Option<Arc<SharedKeys>>,
    },
    /// Only entries some GET fetches: `vals[keys.slot(key)]`, or `sparse` for keys past the
    /// bitset; `put` remembers every key written, for MEMOIZE's numbering and the limit.
    Fetched {
        keys: KeySet,
        vals: Vec<Option<Value>>,
        sparse: HashMap<u64, Value>,
        put: KeySet,
    },
}

impl Memo {
    pub(crate) fn new(keep: Keep, heap: &mut Heap, dense_limit: u64) -> Memo {
        match keep {
            Keep::Fetched(keys) => Memo::Fetched {
                vals: vec![None; keys.dense_len()],
                keys,
                sparse: HashMap::new(),
                put: KeySet::new(dense_limit),
            },
            Keep::All => Memo::All {
                dense: Vec::new(),
                sparse: HashMap::new(),
                shared: None,
            },
            Keep::Shared(keys) => {
                heap.share_keys(keys.clone());
                Memo::All {
                    dense: Vec::new(),
                    sparse: HashMap::new(),
                    shared: Some(keys),
                }
            }
        }
    }

    /// Stores the top of the stack `v` under `key`.
    pub(crate) fn put(
        &mut self,
        heap: &mut Heap,
        key: u64,
        v: Value,
        max: usize,
    ) -> Result<(), PickleErrorKind> {
        let limit = || PickleErrorKind::Limit {
            what: "memo",
            limit: max as u64,
        };
        match self {
            Memo::All {
                dense,
                sparse,
                shared,
            } => {
                // `done` is read before `contains`: a pass that finishes between the two reads
                // must not turn "not seen yet" into "never fetched" (the Acquire load makes every
                // key the pass inserted visible to the `contains` that follows it).
                let v = match shared {
                    None => {
                        heap.pin(v);
                        v
                    }
                    Some(keys) => {
                        let done = keys.done();
                        if keys.contains(key) {
                            heap.pin(v);
                            v
                        } else if done {
                            Value::None
                        } else {
                            heap.note_memo(v, key);
                            v
                        }
                    }
                };
                let n = dense.len() as u64;
                if key < n {
                    dense[key as usize] = v;
                } else {
                    let in_sparse = sparse.contains_key(&key);
                    if !in_sparse && dense.len() + sparse.len() >= max {
                        return Err(limit());
                    }
                    if key == n && !in_sparse {
                        dense.push(v);
                    } else {
                        sparse.insert(key, v);
                    }
                }
            }
            Memo::Fetched {
                keys,
                vals,
                sparse,
                put,
            } => {
                if put.count() >= max && !put.contains(key) {
                    return Err(limit());
                }
                put.insert(key);
                if let Some(slot) = keys.slot(key) {
                    vals[slot] = Some(v);
                    heap.pin(v);
                } else if keys.in_sparse(key) {
                    sparse.insert(key, v);
                    heap.pin(v);
                }
            }
        }
        Ok(())
    }

    /// Distinct keys written: where MEMOIZE stores next.
    pub(crate) fn size(&self) -> u64 {
        match self {
            Memo::All { dense, sparse, .. } => (dense.len() + sparse.len()) as u64,
            Memo::Fetched { put, .. } => put.count() as u64,
        }
    }

    #[inline]
    pub(crate) fn get(&self, key: u64) -> Option<Value> {
        match self {
            Memo::All { dense, sparse, .. } => usize::try_from(key)
                .ok()
                .and_then(|k| dense.get(k))
                .or_else(|| sparse.get(&key))
                .copied(),
            Memo::Fetched {
                keys, vals, sparse, ..
            } => match keys.slot(key) {
                Some(slot) => vals[slot],
                None => sparse.get(&key).copied(),
            },
        }
    }
}
