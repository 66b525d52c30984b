//! `fit`'s decode speed for llama.cpp against published single-request figures
//! (fixtures/decode_figures.tsv, each with its source; docs/speed.md). The constants of
//! `vramfit_plan::speed::GGML_GPU` / `GGML_METAL` were fitted on the rows marked `fit`; the
//! rows marked `held` judge them.

mod common;

/// vramfit's decode estimate for one figure: the plan's `est_tokens_per_s`, or the speed the
/// "nearest" line names when no known GGUF repo publishes that quant.
fn estimate(model: &str, gpu: &str, quant: &str) -> f64 {
    let out = common::run_offline(&[
        "fit",
        model,
        "--gpu",
        gpu,
        "--engine",
        "llama.cpp",
        "--quants",
        quant,
        "--context",
        "4096",
        "--ram",
        "512GiB",
        "--json",
    ]);
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&out.stdout) {
        if let Some(t) = v["plans"][0]["est_tokens_per_s"].as_f64() {
            return t;
        }
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let at = err.find(" tok/s").expect(&err);
    let num = err[..at].rsplit('~').next().unwrap();
    num.parse().expect(&err)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

#[test]
fn llamacpp_decode_speed_matches_published_figures_it_was_not_fitted_on() {
    let text = include_str!("fixtures/decode_figures.tsv");
    let (mut held_gpu, mut held_metal, mut fit) = (Vec::new(), Vec::new(), Vec::new());
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let f: Vec<&str> = line.split('\t').collect();
        let (model, gpu, quant, measured, role) = (f[0], f[1], f[2], f[3], f[4]);
        let measured: f64 = measured.parse().unwrap();
        let est = estimate(model, gpu, quant);
        let err = est / measured - 1.0;
        eprintln!(
            "{role:4} {model:42} {gpu:18} measured {measured:7.1} vramfit {est:7.1} ({:+.0} %)",
            err * 100.0
        );
        let metal = gpu.starts_with("M1 ") || gpu.starts_with("M3 ") || gpu.starts_with("M4 ");
        match (role, metal) {
            ("fit", _) => fit.push(err.abs()),
            (_, true) => held_metal.push(err),
            _ => held_gpu.push(err.abs()),
        }
    }
    assert!(held_gpu.len() >= 10 && held_metal.len() >= 4 && fit.len() >= 10);
    // CUDA / ROCm / Vulkan GPUs held out: the roofline was 59 % off at the median, 105 % at most
    let (m, max) = (
        median(held_gpu.clone()),
        held_gpu.iter().cloned().fold(0.0, f64::max),
    );
    assert!(
        m <= 0.20 && max <= 0.35,
        "held-out GPUs: median {m:.2}, max {max:.2}"
    );
    assert!(median(fit) <= 0.15);
    // Metal held out: M4 and M1 Ultra within 35 %; the M1 Max reads its memory slower still
    // (docs/speed.md), so only the direction is held there: never below the measured speed by
    // more than 20 %, never above it by more than 80 % (the roofline was +299 %)
    for e in held_metal {
        assert!(
            (-0.2..=0.8).contains(&e),
            "held-out Metal figure off by {e:.2}"
        );
    }
}
