//! Byte sources: where a model file's bytes come from (a local file, an HTTP server that
//! answers range requests). Readers parse headers through [`ByteSource`] so that a remote
//! multi-GB file is inspected by fetching only its header.

use std::io;

/// Random access to the bytes of one file.
pub trait ByteSource {
    /// Fill `buf` with the bytes at `offset..offset + buf.len()`; an error if the file is shorter.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// The file's length when known.
    fn len(&self) -> Option<u64>;
    /// A name for messages (path or URL).
    fn name(&self) -> String;
}

/// A local file.
pub struct FileSource {
    file: std::fs::File,
    len: u64,
    path: String,
}

impl FileSource {
    /// Open a regular file. A device, pipe or socket (`/dev/zero`, `<(cat x)`) is refused: its
    /// length cannot bound what a reader takes from it.
    pub fn open(path: &std::path::Path) -> io::Result<FileSource> {
        // stat before open: opening a FIFO blocks until a writer comes
        if !std::fs::metadata(path)?.is_file() {
            return Err(not_regular());
        }
        let file = std::fs::File::open(path)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(not_regular());
        }
        let len = meta.len();
        Ok(FileSource {
            file,
            len,
            path: path.display().to_string(),
        })
    }
}

impl ByteSource for FileSource {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileExt;
            self.file.read_exact_at(buf, offset)
        }
        #[cfg(not(unix))]
        {
            use std::io::{Read, Seek, SeekFrom};
            let mut f = &self.file;
            f.seek(SeekFrom::Start(offset))?;
            f.read_exact(buf)
        }
    }
    fn len(&self) -> Option<u64> {
        Some(self.len)
    }
    fn name(&self) -> String {
        self.path.clone()
    }
}

/// Bytes already in memory (tests, fuzzing, small files).
pub struct MemSource {
    pub data: Vec<u8>,
    pub label: String,
}

impl ByteSource for MemSource {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| eof())?;
        let end = start.checked_add(buf.len()).ok_or_else(eof)?;
        let src = self.data.get(start..end).ok_or_else(eof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn len(&self) -> Option<u64> {
        Some(self.data.len() as u64)
    }
    fn name(&self) -> String {
        self.label.clone()
    }
}

/// The error for a path that is not a regular file.
pub fn not_regular() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "not a regular file (a device, pipe or socket has no length to bound the read)",
    )
}

/// Read a small regular file whole, refusing one longer than `cap` bytes or one that is not a
/// regular file, without reading more than `cap + 1` bytes whatever the file does meanwhile.
pub fn read_small_file(path: &std::path::Path, cap: u64) -> io::Result<Vec<u8>> {
    use std::io::Read;
    if !std::fs::metadata(path)?.is_file() {
        return Err(not_regular());
    }
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    let too_big = |n: u64| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{n} bytes or more is too large (the limit is {cap} bytes)"),
        )
    };
    if meta.len() > cap {
        return Err(too_big(meta.len()));
    }
    let mut out = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1).read_to_end(&mut out)?;
    if out.len() as u64 > cap {
        return Err(too_big(out.len() as u64));
    }
    Ok(out)
}

fn eof() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "read past the end of the file",
    )
}

/// A sequential `Read` over a `ByteSource`, fetching in chunks that double in size (so that a
/// remote header of unknown length costs few round trips and little over-read).
pub struct ChunkedReader<'a> {
    src: &'a dyn ByteSource,
    pos: u64,
    buf: Vec<u8>,
    buf_start: u64,
    next_chunk: usize,
    max_chunk: usize,
}

impl<'a> ChunkedReader<'a> {
    pub fn new(src: &'a dyn ByteSource, start: u64, first_chunk: usize, max_chunk: usize) -> Self {
        ChunkedReader {
            src,
            pos: start,
            buf: Vec::new(),
            buf_start: start,
            next_chunk: first_chunk.max(1),
            max_chunk: max_chunk.max(first_chunk.max(1)),
        }
    }

    /// Absolute position of the next byte `read` returns.
    pub fn position(&self) -> u64 {
        self.pos
    }
}

impl io::Read for ChunkedReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        let buf_end = self.buf_start + self.buf.len() as u64;
        if self.pos < self.buf_start || self.pos >= buf_end {
            let mut want = self.next_chunk;
            self.next_chunk = (self.next_chunk * 2).min(self.max_chunk);
            if let Some(len) = self.src.len() {
                if self.pos >= len {
                    return Ok(0);
                }
                want = want.min((len - self.pos) as usize);
            }
            self.buf.resize(want, 0);
            self.src.read_at(self.pos, &mut self.buf)?;
            self.buf_start = self.pos;
        }
        let off = (self.pos - self.buf_start) as usize;
        let n = out.len().min(self.buf.len() - off);
        out[..n].copy_from_slice(&self.buf[off..off + n]);
        self.pos += n as u64;
        Ok(n)
    }
}
