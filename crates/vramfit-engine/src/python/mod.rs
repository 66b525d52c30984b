//! Pasted Python, read as the command line it amounts to. Nothing is executed: the reader
//! ([`syntax`]) takes imports, `NAME = literal` constants and calls with literal arguments, and
//! [`translate`] turns the engine call it finds into the argv `vramfit check` already reads:
//!
//! - vLLM `LLM(...)` → `vllm serve MODEL --flag value ...`, plus the LLM class's own default
//!   where it differs from `vllm serve`'s: `EngineArgs.get_batch_defaults` gives the
//!   `UsageContext.LLM_CLASS` 8192 batched tokens (16384 on GPUs of at least 70 GiB other than
//!   the A100) where the API server gets 2048 (8192) — vllm/engine/arg_utils.py, v0.9 and later;
//! - vLLM `AsyncEngineArgs(...)` / `EngineArgs(...)` → the same flags (the API server builds its
//!   engine from these very arguments);
//! - SGLang `Engine(...)` (`sgl.Engine`) → `python -m sglang.launch_server --flag value ...`
//!   (`Engine(**kwargs)` builds the same `ServerArgs`);
//! - transformers `*.from_pretrained(...)` with `torch_dtype`/`dtype`, `device_map`, `max_memory`,
//!   `quantization_config=BitsAndBytesConfig(...)` (or `load_in_4bit=`), `attn_implementation`,
//!   then `generate(max_new_tokens=..., num_beams=...)` and the batch of prompts given to the
//!   tokenizer as a list → `transformers MODEL --flag value ...`; accelerate's
//!   `infer_auto_device_map(model, max_memory=...)` fills GPUs in order (`--device-map
//!   sequential`, no balancing: that is what `from_pretrained(device_map="auto")` adds).
//!
//! Every argument that is not a literal is named in [`Translated::notes`] and left at the
//! engine's default; a model name that is not a literal is an error naming the expression.

mod lex;
pub mod syntax;

use syntax::{Call, Py};

/// The command line a script amounts to.
#[derive(Debug, Clone, PartialEq)]
pub struct Translated {
    /// the argv, as pasted after `vramfit check --`
    pub argv: Vec<String>,
    /// what was read from where, and what could not be read
    pub notes: Vec<String>,
}

/// The GPU the script will run on, for the defaults that depend on it.
#[derive(Debug, Clone, Copy)]
pub struct Device<'a> {
    pub total_bytes: u64,
    pub name: &'a str,
}

const GIB: u64 = 1 << 30;
const MAX_SOURCE: usize = 1 << 20;

/// Read `src` (a file or a snippet) and give the equivalent command line.
pub fn translate(src: &str, dev: Device) -> Result<Translated, PythonError> {
    if src.len() > MAX_SOURCE {
        return Err(python_err(format!(
            "the Python source is {} bytes; vramfit reads up to 1 MiB: paste the part that builds the engine",
            src.len()
        )));
    }
    let script = syntax::read(src);
    let find = |pred: &dyn Fn(&Call) -> bool| script.calls.iter().find(|c| pred(c));
    if let Some(c) = find(&|c| c.name() == "LLM" && !c.func.contains("langchain")) {
        return vllm(c, true, dev);
    }
    if let Some(c) = find(&|c| matches!(c.name(), "AsyncEngineArgs" | "EngineArgs")) {
        return vllm(c, false, dev);
    }
    if let Some(c) =
        find(&|c| c.name() == "Engine" && c.func.contains("sglang") || c.func == "sgl.Engine")
    {
        return sglang(c);
    }
    let model_call = find(&|c| c.name() == "from_pretrained" && is_model_class(&c.func))
        .or_else(|| find(&|c| c.name() == "pipeline"))
        // accelerate's big-model recipe: AutoConfig.from_pretrained(ID) + infer_auto_device_map
        .or_else(|| {
            find(&|c| c.name() == "infer_auto_device_map")?;
            find(&|c| c.name() == "from_pretrained" && c.func.contains("Config"))
        });
    if let Some(c) = model_call {
        return transformers(c, &script.calls, &script.constants);
    }
    Err(python_err(
        "no engine call found: vramfit reads vLLM LLM(...) / AsyncEngineArgs(...), SGLang Engine(...) and transformers from_pretrained(...) with literal arguments".into(),
    ))
}

/// Why a script could not be read; one line naming the expression and the fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("pasted Python: {0}")]
pub struct PythonError(pub String);

fn python_err(msg: String) -> PythonError {
    PythonError(msg)
}

/// `AutoModelForCausalLM.from_pretrained`, not a tokenizer's, config's or processor's.
fn is_model_class(func: &str) -> bool {
    let class = func.rsplit('.').nth(1).unwrap_or("");
    let not_model = [
        "Tokenizer",
        "Processor",
        "Config",
        "FeatureExtractor",
        "PeftModel",
        "Adapter",
    ];
    !class.is_empty() && !not_model.iter().any(|n| class.contains(n))
}

/// A literal as a flag value; `None` for what cannot be written on a command line.
fn flag_value(v: &Py) -> Option<String> {
    match v {
        Py::Str(s) => Some(s.clone()),
        Py::Int(n) => Some(n.to_string()),
        Py::Float(f) => Some(format!("{f}")),
        Py::Bool(b) => Some(b.to_string()),
        Py::Ref(r) if r.starts_with("torch.") => Some(r.trim_start_matches("torch.").to_string()),
        Py::Dict(_) | Py::List(_) => to_json(v).map(|j| j.to_string()),
        _ => None,
    }
}

fn to_json(v: &Py) -> Option<serde_json::Value> {
    use serde_json::Value;
    Some(match v {
        Py::Str(s) => Value::String(s.clone()),
        Py::Int(n) => Value::from(*n),
        Py::Float(f) => Value::from(*f),
        Py::Bool(b) => Value::Bool(*b),
        Py::None => Value::Null,
        Py::List(items) => Value::Array(items.iter().map(to_json).collect::<Option<_>>()?),
        Py::Dict(items) => {
            let mut m = serde_json::Map::new();
            for (k, v) in items {
                let key = match k {
                    Py::Str(s) => s.clone(),
                    Py::Int(n) => n.to_string(),
                    _ => return None,
                };
                m.insert(key, to_json(v)?);
            }
            Value::Object(m)
        }
        _ => return None,
    })
}

fn describe(v: &Py) -> String {
    match v {
        Py::Opaque(t) => t.clone(),
        Py::Ref(r) => r.clone(),
        Py::Call(c) => format!("{}(...)", c.func),
        other => format!("{other:?}"),
    }
}

/// The model argument: a keyword or the first positional, which must be a string.
fn model_arg(c: &Call, keys: &[&str]) -> Result<String, PythonError> {
    let v = keys.iter().find_map(|k| c.kw(k)).or(c.args.first());
    match v {
        Some(Py::Str(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(other) => Err(python_err(format!(
            "the model in {}(...) is `{}`, not a string vramfit can read without running the script: write the repo id or path as a literal",
            c.func,
            describe(other)
        ))),
        None => Err(python_err(format!(
            "{}(...) names no model: give {}=\"ORG/NAME\"",
            c.func, keys[0]
        ))),
    }
}

/// `name=value` keywords as `--name value` flags; unreadable ones are noted and skipped.
fn kwargs_as_flags(c: &Call, skip: &[&str], argv: &mut Vec<String>, notes: &mut Vec<String>) {
    for (k, v) in &c.kwargs {
        if skip.contains(&k.as_str()) {
            continue;
        }
        let flag = format!("--{}", k.replace('_', "-"));
        match v {
            Py::Bool(true) => argv.push(flag),
            Py::Bool(false) => argv.push(format!("--no-{}", k.replace('_', "-"))),
            Py::None => {}
            other => match flag_value(other) {
                Some(s) => {
                    argv.push(flag);
                    argv.push(s);
                }
                None => notes.push(format!(
                    "{k}={} is not read statically: the engine default is assumed",
                    describe(other)
                )),
            },
        }
    }
    for s in &c.splats {
        notes.push(format!(
            "**{s} in {}(...) is not read statically: its keys are not applied",
            c.func
        ));
    }
}

fn vllm(c: &Call, llm_class: bool, dev: Device) -> Result<Translated, PythonError> {
    let model = model_arg(c, &["model"])?;
    let mut argv = vec!["vllm".to_string(), "serve".to_string(), model];
    let mut notes = vec![format!("read from {}(...) in the pasted Python", c.func)];
    kwargs_as_flags(c, &["model"], &mut argv, &mut notes);
    if !llm_class {
        notes.push(format!(
            "{}(...) is planned with `vllm serve`'s defaults (the API server's usage context); an engine built from it in another context may batch a different number of tokens",
            c.name()
        ));
    }
    if llm_class && c.kw("max_num_batched_tokens").is_none() {
        // vllm/engine/arg_utils.py get_batch_defaults, UsageContext.LLM_CLASS (v0.9+)
        let large = dev.total_bytes >= 70 * GIB && !dev.name.to_ascii_lowercase().contains("a100");
        let mut tokens: u64 = if large { 16384 } else { 8192 };
        // _set_default_max_num_seqs_and_batched_tokens_args caps it at max_num_seqs * max_model_len
        let seqs = match c.kw("max_num_seqs") {
            Some(Py::Int(n)) if *n > 0 => Some(*n as u64),
            _ => Some(if large { 1024 } else { 256 }),
        };
        if let (Some(s), Some(Py::Int(len))) = (seqs, c.kw("max_model_len")) {
            tokens = tokens.min(s.saturating_mul((*len).max(1) as u64));
        }
        argv.push("--max-num-batched-tokens".into());
        argv.push(tokens.to_string());
        notes.push(format!(
            "the LLM class batches {tokens} tokens by default on this GPU (vllm serve: {}); the equivalent command line carries --max-num-batched-tokens {tokens}",
            if large { 8192 } else { 2048 }
        ));
    }
    Ok(Translated { argv, notes })
}

fn sglang(c: &Call) -> Result<Translated, PythonError> {
    let model = model_arg(c, &["model_path", "model"])?;
    let mut argv: Vec<String> = ["python", "-m", "sglang.launch_server", "--model-path"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    argv.push(model);
    let mut notes = vec![format!("read from {}(...) in the pasted Python", c.func)];
    let before = argv.len();
    kwargs_as_flags(c, &["model_path", "model"], &mut argv, &mut notes);
    // SGLang booleans are store_true flags: `--no-x` does not exist
    let tail: Vec<String> = argv.split_off(before);
    argv.extend(tail.into_iter().filter(|a| !a.starts_with("--no-")));
    Ok(Translated { argv, notes })
}

fn transformers(
    load: &Call,
    calls: &[Call],
    constants: &std::collections::HashMap<String, Py>,
) -> Result<Translated, PythonError> {
    // pipeline("text-generation", model=..., model_kwargs={...}): the model is the second
    // positional, and model_kwargs reach from_pretrained
    let flat;
    let load = if load.name() == "pipeline" {
        let mut c = load.clone();
        if c.kw("model").is_none() {
            if let Some(m) = c.args.get(1).cloned() {
                c.kwargs.push(("model".into(), m));
            }
        }
        c.args.clear();
        if let Some(Py::Dict(items)) = c.kw("model_kwargs").cloned() {
            for (k, v) in items {
                if let Py::Str(k) = k {
                    c.kwargs.push((k, v));
                }
            }
        }
        c.kwargs.retain(|(k, _)| k != "model_kwargs" && k != "task");
        flat = c;
        &flat
    } else {
        load
    };
    let model = model_arg(load, &["pretrained_model_name_or_path", "model"])?;
    let mut argv = vec!["transformers".to_string(), model];
    let mut notes = vec![format!("read from {}(...) in the pasted Python", load.func)];
    let push = |argv: &mut Vec<String>, flag: &str, v: String| {
        argv.push(flag.to_string());
        argv.push(v);
    };
    for (k, v) in &load.kwargs {
        match (k.as_str(), v) {
            ("torch_dtype" | "dtype", v) => match flag_value(v) {
                Some(d) => push(&mut argv, "--dtype", d),
                None => notes.push(format!(
                    "{k}={}: not read, the checkpoint's dtype is assumed",
                    describe(v)
                )),
            },
            ("device_map", Py::Str(s)) => push(&mut argv, "--device-map", s.clone()),
            ("device_map", Py::Int(n)) => push(&mut argv, "--device-map", n.to_string()),
            ("device_map", Py::Call(c)) if c.name() == "infer_auto_device_map" => {}
            ("device_map", v) => notes.push(format!(
                "device_map={}: an explicit map is not read; one GPU is assumed",
                describe(v)
            )),
            ("max_memory", v) => match max_memory(v) {
                Some(m) => push(&mut argv, "--max-memory", m),
                None => notes.push(format!("max_memory={}: not read", describe(v))),
            },
            ("load_in_4bit", Py::Bool(true)) => argv.push("--load-in-4bit".into()),
            ("load_in_8bit", Py::Bool(true)) => argv.push("--load-in-8bit".into()),
            ("quantization_config", Py::Call(q)) if q.name() == "BitsAndBytesConfig" => {
                bnb(q, &mut argv, &mut notes)
            }
            ("quantization_config", v) => {
                notes.push(format!("quantization_config={}: not read", describe(v)))
            }
            ("attn_implementation", Py::Str(s)) => {
                push(&mut argv, "--attn-implementation", s.clone())
            }
            ("model", _)
            | ("trust_remote_code" | "low_cpu_mem_usage" | "token" | "revision" | "cache_dir", _) =>
                {}
            (k, v) => notes.push(format!("{k}={}: no memory effect modelled", describe(v))),
        }
    }
    // accelerate's helper: fills GPU 0, then GPU 1, ..., then the CPU, within max_memory
    if let Some(inf) = calls.iter().find(|c| c.name() == "infer_auto_device_map") {
        argv.retain(|a| a != "--device-map" && a != "--max-memory");
        push(&mut argv, "--device-map", "sequential".into());
        match inf.kw("max_memory").and_then(max_memory) {
            Some(m) => push(&mut argv, "--max-memory", m),
            None => notes.push("infer_auto_device_map without a readable max_memory: every GPU's free memory is used".into()),
        }
        notes.push("infer_auto_device_map(model, max_memory=...) places layers in order without balancing: modelled as device_map=\"sequential\"".into());
    }
    if let Some(g) = calls.iter().find(|c| c.name() == "generate") {
        for (k, flag) in [
            ("max_new_tokens", "--max-new-tokens"),
            ("num_beams", "--num-beams"),
        ] {
            match g.kw(k) {
                Some(Py::Int(n)) => push(&mut argv, flag, n.to_string()),
                Some(v) => notes.push(format!(
                    "generate({k}={}): not read, the default is assumed",
                    describe(v)
                )),
                None => {}
            }
        }
    } else if let Some(n) = load.kw("max_new_tokens") {
        notes.push(format!("max_new_tokens={}: not read", describe(n)));
    }
    // the batch: a list of prompts given to the tokenizer
    let batch = calls
        .iter()
        .filter(|c| {
            c.func.to_ascii_lowercase().contains("tokenizer") || c.name() == "apply_chat_template"
        })
        .find_map(|c| match c.args.first() {
            Some(Py::List(items)) if items.iter().all(|i| matches!(i, Py::Str(_))) => {
                Some(items.len())
            }
            Some(Py::Ref(n)) => match constants.get(n) {
                Some(Py::List(items)) if items.iter().all(|i| matches!(i, Py::Str(_))) => {
                    Some(items.len())
                }
                _ => None,
            },
            _ => None,
        });
    match batch {
        Some(n) if n > 1 => push(&mut argv, "--batch-size", n.to_string()),
        Some(_) => {}
        None => notes.push("the batch and the prompt length are not read statically: one prompt of the notation's default length is assumed".into()),
    }
    Ok(Translated { argv, notes })
}

/// `BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_use_double_quant=True, ...)` as flags.
fn bnb(q: &Call, argv: &mut Vec<String>, notes: &mut Vec<String>) {
    for (k, v) in &q.kwargs {
        match (k.as_str(), v) {
            ("load_in_4bit" | "load_in_8bit" | "bnb_4bit_use_double_quant", Py::Bool(true)) => {
                argv.push(format!("--{}", k.replace('_', "-")))
            }
            ("load_in_4bit" | "load_in_8bit" | "bnb_4bit_use_double_quant", Py::Bool(false)) => {}
            ("bnb_4bit_quant_type" | "bnb_4bit_compute_dtype", v) => match flag_value(v) {
                Some(s) => {
                    argv.push(format!("--{}", k.replace('_', "-")));
                    argv.push(s);
                }
                None => notes.push(format!("BitsAndBytesConfig({k}={}): not read", describe(v))),
            },
            (k, v) => notes.push(format!(
                "BitsAndBytesConfig({k}={}): no memory effect modelled",
                describe(v)
            )),
        }
    }
}

/// `{0: "6GiB", "cpu": "30GiB"}` → `0:6GiB,cpu:30GiB` (integers are bytes).
fn max_memory(v: &Py) -> Option<String> {
    let Py::Dict(items) = v else { return None };
    let mut parts = Vec::new();
    for (k, v) in items {
        let dev = match k {
            Py::Int(n) => n.to_string(),
            Py::Str(s) => s.trim_start_matches("cuda:").to_string(),
            _ => return None,
        };
        let size = match v {
            Py::Str(s) => s.replace(' ', ""),
            Py::Int(n) if *n >= 0 => format!("{n}B"),
            _ => return None,
        };
        parts.push(format!("{dev}:{size}"));
    }
    (!parts.is_empty()).then(|| parts.join(","))
}

/// Where a pasted `python ...` command keeps its script: `python serve.py` → the file,
/// `python -c "CODE"` → the code. `None` for anything else (`python -m sglang.launch_server` is
/// an engine command, read as one).
pub fn script_of(program: &str, args: &[String]) -> Option<Script> {
    let prog = program.rsplit([' ', '/']).next().unwrap_or(program);
    let is_python = prog.starts_with("python");
    if !is_python {
        return None;
    }
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-c" => return it.next().map(|c| Script::Code(c.clone())),
            "-m" => return None,
            a if a.ends_with(".py") => return Some(Script::File(a.to_string())),
            a if a.starts_with('-') => {}
            _ => return None,
        }
    }
    None
}

/// A script named by a pasted command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Script {
    File(String),
    Code(String),
}

#[cfg(test)]
mod tests;
