//! An engine process under vramfit's control: launched in its own process group (so the
//! engine's workers go with it), its output kept (bounded) and optionally passed through, and
//! stopped cleanly every time: SIGTERM to the group, then SIGKILL after a grace period.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Lines of engine output kept for reading the startup log and diagnosing a crash.
const MAX_LINES: usize = 20_000;
/// A single line longer than this is cut (progress bars without newlines).
const MAX_LINE_BYTES: usize = 16 << 10;
/// How long the engine gets to exit after SIGTERM before SIGKILL.
pub const GRACE: Duration = Duration::from_secs(10);

/// The output the engine printed so far (stdout and stderr interleaved by arrival).
#[derive(Clone, Default)]
pub struct LogBuf(Arc<Mutex<VecDeque<String>>>);

impl LogBuf {
    fn push(&self, line: String) {
        let mut q = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if q.len() >= MAX_LINES {
            q.pop_front();
        }
        q.push_back(line);
    }

    /// Everything kept, one string.
    pub fn text(&self) -> String {
        let q = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut s = String::new();
        for l in q.iter() {
            s.push_str(l);
            s.push('\n');
        }
        s
    }
}

/// Where the engine's output goes besides the kept log.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Echo {
    /// keep it only (probe)
    Quiet,
    /// also write it to our stdout/stderr as it comes (run)
    PassThrough,
}

pub struct Engine {
    child: Child,
    pub pid: u32,
    pub log: LogBuf,
    readers: Vec<JoinHandle<()>>,
    status: Option<ExitStatus>,
}

fn reader<R: Read + Send + 'static>(
    src: R,
    log: LogBuf,
    echo: Echo,
    to_stderr: bool,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut r = BufReader::new(src);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            // bounded read of one line
            match (&mut r)
                .take(MAX_LINE_BYTES as u64)
                .read_until(b'\n', &mut buf)
            {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if echo == Echo::PassThrough {
                if to_stderr {
                    let _ = std::io::stderr().write_all(&buf);
                } else {
                    let _ = std::io::stdout().write_all(&buf);
                    let _ = std::io::stdout().flush();
                }
            }
            let line = String::from_utf8_lossy(&buf);
            log.push(line.trim_end_matches(['\n', '\r']).to_string());
        }
    })
}

impl Engine {
    /// Start `argv` (with `env` assignments) in a new process group.
    pub fn spawn(argv: &[String], env: &[(String, String)], echo: Echo) -> Result<Engine, String> {
        let (prog, args) = argv
            .split_first()
            .ok_or_else(|| "the command is empty: paste the engine command after --".to_string())?;
        let mut cmd = Command::new(prog);
        cmd.args(args)
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = cmd.spawn().map_err(|e| {
            format!("cannot start '{prog}': {e}; check that the program is installed and on PATH")
        })?;
        let log = LogBuf::default();
        let mut readers = Vec::new();
        if let Some(o) = child.stdout.take() {
            readers.push(reader(o, log.clone(), echo, false));
        }
        if let Some(e) = child.stderr.take() {
            readers.push(reader(e, log.clone(), echo, true));
        }
        Ok(Engine {
            pid: child.id(),
            child,
            log,
            readers,
            status: None,
        })
    }

    /// The exit status, if the engine has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status
    }

    /// Send a signal to the whole process group.
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) with a negative pid signals the group we created; no memory involved.
        unsafe {
            libc::kill(-(self.pid as i32), sig);
        }
    }

    /// Stop the group: SIGTERM, wait up to `GRACE`, then SIGKILL; reap the child and the output
    /// readers. Returns the exit status.
    pub fn stop(mut self) -> Option<ExitStatus> {
        if self.exited().is_none() {
            self.signal(libc::SIGTERM);
            let deadline = Instant::now() + GRACE;
            while self.exited().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        // whatever is left in the group (workers that ignored SIGTERM) goes now
        self.signal(libc::SIGKILL);
        if self.status.is_none() {
            self.status = self.child.wait().ok();
        }
        self.join_readers();
        self.status
    }

    /// Wait for the engine to exit by itself (pass-through runs), polling `interrupted` to
    /// forward a signal to the group.
    pub fn wait_forwarding(&mut self, pending: &dyn Fn() -> Option<i32>) -> Option<ExitStatus> {
        loop {
            if let Some(s) = self.exited() {
                // give the readers the last lines
                let readers = std::mem::take(&mut self.readers);
                for r in readers {
                    let _ = r.join();
                }
                // no stragglers from the group
                self.signal(libc::SIGKILL);
                return Some(s);
            }
            if let Some(sig) = pending() {
                self.signal(sig);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn join_readers(&mut self) {
        for r in std::mem::take(&mut self.readers) {
            let _ = r.join();
        }
    }
}

/// The program a command starts can be started: a path that is an executable file, or a name
/// found on `PATH` (as `execvp` would look it up). Checked before anything else is done, so a
/// typo is one line, not a check report followed by a failed launch.
pub fn executable(prog: &str) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let is_exe = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let found = if prog.contains('/') {
        is_exe(std::path::Path::new(prog))
    } else {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|d| is_exe(&d.join(prog))))
    };
    if found {
        Ok(())
    } else {
        Err(format!(
            "cannot start '{prog}': no such executable{}; check that the program is installed and on PATH",
            if prog.contains('/') { "" } else { " on PATH" }
        ))
    }
}

/// A free TCP port on 127.0.0.1 for an engine we launch.
pub fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

/// The exit code a shell would show (128 + signal for a killed process).
pub fn exit_code(s: &ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => c.clamp(0, 255) as u8,
        (None, Some(sig)) => (128 + sig).clamp(0, 255) as u8,
        _ => 1,
    }
}
