//! llama.cpp's own `--fit` (common/fit.cpp), mirrored: where a real log records what the engine
//! chose, vramfit's mirrored choice must match it within one layer; and the rules for when the
//! engine gives up (pinned `-ngl`, `-ot`, ...) or does nothing (`--fit off`).

use vramfit_engine::llamacpp::{self, autofit};
use vramfit_engine::{Gpu, Hardware, Verdict};
use vramfit_model::hf_config::spec_from_config;
use vramfit_model::quant::{self, FileType};
use vramfit_model::{catalog, layout, GgmlType, ModelSpec, WeightSet};

const MIB: u64 = 1 << 20;

fn model(id: &str, quant: &str) -> (ModelSpec, WeightSet) {
    let m = catalog::models().iter().find(|m| m.id == id).expect(id);
    let spec = spec_from_config(&m.id, &m.config).unwrap();
    let ft = FileType::parse(quant).unwrap().ftype;
    let w = quant::predict(&layout::synthesize(&spec, GgmlType::F16), &spec, ft, false);
    (spec, w)
}

/// GPUs with `free_mib` free as llama.cpp's fit saw it (after its CUDA context), expressed as
/// vramfit's free-at-launch (which counts that context).
fn hw(free_mib: &[u64], bw: Option<f64>) -> Hardware {
    Hardware {
        gpus: free_mib
            .iter()
            .map(|f| Gpu {
                name: "GPU".into(),
                total_bytes: f * MIB + llamacpp::CUDA_CONTEXT_BYTES,
                free_bytes: f * MIB + llamacpp::CUDA_CONTEXT_BYTES,
                bandwidth_gbps: bw,
                compute_capability: None,
                unified: false,
            })
            .collect(),
        host_ram_bytes: None,
    }
}

fn cfg(args: &str, build: u32) -> llamacpp::LlamaCppConfig {
    let mut a = vec!["-m".to_string(), "x.gguf".to_string()];
    a.extend(args.split_whitespace().map(String::from));
    llamacpp::parse(
        "llama-server",
        &a,
        &[],
        Some(llamacpp::version::Build(build)),
    )
    .unwrap()
}

/// Blocks whose routed experts stay on the GPU (no part moved by --fit).
fn full_blocks(run: &autofit::FitRun, n_blocks: u64) -> u64 {
    let total: u64 = run
        .layers
        .as_ref()
        .map(|l| l.iter().map(|d| d.n_layer).sum())
        .unwrap_or(0);
    let first_gpu = (n_blocks + 1).saturating_sub(total);
    let parts: Vec<u64> = run
        .cfg
        .fit_layers
        .as_ref()
        .map(|p| {
            p.iter()
                .map(|(il, _, _)| il)
                .filter(|il| *il < n_blocks)
                .collect()
        })
        .unwrap_or_default();
    (first_gpu..n_blocks)
        .filter(|il| !parts.contains(il))
        .count() as u64
}

/// tools/fit-params/README.md (ggml-org/llama.cpp, PR #16653; dev record
/// code_fitparams_readme_qwen3_30b_a3b_f16_rtx4090): Qwen3-30B-A3B F16 on an RTX 4090:
/// context 40960 → 4096, all 48 layers on the GPU, routed experts of blocks 14..47 in host
/// memory (14 blocks keep theirs). The engine's own figures for the device it fitted to:
/// "19187 MiB used, 1199 MiB free", i.e. 20386 MiB it could use.
#[test]
fn fit_params_readme_qwen3_30b_a3b_f16_rtx4090() {
    let (spec, w) = model("Qwen/Qwen3-30B-A3B", "F16");
    let c = cfg("-np 1", 7500);
    let h = hw(&[20386], Some(1008.0));
    let pw = llamacpp::prepare(&spec, &w);
    let run = autofit::run(&spec, &pw, &c, &h).expect("--fit is on by default");
    // the engine's projection of the fitted layout: 19187 MiB (model 17904, context 384,
    // compute 898)
    let l = llamacpp::layout_prepared(&spec, &pw, &run.cfg, &h, run.n_ctx);
    let mem = (l.weights[0] + l.kv[0] + l.compute[0]) / MIB;
    assert!(
        (18187..=20386).contains(&mem),
        "projected {mem} MiB, llama.cpp 19187"
    );
    assert_eq!(run.n_ctx, 4096, "context cut to --fit-ctx");
    let full = full_blocks(&run, pw.n_blocks);
    assert!(
        (13..=15).contains(&full),
        "blocks with experts on the GPU: {full}, llama.cpp chose 14"
    );
    let total: u64 = run.layers.as_ref().unwrap().iter().map(|d| d.n_layer).sum();
    assert_eq!(total, pw.n_blocks + 1, "every layer stays on the GPU");
    // the plan says it fits, what moved, and the host RAM it needs
    let p = llamacpp::plan(&spec, &w, &c, &h);
    assert_eq!(p.verdict, Verdict::Fits, "{p:#?}");
    let notes = p.notes.join("\n");
    assert!(notes.contains("routed experts"), "{notes}");
    assert!(notes.contains("host RAM needed"), "{notes}");
    assert!(notes.contains("speed cost"), "{notes}");
    // what the GPU does not hold: ~57 GiB of F16 less the 17904 MiB model buffer on the GPU
    // (llama.cpp's Host row shows the whole mmapped file, 58259 MiB)
    assert!(
        (36u64 << 30..42 << 30).contains(&p.host.weights_bytes),
        "{:?}",
        p.host
    );
}

/// ggml-org/llama.cpp#20153 and #19437 (dev records issue_llamacpp20153_*, issue_llamacpp19437_*):
/// with `-ngl` given, --fit cuts an unset context but then gives up ("n_gpu_layers already set
/// by user"); the launch is judged as given.
#[test]
fn pinned_ngl_cuts_context_then_gives_up() {
    let (spec, w) = model("Qwen/Qwen3-30B-A3B", "Q4_K_M");
    let c = cfg("-ngl 99", 9725);
    let h = hw(&[12000], None);
    let pw = llamacpp::prepare(&spec, &w);
    let run = autofit::run(&spec, &pw, &c, &h).unwrap();
    assert!(matches!(run.outcome, autofit::Outcome::Failed(ref w) if w.contains("-ngl 99")));
    assert!(run.n_ctx < run.ctx_from);
    let p = llamacpp::plan(&spec, &w, &c, &h);
    assert_eq!(p.verdict, Verdict::DoesNotFit);
    assert!(
        p.suggestions.iter().any(|s| s.starts_with("drop -ngl")),
        "{:#?}",
        p.suggestions
    );
}

/// `--fit off` and a pinned context: nothing is moved, and a launch that cannot fit says so.
#[test]
fn fit_off_still_does_not_fit() {
    let (spec, w) = model("Qwen/Qwen3-30B-A3B", "Q4_K_M");
    let h = hw(&[11000], None);
    let off = cfg("--fit off", 9725);
    let pw = llamacpp::prepare(&spec, &w);
    assert!(autofit::run(&spec, &pw, &off, &h).is_none());
    let p = llamacpp::plan(&spec, &w, &off, &h);
    assert_eq!(p.verdict, Verdict::DoesNotFit);
    assert!(
        p.suggestions
            .iter()
            .any(|s| s.starts_with("drop --fit off")),
        "{:#?}",
        p.suggestions
    );
    // on by default: the same launch fits with experts in host RAM
    let on = llamacpp::plan(&spec, &w, &cfg("", 9725), &h);
    assert_eq!(on.verdict, Verdict::Fits, "{:#?}", on.notes);
    // before b7407 there is no --fit
    let old = llamacpp::plan(&spec, &w, &cfg("-ngl 99", 7000), &h);
    assert!(
        !old.notes.iter().any(|n| n.contains("--fit")),
        "{:#?}",
        old.notes
    );
}

/// A dense model that does not fit whole: --fit keeps the first layers on the CPU, as many as
/// needed and no more (the largest -ngl that keeps the target free).
#[test]
fn dense_model_moves_whole_layers() {
    let (spec, w) = model("meta-llama/Llama-3.3-70B-Instruct", "Q4_K_M");
    let c = cfg("", 9725);
    let h = hw(&[23000], Some(1008.0));
    let pw = llamacpp::prepare(&spec, &w);
    let run = autofit::run(&spec, &pw, &c, &h).unwrap();
    assert_eq!(run.outcome, autofit::Outcome::Layers);
    assert_eq!(run.n_ctx, 4096);
    let ngl: u64 = run.layers.as_ref().unwrap()[0].n_layer;
    assert!(run.cfg.fit_layers.is_none(), "dense layers move whole");
    // the boundary: ngl fits the target, ngl + 1 does not
    let margin = autofit::margin(&c, 0);
    let used = |n: u64| {
        let mut k = c.clone();
        k.n_gpu_layers = Some(n as i64);
        llamacpp::layout_prepared(&spec, &pw, &k, &h, 4096).used(0)
    };
    assert!(used(ngl) + margin <= h.gpus[0].free_bytes);
    assert!(used(ngl + 1) + margin > h.gpus[0].free_bytes);
    let p = llamacpp::plan(&spec, &w, &c, &h);
    assert_eq!(p.verdict, Verdict::Fits);
}

/// Two GPUs: layers are split by counts (-ts), the output layer on the last device, and every
/// device keeps its target.
#[test]
fn two_gpus_split_by_layer_counts() {
    let (spec, w) = model("meta-llama/Llama-3.3-70B-Instruct", "Q4_K_M");
    let c = cfg("-c 8192", 9725);
    let h = hw(&[23000, 15000], None);
    let pw = llamacpp::prepare(&spec, &w);
    let run = autofit::run(&spec, &pw, &c, &h).unwrap();
    assert_eq!(run.n_ctx, 8192, "a context set by the user is kept");
    let l = llamacpp::layout_prepared(&spec, &pw, &run.cfg, &h, run.n_ctx);
    for d in 0..2 {
        assert!(
            l.used(d) + autofit::margin(&c, d) <= h.gpus[d].free_bytes,
            "device {d}"
        );
    }
    assert!(run.cfg.tensor_split.is_some());
}

/// The rules read from common/fit.cpp for what stops the layer step: each pin gives up, the
/// context cut stays; `-c` only keeps the context.
#[test]
fn what_pins_the_layers() {
    let (spec, w) = model("Qwen/Qwen3-30B-A3B", "Q4_K_M");
    let h = hw(&[7000, 7000], None);
    let pw = llamacpp::prepare(&spec, &w);
    for (flags, why) in [
        ("-ngl 40", "-ngl 40"),
        ("-ts 1,1", "-ts"),
        ("-sm row", "-sm row"),
        ("-ot blk\\.1\\.ffn_up_exps=CPU", "-ot"),
        ("--n-cpu-moe 2", "--cpu-moe"),
        ("-sm tensor", "-sm tensor"),
    ] {
        let run = autofit::run(&spec, &pw, &cfg(flags, 9725), &h).unwrap();
        match &run.outcome {
            autofit::Outcome::Failed(w) => assert!(w.contains(why), "{flags}: {w}"),
            o => panic!("{flags}: {o:?}"),
        }
        assert!(run.layers.is_none(), "{flags}");
    }
    // -ngl -1 / auto is the default: not a pin
    let run = autofit::run(&spec, &pw, &cfg("-ngl auto", 9725), &h).unwrap();
    assert!(
        !matches!(run.outcome, autofit::Outcome::Failed(_)),
        "{:?}",
        run.outcome
    );
    // -c: the context is kept, layers still move
    let run = autofit::run(&spec, &pw, &cfg("-c 65536", 9725), &h).unwrap();
    assert_eq!(run.n_ctx, 65536);
    assert_eq!(run.outcome, autofit::Outcome::Layers);
    // llama-bench never fits
    let mut b = cfg("", 9725);
    b.tool = llamacpp::args::Tool::Bench;
    assert!(autofit::run(&spec, &pw, &b, &h).is_none());
}

/// Old Ollama (before the llama-server runner): whole layers by its own reserve, no --fit.
#[test]
fn ollama_before_0_30_places_whole_layers() {
    use vramfit_engine::cmdline::Command;
    use vramfit_engine::ollama;
    let (spec, w) = model("google/gemma-3-27b-it", "Q4_K_M");
    let h = hw(&[11800], Some(360.0));
    let no_file = |_: &str| -> Result<String, String> { Err("no file".into()) };
    let cmd = Command::parse(&["ollama run gemma3:27b"]).unwrap();
    let old = ollama::parse(&cmd, Some("0.12.3"), &no_file).unwrap();
    let p = ollama::plan(&spec, &w, &old, &h).unwrap();
    let notes = p.notes.join("\n");
    assert!(
        notes.contains("estimateGPULayers") && notes.contains("num_gpu"),
        "{notes}"
    );
    assert!(
        !notes.contains("routed experts") && !notes.contains("llama-server's --fit"),
        "{notes}"
    );
    assert_eq!(p.verdict, Verdict::Fits);
    let new = ollama::parse(&cmd, None, &no_file).unwrap();
    let p = ollama::plan(&spec, &w, &new, &h).unwrap();
    assert!(
        p.notes
            .iter()
            .any(|n| n.starts_with("llama-server's --fit")),
        "{:#?}",
        p.notes
    );
}

/// Over dense, MoE, MLA and SWA models on one to three unequal GPUs: --fit never panics, and
/// when it places layers every device keeps its target (unless not even the non-layer buffers
/// fit), with every layer accounted for.
#[test]
fn placed_layers_keep_every_target() {
    let ids = [
        "Qwen/Qwen3-30B-A3B",
        "meta-llama/Llama-3.3-70B-Instruct",
        "google/gemma-3-27b-it",
        "deepseek-ai/DeepSeek-V2-Lite",
        "zai-org/GLM-4.5-Air",
    ];
    let mut placed = 0;
    for id in ids {
        let (spec, w) = model(id, "Q4_K_M");
        let pw = llamacpp::prepare(&spec, &w);
        for free in [vec![6000], vec![12000, 5000], vec![9000, 9000, 3000]] {
            let h = hw(&free, None);
            for flags in ["", "-c 16384", "-np 2 -kvu"] {
                let c = cfg(flags, 9725);
                let run = autofit::run(&spec, &pw, &c, &h).unwrap();
                let Some(layers) = &run.layers else { continue };
                placed += 1;
                let total: u64 = layers.iter().map(|d| d.n_layer).sum();
                assert!(total <= pw.n_blocks + 1, "{id} {free:?} {flags}");
                let l = llamacpp::layout_prepared(&spec, &pw, &run.cfg, &h, run.n_ctx);
                let zero = {
                    let mut z = c.clone();
                    z.n_gpu_layers = Some(0);
                    llamacpp::layout_prepared(&spec, &pw, &z, &h, run.n_ctx)
                };
                for d in 0..free.len() {
                    let target = h.gpus[d].free_bytes - autofit::margin(&c, d);
                    if zero.used(d) <= target {
                        assert!(
                            l.used(d) <= target,
                            "{id} {free:?} '{flags}' device {d}: {} > {target} ({layers:?})",
                            l.used(d)
                        );
                    }
                }
            }
        }
    }
    assert!(placed >= 10, "only {placed} launches needed layer moves");
}
