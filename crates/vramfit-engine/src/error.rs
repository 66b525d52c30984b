//! `EngineError`: what can be wrong with a pasted command or an engine setting. Every message is
//! one line that names the offending value and says what to do.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Error)]
pub enum EngineError {
    #[error("no command given: paste the serving command after `--` (e.g. `-- vllm serve MODEL`)")]
    EmptyCommand,

    #[error("unterminated {quote} quote in command `{text}`: close the quote or pass the words as separate arguments")]
    UnterminatedQuote { quote: char, text: String },

    #[error("flag {flag} needs a value: write `{flag} VALUE`")]
    MissingValue { flag: String },

    #[error("{flag} {value:?} is not understood: {expected}")]
    BadValue {
        flag: String,
        value: String,
        expected: String,
    },

    #[error("`{program}` is not a {engine} command: paste a {engine} command line ({example})")]
    WrongEngine {
        program: String,
        engine: &'static str,
        example: &'static str,
    },

    #[error("no model in the {engine} command: add the model ({example})")]
    NoModel {
        engine: &'static str,
        example: &'static str,
    },

    #[error("engine version {0:?} is not understood: write a release such as 0.15.2")]
    BadVersion(String),

    #[error("environment variable {name}={value:?} is not understood: {expected}")]
    BadEnv {
        name: String,
        value: String,
        expected: String,
    },
}

impl EngineError {
    /// A bad flag value, with what the flag expects.
    pub fn bad_value(flag: &str, value: &str, expected: impl Into<String>) -> EngineError {
        EngineError::BadValue {
            flag: flag.to_string(),
            value: value.to_string(),
            expected: expected.into(),
        }
    }
}
