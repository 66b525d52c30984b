//! A vLLM plan from the user's own startup log ([`crate::calibrate`]): the measured weights and
//! the measured non-KV memory (everything the budget lost besides the weights: activation peak,
//! non-torch, the charged CUDA-graph estimate) replace the predicted ones; a setting that differs
//! from the log's moves them by the predicted difference between the two settings.
//!
//! ```text
//! other_log  = requested_log − available_log − weights_log        (exact, from the log's lines)
//! act_log    = other_log − predicted non-torch − graph estimate charged (log's settings)
//! other_new  = act_log × predicted_act(new) / predicted_act(log) + non-torch + graphs (new)
//! weights    = weights_log × predicted(new layout) / predicted(log layout)
//! ```
//! So a new `--gpu-memory-utilization` or `--max-model-len` moves the pool by exactly what vLLM
//! would (V1 profiles no KV), and `--max-num-batched-tokens` / `--max-num-seqs` scale the log's
//! own activation peak by the predicted ratio (when the log leaves no positive peak, the
//! predicted difference is added instead).

use super::args::{MaxModelLen, VllmConfig};
use super::profile::{profile, Profile, ProfileInputs};
use super::quant::model_dtype;
use super::weights::{pp_layer_ranges, stage_bytes};
use crate::calibrate::Calibration;
use crate::hardware::Gpu;
use vramfit_model::{ModelSpec, WeightSet};

/// A calibration prepared for one evaluation.
#[derive(Debug, Clone)]
pub struct Calibrated {
    pub cal: Calibration,
    /// measured ÷ predicted weights of the log's layout
    weight_factor: Option<f64>,
    /// measured non-KV memory besides the weights, and what the model predicts for the log's settings
    other: Option<(i64, i64)>,
    /// the profile predicted at the log's settings
    prof_log: Profile,
    /// the settings differ from the log's in a way that moves the pool
    pub what_if: Vec<String>,
}

fn charged(p: &Profile, charged: bool) -> i64 {
    (p.activation_bytes + p.non_torch_bytes + if charged { p.cuda_graph_bytes } else { 0 }) as i64
}

/// The log's settings as a vLLM config on the same model (what is not printed: the command's).
fn log_config(cfg: &VllmConfig, cal: &Calibration) -> VllmConfig {
    let s = &cal.settings;
    let mut c = cfg.clone();
    if let Some(v) = cal
        .engine_version
        .as_deref()
        .and_then(|v| super::Version::parse(v).ok())
    {
        c.version = v;
    }
    c.tensor_parallel_size = s.tensor_parallel_size.unwrap_or(1).max(1);
    c.pipeline_parallel_size = s.pipeline_parallel_size.unwrap_or(1).max(1);
    c.pp_layer_partition = None;
    c.gpu_memory_utilization = s
        .gpu_memory_utilization
        .unwrap_or_else(|| c.version.default_gpu_memory_utilization());
    c.max_num_batched_tokens = s.max_num_batched_tokens;
    c.max_num_seqs = s.max_num_seqs;
    if let Some(l) = s.max_model_len {
        c.max_model_len = MaxModelLen::Tokens(l);
    }
    if let Some(e) = s.enforce_eager {
        c.enforce_eager = e;
    }
    if let Some(k) = &s.kv_cache_dtype {
        c.kv_cache_dtype = k.clone();
    }
    c.estimate_cudagraphs = s.cuda_graphs_charged;
    c.kv_cache_memory_bytes = None;
    c
}

impl Calibrated {
    /// Prepare `cal` for evaluating `cfg` on `gpu`.
    pub fn new(
        spec: &ModelSpec,
        weights: Option<&WeightSet>,
        cfg: &VllmConfig,
        gpu: &Gpu,
        cal: Calibration,
    ) -> Calibrated {
        let lc = log_config(cfg, &cal);
        let n_layer = spec.n_layer();
        let ranges = pp_layer_ranges(n_layer, lc.pipeline_parallel_size, None)
            .unwrap_or_else(|_| std::iter::once(0..n_layer).collect());
        let pred_w = stage_bytes(spec, weights, &lc, &ranges);
        let pred_w_max = pred_w.iter().copied().max().unwrap_or(0);
        let m = &cal.measured;
        let weight_factor = m
            .weights_bytes
            .filter(|_| pred_w_max > 0)
            .map(|w| w as f64 / pred_w_max as f64);
        let model_len = if spec.n_ctx_train > 0 {
            spec.n_ctx_train
        } else {
            2048
        };
        let len = match lc.max_model_len {
            MaxModelLen::Tokens(n) => n,
            _ => model_len,
        };
        let total = cal.gpu_total_bytes.unwrap_or(gpu.total_bytes);
        let (mnbt, mns) = lc.batch_limits(total, &gpu.name, len);
        // the binding worker of a pipeline is taken as the first stage (no sampler)
        let last = lc.pipeline_parallel_size == 1;
        let v2 = super::runner::runner(spec, &lc) == super::runner::Runner::V2
            && super::runner::lean_profile(lc.version);
        let prof_log = profile(
            spec,
            ranges[0].clone(),
            ProfileInputs {
                max_num_batched_tokens: mnbt,
                max_num_seqs: mns,
                tp: lc.tensor_parallel_size,
                is_last_stage: last,
                cuda_graphs: lc.uses_cuda_graphs(),
                act_bytes: model_dtype(spec, &lc).bytes(),
                expert_parallel: lc.enable_expert_parallel,
                sampler: super::runner::sampler(spec, &lc),
                nvls: super::runner::nccl_nvls(&lc, &gpu.name),
                // the same charges as the plan's profile (plan.rs), so that a calibration
                // evaluated at the log's own settings gives back the log's pool
                device_wide: super::profile::device_wide(&lc, gpu),
                fixed_capture: super::runner::fixed_capture_size(spec, &lc),
            },
        );
        let charged_log = lc.deducts_cuda_graphs() && !v2;
        let requested = m
            .requested_bytes
            .map(|r| r as f64)
            .unwrap_or(total as f64 * lc.gpu_memory_utilization);
        let other = match (m.available_kv_bytes, cal.settings.kv_cache_memory_given) {
            (Some(avail), false) => {
                let w = m.weights_bytes.unwrap_or(pred_w[0]) as f64;
                let other = (requested - avail as f64 - w).round() as i64;
                // the log's own graph estimate stands in for the predicted one (vllm#45178:
                // the estimate is off by large factors on some models)
                let mut p = prof_log;
                if let Some(g) = m.cuda_graph_estimate_bytes {
                    p.cuda_graph_bytes = g;
                }
                Some((other.max(0), charged(&p, charged_log)))
            }
            _ => None,
        };
        let mut what_if = Vec::new();
        let (cmnbt, cmns) = cfg.batch_limits(gpu.total_bytes, &gpu.name, len);
        let differs = |name: &str, a: String, b: String, v: &mut Vec<String>| {
            if a != b {
                v.push(format!("{name} {b} (log: {a})"));
            }
        };
        differs(
            "--gpu-memory-utilization",
            lc.gpu_memory_utilization.to_string(),
            cfg.gpu_memory_utilization.to_string(),
            &mut what_if,
        );
        differs(
            "--max-num-batched-tokens",
            mnbt.to_string(),
            cmnbt.to_string(),
            &mut what_if,
        );
        differs(
            "--max-num-seqs",
            mns.to_string(),
            cmns.to_string(),
            &mut what_if,
        );
        differs(
            "--tensor-parallel-size",
            lc.tensor_parallel_size.to_string(),
            cfg.tensor_parallel_size.to_string(),
            &mut what_if,
        );
        differs(
            "--pipeline-parallel-size",
            lc.pipeline_parallel_size.to_string(),
            cfg.pipeline_parallel_size.to_string(),
            &mut what_if,
        );
        Calibrated {
            cal,
            weight_factor,
            other,
            prof_log,
            what_if,
        }
    }

    /// False when the log's weights are not this model's (measured ÷ predicted outside
    /// 0.8–1.25: another model, or another quantization): such a calibration is not applied,
    /// which also guards logs that do not name their model.
    pub fn plausible(&self) -> bool {
        self.weight_factor.is_none_or(|f| (0.8..=1.25).contains(&f))
    }

    /// The release the log was written by (used when the command names none).
    pub fn version(&self) -> Option<super::Version> {
        self.cal
            .engine_version
            .as_deref()
            .and_then(|v| super::Version::parse(v).ok())
    }

    /// One worker's weights and profile, from the log. `charged_now`: the CUDA-graph estimate
    /// is taken out of this run's budget.
    pub fn adjust(&self, predicted_weights: u64, prof: &mut Profile, charged_now: bool) -> u64 {
        let w = match self.weight_factor {
            Some(f) => (predicted_weights as f64 * f).round() as u64,
            None => predicted_weights,
        };
        let m = &self.cal.measured;
        let graph_delta = prof.cuda_graph_bytes as i64 - self.prof_log.cuda_graph_bytes as i64;
        if let Some((other_log, pred_log)) = self.other {
            // the graph estimate: the log's, moved by the predicted change of capture sizes
            let graph = match m.cuda_graph_estimate_bytes {
                Some(g) => (g as i64 + graph_delta).max(0) as u64,
                None => prof.cuda_graph_bytes,
            };
            let mut p = *prof;
            p.cuda_graph_bytes = graph;
            // the log's activation peak: its non-KV memory less the parts that do not move with
            // the batch (non-torch, the charged graph estimate); it carries the model's error
            // per token, so it is scaled by the predicted ratio rather than shifted by the
            // predicted difference (MoE activation grows with max_num_batched_tokens once
            // FusedMoE chunking is gone, PRs #34086/#39107); without a positive peak, the shift
            let act_log = other_log - (pred_log - self.prof_log.activation_bytes as i64);
            let other_new = if act_log > 0 && self.prof_log.activation_bytes > 0 {
                let ratio = prof.activation_bytes as f64 / self.prof_log.activation_bytes as f64;
                (act_log as f64 * ratio).round() as i64 + charged(&p, charged_now)
                    - prof.activation_bytes as i64
            } else {
                other_log + charged(&p, charged_now) - pred_log
            }
            .max(0) as u64;
            let nt = m
                .non_torch_bytes
                .unwrap_or(prof.non_torch_bytes)
                .min(other_new);
            let graph_charged = if charged_now {
                graph.min(other_new - nt)
            } else {
                0
            };
            prof.non_torch_bytes = nt;
            prof.activation_bytes = other_new - nt - graph_charged;
            prof.cuda_graph_bytes = if charged_now { graph_charged } else { graph };
        }
        if !charged_now {
            if let Some(g) = m.cuda_graph_bytes {
                prof.cuda_graph_bytes = (g as i64 + graph_delta).max(0) as u64;
            }
        }
        w
    }

    /// Which numbers come from the log: (component, "measured" | "measured, moved by the
    /// predicted change" | "predicted").
    pub fn provenance(&self) -> Vec<(String, String)> {
        let same = self.what_if.is_empty();
        let tag = |known: bool| -> String {
            match (known, same) {
                (false, _) => "predicted".into(),
                (true, true) => "measured".into(),
                (true, false) => "measured, moved by the predicted change of the settings".into(),
            }
        };
        let pool = self.other.is_some();
        vec![
            ("weights_bytes".into(), tag(self.weight_factor.is_some())),
            (
                "compute_bytes + overhead_bytes + charged cuda_graph_bytes".into(),
                tag(pool),
            ),
            ("kv_cache_bytes".into(), tag(pool)),
        ]
    }
}

#[cfg(test)]
#[path = "calibrated_tests.rs"]
mod tests;
