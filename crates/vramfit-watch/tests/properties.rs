//! Invariants over arbitrary inputs: traces round-trip, label values survive escaping, the
//! forecast of an exact climb is exact, and the monitor's memory stays bounded.

use proptest::prelude::*;
use std::io::Cursor;
use vramfit_watch::detect::DetectConfig;
use vramfit_watch::forecast::{fit_line, forecast};
use vramfit_watch::monitor::{Monitor, HISTORY_MAX_POINTS};
use vramfit_watch::promtext::{escape_label, parse_line};
use vramfit_watch::sample::{GpuSample, ProcessSample, Tick};
use vramfit_watch::trace::{to_jsonl, TraceReader};

fn sample(t: f64, gpu: u32, total: u64, used: u64, procs: Vec<(u32, String, u64)>) -> GpuSample {
    GpuSample {
        t,
        gpu,
        total_bytes: total,
        used_bytes: used,
        free_bytes: None,
        reserved_bytes: None,
        name: None,
        mig: None,
        processes: procs
            .into_iter()
            .map(|(pid, name, used_bytes)| ProcessSample {
                pid,
                name,
                used_bytes,
            })
            .collect(),
        engine: None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn traces_round_trip(rows in prop::collection::vec((0u32..4, 1u64..1 << 40, any::<u64>(), ".{0,12}"), 1..40)) {
        let samples: Vec<GpuSample> = rows
            .iter()
            .enumerate()
            .map(|(i, (g, total, used, name))| sample(i as f64 * 0.5, *g, *total, used % total, vec![(i as u32, name.clone(), used % total)]))
            .collect();
        let text = to_jsonl(&samples);
        let mut r = TraceReader::new(Cursor::new(text.into_bytes()), "mem");
        let mut back = Vec::new();
        while let Some(tick) = r.next_tick().unwrap() {
            back.extend(tick.gpus);
        }
        prop_assert_eq!(back, samples);
    }

    #[test]
    fn label_values_survive_escaping(v in ".{0,40}") {
        let line = format!("vramfit_process_memory_used_bytes{{name=\"{}\"}} 1", escape_label(&v));
        let parsed = parse_line(&line).unwrap();
        prop_assert_eq!(parsed.label("name"), Some(v.as_str()));
    }

    #[test]
    fn exact_climb_forecast_is_exact(start in 1u64..(20u64 << 30), rate in (64u64 << 20)..(512u64 << 20), n in 31usize..120) {
        // at least FORECAST_MIN_SPAN_S (29.5 s) of climbing, one point a second
        let total = 80u64 << 30;
        prop_assume!(start + rate * n as u64 <= total);
        let f = fit_line((0..n).map(|i| (i as f64, (start + rate * i as u64) as f64))).unwrap();
        let fc = forecast(0, Some(&f), total);
        let expected = (total - start - rate * (n as u64 - 1)) as f64 / rate as f64;
        let got = fc.time_to_oom_s.unwrap();
        prop_assert!((got - expected).abs() <= 1e-6 * expected.max(1.0), "{} vs {}", got, expected);
    }

    #[test]
    fn monitor_never_panics_on_odd_ticks(ticks in prop::collection::vec((0u32..3, any::<u64>(), any::<u64>(), prop::collection::vec((0u32..6, any::<u64>()), 0..4)), 1..200)) {
        let mut m = Monitor::new(DetectConfig::default());
        for (i, (g, total, used, procs)) in ticks.into_iter().enumerate() {
            let procs = procs.into_iter().map(|(p, b)| (p, "p".to_string(), b)).collect();
            let r = m.observe(&Tick { t: i as f64 * 0.1, gpus: vec![sample(i as f64 * 0.1, g, total, used, procs)] });
            prop_assert_eq!(r.forecast.len(), 1);
        }
    }
}

#[test]
fn history_is_bounded_at_10_hz_over_16_minutes() {
    let mut m = Monitor::new(DetectConfig::default());
    for i in 0..9_600u64 {
        let t = i as f64 / 10.0;
        m.observe(&Tick {
            t,
            gpus: vec![sample(
                t,
                0,
                80 << 30,
                (40 << 30) + (i % 100) * (1 << 20),
                vec![],
            )],
        });
    }
    let s = m.series(0).unwrap();
    assert!(s.points().len() <= HISTORY_MAX_POINTS);
    assert!(s.now() - s.points().next().unwrap().t <= 900.0);
}
