//! A sequential, endian-aware reader over a [`ByteSource`] that knows how many bytes are left,
//! so that every length read from the file is checked against the file before anything is
//! allocated for it.
//!
//! Bytes arrive through [`ChunkedReader`] (64 KiB first, doubling up to 4 MiB), so a remote
//! file costs a few range requests for its header. A `BufReader` on top lets the hot path
//! (walking 150k length-prefixed vocabulary strings) peek at buffered bytes without a copy.

use crate::source::{ByteSource, ChunkedReader};
use std::io::{self, BufRead, BufReader, Read};

use super::GgufError;

/// First fetch: most GGUF headers without a vocabulary fit in 64 KiB.
const FIRST_CHUNK: usize = 64 << 10;
/// Largest fetch: a 150k-token vocabulary takes ~2-4 MiB, so a few fetches cover it.
const MAX_CHUNK: usize = 4 << 20;
/// Growth step for byte strings: allocation follows the bytes actually read, never a length
/// taken on trust from the file.
const GROW_STEP: usize = 1 << 20;

/// Why a read stopped short.
#[derive(Debug)]
pub(crate) enum Short {
    /// the file ends (or is known to end) before the bytes asked for
    Eof {
        offset: u64,
    },
    Io {
        offset: u64,
        err: io::Error,
    },
}

pub(crate) struct Cursor<'a> {
    inner: BufReader<ChunkedReader<'a>>,
    pos: u64,
    len: Option<u64>,
    pub big_endian: bool,
    pub file: String,
}

impl<'a> Cursor<'a> {
    pub fn new(src: &'a dyn ByteSource) -> Cursor<'a> {
        let chunked = ChunkedReader::new(src, 0, FIRST_CHUNK, MAX_CHUNK);
        let capacity = src
            .len()
            .map_or(FIRST_CHUNK, |l| l.clamp(1, FIRST_CHUNK as u64) as usize);
        Cursor {
            // no bigger than the file: a small file costs a small buffer
            inner: BufReader::with_capacity(capacity, chunked),
            pos: 0,
            len: src.len(),
            big_endian: false,
            file: src.name(),
        }
    }

    /// Absolute offset of the next byte.
    pub fn pos(&self) -> u64 {
        self.pos
    }

    /// The file length, when the source knows it.
    pub fn len(&self) -> Option<u64> {
        self.len
    }

    /// Bytes left in the file, when its length is known.
    pub fn remaining(&self) -> Option<u64> {
        self.len.map(|l| l.saturating_sub(self.pos))
    }

    fn check_room(&self, n: u64) -> Result<(), Short> {
        match self.remaining() {
            Some(r) if n > r => Err(Short::Eof { offset: self.pos }),
            _ => Ok(()),
        }
    }

    /// N raw bytes, from the buffer without a copy when they are there.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], Short> {
        self.check_room(N as u64)?;
        let mut out = [0u8; N];
        let buf = self.inner.fill_buf().map_err(|e| short(self.pos, e))?;
        if buf.len() >= N {
            out.copy_from_slice(&buf[..N]);
            self.inner.consume(N);
        } else {
            let r = self.inner.read_exact(&mut out);
            r.map_err(|e| short(self.pos, e))?;
        }
        self.pos += N as u64;
        Ok(out)
    }

    pub fn u8(&mut self) -> Result<u8, Short> {
        Ok(self.array::<1>()?[0])
    }

    pub fn u16(&mut self) -> Result<u16, Short> {
        let b = self.array::<2>()?;
        Ok(if self.big_endian {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        })
    }

    pub fn u32(&mut self) -> Result<u32, Short> {
        let b = self.array::<4>()?;
        Ok(if self.big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    }

    pub fn u64(&mut self) -> Result<u64, Short> {
        let b = self.array::<8>()?;
        Ok(if self.big_endian {
            u64::from_be_bytes(b)
        } else {
            u64::from_le_bytes(b)
        })
    }

    /// `n` bytes into a fresh vector that grows as bytes arrive (a corrupt length costs at most
    /// the bytes the file really has, plus one growth step).
    pub fn bytes(&mut self, n: u64) -> Result<Vec<u8>, Short> {
        self.check_room(n)?;
        let mut out = Vec::new();
        let mut left = n;
        while left > 0 {
            let step = left.min(GROW_STEP as u64) as usize;
            let at = out.len();
            out.resize(at + step, 0);
            let r = self.inner.read_exact(&mut out[at..]);
            r.map_err(|e| short(self.pos, e))?;
            self.pos += step as u64;
            left -= step as u64;
        }
        Ok(out)
    }

    /// Step over `n` bytes.
    pub fn skip(&mut self, n: u64) -> Result<(), Short> {
        self.check_room(n)?;
        let mut left = n;
        while left > 0 {
            let buf = self.inner.fill_buf().map_err(|e| short(self.pos, e))?;
            if buf.is_empty() {
                return Err(Short::Eof { offset: self.pos });
            }
            let k = (buf.len() as u64).min(left) as usize;
            self.inner.consume(k);
            self.pos += k as u64;
            left -= k as u64;
        }
        Ok(())
    }

    /// Step over one length-prefixed string; returns its length. The common case (prefix and
    /// text both already buffered) is one peek and one consume.
    pub fn skip_string(&mut self) -> Result<u64, Short> {
        let buf = self.inner.fill_buf().map_err(|e| short(self.pos, e))?;
        if buf.len() >= 8 {
            let mut b = [0u8; 8];
            b.copy_from_slice(&buf[..8]);
            let n = if self.big_endian {
                u64::from_be_bytes(b)
            } else {
                u64::from_le_bytes(b)
            };
            if n <= (buf.len() - 8) as u64 {
                self.inner.consume(8 + n as usize);
                self.pos += 8 + n;
                return Ok(n);
            }
        }
        let n = self.u64()?;
        self.skip(n)?;
        Ok(n)
    }
}

fn short(offset: u64, err: io::Error) -> Short {
    if err.kind() == io::ErrorKind::UnexpectedEof {
        Short::Eof { offset }
    } else {
        Short::Io { offset, err }
    }
}

/// Attach a description of what was being read to a short read.
pub(crate) trait Ctx<T> {
    fn ctx(self, file: &str, what: impl FnOnce() -> String) -> Result<T, GgufError>;
}

impl<T> Ctx<T> for Result<T, Short> {
    fn ctx(self, file: &str, what: impl FnOnce() -> String) -> Result<T, GgufError> {
        self.map_err(|s| match s {
            Short::Eof { offset } => GgufError::Truncated {
                file: file.to_string(),
                what: what(),
                offset,
            },
            Short::Io { offset, err } => GgufError::Io {
                file: file.to_string(),
                offset,
                source: err,
            },
        })
    }
}
