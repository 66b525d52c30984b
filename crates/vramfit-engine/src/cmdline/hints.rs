//! What a pasted command says about the machine and the engine release besides its flags:
//! the version in a container image tag (`vllm/vllm-openai:v0.10.1`, `lmsysorg/sglang:v0.5.2-cu126`,
//! `ghcr.io/ggml-org/llama.cpp:server-cuda-b5274`, `ollama/ollama:0.12.3`), a
//! `pip install vllm==0.10.1` line pasted above the command, and `sysctl iogpu.wired_limit_mb=N`
//! (the macOS GPU working-set override).

use super::EngineKind;
use crate::error::EngineError;

/// An engine release named in the pasted text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionHint {
    pub engine: EngineKind,
    /// as the engine's `--engine-version` takes it: `0.10.1`, `b5274`
    pub version: String,
    /// where it was read (`image vllm/vllm-openai:v0.10.1`, `pip install vllm==0.10.1`)
    pub source: String,
}

/// Everything read from the pasted text around the command itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hints {
    pub versions: Vec<VersionHint>,
    /// `sysctl iogpu.wired_limit_mb=N`: the GPU working-set limit on Apple Silicon, MiB
    pub wired_limit_mb: Option<u64>,
    /// a setup line that cannot be read (`sysctl iogpu.wired_limit_mb=lots`), or an engine image
    /// whose tag names no release ([`from_image`]'s error; not an error when the release is given
    /// another way, `--engine-version`)
    pub error: Option<String>,
    pub image_error: Option<String>,
}

impl Hints {
    /// The release named for `engine`, the last one written winning.
    pub fn version_for(&self, engine: EngineKind) -> Option<&VersionHint> {
        self.versions.iter().rev().find(|v| v.engine == engine)
    }
}

/// `X.Y[.Z]` with an optional `v`, and what may follow a release number: `.postN`, `rcN`,
/// `-cu126`, `+cu128` (`0.10.1.post1`, `v0.11.0rc1`, `v0.5.2-cu126` → `0.10.1`, `0.11.0`, `0.5.2`).
fn release(tag: &str) -> Option<String> {
    let t = tag.strip_prefix('v').unwrap_or(tag);
    let core = t.split(['-', '+']).next().unwrap_or(t);
    let mut nums: Vec<&str> = Vec::new();
    for part in core.split('.') {
        let digits = part.len() - part.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let (num, rest) = part.split_at(digits);
        if num.is_empty() {
            if nums.len() >= 2 && part.starts_with("post") {
                break;
            }
            return None;
        }
        nums.push(num);
        if !rest.is_empty() {
            if !["rc", "a", "b", "dev", "post"]
                .iter()
                .any(|p| rest.starts_with(p))
            {
                return None;
            }
            break;
        }
        if nums.len() == 3 {
            break;
        }
    }
    (nums.len() >= 2).then(|| nums.join("."))
}

/// Tags that name no release: the image's current build.
const MOVING_TAGS: &[&str] = &[
    "latest", "nightly", "dev", "main", "master", "stable", "rocm", "cuda", "cpu", "server",
    "full", "light", "vulkan", "musa", "intel", "edge",
];

fn is_moving(tag: &str) -> bool {
    tag.split(['-', '_'])
        .all(|p| MOVING_TAGS.contains(&p) || p.starts_with("cu") || p.starts_with("rocm"))
}

/// The engine release an image reference names; Ok(None) for a moving tag (`latest`) or no tag;
/// an error for a tag of a known engine image that names no release.
pub fn from_image(image: &str) -> Result<Option<VersionHint>, EngineError> {
    let lower = image.to_ascii_lowercase();
    // registry/org/name[:tag][@digest]
    let no_digest = lower.split('@').next().unwrap_or(&lower);
    let (name, tag) = match no_digest.rsplit_once(':') {
        Some((n, t)) if !t.contains('/') => (n, Some(t)),
        _ => (no_digest, None),
    };
    let engine = if name.contains("vllm") {
        EngineKind::Vllm
    } else if name.contains("sglang") {
        EngineKind::Sglang
    } else if name.contains("ollama") {
        EngineKind::Ollama
    } else if name.contains("llama.cpp") || name.contains("llama-cpp") {
        EngineKind::LlamaCpp
    } else {
        return Ok(None);
    };
    let Some(tag) = tag else { return Ok(None) };
    let hint = |version: String| {
        Ok(Some(VersionHint {
            engine,
            version,
            source: format!("image {image}"),
        }))
    };
    if engine == EngineKind::LlamaCpp {
        // ggml-org images: server-cuda-b5274, full-b6000, light-vulkan-b7000, b5274
        if let Some(b) = tag.split('-').find(|p| {
            p.len() > 1 && p.starts_with('b') && p[1..].chars().all(|c| c.is_ascii_digit())
        }) {
            return hint(b.to_string());
        }
        if is_moving(tag) {
            return Ok(None);
        }
    } else {
        if let Some(v) = release(tag) {
            return hint(v);
        }
        if is_moving(tag) {
            return Ok(None);
        }
    }
    let example = match engine {
        EngineKind::Vllm => "vllm/vllm-openai:v0.10.1",
        EngineKind::Sglang => "lmsysorg/sglang:v0.5.2-cu126",
        EngineKind::Ollama => "ollama/ollama:0.12.3",
        _ => "ghcr.io/ggml-org/llama.cpp:server-cuda-b5274",
    };
    Err(EngineError::bad_value(
        "image tag",
        image,
        &format!(
            "a {} image tag that names a release, such as {example}, or pass --engine-version",
            engine.name()
        ),
    ))
}

/// `pip install ... vllm==0.10.1` (also `uv pip install`, `sglang[all]==0.5.2`, quoted).
fn from_pip(words: &[String]) -> Option<VersionHint> {
    let i = words.iter().position(|w| w == "install")?;
    if !words[..i]
        .iter()
        .any(|w| w.ends_with("pip") || w.ends_with("pip3"))
    {
        return None;
    }
    words[i + 1..].iter().rev().find_map(|w| {
        let (name, v) = w.split_once("==")?;
        let base = name.split('[').next().unwrap_or(name).to_ascii_lowercase();
        let engine = match base.as_str() {
            "vllm" => EngineKind::Vllm,
            "sglang" => EngineKind::Sglang,
            _ => return None,
        };
        Some(VersionHint {
            engine,
            version: release(v)?,
            source: format!("pip install {w}"),
        })
    })
}

/// `sysctl iogpu.wired_limit_mb=N` (with or without sudo / -w): Some(Ok(N)), Some(Ok(0)) for
/// macOS's default, Some(Err) for a value that is not a number of MiB.
fn from_sysctl(words: &[String]) -> Option<Result<u64, String>> {
    if !words.iter().any(|w| w.ends_with("sysctl")) {
        return None;
    }
    words.iter().find_map(|w| {
        let v = w.strip_prefix("iogpu.wired_limit_mb=")?;
        Some(v.trim().parse::<u64>().map_err(|_| {
            format!("sysctl iogpu.wired_limit_mb={v:?} is not understood: write the GPU limit in MiB, e.g. iogpu.wired_limit_mb=90000 (0 = the macOS default)")
        }))
    })
}

/// Split pasted text into statements (lines, `&&`, `;`), read the setup lines into hints, and
/// return the rest as written: statements that start something (`ollama serve & ollama run M`)
/// stay together; `pip install`, `sysctl`, `cd`, `export`, ... lines go.
pub fn split_statements(words: Vec<String>) -> (Vec<String>, Hints) {
    let mut hints = Hints::default();
    // (words of the statement, the words as written including its separator)
    let mut statements: Vec<(Vec<String>, Vec<String>)> = vec![(Vec::new(), Vec::new())];
    for w in words {
        let Some((cur, orig)) = statements.last_mut() else {
            break;
        };
        if w == "\n" {
            statements.push((Vec::new(), Vec::new()));
        } else if matches!(w.as_str(), "&&" | ";" | "||") {
            orig.push(w);
            statements.push((Vec::new(), Vec::new()));
        } else if let Some(stripped) = w.strip_suffix(';').filter(|s| !s.is_empty()) {
            cur.push(stripped.to_string());
            orig.push(w);
            statements.push((Vec::new(), Vec::new()));
        } else {
            cur.push(w.clone());
            orig.push(w);
        }
    }
    let statements: Vec<_> = statements
        .into_iter()
        .filter(|(s, _)| !s.is_empty())
        .collect();
    let n = statements.len();
    let mut command = Vec::new();
    let mut daemon_env: Vec<String> = Vec::new();
    for (k, (s, orig)) in statements.into_iter().enumerate() {
        if k + 1 < n {
            // `docker run ... ollama/ollama:0.12.3 && docker exec ... ollama run M`: the first
            // starts the engine's server (its image and -e settings count), the second is the command
            if let Some((image, env)) = daemon_start(&s) {
                match from_image(&image) {
                    Ok(v) => hints.versions.extend(v),
                    Err(e) => hints.image_error = Some(e.to_string()),
                }
                daemon_env.extend(env.into_iter().map(|(a, b)| format!("{a}={b}")));
                continue;
            }
        }
        if let Some(v) = from_pip(&s) {
            hints.versions.push(v);
        } else if let Some(mb) = from_sysctl(&s) {
            match mb {
                Ok(0) => hints.wired_limit_mb = None,
                Ok(mb) => hints.wired_limit_mb = Some(mb),
                Err(e) => hints.error = Some(e),
            }
        } else if !is_setup(&s) {
            command.extend(orig);
        }
    }
    // a trailing separator of the last kept statement ends nothing
    if command
        .last()
        .is_some_and(|w| matches!(w.as_str(), "&&" | ";" | "||"))
    {
        command.pop();
    }
    daemon_env.extend(command);
    (daemon_env, hints)
}

/// `docker run [opts] IMAGE` of an engine image with nothing after the image (a server started
/// in the background): the image and its `-e` assignments.
fn daemon_start(s: &[String]) -> Option<(String, Vec<(String, String)>)> {
    let base = s[0].rsplit('/').next().unwrap_or(&s[0]);
    if !matches!(base, "docker" | "podman") || s.get(1).map(String::as_str) != Some("run") {
        return None;
    }
    let mut env = Vec::new();
    let (program, args, engine) = super::split_docker(&s[0], &s[2..], &mut env)?;
    engine?;
    if !(args.is_empty() || args == ["serve"]) {
        return None;
    }
    let image = program.split_whitespace().nth(2)?.to_string();
    Some((image, env))
}

/// Lines people paste above a command that start nothing: installs, exports without a
/// command, `cd`, `source`, `sysctl`.
fn is_setup(s: &[String]) -> bool {
    let first = s[0].as_str();
    matches!(
        first,
        "cd" | "source"
            | "."
            | "sudo"
            | "mkdir"
            | "git"
            | "huggingface-cli"
            | "hf"
            | "conda"
            | "export"
    ) || s.iter().take(3).any(|w| w == "install")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_tags() {
        let v = |i: &str| from_image(i).unwrap().map(|h| h.version);
        assert_eq!(v("vllm/vllm-openai:v0.10.1"), Some("0.10.1".into()));
        assert_eq!(v("vllm/vllm-openai:v0.10.1.post1"), Some("0.10.1".into()));
        assert_eq!(v("vllm/vllm-openai:v0.11.0rc1"), Some("0.11.0".into()));
        assert_eq!(v("vllm/vllm-openai:v0.9.2-cu126"), Some("0.9.2".into()));
        assert!(from_image("vllm/vllm-openai:v0.x").is_err());
        assert_eq!(v("vllm/vllm-openai:latest"), None);
        assert_eq!(v("vllm/vllm-openai"), None);
        assert_eq!(v("lmsysorg/sglang:v0.5.2-cu126"), Some("0.5.2".into()));
        assert_eq!(v("lmsysorg/sglang:latest"), None);
        assert_eq!(
            v("ghcr.io/ggml-org/llama.cpp:server-cuda-b5274"),
            Some("b5274".into())
        );
        assert_eq!(v("ghcr.io/ggml-org/llama.cpp:server-cuda"), None);
        assert_eq!(v("ollama/ollama:0.12.3"), Some("0.12.3".into()));
        assert_eq!(v("ollama/ollama:0.12.3-rocm"), Some("0.12.3".into()));
        assert_eq!(v("ollama/ollama:rocm"), None);
        assert_eq!(v("docker.io/library/postgres:16"), None);
        let e = from_image("vllm/vllm-openai:banana")
            .unwrap_err()
            .to_string();
        assert!(e.contains("banana") && e.contains("v0.10.1"), "{e}");
    }

    #[test]
    fn pasted_setup_lines() {
        let w = |s: &str| super::super::split_words(s, true).unwrap();
        let (cmd, h) = split_statements(w("pip install vllm==0.9.2 && vllm serve Qwen/Qwen3-8B"));
        assert_eq!(cmd, ["vllm", "serve", "Qwen/Qwen3-8B"]);
        assert_eq!(h.version_for(EngineKind::Vllm).unwrap().version, "0.9.2");
        let (cmd, h) = split_statements(w(
            "sudo sysctl iogpu.wired_limit_mb=90000; llama-server -m x.gguf",
        ));
        assert_eq!(cmd, ["llama-server", "-m", "x.gguf"]);
        assert_eq!(h.wired_limit_mb, Some(90000));
        let (cmd, h) = split_statements(w("uv pip install \"sglang[all]==0.4.6.post1\"\npython -m sglang.launch_server --model-path M"));
        assert_eq!(cmd[0], "python");
        assert_eq!(h.version_for(EngineKind::Sglang).unwrap().version, "0.4.6");
    }
}
