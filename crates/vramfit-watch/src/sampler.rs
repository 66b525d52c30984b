//! Where samples come from: NVML on a live machine, or a recorded trace.
//!
//! A sampler returns [`Tick`]s and paces itself (a live one waits for the next interval, a replay
//! waits for the trace's own clock divided by the speed). It knows nothing of what is done with
//! the samples: detectors, screen and exporter all sit downstream.

use crate::error::WatchError;
use crate::sample::{GpuSample, MigInstance, ProcessSample, Tick};
use crate::trace::TraceReader;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::time::{Duration, Instant};

/// A source of ticks.
pub trait Sampler {
    /// The next tick, after waiting for its time; `None` when the source has ended.
    fn next_tick(&mut self) -> Result<Option<Tick>, WatchError>;
}

/// The longest a replay waits between two ticks, whatever the gap in the trace.
const MAX_GAP: Duration = Duration::from_secs(5);

/// Replays a recorded trace through the same pipeline as live samples.
pub struct ReplaySampler {
    reader: TraceReader<BufReader<File>>,
    /// Simulated seconds per wall second; `None` replays as fast as the pipeline runs.
    speed: Option<f64>,
    start: Option<(Instant, f64)>,
}

impl ReplaySampler {
    pub fn open(path: &Path, speed: Option<f64>) -> Result<Self, WatchError> {
        Ok(ReplaySampler {
            reader: TraceReader::open(path)?,
            speed,
            start: None,
        })
    }
}

impl Sampler for ReplaySampler {
    fn next_tick(&mut self) -> Result<Option<Tick>, WatchError> {
        let Some(tick) = self.reader.next_tick()? else {
            return Ok(None);
        };
        if let Some(speed) = self.speed {
            let (wall0, t0) = *self.start.get_or_insert((Instant::now(), tick.t));
            // Seconds from the trace's start, capped so that an absurd `t` cannot overflow.
            let offset = ((tick.t - t0) / speed).clamp(0.0, 1e9);
            let due = wall0 + Duration::from_secs_f64(offset);
            let now = Instant::now();
            if due > now {
                let wait = due - now;
                // A gap in the recording (the watch was stopped for hours) is skipped after
                // MAX_GAP, not waited out: the clock is shifted by what was not slept.
                std::thread::sleep(wait.min(MAX_GAP));
                if wait > MAX_GAP {
                    let skipped = (wait - MAX_GAP).as_secs_f64() * speed;
                    self.start = Some((wall0, t0 + skipped));
                }
            }
        }
        Ok(Some(tick))
    }
}

/// Live samples from NVML. The library is opened at run time, so a machine without the NVIDIA
/// driver gets [`WatchError::NvmlUnavailable`] from [`NvmlSampler::new`], never a crash.
pub struct NvmlSampler {
    nvml: nvml_wrapper::Nvml,
    interval: Duration,
    start: Instant,
    next_due: Option<Instant>,
    names: BTreeMap<u32, String>,
}

fn nvml_err(e: nvml_wrapper::error::NvmlError) -> WatchError {
    WatchError::Nvml(e.to_string())
}

impl NvmlSampler {
    pub fn new(interval: Duration) -> Result<Self, WatchError> {
        let nvml =
            nvml_wrapper::Nvml::init().map_err(|e| WatchError::NvmlUnavailable(e.to_string()))?;
        let count = nvml.device_count().map_err(nvml_err)?;
        if count == 0 {
            return Err(WatchError::NvmlUnavailable("NVML sees no GPU".into()));
        }
        Ok(NvmlSampler {
            nvml,
            interval,
            start: Instant::now(),
            next_due: None,
            names: BTreeMap::new(),
        })
    }
}

/// Process names by pid, remembered so that /proc is read once per process.
fn process_name(nvml: &nvml_wrapper::Nvml, names: &mut BTreeMap<u32, String>, pid: u32) -> String {
    if let Some(n) = names.get(&pid) {
        return n.clone();
    }
    let name = std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| nvml.sys_process_name(pid, 64).ok())
        .unwrap_or_else(|| "?".to_string());
    if names.len() > 4096 {
        names.clear();
    }
    names.insert(pid, name.clone());
    name
}

fn device_sample(
    nvml: &nvml_wrapper::Nvml,
    names: &mut BTreeMap<u32, String>,
    dev: &nvml_wrapper::Device<'_>,
    gpu: u32,
    t: f64,
    mig: Option<MigInstance>,
) -> Result<GpuSample, WatchError> {
    let mem = dev.memory_info().map_err(nvml_err)?;
    let mut procs: BTreeMap<u32, u64> = BTreeMap::new();
    // Compute (CUDA) and graphics contexts both hold framebuffer memory.
    let compute = dev.running_compute_processes().unwrap_or_default();
    let graphics = dev.running_graphics_processes().unwrap_or_default();
    for p in compute.into_iter().chain(graphics) {
        if let nvml_wrapper::enums::device::UsedGpuMemory::Used(b) = p.used_gpu_memory {
            let e = procs.entry(p.pid).or_insert(0);
            *e = (*e).max(b);
        }
    }
    let processes = procs
        .into_iter()
        .map(|(pid, used_bytes)| ProcessSample {
            pid,
            name: process_name(nvml, names, pid),
            used_bytes,
        })
        .collect();
    Ok(GpuSample {
        t,
        gpu,
        total_bytes: mem.total,
        used_bytes: mem.used,
        free_bytes: Some(mem.free),
        reserved_bytes: Some(mem.reserved),
        name: dev.name().ok(),
        mig,
        processes,
        engine: None,
    })
}

impl NvmlSampler {
    /// One pass over every GPU (and every MIG instance of a GPU in MIG mode).
    pub fn sample_now(&mut self) -> Result<Tick, WatchError> {
        let t = self.start.elapsed().as_secs_f64();
        let NvmlSampler { nvml, names, .. } = self;
        let count = nvml.device_count().map_err(nvml_err)?;
        let mut gpus = Vec::new();
        for i in 0..count {
            let dev = nvml.device_by_index(i).map_err(nvml_err)?;
            let mig_on = dev.mig_mode().map(|m| m.current == 1).unwrap_or(false);
            let mig_count = if mig_on {
                dev.mig_device_count().unwrap_or(0)
            } else {
                0
            };
            if mig_count == 0 {
                let idx = gpus.len() as u32;
                gpus.push(device_sample(nvml, names, &dev, idx, t, None)?);
                continue;
            }
            for m in 0..mig_count {
                let Ok(mdev) = dev.mig_device_by_index(m) else {
                    continue;
                };
                let idx = gpus.len() as u32;
                let mig = Some(MigInstance {
                    parent: i,
                    instance: m,
                });
                gpus.push(device_sample(nvml, names, &mdev, idx, t, mig)?);
            }
        }
        Ok(Tick { t, gpus })
    }
}

impl Sampler for NvmlSampler {
    fn next_tick(&mut self) -> Result<Option<Tick>, WatchError> {
        let now = Instant::now();
        let due = *self.next_due.get_or_insert(now);
        if due > now {
            std::thread::sleep(due - now);
        }
        // Schedule from the due time, not from when we woke, so the rate does not drift; after a
        // stall longer than an interval, start again from now instead of catching up in a burst.
        let base = if due + self.interval < now { now } else { due };
        self.next_due = Some(base + self.interval);
        self.sample_now().map(Some)
    }
}
