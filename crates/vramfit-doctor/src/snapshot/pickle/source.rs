//! The bytes of a pickle, read through a bounded buffer, and the first pass that notes which memo
//! keys are ever fetched.

use super::PickleErrorKind;
use std::collections::HashSet;
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

const CHUNK: usize = 1 << 20;

/// Buffered input: memory holds the buffer (about a megabyte, more only for a longer string that
/// has actually arrived), never the whole file.
pub(crate) struct Source<'p, R> {
    r: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    /// Input offset of `buf[0]`.
    base: u64,
    eof: bool,
    /// The input's length when known (a regular file, a slice).
    pub total: Option<u64>,
    /// Reading past this many bytes is an error (endless inputs).
    max: u64,
    progress: Option<&'p mut dyn FnMut(u64)>,
    /// Added to the offset reported to `progress` (the second pass reports after the first).
    pub progress_base: u64,
}

impl<'p, R: Read> Source<'p, R> {
    pub fn new(r: R, total: Option<u64>, max: u64) -> Self {
        Source {
            r,
            buf: Vec::new(),
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
            total,
            max,
            progress: None,
            progress_base: 0,
        }
    }

    pub fn with_progress(mut self, progress: Option<&'p mut dyn FnMut(u64)>) -> Self {
        self.progress = progress;
        self
    }

    /// Input offset of the next byte.
    #[inline]
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Bytes known to remain, when the length is known.
    pub fn remaining(&self) -> Option<u64> {
        self.total.map(|t| t.saturating_sub(self.offset()))
    }

    #[inline]
    pub fn byte(&mut self) -> Result<Option<u8>, PickleErrorKind> {
        if self.pos == self.end && !self.fill(1)? {
            return Ok(None);
        }
        let b = self.buf[self.pos];
        self.pos += 1;
        Ok(Some(b))
    }

    /// The next `n` bytes; `Truncated` when the input ends first.
    #[inline]
    pub fn take(&mut self, n: usize) -> Result<&[u8], PickleErrorKind> {
        if self.end - self.pos < n && !self.fill(n)? {
            return Err(PickleErrorKind::Truncated);
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Skips `n` bytes without keeping them; `Truncated` when the input ends first.
    pub fn skip(&mut self, mut n: u64) -> Result<(), PickleErrorKind> {
        loop {
            let here = ((self.end - self.pos) as u64).min(n);
            self.pos += here as usize;
            n -= here;
            if n == 0 {
                return Ok(());
            }
            if !self.fill(1)? {
                return Err(PickleErrorKind::Truncated);
            }
        }
    }

    /// Makes at least `n` unread bytes available; false when the input ends first. The buffer
    /// only grows as data actually arrives, so a length field cannot make it allocate.
    #[cold]
    fn fill(&mut self, n: usize) -> Result<bool, PickleErrorKind> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.base += self.pos as u64;
            self.end -= self.pos;
            self.pos = 0;
        }
        while self.end < n && !self.eof {
            if self.end == self.buf.len() {
                let grown = (self.buf.len() * 2).max(CHUNK);
                self.buf.resize(grown, 0);
            }
            let got = loop {
                match self.r.read(&mut self.buf[self.end..]) {
                    Ok(got) => break got,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(PickleErrorKind::Read(e.to_string())),
                }
            };
            self.eof = got == 0;
            self.end += got;
            let read = self.base + self.end as u64;
            if read > self.max {
                return Err(PickleErrorKind::Limit {
                    what: "input size",
                    limit: self.max,
                });
            }
            if let Some(p) = self.progress.as_mut() {
                p(self.progress_base + read);
            }
        }
        Ok(self.end >= n)
    }
}

/// Memo keys, as a bitset for keys below a bound (the input length) and a set above it.
#[derive(Debug, Default)]
pub(crate) struct KeySet {
    bits: Vec<u64>,
    dense_limit: u64,
    sparse: HashSet<u64>,
    /// Set bits before each word of `bits` (filled by [`KeySet::freeze`]).
    rank: Vec<u32>,
    /// Slot of each key below `direct.len()`, u32::MAX when absent: a table lookup in place of
    /// the rank's popcount, built when it is small next to the input.
    direct: Vec<u32>,
    count: usize,
}

impl KeySet {
    pub fn new(dense_limit: u64) -> KeySet {
        KeySet {
            dense_limit: dense_limit.min(u32::MAX as u64),
            ..KeySet::default()
        }
    }

    /// Adds `key`; true when it was not there.
    pub fn insert(&mut self, key: u64) -> bool {
        if key < self.dense_limit {
            let w = (key / 64) as usize;
            if w >= self.bits.len() {
                self.bits.resize((w + 1).max(self.bits.len() * 2), 0);
            }
            let bit = 1u64 << (key % 64);
            let new = self.bits[w] & bit == 0;
            self.bits[w] |= bit;
            self.count += new as usize;
            new
        } else {
            let new = self.sparse.insert(key);
            self.count += new as usize;
            new
        }
    }

    pub fn contains(&self, key: u64) -> bool {
        if key < self.dense_limit {
            let w = (key / 64) as usize;
            self.bits
                .get(w)
                .is_some_and(|b| b & (1u64 << (key % 64)) != 0)
        } else {
            self.sparse.contains(&key)
        }
    }

    pub fn count(&self) -> usize {
        self.count
    }

    /// Prepares [`KeySet::slot`].
    pub fn freeze(&mut self) {
        let keys = self.bits.len() * 64;
        if keys as u64 * 4 <= self.dense_limit / 2 {
            let mut next = 0u32;
            self.direct = (0..keys)
                .map(|k| {
                    if self.bits[k / 64] & (1u64 << (k % 64)) != 0 {
                        next += 1;
                        next - 1
                    } else {
                        u32::MAX
                    }
                })
                .collect();
            return;
        }
        let mut total = 0u32;
        self.rank = self
            .bits
            .iter()
            .map(|w| {
                let before = total;
                total += w.count_ones();
                before
            })
            .collect();
    }

    /// A dense index for a key below the bound that is in the set (after [`KeySet::freeze`]).
    #[inline]
    pub fn slot(&self, key: u64) -> Option<usize> {
        if key >= self.dense_limit {
            return None;
        }
        if !self.direct.is_empty() {
            return match self.direct.get(key as usize) {
                Some(&s) if s != u32::MAX => Some(s as usize),
                _ => None,
            };
        }
        let w = (key / 64) as usize;
        let word = *self.bits.get(w)?;
        let bit = 1u64 << (key % 64);
        if word & bit == 0 {
            return None;
        }
        Some(self.rank[w] as usize + (word & (bit - 1)).count_ones() as usize)
    }

    pub fn dense_len(&self) -> usize {
        self.bits.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn in_sparse(&self, key: u64) -> bool {
        key >= self.dense_limit && self.sparse.contains(&key)
    }
}

/// The first pass: walks the opcodes without building anything and collects the memo keys that
/// BINGET / LONG_BINGET fetch. Stops quietly at STOP or at anything it cannot read; the second
/// pass reports errors.
pub(crate) fn prescan<R: Read>(src: &mut Source<'_, R>, dense_limit: u64) -> KeySet {
    let mut keys = KeySet::new(dense_limit);
    let _ = scan_into(src, &mut SinkKeys::Local(&mut keys));
    keys.freeze();
    keys
}

fn scan_into<R: Read>(
    src: &mut Source<'_, R>,
    keys: &mut SinkKeys<'_>,
) -> Result<(), PickleErrorKind> {
    let le = |b: &[u8]| b.iter().rev().fold(0u64, |a, x| (a << 8) | *x as u64);
    while let Some(op) = src.byte()? {
        let skip: u64 = match op {
            b'.' => return Ok(()),
            b'(' | b'0' | b'1' | b'2' | b'N' | 0x88 | 0x89 | b')' | 0x85 | 0x86 | 0x87 | b't'
            | b']' | b'l' | b'}' | b'd' | 0x8f | 0x91 | 0x90 | b'a' | b'e' | b's' | b'u' | 0x94
            | 0x93 | b'R' | 0x81 | 0x92 | b'b' => 0,
            0x80 | b'K' | b'q' => 1,
            b'M' => 2,
            b'J' | b'r' => 4,
            0x95 | b'G' => 8,
            b'h' => {
                let k = src.take(1)?[0];
                if !keys.insert(k as u64) {
                    return Ok(());
                }
                0
            }
            b'j' => {
                let k = le(src.take(4)?);
                if !keys.insert(k) {
                    return Ok(());
                }
                0
            }
            0x8a | 0x8c | b'U' | b'C' => src.take(1)?[0] as u64,
            0x8b | b'T' => {
                let n = le(src.take(4)?) as u32 as i32;
                if n < 0 {
                    return Ok(());
                }
                n as u64
            }
            b'X' | b'B' => le(src.take(4)?),
            0x8d | 0x8e | 0x96 => le(src.take(8)?),
            b'c' => {
                for _ in 0..2 {
                    while src.byte()?.ok_or(PickleErrorKind::Truncated)? != b'\n' {}
                }
                0
            }
            _ => return Ok(()),
        };
        if skip > 0 {
            if src.remaining().is_some_and(|r| skip > r) {
                return Ok(());
            }
            src.skip(skip)?;
        }
    }
    Ok(())
}

/// The fetched memo keys as a first pass running on another thread finds them: the second pass
/// may ask while it is still going ([`SharedKeys::done`] says when the answer is final).
#[derive(Debug)]
pub(crate) struct SharedKeys {
    bits: Vec<AtomicU64>,
    sparse: Mutex<HashSet<u64>>,
    done: AtomicBool,
    /// Set by the second pass when it stops early: the first pass need not go on.
    pub stop: AtomicBool,
}

/// Keys past this go to the set (a real file has one key per memoized object: ~9 million for
/// 600 MB); 16 MB of bits.
const SHARED_DENSE_KEYS: u64 = 1 << 27;

impl SharedKeys {
    pub fn new(dense_limit: u64) -> SharedKeys {
        let words = dense_limit.min(SHARED_DENSE_KEYS).div_ceil(64) as usize;
        SharedKeys {
            bits: std::iter::repeat_with(|| AtomicU64::new(0))
                .take(words)
                .collect(),
            sparse: Mutex::new(HashSet::new()),
            done: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        }
    }

    fn insert(&self, key: u64) {
        match self.bits.get((key / 64) as usize) {
            Some(w) => {
                w.fetch_or(1u64 << (key % 64), Ordering::Relaxed);
            }
            None => {
                if let Ok(mut s) = self.sparse.lock() {
                    s.insert(key);
                }
            }
        }
    }

    /// Whether some GET fetches `key` (final once [`SharedKeys::done`]; before, a false may
    /// still turn true).
    #[inline]
    pub fn contains(&self, key: u64) -> bool {
        match self.bits.get((key / 64) as usize) {
            Some(w) => w.load(Ordering::Relaxed) & (1u64 << (key % 64)) != 0,
            None => self.sparse.lock().map(|s| s.contains(&key)).unwrap_or(true),
        }
    }

    #[inline]
    pub fn done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// Runs the first pass over `src` to its end, then marks the answer final. A pass that
    /// fails or is stopped never marks it final: its key set may be short, so the second pass
    /// keeps every entry it cannot decide (more memory, never a dropped object).
    pub fn scan<R: Read>(&self, src: &mut Source<'_, R>) {
        let mut keys = SinkKeys::Shared(self);
        if scan_into(src, &mut keys).is_ok() && !self.stop.load(Ordering::Relaxed) {
            self.done.store(true, Ordering::Release);
        }
    }
}

enum SinkKeys<'a> {
    Local(&'a mut KeySet),
    Shared(&'a SharedKeys),
}

impl SinkKeys<'_> {
    #[inline]
    fn insert(&mut self, key: u64) -> bool {
        match self {
            SinkKeys::Local(k) => {
                k.insert(key);
                true
            }
            SinkKeys::Shared(k) => {
                k.insert(key);
                !k.stop.load(Ordering::Relaxed)
            }
        }
    }
}
