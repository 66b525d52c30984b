//! The five vLLM dev cases of ../shared/data/dev/cases_check.dev.jsonl, carried in-tree: the
//! command, the GPU as vLLM saw it, the model's config.json, and what the log measured. Each
//! measured value is held to the tolerance `eval-check` uses (weights 3 %, available KV
//! max(8 %, 0.5 GiB), tokens / concurrency / max length 8 %, verdict exact).

use serde_json::{json, Value};
use vramfit_engine::cmdline::Command;
use vramfit_engine::hardware::{Gpu, Hardware};
use vramfit_engine::plan::{MemoryPlan, Verdict};
use vramfit_engine::vllm;
use vramfit_model::hf_config::spec_from_config;
use vramfit_model::units::{GIB, MIB};

struct Case {
    id: &'static str,
    argv: &'static [&'static str],
    version: &'static str,
    /// (name, CUDA total, free at launch) per GPU
    gpus: Vec<(&'static str, u64, u64, f64)>,
    config: Value,
    weights: Option<(usize, u64)>,
    available_kv: Option<(usize, u64)>,
    kv_tokens: Option<u64>,
    concurrency: Option<f64>,
    verdict: Verdict,
}

fn qwen3(hidden: u64, ff: u64, layers: u64, heads: u64, dtype: &str) -> Value {
    json!({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": hidden,
           "intermediate_size": ff, "num_hidden_layers": layers, "num_attention_heads": heads,
           "num_key_value_heads": 8, "vocab_size": 151936, "max_position_embeddings": 40960,
           "tie_word_embeddings": false, "torch_dtype": dtype, "rope_theta": 1000000.0, "head_dim": 128})
}

fn cases() -> Vec<Case> {
    let gib = |x: f64| (x * GIB as f64) as u64;
    let mib = |x: u64| x * MIB;
    let mut nvfp4 = qwen3(5120, 17408, 40, 40, "bfloat16");
    nvfp4["quantization_config"] = json!({"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
        "quantization_status": "compressed", "config_groups": {"group_0": {"targets": ["Linear"],
        "format": "nvfp4-pack-quantized", "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group",
        "group_size": 16, "symmetric": true, "dynamic": false}}}, "ignore": ["lm_head"]});
    let mut awq = qwen3(5120, 17408, 40, 40, "float16");
    awq["quantization_config"] = json!({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": true,
        "version": "gemm", "modules_to_not_convert": null});
    vec![
        Case {
            id: "vllm-log-005",
            argv: &["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"],
            version: "0.31.0",
            gpus: vec![("NVIDIA A100 80GB PCIe", gib(79.25), gib(78.84), 8.0)],
            config: json!({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
                "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
                "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
                "tie_word_embeddings": false, "torch_dtype": "bfloat16", "rope_theta": 500000.0, "head_dim": 128}),
            weights: Some((0, 16106127360)),
            available_kv: Some((0, 60355027927)),
            kv_tokens: Some(460496),
            concurrency: Some(3.51),
            verdict: Verdict::Fits,
        },
        Case {
            id: "vllm-log-006",
            argv: &[
                "CUDA_VISIBLE_DEVICES=0",
                "VLLM_USE_FLASHINFER_SAMPLER=0",
                "VLLM_ATTENTION_BACKEND=FLASH_ATTN",
                "vllm",
                "serve",
                "Qwen/Qwen3-8B",
                "--max-model-len",
                "32768",
                "--gpu-memory-utilization",
                "0.92",
                "--port",
                "8100",
            ],
            version: "0.24.0",
            // nvidia-smi 32607 MiB
            gpus: vec![("NVIDIA GeForce RTX 5090", mib(32607), mib(32607), 12.0)],
            config: qwen3(4096, 12288, 36, 32, "bfloat16"),
            weights: Some((0, 16396037652)),
            available_kv: None,
            kv_tokens: Some(89040),
            concurrency: None,
            verdict: Verdict::Fits,
        },
        Case {
            id: "vllm-log-009",
            argv: &[
                "vllm",
                "serve",
                "RedHatAI/Qwen3-14B-NVFP4",
                "--gpu-memory-utilization",
                "0.90",
                "--max-model-len",
                "8192",
            ],
            version: "0.23.0",
            // RTX 5070 Ti: the total is not printed (WSL2); the embedded GPU catalog's estimate
            // (16 GiB − 12 MiB) is what `check --gpu "RTX 5070 Ti"` uses
            gpus: vec![("NVIDIA GeForce RTX 5070 Ti", mib(16372), mib(16372), 12.0)],
            config: nvfp4,
            weights: Some((0, 10705205985)),
            available_kv: Some((0, 2609192632)),
            kv_tokens: None,
            concurrency: Some(1.94),
            verdict: Verdict::Fits,
        },
        Case {
            id: "vllm-log-012",
            argv: &["vllm", "serve", "Qwen/Qwen3-14B", "--disable-log-stats"],
            version: "0.28.0",
            // nvidia-smi 46068 MiB total, 45460 MiB free
            gpus: vec![("NVIDIA L40S", mib(46068), mib(45460), 8.9)],
            config: qwen3(5120, 17408, 40, 40, "bfloat16"),
            weights: Some((0, 29549374996)),
            available_kv: Some((0, 12423192904)),
            kv_tokens: Some(75824),
            concurrency: Some(1.85),
            verdict: Verdict::Fits,
        },
        Case {
            id: "vllm-log-017",
            argv: &[
                "CUDA_VISIBLE_DEVICES=0,1",
                "vllm",
                "serve",
                "Qwen/Qwen3-14B-AWQ",
                "--disable-log-stats",
                "--pipeline-parallel-size",
                "2",
            ],
            version: "0.28.0",
            // L4: nvidia-smi 23034 MiB
            gpus: vec![("NVIDIA L4", mib(23034), mib(23034), 8.9); 2],
            config: awq,
            weights: None,
            available_kv: Some((1, 15075335209)),
            kv_tokens: Some(184000),
            concurrency: Some(4.49),
            verdict: Verdict::Fits,
        },
    ]
}

fn run(c: &Case) -> MemoryPlan {
    let cmd = Command::parse(c.argv).unwrap();
    let cfg = vllm::parse(&cmd, Some(c.version)).unwrap();
    let spec = spec_from_config(&cfg.model, &c.config).unwrap();
    let hw = Hardware {
        gpus: c
            .gpus
            .iter()
            .map(|&(name, total, free, cc)| Gpu {
                name: name.into(),
                total_bytes: total,
                free_bytes: free,
                bandwidth_gbps: None,
                compute_capability: Some(cc),
                unified: false,
            })
            .collect(),
        host_ram_bytes: None,
    };
    vllm::plan(&spec, None, &cfg, &hw)
}

fn rel(pred: f64, meas: f64) -> f64 {
    (pred - meas) / meas
}

#[test]
fn dev_cases_within_eval_tolerances() {
    let mut failures = Vec::new();
    println!(
        "{:<13} {:<12} {:>14} {:>14} {:>8}",
        "case", "component", "predicted", "measured", "error"
    );
    for c in cases() {
        let p = run(&c);
        let mut check = |what: &str, pred: f64, meas: f64, ok: bool, unit: &str| {
            let scale = if unit == "GiB" { GIB as f64 } else { 1.0 };
            println!(
                "{:<13} {:<12} {:>14.2} {:>14.2} {:>7.1}%{}",
                c.id,
                what,
                pred / scale,
                meas / scale,
                100.0 * rel(pred, meas),
                if ok { "" } else { "  OUT" }
            );
            if !ok {
                failures.push(format!(
                    "{} {what}: predicted {:.3} vs measured {:.3}",
                    c.id,
                    pred / scale,
                    meas / scale
                ));
            }
        };
        if let Some((d, v)) = c.weights {
            let pred = p.devices[d].weights_bytes as f64;
            check(
                "weights",
                pred,
                v as f64,
                rel(pred, v as f64).abs() <= 0.03,
                "GiB",
            );
        }
        if let Some((d, v)) = c.available_kv {
            let pred = p.devices[d].kv_cache_bytes.max(0) as f64;
            let tol = (0.08 * v as f64).max(0.5 * GIB as f64);
            check(
                "available_kv",
                pred,
                v as f64,
                (pred - v as f64).abs() <= tol,
                "GiB",
            );
        }
        if let Some(v) = c.kv_tokens {
            let pred = p.kv_cache.tokens as f64;
            check(
                "kv_tokens",
                pred,
                v as f64,
                rel(pred, v as f64).abs() <= 0.08,
                "n",
            );
        }
        if let Some(v) = c.concurrency {
            let pred = p.kv_cache.max_concurrency;
            check("concurrency", pred, v, rel(pred, v).abs() <= 0.08, "x");
        }
        if p.verdict != c.verdict {
            failures.push(format!(
                "{} verdict {:?}, expected {:?}: {:?}",
                c.id, p.verdict, c.verdict, p.problems
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "out of tolerance:\n{}",
        failures.join("\n")
    );
}

/// The record file itself, when ../shared is at hand: every vLLM case there is one of ours.
#[test]
fn shared_cases_are_carried_here() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/dev/cases_check.dev.jsonl"
    );
    let Ok(text) = std::fs::read_to_string(path) else {
        println!("skipped: {path} is not present (the in-tree fixtures above still ran)");
        return;
    };
    let ours: Vec<&str> = cases().iter().map(|c| c.id).collect();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["engine"] == "vllm" {
            let id = v["id"].as_str().unwrap();
            assert!(
                ours.contains(&id),
                "{id} is a vLLM dev case not carried in this test"
            );
        }
    }
}
