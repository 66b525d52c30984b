//! Hostile and broken input against the binary (issue 15): every reproduction of the issue and
//! more of the same kinds. Each must end in a one-line error with exit 2, or a quiet exit —
//! never a panic, a hang, unbounded memory, or a confident answer from nonsense.
//!
//! The GGUF cases are written by gguf-py (scripts/make_hostile_ggufs.py); they skip when
//! python3 with `gguf` is missing, unless VRAMFIT_REQUIRE_GGUF_PY=1.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Run the binary offline (an empty HF cache), stdin from `stdin` (or closed), with a deadline:
/// a run past it is killed and fails the test as a hang.
fn run_with(args: &[&str], stdin: Stdio, stdout: Stdio) -> Out {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile-empty-hf");
    std::fs::create_dir_all(cache.join("hub")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_vramfit"))
        .args(args)
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HOME", &cache)
        .env("HF_HUB_CACHE", cache.join("hub"))
        .env("NO_COLOR", "1")
        .stdin(stdin)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = child.stderr.take().unwrap();
    let mut out = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(o) = out.as_mut() {
            let _ = o.read_to_string(&mut s);
        }
        s
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("vramfit {args:?} did not end within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Out {
        code: status.code(),
        stdout: out_reader.join().unwrap(),
        stderr: reader.join().unwrap(),
    }
}

fn run(args: &[&str]) -> Out {
    run_with(args, Stdio::null(), Stdio::piped())
}

/// Exit 2, nothing on stdout, and one line on stderr that names `needle`.
#[track_caller]
fn assert_refused(o: &Out, needle: &str) {
    assert_eq!(o.code, Some(2), "exit code; stderr: {}", o.stderr);
    assert!(o.stdout.is_empty(), "stdout: {}", o.stdout);
    assert!(o.stderr.starts_with("vramfit: "), "stderr: {:?}", o.stderr);
    assert_eq!(
        o.stderr.matches('\n').count(),
        1,
        "one line: {:?}",
        o.stderr
    );
    assert!(o.stderr.ends_with('\n'), "{:?}", o.stderr);
    assert!(
        o.stderr.to_lowercase().contains(&needle.to_lowercase()),
        "{needle:?} not in {:?}",
        o.stderr
    );
}

#[track_caller]
fn refused(args: &[&str], needle: &str) {
    assert_refused(&run(args), needle);
}

fn tmp(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("hostile")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn dev_full() -> Stdio {
    Stdio::from(
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap(),
    )
}

fn dev_zero() -> Stdio {
    Stdio::from(std::fs::File::open("/dev/zero").unwrap())
}

const VLLM: &[&str] = &["vllm", "serve", "Qwen/Qwen3-8B"];

fn check(gpu: &str, extra: &[&str], cmd: &[&str]) -> Out {
    let mut a = vec!["check", "--gpu", gpu];
    a.extend_from_slice(extra);
    a.push("--");
    a.extend_from_slice(cmd);
    run(&a)
}

// ---------- output: a full disk is an error, a closed pipe a quiet exit ----------

#[test]
fn a_full_disk_is_a_one_line_error_for_every_command() {
    for args in [
        &["catalog", "gpus"][..],
        &["catalog", "models", "--json"],
        &["inspect", "--json", "Qwen/Qwen3-8B"],
        &["inspect", "Qwen/Qwen3-8B"],
        &[
            "check",
            "--gpu",
            "RTX 4090",
            "--",
            "vllm",
            "serve",
            "Qwen/Qwen3-8B",
        ],
        &["fit", "Qwen/Qwen3-8B", "--gpu", "RTX 4090"],
        &["table", "Qwen/Qwen3-8B", "--gpus", "RTX 4090"],
    ] {
        let o = run_with(args, Stdio::null(), dev_full());
        assert_refused(&o, "cannot write the output");
        assert!(o.stderr.contains("No space left"), "{args:?}: {}", o.stderr);
    }
    let log = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.64 GiB of which 1.06 GiB is free.\n";
    let p = tmp("full").join("oom.log");
    std::fs::write(&p, log).unwrap();
    let o = run_with(&["doctor", p.to_str().unwrap()], Stdio::null(), dev_full());
    assert_refused(&o, "No space left");
}

#[test]
fn a_closed_pipe_ends_quietly() {
    for args in [
        &["catalog", "models"][..],
        &["catalog", "gpus", "--json"],
        &["inspect", "Qwen/Qwen3-8B"],
        &["fit", "Qwen/Qwen3-8B", "--gpu", "RTX 4090"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_vramfit"))
            .args(args)
            .env("HF_HUB_OFFLINE", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // the reader goes away before the first write (as `| head -0` would)
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
        assert_ne!(out.status.code(), Some(101), "{args:?}");
    }
}

// ---------- endless and huge input ----------

#[test]
fn endless_devices_are_refused_or_stopped() {
    refused(&["doctor", "/dev/zero"], "not a log file");
    // snapshot reads pipes (spooled, capped); an endless device fails at its first byte
    refused(&["snapshot", "/dev/zero"], "not a readable pickle");
    refused(&["inspect", "/dev/zero"], "not a regular file");
    refused(&["inspect", "/dev/urandom"], "not a regular file");
    refused(
        &["fit", "/dev/zero", "--gpu", "24GiB"],
        "not a regular file",
    );
    let o = check("24GiB", &[], &["llama-server", "-m", "/dev/zero"]);
    assert_refused(&o, "not a regular file");
    let o = check("24GiB", &[], &["vllm", "serve", "/dev/zero"]);
    assert_refused(&o, "not a regular file");
    // stdin from /dev/zero: the stream is read to its cap and refused as binary
    assert_refused(
        &run_with(&["doctor", "-"], dev_zero(), Stdio::piped()),
        "not a log",
    );
    assert_refused(
        &run_with(&["doctor"], dev_zero(), Stdio::piped()),
        "not a log",
    );
    let o = run_with(&["inspect", "/dev/stdin"], dev_zero(), Stdio::piped());
    assert_refused(&o, "not a regular file");
    // a named pipe with no writer: opening it would block forever
    let fifo = tmp("fifo").join("model.gguf");
    if Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success())
    {
        let f = fifo.to_str().unwrap();
        refused(&["inspect", f], "not a regular file");
        assert_refused(
            &check("24GiB", &[], &["llama-server", "-m", f]),
            "not a regular file",
        );
        // snapshot reads pipes: one with no writer is an empty stream, refused at once
        refused(&["snapshot", f], "not a readable pickle");
    }
}

#[test]
fn huge_sparse_files_are_read_by_their_bounds() {
    let d = tmp("huge");
    let sparse = |name: &str, tail: &[u8]| {
        let p = d.join(name);
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(8 << 30).unwrap();
        drop(f);
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        std::io::Write::write_all(&mut f, tail).unwrap();
        p.to_str().unwrap().to_string()
    };
    // an 8 GiB log whose text is at its end: the tail is read, not the whole file
    let log = sparse(
        "server.log",
        b"\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n",
    );
    let o = run(&["doctor", &log]);
    // the head is NUL bytes, its tail text: a diagnosis or a binary refusal, never a hang
    assert!(matches!(o.code, Some(0) | Some(2)), "{}", o.stderr);
    refused(&["inspect", &sparse("config.json", b"{}")], "too large");
    refused(&["inspect", &sparse("model.gguf", b"")], "model.gguf");
    refused(&["snapshot", &sparse("snap.pickle", b"")], "snap.pickle");
}

// ---------- nonsense must not become an answer ----------

#[test]
fn gpu_names_match_only_on_real_similarity() {
    for (gpu, needle) in [
        ("x", "unknown GPU 'x'"),
        ("-1", "'-1'"),
        ("2x -24GiB", "positive"),
        ("24", "unit"),
        ("rtx", "unknown GPU 'rtx'"),
        ("nvidia", "'nvidia'"),
        ("0x RTX 4090", "count of 0"),
        ("65x RTX 4090", "count of 65"),
        ("24TiB", "more than any one GPU"),
        ("RTX ４０９０ Ω", "'Ω'"),
        ("RTX\n9999", "RTX\\n9999"),
        (",", "empty entry"),
    ] {
        let o = check(gpu, &[], VLLM);
        assert_refused(&o, needle);
    }
    // closest names are offered, not picked
    let o = check("x", &[], VLLM);
    assert!(o.stderr.contains("closest:"), "{}", o.stderr);
}

#[test]
fn full_width_digits_read_as_ascii_and_real_names_still_match() {
    for (gpu, name) in [
        ("RTX ４０９０", "4090"),
        ("ＲＴＸ　４０９０", "4090"),
        ("4090", "4090"),
        ("L4 24GB", "L4"),
        ("2x RTX 3090", "3090"),
        ("A100", "A100"),
    ] {
        let o = check(gpu, &["--json"], VLLM);
        assert!(matches!(o.code, Some(0) | Some(1)), "{gpu}: {}", o.stderr);
        let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
        assert!(v.to_string().contains(name), "{gpu}: no {name} in the plan");
    }
}

#[test]
fn free_memory_is_at_most_the_card() {
    let o = check("RTX 4090", &["--gpu-free", "1TiB"], VLLM);
    assert_refused(&o, "--gpu-free '1TiB' is more than");
    let o = check("RTX 4090", &["--gpu-free", "-5GiB"], VLLM);
    assert_refused(&o, "positive");
    let o = check("24GiB", &["--gpu-free", "30GiB"], VLLM);
    assert_refused(&o, "more than");
    let o = check("RTX 4090", &["--gpu-free", "20GiB", "--json"], VLLM);
    assert!(matches!(o.code, Some(0) | Some(1)), "{}", o.stderr);
}

#[test]
fn versions_parse_as_the_engines_scheme() {
    assert_refused(
        &check("RTX 4090", &["--engine-version", "32kk"], VLLM),
        "32kk",
    );
    assert_refused(
        &check("RTX 4090", &["--engine-version", "0.x.1"], VLLM),
        "0.x.1",
    );
    let sgl = [
        "python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "Qwen/Qwen3-8B",
    ];
    assert_refused(
        &check("RTX 4090", &["--engine-version", "32kk"], &sgl),
        "32kk",
    );
    let llama = ["llama-server", "-hf", "Qwen/Qwen3-8B-GGUF:Q4_K_M"];
    assert_refused(
        &check("RTX 4090", &["--engine-version", "b32kk"], &llama),
        "b32kk",
    );
    let ok = check(
        "RTX 4090",
        &["--engine-version", "0.29.1rc1.dev17+gd2d649e67"],
        VLLM,
    );
    assert!(matches!(ok.code, Some(0) | Some(1)), "{}", ok.stderr);
}

#[test]
fn engine_flag_values_are_the_engines_own() {
    for (flag, value) in [
        ("--kv-cache-dtype", "fp3"),
        ("--quantization", "magic"),
        ("--dtype", "float1024"),
    ] {
        let o = check(
            "RTX 4090",
            &[],
            &["vllm", "serve", "Qwen/Qwen3-8B", flag, value],
        );
        assert_refused(&o, value);
        let sgl = [
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "Qwen/Qwen3-8B",
            flag,
            value,
        ];
        assert_refused(&check("RTX 4090", &[], &sgl), value);
    }
    // found by fuzz/cmdline: a batch of 2^64-1 wrapped the KV bytes to nonsense
    let tf = [
        "transformers",
        "Qwen/Qwen3-8B",
        "--batch-size",
        "18446744073709551615",
    ];
    assert_refused(&check("RTX 4090", &[], &tf), "18446744073709551615");
    let llama = [
        "llama-server",
        "-hf",
        "Qwen/Qwen3-8B-GGUF:Q4_K_M",
        "-ctk",
        "q3_0",
    ];
    assert_refused(&check("RTX 4090", &[], &llama), "q3_0");
    for ok in [
        &[
            "vllm",
            "serve",
            "Qwen/Qwen3-8B",
            "--kv-cache-dtype",
            "fp8_e4m3",
            "--dtype",
            "half",
        ][..],
        &["vllm", "serve", "Qwen/Qwen3-8B", "--quantization", "fp8"],
    ] {
        let o = check("RTX 4090", &[], ok);
        assert!(matches!(o.code, Some(0) | Some(1)), "{ok:?}: {}", o.stderr);
    }
}

/// A llama config.json as Meta ships it (Llama-3.1-8B), with `change` laid over it.
fn config_with(change: serde_json::Value) -> PathBuf {
    let mut c = serde_json::json!({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
        "torch_dtype": "bfloat16", "tie_word_embeddings": false
    });
    for (k, v) in change.as_object().unwrap() {
        c[k] = v.clone();
    }
    let d = tmp(&format!("cfg-{:x}", fxhash(&change.to_string())));
    let p = d.join("config.json");
    std::fs::write(&p, serde_json::to_vec(&c).unwrap()).unwrap();
    p
}

fn fxhash(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}

#[test]
fn inconsistent_configs_are_refused_with_key_and_value() {
    use serde_json::json;
    for (change, needle) in [
        (
            json!({"num_attention_heads": 30}),
            "num_attention_heads = 30",
        ),
        (
            json!({"num_key_value_heads": 64}),
            "num_key_value_heads = 64",
        ),
        (json!({"num_key_value_heads": 5}), "num_key_value_heads = 5"),
        (json!({"vocab_size": -5}), "vocab_size = -5"),
        (
            json!({"max_position_embeddings": -1}),
            "max_position_embeddings = -1",
        ),
        (
            json!({"max_position_embeddings": 1e300}),
            "max_position_embeddings = 1e+300",
        ),
        (
            json!({"max_position_embeddings": 9223372036854775808u64}),
            "max_position_embeddings = 9223372036854775808",
        ),
        (
            json!({"max_position_embeddings": 0}),
            "max_position_embeddings = 0",
        ),
        (
            json!({"torch_dtype": "float1024"}),
            "torch_dtype = \"float1024\"",
        ),
        (
            json!({"quantization_config": {"quant_method": "gptq", "bits": -4}}),
            "bits = -4",
        ),
        (
            json!({"quantization_config": {"quant_method": "awq", "bits": 4096}}),
            "bits = 4096",
        ),
        (
            json!({"layer_types": ["full_attention", "full_attention"]}),
            "layer_types",
        ),
        (json!({"hidden_size": "4096"}), "hidden_size = \"4096\""),
        (json!({"hidden_size": 4096.5}), "hidden_size = 4096.5"),
        (json!({"num_hidden_layers": 0}), "num_hidden_layers = 0"),
        (json!({"intermediate_size": -1}), "intermediate_size = -1"),
    ] {
        let p = config_with(change.clone());
        let path = p.to_str().unwrap();
        assert_refused(&run(&["inspect", path]), needle);
        assert_refused(&check("80GiB", &[], &["vllm", "serve", path]), needle);
    }
    // the same config unbroken is read
    let p = config_with(json!({}));
    let o = run(&["inspect", p.to_str().unwrap()]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
}

#[test]
fn a_corrupt_checkpoint_beside_config_json_is_an_error_naming_it() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../vramfit-model/tests/safetensors_fixtures/broken");
    let dir = config_with(serde_json::json!({"num_hidden_layers": 31}))
        .parent()
        .unwrap()
        .to_path_buf();
    std::fs::copy(
        fixtures.join("truncated.safetensors"),
        dir.join("model.safetensors"),
    )
    .unwrap();
    let d = dir.to_str().unwrap();
    assert_refused(&run(&["inspect", d]), "model.safetensors");
    assert_refused(
        &check("80GiB", &[], &["vllm", "serve", d]),
        "model.safetensors",
    );
    // garbage under the name, and a directory named like the checkpoint
    std::fs::write(dir.join("model.safetensors"), b"not a checkpoint at all").unwrap();
    assert_refused(&run(&["inspect", d]), "model.safetensors");
    // an index naming shards that are not downloaded leaves the weights to be predicted
    std::fs::remove_file(dir.join("model.safetensors")).unwrap();
    std::fs::write(
        dir.join("model.safetensors.index.json"),
        br#"{"metadata": {}, "weight_map": {"lm_head.weight": "model-00001-of-00002.safetensors"}}"#,
    )
    .unwrap();
    assert_eq!(run(&["inspect", d]).code, Some(0));
}

fn hostile_ggufs() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile-gguf");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/make_hostile_ggufs.py");
    let require = std::env::var("VRAMFIT_REQUIRE_GGUF_PY").is_ok_and(|v| v == "1");
    let out = Command::new("python3").arg(&script).arg(&dir).output();
    match out {
        Ok(o) if o.status.success() => Some(dir),
        Ok(o) if o.status.code() == Some(3) && !require => {
            eprintln!("SKIP: {}", String::from_utf8_lossy(&o.stderr).trim());
            None
        }
        Ok(o) => panic!(
            "make_hostile_ggufs.py: {}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) if !require => {
            eprintln!("SKIP: python3 not runnable ({e})");
            None
        }
        Err(e) => panic!("python3: {e}"),
    }
}

#[test]
fn broken_gguf_metadata_is_refused_with_key_and_value() {
    let Some(dir) = hostile_ggufs() else { return };
    for (file, needle) in [
        ("block0", "llama.block_count = 0"),
        ("kv0", "llama.attention.head_count_kv = 0"),
        ("kvhigh", "llama.attention.head_count_kv = 16"),
        ("ctx2p63", "llama.context_length = 9223372036854775808"),
        ("heads0", "llama.attention.head_count = 0"),
    ] {
        let p = dir.join(format!("{file}.gguf"));
        let p = p.to_str().unwrap();
        assert_refused(&run(&["inspect", p]), needle);
        assert_refused(&check("24GiB", &[], &["llama-server", "-m", p]), needle);
        assert_refused(&run(&["fit", p, "--gpu", "24GiB"]), needle);
    }
    let p = dir.join("valid.gguf");
    let o = check("24GiB", &[], &["llama-server", "-m", p.to_str().unwrap()]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
}

// ---------- errors are one line ----------

#[test]
fn control_characters_in_echoed_values_are_escaped() {
    refused(&["inspect", "/tmp/no\nsuch\rmodel"], "no\\nsuch\\rmodel");
    refused(&["doctor", "/tmp/no\nsuch.log"], "no\\nsuch.log");
    refused(&["snapshot", "/tmp/no\nsuch.pickle"], "no\\nsuch.pickle");
    refused(&["inspect", "\u{1b}[31mred"], "\\u{1b}[31mred");
    let o = check("RTX 4090", &[], &["vllm\nserve", "m"]);
    assert_refused(&o, "vllm\\nserve");
    let o = check(
        "RTX 4090",
        &[],
        &["vllm", "serve", "Qwen/Qwen3-8B", "--dtype", "a\nb"],
    );
    assert_refused(&o, "a\\nb");
    // clap's own errors are one line too
    refused(&["inspect", "--bogus\nflag"], "--bogus");
    refused(&["frobnicate"], "frobnicate");
    refused(&["check", "--gpu"], "--gpu");
}
