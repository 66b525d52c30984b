//! A pasted serving command, as every engine module reads it.
//!
//! [`Command::parse`] takes the words given after `vramfit check --` (or one string with spaces,
//! which is split with shell quoting rules), peels off leading `VAR=value` environment
//! assignments and launcher wrappers (`env`, `uv run`, `python -m`, `docker run IMAGE`), and
//! names the engine. [`FlagReader`] then reads the engine's flags from [`Command::args`]:
//! `--flag value`, `--flag=value`, short aliases, repeated flags, optional-value booleans
//! (`-fa`, `-fa on`) and `--no-x` negations, and hands back what it did not recognise.
//!
//! ```
//! use vramfit_engine::cmdline::{Command, EngineKind};
//! let cmd = Command::parse(&["CUDA_VISIBLE_DEVICES=0,1 vllm serve Qwen/Qwen3-8B -tp 2"]).unwrap();
//! assert_eq!(cmd.engine, Some(EngineKind::Vllm));
//! assert_eq!(cmd.env_var("CUDA_VISIBLE_DEVICES"), Some("0,1"));
//! assert_eq!(cmd.args, ["serve", "Qwen/Qwen3-8B", "-tp", "2"]);
//! ```

mod flags;
pub mod hints;
pub mod startup;

use crate::error::EngineError;
pub use flags::{Arity, Flag, FlagReader, Flags};
pub use hints::{Hints, VersionHint};

/// The serving engines vramfit models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EngineKind {
    Vllm,
    LlamaCpp,
    Ollama,
    Sglang,
    Transformers,
}

impl EngineKind {
    /// The name used in JSON and messages (`vllm`, `llama.cpp`, `ollama`, `sglang`, `transformers`).
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Vllm => "vllm",
            EngineKind::LlamaCpp => "llama.cpp",
            EngineKind::Ollama => "ollama",
            EngineKind::Sglang => "sglang",
            EngineKind::Transformers => "transformers",
        }
    }
}

/// A serving command split into its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// leading `VAR=value` assignments (and `docker run -e VAR=value`), in order
    pub env: Vec<(String, String)>,
    /// the engine program as written (`vllm`, `./build/bin/llama-server`,
    /// `python3 -m vllm.entrypoints.openai.api_server`, `docker run vllm/vllm-openai:v0.9.0`)
    pub program: String,
    /// the words after the program: the engine's subcommand (`serve`, `run`) and its flags
    pub args: Vec<String>,
    /// the engine, when the program names one
    pub engine: Option<EngineKind>,
    /// engine releases and machine settings read around the command (image tag, `pip install`
    /// lines, `sysctl iogpu.wired_limit_mb`)
    pub hints: Hints,
}

impl Command {
    /// Split a pasted command. `argv` is the list given after `--`; a single element that holds
    /// spaces is split with shell quoting rules first.
    pub fn parse<S: AsRef<str>>(argv: &[S]) -> Result<Command, EngineError> {
        let mut words: Vec<String> = Vec::new();
        let mut hints = Hints::default();
        if argv.len() == 1 && argv[0].as_ref().trim().contains(char::is_whitespace) {
            // pasted text: setup lines (`pip install vllm==X`, `sysctl ...`) around the command
            let (w, h) = hints::split_statements(split_words(argv[0].as_ref(), true)?);
            words = w;
            hints = h;
        } else {
            words.extend(argv.iter().map(|s| s.as_ref().to_string()));
        }
        let mut env = Vec::new();
        let mut rest: &[String] = &words;
        loop {
            match rest.first() {
                Some(w) if env_assignment(w).is_some() => {
                    env.push(env_assignment(w).unwrap_or_default());
                    rest = &rest[1..];
                }
                // launcher prefixes that only run the next word
                Some(w) if matches!(w.as_str(), "env" | "exec" | "nohup" | "time" | "command") => {
                    rest = &rest[1..];
                }
                _ => break,
            }
        }
        if rest.is_empty() {
            return Err(EngineError::EmptyCommand);
        }
        let (program, args, engine) = split_program(rest, &mut env);
        if let Some(image) = docker_image(&program) {
            match hints::from_image(image) {
                Ok(v) => hints.versions.extend(v),
                Err(e) => hints.image_error = Some(e.to_string()),
            }
        }
        Ok(Command {
            env,
            program,
            args,
            engine,
            hints,
        })
    }

    /// The value of an environment assignment in the command (the last one wins).
    pub fn env_var(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The image of a `docker run IMAGE` / `podman run IMAGE` program.
fn docker_image(program: &str) -> Option<&str> {
    let mut w = program.split_whitespace();
    let first = basename(w.next()?);
    (matches!(first, "docker" | "podman") && w.next() == Some("run")).then(|| w.next())?
}

/// `NAME=value` where NAME is a shell variable name.
fn env_assignment(word: &str) -> Option<(String, String)> {
    let (name, value) = word.split_once('=')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    if !(first.is_ascii_alphabetic() || first == '_')
        || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return None;
    }
    Some((name.to_string(), value.to_string()))
}

/// The file name of a program path (`./build/bin/llama-server` -> `llama-server`), without `.exe`.
fn basename(program: &str) -> &str {
    let base = program.rsplit(['/', '\\']).next().unwrap_or(program);
    base.strip_suffix(".exe").unwrap_or(base)
}

/// The engine a bare program name belongs to.
fn engine_of_program(base: &str) -> Option<EngineKind> {
    match base {
        "vllm" => Some(EngineKind::Vllm),
        "ollama" => Some(EngineKind::Ollama),
        "transformers" => Some(EngineKind::Transformers),
        "sglang" => Some(EngineKind::Sglang),
        b if b.starts_with("llama-") || b == "main" || b == "server" => Some(EngineKind::LlamaCpp),
        _ => None,
    }
}

/// The engine a `python -m MODULE` names.
fn engine_of_module(module: &str) -> Option<EngineKind> {
    let top = module.split('.').next().unwrap_or(module);
    match top {
        "vllm" => Some(EngineKind::Vllm),
        "sglang" => Some(EngineKind::Sglang),
        "transformers" => Some(EngineKind::Transformers),
        "llama_cpp" => Some(EngineKind::LlamaCpp),
        _ => None,
    }
}

fn is_python(base: &str) -> bool {
    base == "python"
        || base
            .strip_prefix("python")
            .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// Find the program in `words` (after environment assignments), unwrapping launchers.
fn split_program(
    words: &[String],
    env: &mut Vec<(String, String)>,
) -> (String, Vec<String>, Option<EngineKind>) {
    let first = words[0].as_str();
    let base = basename(first);
    let rest = &words[1..];
    if is_python(base) {
        // python [-u] [-X opt] -m MODULE args...
        let mut i = 0;
        while i < rest.len() {
            match rest[i].as_str() {
                "-m" if i + 1 < rest.len() => {
                    let module = &rest[i + 1];
                    let program = words[..=i + 2].join(" ");
                    return (program, rest[i + 2..].to_vec(), engine_of_module(module));
                }
                "-X" | "-W" => i += 2,
                w if w.starts_with('-') => i += 1,
                // python some_script.py args
                _ => break,
            }
        }
        return (first.to_string(), rest.to_vec(), None);
    }
    if (base == "uv" || base == "pipx" || base == "poetry" || base == "conda")
        && rest.first().map(String::as_str) == Some("run")
    {
        // uv run [--with X] PROGRAM args (flags of the launcher before the program are skipped)
        let mut i = 1;
        while i < rest.len() && rest[i].starts_with('-') {
            let takes_value = !rest[i].contains('=')
                && matches!(
                    rest[i].as_str(),
                    "--with" | "--python" | "-p" | "--project" | "-n" | "--name" | "--env-file"
                );
            i += if takes_value { 2 } else { 1 };
        }
        if i < rest.len() {
            let (program, args, engine) = split_program(&rest[i..], env);
            return (format!("{} run {}", first, program), args, engine);
        }
    }
    if (base == "docker" || base == "podman") && rest.first().map(String::as_str) == Some("exec") {
        // docker exec [-it] [-e VAR=value] CONTAINER PROGRAM args: the program inside
        let mut i = 1;
        while i < rest.len() && rest[i].starts_with('-') {
            let valued = matches!(
                rest[i].as_str(),
                "-e" | "--env" | "-u" | "--user" | "-w" | "--workdir"
            );
            if valued {
                if let Some(a) = rest.get(i + 1).and_then(|v| env_assignment(v)) {
                    env.push(a);
                }
            }
            i += if valued { 2 } else { 1 };
        }
        if i + 1 < rest.len() {
            let (program, args, engine) = split_program(&rest[i + 1..], env);
            return (format!("{first} exec {} {program}", rest[i]), args, engine);
        }
    }
    if (base == "docker" || base == "podman") && rest.first().map(String::as_str) == Some("run") {
        if let Some(split) = split_docker(first, &rest[1..], env) {
            return split;
        }
    }
    (first.to_string(), rest.to_vec(), engine_of_program(base))
}

/// `docker run [opts] IMAGE [args]`: the image names the engine; `-e VAR=value` joins `env`.
fn split_docker(
    first: &str,
    rest: &[String],
    env: &mut Vec<(String, String)>,
) -> Option<(String, Vec<String>, Option<EngineKind>)> {
    // docker run options that take a separate value
    const VALUED: &[&str] = &[
        "-e",
        "--env",
        "-p",
        "--publish",
        "-v",
        "--volume",
        "--name",
        "--gpus",
        "--ipc",
        "--shm-size",
        "--runtime",
        "--network",
        "--net",
        "--entrypoint",
        "-w",
        "--workdir",
        "--mount",
        "--device",
        "-u",
        "--user",
        "--env-file",
        "--platform",
        "--cpus",
        "-m",
        "--memory",
        "--ulimit",
        "--security-opt",
        "--cap-add",
        "-h",
        "--hostname",
        "--label",
        "-l",
        "--restart",
        "--pull",
        "--add-host",
        "--log-driver",
        "--log-opt",
        "--pid",
        "--tmpfs",
    ];
    let mut i = 0;
    while i < rest.len() {
        let w = rest[i].as_str();
        if !w.starts_with('-') {
            break;
        }
        let (flag, inline) = match w.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (w, None),
        };
        let value = if inline.is_none() && VALUED.contains(&flag) {
            i += 1;
            rest.get(i).cloned()
        } else {
            inline
        };
        if matches!(flag, "-e" | "--env") {
            if let Some(a) = value.as_deref().and_then(env_assignment) {
                env.push(a);
            }
        }
        i += 1;
    }
    let image = rest.get(i)?;
    let image_name = image.to_ascii_lowercase();
    let engine = if image_name.contains("vllm") {
        Some(EngineKind::Vllm)
    } else if image_name.contains("sglang") {
        Some(EngineKind::Sglang)
    } else if image_name.contains("ollama") {
        Some(EngineKind::Ollama)
    } else if image_name.contains("llama.cpp") || image_name.contains("llama-cpp") {
        Some(EngineKind::LlamaCpp)
    } else {
        None
    };
    let mut args = rest[i + 1..].to_vec();
    // the image's entrypoint may be repeated (`vllm/vllm-openai vllm serve M`, `... llama-server -m`)
    if let Some(w) = args.first() {
        if engine_of_program(basename(w)).is_some() || is_python(basename(w)) {
            let (program, inner_args, inner) = split_program(&args, env);
            if inner.is_some() {
                return Some((format!("{first} run {image} {program}"), inner_args, inner));
            }
        }
    }
    if engine == Some(EngineKind::Vllm) && args.first().map(String::as_str) != Some("serve") {
        // vllm/vllm-openai runs the OpenAI server: its arguments are `vllm serve`'s flags
        args.insert(0, "serve".to_string());
    }
    Some((format!("{first} run {image}"), args, engine))
}

/// Split one string into words with POSIX shell quoting: single quotes keep everything,
/// double quotes keep all but `\"`, `\\`, `\$`, `` \` ``; a backslash outside quotes escapes
/// the next character, and a backslash-newline (a pasted line continuation) is dropped.
pub fn shell_split(text: &str) -> Result<Vec<String>, EngineError> {
    split_words(text, false)
}

/// [`shell_split`]; with `statements`, an unquoted newline that does not continue the line is
/// kept as a `"\n"` word (a line that starts with a flag continues the one before it).
fn split_words(text: &str, statements: bool) -> Result<Vec<String>, EngineError> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(ch) => cur.push(ch),
                        None => return Err(unterminated('\'', text)),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.peek() {
                            Some(&n @ ('"' | '\\' | '$' | '`')) => {
                                cur.push(n);
                                chars.next();
                            }
                            Some('\n') => {
                                chars.next();
                            }
                            _ => cur.push('\\'),
                        },
                        Some(ch) => cur.push(ch),
                        None => return Err(unterminated('"', text)),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some('\r') if chars.peek() == Some(&'\n') => {
                    chars.next();
                }
                Some(ch) => {
                    in_word = true;
                    cur.push(ch);
                }
                None => {}
            },
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
                if c == '\n' && statements {
                    let next = chars.clone().find(|c| !c.is_whitespace());
                    if next != Some('-') && words.last().is_some_and(|w| w != "\n") {
                        words.push("\n".into());
                    }
                }
            }
            '#' if !in_word => {
                // a comment runs to the end of the line
                for ch in chars.by_ref() {
                    if ch == '\n' {
                        break;
                    }
                }
                let next = chars.clone().find(|c| !c.is_whitespace());
                if statements && next != Some('-') && words.last().is_some_and(|w| w != "\n") {
                    words.push("\n".into());
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

fn unterminated(quote: char, text: &str) -> EngineError {
    EngineError::UnterminatedQuote {
        quote,
        text: text.chars().take(80).collect(),
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        let w = shell_split(
            r#"vllm serve 'a b' --x "c \"d\"" e\ f \
  --y 1"#,
        )
        .unwrap();
        assert_eq!(
            w,
            ["vllm", "serve", "a b", "--x", "c \"d\"", "e f", "--y", "1"]
        );
        assert!(shell_split("vllm serve 'oops").is_err());
    }

    #[test]
    fn env_names() {
        assert_eq!(
            env_assignment("A_1=x=y"),
            Some(("A_1".into(), "x=y".into()))
        );
        assert_eq!(env_assignment("--max=1"), None);
        assert_eq!(env_assignment("1A=1"), None);
    }
}
