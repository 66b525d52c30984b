//! The GPUs an engine command uses (its TP × PP × DP ranks over the devices
//! `CUDA_VISIBLE_DEVICES` leaves visible) and what each of its workers said at startup, so
//! `probe` judges by the binding device or rank, not by GPU 0.
//!
//! vLLM: every worker measures its own free memory (`Available KV cache memory: X GiB`,
//! vllm/v1/worker/gpu_worker.py determine_available_memory) and the engine core sizes one KV
//! cache config per worker, then keeps the smallest block count for all of them
//! (vllm/v1/core/kv_cache_utils.py unify_kv_cache_configs, v0.8–0.10; get_kv_cache_configs
//! later): the worker with the least is the one that binds. SGLang: each TP rank logs its own
//! `KV Cache is allocated. #tokens: N` and `avail mem=X GB` lines
//! (sglang/srt/model_executor/model_runner.py) and the ranks agree on the minimum
//! (get_available_gpu_memory(distributed=True) all-reduces MIN).

use crate::live::argv::Launch;
use serde::Serialize;
use std::collections::BTreeMap;
use vramfit_engine::cmdline::EngineKind;
use vramfit_engine::Hardware;

/// The ranks a command asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Ranks {
    pub tp: u64,
    pub pp: u64,
    /// data-parallel replicas, each with its own TP × PP GPUs
    pub dp: u64,
}

impl Ranks {
    /// GPUs the command occupies.
    pub fn world(&self) -> u64 {
        self.tp * self.pp * self.dp
    }
}

fn count(l: &Launch, names: &[&str]) -> Result<u64, String> {
    match l.get(names) {
        None => Ok(1),
        Some(v) => match v.trim().parse::<u64>() {
            Ok(n) if (1..=4096).contains(&n) => Ok(n),
            _ => Err(format!(
                "{} '{v}' is not a GPU count: give a whole number from 1 to 4096",
                names[0]
            )),
        },
    }
}

/// TP, PP and DP from the command's flags (vLLM vllm/engine/arg_utils.py; SGLang
/// sglang/srt/server_args.py, where `--enable-dp-attention` puts the DP ranks inside the TP
/// group instead of beside it).
pub fn ranks(l: &Launch) -> Result<Ranks, String> {
    match l.engine {
        Some(EngineKind::Vllm) => Ok(Ranks {
            tp: count(l, &["--tensor-parallel-size", "-tp"])?,
            pp: count(l, &["--pipeline-parallel-size", "-pp"])?,
            dp: count(l, &["--data-parallel-size", "-dp"])?,
        }),
        Some(EngineKind::Sglang) => {
            let dp = count(l, &["--dp-size", "--dp", "--data-parallel-size"])?;
            let inside = l.words.iter().any(|w| w == "--enable-dp-attention");
            Ok(Ranks {
                tp: count(l, &["--tp-size", "--tp", "--tensor-parallel-size"])?,
                pp: count(l, &["--pp-size", "--pp", "--pipeline-parallel-size"])?,
                dp: if inside { 1 } else { dp },
            })
        }
        _ => Ok(Ranks {
            tp: 1,
            pp: 1,
            dp: 1,
        }),
    }
}

/// `CUDA_VISIBLE_DEVICES` (or HIP's/ROCm's) as GPU indices: None when unset, an error when it
/// names devices by UUID (their NVML order is unknown here) or is not a list of indices.
pub fn visible(l: &Launch) -> Result<Option<Vec<usize>>, String> {
    let Some((k, v)) = l.env.iter().rev().find(|(k, _)| {
        matches!(
            k.as_str(),
            "CUDA_VISIBLE_DEVICES" | "HIP_VISIBLE_DEVICES" | "ROCR_VISIBLE_DEVICES"
        )
    }) else {
        return Ok(None);
    };
    let v = v.trim();
    if v.is_empty() {
        return Ok(Some(vec![]));
    }
    let mut out = Vec::new();
    for part in v.split(',') {
        let p = part.trim();
        match p.parse::<usize>() {
            Ok(i) if i < 4096 && !out.contains(&i) => out.push(i),
            _ if p.starts_with("GPU-") || p.starts_with("MIG-") => {
                return Err(format!(
                    "{k}={v}: '{p}' is a UUID; give indices as nvidia-smi numbers them (0,1)"
                ))
            }
            // CUDA makes visible only the devices listed before an invalid entry (`-1` hides all)
            _ => break,
        }
    }
    Ok(Some(out))
}

/// One GPU the command uses, as NVML (or `--gpu`/`--gpu-free`) sees it before the launch.
#[derive(Debug, Clone, Serialize)]
pub struct GroupGpu {
    /// NVML index (CUDA numbers the same way with CUDA_DEVICE_ORDER=PCI_BUS_ID)
    pub index: usize,
    pub name: String,
    pub total_bytes: u64,
    pub free_bytes: u64,
}

/// The engine's GPUs and the one with the least free memory.
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    pub ranks: Ranks,
    pub gpus: Vec<GroupGpu>,
    /// NVML index of the GPU with the least free memory
    pub binding_gpu: Option<usize>,
}

/// The GPUs of `hw` the command's ranks land on: the first `world` of the visible ones.
pub fn group(l: &Launch, hw: Option<&Hardware>) -> Result<Group, String> {
    let r = ranks(l)?;
    let vis = visible(l)?;
    let Some(hw) = hw.filter(|h| !h.gpus.is_empty()) else {
        return Ok(Group {
            ranks: r,
            gpus: vec![],
            binding_gpu: None,
        });
    };
    let n = hw.gpus.len();
    let order: Vec<usize> = match vis {
        Some(v) => {
            if let Some(bad) = v.iter().find(|i| **i >= n) {
                return Err(format!(
                    "CUDA_VISIBLE_DEVICES names GPU {bad}, but there are {n} (0–{}): fix the list, or describe the machine with --gpu",
                    n - 1
                ));
            }
            v
        }
        None => (0..n).collect(),
    };
    let world = r.world() as usize;
    if order.len() < world {
        return Err(format!(
            "the command needs {world} GPUs (TP {} × PP {} × DP {}) but {} are visible: lower the parallel sizes or make more GPUs visible",
            r.tp,
            r.pp,
            r.dp,
            order.len()
        ));
    }
    let gpus: Vec<GroupGpu> = order[..world]
        .iter()
        .map(|&i| GroupGpu {
            index: i,
            name: hw.gpus[i].name.clone(),
            total_bytes: hw.gpus[i].total_bytes,
            free_bytes: hw.gpus[i].free_bytes,
        })
        .collect();
    let binding_gpu = gpus.iter().min_by_key(|g| g.free_bytes).map(|g| g.index);
    Ok(Group {
        ranks: r,
        gpus,
        binding_gpu,
    })
}

/// What one worker (rank) of a vLLM or SGLang engine said about its memory at startup.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RankReading {
    /// the worker's prefix as the log prints it (`VllmWorker TP0 pid=3974`, `TP1`)
    pub rank: String,
    /// vLLM `Available KV cache memory`
    pub available_kv_bytes: Option<i64>,
    /// tokens its KV cache holds (vLLM `GPU KV cache size`, SGLang `#tokens` /
    /// `max_total_num_tokens`), the smallest this rank printed
    pub kv_tokens: Option<u64>,
    /// SGLang `avail mem=X GB` after the weights loaded
    pub avail_mem_bytes: Option<u64>,
    /// vLLM's `estimated maximum model length` on a refusal
    pub estimated_max_len: Option<u64>,
}

const GIB: f64 = 1073741824.0;
/// SGLang prints decimal-looking `GB` that are GiB (its get_available_gpu_memory divides by 1 << 30).
const SGLANG_GB: f64 = GIB;

/// The worker a vLLM line came from: the innermost `(... pid=N ...)` prefix
/// (`(EngineCore_0 pid=1159) (RayWorkerWrapper pid=345, ip=10.42.9.225) INFO ...`).
fn vllm_label(line: &str) -> String {
    let mut rest = line.trim_start();
    let mut label = String::new();
    while let Some(inner) = rest.strip_prefix('(') {
        let Some(end) = inner.find(')') else { break };
        let g = &inner[..end];
        if !g.contains("pid=") {
            break;
        }
        label = g.to_string();
        rest = inner[end + 1..].trim_start();
    }
    if label.is_empty() {
        "engine".into()
    } else {
        label
    }
}

/// The rank an SGLang line came from: `[2025-07-22 10:00:00 DP0 TP1] ...` → `DP0 TP1`.
fn sglang_label(line: &str) -> String {
    let t = line.trim_start();
    let inner = t
        .strip_prefix('[')
        .and_then(|s| s.find(']').map(|e| &s[..e]))
        .unwrap_or("");
    let parts: Vec<&str> = inner
        .split_whitespace()
        .filter(|w| {
            ["TP", "PP", "DP", "EP", "CP"]
                .iter()
                .any(|p| w.strip_prefix(p).is_some_and(|n| n.parse::<u64>().is_ok()))
        })
        .collect();
    if parts.is_empty() {
        "engine".into()
    } else {
        parts.join(" ")
    }
}

/// The first number after `key` on `line` (`1,192,160` → 1192160; `-0.41` allowed).
fn number_after(line: &str, key: &str) -> Option<f64> {
    let i = line.find(key)?;
    let s = line[i + key.len()..].trim_start_matches([' ', '=', ':', '(']);
    let num: String = s
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ',' || *c == '-')
        .filter(|c| *c != ',')
        .collect();
    num.trim_end_matches('.').parse().ok()
}

fn min_opt<T: PartialOrd + Copy>(a: Option<T>, b: T) -> Option<T> {
    Some(match a {
        Some(x) if x <= b => x,
        _ => b,
    })
}

/// Every rank's startup readings, in the order the ranks first spoke.
pub fn readings(log: &str, sglang: bool) -> Vec<RankReading> {
    let mut by: BTreeMap<String, (usize, RankReading)> = BTreeMap::new();
    for line in log.lines() {
        let label = if sglang {
            sglang_label(line)
        } else {
            vllm_label(line)
        };
        let mut touch = |f: &dyn Fn(&mut RankReading)| {
            let n = by.len();
            let e = by.entry(label.clone()).or_insert_with(|| {
                (
                    n,
                    RankReading {
                        rank: label.clone(),
                        ..Default::default()
                    },
                )
            });
            f(&mut e.1);
        };
        if sglang {
            if let Some(v) = number_after(line, "#tokens:")
                .or_else(|| number_after(line, "max_total_num_tokens"))
            {
                touch(&|r| r.kv_tokens = min_opt(r.kv_tokens, v as u64));
            }
            if line.contains("Load weight end") {
                if let Some(v) = number_after(line, "avail mem") {
                    let b = (v * SGLANG_GB).round() as u64;
                    touch(&|r| r.avail_mem_bytes = min_opt(r.avail_mem_bytes, b));
                }
            }
        } else {
            if let Some(v) = number_after(line, "Available KV cache memory") {
                let b = (v * GIB).round() as i64;
                touch(&|r| r.available_kv_bytes = min_opt(r.available_kv_bytes, b));
            }
            if line.contains("GPU KV cache size") {
                if let Some(v) = number_after(line, "GPU KV cache size") {
                    touch(&|r| r.kv_tokens = min_opt(r.kv_tokens, v as u64));
                }
            }
            if let Some(v) = number_after(line, "estimated maximum model length is") {
                touch(&|r| r.estimated_max_len = min_opt(r.estimated_max_len, v as u64));
            }
        }
    }
    let mut v: Vec<(usize, RankReading)> = by.into_values().collect();
    v.sort_by_key(|(i, _)| *i);
    v.into_iter().map(|(_, r)| r).collect()
}

/// The worker that binds: the least available KV memory (vLLM) or free memory after the
/// weights (SGLang); with no memory line, the fewest KV tokens.
pub fn binding(r: &[RankReading]) -> Option<&RankReading> {
    r.iter()
        .filter(|x| x.available_kv_bytes.is_some())
        .min_by_key(|x| x.available_kv_bytes)
        .or_else(|| {
            r.iter()
                .filter(|x| x.avail_mem_bytes.is_some())
                .min_by_key(|x| x.avail_mem_bytes)
        })
        .or_else(|| {
            r.iter()
                .filter(|x| x.kv_tokens.is_some())
                .min_by_key(|x| x.kv_tokens)
        })
}

/// The tokens the engine's KV cache holds: the smallest any rank reported (all ranks run with
/// the smallest), and vLLM's smallest estimate of the longest request on a refusal.
pub fn capacity(r: &[RankReading]) -> (Option<u64>, Option<u64>) {
    (
        r.iter().filter_map(|x| x.kv_tokens).min(),
        r.iter().filter_map(|x| x.estimated_max_len).min(),
    )
}

#[cfg(test)]
#[path = "group_tests.rs"]
mod tests;
