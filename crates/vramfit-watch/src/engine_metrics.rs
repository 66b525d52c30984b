//! The serving engine's own load figures, read from its HTTP pages and normalized into an
//! [`EngineSample`]: KV-cache usage 0..1, requests running and waiting, preemptions.
//!
//! Names mirror each engine's source so a reader can hold this file next to it.

use crate::error::WatchError;
use crate::http::HttpUrl;
use crate::promtext::{self, PromSample};
use crate::sample::EngineSample;
use std::time::Duration;

/// Which engine a `/metrics` page came from, told by its metric prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    Vllm,
    LlamaServer,
    Sglang,
}

// vLLM, vllm/v1/metrics/loggers.py, added by PR #18354 (2025): KV usage 0..1 despite "perc".
const VLLM_KV_NEW: &str = "vllm:kv_cache_usage_perc";
// vLLM, vllm/engine/metrics.py (v0) and v1 loggers.py: deprecated by PR #18354, later hidden.
const VLLM_KV_OLD: &str = "vllm:gpu_cache_usage_perc";
// vLLM, vllm/v1/metrics/loggers.py and vllm/engine/metrics.py: scheduler gauges.
const VLLM_RUNNING: &str = "vllm:num_requests_running";
const VLLM_WAITING: &str = "vllm:num_requests_waiting";
// vLLM, vllm/v1/metrics/loggers.py: counter `vllm:num_preemptions`, exposed with `_total`.
const VLLM_PREEMPTIONS: &str = "vllm:num_preemptions_total";
// llama.cpp, tools/server/server.cpp (`--metrics`): removed from builds after the unified KV cache.
const LLAMA_KV_RATIO: &str = "llamacpp:kv_cache_usage_ratio";
// llama.cpp, tools/server/server.cpp: slots busy and requests deferred for lack of a slot.
const LLAMA_PROCESSING: &str = "llamacpp:requests_processing";
const LLAMA_DEFERRED: &str = "llamacpp:requests_deferred";
// SGLang, python/sglang/srt/metrics/collector.py: token pool usage 0..1 and queue gauges.
const SGLANG_TOKEN_USAGE: &str = "sglang:token_usage";
const SGLANG_RUNNING: &str = "sglang:num_running_reqs";
const SGLANG_QUEUE: &str = "sglang:num_queue_reqs";

fn values<'a>(samples: &'a [PromSample], name: &'a str) -> impl Iterator<Item = f64> + 'a {
    samples
        .iter()
        .filter(move |s| s.name == name && s.value.is_finite())
        .map(|s| s.value)
}

/// Sum over label sets (several engine cores or DP ranks each report their own gauge).
fn sum(samples: &[PromSample], name: &str) -> Option<f64> {
    values(samples, name).fold(None, |acc, v| Some(acc.unwrap_or(0.0) + v))
}

/// Largest over label sets: the fullest KV pool is the one that decides.
fn max(samples: &[PromSample], name: &str) -> Option<f64> {
    values(samples, name).fold(None, |acc: Option<f64>, v| {
        Some(acc.map_or(v, |a| a.max(v)))
    })
}

fn count(v: Option<f64>) -> Option<u64> {
    v.map(|x| x.max(0.0).round() as u64)
}

fn ratio(v: Option<f64>) -> Option<f64> {
    v.map(|x| x.clamp(0.0, 1.0))
}

/// Tells the engine from its metric names.
pub fn detect(samples: &[PromSample]) -> Option<EngineKind> {
    samples.iter().find_map(|s| {
        if s.name.starts_with("vllm:") {
            Some(EngineKind::Vllm)
        } else if s.name.starts_with("llamacpp:") {
            Some(EngineKind::LlamaServer)
        } else if s.name.starts_with("sglang:") {
            Some(EngineKind::Sglang)
        } else {
            None
        }
    })
}

/// Reads a `/metrics` page into an engine sample; `None` when no known engine is on it.
pub fn from_metrics(page: &str) -> Option<(EngineKind, EngineSample)> {
    let s = promtext::parse(page);
    let kind = detect(&s)?;
    let sample = match kind {
        EngineKind::Vllm => EngineSample {
            kv_cache_usage: ratio(max(&s, VLLM_KV_NEW).or_else(|| max(&s, VLLM_KV_OLD))),
            requests_running: count(sum(&s, VLLM_RUNNING)),
            requests_waiting: count(sum(&s, VLLM_WAITING)),
            preemptions_total: count(sum(&s, VLLM_PREEMPTIONS)),
        },
        EngineKind::LlamaServer => EngineSample {
            kv_cache_usage: ratio(max(&s, LLAMA_KV_RATIO)),
            requests_running: count(sum(&s, LLAMA_PROCESSING)),
            requests_waiting: count(sum(&s, LLAMA_DEFERRED)),
            preemptions_total: None,
        },
        EngineKind::Sglang => EngineSample {
            kv_cache_usage: ratio(max(&s, SGLANG_TOKEN_USAGE)),
            requests_running: count(sum(&s, SGLANG_RUNNING)),
            requests_waiting: count(sum(&s, SGLANG_QUEUE)),
            preemptions_total: None,
        },
    };
    Some((kind, sample))
}

/// Reads llama-server's `/slots` (an array of slots with `n_ctx`, `is_processing`,
/// `n_prompt_tokens` and `next_token.n_decoded`; see tools/server/server.cpp `to_json`).
/// Current builds no longer export a KV gauge, so the cells held by busy slots over all cells is
/// the KV usage.
pub fn from_llama_slots(json: &str) -> Option<EngineSample> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let slots = v.as_array()?;
    let (mut cells, mut held, mut busy) = (0u64, 0u64, 0u64);
    for slot in slots {
        cells += slot.get("n_ctx").and_then(|x| x.as_u64()).unwrap_or(0);
        if slot.get("is_processing").and_then(|x| x.as_bool()) != Some(true) {
            continue;
        }
        busy += 1;
        let prompt = slot
            .get("n_prompt_tokens")
            .and_then(|x| x.as_u64())
            .unwrap_or(0);
        // `next_token` is an object in current builds and a one-element array in older ones.
        let next = slot.get("next_token").map(|n| n.get(0).unwrap_or(n));
        let decoded = next
            .and_then(|n| n.get("n_decoded"))
            .and_then(|x| x.as_u64())
            .unwrap_or(0);
        held += prompt + decoded;
    }
    Some(EngineSample {
        kv_cache_usage: (cells > 0).then(|| (held as f64 / cells as f64).clamp(0.0, 1.0)),
        requests_running: Some(busy),
        requests_waiting: None,
        preemptions_total: None,
    })
}

/// One engine endpoint to poll, and the GPUs its figures belong to.
#[derive(Debug, Clone)]
pub struct EngineProbe {
    pub url: HttpUrl,
    /// `None`: every GPU (one engine over all devices, e.g. tensor parallel).
    pub gpus: Option<Vec<u32>>,
    kind: Option<EngineKind>,
    timeout: Duration,
}

impl EngineProbe {
    /// Parses `[GPU[,GPU...]=]http://HOST:PORT`.
    pub fn parse(spec: &str) -> Result<EngineProbe, WatchError> {
        let bad = |reason: String| WatchError::EngineUrl {
            url: spec.to_string(),
            reason,
        };
        let (gpus, url) = match spec.split_once('=') {
            Some((g, u)) if !g.contains("://") => {
                let list = g
                    .split(',')
                    .map(|x| x.trim().parse::<u32>())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|_| bad(format!("'{g}' is not a list of GPU indices like 0,1")))?;
                (Some(list), u)
            }
            _ => (None, spec),
        };
        let url = HttpUrl::parse(url.trim()).map_err(bad)?;
        Ok(EngineProbe {
            url,
            gpus,
            kind: None,
            timeout: Duration::from_millis(800),
        })
    }

    pub fn applies_to(&self, gpu: u32) -> bool {
        self.gpus.as_ref().is_none_or(|g| g.contains(&gpu))
    }

    /// Asks the engine now. llama-server without a KV gauge is completed from `/slots`.
    pub fn poll(&mut self) -> Result<EngineSample, String> {
        let page = self.url.get("/metrics", self.timeout)?;
        let (kind, mut sample) = from_metrics(&page).ok_or(
            "no vllm:, llamacpp: or sglang: metrics on /metrics (llama-server needs --metrics)",
        )?;
        self.kind = Some(kind);
        if kind == EngineKind::LlamaServer && sample.kv_cache_usage.is_none() {
            if let Some(slots) = self
                .url
                .get("/slots", self.timeout)
                .ok()
                .and_then(|b| from_llama_slots(&b))
            {
                sample.kv_cache_usage = slots.kv_cache_usage;
                sample.requests_running = sample.requests_running.or(slots.requests_running);
            }
        }
        Ok(sample)
    }

    pub fn kind(&self) -> Option<EngineKind> {
        self.kind
    }
}
