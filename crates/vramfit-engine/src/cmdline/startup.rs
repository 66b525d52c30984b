//! The engine release a startup log states about itself, for `check --from-log LOG`: the log is
//! the deployment's own word on which release ran, so it selects the release modelled, and a
//! different release named by the pasted command (image tag, `pip install` line) is a conflict
//! to report.
//!
//! The lines read, each as the engine prints it:
//! - vLLM: `vLLM API server version 0.10.1.1` (vllm/entrypoints/openai/api_server.py, every
//!   release with the OpenAI server), `vLLM version 0.8.5` (the `log_version_and_model`
//!   helper's line), `Initializing a V1 LLM engine (v0.9.2) with config`
//!   (vllm/v1/engine/core.py) and `Initializing an LLM engine (v0.6.3) with config`
//!   (vllm/engine/llm_engine.py, V0);
//! - llama.cpp: `build: 5274 (d541533a) with cc ...` (common/common.cpp, printed by every tool
//!   at start) and `version: 5274 (d541533a)` (the `--version` output);
//! - Ollama: `msg="Listening on 127.0.0.1:11434 (version 0.16.1)"` (server/routes.go `Serve`;
//!   0.1.x without `msg="`); a source build says `version 0.0.0`, which names no release.
//!
//! SGLang's launch log prints no release line (its `server_args=ServerArgs(...)` dump carries
//! none); for it the release comes from the command or `--engine-version`.

use super::EngineKind;

/// The release a log states, with the line it was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRelease {
    pub engine: EngineKind,
    /// as `--engine-version` takes it: `0.10.1.1`, `b5274`, `0.12.6`
    pub version: String,
    /// the log line, trimmed (at most 160 characters)
    pub line: String,
}

/// The release the log states; an error when it states two different ones (two runs in one
/// file), naming both.
pub fn release_in_log(text: &str) -> Result<Option<LogRelease>, String> {
    let mut found: Option<LogRelease> = None;
    for line in text.lines() {
        let Some((engine, version)) = read_line(line) else {
            continue;
        };
        // Ollama 0.30+ runs llama-server and relays its output: its `build:` line belongs to
        // the Ollama release, which is the one that names the deployment
        let ollama_runner =
            |a: EngineKind, b: EngineKind| a == EngineKind::Ollama && b == EngineKind::LlamaCpp;
        match &found {
            Some(f) if ollama_runner(f.engine, engine) => {}
            Some(f) if ollama_runner(engine, f.engine) => {
                found = Some(LogRelease {
                    engine,
                    version,
                    line: clip(line.trim()),
                })
            }
            None => {
                found = Some(LogRelease {
                    engine,
                    version,
                    line: clip(line.trim()),
                })
            }
            Some(f) if f.engine != engine || !same_release(&f.version, &version) => {
                return Err(format!(
                    "the log holds two engine releases ({} {} and {} {}): give the log of one run",
                    f.engine.name(),
                    f.version,
                    engine.name(),
                    version
                ));
            }
            Some(_) => {}
        }
    }
    Ok(found)
}

/// True when two release strings name the same release: the first three numbers agree
/// (`0.10.1.1` and `0.10.1` are one release line; `b5274` and `5274` one build).
pub fn same_release(a: &str, b: &str) -> bool {
    let (x, y) = (release_numbers(a), release_numbers(b));
    !x.is_empty() && x == y
}

/// The first three numbers of a release string (`v0.10.1.1` → [0, 10, 1], `b5274` → [5274]).
pub fn release_numbers(v: &str) -> Vec<u64> {
    v.trim_start_matches(['v', 'V', 'b'])
        .split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty())
        .take(3)
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// An Ollama source build reports `0.0.0`: no release.
pub fn is_dev_build(r: &LogRelease) -> bool {
    r.engine == EngineKind::Ollama && r.version.split('.').all(|p| p == "0")
}

fn clip(s: &str) -> String {
    match s.char_indices().nth(160) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// A release token: digits and dots, with an optional leading `v` and what PEP 440 / git
/// describe append (`rc1`, `.post1`, `+cu128`, `.dev12+g1234`).
fn token(s: &str) -> Option<String> {
    let t: String = s
        .trim_start()
        .trim_start_matches(['v', 'V'])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-' | '_'))
        .collect();
    let t = t.trim_end_matches(['.', '-', '_']).to_string();
    (t.starts_with(|c: char| c.is_ascii_digit()) && t.contains('.')).then_some(t)
}

fn after<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    line.find(marker).map(|i| &line[i + marker.len()..])
}

fn read_line(line: &str) -> Option<(EngineKind, String)> {
    if let Some(rest) =
        after(line, "vLLM API server version ").or_else(|| after(line, "vLLM version "))
    {
        return token(rest).map(|v| (EngineKind::Vllm, v));
    }
    for m in [
        "Initializing a V1 LLM engine (",
        "Initializing an LLM engine (",
    ] {
        if let Some(rest) = after(line, m) {
            return token(rest).map(|v| (EngineKind::Vllm, v));
        }
    }
    // 0.1.x logged `routes.go:777: Listening on ...` without slog's `msg="`
    if let Some(rest) = after(line, "Listening on ") {
        let v = after(rest, " (version ")?;
        return token(v).map(|v| (EngineKind::Ollama, v));
    }
    // llama.cpp: "build: 5274 (d541533a) with ..." / "version: 5274 (d541533a)"
    for m in ["build: ", "version: "] {
        if let Some(rest) = after(line, m) {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if !digits.is_empty() && rest[digits.len()..].starts_with(" (") {
                return Some((EngineKind::LlamaCpp, format!("b{digits}")));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_engine_line_gives_its_release() {
        let cases = [
            // vLLM: the first from a real log (fixtures/logs/vllm-0.10.1-qwen2-7b-tp2-a100.log)
            ("(APIServer pid=3761) INFO 09-03 02:11:14 [api_server.py:1805] vLLM API server version 0.10.1.1", EngineKind::Vllm, "0.10.1.1"),
            ("INFO 05-01 10:00:00 [__init__.py:239] vLLM version 0.8.5.post1", EngineKind::Vllm, "0.8.5.post1"),
            ("INFO 07-10 12:00:01 [core.py:69] Initializing a V1 LLM engine (v0.9.2) with config: model='Qwen/Qwen3-8B'", EngineKind::Vllm, "0.9.2"),
            ("INFO 10-20 08:00:00 llm_engine.py:237] Initializing an LLM engine (v0.6.3.post1) with config: model='x'", EngineKind::Vllm, "0.6.3.post1"),
            // llama.cpp: the first three from real logs (the dev set's raw excerpts)
            ("build: 5274 (d541533a) with cc (GCC) 14.2.1 20250128 for x86_64-pc-linux-gnu", EngineKind::LlamaCpp, "b5274"),
            ("0.00.005.570 I build: 4010 (e991e312) with cc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0 for x86_64-linux-gnu", EngineKind::LlamaCpp, "b4010"),
            ("> build: 5269 (1d36b367) with cc (GCC) 14.2.1 20250110 (Red Hat 14.2.1-7) for x86_64-redhat-linux", EngineKind::LlamaCpp, "b5269"),
            ("version: 6895 (4341dc8bc)", EngineKind::LlamaCpp, "b6895"),
            // real Ollama server logs (code-index ids 46549402413, 66475589642, 30210746431, 53873200609)
            ("time=2026-02-21T14:13:56.331-06:00 level=INFO source=routes.go:1689 msg=\"Listening on 127.0.0.1:11434 (version 0.16.1)\"", EngineKind::Ollama, "0.16.1"),
            ("time=2026-01-12T23:43:24.203Z level=INFO source=routes.go:999 msg=\"Listening on 127.0.0.1:11434 (version 0.1.24)\"", EngineKind::Ollama, "0.1.24"),
            ("2023/11/19 20:55:16 routes.go:777: Listening on 127.0.0.1:11434 (version 0.1.10)", EngineKind::Ollama, "0.1.10"),
            ("Listening on [::]:11434 (version 0.19.0-rc0)", EngineKind::Ollama, "0.19.0-rc0"),
        ];
        for (line, engine, version) in cases {
            let r = release_in_log(line)
                .unwrap()
                .unwrap_or_else(|| panic!("{line}"));
            assert_eq!((r.engine, r.version.as_str()), (engine, version), "{line}");
        }
    }

    #[test]
    fn lines_that_only_look_alike_give_nothing() {
        for line in [
            "llama_model_loader: - kv   2: general.build str = 5274",
            "INFO: the build: step finished",
            "[2026-03-20 16:15:23] INFO server_args.py:2222: Attention backend not specified. Use fa3 backend by default.",
            "Transformers version 5.3.0 is used for model type qwen2.",
            "msg=\"Listening on\" address=[::]:9090",
        ] {
            assert_eq!(release_in_log(line), Ok(None), "{line}");
        }
    }

    #[test]
    fn two_releases_in_one_log_are_refused_and_a_repeat_is_not() {
        let two = "vLLM API server version 0.10.1.1\n...\nvLLM API server version 0.11.0\n";
        let e = release_in_log(two).unwrap_err();
        assert!(e.contains("0.10.1.1") && e.contains("0.11.0"), "{e}");
        let same = "vLLM API server version 0.10.1.1\nInitializing a V1 LLM engine (v0.10.1.1) with config\n";
        assert_eq!(release_in_log(same).unwrap().unwrap().version, "0.10.1.1");
    }

    #[test]
    fn an_ollama_log_with_its_llama_server_lines_is_ollamas() {
        let log = "time=2026-02-21T14:13:56.331-06:00 level=INFO source=routes.go:1689 msg=\"Listening on 127.0.0.1:11434 (version 0.33.0)\"\n\
                   build: 9725 (0c1e57098) with cc (GCC) 14.2.1 for x86_64-linux-gnu\n";
        let r = release_in_log(log).unwrap().unwrap();
        assert_eq!(
            (r.engine, r.version.as_str()),
            (EngineKind::Ollama, "0.33.0")
        );
        let reversed =
            "build: 9725 (0c1e57098) with cc\nmsg=\"Listening on [::]:11434 (version 0.33.0)\"\n";
        assert_eq!(
            release_in_log(reversed).unwrap().unwrap().engine,
            EngineKind::Ollama
        );
    }

    #[test]
    fn releases_compare_by_their_first_three_numbers() {
        assert!(same_release("0.10.1.1", "0.10.1"));
        assert!(same_release("b5274", "5274"));
        assert!(!same_release("0.10.1", "0.11.0"));
        assert!(!same_release("b5274", "b6000"));
        let dev = release_in_log("msg=\"Listening on [::]:11434 (version 0.0.0)\"")
            .unwrap()
            .unwrap();
        assert!(is_dev_build(&dev));
    }
}
