//! PyTorch CUDA memory snapshot analysis.
//!
//! Reads the pickle that `torch.cuda.memory._dump_snapshot()` writes (or the list that
//! `torch.cuda.memory_snapshot()` returns, pickled), from torch 2.0's legacy layout to current,
//! with its own pickle reader ([`pickle`]): nothing in the file is executed, shared frame objects
//! are kept shared, and hostile input is bounded.
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
pub mod format;
pub mod model;
pub mod pickle;
pub mod svg;
pub mod timeline;

pub use analysis::{analyze, DeviceReport, OomEvent, SnapshotReport, Totals};
pub use format::{from_pickle, Snapshot, SnapshotFormat};

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

/// Decodes and analyses snapshot bytes.
pub fn analyze_bytes(data: &[u8]) -> Result<Analysis, SnapshotError> {
    let p = pickle::read(data)?;
    let snapshot = format::from_pickle(&p)?;
    drop(p);
    let report = analysis::analyze(&snapshot);
    Ok(Analysis { snapshot, report })
}
