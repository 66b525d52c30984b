//! `ollama run MODEL` / `ollama serve` / `ollama create NAME -f Modelfile` with Ollama's
//! environment → [`OllamaConfig`].
//!
//! Ollama takes its memory settings from the environment of `ollama serve` (envconfig/config.go)
//! and from model options (a Modelfile's `PARAMETER` lines, or the API's `options`). A pasted
//! command has no API request, so the options are read from either:
//! - flags after the model, named like the options: `--num-ctx 8192`, `--num-gpu 20`,
//!   `--num-batch 1024` (`--num_ctx` too), or `--parameter num_ctx=8192`;
//! - a Modelfile: `--modelfile PATH` (or `ollama create NAME -f PATH`): its `FROM` names the model
//!   when the command does not, its `PARAMETER num_ctx|num_gpu|num_batch` lines set the options.
//!   Flags win over the Modelfile, as request options win over model options (server/routes.go
//!   `modelOptions`).

use crate::cmdline::{Command, EngineKind, Flag, FlagReader};
use crate::error::EngineError;

/// Everything Ollama reads that changes GPU memory.
#[derive(Debug, Clone, PartialEq)]
pub struct OllamaConfig {
    /// the model as named (`llama3.1:8b`, `hf.co/ORG/NAME-GGUF:Q4_K_M`, a GGUF path)
    pub model: String,
    /// `num_ctx` option; None: OLLAMA_CONTEXT_LENGTH, else the VRAM tier
    pub num_ctx: Option<u64>,
    /// `num_gpu` option (layers to offload); None: llama-server's `-ngl auto`
    pub num_gpu: Option<i64>,
    /// `num_batch` option; None: Ollama's automatic generation batch
    pub num_batch: Option<u64>,
    /// OLLAMA_NUM_PARALLEL (default 1)
    pub num_parallel: u64,
    /// OLLAMA_KV_CACHE_TYPE (`f16`, `q8_0`, `q4_0`); None: llama-server's f16
    pub kv_cache_type: Option<String>,
    /// OLLAMA_FLASH_ATTENTION; None: `auto` where every GPU supports it
    pub flash_attention: Option<bool>,
    /// OLLAMA_CONTEXT_LENGTH (0 = unset)
    pub context_length_env: Option<u64>,
    /// OLLAMA_GPU_OVERHEAD bytes per GPU
    pub gpu_overhead: u64,
    /// OLLAMA_SCHED_SPREAD
    pub sched_spread: bool,
    /// CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES
    pub visible_devices: Option<Vec<usize>>,
    /// `--engine-version`: Ollama release (major, minor, patch)
    pub release: Option<(u64, u64, u64)>,
    pub notes: Vec<String>,
}

const FLAGS: &[Flag] = &[
    Flag::value("--num-ctx", &[]),
    Flag::value("--num-gpu", &[]),
    Flag::value("--num-batch", &[]),
    Flag::value("--modelfile", &["-f", "--file"]),
    Flag::value("--parameter", &[]),
    Flag::value("--model", &["-m"]),
    // `ollama run` flags with no memory effect
    Flag::boolean("--verbose", &[]),
    Flag::value("--keepalive", &[]),
    Flag::value("--format", &[]),
    Flag::boolean("--nowordwrap", &[]),
    Flag::boolean("--insecure", &[]),
    Flag::value("--think", &[]),
    Flag::boolean("--hidethinking", &[]),
];

fn num<T: std::str::FromStr>(what: &str, v: &str, expected: &str) -> Result<T, EngineError> {
    v.trim()
        .parse()
        .map_err(|_| EngineError::bad_value(what, v, expected))
}

fn env_num(name: &str, v: &str, expected: &str) -> Result<u64, EngineError> {
    v.trim().parse().map_err(|_| EngineError::BadEnv {
        name: name.into(),
        value: v.into(),
        expected: expected.into(),
    })
}

/// envconfig.Bool: strconv.ParseBool, and an unparsable non-empty value counts as true.
fn env_bool(v: &str) -> bool {
    !matches!(
        v.trim().to_ascii_lowercase().as_str(),
        "0" | "false" | "f" | ""
    )
}

/// What a Modelfile says: its `FROM`, and its `PARAMETER name value` lines in order.
pub type Modelfile = (Option<String>, Vec<(String, String)>);

/// The options and `FROM` of a Modelfile's text.
pub fn read_modelfile(text: &str) -> Result<Modelfile, EngineError> {
    let mut from = None;
    let mut params = Vec::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        match words.next().map(str::to_ascii_uppercase).as_deref() {
            Some("FROM") => from = words.next().map(str::to_string),
            Some("PARAMETER") => {
                if let (Some(k), Some(v)) = (words.next(), words.next()) {
                    params.push((k.to_ascii_lowercase(), v.trim_matches('"').to_string()));
                }
            }
            _ => {}
        }
    }
    Ok((from, params))
}

/// Read an Ollama command. `read_file` reads a Modelfile named by `--modelfile` / `-f`.
pub fn parse(
    cmd: &Command,
    release: Option<&str>,
    read_file: &dyn Fn(&str) -> Result<String, String>,
) -> Result<OllamaConfig, EngineError> {
    if cmd.engine != Some(EngineKind::Ollama) {
        return Err(EngineError::WrongEngine {
            program: cmd.program.clone(),
            engine: "Ollama",
            example: "OLLAMA_NUM_PARALLEL=2 ollama run llama3.1:8b --num-ctx 16384",
        });
    }
    let flags = FlagReader::new(FLAGS)
        .underscores_as_dashes()
        .read(&cmd.args)?;
    let mut pos: Vec<&str> = flags.positionals.iter().map(String::as_str).collect();
    // one pasted line that starts the server with its environment and then the client
    // (`OLLAMA_X=1 ollama serve & sleep 2; ollama run TAG`): the client's words name the model
    if pos.first() == Some(&"serve") {
        if let Some(i) = pos.iter().position(|w| *w == "ollama") {
            pos.drain(..=i);
        }
    }
    let sub = pos.first().copied().unwrap_or("");
    if matches!(
        sub,
        "run" | "serve" | "create" | "start" | "pull" | "launch"
    ) {
        pos.remove(0);
    }
    let mut notes = Vec::new();
    let mut options: Vec<(String, String)> = Vec::new();
    let mut from = None;
    if let Some(path) = flags.get("--modelfile") {
        let text = read_file(path).map_err(|e| {
            EngineError::bad_value(
                "--modelfile",
                path,
                format!("cannot read it ({e}): give the path of a Modelfile"),
            )
        })?;
        let (f, params) = read_modelfile(&text)?;
        from = f;
        options.extend(params);
    }
    for p in flags.get_all("--parameter") {
        let (k, v) = p.split_once(['=', ' ']).ok_or_else(|| {
            EngineError::bad_value("--parameter", p, "NAME=VALUE such as num_ctx=8192")
        })?;
        options.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    for (flag, key) in [
        ("--num-ctx", "num_ctx"),
        ("--num-gpu", "num_gpu"),
        ("--num-batch", "num_batch"),
    ] {
        if let Some(v) = flags.get(flag) {
            options.push((key.into(), v.into()));
        }
    }
    let opt = |k: &str| {
        options
            .iter()
            .rev()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    };
    // `ollama create NAME -f Modelfile`: the model is the Modelfile's FROM, not NAME
    let model = match (sub, flags.get("--model"), from.clone(), pos.first()) {
        (_, Some(m), _, _) => m.to_string(),
        ("create", _, Some(f), _) => f,
        (_, _, _, Some(p)) => p.to_string(),
        (_, _, Some(f), None) => f,
        _ => {
            return Err(EngineError::NoModel {
                engine: "Ollama",
                example: "ollama run llama3.1:8b (for `ollama serve`, name the model it will load: ollama run MODEL)",
            })
        }
    };
    for (k, v) in &options {
        if !matches!(k.as_str(), "num_ctx" | "num_gpu" | "num_batch") {
            notes.push(format!("PARAMETER {k} {v}: no memory effect modelled"));
        }
    }
    for u in &flags.unknown {
        notes.push(format!("{u}: not an option vramfit knows; ignored"));
    }
    let env = |n: &str| cmd.env_var(n).filter(|v| !v.trim().is_empty());
    let num_parallel = match env("OLLAMA_NUM_PARALLEL") {
        Some(v) => env_num("OLLAMA_NUM_PARALLEL", v, "a count such as 2")?.max(1),
        None => 1, // envconfig/config.go: NumParallel = Uint("OLLAMA_NUM_PARALLEL", 1)
    };
    let kv_cache_type = match env("OLLAMA_KV_CACHE_TYPE") {
        None => None,
        Some(v) => {
            let t = v.trim().to_ascii_lowercase();
            if !matches!(
                t.as_str(),
                "f16" | "f32" | "bf16" | "q8_0" | "q4_0" | "q4_1" | "q5_0" | "q5_1" | "iq4_nl"
            ) {
                return Err(EngineError::BadEnv {
                    name: "OLLAMA_KV_CACHE_TYPE".into(),
                    value: v.into(),
                    expected: "f16, q8_0 or q4_0".into(),
                });
            }
            Some(t)
        }
    };
    let visible = env("CUDA_VISIBLE_DEVICES").or(env("HIP_VISIBLE_DEVICES"));
    let visible_devices = match visible {
        None => None,
        Some(v) => Some(
            v.split(',')
                .map(|x| {
                    env_num("CUDA_VISIBLE_DEVICES", x, "GPU indices such as 0,1")
                        .map(|i| i as usize)
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    let release = match release {
        None => None,
        Some(r) => {
            let t = r.trim().trim_start_matches('v');
            let t = t.split(['-', '+']).next().unwrap_or(t);
            let p: Vec<u64> = t.split('.').map_while(|x| x.parse().ok()).collect();
            if p.len() < 2 || p.len() != t.split('.').count() {
                return Err(EngineError::BadVersion(r.to_string()));
            }
            Some((p[0], p[1], p.get(2).copied().unwrap_or(0)))
        }
    };
    if let Some(v) = env("OLLAMA_MAX_LOADED_MODELS") {
        notes.push(format!("OLLAMA_MAX_LOADED_MODELS={v}: only this model is planned (other loaded models are not counted)"));
    }
    Ok(OllamaConfig {
        model,
        num_ctx: opt("num_ctx")
            .map(|v| num("num_ctx", v, "a context length such as 8192"))
            .transpose()?,
        num_gpu: match opt("num_gpu") {
            None => None,
            Some(v) => {
                Some(num::<i64>("num_gpu", v, "a layer count such as 99")?).filter(|&n| n >= 0)
            }
        },
        num_batch: opt("num_batch")
            .map(|v| num("num_batch", v, "a batch size such as 512"))
            .transpose()?,
        num_parallel,
        kv_cache_type,
        flash_attention: env("OLLAMA_FLASH_ATTENTION").map(env_bool),
        context_length_env: match env("OLLAMA_CONTEXT_LENGTH") {
            Some(v) => Some(env_num(
                "OLLAMA_CONTEXT_LENGTH",
                v,
                "a context length such as 8192",
            )?)
            .filter(|&c| c > 0),
            None => None,
        },
        gpu_overhead: match env("OLLAMA_GPU_OVERHEAD") {
            Some(v) => env_num("OLLAMA_GPU_OVERHEAD", v, "bytes such as 536870912")?,
            None => 0,
        },
        sched_spread: env("OLLAMA_SCHED_SPREAD").is_some_and(env_bool),
        visible_devices,
        release,
        notes,
    })
}
