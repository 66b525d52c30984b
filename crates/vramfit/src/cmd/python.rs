//! `vramfit check --python FILE` (or `-` for stdin), and `check -- python serve.py` /
//! `python -c CODE`: the script is read, never run ([`vramfit_engine::python`]), and checked
//! as the command line it amounts to, which the report prints.

use crate::error::CliError;
use std::io::Read;
use vramfit_engine::cmdline::Command;
use vramfit_engine::python::{self, Device, Script};
use vramfit_engine::{Hardware, MemoryPlan};

const MAX_SOURCE: u64 = 1 << 20;

/// The script's text: a file, or stdin for `-`; at most 1 MiB.
pub fn read_source(file: &str) -> Result<String, CliError> {
    let mut buf = Vec::new();
    let read = if file == "-" {
        std::io::stdin().take(MAX_SOURCE + 1).read_to_end(&mut buf)
    } else {
        std::fs::File::open(file).and_then(|f| f.take(MAX_SOURCE + 1).read_to_end(&mut buf))
    };
    read.map_err(|e| CliError::input(format!("cannot read the Python script '{file}': {e}")))?;
    if buf.len() as u64 > MAX_SOURCE {
        return Err(CliError::input(format!(
            "'{file}' is over 1 MiB: give the part of the script that builds the engine"
        )));
    }
    String::from_utf8(buf).map_err(|_| {
        CliError::input(format!(
            "'{file}' is not UTF-8 text: give a Python source file"
        ))
    })
}

/// Check a script's source: translate, then check the equivalent command line.
pub fn check_source(
    src: &str,
    hw: &Hardware,
    version: Option<&str>,
) -> Result<MemoryPlan, CliError> {
    let dev = hw
        .gpus
        .first()
        .map(|g| Device {
            total_bytes: g.total_bytes,
            name: &g.name,
        })
        .unwrap_or(Device {
            total_bytes: 0,
            name: "",
        });
    let t = python::translate(src, dev).map_err(|e| CliError::input(e.to_string()))?;
    let mut plan = super::check::check(&t.argv, hw, version)?;
    let mut notes = vec![format!(
        "pasted Python, checked as: {}",
        shell_join(&t.argv)
    )];
    notes.extend(t.notes);
    notes.append(&mut plan.notes);
    plan.notes = notes;
    Ok(plan)
}

/// `python serve.py` / `python -c CODE` pasted after `--`.
pub fn check_command(
    cmd: &Command,
    hw: &Hardware,
    version: Option<&str>,
) -> Result<MemoryPlan, CliError> {
    match python::script_of(&cmd.program, &cmd.args) {
        Some(Script::File(f)) => check_source(&read_source(&f)?, hw, version),
        Some(Script::Code(c)) => check_source(&c, hw, version),
        None => Err(CliError::input(format!(
            "'{}' runs no Python script vramfit can read",
            cmd.program
        ))),
    }
}

fn shell_join(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "\"'{}$`\\*".contains(c)) {
                format!("'{}'", a.replace('\'', "'\\''"))
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
