//! A property pass over the command line itself (issue 15): arbitrary words in every flag of
//! every command and after `--`, against the real binary. Whatever the words, vramfit ends
//! within its deadline with exit 0, 1 or 2; never a panic; exit 2 is exactly one line on stderr;
//! exit 0 or 1 wrote something.
//!
//! `PROPTEST_CASES=N` runs more cases; `VRAMFIT_BIN=PATH` runs a copy of the binary (for long runs).

use proptest::prelude::*;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Flags of the commands and of the engines' parsers, as people write them.
const FLAGS: &[&str] = &[
    "--gpu",
    "--gpu-free",
    "--engine-version",
    "--json",
    "--engine",
    "--gpus",
    "--quants",
    "--context",
    "--top",
    "--concurrency",
    "--max-model-len",
    "--gpu-memory-utilization",
    "--tensor-parallel-size",
    "-tp",
    "--pipeline-parallel-size",
    "--data-parallel-size",
    "--max-num-seqs",
    "--max-num-batched-tokens",
    "--block-size",
    "--kv-cache-dtype",
    "--quantization",
    "-q",
    "--dtype",
    "--cpu-offload-gb",
    "--kv-cache-memory-bytes",
    "--enforce-eager",
    "--speculative-config",
    "--limit-mm-per-prompt",
    "--model",
    "-m",
    "-hf",
    "-c",
    "--ctx-size",
    "-ngl",
    "--n-gpu-layers",
    "-np",
    "--parallel",
    "-b",
    "-ub",
    "-ctk",
    "-ctv",
    "-fa",
    "--flash-attn",
    "-ts",
    "--tensor-split",
    "-sm",
    "--split-mode",
    "-ot",
    "--override-tensor",
    "--n-cpu-moe",
    "-cmoe",
    "--fit",
    "--mmproj",
    "--num-ctx",
    "--num-gpu",
    "--num-batch",
    "--parameter",
    "--model-path",
    "--context-length",
    "--mem-fraction-static",
    "--tp-size",
    "--dp-size",
    "--pp-size",
    "--max-running-requests",
    "--max-total-tokens",
    "--chunked-prefill-size",
    "--cuda-graph-max-bs",
    "--page-size",
    "--enable-dp-attention",
    "--batch-size",
    "--prompt-tokens",
    "--max-new-tokens",
    "--num-beams",
    "--device-map",
    "--max-memory",
    "--load-in-4bit",
    "--load-in-8bit",
    "--torch-dtype",
    "--",
    "-",
];

/// Values that have broken tools before: extremes, signs, units, unicode, control characters,
/// paths to devices and directories.
const VALUES: &[&str] = &[
    "0",
    "-1",
    "1",
    "-0",
    "1e300",
    "-1e300",
    "nan",
    "inf",
    "-inf",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775808",
    "-9223372036854775809",
    "0.0",
    "1.5",
    "0.9999999999",
    "1.0000001",
    "24GiB",
    "-24GiB",
    "0GiB",
    "1TiB",
    "99999TiB",
    "1e18B",
    "32k",
    "128k",
    "4M",
    "x",
    "2x",
    "2x 4090",
    "0x 4090",
    "65x A100",
    "RTX 4090",
    "RTX ４０９０",
    "H100",
    "A100-80G",
    "MI250X",
    "4090,3090",
    "1,2,3",
    ",",
    ",,",
    "auto",
    "fp8",
    "fp3",
    "float1024",
    "bf16",
    "q4_0",
    "q3_0",
    "Q4_K_M",
    "magic",
    "awq",
    "true",
    "false",
    "on",
    "off",
    "",
    " ",
    "\n",
    "\t",
    "a\nb",
    "\u{1b}[31m",
    "\u{7f}",
    "\u{202e}",
    "🙂",
    "Ω",
    "0.15.2",
    "32kk",
    "b5274",
    "v0.9",
    "latest",
    "Qwen/Qwen3-8B",
    "Qwen/Qwen3-8B-GGUF:Q4_K_M",
    "meta-llama/Llama-3.1-8B-Instruct",
    "unsloth/gpt-oss-20b-GGUF",
    "deepseek-ai/DeepSeek-V3",
    "llama3.1:8b",
    "hf.co/x/y:Q4_K_M",
    "/dev/zero",
    "/dev/null",
    "/dev/urandom",
    "/",
    ".",
    "/etc/passwd",
    "/nonexistent/model.gguf",
    "model.gguf",
    "config.json",
    "http://127.0.0.1:1/x",
    "{}",
    "[]",
    "{\"a\":1}",
    "0:8GiB,cpu:64GiB",
    "blk.*=CPU",
    "0,1",
    "CUDA_VISIBLE_DEVICES=",
    "VLLM_USE_V1=0",
    "--",
    "-",
];

const PROGRAMS: &[&[&str]] = &[
    &["vllm", "serve"],
    &["python", "-m", "vllm.entrypoints.openai.api_server"],
    &["llama-server"],
    &["llama-cli"],
    &["llama-bench"],
    &["ollama", "run"],
    &["ollama", "serve"],
    &["python", "-m", "sglang.launch_server"],
    &["transformers"],
    &["docker", "run", "--gpus", "all", "vllm/vllm-openai:v0.9.0"],
    &["CUDA_VISIBLE_DEVICES=0,1", "vllm", "serve"],
    &[],
];

const COMMANDS: &[&str] = &[
    "check", "fit", "table", "inspect", "catalog", "doctor", "snapshot", "models", "gpus",
];

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(FLAGS).prop_map(str::to_string),
        3 => proptest::sample::select(VALUES).prop_map(str::to_string),
        1 => any::<i64>().prop_map(|n| n.to_string()),
        1 => any::<f64>().prop_map(|f| f.to_string()),
        1 => "\\PC{0,16}",
        1 => "[\\x01-\\x1f -~]{0,12}",
    ]
    .prop_map(|w: String| w.replace('\0', ""))
}

fn argv() -> impl Strategy<Value = Vec<String>> {
    (
        proptest::sample::select(COMMANDS),
        proptest::collection::vec(word(), 0..8),
        proptest::option::of((
            proptest::sample::select(PROGRAMS),
            proptest::collection::vec(word(), 0..12),
        )),
    )
        .prop_map(|(cmd, before, after)| {
            let mut a = vec![cmd.to_string()];
            a.extend(before);
            if let Some((prog, words)) = after {
                a.push("--".into());
                a.extend(prog.iter().map(|s| s.to_string()));
                a.extend(words);
            }
            a
        })
}

struct Run {
    code: Option<i32>,
    stdout_len: usize,
    stderr: String,
    elapsed: Duration,
}

fn run(args: &[String]) -> Run {
    let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile-argv");
    std::fs::create_dir_all(home.join("hub")).unwrap();
    let start = Instant::now();
    // VRAMFIT_BIN: a copy of the binary for long runs, which a rebuild must not replace
    let bin = std::env::var("VRAMFIT_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_vramfit").into());
    let mut child = Command::new(bin)
        .args(args)
        .current_dir(&home)
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HOME", &home)
        .env("HF_HUB_CACHE", home.join("hub"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v.len()
    });
    let e = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        String::from_utf8_lossy(&v).into_owned()
    });
    // a watchdog kills a run past its deadline (a hang); the main thread just waits
    let pid = child.id().to_string();
    let (done, wait_done) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if wait_done.recv_timeout(Duration::from_secs(30)).is_err() {
            let _ = Command::new("kill").args(["-9", &pid]).status();
            return true;
        }
        false
    });
    let status = child.wait().unwrap();
    let _ = done.send(());
    let killed = watchdog.join().unwrap();
    let status = (!killed).then_some(status);
    Run {
        code: status.and_then(|s| s.code()),
        stdout_len: o.join().unwrap(),
        stderr: e.join().unwrap(),
        elapsed: start.elapsed(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_command_line_ends_cleanly(args in argv()) {
        // commands that write files or serve forever are left out
        prop_assume!(!args.iter().any(|a| a == "--svg" || a == "--record" || a == "--prometheus"));
        let r = run(&args);
        prop_assert!(r.code.is_some(), "killed after {:?} (hang or signal): {args:?}", r.elapsed);
        let code = r.code.unwrap();
        prop_assert!(!r.stderr.contains("panicked"), "panic on {args:?}: {}", r.stderr);
        prop_assert!(matches!(code, 0..=2), "exit {code} on {args:?}: {}", r.stderr);
        if code == 2 {
            prop_assert!(r.stderr.starts_with("vramfit: "), "{args:?}: {:?}", r.stderr);
            prop_assert_eq!(r.stderr.matches('\n').count(), 1, "{:?}: {:?}", args, r.stderr);
            prop_assert_eq!(r.stdout_len, 0, "{:?}", args);
        } else {
            prop_assert!(r.stdout_len > 0, "exit {code} with nothing written: {args:?}");
        }
    }
}
