//! `vramfit stress URL [--concurrency N] [--requests R | --duration D] [--prompt-tokens P]
//! [--max-tokens M] [--json]`: peak load against an OpenAI-compatible server on this machine
//! (streaming completions of exactly P prompt tokens), while sampling GPU memory (NVML, when
//! present), the server's process memory (`--pid`) and the engine's own metrics (vLLM
//! `/metrics`: KV usage, running/waiting, preemptions; llama-server `/metrics` and `/slots`;
//! SGLang). Reports throughput, latency percentiles, peaks, preemptions and errors, and a verdict
//! against the headroom the plan keeps. Exit 0 passed, 1 failed, 2 bad input.

use crate::error::{CliError, CmdResult};
use crate::live::openai;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use vramfit_model::units::{fmt_bytes, parse_size};
use vramfit_watch::engine_metrics::EngineProbe;

#[derive(clap::Args)]
pub struct Args {
    /// The server, on this machine: http://127.0.0.1:PORT
    pub url: String,
    /// Requests in flight at once (1-1024).
    #[arg(long, default_value_t = 8)]
    pub concurrency: u64,
    /// Stop after this many requests (default: 4 per concurrent stream).
    #[arg(long, conflicts_with = "duration")]
    pub requests: Option<u64>,
    /// Stop after this many seconds instead (1-86400).
    #[arg(long)]
    pub duration: Option<f64>,
    /// Prompt length of every request, in tokens (1-1048576).
    #[arg(long = "prompt-tokens", default_value_t = 512)]
    pub prompt_tokens: u64,
    /// Tokens generated per request (1-65536).
    #[arg(long = "max-tokens", default_value_t = 128)]
    pub max_tokens: u64,
    /// Model name to request (default: the first the server lists).
    #[arg(long)]
    pub model: Option<String>,
    /// The server's process id: its resident memory is sampled too (CPU-only servers).
    #[arg(long)]
    pub pid: Option<u32>,
    /// The memory the plan allows (default: the GPU's total when NVML sees one), for the verdict.
    #[arg(long)]
    pub budget: Option<String>,
    /// Headroom the plan keeps, percent of the budget; the verdict fails below it.
    #[arg(long, default_value_t = 5.0)]
    pub headroom: f64,
    /// Seconds to wait for a server that answers 503 while it loads (0-3600).
    #[arg(long = "ready-timeout", default_value_t = 60)]
    pub ready_timeout: u64,
    /// Seconds one request may take (1-3600).
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Default, Serialize)]
pub struct Latency {
    pub p50_s: f64,
    pub p90_s: f64,
    pub p99_s: f64,
    pub max_s: f64,
}

#[derive(Debug, Serialize)]
pub struct StressReport {
    pub url: String,
    pub model: String,
    pub concurrency: u64,
    pub prompt_tokens: u64,
    pub max_tokens: u64,
    pub requests_completed: u64,
    pub requests_failed: u64,
    pub duration_s: f64,
    pub requests_per_s: f64,
    pub output_tokens_per_s: f64,
    pub prompt_tokens_per_s: f64,
    pub latency: Latency,
    pub ttft: Latency,
    pub peak_gpu_used_bytes: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
    pub peak_kv_usage: Option<f64>,
    pub max_running: Option<u64>,
    pub max_waiting: Option<u64>,
    pub preemptions: Option<u64>,
    pub metrics_samples: u64,
    pub errors: Vec<String>,
    pub budget_bytes: Option<u64>,
    pub verdict: String,
    pub passed: bool,
}

fn bad(msg: String) -> CliError {
    CliError::input(msg)
}

fn percentiles(mut v: Vec<f64>) -> Latency {
    if v.is_empty() {
        return Latency::default();
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| v[((q * (v.len() - 1) as f64).round() as usize).min(v.len() - 1)];
    Latency {
        p50_s: at(0.5),
        p90_s: at(0.9),
        p99_s: at(0.99),
        max_s: v[v.len() - 1],
    }
}

fn rss_of(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: u64 = s
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

#[derive(Default)]
struct Peaks {
    gpu: Option<u64>,
    gpu_total: Option<u64>,
    rss: Option<u64>,
    kv: Option<f64>,
    running: Option<u64>,
    waiting: Option<u64>,
    preempt_first: Option<u64>,
    preempt_last: Option<u64>,
    samples: u64,
}

fn max_opt<T: PartialOrd + Copy>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y > x { y } else { x }),
        (x, None) => x,
        (None, y) => y,
    }
}

pub fn run(args: Args) -> CmdResult {
    if !(1..=1024).contains(&args.concurrency) {
        return Err(bad(format!(
            "--concurrency {}: give 1 to 1024 requests in flight",
            args.concurrency
        )));
    }
    if !(1..=1 << 20).contains(&args.prompt_tokens) || !(1..=65536).contains(&args.max_tokens) {
        return Err(bad(
            "--prompt-tokens must be 1 to 1048576 and --max-tokens 1 to 65536".into(),
        ));
    }
    if let Some(d) = args.duration {
        if !(d >= 1.0 && d <= 86400.0) {
            return Err(bad(format!("--duration {d}: give 1 to 86400 seconds")));
        }
    }
    if args.ready_timeout > 3600 {
        return Err(bad(format!(
            "--ready-timeout {}: give 0 to 3600 seconds",
            args.ready_timeout
        )));
    }
    if !(1..=3600).contains(&args.timeout) {
        return Err(bad(format!(
            "--timeout {}: give 1 to 3600 seconds",
            args.timeout
        )));
    }
    let requests = match (args.requests, args.duration) {
        (Some(0), _) => return Err(bad("--requests 0: give at least 1".into())),
        (Some(r), _) => Some(r.min(10_000_000)),
        (None, Some(_)) => None,
        (None, None) => Some(4 * args.concurrency),
    };
    let budget = match &args.budget {
        Some(b) => {
            Some(parse_size(b).map_err(|e| bad(format!("--budget {b}: {e}; write e.g. 24GiB")))?)
        }
        None => None,
    };
    let base = openai::loopback_base(&args.url).map_err(bad)?;
    let probe_agent = openai::agent(Duration::from_secs(10));
    let served =
        openai::models_when_ready(&probe_agent, &base, Duration::from_secs(args.ready_timeout))
            .map_err(bad)?;
    let model = args.model.clone().unwrap_or_else(|| served[0].clone());

    let agent = openai::agent(Duration::from_secs(args.timeout));
    let issued = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let results: Arc<Mutex<Vec<Result<openai::Timing, String>>>> = Arc::default();
    let peaks: Arc<Mutex<Peaks>> = Arc::default();
    let t0 = Instant::now();
    let deadline = args.duration.map(|d| t0 + Duration::from_secs_f64(d));

    let bar = match requests {
        Some(r) => indicatif::ProgressBar::new(r),
        None => indicatif::ProgressBar::new(args.duration.unwrap_or(1.0).ceil() as u64),
    };
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr_with_hz(4));
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );

    // the sampler: engine metrics, NVML, the server's RSS, twice a second
    let sampler = {
        let (stop, peaks, url, pid) = (stop.clone(), peaks.clone(), args.url.clone(), args.pid);
        std::thread::spawn(move || {
            let mut probe = EngineProbe::parse(&url).ok();
            let mut nvml =
                vramfit_watch::sampler::NvmlSampler::new(Duration::from_millis(500)).ok();
            while !stop.load(Ordering::Relaxed) {
                let mut p = Peaks::default();
                if let Some(s) = probe.as_mut().and_then(|pr| pr.poll().ok()) {
                    p.kv = s.kv_cache_usage;
                    p.running = s.requests_running;
                    p.waiting = s.requests_waiting;
                    p.preempt_last = s.preemptions_total;
                }
                if let Some(tick) = nvml.as_mut().and_then(|n| n.sample_now().ok()) {
                    p.gpu = tick.gpus.iter().map(|g| g.used_bytes).max();
                    p.gpu_total = tick.gpus.iter().map(|g| g.total_bytes).max();
                }
                p.rss = pid.and_then(rss_of);
                {
                    let mut q = peaks.lock().unwrap_or_else(|e| e.into_inner());
                    q.gpu = max_opt(q.gpu, p.gpu);
                    q.gpu_total = max_opt(q.gpu_total, p.gpu_total);
                    q.rss = max_opt(q.rss, p.rss);
                    q.kv = max_opt(q.kv, p.kv);
                    q.running = max_opt(q.running, p.running);
                    q.waiting = max_opt(q.waiting, p.waiting);
                    if q.preempt_first.is_none() {
                        q.preempt_first = p.preempt_last;
                    }
                    q.preempt_last = max_opt(q.preempt_last, p.preempt_last);
                    q.samples += 1;
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        })
    };

    let workers: Vec<_> = (0..args.concurrency)
        .map(|w| {
            let (agent, base, model) = (agent.clone(), base.clone(), model.clone());
            let (issued, done, results, stop) =
                (issued.clone(), done.clone(), results.clone(), stop.clone());
            let (p, m) = (args.prompt_tokens, args.max_tokens);
            std::thread::spawn(move || loop {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let i = issued.fetch_add(1, Ordering::SeqCst);
                if requests.is_some_and(|r| i >= r) || deadline.is_some_and(|d| Instant::now() >= d)
                {
                    break;
                }
                let r = openai::stream_completion(
                    &agent,
                    &base,
                    &model,
                    &openai::prompt_ids(p, i + w),
                    m,
                );
                results.lock().unwrap_or_else(|e| e.into_inner()).push(r);
                done.fetch_add(1, Ordering::SeqCst);
            })
        })
        .collect();

    // progress until every worker is done (bounded: each request has its timeout)
    while workers.iter().any(|h| !h.is_finished()) {
        match requests {
            Some(_) => bar.set_position(done.load(Ordering::Relaxed)),
            None => bar.set_position(t0.elapsed().as_secs()),
        }
        let q = peaks.lock().unwrap_or_else(|e| e.into_inner());
        let kv =
            q.kv.map(|k| format!(" kv {:.0}%", k * 100.0))
                .unwrap_or_default();
        drop(q);
        bar.set_message(format!("{} done{kv}", done.load(Ordering::Relaxed)));
        std::thread::sleep(Duration::from_millis(200));
    }
    for h in workers {
        let _ = h.join();
    }
    let elapsed = t0.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    bar.finish_and_clear();

    let results = std::mem::take(&mut *results.lock().unwrap_or_else(|e| e.into_inner()));
    let ok: Vec<&openai::Timing> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    let mut errors: Vec<String> = Vec::new();
    for e in results.iter().filter_map(|r| r.as_ref().err()) {
        if errors.len() < 5 && !errors.contains(e) {
            errors.push(e.clone());
        }
    }
    let completed = ok.len() as u64;
    let failed = results.len() as u64 - completed;
    let out_tokens: u64 = ok.iter().map(|t| t.tokens).sum();
    let q = peaks.lock().unwrap_or_else(|e| e.into_inner());
    let preemptions = match (q.preempt_first, q.preempt_last) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    let budget = budget.or(q.gpu_total);
    let peak_mem = q.gpu.or(q.rss);
    let mut verdict = Vec::new();
    let mut passed = true;
    if failed > 0 {
        passed = false;
        verdict.push(format!("{failed} of {} requests failed", results.len()));
    }
    if preemptions.is_some_and(|p| p > 0) {
        passed = false;
        verdict.push(format!(
            "{} preemptions: the KV cache is too small for this load",
            preemptions.unwrap_or(0)
        ));
    }
    if let (Some(b), Some(m)) = (budget, peak_mem) {
        let room = b as f64 - m as f64;
        let pct = 100.0 * room / b as f64;
        if pct < args.headroom {
            passed = false;
            verdict.push(format!(
                "peak memory {} leaves {:.1}% of {} (planned headroom {:.1}%)",
                fmt_bytes(m),
                pct,
                fmt_bytes(b),
                args.headroom
            ));
        } else {
            verdict.push(format!(
                "peak memory {} keeps {:.1}% of {} free (planned {:.1}%)",
                fmt_bytes(m),
                pct,
                fmt_bytes(b),
                args.headroom
            ));
        }
    }
    if completed == 0 {
        passed = false;
    }
    if passed {
        verdict.insert(0, "passed".into());
    } else {
        verdict.insert(0, "failed".into());
    }
    let report = StressReport {
        url: args.url.clone(),
        model,
        concurrency: args.concurrency,
        prompt_tokens: args.prompt_tokens,
        max_tokens: args.max_tokens,
        requests_completed: completed,
        requests_failed: failed,
        duration_s: elapsed,
        requests_per_s: completed as f64 / elapsed.max(1e-9),
        output_tokens_per_s: out_tokens as f64 / elapsed.max(1e-9),
        prompt_tokens_per_s: (completed * args.prompt_tokens) as f64 / elapsed.max(1e-9),
        latency: percentiles(ok.iter().map(|t| t.total_s).collect()),
        ttft: percentiles(ok.iter().map(|t| t.ttft_s).collect()),
        peak_gpu_used_bytes: q.gpu,
        peak_rss_bytes: q.rss,
        peak_kv_usage: q.kv,
        max_running: q.running,
        max_waiting: q.waiting,
        preemptions,
        metrics_samples: q.samples,
        errors,
        budget_bytes: budget,
        verdict: verdict.join("; "),
        passed,
    };
    drop(q);
    eprintln!("stress: {completed} completed, {failed} failed in {elapsed:.1}s");
    let text = if args.json {
        serde_json::to_string_pretty(&report).map_err(|e| bad(e.to_string()))? + "\n"
    } else {
        render(&report)
    };
    crate::render::emit(&text);
    Ok(if passed { 0 } else { 1 })
}

fn render(r: &StressReport) -> String {
    let opt = |v: Option<u64>| v.map(fmt_bytes).unwrap_or_else(|| "-".into());
    format!(
        "stress {} ({}): {} concurrent, {} prompt + {} output tokens each\n\
         requests   {} completed, {} failed in {:.1}s ({:.2}/s)\n\
         throughput {:.1} output tok/s, {:.1} prompt tok/s\n\
         latency    p50 {:.2}s  p90 {:.2}s  p99 {:.2}s  max {:.2}s\n\
         first tok  p50 {:.2}s  p90 {:.2}s  p99 {:.2}s\n\
         peaks      GPU {}  RSS {}  KV {}  running {}  waiting {}  preemptions {}\n\
         {}verdict    {}\n",
        r.url,
        r.model,
        r.concurrency,
        r.prompt_tokens,
        r.max_tokens,
        r.requests_completed,
        r.requests_failed,
        r.duration_s,
        r.requests_per_s,
        r.output_tokens_per_s,
        r.prompt_tokens_per_s,
        r.latency.p50_s,
        r.latency.p90_s,
        r.latency.p99_s,
        r.latency.max_s,
        r.ttft.p50_s,
        r.ttft.p90_s,
        r.ttft.p99_s,
        opt(r.peak_gpu_used_bytes),
        opt(r.peak_rss_bytes),
        r.peak_kv_usage
            .map(|k| format!("{:.0}%", k * 100.0))
            .unwrap_or("-".into()),
        r.max_running.map(|v| v.to_string()).unwrap_or("-".into()),
        r.max_waiting.map(|v| v.to_string()).unwrap_or("-".into()),
        r.preemptions.map(|v| v.to_string()).unwrap_or("-".into()),
        if r.errors.is_empty() {
            String::new()
        } else {
            format!("errors     {}\n", r.errors.join(" | "))
        },
        r.verdict
    )
}
