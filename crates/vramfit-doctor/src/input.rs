//! Reading a log without trusting its size: only the last [`MAX_LOG_BYTES`] are kept (the crash
//! is at the end of a log), a stream is read for at most [`MAX_STREAM_BYTES`] (an endless one,
//! `/dev/zero` or `yes`, stops there), a file is read from its tail, a device or socket is
//! refused, bytes that are not UTF-8 are replaced, and a log with no text (empty, or binary data)
//! is an error.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use thiserror::Error;

/// The doctor reads at most the last 8 MiB of a log.
pub const MAX_LOG_BYTES: usize = 8 << 20;

/// A stream (stdin, a pipe) is read for at most 1 GiB, keeping its last [`MAX_LOG_BYTES`]; a
/// longer one is diagnosed from the tail read so far. Memory stays at twice the tail whatever
/// the stream does; the time to read 1 GiB from a pipe is about a second.
pub const MAX_STREAM_BYTES: u64 = 1 << 30;

#[derive(Debug, Error)]
pub enum InputError {
    #[error("cannot read the log from {source_name}: {error}")]
    Io {
        source_name: String,
        error: std::io::Error,
    },
    #[error("the log from {0} is empty: pass a log file, or pipe the log into `vramfit doctor -`")]
    Empty(String),
    #[error("{name} is not a log: {control_pct}% of its last {bytes} bytes are NUL or control bytes (binary data); pass the engine's text log")]
    Binary {
        name: String,
        control_pct: u64,
        bytes: usize,
    },
    #[error("{0} is a device or socket, not a log file: pass the log file, or pipe the log into `vramfit doctor -`")]
    NotAFile(String),
}

/// A log as read: its text (the tail when it was cut) and whether it was cut.
#[derive(Debug)]
pub struct LogText {
    pub text: String,
    /// bytes dropped from the start
    pub dropped: u64,
    /// reading stopped at [`MAX_STREAM_BYTES`] before the stream ended
    pub stopped: bool,
}

/// Read all of `r` (at most [`MAX_STREAM_BYTES`]), keeping only the last [`MAX_LOG_BYTES`];
/// memory stays bounded whatever arrives. `name` names the source in errors.
pub fn read_log(mut r: impl Read, name: &str) -> Result<LogText, InputError> {
    read_log_capped(&mut r, name, MAX_LOG_BYTES)
}

/// [`read_log`] with a chosen cap (tests use a small one).
pub fn read_log_capped(r: &mut impl Read, name: &str, cap: usize) -> Result<LogText, InputError> {
    read_log_limited(r, name, cap, MAX_STREAM_BYTES)
}

/// A log file by path: a regular file is read from its last `MAX_LOG_BYTES` (it is not read
/// whole), a pipe (`<(...)`, a FIFO) as a stream, and a device or socket is refused.
pub fn read_log_file(path: &Path) -> Result<LogText, InputError> {
    let name = path.display().to_string();
    let io = |error| InputError::Io {
        source_name: name.clone(),
        error,
    };
    let mut f = std::fs::File::open(path).map_err(io)?;
    let meta = f.metadata().map_err(io)?;
    if meta.is_file() {
        let start = meta.len().saturating_sub(MAX_LOG_BYTES as u64);
        f.seek(SeekFrom::Start(start)).map_err(io)?;
        let mut log = read_log_limited(&mut f, &name, MAX_LOG_BYTES, MAX_STREAM_BYTES)?;
        if start > 0 && log.dropped == 0 {
            // the tail starts mid-file: drop the partial first line
            if let Some(nl) = log.text.find('\n') {
                log.text.drain(..=nl);
                log.dropped = nl as u64 + 1;
            }
        }
        log.dropped += start;
        return Ok(log);
    }
    if is_pipe(&meta) {
        return read_log_limited(&mut f, &name, MAX_LOG_BYTES, MAX_STREAM_BYTES);
    }
    Err(InputError::NotAFile(name))
}

#[cfg(unix)]
fn is_pipe(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    meta.file_type().is_fifo()
}

#[cfg(not(unix))]
fn is_pipe(_: &std::fs::Metadata) -> bool {
    false
}

/// [`read_log_capped`] that stops after `limit` bytes of input.
pub fn read_log_limited(
    r: &mut impl Read,
    name: &str,
    cap: usize,
    limit: u64,
) -> Result<LogText, InputError> {
    let io = |error| InputError::Io {
        source_name: name.to_string(),
        error,
    };
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut dropped = 0u64;
    let mut total = 0u64;
    let mut stopped = false;
    loop {
        if total >= limit {
            stopped = true;
            break;
        }
        let want = chunk
            .len()
            .min(usize::try_from(limit - total).unwrap_or(usize::MAX));
        let n = match r.read(&mut chunk[..want]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        };
        total += n as u64;
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() > 2 * cap {
            let cut = buf.len() - cap;
            buf.drain(..cut);
            dropped += cut as u64;
        }
    }
    if buf.len() > cap {
        let cut = buf.len() - cap;
        buf.drain(..cut);
        dropped += cut as u64;
    }
    // start at a line boundary when the head was cut
    if dropped > 0 {
        if let Some(nl) = buf.iter().position(|b| *b == b'\n') {
            buf.drain(..=nl);
            dropped += nl as u64 + 1;
        }
    }
    let control = buf.iter().filter(|b| is_binary_byte(**b)).count();
    // a text log has none of these bytes; a few may come from a crashed writer
    if !buf.is_empty() && control * 10 > buf.len() {
        return Err(InputError::Binary {
            name: name.to_string(),
            control_pct: (control * 100 / buf.len()) as u64,
            bytes: buf.len(),
        });
    }
    let text = String::from_utf8_lossy(&buf).into_owned();
    if text.trim().is_empty() {
        return Err(InputError::Empty(name.to_string()));
    }
    Ok(LogText {
        text,
        dropped,
        stopped,
    })
}

/// NUL and the C0 controls a text log never holds (tab, newline, carriage return, backspace,
/// form feed and ESC of colour codes are text).
fn is_binary_byte(b: u8) -> bool {
    b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x08 | 0x0c | 0x1b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_tail() {
        let mut data = Vec::new();
        for i in 0..10_000 {
            data.extend_from_slice(format!("line {i}\n").as_bytes());
        }
        let log = read_log_capped(&mut &data[..], "test", 1000).unwrap();
        assert!(log.text.len() <= 1000);
        assert!(log.text.ends_with("line 9999\n"));
        assert!(log.text.starts_with("line "));
        assert_eq!(log.dropped as usize + log.text.len(), data.len());
    }

    #[test]
    fn an_endless_stream_stops_at_the_limit() {
        let mut zeros = std::io::repeat(b'a').take(u64::MAX);
        let log = read_log_limited(&mut zeros, "yes", 1000, 10_000).unwrap();
        assert!(log.stopped);
        assert_eq!(log.text.len(), 1000);
        let mut zeros = std::io::repeat(0).take(u64::MAX);
        let e = read_log_limited(&mut zeros, "/dev/zero", 1000, 10_000).unwrap_err();
        assert!(e.to_string().contains("not a log"), "{e}");
    }

    #[test]
    fn a_device_is_refused_and_a_file_is_read_from_its_tail() {
        let e = read_log_file(Path::new("/dev/zero")).unwrap_err();
        assert!(matches!(e, InputError::NotAFile(_)), "{e}");
        let p = std::env::temp_dir().join(format!("vramfit-input-{}.log", std::process::id()));
        let mut data = Vec::new();
        while data.len() < MAX_LOG_BYTES + 100_000 {
            data.extend_from_slice(format!("line {}\n", data.len()).as_bytes());
        }
        std::fs::write(&p, &data).unwrap();
        let log = read_log_file(&p).unwrap();
        let _ = std::fs::remove_file(&p);
        assert!(log.text.len() <= MAX_LOG_BYTES);
        assert!(log.text.starts_with("line "));
        assert_eq!(log.dropped as usize + log.text.len(), data.len());
    }

    #[test]
    fn empty_is_an_error() {
        let e = read_log_capped(&mut &b"  \n\n"[..], "stdin", 1000).unwrap_err();
        assert!(e.to_string().contains("empty"));
    }
}
