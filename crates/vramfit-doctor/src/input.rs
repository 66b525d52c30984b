//! Reading a log without trusting its size: only the last [`MAX_LOG_BYTES`] are kept (the crash
//! is at the end of a log), bytes that are not UTF-8 are replaced, and a log with no text is an
//! error.

use std::io::Read;

use thiserror::Error;

/// The doctor reads at most the last 8 MiB of a log.
pub const MAX_LOG_BYTES: usize = 8 << 20;

#[derive(Debug, Error)]
pub enum InputError {
    #[error("cannot read the log from {source_name}: {error}")]
    Io {
        source_name: String,
        error: std::io::Error,
    },
    #[error("the log from {0} is empty: pass a log file, or pipe the log into `vramfit doctor -`")]
    Empty(String),
}

/// A log as read: its text (the tail when it was cut) and whether it was cut.
#[derive(Debug)]
pub struct LogText {
    pub text: String,
    /// bytes dropped from the start
    pub dropped: u64,
}

/// Read all of `r`, keeping only the last [`MAX_LOG_BYTES`]; memory stays bounded whatever
/// arrives. `name` names the source in errors.
pub fn read_log(mut r: impl Read, name: &str) -> Result<LogText, InputError> {
    read_log_capped(&mut r, name, MAX_LOG_BYTES)
}

/// [`read_log`] with a chosen cap (tests use a small one).
pub fn read_log_capped(r: &mut impl Read, name: &str, cap: usize) -> Result<LogText, InputError> {
    let io = |error| InputError::Io {
        source_name: name.to_string(),
        error,
    };
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut dropped = 0u64;
    loop {
        let n = match r.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        };
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
    let text = String::from_utf8_lossy(&buf).into_owned();
    if text.trim().is_empty() {
        return Err(InputError::Empty(name.to_string()));
    }
    Ok(LogText { text, dropped })
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
    fn empty_is_an_error() {
        let e = read_log_capped(&mut &b"  \n\n"[..], "stdin", 1000).unwrap_err();
        assert!(e.to_string().contains("empty"));
    }
}
