//! The flag reader every engine module uses on `Command::args`: `--flag value`, `--flag=value`,
//! short aliases, repeated flags, optional-value booleans and `--no-x` negations.

use crate::error::EngineError;

/// How a flag takes its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    /// `--flag VALUE` or `--flag=VALUE`; always consumes the next word (so `-1` is a value)
    Value,
    /// a boolean that may stand alone (`-fa`, `--enforce-eager`) or take `on|off|auto|true|false|
    /// 1|0|yes|no` as the next word or after `=`; `--no-NAME` sets it false
    Bool,
}

/// One flag an engine knows: its canonical name and its other spellings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flag {
    /// canonical spelling, with dashes (`--tensor-parallel-size`)
    pub name: &'static str,
    /// other spellings (`-tp`, `--tp`)
    pub aliases: &'static [&'static str],
    pub arity: Arity,
}

impl Flag {
    pub const fn value(name: &'static str, aliases: &'static [&'static str]) -> Flag {
        Flag {
            name,
            aliases,
            arity: Arity::Value,
        }
    }

    pub const fn boolean(name: &'static str, aliases: &'static [&'static str]) -> Flag {
        Flag {
            name,
            aliases,
            arity: Arity::Bool,
        }
    }
}

/// The flags read from a command: canonical name → values in order, positionals, and the words
/// that named no known flag.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flags {
    /// (canonical name, value); a bare boolean has value `None`, `--no-x` has `Some("false")`
    pub values: Vec<(&'static str, Option<String>)>,
    /// words that are not flags or flag values, in order
    pub positionals: Vec<String>,
    /// unknown flags as written (with their value when one followed: `--port 8000`)
    pub unknown: Vec<String>,
}

impl Flags {
    /// The last value given for `name` (the canonical spelling).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .and_then(|(_, v)| v.as_deref())
    }

    /// Every value given for a repeatable flag, in order.
    pub fn get_all(&self, name: &str) -> Vec<&str> {
        self.values
            .iter()
            .filter(|(n, _)| *n == name)
            .filter_map(|(_, v)| v.as_deref())
            .collect()
    }

    /// True when the flag appears at all.
    pub fn has(&self, name: &str) -> bool {
        self.values.iter().any(|(n, _)| *n == name)
    }

    /// A boolean flag's last setting: bare → `Some(true)`, `on|true|1|yes` → true,
    /// `off|false|0|no` → false, other words (`auto`) → `None` along with an absent flag.
    pub fn bool(&self, name: &str) -> Option<bool> {
        let (_, v) = self.values.iter().rev().find(|(n, _)| *n == name)?;
        match v.as_deref() {
            None => Some(true),
            Some(s) => parse_bool_word(s),
        }
    }
}

fn parse_bool_word(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "on" | "true" | "1" | "yes" | "enabled" => Some(true),
        "off" | "false" | "0" | "no" | "disabled" => Some(false),
        _ => None,
    }
}

fn is_bool_word(s: &str) -> bool {
    parse_bool_word(s).is_some() || s.eq_ignore_ascii_case("auto")
}

/// Reads flags against a table of known ones.
#[derive(Debug, Clone, Copy)]
pub struct FlagReader<'a> {
    pub flags: &'a [Flag],
    /// `--max_model_len` means `--max-model-len` (Python argparse front ends such as vLLM's)
    pub underscores_as_dashes: bool,
}

impl<'a> FlagReader<'a> {
    pub fn new(flags: &'a [Flag]) -> FlagReader<'a> {
        FlagReader {
            flags,
            underscores_as_dashes: false,
        }
    }

    /// Treat `_` in long flag names as `-`.
    pub fn underscores_as_dashes(mut self) -> FlagReader<'a> {
        self.underscores_as_dashes = true;
        self
    }

    fn lookup(&self, spelled: &str) -> Option<&'a Flag> {
        let normal;
        let spelled = if self.underscores_as_dashes && spelled.starts_with("--") {
            normal = format!("--{}", spelled[2..].replace('_', "-"));
            normal.as_str()
        } else {
            spelled
        };
        self.flags
            .iter()
            .find(|f| f.name == spelled || f.aliases.contains(&spelled))
    }

    /// Read `args`. Errors only when a value flag ends the command without its value.
    pub fn read<S: AsRef<str>>(&self, args: &[S]) -> Result<Flags, EngineError> {
        let mut out = Flags::default();
        let mut i = 0;
        let mut only_positionals = false;
        while i < args.len() {
            let word = args[i].as_ref();
            i += 1;
            if only_positionals || !word.starts_with('-') || word == "-" || is_number(word) {
                out.positionals.push(word.to_string());
                continue;
            }
            if word == "--" {
                only_positionals = true;
                continue;
            }
            let (spelled, inline) = match word.split_once('=') {
                Some((f, v)) => (f, Some(v.to_string())),
                None => (word, None),
            };
            if let Some(flag) = self.lookup(spelled) {
                match flag.arity {
                    Arity::Value => {
                        let value = match inline {
                            Some(v) => v,
                            None => {
                                let v = args.get(i).ok_or_else(|| EngineError::MissingValue {
                                    flag: spelled.to_string(),
                                })?;
                                i += 1;
                                v.as_ref().to_string()
                            }
                        };
                        out.values.push((flag.name, Some(value)));
                    }
                    Arity::Bool => {
                        let value = match inline {
                            Some(v) => Some(v),
                            None => match args.get(i).map(|s| s.as_ref()) {
                                Some(next) if is_bool_word(next) => {
                                    i += 1;
                                    Some(next.to_string())
                                }
                                _ => None,
                            },
                        };
                        out.values.push((flag.name, value));
                    }
                }
                continue;
            }
            // `--no-NAME` negates a known boolean `--NAME`
            if let Some(stem) = spelled
                .strip_prefix("--no-")
                .or(spelled.strip_prefix("--no_"))
            {
                if let Some(flag) = self.lookup(&format!("--{stem}")) {
                    if flag.arity == Arity::Bool {
                        out.values.push((flag.name, Some("false".to_string())));
                        continue;
                    }
                }
            }
            // unknown: assume it takes the next word as its value when that is not a flag
            let mut shown = word.to_string();
            if inline.is_none() {
                if let Some(next) = args.get(i).map(|s| s.as_ref()) {
                    if !next.starts_with('-') || is_number(next) {
                        shown = format!("{word} {next}");
                        i += 1;
                    }
                }
            }
            out.unknown.push(shown);
        }
        Ok(out)
    }
}

fn is_number(word: &str) -> bool {
    word.parse::<f64>().is_ok()
}
