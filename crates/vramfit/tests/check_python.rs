//! `vramfit check` on pasted Python: the configurations of the usual guides (vLLM's `LLM(...)`,
//! the transformers NF4 + `device_map="auto"` loader, accelerate's `infer_auto_device_map`
//! offload helper, SGLang's `Engine(...)`) give the same plan as the equivalent command line.
//! Through the real binary, offline; the scripts are written to a temp dir, never run.

use serde_json::Value;
use std::io::Write;
use std::process::{Command, Stdio};

fn run(args: &[&str], files: &[(&str, &str)], stdin: Option<&str>) -> (i32, Value, String) {
    let tmp = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(tmp.path().join(name), text).unwrap();
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_vramfit"))
        .arg("check")
        .args(args)
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HOME", tmp.path().join("hf"))
        .env("HF_HUB_CACHE", tmp.path().join("hf/hub"))
        .env("NO_COLOR", "1")
        .current_dir(tmp.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(s) = stdin {
        child.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_str(&stdout).unwrap_or(Value::Null),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// The plan without its notes (the Python path adds where each value was read).
fn plan(mut j: Value) -> Value {
    j.as_object_mut().unwrap().remove("notes");
    j
}

fn same_plan(gpu: &str, script: &str, command: &[&str]) -> Value {
    let (rc_py, py, err) = run(
        &["--json", "--gpu", gpu, "--", "python", "serve.py"],
        &[("serve.py", script)],
        None,
    );
    assert!(rc_py == 0 || rc_py == 1, "{err}");
    let mut args = vec!["--json", "--gpu", gpu, "--"];
    args.extend_from_slice(command);
    let (rc_cli, cli, err) = run(&args, &[], None);
    assert_eq!(rc_py, rc_cli, "{err}");
    let notes = py["notes"].clone();
    assert_eq!(plan(py), plan(cli), "{script}");
    notes
}

const LLM_GUIDE: &str = r#"from vllm import LLM, SamplingParams

llm = LLM(
    model="meta-llama/Llama-3.1-8B-Instruct",
    gpu_memory_utilization=0.85,
    max_model_len=8192,
    max_num_seqs=32,
)
outputs = llm.generate(["Hello"], SamplingParams(max_tokens=256))
"#;

#[test]
fn vllm_llm_quick_reference_config() {
    let base = [
        "vllm",
        "serve",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--gpu-memory-utilization",
        "0.85",
        "--max-model-len",
        "8192",
        "--max-num-seqs",
        "32",
        "--max-num-batched-tokens",
    ];
    let mut cmd = base.to_vec();
    cmd.push("8192");
    let notes = same_plan("RTX 4090", LLM_GUIDE, &cmd);
    assert!(
        notes[0]
            .as_str()
            .unwrap()
            .contains("vllm serve meta-llama/Llama-3.1-8B-Instruct"),
        "{notes}"
    );
    // on an H100 the LLM class batches 16384 tokens
    let mut cmd = base.to_vec();
    cmd.push("16384");
    same_plan("H100", LLM_GUIDE, &cmd);
    // the class default differs from the server's: without the flag the plans differ
    let (_, py, _) = run(
        &["--json", "--gpu", "RTX 4090", "--python", "serve.py"],
        &[("serve.py", LLM_GUIDE)],
        None,
    );
    let (_, cli, _) = run(
        &[
            "--json",
            "--gpu",
            "RTX 4090",
            "--",
            "vllm",
            "serve",
            "meta-llama/Llama-3.1-8B-Instruct",
            "--gpu-memory-utilization",
            "0.85",
            "--max-model-len",
            "8192",
            "--max-num-seqs",
            "32",
        ],
        &[],
        None,
    );
    assert_ne!(plan(py), plan(cli));
}

#[test]
fn transformers_nf4_auto_loader() {
    let script = r#"import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig

model_id = "meta-llama/Llama-3.1-8B-Instruct"
quantization_config = BitsAndBytesConfig(
    load_in_4bit=True,
    bnb_4bit_quant_type="nf4",
    bnb_4bit_compute_dtype=torch.bfloat16,
    bnb_4bit_use_double_quant=True,
)
tokenizer = AutoTokenizer.from_pretrained(model_id)
model = AutoModelForCausalLM.from_pretrained(model_id, quantization_config=quantization_config, device_map="auto")
inputs = tokenizer("Tell me a story", return_tensors="pt").to(model.device)
output = model.generate(**inputs, max_new_tokens=512)
"#;
    same_plan(
        "RTX 3060",
        script,
        &[
            "transformers",
            "meta-llama/Llama-3.1-8B-Instruct",
            "--load-in-4bit",
            "--bnb-4bit-use-double-quant",
            "--bnb-4bit-quant-type",
            "nf4",
            "--bnb-4bit-compute-dtype",
            "bf16",
            "--device-map",
            "auto",
            "--max-new-tokens",
            "512",
        ],
    );
}

#[test]
fn accelerate_offload_helper() {
    let script = r#"import torch
from accelerate import infer_auto_device_map, init_empty_weights
from transformers import AutoConfig, AutoModelForCausalLM

checkpoint = "mistralai/Mistral-7B-Instruct-v0.3"
config = AutoConfig.from_pretrained(checkpoint)
with init_empty_weights():
    model = AutoModelForCausalLM.from_config(config)
device_map = infer_auto_device_map(model, max_memory={0: "6GiB", "cpu": "30GiB"}, no_split_module_classes=["MistralDecoderLayer"])
model = AutoModelForCausalLM.from_pretrained(checkpoint, device_map=device_map, torch_dtype=torch.float16)
"#;
    let notes = same_plan(
        "RTX 3060",
        script,
        &[
            "transformers",
            "mistralai/Mistral-7B-Instruct-v0.3",
            "--dtype",
            "fp16",
            "--device-map",
            "sequential",
            "--max-memory",
            "0:6GiB,cpu:30GiB",
        ],
    );
    assert!(!notes.to_string().contains("one GPU is assumed"), "{notes}");
}

#[test]
fn sglang_engine_and_stdin() {
    let script = "import sglang as sgl\nllm = sgl.Engine(model_path='Qwen/Qwen3-8B', mem_fraction_static=0.8, context_length=16384)\n";
    same_plan(
        "RTX 4090",
        script,
        &[
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "Qwen/Qwen3-8B",
            "--mem-fraction-static",
            "0.8",
            "--context-length",
            "16384",
        ],
    );
    let (rc, j, err) = run(
        &["--json", "--gpu", "RTX 4090", "--python", "-"],
        &[],
        Some(script),
    );
    assert_eq!(rc, 0, "{err}");
    assert_eq!(j["engine"], "sglang");
    // the snippet piped with no command and no --python: read as a script all the same
    let (rc, bare, err) = run(&["--json", "--gpu", "RTX 4090"], &[], Some(script));
    assert_eq!(rc, 0, "{err}");
    assert_eq!(plan(bare), plan(j));
    // nothing piped and no command: one line naming both ways in, exit 2
    let (rc, _, err) = run(&["--gpu", "RTX 4090"], &[], Some(""));
    assert_eq!(rc, 2);
    assert!(
        err.contains("no serving command") && err.trim().lines().count() == 1,
        "{err}"
    );
}

#[test]
fn scripts_that_cannot_be_read_are_one_line_errors() {
    let (rc, _, err) = run(
        &["--gpu", "RTX 4090", "--", "python", "serve.py"],
        &[(
            "serve.py",
            "import os\nfrom vllm import LLM\nllm = LLM(model=os.environ['MODEL'])\n",
        )],
        None,
    );
    assert_eq!(rc, 2);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("os.environ") && err.contains("literal"),
        "{err}"
    );
    let (rc, _, err) = run(&["--gpu", "RTX 4090", "--python", "missing.py"], &[], None);
    assert_eq!(rc, 2);
    assert!(err.contains("missing.py"), "{err}");
    let (rc, _, err) = run(
        &["--gpu", "RTX 4090", "--python", "-"],
        &[],
        Some("print('hello')\n"),
    );
    assert_eq!(rc, 2);
    assert!(err.contains("no engine call"), "{err}");
}
