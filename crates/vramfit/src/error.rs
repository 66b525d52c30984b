//! The one error type commands return: a one-line message and the exit code.

use std::fmt;

/// A command failure: `message` is printed as `vramfit: <message>` on stderr.
#[derive(Debug)]
pub struct CliError {
    pub message: String,
    /// 2 for bad input (the default), other codes where a command defines them
    pub code: u8,
}

impl CliError {
    /// Bad input: exit code 2.
    pub fn input(message: impl Into<String>) -> CliError {
        CliError {
            message: message.into(),
            code: 2,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: std::error::Error> From<E> for CliError {
    fn from(e: E) -> CliError {
        CliError::input(e.to_string())
    }
}

/// What every command returns: the process exit code, or an error.
pub type CmdResult = Result<u8, CliError>;
