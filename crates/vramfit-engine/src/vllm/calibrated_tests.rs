//! The calibration evaluated at the log's own settings gives back the log's pool, in the eras
//! whose profile charges more than the model's default (V1 before v0.9.0: the CUDA context;
//! V0 v0.6.4: what other processes hold).

use crate::calibrate::{registry, Calibration, LogSettings, Measured};
use crate::cmdline::Command;
use crate::hardware::{Gpu, Hardware};
use crate::vllm;
use vramfit_model::ModelSpec;

const GIB: u64 = 1 << 30;

fn spec(id: &str) -> ModelSpec {
    let m = vramfit_model::catalog::find_model(id).unwrap();
    vramfit_model::hf_config::spec_from_config(&m.id, &m.config).unwrap()
}

fn hw(name: &str, total: u64, free: u64) -> Hardware {
    Hardware {
        gpus: vec![Gpu {
            name: name.into(),
            total_bytes: total,
            free_bytes: free,
            bandwidth_gbps: None,
            compute_capability: Some(8.6),
            unified: false,
        }],
        host_ram_bytes: None,
    }
}

fn plan(argv: &[&str], version: &str, h: &Hardware, s: &ModelSpec) -> crate::MemoryPlan {
    let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
    let cfg = vllm::parse(&Command::parse(&argv).unwrap(), Some(version)).unwrap();
    vllm::plan_without_suggestions(s, None, &cfg, h)
}

/// One test touches the process-wide registry: both eras in sequence.
#[test]
fn a_calibration_at_the_log_settings_gives_back_the_log_pool() {
    let total = 22 * GIB + 300 * (1 << 20);
    for (version, free) in [("0.8.5", total), ("0.6.4", total - 3 * GIB)] {
        let s = spec("Qwen/Qwen3-8B");
        let h = hw("A10 calibration test", total, free);
        let argv = ["vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "8192"];
        // what the log measured (any values of the right size; the point is the round trip)
        let weights = 15_271_000_000u64;
        let avail = 2_400_000_000i64;
        let cal = Calibration {
            engine: "vllm".into(),
            model: "Qwen/Qwen3-8B".into(),
            engine_version: Some(version.into()),
            gpu_name: Some("A10 calibration test".into()),
            gpu_total_bytes: Some(total),
            source: "test".into(),
            settings: LogSettings {
                gpu_memory_utilization: Some(0.9),
                max_model_len: Some(8192),
                ..Default::default()
            },
            measured: Measured {
                weights_bytes: Some(weights),
                available_kv_bytes: Some(avail),
                ..Default::default()
            },
            outcome: Default::default(),
            warnings: vec![],
        };
        registry::install(vec![cal]);
        let p = plan(&argv, version, &h, &s);
        registry::install(vec![]);
        let got = p.devices[0].kv_cache_bytes;
        assert!(
            (got - avail).abs() < (1 << 20),
            "v{version}: calibrated pool {got} vs the log's {avail}"
        );
        assert_eq!(p.devices[0].weights_bytes, weights);
    }
}

/// vllm#11230 (v0.6.4.post1, Qwen2.5-72B-GPTQ-Int4 on an A40-48Q vGPU, 47.74 GiB): the log's
/// non_torch_memory is the 4.09 GiB in use besides the weights when profiling starts; the
/// device-wide profile of v0.6.4 charges what other processes hold, v0.6.3's does not (a dense
/// catalog model on the same card here: the charge does not depend on the model).
#[test]
fn v0_6_4_charges_what_other_processes_hold() {
    let s = spec("Qwen/Qwen3-8B");
    let total = 4774 * GIB / 100;
    let held = 3840 * (1 << 20);
    let argv = [
        "vllm",
        "serve",
        "Qwen/Qwen3-8B",
        "--max-model-len",
        "8192",
        "--gpu-memory-utilization",
        "0.90",
        "--enforce-eager",
    ];
    let pool = |v: &str, free: u64| plan(&argv, v, &hw("A40-48Q", total, free), &s);
    let clean = pool("0.6.4", total).devices[0].kv_cache_bytes;
    let shared = pool("0.6.4", total - held);
    assert_eq!(clean - shared.devices[0].kv_cache_bytes, held as i64);
    // the same card at v0.6.3 (free memory measured at start) and v0.6.5 (baseline snapshot)
    for v in ["0.6.3", "0.6.5"] {
        let a = pool(v, total).devices[0].kv_cache_bytes;
        let b = pool(v, total - held).devices[0].kv_cache_bytes;
        assert_eq!(a, b, "v{v}");
    }
}
