//! llama.cpp plans for one quant: per KV cache type, every layer on the GPUs at the longest
//! context (or the asked one), else the fewest routed experts (MoE) or layers (dense) moved to
//! the CPU, with the context then raised to the boundary at that placement.

use super::{Knobs, Setup, KV_TYPES};
use crate::plan::{Plan, USABLE_CONTEXT};
use crate::request::{Request, MIN_CONTEXT};

fn round_up_256(x: u64) -> u64 {
    x.div_ceil(256).max(1) * 256
}

/// llama.cpp plans for one quant: per KV type, all layers on the GPUs at the longest context
/// (or the asked one), else the fewest experts (MoE) or layers (dense) moved to the CPU.
pub fn llama_plans(s: &Setup, req: &Request) -> Vec<Plan> {
    let mut out = Vec::new();
    let np = req.concurrency.unwrap_or(1).max(1);
    let n_train = s.spec.n_ctx_train.max(256);
    let need = round_up_256(req.context.unwrap_or(MIN_CONTEXT).min(n_train));
    // an offload placement is chosen for a usable context (16k, or the model's own when
    // shorter) when none was asked: a few more experts in host RAM cost less than a context
    // too short to use; the --fit-ctx floor only when even that does not fit
    let usable = round_up_256(USABLE_CONTEXT.min(n_train)).max(need);
    // at one context, a smaller KV type never needs more experts in host RAM than a larger
    // one did: the bound per placement context
    let mut moe_upper: Vec<(u64, u64)> = Vec::new();
    for &kv in KV_TYPES {
        let base = Knobs {
            kv,
            np,
            ctx: need,
            ngl: None,
            n_cpu_moe: None,
            tensor_split: s.split(),
        };
        let full = s.max_ctx(&base);
        if full >= need {
            let mut k = base.clone();
            k.ctx = match req.context {
                Some(_) => need,
                None => full,
            };
            let why = match req.context {
                Some(c) => format!("{c} tokens per slot as asked (a multiple of 256); up to {full} fit"),
                None => format!("the longest context per slot that fits (a multiple of 256, at most the model's {n_train})"),
            };
            out.push(s.plan(&k, why, None));
            continue;
        }
        if s.hw.gpus.is_empty() {
            continue;
        }
        let why_ctx = format!(
            "{need} tokens per slot{}; the GPU cannot hold every layer at this context",
            if req.context.is_some() {
                " as asked"
            } else {
                " (llama.cpp's --fit-ctx floor)"
            }
        );
        let targets: Vec<u64> = if req.context.is_none() && usable > need {
            vec![usable, need]
        } else {
            vec![need]
        };
        for &at in &targets {
            let mut base = base.clone();
            base.ctx = at;
            let why_ctx = if at == need {
                why_ctx.clone()
            } else {
                format!("{at} tokens per slot (a usable context); the GPU cannot hold every layer at it")
            };
            if s.spec.is_moe() {
                let upper = moe_upper
                    .iter()
                    .find(|(c, _)| *c == at)
                    .map_or(s.n_blocks, |(_, n)| *n);
                if let Some(n) = s.min_cpu_moe(&base, upper) {
                    moe_upper.retain(|(c, _)| *c != at);
                    moe_upper.push((at, n));
                    let mut k = s.with_cpu_moe(&base, n);
                    let why_ctx = raise_ctx(s, &mut k, req, why_ctx);
                    let why = format!(
                        "all layers' attention and shared weights on the GPU; routed experts of the first {n} of {} layers in host RAM",
                        s.n_blocks
                    );
                    out.push(s.plan(&k, why_ctx, Some(why)));
                    break;
                }
            }
            if let Some(ngl) = s.max_ngl(&base).filter(|n| *n > 0) {
                let mut k = base.clone();
                k.ngl = Some(ngl);
                let why_ctx = raise_ctx(s, &mut k, req, why_ctx);
                let why = format!(
                    "the most layers that fit at {at} tokens: {ngl} of {} (with the output layer); the rest run on the CPU",
                    s.n_blocks + 1
                );
                out.push(s.plan(&k, why_ctx, Some(why)));
                break;
            }
        }
    }
    out
}

/// Use what is left: with the placement fixed (experts or layers on the CPU), the context
/// rises to the longest that fits at that placement, unless one was asked.
fn raise_ctx(s: &Setup, k: &mut Knobs, req: &Request, why: String) -> String {
    if req.context.is_some() {
        return why;
    }
    let top = s.max_ctx(k);
    if top > k.ctx {
        k.ctx = top;
        return format!(
            "the longest context per slot that fits with this placement (a multiple of 256, at most the model's {})",
            s.spec.n_ctx_train
        );
    }
    why
}
