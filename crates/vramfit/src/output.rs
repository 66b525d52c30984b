//! The end of every command: what was written, and what to do when writing failed.
//!
//! A reader that goes away (`vramfit catalog models | head -1`) ends the program quietly, as
//! command-line tools do; any other write error (a full disk, `> /dev/full`) is a one-line error
//! and exit 2, so a command never exits 0 having written nothing. Error text is one line: control
//! characters in echoed values are escaped.

use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::Mutex;

/// The first stdout write error a command met (set by [`record_write_error`]).
static WRITE_ERROR: Mutex<Option<(io::ErrorKind, String)>> = Mutex::new(None);

/// Remember a failed write to stdout; [`finish`] turns it into the exit status.
pub fn record_write_error(e: &io::Error) {
    if let Ok(mut slot) = WRITE_ERROR.lock() {
        slot.get_or_insert((e.kind(), e.to_string()));
    }
}

/// `print!` panics when stdout fails; such a panic is an output error, not a bug: keep its
/// message off stderr (finish reports it in one line) and leave every other panic to the default
/// hook.
pub fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if print_failure(info.payload()).is_none() {
            default(info);
        }
    }));
}

/// The message of a `print!`/`eprint!` failure panic, if this payload is one.
fn print_failure(payload: &(dyn std::any::Any + Send)) -> Option<String> {
    let text = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())?;
    text.starts_with("failed printing to std")
        .then(|| text.to_string())
}

fn is_broken_pipe(text: &str) -> bool {
    text.contains("Broken pipe") || text.contains("os error 32")
}

/// The exit status of a run: its own code, unless writing its output failed.
pub fn finish(run: std::thread::Result<u8>) -> ExitCode {
    let code = match run {
        Ok(code) => code,
        Err(payload) => match print_failure(payload.as_ref()) {
            Some(text) if is_broken_pipe(&text) => return ExitCode::SUCCESS,
            Some(text) => {
                let text = text.replacen("failed printing to stdout", "cannot write the output", 1);
                error_line(&format!("{text}: free some space or write elsewhere"));
                return ExitCode::from(2);
            }
            None => std::panic::resume_unwind(payload),
        },
    };
    if let Err(e) = io::stdout().lock().flush() {
        record_write_error(&e);
    }
    let failed = WRITE_ERROR.lock().ok().and_then(|mut s| s.take());
    match failed {
        Some((io::ErrorKind::BrokenPipe, _)) => ExitCode::from(code),
        Some((_, text)) => {
            error_line(&format!(
                "cannot write the output: {text}: free some space or write elsewhere"
            ));
            ExitCode::from(2)
        }
        None => ExitCode::from(code),
    }
}

/// Print `vramfit: MESSAGE` on stderr as one line; a closed stderr is ignored.
pub fn error_line(message: &str) {
    let _ = writeln!(io::stderr().lock(), "vramfit: {}", one_line(message));
}

/// `text` with control characters escaped (`\n`, `\r`, `\t`, `\u{1b}`), so that an echoed value
/// cannot break an error across lines or drive the terminal.
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') => {
                out.push_str(&c.escape_unicode().to_string())
            }
            c => out.push(c),
        }
    }
    out
}

/// clap's error (a message, a tip, a usage block) as one line: the message and tip joined, usage
/// and the `--help` pointer dropped (clap prints a hint to `--help` in the message itself).
pub fn clap_one_line(rendered: &str) -> String {
    let parts: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take_while(|l| !l.starts_with("Usage:"))
        .filter(|l| !l.starts_with("For more information"))
        .collect();
    let text = parts.join("; ");
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    format!("{text} (see --help)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(one_line("a\nb\r\tc"), "a\\nb\\r\\tc");
        assert_eq!(one_line("x\u{1b}[31m"), "x\\u{1b}[31m");
        assert_eq!(one_line("RTX ４０９０"), "RTX ４０９０");
    }

    #[test]
    fn clap_errors_become_one_line() {
        let r = "error: unexpected argument '--x' found\n\n  tip: to pass '--x' as a value, use '-- --x'\n\nUsage: vramfit check [OPTIONS]\n\nFor more information, try '--help'.\n";
        let l = clap_one_line(r);
        assert!(!l.contains('\n'));
        assert!(
            l.starts_with("unexpected argument '--x' found; tip:"),
            "{l}"
        );
    }
}
