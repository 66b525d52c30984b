//! The real dashboard in a real terminal: `vramfit watch --replay` inside tmux at 120x40, the
//! final frame of the new-process replay captured and pinned. Skips, saying so, without tmux
//! (`apt-get install -y tmux`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn has_tmux() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn tmux(socket: &str, args: &[&str]) -> std::process::Output {
    Command::new("tmux")
        .args(["-L", socket, "-f", "/dev/null"])
        .args(args)
        .output()
        .expect("run tmux")
}

#[test]
fn dashboard_under_tmux_120x40() {
    if !has_tmux() {
        eprintln!("skipping: tmux is not installed (apt-get install -y tmux)");
        return;
    }
    let trace = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../vramfit-watch/tests/traces/new_process.jsonl");
    let bin = Path::new(env!("CARGO_BIN_EXE_vramfit"));
    let socket = format!("vramfit-test-{}", std::process::id());
    let cmd = format!(
        "{} watch --replay {} --speed max; sleep 30",
        bin.display(),
        trace.display()
    );
    let out = tmux(
        &socket,
        &[
            "new-session",
            "-d",
            "-s",
            "w",
            "-x",
            "120",
            "-y",
            "40",
            "env",
            "TERM=xterm-256color",
            "sh",
            "-c",
            &cmd,
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let start = Instant::now();
    let screen = loop {
        let cap = tmux(&socket, &["capture-pane", "-p", "-t", "w"]);
        let text = String::from_utf8_lossy(&cap.stdout).to_string();
        if text.contains("replay finished") {
            break text;
        }
        if start.elapsed() > Duration::from_secs(30) {
            tmux(&socket, &["kill-server"]);
            panic!("the replay did not finish on screen:\n{text}");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    tmux(&socket, &["send-keys", "-t", "w", "q"]);
    tmux(&socket, &["kill-server"]);
    let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
    assert!(lines.len() <= 40 && lines.iter().all(|l| l.chars().count() <= 120));
    let screen = lines.join("\n");
    assert!(
        screen.contains("31337") && screen.contains("jupyter-kernel"),
        "{screen}"
    );
    insta::assert_snapshot!("tmux_new_process_final_120x40", screen);
}
