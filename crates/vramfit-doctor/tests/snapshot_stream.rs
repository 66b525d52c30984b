//! The streaming reader: every way in (bytes, two readers with the first pass on a thread, a
//! seekable file in two passes on one, a stream read once)
//! gives the same snapshot, progress is reported to the end, and a real snapshot scaled up the way
//! long recordings grow (scripts/scale_snapshot.py: fresh copies, memo keys past 255) still
//! matches the standard-library reference exactly.

use serde_json::Value;
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::process::Command;
use vramfit_doctor::snapshot::{
    analyze_bytes, analyze_parallel, analyze_seekable, analyze_stream, Analysis,
};

fn shared(file: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/torch-snapshots")
        .join(file);
    if p.is_file() {
        Some(p)
    } else {
        println!("SKIP: {} is absent", p.display());
        None
    }
}

fn json(a: &Analysis) -> Value {
    serde_json::to_value(&a.report).unwrap()
}

fn same_snapshot(a: &Analysis, b: &Analysis, what: &str) {
    assert_eq!(json(a), json(b), "{what}: report");
    assert_eq!(
        a.snapshot.segments.len(),
        b.snapshot.segments.len(),
        "{what}"
    );
    for (x, y) in a.snapshot.segments.iter().zip(&b.snapshot.segments) {
        assert_eq!(
            (x.address, x.total_size, x.blocks.len()),
            (y.address, y.total_size, y.blocks.len()),
            "{what}"
        );
        for (p, q) in x.blocks.iter().zip(&y.blocks) {
            assert_eq!(
                (p.address, p.size, p.requested_size, p.state, p.site),
                (q.address, q.size, q.requested_size, q.state, q.site),
                "{what}"
            );
        }
    }
    assert_eq!(
        a.snapshot
            .device_traces
            .iter()
            .map(Vec::len)
            .collect::<Vec<_>>(),
        b.snapshot
            .device_traces
            .iter()
            .map(Vec::len)
            .collect::<Vec<_>>(),
        "{what}"
    );
}

#[test]
fn bytes_seekable_and_stream_agree() {
    let fixture = include_bytes!("fixtures/h100_leak_oom.pickle");
    let mut inputs = vec![("h100_leak_oom".to_string(), fixture.to_vec())];
    for f in [
        "kk_2.7b.pickle",
        "yiyi_oom_snapshot.pickle",
        "muduard_mem.pkl",
    ] {
        if let Some(p) = shared(f) {
            inputs.push((f.to_string(), std::fs::read(p).unwrap()));
        }
    }
    for (name, bytes) in inputs {
        let a = analyze_bytes(&bytes).unwrap();
        let len = bytes.len() as u64;
        let mut seen = Vec::new();
        let mut progress = |done: u64| seen.push(done);
        let b = analyze_seekable(Cursor::new(&bytes), len, Some(&mut progress)).unwrap();
        same_snapshot(&a, &b, &format!("{name} seekable"));
        assert!(
            seen.windows(2).all(|w| w[0] <= w[1]),
            "{name}: progress goes forward"
        );
        assert_eq!(
            seen.last(),
            Some(&(2 * len)),
            "{name}: two passes, to the end"
        );
        let c = analyze_stream(&bytes[..], u64::MAX, None).unwrap();
        same_snapshot(&a, &c, &format!("{name} stream"));
        let mut seen = Vec::new();
        let mut progress = |done: u64| seen.push(done);
        let d = analyze_parallel(&bytes[..], &bytes[..], len, Some(&mut progress)).unwrap();
        same_snapshot(&a, &d, &format!("{name} parallel"));
        assert_eq!(
            seen.last(),
            Some(&len),
            "{name}: one pass reported, to the end"
        );
    }
}

#[test]
fn stream_stops_at_its_cap() {
    let bytes = include_bytes!("fixtures/h100_leak_oom.pickle");
    let e = analyze_stream(&bytes[..], 1000, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("input size limit of 1000"), "{e}");
    assert!(!e.contains('\n'));
}

#[test]
fn endless_zeros_fail_at_once() {
    let e = analyze_stream(std::io::repeat(0), u64::MAX, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("pickle byte 0") && e.contains("0x00"), "{e}");
    // a valid start, then endless NONE opcodes: the cap ends it, memory never past it
    let endless = std::io::Read::chain(&b"\x80\x04"[..], std::io::repeat(b'N'));
    let e = analyze_stream(endless, 1 << 20, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("limit"), "{e}");
}

#[test]
fn scaled_snapshot_matches_the_reference() {
    let Some(real) = shared("kk_2.7b.pickle") else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::env::temp_dir().join(format!("vramfit-scaled-{}.pickle", std::process::id()));
    let gen = Command::new("python3")
        .arg(root.join("scripts/scale_snapshot.py"))
        .arg(&real)
        .arg(&out)
        .args(["--mb", "12"])
        .output();
    let Ok(gen) = gen else {
        println!("SKIP: python3 cannot be run");
        return;
    };
    assert!(
        gen.status.success(),
        "{}",
        String::from_utf8_lossy(&gen.stderr)
    );
    let reference = Command::new("python3")
        .arg(root.join("scripts/snapshot_reference.py"))
        .arg(&out)
        .output()
        .unwrap();
    assert!(reference.status.success());
    let py: Value = serde_json::from_slice(&reference.stdout).unwrap();
    let bytes = std::fs::read(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    assert!(bytes.len() > 10_000_000, "{} bytes", bytes.len());
    let a = analyze_bytes(&bytes).unwrap();
    let rust = json(&a);
    for key in [
        "reserved_bytes",
        "allocated_bytes",
        "active_bytes",
        "requested_bytes",
        "inactive_bytes",
        "pending_free_bytes",
        "rounding_waste_bytes",
        "segments",
        "blocks",
        "largest_free_block_bytes",
        "format",
        "oom_events",
        "top_sites",
    ] {
        assert_eq!(rust[key], py[key], "{key}");
    }
    assert_eq!(rust["trace"]["entries"], py["trace_entries"]);
    for key in ["trace_peak_allocated_bytes", "trace_peak_reserved_bytes"] {
        assert_eq!(rust["devices"][0][key], py["devices"][0][key], "{key}");
    }
    // four copies of the real file: four times its segments
    let one = analyze_bytes(&std::fs::read(&real).unwrap()).unwrap();
    assert_eq!(
        a.report.totals.segments % one.report.totals.segments,
        0,
        "whole copies"
    );
    assert!(a.report.totals.segments >= 3 * one.report.totals.segments);
}

/// A first-pass reader that stalls once, at `stall_at` bytes, so the pass on the other thread
/// finishes while the second pass is anywhere in the file: the undecided memo entries then turn
/// final mid-read, the window in which a "not seen yet" key must never be taken for "never
/// fetched" (a race that dropped objects under load and failed with a pickle type error).
struct Stalling<'a> {
    bytes: &'a [u8],
    pos: usize,
    stall_at: usize,
    stall: std::time::Duration,
}

impl std::io::Read for Stalling<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pos == self.stall_at {
            std::thread::sleep(self.stall);
            self.stall_at = usize::MAX;
        }
        let end =
            self.bytes
                .len()
                .min(self.pos + buf.len().min(4096))
                .min(if self.stall_at > self.pos {
                    self.stall_at
                } else {
                    usize::MAX
                });
        let n = end - self.pos;
        buf[..n].copy_from_slice(&self.bytes[self.pos..end]);
        self.pos = end;
        Ok(n)
    }
}

#[test]
fn first_pass_finishing_mid_read_drops_nothing() {
    let fixture = include_bytes!("fixtures/h100_leak_oom.pickle");
    let mut inputs = vec![("h100_leak_oom".to_string(), fixture.to_vec())];
    if let Some(p) = shared("kk_2.7b.pickle") {
        inputs.push(("kk_2.7b".to_string(), std::fs::read(p).unwrap()));
    }
    for (name, bytes) in inputs {
        let len = bytes.len() as u64;
        let reference = analyze_seekable(Cursor::new(&bytes), len, None).unwrap();
        for tenth in 0..10 {
            for stall_ms in [0u64, 2, 20] {
                let first = Stalling {
                    bytes: &bytes,
                    pos: 0,
                    stall_at: bytes.len() * tenth / 10,
                    stall: std::time::Duration::from_millis(stall_ms),
                };
                let got = analyze_parallel(first, &bytes[..], len, None).unwrap_or_else(|e| {
                    panic!("{name}: first pass stalled at {tenth}/10 for {stall_ms} ms: {e}")
                });
                same_snapshot(
                    &reference,
                    &got,
                    &format!("{name} stalled {tenth}/10 {stall_ms} ms"),
                );
            }
        }
    }
}
