//! When nothing fits: the nearest thing that does — a smaller quant, a shorter context, more
//! of the same GPU, or the model mostly in host RAM with its expected speed; and, when vLLM or
//! SGLang was asked for, how many such GPUs a pre-quantized checkpoint of the model (AWQ,
//! GPTQ, FP8 repo of the catalog) needs.

use crate::headroom;
use crate::llamacpp::llama_plans;
use crate::llamacpp::Setup;
use crate::model::Model;
use crate::request::{Engine, Request};
use vramfit_engine::Hardware;
use vramfit_model::units::fmt_bytes;

fn first_llama(
    m: &Model,
    hw: &Hardware,
    req: &Request,
    quants: &[&str],
) -> Option<(String, u64, u64, f64)> {
    let q: Vec<String> = quants.iter().map(|s| s.to_string()).collect();
    let ggufs = m.ggufs_any(Some(&q)).ok()?;
    for (name, w) in ggufs {
        let h = headroom::llamacpp(&w, hw);
        let s = Setup::new(m.spec(), &w, m.llama_args(&name), name.clone(), hw, h);
        // within the host RAM there is (the same rule as fit's)
        let ram_ok = |p: &crate::plan::Plan| match hw.host_ram_bytes {
            Some(ram) => {
                p.host_bytes() == 0 || p.host_bytes() + 2 * vramfit_model::units::GIB <= ram
            }
            None => true,
        };
        if let Some(p) = llama_plans(&s, req).into_iter().find(|p| ram_ok(p)) {
            let on_gpu = p.devices.iter().map(|d| d.weights_bytes).sum::<u64>();
            return Some((name, p.max_model_len, on_gpu, p.est_tokens_per_s));
        }
    }
    None
}

/// One line: why nothing fits and the nearest plan that does.
pub fn explain(m: &Model, hw: &Hardware, req: &Request) -> String {
    let mut msg = explain_llama(m, hw, req);
    if let Some(hint) = variant_hint(m, hw, req) {
        msg.push_str(&hint);
    }
    msg
}

/// The fewest of the same GPU (2, 4 or 8) on which the best pre-quantized checkpoint of the
/// model fits with vLLM (else SGLang), all weights on the GPUs, when one of them was asked for.
fn variant_hint(m: &Model, hw: &Hardware, req: &Request) -> Option<String> {
    let vllm = req.engines.contains(&Engine::Vllm);
    if !vllm && !req.engines.contains(&Engine::Sglang) {
        return None;
    }
    let offers = crate::variants::offers(m);
    let g = hw.gpus.first()?;
    if offers.is_empty() {
        return None;
    }
    for n in [2usize, 4, 8] {
        let more = Hardware {
            gpus: vec![g.clone(); n],
            host_ram_bytes: hw.host_ram_bytes,
        };
        let mut plans = if vllm {
            let h = match req.headroom {
                Some(b) => headroom::fixed(&more, b),
                None => headroom::vllm(&more),
            };
            crate::vllm::variant_plans(&offers, &more, req, &h)
        } else {
            crate::sglang::variant_plans(&offers, &more, req)
        };
        // all on the GPUs: a plan that reads weights from host RAM is not "enough GPUs"
        plans.retain(|p| p.gpu_resident);
        crate::plan::rank(&mut plans, req.goal, &req.usable(m.spec().n_ctx_train));
        if let Some(p) = plans.first() {
            let repo = p.argv.iter().find(|a| a.contains('/')).cloned()?;
            let format = vramfit_model::catalog::find_variant(&repo)
                .map(|v| v.format_name())
                .unwrap_or_default();
            return Some(format!(
                "; pre-quantized: {n}x {} serve {repo} ({format}) with {} at {} tokens: vramfit fit {repo} --gpu '{n}x {}' --engine {}",
                g.name,
                p.engine,
                p.max_model_len,
                g.name,
                p.engine
            ));
        }
    }
    None
}

/// The llama.cpp part of [`explain`].
fn explain_llama(m: &Model, hw: &Hardware, req: &Request) -> String {
    let gpus = hw.gpus.len();
    let total: u64 = hw.gpus.iter().map(|g| g.free_bytes).sum();
    let mut msg = format!(
        "nothing fits {} on {gpus} GPU(s) with {} free{}",
        m.spec().id,
        fmt_bytes(total),
        req.context
            .map(|c| format!(" at {c} tokens"))
            .unwrap_or_default()
    );
    let small = [
        "Q4_K_M", "IQ4_XS", "Q3_K_M", "IQ3_XXS", "Q2_K", "IQ2_XXS", "IQ1_M",
    ];
    let full_gpu = |r: &Request| {
        let mut rr = r.clone();
        rr.engines = vec![crate::request::Engine::LlamaCpp];
        rr
    };
    // a smaller quant, all on the GPU
    if let Some((q, ctx, _, tps)) = first_llama(m, hw, &full_gpu(req), &small) {
        msg.push_str(&format!(
            "; nearest: llama.cpp {q} fits ({ctx} tokens, ~{tps:.0} tok/s): vramfit fit {} --engine llama.cpp --quants {q}",
            m.repo()
        ));
        if m.gguf_quants(Some(std::slice::from_ref(&q))).0.is_empty() && !m.gguf_file() {
            msg.push_str(" (no known GGUF repo publishes it: convert it with convert_hf_to_gguf.py and llama-quantize)");
        }
        return msg;
    }
    // a shorter context
    if req.context.is_some() {
        let mut r = full_gpu(req);
        r.context = None;
        if let Some((q, ctx, _, _)) = first_llama(m, hw, &r, &small) {
            msg.push_str(&format!(
                "; nearest: llama.cpp {q} at {ctx} tokens (drop --context)"
            ));
            return msg;
        }
    }
    // more of the same GPU
    if let Some(g) = hw.gpus.first() {
        for n in [2usize, 4, 8] {
            let more = Hardware {
                gpus: vec![g.clone(); n],
                host_ram_bytes: hw.host_ram_bytes,
            };
            if let Some((q, ctx, _, tps)) = first_llama(m, &more, &full_gpu(req), &small) {
                msg.push_str(&format!(
                    "; nearest: {n}x {} with llama.cpp {q} ({ctx} tokens, ~{tps:.0} tok/s)",
                    g.name
                ));
                return msg;
            }
        }
    }
    msg.push_str(&format!(
        "; even 8 such GPUs are not enough at Q4_K_M: run it on the CPU (llama-server -ngl 0), at about {:.1} tok/s from {} GB/s host RAM",
        cpu_speed(m),
        crate::speed::HOST_BANDWIDTH_GBPS
    ));
    msg
}

fn cpu_speed(m: &Model) -> f64 {
    let Ok(g) = m.ggufs_any(Some(&["Q4_K_M".to_string()])) else {
        return 0.0;
    };
    let Some((_, w)) = g.first() else { return 0.0 };
    let bytes: f64 = w
        .tensors
        .iter()
        .map(|t| crate::speed::active_bytes(&t.name, t.bytes, &t.dims, m.spec()))
        .sum();
    crate::speed::sequential(&[], bytes, crate::speed::HOST_BANDWIDTH_GBPS)
}
