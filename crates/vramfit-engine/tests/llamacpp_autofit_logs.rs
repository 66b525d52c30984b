//! More real llama.cpp `--fit` decisions (common/fit.cpp, mirrored in llamacpp/autofit.rs),
//! each from a public log that prints what the engine chose; the mirror must match within one
//! layer. The GGUF's tensor sizes are rebuilt from what the log prints about the file.

use vramfit_engine::llamacpp::{self, autofit};
use vramfit_engine::{Gpu, Hardware};
use vramfit_model::hf_config::spec_from_config;
use vramfit_model::weights::TensorDtype;
use vramfit_model::{catalog, layout, GgmlType, ModelSpec, WeightSet};

const MIB: u64 = 1 << 20;

/// A record of tests/fixtures/llamacpp_fit_logs.jsonl (source, build, the log's lines).
fn case(id: &str) -> serde_json::Value {
    let text = include_str!("fixtures/llamacpp_fit_logs.jsonl");
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["id"] == id)
        .expect(id)
}

fn u(v: &serde_json::Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k}"))
}

fn spec(id: &str) -> ModelSpec {
    let m = catalog::models().iter().find(|m| m.id == id).expect(id);
    spec_from_config(&m.id, &m.config).unwrap()
}

/// The F16 layout of `spec` with each matrix retyped by `ty(name)` (1-D tensors stay F32).
fn retyped(spec: &ModelSpec, ty: impl Fn(&str) -> GgmlType) -> WeightSet {
    let mut w = layout::synthesize(spec, GgmlType::F16);
    for t in w.tensors.iter_mut() {
        if t.dims.len() < 2 {
            t.dtype = TensorDtype::Ggml(GgmlType::F32);
            t.bytes = t.elems() * 4;
            continue;
        }
        let g = ty(&t.name);
        t.bytes = g.row_bytes(t.dims[0]).unwrap() * t.elems() / t.dims[0];
        t.dtype = TensorDtype::Ggml(g);
    }
    w
}

fn block(name: &str) -> Option<u64> {
    name.strip_prefix("blk.")?.split('.').next()?.parse().ok()
}

/// One GPU with `free_mib` free as llama.cpp's fit saw it.
fn hw(free_mib: u64) -> Hardware {
    Hardware {
        gpus: vec![Gpu {
            name: "GPU".into(),
            total_bytes: free_mib * MIB + llamacpp::CUDA_CONTEXT_BYTES,
            free_bytes: free_mib * MIB + llamacpp::CUDA_CONTEXT_BYTES,
            bandwidth_gbps: None,
            compute_capability: None,
            unified: false,
        }],
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

/// A public llama-server log (code-index id 51961927824, a KlimtechRAG session transcript;
/// build 7972 (e06088da0), ROCm, AMD Radeon Pro VII with 7188 MiB free):
/// unsloth Qwen2.5-VL-7B-Instruct UD-Q6_K_XL (qwen2vl: 28 blocks of 3584/18944, 28/4 heads,
/// vocab 152064: Qwen2.5-7B's text widths), `-c 65536`, K and V q8_0, flash attention on,
/// 4 slots with a unified cache, batch and ubatch 512.
/// "projected to use 8404 MiB of device memory vs. 7188 MiB", "context size set by user to
/// 65536 -> no change", "filling dense layers back-to-front: ROCm0: 21 layers, 6080 MiB used,
/// 1107 MiB free"; then "offloaded 21/29 layers to GPU", ROCm0 model buffer 4416.86 MiB, CPU
/// 2214.12 MiB, KV 1360 MiB on ROCm0, compute 304 MiB.
///
/// The file: 141 f32, 106 q8_0 and 92 q6_K tensors, 6.48 GiB. Rebuilt as q8_0 for attn_k,
/// attn_v and ffn_down of blocks 8..27 and every matrix but ffn_down of blocks 0..7 (108 and
/// 90: the two buffers within 1 %: 4405 and 2191 MiB), q6_K otherwise.
#[test]
fn qwen25_vl_7b_ud_q6_k_xl_on_a_radeon_pro_vii() {
    let f = case("klimtech_qwen25_vl_7b_ud_q6_k_xl_radeon_pro_vii");
    let s = spec(f["catalog_text_model"].as_str().unwrap());
    let w = retyped(&s, |name| match block(name) {
        Some(b) if b >= 8 => {
            if name.contains("attn_k.") || name.contains("attn_v.") || name.contains("ffn_down") {
                GgmlType::Q8_0
            } else {
                GgmlType::Q6_K
            }
        }
        Some(_) if !name.contains("ffn_down") => GgmlType::Q8_0,
        _ => GgmlType::Q6_K,
    });
    let gib = w.total_bytes() as f64 / (1u64 << 30) as f64;
    assert!((gib - 6.48).abs() < 0.05, "{gib:.2} GiB vs the file's 6.48");
    let c = cfg(f["args"].as_str().unwrap(), u(&f, "build") as u32);
    let h = hw(u(&f, "free_mib"));
    let pw = llamacpp::prepare(&s, &w);
    let run = autofit::run(&s, &pw, &c, &h).expect("--fit is on by default");
    assert_eq!(run.n_ctx, 65536, "the context was set by the user");
    assert!(
        run.cfg.fit_layers.is_none(),
        "a dense model moves whole layers"
    );
    let ngl: u64 = run.layers.as_ref().unwrap().iter().map(|d| d.n_layer).sum();
    let chosen = u(&f, "chosen_layers");
    assert!(
        ngl.abs_diff(chosen) <= 1,
        "layers on the GPU: {ngl}, llama.cpp chose 21 (20 blocks and the output layer)"
    );
    // what the mirror projects for the engine's own choice, against "6080 MiB used" (model
    // 4416.86 + KV 1360 + compute 304 MiB in the load that followed)
    let mut k = run.cfg.clone();
    k.n_gpu_layers = Some(chosen as i64);
    let l = llamacpp::layout_prepared(&s, &pw, &k, &h, 65536);
    assert_eq!(l.kv[0] / MIB, 1360, "KV of 21 layers' cells at q8_0");
    let mem = (l.weights[0] + l.kv[0] + l.compute[0]) / MIB;
    assert!(
        (5780..=6380).contains(&mem),
        "projected {mem} MiB at 21 layers, llama.cpp 6080"
    );
}

/// A public blog post (code-index id 52533258607, "Accelerating LLMs on Debian 13: Setting up
/// Vulkan for llama.cpp", 2026-03-22; a March 2026 build, Qwen3.5 era, ~b8300 estimated):
/// Qwen2.5-3B-Instruct Q4_K_M on an Intel UHD Graphics 620 under Vulkan with 2200 MiB free,
/// run like the post's other command (`-c 4096 --jinja`): "projected to use 2283 MiB of device
/// memory vs. 2200 MiB", "filling dense layers back-to-front: Vulkan0: 13 layers, 1137 MiB
/// used, 1062 MiB free", "offloaded 13/37 layers to GPU".
#[test]
fn qwen25_3b_q4_k_m_on_an_intel_igpu() {
    let f = case("blog_qwen25_3b_q4_k_m_intel_uhd620_vulkan");
    let s = spec(f["catalog_text_model"].as_str().unwrap());
    let ft = vramfit_model::quant::FileType::parse("Q4_K_M")
        .unwrap()
        .ftype;
    let w = vramfit_model::quant::predict(&layout::synthesize(&s, GgmlType::F16), &s, ft, false);
    let c = cfg(f["args"].as_str().unwrap(), u(&f, "build") as u32);
    let h = hw(u(&f, "free_mib"));
    let pw = llamacpp::prepare(&s, &w);
    // the engine's projection with every layer on the device: 2283 MiB
    let mut all = c.clone();
    all.n_gpu_layers = Some(999);
    let l = llamacpp::layout_prepared(&s, &pw, &all, &h, 4096);
    let mem = (l.weights[0] + l.kv[0] + l.compute[0]) / MIB;
    assert!(
        (2283 * 95 / 100..=2283 * 105 / 100).contains(&mem),
        "projected {mem} MiB with every layer, llama.cpp 2283"
    );
    let run = autofit::run(&s, &pw, &c, &h).expect("--fit is on by default");
    assert_eq!(run.n_ctx, 4096);
    let ngl: u64 = run.layers.as_ref().unwrap().iter().map(|d| d.n_layer).sum();
    assert!(
        ngl.abs_diff(u(&f, "chosen_layers")) <= 1,
        "layers on the GPU: {ngl}, llama.cpp chose 13 of 37"
    );
}

/// An Ollama log (code-index id 61471163053, 2026-06-28): Ollama starts its bundled
/// llama-server for Hermes 3 Llama 3.1 8B Q4_0 (Llama-3.1-8B's widths; standard Q4_0 mix: 225
/// q4_0, output q6_K) with `-c 32768 -np 1 --flash-attn auto -b 512 -ub 512` on an RTX 2060
/// with 5141 MiB free. llama.cpp projects 8392 MiB with every layer, tries 16 layers (4334
/// MiB, over its 4117 MiB target) and keeps 15: "15 layers, 4089 MiB used" (model 2049 + KV
/// 1792 + compute 248).
#[test]
fn ollama_llama31_8b_q4_0_on_an_rtx_2060() {
    let f = case("ollama_hermes3_llama31_8b_q4_0_rtx2060");
    let s = spec(f["catalog_text_model"].as_str().unwrap());
    let ft = vramfit_model::quant::FileType::parse(f["quant"].as_str().unwrap())
        .unwrap()
        .ftype;
    let w = vramfit_model::quant::predict(&layout::synthesize(&s, GgmlType::F16), &s, ft, false);
    let c = cfg(f["args"].as_str().unwrap(), u(&f, "build") as u32);
    let h = hw(u(&f, "free_mib"));
    let pw = llamacpp::prepare(&s, &w);
    let mut all = c.clone();
    all.n_gpu_layers = Some(999);
    let l = llamacpp::layout_prepared(&s, &pw, &all, &h, 32768);
    let mem = (l.weights[0] + l.kv[0] + l.compute[0]) / MIB;
    let proj = u(&f, "projected_all_mib");
    assert!(
        mem.abs_diff(proj) * 100 <= proj * 5,
        "projected {mem} MiB with every layer, llama.cpp {proj}"
    );
    let run = autofit::run(&s, &pw, &c, &h).expect("--fit is on by default");
    assert_eq!(run.n_ctx, 32768, "the context was set");
    let ngl: u64 = run.layers.as_ref().unwrap().iter().map(|d| d.n_layer).sum();
    assert!(
        ngl.abs_diff(u(&f, "chosen_layers")) <= 1,
        "layers on the GPU: {ngl}, llama.cpp chose 15 of 33"
    );
    let mut k = run.cfg.clone();
    k.n_gpu_layers = Some(15);
    let l = llamacpp::layout_prepared(&s, &pw, &k, &h, 32768);
    assert_eq!(l.kv[0] / MIB, 1792, "KV of 14 blocks' 32768 cells");
    let mem = (l.weights[0] + l.kv[0] + l.compute[0]) / MIB;
    assert!(
        mem.abs_diff(4089) <= 200,
        "projected {mem} MiB at 15 layers, llama.cpp 4089"
    );
}
