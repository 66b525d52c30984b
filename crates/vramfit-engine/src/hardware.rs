//! The GPUs an engine runs on, as the engine model needs them.

use serde::{Deserialize, Serialize};

/// One GPU: total memory as CUDA reports it (`cudaMemGetInfo`), and free memory at launch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gpu {
    pub name: String,
    pub total_bytes: u64,
    /// free at launch (other processes already subtracted); defaults to what a clean card has
    pub free_bytes: u64,
    /// memory bandwidth, GB/s, when known (decode-speed estimates)
    pub bandwidth_gbps: Option<f64>,
    /// compute capability (8.9), when known
    pub compute_capability: Option<f64>,
    /// unified memory (DGX Spark, Jetson, Apple): free memory is host RAM
    pub unified: bool,
}

const GIB: u64 = 1 << 30;

/// The memory macOS lets the GPU use on Apple Silicon (Metal `recommendedMaxWorkingSetSize`)
/// for a machine of `physical` bytes: 2/3 up to 32 GiB, 3/4 above. Real values:
/// 16 GiB → 10922.67 MiB (abetlen/llama-cpp-python#687), 32 GiB → 21845.34 MiB (ollama#434),
/// 64 GiB → ~48 GiB (llama.cpp#1870), 96 GiB → 73728 MiB (llama.cpp#3213). macOS 26 gives a
/// 128 GiB M5 Max 107.52 GiB (antirez/ds4#893): later releases may allow more than this rule.
pub fn apple_working_set(physical: u64) -> u64 {
    if physical <= 32 * GIB {
        physical / 3 * 2
    } else {
        physical / 4 * 3
    }
}

/// True for an Apple Silicon GPU (Metal only: no CUDA, no CUDA graphs, no vLLM/SGLang CUDA).
pub fn is_apple(g: &Gpu) -> bool {
    g.unified && g.name.starts_with("Apple ")
}

/// The physical memory of a unified-memory machine (one pool for the CPU and the GPU), from the
/// catalog entry of the GPU's name.
pub fn unified_pool(g: &Gpu) -> Option<u64> {
    if !g.unified {
        return None;
    }
    // a configuration given with --gpu "M2 Max 32GB" is named with its memory
    if let Some(gb) = g
        .name
        .strip_suffix("GB")
        .and_then(|n| n.rsplit(' ').next())
        .and_then(|n| n.parse::<u64>().ok())
    {
        return Some(gb * GIB);
    }
    vramfit_model::catalog::find_gpu(&g.name)
        .ok()
        .filter(|c| c.unified_memory)
        .map(|c| c.memory_bytes)
}

impl Gpu {
    /// A catalog GPU, clean (all its memory free). On Apple Silicon the device total is what
    /// macOS lets the GPU wire ([`apple_working_set`]), not the machine's memory.
    pub fn from_catalog(g: &vramfit_model::catalog::CatalogGpu) -> Gpu {
        let usable = if g.vendor == "Apple" {
            apple_working_set(g.memory_bytes)
        } else if g.vendor == "AMD" && g.unified_memory {
            // AMD APUs (Strix Halo): the TTM/GTT limit, half of system memory by default
            // (63968 MiB of a 128 GB machine, antirez/ds4#475)
            g.memory_bytes / 2
        } else {
            g.memory_bytes
        };
        Gpu {
            name: g.name.clone(),
            total_bytes: usable,
            free_bytes: usable,
            bandwidth_gbps: Some(g.bandwidth_gbps),
            compute_capability: g.compute_capability.as_deref().and_then(|c| c.parse().ok()),
            unified: g.unified_memory,
        }
    }
}

/// The machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Hardware {
    pub gpus: Vec<Gpu>,
    /// host RAM available for weights kept on the CPU, when known
    pub host_ram_bytes: Option<u64>,
}

/// The GPUs a process sees once `CUDA_VISIBLE_DEVICES` (or HIP's) has picked and ordered them.
pub struct Visible {
    pub gpus: Vec<Gpu>,
    /// a line for the report when the list was read another way than by index
    pub note: Option<String>,
    /// a line that makes the verdict fail: the list names GPUs the machine does not have
    pub problem: Option<String>,
}

impl Visible {
    /// The GPUs, with the note and the problem moved into the report's lists.
    pub fn into_report(self, notes: &mut Vec<String>, problems: &mut Vec<String>) -> Vec<Gpu> {
        notes.extend(self.note);
        problems.extend(self.problem);
        self.gpus
    }
}

impl Hardware {
    /// Applies a visible-devices list. A pasted command often keeps `CUDA_VISIBLE_DEVICES=2`
    /// from a bigger machine while `--gpu` describes only the GPU it runs on: when the list
    /// names a GPU past the ones described and has exactly as many entries as are described,
    /// the described GPUs are taken as the visible ones (said in a note); any other list that
    /// names a missing GPU is a problem, never a silent plan on zero GPUs.
    pub fn visible(&self, ids: Option<&[usize]>) -> Visible {
        let Some(ids) = ids else {
            return Visible {
                gpus: self.gpus.clone(),
                note: None,
                problem: None,
            };
        };
        let n = self.gpus.len();
        let list = ids
            .iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",");
        if ids.iter().all(|&i| i < n) {
            return Visible {
                gpus: ids.iter().map(|&i| self.gpus[i].clone()).collect(),
                note: None,
                problem: None,
            };
        }
        if ids.len() == n {
            return Visible {
                gpus: self.gpus.clone(),
                note: Some(format!(
                    "CUDA_VISIBLE_DEVICES={list} names GPUs past the {n} described: the described GPU(s) are taken as the ones the process sees"
                )),
                problem: None,
            };
        }
        Visible {
            gpus: ids.iter().filter_map(|&i| self.gpus.get(i).cloned()).collect(),
            note: None,
            problem: Some(format!(
                "CUDA_VISIBLE_DEVICES={list} names a GPU past the {n} described: describe the whole machine with --gpu (e.g. \"4x H100\"), or only the GPUs the process sees"
            )),
        }
    }
    /// Unified-memory machines: host RAM and GPU memory are one pool, the machine's memory;
    /// `sysctl iogpu.wired_limit_mb=N` sets what an Apple GPU may use (capped at the pool).
    /// Returns a line for the report for each change.
    pub fn apply_unified(&mut self, wired_limit_mb: Option<u64>) -> Vec<String> {
        let mut notes = Vec::new();
        for g in &mut self.gpus {
            let Some(pool) = unified_pool(g) else {
                continue;
            };
            if self.host_ram_bytes.is_none() {
                self.host_ram_bytes = Some(pool);
            }
            if g.name.starts_with("AMD ") {
                notes.push(format!(
                    "{}: the GPU uses the GTT share of the {:.0} GiB unified memory, {:.1} GiB by default (half; the kernel's ttm.pages_limit raises it)",
                    g.name,
                    pool as f64 / GIB as f64,
                    g.total_bytes as f64 / GIB as f64
                ));
            }
            if is_apple(g) {
                match wired_limit_mb {
                    Some(mb) => {
                        let b = (mb << 20).min(pool);
                        notes.push(format!(
                            "iogpu.wired_limit_mb={mb}: the GPU may use {:.1} GiB of the {:.0} GiB",
                            b as f64 / GIB as f64,
                            pool as f64 / GIB as f64
                        ));
                        g.total_bytes = b;
                        g.free_bytes = b;
                    }
                    None => notes.push(format!(
                        "{}: macOS lets the GPU use {:.1} GiB of the {:.0} GiB unified memory (recommendedMaxWorkingSetSize; `sudo sysctl iogpu.wired_limit_mb=N` raises it)",
                        g.name,
                        g.total_bytes as f64 / GIB as f64,
                        pool as f64 / GIB as f64
                    )),
                }
            }
        }
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vramfit_model::catalog::find_gpu;

    #[test]
    fn apple_working_set_matches_metal_reports() {
        const MIB: u64 = 1 << 20;
        // recommendedMaxWorkingSetSize as llama.cpp printed it (MiB), by machine memory
        for (gib, want_mib) in [(16u64, 10922.67), (32, 21845.34), (96, 73728.0)] {
            let got = apple_working_set(gib << 30) as f64 / MIB as f64;
            assert!(
                (got - want_mib).abs() < 1.0,
                "{gib} GiB: {got} MiB, Metal {want_mib}"
            );
        }
        let m2max = Gpu::from_catalog(find_gpu("M2 Max").unwrap());
        assert_eq!(m2max.total_bytes, 72 << 30);
        assert!(is_apple(&m2max) && unified_pool(&m2max) == Some(96 << 30));
        let mut hw = Hardware {
            gpus: vec![m2max],
            host_ram_bytes: None,
        };
        hw.apply_unified(Some(200_000));
        assert_eq!(
            hw.gpus[0].total_bytes,
            96 << 30,
            "the wired limit is capped at the pool"
        );
        assert_eq!(hw.host_ram_bytes, Some(96 << 30));
    }

    #[test]
    fn strix_halo_gets_the_default_gtt_share() {
        let g = Gpu::from_catalog(find_gpu("Strix Halo").unwrap());
        assert_eq!(g.total_bytes, 64 << 30);
        assert!(g.unified && !is_apple(&g));
        let spark = Gpu::from_catalog(find_gpu("DGX Spark").unwrap());
        assert_eq!(
            spark.total_bytes,
            find_gpu("DGX Spark").unwrap().memory_bytes
        );
    }

    #[test]
    fn a_visible_list_past_the_described_gpus_is_never_a_plan_on_zero_gpus() {
        let h100 = Gpu::from_catalog(find_gpu("H100").unwrap());
        let one = Hardware {
            gpus: vec![h100.clone()],
            host_ram_bytes: None,
        };
        // a pasted `CUDA_VISIBLE_DEVICES=2` with --gpu describing the one GPU it runs on
        let v = one.visible(Some(&[2]));
        assert_eq!(v.gpus.len(), 1);
        assert!(v.problem.is_none() && v.note.unwrap().contains("CUDA_VISIBLE_DEVICES=2"));
        // two GPUs named, one described: said as a problem that names the list
        let v = one.visible(Some(&[2, 3]));
        assert!(v.gpus.is_empty() && v.problem.unwrap().contains("=2,3"));
        // in range: picked and ordered by index, no note
        let four = Hardware {
            gpus: vec![h100.clone(), h100.clone(), h100.clone(), h100],
            host_ram_bytes: None,
        };
        let v = four.visible(Some(&[3, 1]));
        assert_eq!(v.gpus.len(), 2);
        assert!(v.note.is_none() && v.problem.is_none());
        assert_eq!(four.visible(None).gpus.len(), 4);
    }
}
