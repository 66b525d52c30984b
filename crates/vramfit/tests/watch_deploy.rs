//! The deployment files in deploy/ use only metrics the exporter really emits, and the alert
//! rules pass `promtool check rules` (skipped, saying so, without promtool).

use std::collections::BTreeSet;
use std::path::PathBuf;
use vramfit_watch::detect::DetectConfig;
use vramfit_watch::export::prometheus::render;
use vramfit_watch::monitor::Monitor;
use vramfit_watch::sample::{EngineSample, GpuSample, ProcessSample, Tick};

fn deploy(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy")
        .join(path)
}

fn exported_families() -> BTreeSet<String> {
    let g = GpuSample {
        t: 0.0,
        gpu: 0,
        total_bytes: 80 << 30,
        used_bytes: 79 << 30,
        free_bytes: None,
        reserved_bytes: None,
        name: None,
        mig: None,
        processes: vec![ProcessSample {
            pid: 1,
            name: "python3".into(),
            used_bytes: 70 << 30,
        }],
        engine: Some(EngineSample {
            kv_cache_usage: Some(0.5),
            requests_running: Some(1),
            requests_waiting: Some(0),
            preemptions_total: None,
        }),
    };
    let r = Monitor::new(DetectConfig::default()).observe(&Tick {
        t: 0.0,
        gpus: vec![g],
    });
    render(&r)
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

fn metric_names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("vramfit_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        out.insert(tail[..end].to_string());
        rest = &tail[end..];
    }
    out
}

#[test]
fn dashboard_and_rules_use_exported_metrics() {
    let families = exported_families();
    let dash = std::fs::read_to_string(deploy("grafana/vramfit-dashboard.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&dash).expect("the dashboard is JSON");
    assert!(v["panels"].as_array().unwrap().len() >= 5);
    let rules = std::fs::read_to_string(deploy("prometheus/vramfit-alerts.yml")).unwrap();
    for (file, text) in [("dashboard", &dash), ("rules", &rules)] {
        let used = metric_names(text);
        assert!(!used.is_empty());
        for m in used {
            assert!(
                families.contains(&m),
                "{file} uses {m}, which the exporter does not emit"
            );
        }
    }
}

#[test]
fn alert_rules_pass_promtool() {
    let Ok(out) = std::process::Command::new("promtool")
        .args(["check", "rules"])
        .arg(deploy("prometheus/vramfit-alerts.yml"))
        .output()
    else {
        eprintln!("skipping: no promtool on PATH (apt-get install -y prometheus)");
        return;
    };
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
