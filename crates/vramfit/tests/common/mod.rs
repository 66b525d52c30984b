//! What the `fit` test files share: an offline, empty HF cache; `vramfit check`'s steps on a
//! pasted command (parse → resolve → engine plan); and small edits of a plan's command.
#![allow(dead_code)] // each test binary uses its own subset

use vramfit_engine::cmdline::{Command, EngineKind};
use vramfit_engine::{llamacpp, sglang, vllm, Gpu, Hardware, MemoryPlan};
use vramfit_model::catalog::find_gpu;
use vramfit_plan::{model, Plan};

/// No network and an empty HF cache of the test's own (`name`), so models come from the
/// embedded catalog.
pub fn offline(name: &str) {
    let dir = std::env::temp_dir().join(name);
    let _ = std::fs::create_dir_all(&dir);
    std::env::set_var("HF_HUB_OFFLINE", "1");
    std::env::set_var("HF_HUB_CACHE", &dir);
}

/// A clean catalog GPU.
pub fn gpu(name: &str) -> Gpu {
    Gpu::from_catalog(find_gpu(name).unwrap())
}

pub fn hw(gpus: Vec<Gpu>) -> Hardware {
    Hardware {
        gpus,
        host_ram_bytes: None,
    }
}

/// What `vramfit check` does with a pasted vLLM, llama.cpp or SGLang command
/// (crates/vramfit/src/cmd/check.rs).
pub fn check(argv: &[String], hw: &Hardware) -> MemoryPlan {
    let cmd = Command::parse(argv).expect("plan command parses");
    match cmd.engine {
        Some(EngineKind::Vllm) => {
            let cfg = vllm::parse(&cmd, None).expect("vllm command parses");
            let r = model::load(&cfg.model).expect("model resolves offline");
            vllm::plan(&r.spec, r.weights.as_ref(), &cfg, hw)
        }
        Some(EngineKind::LlamaCpp) => {
            let cfg = llamacpp::parse(&cmd.program, &cmd.args, &cmd.env, None)
                .expect("llama.cpp command parses");
            let m = cfg.model_path.clone().or(cfg.hf_repo.clone()).unwrap();
            let r = model::load(&m).expect("model resolves offline");
            let w = model::gguf_weights(&r).expect("quant predicts");
            llamacpp::plan(&r.spec, &w, &cfg, hw)
        }
        Some(EngineKind::Sglang) => {
            let cfg = sglang::parse(&cmd).expect("sglang command parses");
            let r = model::load(&cfg.model).expect("model resolves offline");
            sglang::plan(&r.spec, r.weights.as_ref(), &cfg, hw)
        }
        other => panic!("unexpected engine {other:?}"),
    }
}

/// The command with `flag`'s value replaced (the flag added when the command leaves it out).
pub fn with_flag(argv: &[String], flag: &str, value: u64) -> Vec<String> {
    let mut a = argv.to_vec();
    match a.iter().position(|x| x == flag) {
        Some(i) => a[i + 1] = value.to_string(),
        // a flag the plan leaves to the engine (SGLang's --max-running-requests): added
        None => a.extend([flag.to_string(), value.to_string()]),
    }
    a
}

/// The command with the plan's environment assignments in front, as a person pastes it.
pub fn with_env(p: &Plan, argv: &[String]) -> Vec<String> {
    p.env
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .chain(argv.iter().cloned())
        .collect()
}

/// The GPUs with the free memory the plan was solved against.
pub fn planned_hw(p: &Plan, given: &Hardware) -> Hardware {
    let mut h = given.clone();
    for (g, f) in h.gpus.iter_mut().zip(&p.planned_free_bytes) {
        g.free_bytes = *f;
    }
    h
}

/// `vramfit check ARGS` through the real binary: offline, an empty HF cache and no stored
/// calibration of its own, in a scratch working directory. Returns the exit code, stdout as JSON
/// (`Null` when it is not JSON) and stderr.
pub fn check_cli(args: &[&str]) -> (i32, serde_json::Value, String) {
    cli("check", args)
}

/// Bytes in a GiB, for the tests' readings of plan bytes.
pub const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// `vramfit check --json --gpu GPU -- COMMAND`, the command split at spaces as a shell would
/// split it (no quoting), through [`check_cli`].
pub fn check_on(gpu: &str, command: &str) -> (i32, serde_json::Value, String) {
    let mut a = vec!["--json", "--gpu", gpu, "--"];
    a.extend(command.split_whitespace());
    check_cli(&a)
}

/// `vramfit ARGS` offline, with an empty HF cache and no stored calibration, in a scratch
/// working directory: its output.
pub fn run_offline(args: &[&str]) -> std::process::Output {
    let tmp = tempfile::tempdir().unwrap();
    std::process::Command::new(env!("CARGO_BIN_EXE_vramfit"))
        .args(args)
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HOME", tmp.path().join("hf"))
        .env("HF_HUB_CACHE", tmp.path().join("hf/hub"))
        .env("VRAMFIT_CALIBRATION", "off")
        .env("NO_COLOR", "1")
        .current_dir(tmp.path())
        .output()
        .unwrap()
}

/// `vramfit SUBCOMMAND ARGS` as [`check_cli`] runs `check`.
pub fn cli(subcommand: &str, args: &[&str]) -> (i32, serde_json::Value, String) {
    let mut all = vec![subcommand];
    all.extend_from_slice(args);
    let out = run_offline(&all);
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// One component's count in the accuracy harnesses (accuracy_cv, accuracy_cv_sglang):
/// comparisons, how many within tolerance, and the signed relative errors.
#[derive(Default)]
pub struct Tally {
    pub n: usize,
    pub ok: usize,
    pub errs: Vec<f64>,
}

impl Tally {
    pub fn add(&mut self, err: f64, ok: bool) {
        self.n += 1;
        self.ok += ok as usize;
        self.errs.push(err);
    }

    /// `ok/n` and the median absolute error in %.
    pub fn show(&self) -> String {
        let mut e: Vec<f64> = self.errs.iter().map(|x| x.abs() * 100.0).collect();
        e.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let med = e.get(e.len() / 2).copied().unwrap_or(0.0);
        format!("{:>3}/{:<3} {:>6.1}%", self.ok, self.n, med)
    }
}

/// A harness row (component, signed relative error, within tolerance) as `name +x.x%[ OUT]`.
pub fn signed_rows<S: AsRef<str>>(rows: &[(S, f64, bool)]) -> Vec<String> {
    rows.iter()
        .map(|r| {
            let out = if r.2 { "" } else { " OUT" };
            format!("{} {:+.1}%{out}", r.0.as_ref(), r.1 * 100.0)
        })
        .collect()
}

/// A fixture's `gpu` field: `"4x RTX 4090"`, `"H100 80GB"`, mixed cards comma-separated
/// (`"4090,3090"`), or a size (`"24GiB"`) for a card the log does not name.
pub fn fixture_gpus(spec: &str) -> Vec<Gpu> {
    let mut out = Vec::new();
    for e in spec.split(',').map(str::trim) {
        let (n, name) = match e.split_once(['x', 'X']) {
            Some((n, r))
                if !n.trim().is_empty() && n.trim().chars().all(|c| c.is_ascii_digit()) =>
            {
                (n.trim().parse().unwrap(), r.trim())
            }
            _ => (1usize, e),
        };
        let g = match vramfit_model::units::parse_size(name) {
            Ok(b) if name.starts_with(|c: char| c.is_ascii_digit()) => Gpu {
                name: format!("{name} GPU"),
                total_bytes: b,
                free_bytes: b,
                bandwidth_gbps: None,
                compute_capability: None,
                unified: false,
            },
            _ => gpu(name),
        };
        out.extend(std::iter::repeat(g).take(n));
    }
    out
}
