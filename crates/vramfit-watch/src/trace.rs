//! Recorded traces: JSON lines, one [`GpuSample`] per GPU per sample, in time order.
//!
//! Reading streams the file line by line (a trace of hours at 10 Hz never sits in memory whole),
//! and groups consecutive lines with the same `t` into one [`Tick`].

use crate::error::WatchError;
use crate::sample::{GpuSample, Tick};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;

/// A line longer than this is not a sample (a real one is a few hundred bytes per process).
const MAX_LINE_BYTES: u64 = 1 << 20;

/// Reads a trace tick by tick.
pub struct TraceReader<R: BufRead> {
    reader: R,
    path: String,
    line_no: usize,
    pending: Option<GpuSample>,
    last_t: Option<f64>,
}

impl TraceReader<BufReader<File>> {
    pub fn open(path: &Path) -> Result<Self, WatchError> {
        let file = File::open(path).map_err(|e| WatchError::TraceIo {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        Ok(TraceReader::new(
            BufReader::new(file),
            &path.display().to_string(),
        ))
    }
}

impl<R: BufRead> TraceReader<R> {
    pub fn new(reader: R, path: &str) -> Self {
        TraceReader {
            reader,
            path: path.to_string(),
            line_no: 0,
            pending: None,
            last_t: None,
        }
    }

    fn read_sample(&mut self) -> Result<Option<GpuSample>, WatchError> {
        loop {
            let mut buf = Vec::new();
            let n = (&mut self.reader)
                .take(MAX_LINE_BYTES + 1)
                .read_until(b'\n', &mut buf)
                .map_err(|e| WatchError::TraceIo {
                    path: self.path.clone(),
                    reason: e.to_string(),
                })?;
            if n == 0 {
                return Ok(None);
            }
            self.line_no += 1;
            let line_err = |reason: String| WatchError::TraceLine {
                path: self.path.clone(),
                line: self.line_no,
                reason,
            };
            if buf.len() as u64 > MAX_LINE_BYTES {
                return Err(line_err(format!(
                    "line is longer than {MAX_LINE_BYTES} bytes"
                )));
            }
            let text = std::str::from_utf8(&buf).map_err(|_| line_err("not UTF-8".into()))?;
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            let sample: GpuSample =
                serde_json::from_str(text).map_err(|e| line_err(e.to_string()))?;
            if !sample.t.is_finite() {
                return Err(line_err(format!("t = {} is not a finite number", sample.t)));
            }
            if let Some(prev) = self.last_t {
                if sample.t < prev {
                    return Err(WatchError::TraceTimeOrder {
                        path: self.path.clone(),
                        line: self.line_no,
                        t: sample.t,
                        prev,
                    });
                }
            }
            self.last_t = Some(sample.t);
            return Ok(Some(sample));
        }
    }

    /// The next group of samples sharing one `t`, or `None` at the end of the trace.
    pub fn next_tick(&mut self) -> Result<Option<Tick>, WatchError> {
        let first = match self.pending.take() {
            Some(s) => s,
            None => match self.read_sample()? {
                Some(s) => s,
                None => return Ok(None),
            },
        };
        let t = first.t;
        let mut gpus = vec![first];
        while let Some(s) = self.read_sample()? {
            if s.t == t && !gpus.iter().any(|g| g.gpu == s.gpu) {
                gpus.push(s);
            } else {
                self.pending = Some(s);
                break;
            }
        }
        gpus.sort_by_key(|g| g.gpu);
        Ok(Some(Tick { t, gpus }))
    }
}

/// Writes a trace as samples arrive.
pub struct TraceWriter {
    out: BufWriter<File>,
    path: String,
}

impl TraceWriter {
    pub fn create(path: &Path) -> Result<Self, WatchError> {
        let file = File::create(path).map_err(|e| WatchError::Write {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        Ok(TraceWriter {
            out: BufWriter::new(file),
            path: path.display().to_string(),
        })
    }

    /// Appends one line per GPU and flushes, so a crash of the watched server (or of the
    /// machine) loses at most the sample in flight.
    pub fn write_tick(&mut self, tick: &Tick) -> Result<(), WatchError> {
        let err = |e: std::io::Error| WatchError::Write {
            path: self.path.clone(),
            reason: e.to_string(),
        };
        for g in &tick.gpus {
            let line = serde_json::to_string(g).expect("a GpuSample always serializes");
            self.out.write_all(line.as_bytes()).map_err(err)?;
            self.out.write_all(b"\n").map_err(err)?;
        }
        self.out.flush().map_err(err)
    }
}

/// Serializes samples as trace text (used by the trace generator and tests).
pub fn to_jsonl(samples: &[GpuSample]) -> String {
    let mut s = String::new();
    for g in samples {
        s.push_str(&serde_json::to_string(g).expect("a GpuSample always serializes"));
        s.push('\n');
    }
    s
}
