//! PyTorch CUDA memory snapshot analysis.
//!
//! Reads the pickle that `torch.cuda.memory._dump_snapshot()` writes (or the list that
//! `torch.cuda.memory_snapshot()` returns, pickled), from torch 2.0's legacy layout to current,
//! with its own pickle reader ([`pickle`]): nothing in the file is executed, shared frame objects
//! are kept shared, and hostile input is bounded. The file is read in two linear passes through a
//! small buffer, and segments, blocks and trace entries are decoded as they arrive ([`collect`]), so
//! memory holds the typed snapshot, not the file or its object tree.
//!
//! ```no_run
//! let bytes = std::fs::read("oom_snapshot.pickle").unwrap();
//! let analysis = vramfit_doctor::snapshot::analyze_bytes(&bytes).unwrap();
//! println!("{} bytes reserved, {} allocated", analysis.report.totals.reserved_bytes,
//!          analysis.report.totals.allocated_bytes);
//! if let Some(oom) = &analysis.report.oom {
//!     println!("OOM asking {} with {} free", oom.requested_bytes, oom.device_free_bytes);
//! }
//! ```

pub mod analysis;
pub mod collect;
pub mod format;
pub mod model;
pub mod pickle;
pub mod svg;
pub mod timeline;

pub use analysis::{analyze, DeviceReport, OomEvent, SnapshotReport, Totals};
pub use format::{from_pickle, Snapshot, SnapshotFormat};

use pickle::{Limits, PickleError, Source};
use std::io::{Read, Seek, SeekFrom};
use thiserror::Error;

/// Why a file could not be analysed; one line.
#[derive(Debug, Error, PartialEq)]
pub enum SnapshotError {
    #[error("not a readable pickle ({0}); is this a torch.cuda.memory._dump_snapshot() file?")]
    Pickle(#[from] pickle::PickleError),
    #[error("not a PyTorch memory snapshot: {0}")]
    Format(#[from] format::FormatError),
}

/// A decoded snapshot and its report.
#[derive(Debug)]
pub struct Analysis {
    pub snapshot: Snapshot,
    pub report: SnapshotReport,
}

/// Decodes and analyses snapshot bytes (the first pass runs on a second thread).
pub fn analyze_bytes(data: &[u8]) -> Result<Analysis, SnapshotError> {
    analyze_parallel(data, data, data.len() as u64, None)
}

/// Decodes and analyses `len` bytes that `first` and `second` both read from the start (the same
/// file opened twice): a thread notes from `first` which memo entries are ever fetched while this
/// one decodes `second`, keeping what it cannot yet decide until that thread has finished.
/// `progress` hears the bytes decoded so far, out of `len`.
pub fn analyze_parallel<R1: Read + Send, R2: Read>(
    first: R1,
    second: R2,
    len: u64,
    progress: Option<&mut dyn FnMut(u64)>,
) -> Result<Analysis, SnapshotError> {
    let limits = Limits::for_input(len.min(usize::MAX as u64) as usize);
    let keys = std::sync::Arc::new(pickle::SharedKeys::new(limits.max_memo as u64));
    let snapshot = std::thread::scope(|s| {
        let scanner = s.spawn(|| keys.scan(&mut Source::new(first, Some(len), len)));
        let mut src = Source::new(second, Some(len), len).with_progress(progress);
        let result = read_into(
            &mut src,
            limits,
            pickle::Keep::Shared(keys.clone()),
            Some(len),
        );
        // an early error: the first pass need not finish
        keys.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = scanner.join();
        result
    })?;
    Ok(analyzed(snapshot))
}

/// Decodes and analyses a seekable input of `len` bytes in two passes on this thread.
/// `progress` hears the bytes processed so far, out of `2 * len`.
pub fn analyze_seekable<R: Read + Seek>(
    mut r: R,
    len: u64,
    mut progress: Option<&mut dyn FnMut(u64)>,
) -> Result<Analysis, SnapshotError> {
    let io = |e: std::io::Error| PickleError {
        offset: 0,
        kind: pickle::PickleErrorKind::Read(e.to_string()),
    };
    let limits = Limits::for_input(len.min(usize::MAX as u64) as usize);
    let fetched = {
        let mut src = Source::new(&mut r, Some(len), len).with_progress(reborrow(&mut progress));
        pickle::prescan(&mut src, limits.max_memo as u64)
    };
    r.seek(SeekFrom::Start(0)).map_err(io)?;
    let mut src = Source::new(&mut r, Some(len), len).with_progress(progress);
    src.progress_base = len;
    let snapshot = read_into(&mut src, limits, pickle::Keep::Fetched(fetched), Some(len))?;
    Ok(analyzed(snapshot))
}

/// Decodes and analyses an input that can be read only once (a pipe, a device), reading at
/// most `max` bytes. Every memo entry is kept, since which are fetched again is unknown.
/// `progress` hears the bytes read so far.
pub fn analyze_stream<R: Read>(
    r: R,
    max: u64,
    progress: Option<&mut dyn FnMut(u64)>,
) -> Result<Analysis, SnapshotError> {
    let limits = Limits::for_input(max.min(usize::MAX as u64) as usize);
    let mut src = Source::new(r, None, max).with_progress(progress);
    let snapshot = read_into(&mut src, limits, pickle::Keep::All, None)?;
    Ok(analyzed(snapshot))
}

fn reborrow<'s>(p: &'s mut Option<&mut dyn FnMut(u64)>) -> Option<&'s mut dyn FnMut(u64)> {
    match p {
        Some(f) => Some(&mut **f),
        None => None,
    }
}

fn analyzed(snapshot: Snapshot) -> Analysis {
    let report = analysis::analyze(&snapshot);
    Analysis { snapshot, report }
}

fn read_into<R: Read>(
    src: &mut Source<'_, R>,
    limits: Limits,
    keep: pickle::Keep,
    total: Option<u64>,
) -> Result<Snapshot, SnapshotError> {
    let mut c = collect::Collector::new(total);
    let (mut heap, root, _) = pickle::run(src, limits, keep, Some(&mut c))?;
    c.set_consumed(src.offset());
    heap.flush_deferred();
    Ok(format::assemble(&mut heap, root, &mut c)?)
}
