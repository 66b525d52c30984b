//! Shared by the tests that launch a real llama-server: where the build is, the GGUF models the
//! tests write, and launching/stopping a server on loopback.
#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The llama-server scripts/build_llama_server.sh built: $VRAMFIT_LLAMA_SERVER, or the newest
/// under ~/.cache/vramfit/llama-server-*/bin/. None (the test says it skips) when absent.
pub fn llama_server() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("VRAMFIT_LLAMA_SERVER") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let cache = std::env::var("VRAMFIT_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/vramfit")
        });
    let mut found: Vec<PathBuf> = std::fs::read_dir(&cache)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("llama-server-"))
        })
        .map(|p| p.join("bin/llama-server"))
        .filter(|p| p.is_file())
        .collect();
    found.sort();
    found.pop()
}

/// `build_seconds`, `llama_cpp_commit`, `llama_cpp_build` from the build's BUILD_INFO.
pub fn build_info(server: &Path) -> String {
    server
        .parent()
        .and_then(|b| b.parent())
        .and_then(|d| std::fs::read_to_string(d.join("BUILD_INFO")).ok())
        .unwrap_or_default()
}

/// (build number, commit) as the binary's `--version` prints them: `version: 0.5.0-dev (build 1,
/// commit 0c1e570)` (recent) or `version: 11312 (0c1e5709)` (older).
fn version_of(server: &Path) -> (Option<u64>, Option<String>) {
    let Ok(out) = Command::new(server).arg("--version").output() else {
        return (None, None);
    };
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let Some(line) = text.lines().find(|l| l.contains("version:")) else {
        return (None, None);
    };
    let digits = |s: &str| -> Option<u64> {
        let n: String = s
            .trim()
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        n.parse().ok()
    };
    let hexword = |s: &str| -> Option<String> {
        let h: String = s
            .trim()
            .chars()
            .take_while(|c| c.is_ascii_hexdigit())
            .collect();
        (h.len() >= 7).then_some(h)
    };
    if let Some(i) = line.find("(build ") {
        let rest = &line[i + 7..];
        let commit = rest.find("commit ").and_then(|j| hexword(&rest[j + 7..]));
        return (digits(rest), commit);
    }
    let rest = line.split("version:").nth(1).unwrap_or("");
    (
        digits(rest),
        rest.find('(').and_then(|j| hexword(&rest[j + 1..])),
    )
}

/// The llama.cpp release (`b11312`) the binary is, and how that was established. A real build
/// number from `--version` names it; a checkout without history prints build 1, and then the
/// commit it prints must be the one BUILD_INFO records, whose release tag
/// (scripts/build_llama_server.sh: the tag that points at that commit) names it.
pub fn identify(server: &Path) -> (Option<String>, String) {
    let (n, commit) = version_of(server);
    if let Some(n) = n.filter(|n| *n > 1) {
        return (Some(format!("b{n}")), format!("--version prints build {n}"));
    }
    let info = build_info(server);
    let field = |k: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(k))
            .map(str::to_string)
    };
    let (Some(c), Some(recorded)) = (commit.clone(), field("llama_cpp_commit=")) else {
        return (
            None,
            format!("no build number, commit {commit:?}, no BUILD_INFO commit"),
        );
    };
    if !recorded.starts_with(&c) {
        return (
            None,
            format!("the binary prints commit {c} but BUILD_INFO records {recorded}: rebuild it"),
        );
    }
    match field("llama_cpp_build=")
        .filter(|b| b.chars().all(|x| x.is_ascii_digit()) && !b.is_empty())
    {
        Some(b) => (
            Some(format!("b{b}")),
            format!(
                "--version prints build {}, commit {c} = {recorded}, tagged b{b}",
                n.unwrap_or(0)
            ),
        ),
        None => (None, format!("commit {c} has no known release tag")),
    }
}

/// The llama.cpp release the binary is (see [`identify`]).
pub fn build_number(server: &Path) -> Option<String> {
    identify(server).0
}

/// The test models (scripts/make_llama_models.py), written once per machine into the temp dir.
pub fn models() -> Option<PathBuf> {
    let dir = std::env::temp_dir().join("vramfit-live-models-v1");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/make_llama_models.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(&dir)
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!(
            "SKIP: make_llama_models.py failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return None;
    }
    Some(dir)
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A llama-server on loopback; killed (its process group) when dropped.
pub struct Server {
    pub child: Child,
    pub port: u16,
    pub log_path: PathBuf,
}

impl Server {
    pub fn start(server: &Path, args: &[&str], log_path: PathBuf) -> Server {
        use std::os::unix::process::CommandExt;
        let port = free_port();
        let log = std::fs::File::create(&log_path).unwrap();
        let child = Command::new(server)
            .args(args)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0)
            .spawn()
            .unwrap();
        Server {
            child,
            port,
            log_path,
        }
    }

    pub fn log(&self) -> String {
        let mut s = String::new();
        if let Ok(mut f) = std::fs::File::open(&self.log_path) {
            let _ = f.read_to_string(&mut s);
        }
        s
    }

    /// Wait until the log shows `marker` (or the process exits, or `secs` pass).
    pub fn wait_for(&mut self, marker: &str, secs: u64) -> bool {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(secs) {
            if self.log().contains(marker) {
                return true;
            }
            if self.child.try_wait().ok().flatten().is_some() {
                return self.log().contains(marker);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let pid = self.child.id() as i32;
        // SAFETY: signals the process group this test created
        unsafe { libc::kill(-pid, libc::SIGTERM) };
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(10) {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        unsafe { libc::kill(-pid, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

/// True when no process from `exe` is left (nothing left running after a test).
pub fn none_running(exe: &Path) -> bool {
    let exe = std::fs::canonicalize(exe).unwrap_or(exe.to_path_buf());
    std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten().all(|e| {
                std::fs::read_link(e.path().join("exe"))
                    .map(|p| p != exe)
                    .unwrap_or(true)
            })
        })
        .unwrap_or(true)
}
