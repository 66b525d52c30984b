//! How a vLLM plan behaves: start-up failures and their fixes, and the invariants every plan
//! keeps (property tests).

use proptest::prelude::*;
use serde_json::json;
use vramfit_engine::cmdline::Command;
use vramfit_engine::hardware::{Gpu, Hardware};
use vramfit_engine::plan::{MemoryPlan, Verdict};
use vramfit_engine::vllm;
use vramfit_model::hf_config::spec_from_config;
use vramfit_model::units::{GIB, MIB};
use vramfit_model::{ModelSpec, Tensor, TensorDtype, WeightSet};

fn llama8b() -> ModelSpec {
    let cfg = json!({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
        "tie_word_embeddings": false, "torch_dtype": "bfloat16", "head_dim": 128});
    spec_from_config("meta-llama/Llama-3.1-8B-Instruct", &cfg).unwrap()
}

fn rtx4090s(n: usize, free: u64) -> Hardware {
    Hardware {
        gpus: (0..n)
            .map(|i| Gpu {
                name: format!("NVIDIA GeForce RTX 4090 #{i}"),
                total_bytes: 24564 * MIB,
                free_bytes: free,
                bandwidth_gbps: Some(1008.0),
                compute_capability: Some(8.9),
                unified: false,
            })
            .collect(),
        host_ram_bytes: None,
    }
}

fn run(words: &str, version: &str, hw: &Hardware, weights: Option<&WeightSet>) -> MemoryPlan {
    let cfg = vllm::parse(&Command::parse(&[words]).unwrap(), Some(version)).unwrap();
    vllm::plan(&llama8b(), weights, &cfg, hw)
}

#[test]
fn long_context_fails_with_vllms_estimate_and_the_estimate_fits() {
    let hw = rtx4090s(1, 24564 * MIB);
    let p = run(
        "vllm serve meta-llama/Llama-3.1-8B-Instruct",
        "0.31.0",
        &hw,
        None,
    );
    assert_eq!(p.verdict, Verdict::DoesNotFit);
    assert!(
        p.problems[0].contains("max_model_len 131072"),
        "{:?}",
        p.problems
    );
    let est = p.max_model_len;
    // 128 KiB per token: a few GiB of pool hold tens of thousands of tokens, in whole blocks
    assert!((8_000..131_072).contains(&est), "{est}");
    assert_eq!(est % 16, 0);
    assert!(
        p.suggestions.contains(&format!("--max-model-len {est}")),
        "{:?}",
        p.suggestions
    );
    let ok = run(
        &format!("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len {est}"),
        "0.31.0",
        &hw,
        None,
    );
    assert_eq!(ok.verdict, Verdict::Fits, "{:?}", ok.problems);
    assert!(ok.kv_cache.max_concurrency >= 1.0);
    let too_long = run(
        &format!(
            "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len {}",
            est + 16
        ),
        "0.31.0",
        &hw,
        None,
    );
    assert_eq!(too_long.verdict, Verdict::DoesNotFit);
}

#[test]
fn auto_fits_the_longest_length() {
    let hw = rtx4090s(1, 24564 * MIB);
    let p = run("vllm serve M --max-model-len auto", "0.31.0", &hw, None);
    assert_eq!(p.verdict, Verdict::Fits, "{:?}", p.problems);
    let fixed = run("vllm serve M", "0.31.0", &hw, None);
    assert_eq!(p.max_model_len, fixed.max_model_len);
    assert!(
        (p.kv_cache.max_concurrency - 1.0).abs() < 0.05,
        "{}",
        p.kv_cache.max_concurrency
    );
}

#[test]
fn busy_gpu_fails_at_start() {
    let hw = rtx4090s(1, 20 * GIB);
    let p = run("vllm serve M --max-model-len 8192", "0.31.0", &hw, None);
    assert_eq!(p.verdict, Verdict::DoesNotFit);
    assert!(
        p.problems
            .iter()
            .any(|s| s.contains("free memory at start")),
        "{:?}",
        p.problems
    );
    assert!(
        p.suggestions
            .iter()
            .any(|s| s.starts_with("--gpu-memory-utilization 0.8")),
        "{:?}",
        p.suggestions
    );
}

#[test]
fn weights_larger_than_the_budget_leave_no_blocks() {
    let hw = rtx4090s(2, 24564 * MIB);
    let p = run(
        "vllm serve M --max-model-len 8192 --gpu-memory-utilization 0.6",
        "0.31.0",
        &hw,
        None,
    );
    assert_eq!(p.verdict, Verdict::DoesNotFit);
    assert!(p.devices[0].kv_cache_bytes < 0);
    assert!(
        p.problems[0].contains("No available memory"),
        "{:?}",
        p.problems
    );
    assert!(
        p.suggestions
            .contains(&"--tensor-parallel-size 2".to_string()),
        "{:?}",
        p.suggestions
    );
    // TP2 halves the weights on each GPU
    let tp2 = run(
        "vllm serve M --max-model-len 8192 --gpu-memory-utilization 0.6 -tp 2",
        "0.31.0",
        &hw,
        None,
    );
    assert_eq!(tp2.devices.len(), 2);
    let half = p.devices[0].weights_bytes as f64 / 2.0;
    assert!((tp2.devices[1].weights_bytes as f64 - half).abs() / half < 0.01);
}

#[test]
fn visible_devices_pick_the_gpus() {
    let hw = rtx4090s(4, 24564 * MIB);
    let p = run(
        "CUDA_VISIBLE_DEVICES=3,1 vllm serve M -tp 2 --max-model-len 8192",
        "0.31.0",
        &hw,
        None,
    );
    let names: Vec<&str> = p.devices.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(
        names,
        ["NVIDIA GeForce RTX 4090 #3", "NVIDIA GeForce RTX 4090 #1"]
    );
    let p = run("vllm serve M -tp 8", "0.31.0", &hw, None);
    assert_eq!(p.verdict, Verdict::DoesNotFit);
    assert!(p.problems[0].contains("8 workers"), "{:?}", p.problems);
}

#[test]
fn cuda_graphs_are_charged_from_v0_20() {
    // envs.py: VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to "0" in v0.19.0, "1" in v0.20.0
    let hw = rtx4090s(1, 24564 * MIB);
    let new = run("vllm serve M --max-model-len 8192", "0.20.0", &hw, None);
    let old = run(
        "vllm serve M --max-model-len 8192 --gpu-memory-utilization 0.92",
        "0.19.1",
        &hw,
        None,
    );
    let g = new.devices[0].cuda_graph_bytes as i64;
    assert!(g > 0);
    assert_eq!(
        old.devices[0].kv_cache_bytes - new.devices[0].kv_cache_bytes,
        g
    );
    let off = run(
        "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 vllm serve M --max-model-len 8192",
        "0.20.0",
        &hw,
        None,
    );
    assert_eq!(off.devices[0].kv_cache_bytes, old.devices[0].kv_cache_bytes);
    let eager = run(
        "vllm serve M --max-model-len 8192 --enforce-eager",
        "0.20.0",
        &hw,
        None,
    );
    assert_eq!(eager.devices[0].cuda_graph_bytes, 0);
}

fn weight_set(bytes_per_layer: u64) -> WeightSet {
    let mut tensors: Vec<Tensor> = (0..32)
        .map(|i| Tensor {
            name: format!("model.layers.{i}.mlp.down_proj.weight"),
            dims: vec![bytes_per_layer / 2],
            dtype: TensorDtype::Named("BF16".into()),
            bytes: bytes_per_layer,
        })
        .collect();
    tensors.push(Tensor {
        name: "model.embed_tokens.weight".into(),
        dims: vec![4096, 128256],
        dtype: TensorDtype::Named("BF16".into()),
        bytes: 4096 * 128256 * 2,
    });
    WeightSet {
        tensors,
        source: "test".into(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn pool_shrinks_as_weights_grow(a in 100u64..400, b in 100u64..400) {
        let hw = rtx4090s(1, 24564 * MIB);
        let (small, large) = (a.min(b) * MIB, a.max(b) * MIB);
        let ps = run("vllm serve M --max-model-len 4096", "0.31.0", &hw, Some(&weight_set(small)));
        let pl = run("vllm serve M --max-model-len 4096", "0.31.0", &hw, Some(&weight_set(large)));
        prop_assert_eq!(
            ps.devices[0].kv_cache_bytes - pl.devices[0].kv_cache_bytes,
            (32 * (large - small)) as i64
        );
        prop_assert!(ps.kv_cache.tokens >= pl.kv_cache.tokens);
    }

    #[test]
    fn a_shorter_length_fits_when_a_longer_one_does(len in 1u64..131_072, cut in 1u64..131_072) {
        let hw = rtx4090s(1, 24564 * MIB);
        let shorter = len.min(cut);
        let p = run(&format!("vllm serve M --max-model-len {len}"), "0.31.0", &hw, None);
        let q = run(&format!("vllm serve M --max-model-len {shorter}"), "0.31.0", &hw, None);
        if p.verdict == Verdict::Fits {
            prop_assert_eq!(q.verdict, Verdict::Fits);
            prop_assert!(q.kv_cache.max_concurrency >= p.kv_cache.max_concurrency);
        }
        // the reported largest length is itself a length that fits
        prop_assert!(p.max_model_len <= 131_072);
    }

    #[test]
    fn tokens_are_whole_blocks_before_v0_21(util in 60u32..95, len in 1024u64..32_768) {
        let hw = rtx4090s(1, 24564 * MIB);
        let words = format!("vllm serve M --max-model-len {len} --gpu-memory-utilization 0.{util}");
        let p = run(&words, "0.15.2", &hw, None);
        if p.verdict == Verdict::Fits {
            prop_assert_eq!(p.kv_cache.tokens % 16, 0);
            let blocks = p.kv_cache.tokens / 16;
            let conc = blocks as f64 / len.div_ceil(16) as f64;
            prop_assert!((p.kv_cache.max_concurrency - conc).abs() < 0.011);
        }
    }
}
