//! `vramfit snapshot` on inputs that are not regular files: a device that never ends must fail at
//! once with one line and exit 2; a pipe carrying a real snapshot must give the same report as the
//! file; a directory is named as such.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../vramfit-doctor/tests/fixtures/h100_leak_oom.pickle"
);

fn vramfit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_vramfit"))
}

#[test]
fn dev_zero_fails_at_once_with_one_line() {
    if !std::path::Path::new("/dev/zero").exists() {
        println!("SKIP: no /dev/zero");
        return;
    }
    let start = Instant::now();
    let out = vramfit().args(["snapshot", "/dev/zero"]).output().unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("/dev/zero") && err.contains("0x00"), "{err}");
}

#[test]
fn a_pipe_reads_like_the_file() {
    let file = vramfit()
        .args(["snapshot", "--json", FIXTURE])
        .output()
        .unwrap();
    assert!(
        file.status.success(),
        "{}",
        String::from_utf8_lossy(&file.stderr)
    );
    let mut child = vramfit()
        .args(["snapshot", "--json", "/dev/stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let bytes = std::fs::read(FIXTURE).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&bytes));
    let piped = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        piped.status.success(),
        "{}",
        String::from_utf8_lossy(&piped.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&piped.stdout),
        String::from_utf8_lossy(&file.stdout)
    );
}

#[test]
fn a_directory_is_named() {
    let out = vramfit()
        .args(["snapshot", env!("CARGO_MANIFEST_DIR")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is a directory"), "{err}");
}
