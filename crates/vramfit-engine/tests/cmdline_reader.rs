//! The shared command-line reader on commands as people paste them.

use vramfit_engine::cmdline::{Command, EngineKind, Flag, FlagReader};
use vramfit_engine::error::EngineError;

fn cmd(words: &[&str]) -> Command {
    Command::parse(words).unwrap()
}

#[test]
fn vllm_serve_with_env() {
    let c = cmd(&[
        "CUDA_VISIBLE_DEVICES=0,1",
        "VLLM_PP_LAYER_PARTITION=16,24",
        "vllm",
        "serve",
        "Qwen/Qwen3-14B-AWQ",
        "--pipeline-parallel-size",
        "2",
    ]);
    assert_eq!(c.engine, Some(EngineKind::Vllm));
    assert_eq!(c.program, "vllm");
    assert_eq!(c.env_var("VLLM_PP_LAYER_PARTITION"), Some("16,24"));
    assert_eq!(c.env.len(), 2);
    assert_eq!(c.args[0], "serve");
}

#[test]
fn one_string_is_shell_split() {
    let c = cmd(&[
        "CUDA_VISIBLE_DEVICES=0 vllm serve m --speculative-config '{\"method\": \"ngram\"}'",
    ]);
    assert_eq!(
        c.args,
        [
            "serve",
            "m",
            "--speculative-config",
            "{\"method\": \"ngram\"}"
        ]
    );
}

#[test]
fn python_module_forms() {
    let c = cmd(&[
        "python",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        "M",
    ]);
    assert_eq!(c.engine, Some(EngineKind::Vllm));
    assert_eq!(c.program, "python -m vllm.entrypoints.openai.api_server");
    assert_eq!(c.args, ["--model", "M"]);
    let c = cmd(&[
        "python3.11",
        "-u",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "M",
    ]);
    assert_eq!(c.engine, Some(EngineKind::Sglang));
    assert_eq!(c.args, ["--model-path", "M"]);
    let c = cmd(&["python", "train.py"]);
    assert_eq!(c.engine, None);
}

#[test]
fn launchers() {
    let c = cmd(&["uv", "run", "--with", "vllm", "vllm", "serve", "M"]);
    assert_eq!(c.engine, Some(EngineKind::Vllm));
    assert_eq!(c.args, ["serve", "M"]);
    let c = cmd(&["env", "A=1", "vllm", "serve", "M"]);
    assert_eq!(c.env_var("A"), Some("1"));
    assert_eq!(c.engine, Some(EngineKind::Vllm));
}

#[test]
fn docker_image_names_the_engine() {
    let c = cmd(&[
        "docker run --runtime nvidia --gpus all -v ~/.cache/huggingface:/root/.cache/huggingface \
         -e HF_TOKEN=x --env CUDA_VISIBLE_DEVICES=1 -p 8000:8000 --ipc=host \
         vllm/vllm-openai:latest --model mistralai/Mistral-7B-v0.1 --max-model-len 8192",
    ]);
    assert_eq!(c.engine, Some(EngineKind::Vllm));
    assert_eq!(c.env_var("CUDA_VISIBLE_DEVICES"), Some("1"));
    assert_eq!(
        c.args,
        [
            "serve",
            "--model",
            "mistralai/Mistral-7B-v0.1",
            "--max-model-len",
            "8192"
        ]
    );
    let c = cmd(&[
        "docker",
        "run",
        "ghcr.io/ggml-org/llama.cpp:server-cuda",
        "-m",
        "x.gguf",
    ]);
    assert_eq!(c.engine, Some(EngineKind::LlamaCpp));
    assert_eq!(c.args, ["-m", "x.gguf"]);
}

#[test]
fn llama_cpp_programs_by_path() {
    for p in [
        "llama-server",
        "./build/bin/llama-server",
        "/opt/llama.cpp/llama-cli",
        "llama-bench",
        "llama-sweep-bench",
        "llama-perplexity",
        "C:\\llama\\llama-server.exe",
    ] {
        assert_eq!(
            cmd(&[p, "-m", "x.gguf"]).engine,
            Some(EngineKind::LlamaCpp),
            "{p}"
        );
    }
    assert_eq!(
        cmd(&["ollama", "run", "qwen3:8b"]).engine,
        Some(EngineKind::Ollama)
    );
    assert_eq!(
        cmd(&["transformers", "Qwen/Qwen3-8B", "--dtype", "bf16"]).engine,
        Some(EngineKind::Transformers)
    );
    assert_eq!(cmd(&["mystery", "x"]).engine, None);
}

#[test]
fn empty_and_unterminated() {
    assert_eq!(Command::parse::<&str>(&[]), Err(EngineError::EmptyCommand));
    assert_eq!(Command::parse(&["A=1"]), Err(EngineError::EmptyCommand));
    let e = Command::parse(&["vllm serve 'M"]).unwrap_err();
    assert!(e.to_string().contains("unterminated"), "{e}");
}

const LLAMA_FLAGS: &[Flag] = &[
    Flag::value("--ctx-size", &["-c"]),
    Flag::value("--override-tensor", &["-ot"]),
    Flag::boolean("--flash-attn", &["-fa"]),
    Flag::boolean("--mmap", &[]),
    Flag::value("--n-gpu-layers", &["-ngl", "--gpu-layers"]),
];

#[test]
fn flag_forms() {
    let args = [
        "-m",
        "x.gguf",
        "-c",
        "32768",
        "-ot",
        "exps=CPU",
        "--override-tensor=blk\\.1\\.=CUDA0",
        "-fa",
        "--no-mmap",
        "--n-gpu-layers=99",
        "--port",
        "8080",
        "--verbose",
    ];
    let f = FlagReader::new(LLAMA_FLAGS).read(&args).unwrap();
    assert_eq!(f.get("--ctx-size"), Some("32768"));
    assert_eq!(
        f.get_all("--override-tensor"),
        ["exps=CPU", "blk\\.1\\.=CUDA0"]
    );
    assert_eq!(f.bool("--flash-attn"), Some(true));
    assert_eq!(f.bool("--mmap"), Some(false));
    assert_eq!(f.get("--n-gpu-layers"), Some("99"));
    assert_eq!(f.unknown, ["-m x.gguf", "--port 8080", "--verbose"]);
    assert!(f.positionals.is_empty());
}

#[test]
fn optional_bool_values() {
    let r = FlagReader::new(LLAMA_FLAGS);
    let f = r.read(&["-fa", "off", "model.gguf"]).unwrap();
    assert_eq!(f.bool("--flash-attn"), Some(false));
    assert_eq!(f.positionals, ["model.gguf"]);
    let f = r.read(&["-fa", "auto"]).unwrap();
    assert_eq!(f.get("--flash-attn"), Some("auto"));
    assert_eq!(f.bool("--flash-attn"), None);
    assert!(f.has("--flash-attn"));
    let f = r.read(&["--flash-attn=on"]).unwrap();
    assert_eq!(f.bool("--flash-attn"), Some(true));
    // the last setting wins
    let f = r.read(&["-fa", "on", "--flash-attn", "off"]).unwrap();
    assert_eq!(f.bool("--flash-attn"), Some(false));
}

#[test]
fn values_may_be_negative_and_missing_values_are_errors() {
    const V: &[Flag] = &[Flag::value("--max-model-len", &[])];
    let r = FlagReader::new(V).underscores_as_dashes();
    let f = r.read(&["--max_model_len", "-1"]).unwrap();
    assert_eq!(f.get("--max-model-len"), Some("-1"));
    let e = r.read(&["--max-model-len"]).unwrap_err();
    assert_eq!(
        e,
        EngineError::MissingValue {
            flag: "--max-model-len".into()
        }
    );
    assert!(e.to_string().contains("--max-model-len VALUE"));
}
