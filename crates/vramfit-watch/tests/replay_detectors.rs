//! Every detector proven on the committed traces (see `vramfit_watch::synth` for how they are
//! generated), fed through the same sampler and monitor the live watch uses.

use std::path::PathBuf;
use vramfit_watch::detect::{AlertKind, Cause, DetectConfig};
use vramfit_watch::monitor::{Monitor, Report};
use vramfit_watch::sampler::{ReplaySampler, Sampler};
use vramfit_watch::synth;

fn trace(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/traces")
        .join(format!("{name}.jsonl"))
}

fn replay(name: &str) -> Vec<Report> {
    let mut sampler = ReplaySampler::open(&trace(name), None).expect("open trace");
    let mut monitor = Monitor::new(DetectConfig::default());
    let mut out = Vec::new();
    while let Some(tick) = sampler.next_tick().expect("read tick") {
        out.push(monitor.observe(&tick));
    }
    out
}

fn raised(reports: &[Report], kind: AlertKind) -> Vec<(f64, vramfit_watch::monitor::Alert)> {
    reports
        .iter()
        .flat_map(|r| {
            r.alerts
                .iter()
                .filter(|a| a.kind == kind)
                .map(move |a| (r.t, a.clone()))
        })
        .collect()
}

#[test]
fn committed_traces_are_what_the_generator_makes() {
    for (name, samples) in synth::scenarios() {
        let committed = std::fs::read_to_string(trace(name)).expect("committed trace");
        assert!(
            committed == vramfit_watch::trace::to_jsonl(&samples),
            "tests/traces/{name}.jsonl differs from synth::{name}(); regenerate with the gen_traces example"
        );
    }
}

#[test]
fn leak_is_flagged_within_a_minute_with_a_forecast_within_20_percent() {
    let reports = replay("leak");
    // The crash: the first sample where the leaking process is gone.
    let crash_t = reports
        .iter()
        .find(|r| r.t > synth::LEAK.leak_start_s && r.gpus[0].processes.is_empty())
        .expect("the trace ends in a crash")
        .t;
    let leaks = raised(&reports, AlertKind::Leak);
    let (t_flag, alert) = leaks.first().expect("a leak alert").clone();
    assert!(
        t_flag > synth::LEAK.leak_start_s,
        "flagged at {t_flag}, before the leak began"
    );
    assert!(
        t_flag <= synth::LEAK.leak_start_s + 60.0,
        "flagged at {t_flag}s, more than 60 s after the leak began at {}s",
        synth::LEAK.leak_start_s
    );
    assert_eq!(alert.cause, Cause::Fragmentation);
    assert!(alert.message.contains("runs out in"), "{}", alert.message);
    let at_flag = reports.iter().find(|r| r.t == t_flag).unwrap();
    let predicted = at_flag.forecast[0]
        .time_to_oom_s
        .expect("a forecast when the leak is flagged");
    let actual = crash_t - t_flag;
    let (lo, hi) = (
        at_flag.forecast[0].low_s.unwrap(),
        at_flag.forecast[0].high_s.unwrap(),
    );
    eprintln!("leak flagged at t={t_flag}s; forecast {predicted:.0}s ({lo:.0}-{hi:.0}), crash {actual:.0}s later");
    assert!(
        (predicted - actual).abs() <= 0.2 * actual,
        "forecast {predicted:.0}s at t={t_flag}, crash came {actual:.0}s later"
    );
    assert!(lo <= predicted && predicted <= hi, "{lo} {predicted} {hi}");
    assert!(
        lo <= actual && actual <= hi,
        "the range {lo:.0}-{hi:.0}s misses the crash {actual:.0}s later"
    );
    // Raised once while the climb lasts, and no spike from a steady climb.
    assert_eq!(leaks.len(), 1, "{leaks:?}");
    assert!(raised(&reports, AlertKind::Spike).is_empty());
    // Near the end the GPU runs short of headroom; the alert blames the climb, not the budget.
    let head = raised(&reports, AlertKind::Headroom);
    assert_eq!(head.len(), 1, "{head:?}");
    assert!(head[0].0 < crash_t);
    assert_eq!(
        head[0].1.cause,
        Cause::Fragmentation,
        "{}",
        head[0].1.message
    );
    // Before the leak: nothing at all, and no forecast.
    for r in reports.iter().filter(|r| r.t < synth::LEAK.leak_start_s) {
        assert!(r.alerts.is_empty(), "t={} {:?}", r.t, r.alerts);
        assert_eq!(r.forecast[0].time_to_oom_s, None, "t={}", r.t);
    }
}

#[test]
fn stable_trace_near_its_limit_raises_nothing() {
    let reports = replay("stable");
    assert_eq!(reports.len(), 600);
    let all: Vec<_> = reports
        .iter()
        .flat_map(|r| r.alerts.iter().map(move |a| (r.t, a)))
        .collect();
    assert!(all.is_empty(), "{all:?}");
    let g = &reports.last().unwrap().gpus[0];
    assert!(
        g.free_bytes < g.total_bytes / 15,
        "the trace is near its limit: {} free",
        g.free_bytes
    );
    let forecasts = reports
        .iter()
        .filter(|r| r.forecast[0].time_to_oom_s.is_some())
        .count();
    assert!(
        forecasts < 30,
        "{forecasts} intervals forecast an OOM on a flat trace"
    );
}

#[test]
fn spikes_under_load_are_raised_once_per_burst_and_blamed_on_concurrency() {
    let reports = replay("spike");
    let spikes = raised(&reports, AlertKind::Spike);
    assert_eq!(spikes.len(), 2, "{spikes:?}");
    for ((t, a), burst) in spikes.iter().zip(synth::SPIKE_BURSTS_S) {
        assert!(
            *t >= burst && *t <= burst + 5.0,
            "spike raised at {t}, burst began at {burst}"
        );
        assert_eq!(a.cause, Cause::Concurrency, "{}", a.message);
        assert!(a.message.contains("running requests"), "{}", a.message);
    }
    assert!(raised(&reports, AlertKind::Leak).is_empty());
}

#[test]
fn a_new_process_is_named_with_its_pid() {
    let reports = replay("new_process");
    let news = raised(&reports, AlertKind::NewProcess);
    assert_eq!(news.len(), 1, "{news:?}");
    let (t, a) = &news[0];
    let (pid, name, arrives) = synth::INTRUDER;
    assert_eq!(*t, arrives);
    assert_eq!((a.gpu, a.pid), (1, Some(pid)));
    assert!(
        a.message.contains(&format!("pid {pid}")) && a.message.contains(name),
        "{}",
        a.message
    );
    assert_eq!(a.cause, Cause::OtherProcesses);
    // The intruder then squeezes GPU 1 under its headroom, and the alert blames it.
    let head = raised(&reports, AlertKind::Headroom);
    assert_eq!(head.len(), 1, "{head:?}");
    assert_eq!(head[0].1.gpu, 1);
    assert_eq!(
        head[0].1.cause,
        Cause::OtherProcesses,
        "{}",
        head[0].1.message
    );
    assert!(reports.iter().all(|r| r.alerts.iter().all(|a| a.gpu == 1)));
    // A process loading a model is not a leak; a jump it causes is blamed on it, by pid.
    assert!(raised(&reports, AlertKind::Leak).is_empty());
    for (_, s) in raised(&reports, AlertKind::Spike) {
        assert_eq!(
            (s.cause, s.pid),
            (Cause::OtherProcesses, Some(pid)),
            "{}",
            s.message
        );
        assert!(s.message.contains(name), "{}", s.message);
    }
}

#[test]
fn replay_paces_by_the_trace_clock_and_skips_long_gaps() {
    use std::time::Instant;
    let dir = std::env::temp_dir().join(format!("vramfit-gap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("gap.jsonl");
    // Three samples 0.25 s apart at speed 1, then a gap of a day.
    let line = |t: f64| format!("{{\"t\":{t},\"gpu\":0,\"total_bytes\":100,\"used_bytes\":10}}\n");
    let text: String = [0.0, 0.25, 0.5, 86400.5].iter().map(|t| line(*t)).collect();
    std::fs::write(&path, text).unwrap();
    let mut s = ReplaySampler::open(&path, Some(1.0)).unwrap();
    let start = Instant::now();
    let mut ts = Vec::new();
    while let Some(t) = s.next_tick().unwrap() {
        ts.push((t.t, start.elapsed().as_secs_f64()));
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(ts.len(), 4);
    assert!(ts[2].1 >= 0.5, "paced by the trace: {ts:?}");
    // The day-long gap is skipped after a bounded wait (the test only asserts it ended).
    assert_eq!(ts[3].0, 86400.5);
}
