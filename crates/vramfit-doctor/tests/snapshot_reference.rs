//! Every real snapshot in ../shared/data/torch-snapshots, analysed in Rust and by the standard
//! library reference (scripts/snapshot_reference.py): the numbers must agree exactly.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use vramfit_doctor::snapshot::analyze_bytes;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn snapshots_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/torch-snapshots");
    if dir.is_dir() {
        Some(dir)
    } else {
        println!(
            "SKIP: {} is absent (the team's shared data is not checked out here)",
            dir.display()
        );
        None
    }
}

fn snapshot_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("pickle" | "pkl")
            )
        })
        .collect();
    files.sort();
    files
}

fn python_reference(file: &Path) -> Option<Value> {
    let script = root().join("scripts/snapshot_reference.py");
    let out = match Command::new("python3").arg(&script).arg(file).output() {
        Ok(out) => out,
        Err(e) => {
            println!("SKIP: python3 cannot be run ({e}); the reference comparison needs it");
            return None;
        }
    };
    assert!(
        out.status.success(),
        "reference failed on {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

const TOTAL_KEYS: &[&str] = &[
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
];

fn same(file: &str, what: &str, rust: &Value, py: &Value) {
    assert_eq!(
        rust, py,
        "{file}: {what} differs (left: Rust, right: Python reference)"
    );
}

#[test]
fn totals_match_python_reference_on_every_real_snapshot() {
    let Some(dir) = snapshots_dir() else { return };
    let files = snapshot_files(&dir);
    assert!(
        files.len() >= 14,
        "expected the 14 real snapshots, found {}",
        files.len()
    );
    let mut compared = 0;
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let Some(py) = python_reference(file) else {
            return;
        };
        let analysis =
            analyze_bytes(&std::fs::read(file).unwrap()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let rust = serde_json::to_value(&analysis.report).unwrap();
        same(&name, "format", &rust["format"], &py["format"]);
        for key in TOTAL_KEYS {
            same(&name, key, &rust[key], &py[key]);
        }
        same(&name, "oom", &rust["oom_events"], &py["oom_events"]);
        same(
            &name,
            "trace entries",
            &rust["trace"]["entries"],
            &py["trace_entries"],
        );
        let (rd, pd) = (
            rust["devices"].as_array().unwrap(),
            py["devices"].as_array().unwrap(),
        );
        assert_eq!(rd.len(), pd.len(), "{name}: device count");
        for (r, p) in rd.iter().zip(pd) {
            let dev = format!("device {}", p["device"]);
            same(&name, &dev, &r["device"], &p["device"]);
            for key in TOTAL_KEYS.iter().chain(&[
                "trace_entries",
                "trace_peak_allocated_bytes",
                "trace_peak_reserved_bytes",
            ]) {
                same(&name, &format!("{dev} {key}"), &r[key], &p[key]);
            }
            let (rs, ps) = (
                r["streams"].as_array().unwrap(),
                p["streams"].as_array().unwrap(),
            );
            assert_eq!(rs.len(), ps.len(), "{name}: {dev} stream count");
            for (r, p) in rs.iter().zip(ps) {
                for key in TOTAL_KEYS.iter().chain(&["stream"]) {
                    same(
                        &name,
                        &format!("{dev} stream {} {key}", p["stream"]),
                        &r[key],
                        &p[key],
                    );
                }
            }
        }
        same(
            &name,
            "top allocation sites",
            &rust["top_sites"],
            &py["top_sites"],
        );
        compared += 1;
    }
    println!("compared {compared} snapshots with the Python reference");
}

#[test]
fn legacy_and_list_formats_are_recognised() {
    let Some(dir) = snapshots_dir() else { return };
    let format_of = |f: &str| {
        let a = analyze_bytes(&std::fs::read(dir.join(f)).unwrap()).unwrap();
        serde_json::to_value(a.report.format).unwrap()
    };
    assert_eq!(format_of("yiyi_oom_snapshot.pickle"), "legacy");
    assert_eq!(format_of("muduard_mem.pkl"), "segment_list");
    assert_eq!(format_of("magma_memory_snapshot.pickle"), "current");
}

#[test]
fn allocator_invariants_hold_on_real_snapshots() {
    let Some(dir) = snapshots_dir() else { return };
    for file in snapshot_files(&dir) {
        let a = analyze_bytes(&std::fs::read(&file).unwrap()).unwrap();
        let t = &a.report.totals;
        // _memory_viz.py segsum: free_external + free_internal + allocated == reserved; here
        // allocated already contains the rounding waste, and pending-free blocks are active.
        assert_eq!(
            t.inactive_bytes + t.active_bytes,
            t.reserved_bytes,
            "{}: blocks must tile their segments",
            file.display()
        );
        assert_eq!(
            t.allocated_bytes - t.requested_bytes,
            t.rounding_waste_bytes,
            "{}",
            file.display()
        );
        for s in &a.snapshot.segments {
            let mut next = s.address;
            for b in &s.blocks {
                assert_eq!(
                    b.address,
                    next,
                    "{}: block addresses follow sizes",
                    file.display()
                );
                next += b.size;
            }
        }
    }
}
