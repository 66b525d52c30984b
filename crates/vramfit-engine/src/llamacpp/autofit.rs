//! llama.cpp's own `--fit`, mirrored on vramfit's layout model: what the engine itself changes
//! before it loads (common/fit.cpp `common_params_fit_impl`, PR #16653, on by default from
//! b7407; read at ggml-org/llama.cpp@08033df).
//!
//! The engine measures each candidate with a dry run of its own allocator; vramfit measures it
//! with [`super::layout_prepared`]. The steps and their order are the engine's:
//! 1. nothing changes when every device keeps `--fit-target` (1024 MiB) free;
//! 2. an unset context (`-c` absent or 0) is cut by linear interpolation between the training
//!    context and `--fit-ctx` (4096), rounded down to 256 per stream; one GPU stops here when
//!    the cut context fits;
//! 3. unless `-ngl`, `-ts`, `-sm row`, `-ot`/`--cpu-moe`/`--n-cpu-moe` were given ("already set
//!    by user, abort"), layers are filled back to front per device (false position on the
//!    layer count); for MoE models the layers go in "dense-only" (routed experts on the CPU);
//! 4. MoE models whose dense weights all fit then turn dense-only layers into full ones front to
//!    back, and try one more layer with only part of its FFN moved (UP, GATE, else ATTN).

use super::args::{LlamaCppConfig, SplitMode, Tool};
use super::placement::{Dev, PreparedWeights};
use super::version::change;
use super::{default_ctx, layout_prepared, visible, CUDA_CONTEXT_BYTES};
use crate::hardware::Hardware;
use std::sync::Arc;
use vramfit_model::units::MIB;
use vramfit_model::ModelSpec;

/// Which FFN projection a tensor name holds (`blk.N.ffn_gate*`, `ffn_up*`, `ffn_down*`): the
/// parts `--fit` moves off a partial layer match these prefixes (get_overflow_pattern).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FfnPart {
    gate: bool,
    up: bool,
    down: bool,
}

impl FfnPart {
    pub fn of(name: &str) -> FfnPart {
        FfnPart {
            gate: name.contains(".ffn_gate"),
            up: name.contains(".ffn_up"),
            down: name.contains(".ffn_down"),
        }
    }
}

/// What leaves the device on a partial layer (common_layer_fraction_t).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// only attention stays: `ffn_(gate|up|gate_up|down).*` moves
    Attn,
    /// attention + up stay: `ffn_(gate|gate_up|down).*` moves
    Up,
    /// attention + up + gate stay: `ffn_down.*` moves
    Gate,
    /// everything but the routed experts stays: `ffn_*_exps` moves
    Moe,
}

impl Overflow {
    fn matches(self, f: FfnPart, routed_expert: bool) -> bool {
        match self {
            Overflow::Attn => f.gate || f.up || f.down,
            Overflow::Up => f.gate || f.down,
            Overflow::Gate => f.down,
            Overflow::Moe => routed_expert,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Overflow::Attn => "FFN tensors",
            Overflow::Up => "FFN gate and down",
            Overflow::Gate => "FFN down",
            Overflow::Moe => "routed experts",
        }
    }
}

/// The tensor overrides `--fit` writes, by layer index: what moves and where (None = CPU).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LayerParts {
    parts: Vec<Option<(Overflow, Dev)>>,
}

impl LayerParts {
    /// The device of a tensor of layer `il` that would otherwise go to `natural`.
    pub fn device_of(&self, il: u64, f: FfnPart, routed_expert: bool, natural: Dev) -> Dev {
        match self.parts.get(il as usize).copied().flatten() {
            Some((o, dest)) if o.matches(f, routed_expert) => dest,
            _ => natural,
        }
    }

    /// Partial layers as (layer, what moved, where).
    pub fn iter(&self) -> impl Iterator<Item = (u64, Overflow, Dev)> + '_ {
        self.parts
            .iter()
            .enumerate()
            .filter_map(|(il, p)| p.map(|(o, d)| (il as u64, o, d)))
    }
}

/// Layers `--fit` gives one device: `n_layer` in all, of which the last `n_part` are partial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceLayers {
    pub n_layer: u64,
    pub n_part: u64,
    pub overflow: Overflow,
}

impl Default for DeviceLayers {
    fn default() -> Self {
        DeviceLayers {
            n_layer: 0,
            n_part: 0,
            overflow: Overflow::Moe,
        }
    }
}

impl DeviceLayers {
    fn n_full(&self) -> u64 {
        self.n_layer.saturating_sub(self.n_part)
    }
}

/// How `--fit` ended (common_params_fit_status and the log line that says why).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// every device keeps its target free as given
    NoChange,
    /// the context cut alone fits
    Context,
    /// layers (and experts) were placed
    Layers,
    /// the engine gave up and loads with the settings as given (plus any context cut)
    Failed(String),
}

/// What `--fit` decided.
#[derive(Debug, Clone)]
pub struct FitRun {
    /// the context the engine starts from, and the one it settles on
    pub ctx_from: u64,
    pub n_ctx: u64,
    pub ctx_auto: bool,
    pub outcome: Outcome,
    /// layers per device, when the engine set them
    pub layers: Option<Vec<DeviceLayers>>,
    /// the configuration with the engine's choices written in
    pub cfg: LlamaCppConfig,
}

/// `--fit-target` for device `d` in bytes (common/arg.cpp: one value for all, or one each).
pub fn margin(cfg: &LlamaCppConfig, d: usize) -> u64 {
    cfg.fit_target_mib
        .get(d)
        .or(cfg.fit_target_mib.last())
        .copied()
        .unwrap_or(1024)
        * MIB
}

/// True when this launch runs `--fit`: on by default from b7407 (#16653) unless `--fit off`;
/// llama-bench does not call common_fit_params.
pub fn enabled(cfg: &LlamaCppConfig) -> bool {
    cfg.tool != Tool::Bench
        && match cfg.fit {
            Some(on) => on,
            None => cfg.build.has(change::FIT_DEFAULT),
        }
}

/// Write per-device layer counts into a config as the engine does (set_ngl_tensor_split_tbo):
/// `-ngl` = the sum, `-ts` = the counts, and the partial layers' overrides.
pub fn apply(
    cfg: &LlamaCppConfig,
    n_blocks: u64,
    ngl: &[DeviceLayers],
    overflow_dev: &[Dev],
) -> LlamaCppConfig {
    let mut c = cfg.clone();
    let total: u64 = ngl.iter().map(|n| n.n_layer).sum();
    c.n_gpu_layers = Some(total.min(n_blocks + 1) as i64);
    if ngl.len() > 1 {
        c.tensor_split = Some(ngl.iter().map(|n| n.n_layer as f64).collect());
    }
    let mut parts = vec![None; (n_blocks + 1) as usize];
    let mut il0 = (n_blocks + 1).saturating_sub(total);
    let mut any = false;
    for (id, n) in ngl.iter().enumerate() {
        il0 += n.n_full();
        for il in il0..il0 + n.n_part {
            if let Some(p) = parts.get_mut(il as usize) {
                *p = Some(if il == il0 {
                    (n.overflow, overflow_dev.get(id).copied().flatten())
                } else {
                    (Overflow::Moe, None)
                });
                any = true;
            }
        }
        il0 += n.n_part;
    }
    c.fit_layers = any.then(|| Arc::new(LayerParts { parts }));
    c
}

struct Ctx<'a, 'b> {
    spec: &'a ModelSpec,
    pw: &'a PreparedWeights<'b>,
    hw: &'a Hardware,
    nd: usize,
}

impl Ctx<'_, '_> {
    /// What the engine's dry run counts per device: model + context + compute buffers.
    fn mem(&self, cfg: &LlamaCppConfig, n_ctx: u64) -> Vec<i64> {
        let l = layout_prepared(self.spec, self.pw, cfg, self.hw, n_ctx);
        (0..self.nd)
            .map(|d| (l.weights[d] + l.kv[d] + l.compute[d]) as i64)
            .collect()
    }

    fn weights(&self, cfg: &LlamaCppConfig, n_ctx: u64) -> i64 {
        let l = layout_prepared(self.spec, self.pw, cfg, self.hw, n_ctx);
        l.weights.iter().sum::<u64>() as i64
    }
}

/// The false-position step of the engine's layer search (uint32 arithmetic as written).
fn step(delta: u64, target: i64, mem: i64, mem_high: i64) -> u64 {
    let headroom = mem_high - mem;
    let s = if headroom > 0 {
        (delta as i64 * (target - mem) / headroom) as u32 as u64
    } else {
        delta - 1
    };
    s.max(1).min(delta - 1)
}

/// Run `--fit` for this launch; None when it is off.
pub fn run(
    spec: &ModelSpec,
    pw: &PreparedWeights,
    cfg: &LlamaCppConfig,
    hw: &Hardware,
) -> Option<FitRun> {
    if !enabled(cfg) {
        return None;
    }
    let gpus = visible(cfg, hw);
    let nd = gpus.len();
    let x = Ctx { spec, pw, hw, nd };
    let (n_seq, unified) = cfg.parallel();
    let n_streams = if unified { 1 } else { n_seq.max(1) };
    let ctx_auto = matches!(cfg.n_ctx, None | Some(0)) && cfg.bench_tokens.is_none();
    let n_ctx_max = if ctx_auto {
        spec.n_ctx_train.max(1).saturating_mul(n_streams)
    } else {
        default_ctx(cfg, spec)
    };
    let n_ctx_min = cfg.fit_ctx.saturating_mul(n_streams);
    let mut n_ctx = n_ctx_max;
    let mut run = FitRun {
        ctx_from: n_ctx_max,
        n_ctx,
        ctx_auto,
        outcome: Outcome::NoChange,
        layers: None,
        cfg: cfg.clone(),
    };
    if nd == 0 {
        return Some(run);
    }
    if cfg.split_mode == SplitMode::Tensor {
        // "llama_params_fit is not implemented for SPLIT_MODE_TENSOR, abort"
        run.outcome = Outcome::Failed("-sm tensor".into());
        return Some(run);
    }
    // free as the engine sees it: the backend's context is already created
    let dfree: Vec<i64> = gpus
        .iter()
        .map(|g| {
            g.free_bytes as i64
                - if g.unified {
                    0
                } else {
                    CUDA_CONTEXT_BYTES as i64
                }
        })
        .collect();
    let margins: Vec<i64> = (0..nd).map(|d| margin(cfg, d) as i64).collect();
    let targets: Vec<i64> = (0..nd).map(|d| dfree[d] - margins[d]).collect();
    let full = x.mem(cfg, n_ctx);
    if (0..nd).all(|d| full[d] <= targets[d]) {
        return Some(run);
    }
    // step 2: the context
    let sum_free: i64 = dfree.iter().sum();
    let sum_margin: i64 = margins.iter().sum();
    let sum_used: i64 = full.iter().sum();
    let hp_nex = spec.moe.as_ref().map(|m| m.n_expert).unwrap_or(0);
    let hp_ngl = pw.n_blocks;
    if sum_free - sum_used < sum_margin && ctx_auto && n_ctx_max > n_ctx_min {
        let mut sum_target = sum_free - sum_margin;
        if nd > 1 {
            // whole layers (dense) or whole tensors (MoE, ~1/3 layer) per device: expect waste
            let user_ngl = match cfg.n_gpu_layers {
                Some(n) if n >= 0 => (n as u64).min(hp_ngl),
                _ => hp_ngl,
            };
            let per_layer = x.weights(cfg, n_ctx) / user_ngl.max(1) as i64;
            sum_target -= (nd as i64 + 1) * per_layer / if hp_nex == 0 { 2 } else { 6 };
        }
        let used_min: i64 = x.mem(cfg, n_ctx_min).iter().sum();
        n_ctx = n_ctx_min;
        if sum_target > used_min && sum_used > used_min {
            let span = (n_ctx_max - n_ctx_min) as i128;
            let add = span * (sum_target - used_min) as i128 / (sum_used - used_min) as i128;
            n_ctx = n_ctx.saturating_add(add.clamp(0, u64::MAX as i128) as u64);
            let align = 256 * n_streams;
            n_ctx = (n_ctx - n_ctx % align).max(n_ctx_min);
            run.n_ctx = n_ctx;
            if nd <= 1 {
                run.outcome = Outcome::Context;
                return Some(run);
            }
        }
        run.n_ctx = n_ctx;
    }
    // the engine gives up on layers the user pinned
    let pinned = match cfg.n_gpu_layers {
        Some(n) if n != -1 => Some(format!("-ngl {n} set by the user")),
        _ if nd > 1
            && cfg
                .tensor_split
                .as_ref()
                .is_some_and(|t| t.iter().any(|v| *v != 0.0)) =>
        {
            Some("-ts set by the user".into())
        }
        _ if nd > 1 && cfg.split_mode == SplitMode::Row => Some("-sm row".into()),

        _ if !cfg.overrides.is_empty() => Some("-ot set by the user".into()),
        _ if cfg.n_cpu_moe.is_some() => Some("--cpu-moe / --n-cpu-moe set by the user".into()),
        _ => None,
    };
    if let Some(why) = pinned {
        run.outcome = Outcome::Failed(why);
        return Some(run);
    }
    // step 3: dense (or dense-only) layers back to front
    let mem_for = |ngl: &[DeviceLayers], of: &[Dev]| x.mem(&apply(cfg, hp_ngl, ngl, of), n_ctx);
    let mut surplus_cpu_moe = 0i64;
    if hp_nex > 0 {
        let mut c = cfg.clone();
        c.n_cpu_moe = Some(u64::MAX);
        let m = x.mem(&c, n_ctx);
        surplus_cpu_moe = (0..nd).map(|d| targets[d] - m[d]).sum();
    }
    let mut of: Vec<Dev> = vec![None; nd];
    let mut ngl = vec![DeviceLayers::default(); nd];
    let mut mem = mem_for(&ngl, &of);
    for id in (0..nd).rev() {
        let assigned: u64 = ngl[id + 1..].iter().map(|n| n.n_layer).sum();
        let n_unassigned = (hp_ngl + 1).saturating_sub(assigned);
        let mut high = ngl.clone();
        high[id].n_layer = n_unassigned;
        if hp_nex > 0 {
            high[id].n_part = if id < nd - 1 {
                n_unassigned
            } else {
                n_unassigned.saturating_sub(1)
            };
        }
        if high[id].n_layer == 0 {
            continue;
        }
        let mut mem_high = mem_for(&high, &of);
        if mem_high[id] > targets[id] {
            let mut delta = high[id].n_layer - ngl[id].n_layer;
            while delta > 1 {
                let s = step(delta, targets[id], mem[id], mem_high[id]);
                let mut test = ngl.clone();
                test[id].n_layer += s;
                if hp_nex > 0 {
                    test[id].n_part += if id == nd - 1 && test[id].n_part == 0 {
                        s - 1
                    } else {
                        s
                    };
                }
                let mt = mem_for(&test, &of);
                if mt[id] <= targets[id] {
                    ngl = test;
                    mem = mt;
                } else {
                    high = test;
                    mem_high = mt;
                }
                delta = high[id].n_layer - ngl[id].n_layer;
            }
        } else {
            ngl = high;
            mem = mem_high;
        }
    }
    run.outcome = Outcome::Layers;
    if hp_nex == 0 || surplus_cpu_moe <= 0 {
        run.cfg = apply(cfg, hp_ngl, &ngl, &of);
        run.layers = Some(ngl);
        return Some(run);
    }
    // step 4: dense-only layers become full layers, front to back
    let mut ids = nd;
    for id in (0..nd).rev() {
        if ngl[id].n_layer > 0 {
            ids = id;
        } else {
            break;
        }
    }
    let mut id = 0;
    while id <= ids && ids < nd {
        let mut high = ngl.clone();
        for jd in ids..nd {
            let mv = if jd < nd - 1 {
                high[jd].n_layer
            } else {
                high[jd].n_layer.saturating_sub(1)
            };
            high[id].n_layer += mv;
            high[jd].n_layer -= mv;
            high[jd].n_part = 0;
        }
        let ids_high = nd - 1;
        let mut mem_high = mem_for(&high, &of);
        if mem_high[id] > targets[id] {
            let mut delta = high[id].n_full().saturating_sub(ngl[id].n_full());
            while delta > 1 {
                let s = step(delta, targets[id], mem[id], mem_high[id]);
                let mut test = ngl.clone();
                let mut idt = ids;
                let mut conv = 0;
                while idt < nd {
                    let c = (s - conv).min(test[idt].n_part);
                    test[idt].n_layer -= c;
                    test[idt].n_part -= c;
                    test[id].n_layer += c;
                    conv += c;
                    if test[idt].n_part > 0 {
                        break;
                    }
                    idt += 1;
                }
                let mt = mem_for(&test, &of);
                if mt[id] <= targets[id] {
                    ngl = test;
                    mem = mt;
                    ids = idt;
                } else {
                    high = test;
                    mem_high = mt;
                }
                delta = high[id].n_full().saturating_sub(ngl[id].n_full());
            }
        } else {
            ngl = high;
            mem = mem_high;
            ids = ids_high;
        }
        // part of one more layer
        let floor = if id < nd - 1 { 0 } else { 1 };
        if ids < nd && ngl[ids].n_layer > floor && ngl[ids].n_part > 0 {
            let mut test = ngl.clone();
            let mut idt = ids;
            test[idt].n_layer -= 1;
            test[idt].n_part -= 1;
            test[id].n_layer += 1;
            test[id].n_part += 1;
            if test[idt].n_part == 0 {
                idt += 1;
            }
            let mut of_test = of.clone();
            if id < nd - 1 {
                of_test[id] = Some(id + 1);
            }
            let ok =
                |m: &[i64]| m[id] < targets[id] && (id + 1 == nd || m[id + 1] < targets[id + 1]);
            test[id].overflow = Overflow::Up;
            let mt = mem_for(&test, &of_test);
            if ok(&mt) {
                ngl = test.clone();
                of = of_test.clone();
                mem = mt;
                ids = idt;
                test[id].overflow = Overflow::Gate;
                let mt = mem_for(&test, &of_test);
                if ok(&mt) {
                    ngl = test;
                    mem = mt;
                }
            } else {
                test[id].overflow = Overflow::Attn;
                let mt = mem_for(&test, &of_test);
                if ok(&mt) {
                    ngl = test;
                    of = of_test;
                    mem = mt;
                    ids = idt;
                }
            }
        }
        id += 1;
    }
    let _ = mem;
    run.cfg = apply(cfg, hp_ngl, &ngl, &of);
    run.layers = Some(ngl);
    Some(run)
}

/// One line per kind of move, for the report: what `--fit` left off the GPUs.
pub fn describe(run: &FitRun, n_blocks: u64) -> Vec<String> {
    let mut out = Vec::new();
    if run.ctx_auto && run.n_ctx < run.ctx_from {
        out.push(format!(
            "--fit (on by default since b7407) lowers the context from {} to {}",
            run.ctx_from, run.n_ctx
        ));
    }
    if let Some(ngl) = &run.layers {
        let total: u64 = ngl.iter().map(|n| n.n_layer).sum();
        let off = (n_blocks + 1).saturating_sub(total);
        if off > 0 {
            out.push(format!(
                "--fit keeps {off} of {} layers on the CPU (-ngl {total})",
                n_blocks + 1
            ));
        }
        if let Some(parts) = &run.cfg.fit_layers {
            let mut by: Vec<(Overflow, Dev, u64, u64, u64)> = Vec::new();
            // the output layer's index matches no FFN pattern: nothing moves there
            for (il, o, d) in parts.iter().filter(|(il, ..)| *il < n_blocks) {
                match by.iter_mut().find(|(bo, bd, ..)| *bo == o && *bd == d) {
                    Some(e) => {
                        e.2 += 1;
                        e.4 = il;
                    }
                    None => by.push((o, d, 1, il, il)),
                }
            }
            for (o, d, n, first, last) in by {
                let dest = match d {
                    None => "the CPU".to_string(),
                    Some(g) => format!("GPU {g}"),
                };
                let range = if first == last {
                    format!("layer {first}")
                } else {
                    format!("{n} layers ({first}..{last})")
                };
                out.push(format!("--fit moves the {} of {range} to {dest}", o.name()));
            }
        }
        if ngl.len() > 1 {
            let ts: Vec<String> = ngl.iter().map(|n| n.n_layer.to_string()).collect();
            out.push(format!(
                "--fit splits layers across the GPUs as -ts {}",
                ts.join(",")
            ));
        }
    }
    out
}
