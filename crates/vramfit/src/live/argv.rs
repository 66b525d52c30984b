//! A serving command as words to launch, and edits to its flags (`-c 8192` → `-c 6144`).

use vramfit_engine::cmdline::{Command, EngineKind};

/// The command to launch: environment assignments and the program's words.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    pub env: Vec<(String, String)>,
    pub words: Vec<String>,
    pub engine: Option<EngineKind>,
}

impl Launch {
    pub fn parse(argv: &[String]) -> Result<Launch, String> {
        let cmd = Command::parse(argv).map_err(|e| e.to_string())?;
        let mut words: Vec<String> = cmd.program.split_whitespace().map(String::from).collect();
        words.extend(cmd.args.iter().cloned());
        Ok(Launch {
            env: cmd.env,
            words,
            engine: cmd.engine,
        })
    }

    /// The command as vramfit's engine models read it.
    pub fn argv(&self) -> Vec<String> {
        self.env
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .chain(self.words.iter().cloned())
            .collect()
    }

    /// The value of the first of `names` present (`-c 4096` or `--ctx-size=4096`).
    pub fn get(&self, names: &[&str]) -> Option<String> {
        let w = &self.words;
        for (i, word) in w.iter().enumerate() {
            for n in names {
                if word == n {
                    return w.get(i + 1).cloned();
                }
                if let Some(v) = word.strip_prefix(&format!("{n}=")) {
                    return Some(v.to_string());
                }
            }
        }
        None
    }

    /// Set a flag's value: replace every occurrence of any of `names`, or append `names[0]`.
    pub fn set(&mut self, names: &[&str], value: &str) {
        let mut found = false;
        let mut i = 0;
        while i < self.words.len() {
            let word = self.words[i].clone();
            if names.contains(&word.as_str()) && i + 1 < self.words.len() {
                self.words[i + 1] = value.to_string();
                found = true;
                i += 2;
                continue;
            }
            if let Some(n) = names.iter().find(|n| word.starts_with(&format!("{n}="))) {
                self.words[i] = format!("{n}={value}");
                found = true;
            }
            i += 1;
        }
        if !found {
            self.words.push(names[0].to_string());
            self.words.push(value.to_string());
        }
    }

    /// Add a switch (`--enforce-eager`) unless present.
    pub fn switch(&mut self, name: &str) {
        if !self.words.iter().any(|w| w == name) {
            self.words.push(name.to_string());
        }
    }

    /// One line, shell-quoted where needed.
    pub fn display(&self) -> String {
        self.argv()
            .iter()
            .map(|w| {
                if w.is_empty()
                    || w.contains(|c: char| c.is_whitespace() || "'\"$`\\;&|<>()*?".contains(c))
                {
                    format!("'{}'", w.replace('\'', "'\\''"))
                } else {
                    w.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Context-length flags per engine.
pub fn ctx_flags(engine: Option<EngineKind>) -> &'static [&'static str] {
    match engine {
        Some(EngineKind::LlamaCpp) => &["-c", "--ctx-size"],
        Some(EngineKind::Sglang) => &["--context-length"],
        _ => &["--max-model-len"],
    }
}

/// Port flags per engine (all three use `--host`/`--port`).
pub const PORT: &[&str] = &["--port"];
pub const HOST: &[&str] = &["--host"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_flags() {
        let mut l = Launch::parse(&[
            "A=1".into(),
            "llama-server".into(),
            "-m".into(),
            "x.gguf".into(),
            "--ctx-size=8192".into(),
        ])
        .unwrap();
        assert_eq!(l.get(&["-c", "--ctx-size"]).as_deref(), Some("8192"));
        l.set(&["-c", "--ctx-size"], "4096");
        l.set(&["--port"], "9000");
        assert_eq!(
            l.argv().join(" "),
            "A=1 llama-server -m x.gguf --ctx-size=4096 --port 9000"
        );
        assert_eq!(l.engine, Some(EngineKind::LlamaCpp));
    }
}
