//! The Ollama and transformers planners against the engine models they plan with, over catalog
//! models (dense, MoE, sliding-window, one not in Ollama's tag table) × GPU setups (RTX 4090,
//! A100 80 GB, 2× RTX 3090, RTX 4060 8 GB): every command a plan prints, fed back through the
//! same steps as `vramfit check` (parse with the engine's own reader → resolve → engine plan),
//! fits the free memory it was planned for, and the boundaries are exact — Ollama's `num_ctx`
//! fits and 256 more (its padding step) does not, one more slot does not; transformers' total
//! sequence fits and one more token does not, one more sequence in the batch does not. The CLI
//! tests run `vramfit fit --engine ollama|transformers --json` and the plans' own `check` lines.
//!
//! Offline: models come from the embedded catalog (HF_HUB_OFFLINE=1, an empty HF cache).

mod common;
use common::{gpu, offline, planned_hw, with_flag};
use std::process::Command as Process;
use vramfit_engine::cmdline::{shell_split, Command, EngineKind};
use vramfit_engine::ollama::{self, tags};
use vramfit_engine::{transformers, Hardware, MemoryPlan, Verdict};
use vramfit_plan::solve::{self, Model};
use vramfit_plan::{model, Engine, Goal, Plan, Request};

/// The Modelfile an Ollama plan tells the user to write: the lines of its `printf` setting.
fn modelfile_of(p: &Plan) -> String {
    let line = &p
        .settings
        .iter()
        .find(|s| s.knob == "Modelfile")
        .expect("an Ollama plan carries its Modelfile")
        .value;
    let words = shell_split(line).unwrap();
    assert_eq!(words[..2], ["printf", "%s\\n"], "{line}");
    let end = words.iter().position(|w| w == ">").unwrap();
    assert_eq!(words[end + 1], "Modelfile");
    words[2..end].join("\n") + "\n"
}

/// What `vramfit check` does with an Ollama command (crates/vramfit/src/cmd/check.rs), the
/// Modelfile beside it.
fn check_ollama(command: &str, modelfile: &str, hw: &Hardware) -> MemoryPlan {
    let cmd = Command::parse(&[command]).expect("plan command parses");
    assert_eq!(cmd.engine, Some(EngineKind::Ollama));
    let read = |p: &str| {
        assert_eq!(p, "Modelfile");
        Ok(modelfile.to_string())
    };
    let cfg = ollama::parse(&cmd, None, &read).expect("ollama command parses");
    let mut r = match tags::resolve(&cfg.model).expect("the model is a name Ollama knows") {
        tags::OllamaModel::Library { repo, quant } => {
            let mut r = model::load(&repo).unwrap();
            r.gguf_quant.get_or_insert(quant);
            r
        }
        tags::OllamaModel::HfRepo(id) => model::load(&id).unwrap(),
        tags::OllamaModel::Path(p) => model::load(&p).unwrap(),
    };
    if r.gguf_quant.is_none() && r.weights.is_none() {
        r.gguf_quant = Some("Q4_K_M".into());
    }
    let w = model::gguf_weights(&r).unwrap();
    ollama::plan(&r.spec, &w, &cfg, hw).expect("llama-server accepts what Ollama passes")
}

/// What `vramfit check` does with a transformers command.
fn check_transformers(argv: &[String], hw: &Hardware) -> MemoryPlan {
    let cmd = Command::parse(argv).expect("plan command parses");
    let cfg = transformers::parse(&cmd).expect("transformers command parses");
    let r = model::load(&cfg.model).unwrap();
    transformers::plan(&r.spec, &cfg, hw)
}

fn replace_line(text: &str, prefix: &str, value: u64) -> String {
    text.lines()
        .map(|l| {
            if l.starts_with(prefix) {
                format!("{prefix}{value}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

fn verify_ollama(p: &Plan, hw: &Hardware, n_ctx_train: u64, what: &str) {
    let h = planned_hw(p, hw);
    let mf = modelfile_of(p);
    let fits = |cmd: &str, mf: &str| check_ollama(cmd, mf, &h).verdict == Verdict::Fits;
    let fed = check_ollama(&p.command, &mf, &h);
    assert_eq!(fed.verdict, Verdict::Fits, "{what}: {}\n{mf}", p.command);
    assert_eq!(fed.devices.len(), p.devices.len(), "{what}: devices");
    assert_eq!(fed.kv_cache.bytes, p.kv_cache.bytes, "{what}: KV bytes");
    let used = |m: &MemoryPlan| m.devices.iter().map(|d| d.used_bytes).collect::<Vec<_>>();
    assert_eq!(
        used(&fed),
        p.devices.iter().map(|d| d.used_bytes).collect::<Vec<_>>()
    );
    assert!(mf.contains(&format!("PARAMETER num_ctx {}\n", p.max_model_len)));
    let c = p.max_context;
    assert!(c >= p.max_model_len, "{what}: max_context {c}");
    let at_ctx = |c: u64| replace_line(&mf, "PARAMETER num_ctx ", c);
    assert!(fits(&p.command, &at_ctx(c)), "{what}: num_ctx {c}");
    if c < n_ctx_train {
        assert!(c.is_multiple_of(256), "{what}: {c}");
        assert!(
            !fits(&p.command, &at_ctx(c + 256)),
            "{what}: num_ctx {} also fits: {}",
            c + 256,
            p.command
        );
    }
    let n = p.max_concurrency;
    let slots = |n: u64| {
        p.command.replace(
            &format!("OLLAMA_NUM_PARALLEL={}", p.concurrency),
            &format!("OLLAMA_NUM_PARALLEL={n}"),
        )
    };
    assert!(
        n >= p.concurrency && fits(&slots(n), &mf),
        "{what}: {n} slots"
    );
    let single = p
        .settings
        .iter()
        .any(|s| s.why.contains("one slot whatever"));
    if n < 256 && !single {
        assert!(
            !fits(&slots(n + 1), &mf),
            "{what}: {} slots also fit: {}",
            n + 1,
            p.command
        );
    }
}

fn verify_transformers(p: &Plan, hw: &Hardware, n_ctx_train: u64, what: &str) {
    let h = planned_hw(p, hw);
    let env: Vec<String> = p.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let with_env = |a: Vec<String>| env.iter().cloned().chain(a).collect::<Vec<_>>();
    let fits = |a: Vec<String>| check_transformers(&with_env(a), &h).verdict == Verdict::Fits;
    let fed = check_transformers(&shell_split(&p.command).unwrap(), &h);
    assert_eq!(fed.verdict, Verdict::Fits, "{what}: {}", p.command);
    assert_eq!(fed.devices.len(), hw.gpus.len(), "{what}: devices");
    assert_eq!(fed.kv_cache.bytes, p.kv_cache.bytes, "{what}: KV bytes");
    let flag = |f: &str| -> u64 {
        let i = p.argv.iter().position(|x| x == f).unwrap();
        p.argv[i + 1].parse().unwrap()
    };
    let new = flag("--max-new-tokens");
    assert_eq!(flag("--prompt-tokens") + new, p.max_model_len, "{what}");
    let t = p.max_context;
    assert!(
        fits(with_flag(&p.argv, "--prompt-tokens", t - new)),
        "{what}: total {t}"
    );
    if t < n_ctx_train {
        assert!(
            !fits(with_flag(&p.argv, "--prompt-tokens", t + 1 - new)),
            "{what}: total {} also fits: {}",
            t + 1,
            p.command
        );
    }
    let n = p.max_concurrency;
    assert!(
        n >= p.concurrency && fits(with_flag(&p.argv, "--batch-size", n)),
        "{what}: batch {n}"
    );
    if n < 1024 {
        assert!(
            !fits(with_flag(&p.argv, "--batch-size", n + 1)),
            "{what}: batch {} also fits: {}",
            n + 1,
            p.command
        );
    }
}

fn setups() -> Vec<(&'static str, Hardware)> {
    [
        ("RTX 4090", vec![gpu("rtx-4090")]),
        ("A100-80G", vec![gpu("a100-sxm-80gb")]),
        ("2x RTX 3090", vec![gpu("rtx-3090"), gpu("rtx-3090")]),
        ("RTX 4060", vec![gpu("rtx-4060")]),
    ]
    .into_iter()
    .map(|(n, g)| {
        (
            n,
            Hardware {
                gpus: g,
                host_ram_bytes: None,
            },
        )
    })
    .collect()
}

const MODELS: &[&str] = &[
    "Qwen/Qwen3-8B",
    "meta-llama/Llama-3.1-8B-Instruct",
    "mistralai/Mistral-7B-v0.1",
    "Qwen/Qwen3-30B-A3B",
    "openai/gpt-oss-20b",
    "google/gemma-3-12b-it",
    "google/gemma-3-1b-it",
    "Qwen/Qwen3-32B",
];

fn run_matrix(engine: Engine, quants: Option<Vec<String>>, context: Option<u64>) -> (u32, u32) {
    offline("vramfit-fit-ollama-tf-empty-hub");
    let (mut plans, mut none) = (0, 0);
    for id in MODELS {
        let m = Model::load(id).unwrap_or_else(|e| panic!("{id}: {e}"));
        let n_ctx_train = m.spec().n_ctx_train;
        for (gname, hw) in &setups() {
            let req = Request {
                engines: vec![engine],
                context,
                concurrency: None,
                goal: Goal::Quality,
                quants: quants.clone(),
                headroom: None,
            };
            let what = format!("{id} on {gname} with {}", engine.name());
            match solve::fit(&m, hw, &req) {
                Ok(res) => {
                    for p in &res.plans {
                        assert_eq!(p.engine, engine.name());
                        match engine {
                            Engine::Ollama => verify_ollama(p, hw, n_ctx_train, &what),
                            _ => verify_transformers(p, hw, n_ctx_train, &what),
                        }
                        plans += 1;
                    }
                }
                Err(e) => {
                    assert!(e.to_string().starts_with("nothing fits"), "{what}: {e}");
                    none += 1;
                }
            }
        }
    }
    eprintln!(
        "{}: verified {plans} plans; {none} model/GPU cells where nothing fits",
        engine.name()
    );
    (plans, none)
}

#[test]
fn ollama_commands_pass_check_and_boundaries_are_exact() {
    let (plans, _) = run_matrix(
        Engine::Ollama,
        Some(vec!["Q8_0".into(), "Q4_K_M".into()]),
        None,
    );
    // only quants a known repo or library name publishes are planned (the GGUF catalog)
    assert!(plans >= 100, "only {plans} plans verified");
    // at an asked context, with the layers that do not fit on the CPU
    let (plans, _) = run_matrix(Engine::Ollama, Some(vec!["Q8_0".into()]), Some(16384));
    assert!(plans > 40, "only {plans} plans verified");
}

#[test]
fn transformers_commands_pass_check_and_boundaries_are_exact() {
    let (plans, _) = run_matrix(Engine::Transformers, None, None);
    assert!(plans > 50, "only {plans} plans verified");
    let (plans, _) = run_matrix(Engine::Transformers, None, Some(8192));
    assert!(plans > 40, "only {plans} plans verified");
}

fn vramfit(args: &[&str], dir: &std::path::Path) -> std::process::Output {
    Process::new(env!("CARGO_BIN_EXE_vramfit"))
        .args(args)
        .current_dir(dir)
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HUB_CACHE", dir.join("hub"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// `vramfit fit --json` for each engine: the documented keys; then each plan's own `check`
/// line, run by a shell as a person pastes it (the Ollama one writes its Modelfile first),
/// says it fits with the plan's numbers.
#[test]
fn fit_json_and_check_lines() {
    let tmp = tempfile::tempdir().unwrap();
    for (engine, needles) in [
        (
            "ollama",
            &[
                "OLLAMA_NUM_PARALLEL=",
                "OLLAMA_KV_CACHE_TYPE=",
                "OLLAMA_FLASH_ATTENTION=1",
                "ollama serve &",
                "-f Modelfile && ollama run ",
            ][..],
        ),
        (
            "transformers",
            &[
                "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True transformers Qwen/Qwen3-8B",
                "--batch-size ",
                "--prompt-tokens ",
                "--max-new-tokens ",
                "--device-map ",
            ][..],
        ),
    ] {
        let o = vramfit(
            &[
                "fit",
                "Qwen/Qwen3-8B",
                "--gpu",
                "RTX 4090",
                "--engine",
                engine,
                "--json",
            ],
            tmp.path(),
        );
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let plans = v["plans"].as_array().unwrap();
        assert!(plans.len() >= 3, "{engine}: {} plans", plans.len());
        for p in plans {
            for k in [
                "engine",
                "command",
                "env",
                "settings",
                "verdict",
                "devices",
                "kv_cache",
                "max_model_len",
                "est_tokens_per_s",
            ] {
                assert!(p.get(k).is_some(), "{engine} plan lacks {k}");
            }
            assert_eq!(p["engine"], engine);
            assert_eq!(p["verdict"], "fits");
            let cmd = p["command"].as_str().unwrap();
            for n in needles {
                assert!(cmd.contains(n), "{cmd} lacks {n}");
            }
        }
        let p = &plans[0];
        let bin = env!("CARGO_BIN_EXE_vramfit");
        let line = p["check"]
            .as_str()
            .unwrap()
            .replace("vramfit check", &format!("{bin} check --json"));
        let out = Process::new("sh")
            .args(["-c", &line])
            .current_dir(tmp.path())
            .env("HF_HUB_OFFLINE", "1")
            .env("HF_HUB_CACHE", tmp.path().join("hub"))
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{line}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(c["engine"], engine);
        assert_eq!(c["verdict"], "fits");
        assert_eq!(c["kv_cache"]["bytes"], p["kv_cache"]["bytes"], "{line}");
        assert_eq!(
            c["devices"][0]["used_bytes"], p["devices"][0]["used_bytes"],
            "{line}"
        );
    }
}
