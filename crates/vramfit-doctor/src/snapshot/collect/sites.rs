//! Allocation sites: a frame list, innermost frame first, is reduced as it fills to the first
//! frame of each kind the site label prefers; frame dicts, shared by many lists, are classified
//! once (a heap tag set when their items arrive).

use super::Collector;
use crate::snapshot::pickle::{Heap, Node, NodeId, StrId, Value};

/// A frame as the site label reads it: `filename`, `line`, `name` (missing text reads as "").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    filename: Option<StrId>,
    line: i128,
    name: Option<StrId>,
}

/// What a frame list contributes to a site: the first frame of each kind the label prefers
/// (Python outside torch, any Python, a named C++ frame outside the allocator).
#[derive(Clone, Debug, Default)]
pub struct SiteFrames {
    picked: [Option<Frame>; 3],
}

impl SiteFrames {
    fn chosen(&self) -> Option<Frame> {
        self.picked[0].or(self.picked[1]).or(self.picked[2])
    }
}

/// Function-name fragments of the frames that record a stack rather than request memory.
const MACHINERY: &[&str] = &[
    "unwind::unwind",
    "CapturedTraceback::gather",
    "gather_with_cpp",
    "CachingAllocator",
];

/// A heap tag from [`Collector::dict_done`]: valid bit, three kind bits, frame table index.
const TAG_VALID: u32 = 1 << 31;
const TAG_INDEX: u32 = (1 << 28) - 1;

const KNOWN: u8 = 1;
const PY: u8 = 2;
const TORCH: u8 = 4;
const MACHINE: u8 = 8;

impl Collector {
    /// KNOWN | PY | TORCH | MACHINE for a string, worked out once per distinct string.
    fn class(&mut self, p: &Heap, id: Option<StrId>) -> u8 {
        let Some(id) = id else { return KNOWN };
        let i = id.0 as usize;
        if i >= self.class.len() {
            self.class.resize(p.strings.len().max(i + 1), 0);
        }
        if self.class[i] == 0 {
            let s = p.strings.get(id);
            let is_py = s.len() >= 3 && s.as_bytes()[s.len() - 3..].eq_ignore_ascii_case(b".py");
            let in_torch = s.contains("/torch/") || s.contains("\\torch\\");
            let machinery = MACHINERY.iter().any(|m| s.contains(m));
            self.class[i] = KNOWN
                | if is_py { PY } else { 0 }
                | if in_torch { TORCH } else { 0 }
                | if machinery { MACHINE } else { 0 };
        }
        self.class[i]
    }

    /// Notes what a dict contributes as a frame, once its items are in (SETITEM(S) is the only
    /// way a dict changes, so the note stays true). Frame dicts are shared by many frame lists:
    /// [`Collector::frame`] then reads the note instead of the dict.
    pub(crate) fn dict_done(&mut self, heap: &mut Heap, id: NodeId) {
        let (kinds, frame) = self.frame_info(heap, Value::Ref(id));
        let index = match frame {
            None => 0,
            Some(f) => match self.frame_index.get(&f) {
                Some(i) => *i,
                None => {
                    let i = self.frame_table.len() as u32;
                    if i > TAG_INDEX {
                        return; // no note: the slow path reads the dict
                    }
                    self.frame_table.push(f);
                    self.frame_index.insert(f, i);
                    i
                }
            },
        };
        heap.set_tag(id, TAG_VALID | (kinds as u32) << 28 | index);
    }

    /// Adds one frame of a frame list (innermost first) to what the site label can pick.
    #[inline]
    pub(super) fn frame(&mut self, p: &Heap, acc: &mut SiteFrames, v: Value) {
        if acc.picked[0].is_some() {
            return; // the first Python frame outside torch: nothing later can win
        }
        let (kinds, frame) = match v {
            Value::Ref(id) if p.tag(id) != 0 => {
                let tag = p.tag(id);
                let kinds = (tag >> 28 & 7) as u8;
                if kinds == 0 {
                    return;
                }
                (kinds, self.frame_table[(tag & TAG_INDEX) as usize])
            }
            _ => match self.frame_info(p, v) {
                (kinds, Some(f)) => (kinds, f),
                (_, None) => return,
            },
        };
        for (i, slot) in acc.picked.iter_mut().enumerate() {
            if kinds & (1 << i) != 0 && slot.is_none() {
                *slot = Some(frame);
            }
        }
    }

    /// Which of the three kinds a frame is (bit 0: Python outside torch, 1: Python, 2: named
    /// C++ outside the allocator), and the frame when it is any.
    fn frame_info(&mut self, p: &Heap, v: Value) -> (u8, Option<Frame>) {
        let k = self.keys;
        let f = p.unwrap(v);
        let text = |key: Option<StrId>| match self.get(p, f, key).map(|x| p.unwrap(x)) {
            Some(Value::Str(id)) => Some(id),
            _ => None,
        };
        let (filename, name) = (text(k.filename), text(k.name));
        let file_class = self.class(p, filename);
        let name_class = self.class(p, name);
        let is_py = file_class & PY != 0;
        let named = name.is_some_and(|n| !p.strings.get(n).is_empty());
        let kinds = (is_py && file_class & TORCH == 0) as u8
            | (is_py as u8) << 1
            | ((named && name_class & MACHINE == 0) as u8) << 2;
        if kinds == 0 {
            return (0, None);
        }
        let line = self
            .get(p, f, k.line)
            .and_then(|v| p.as_int(v))
            .unwrap_or(0);
        let frame = Frame {
            filename,
            line,
            name,
        };
        (kinds, Some(frame))
    }

    /// The allocation site of a frame list, innermost frame first: the first Python frame outside
    /// torch's own package, else the first Python frame, else the first named C++ frame that is
    /// not the allocator's or the traceback recorder's own.
    pub(super) fn site(&mut self, p: &Heap, frames: Value) -> Option<u32> {
        let Value::Ref(id) = p.unwrap(frames) else {
            return None;
        };
        let chosen = match p.node(id) {
            Node::Frames(f) => f.chosen(),
            _ => {
                let items = p.as_seq(Value::Ref(id))?;
                let mut acc = SiteFrames::default();
                for &v in items {
                    self.frame(p, &mut acc, v);
                }
                acc.chosen()
            }
        }?;
        if let Some(s) = self.site_of_frame.get(&chosen) {
            return Some(*s);
        }
        let text = |s: Option<StrId>| s.map_or("", |s| p.strings.get(s));
        let label = format!(
            "{}:{} ({})",
            text(chosen.filename),
            chosen.line,
            text(chosen.name)
        );
        let id = match self.site_index.get(&label) {
            Some(id) => *id,
            None => {
                let id = self.sites.len() as u32;
                self.site_index.insert(label.clone(), id);
                self.sites.push(label);
                id
            }
        };
        self.site_of_frame.insert(chosen, id);
        Some(id)
    }
}
