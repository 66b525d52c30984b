//! SGLang: command lines, GPU-dependent defaults, and the token pool of a real run.

use serde_json::json;
use vramfit_engine::cmdline::Command;
use vramfit_engine::hardware::{Gpu, Hardware};
use vramfit_engine::plan::Verdict;
use vramfit_engine::sglang::{self, args::gpu_defaults, SglangConfig};
use vramfit_model::hf_config::spec_from_config;
use vramfit_model::units::{GIB, MIB};

fn cfg(line: &str) -> SglangConfig {
    sglang::parse(&Command::parse(&[line]).unwrap()).unwrap()
}

fn gpus(name: &str, total: u64, n: usize) -> Hardware {
    Hardware {
        gpus: vec![
            Gpu {
                name: name.into(),
                total_bytes: total,
                free_bytes: total,
                bandwidth_gbps: None,
                compute_capability: Some(9.0),
                unified: false,
            };
            n
        ],
        host_ram_bytes: None,
    }
}

fn qwen3_235b_fp8() -> serde_json::Value {
    json!({"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
        "hidden_size": 4096, "intermediate_size": 12288, "moe_intermediate_size": 1536,
        "num_hidden_layers": 94, "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 128,
        "num_experts": 128, "num_experts_per_tok": 8, "vocab_size": 151936,
        "max_position_embeddings": 40960, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
        "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
            "weight_block_size": [128, 128]}})
}

#[test]
fn reads_every_memory_flag() {
    let c = cfg("CUDA_VISIBLE_DEVICES=1,0 python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B \
        --mem-fraction-static 0.8 --context-length 32768 --max-running-requests 64 --chunked-prefill-size 4096 \
        --tp 2 --kv-cache-dtype fp8_e5m2 --cuda-graph-max-bs 32 --dp 1 --quantization fp8 --dtype bfloat16 \
        --max-total-tokens 100000 --page-size 16 --enable-hierarchical-cache --port 30000 --frobnicate 3");
    assert_eq!(c.model, "Qwen/Qwen3-8B");
    assert_eq!(c.mem_fraction_static, Some(0.8));
    assert_eq!(c.max_running_requests, Some(64));
    assert_eq!(c.chunked_prefill_size, Some(4096));
    assert_eq!((c.tp_size, c.dp_size), (2, 1));
    assert_eq!(c.kv_cache_dtype, "fp8_e5m2");
    assert_eq!(c.cuda_graph_max_bs, Some(32));
    assert_eq!(c.quantization.as_deref(), Some("fp8"));
    assert_eq!(c.max_total_tokens, Some(100000));
    assert_eq!(c.page_size, 16);
    assert_eq!(c.visible_devices, Some(vec![1, 0]));
    assert!(c
        .unmodelled
        .iter()
        .any(|n| n.contains("--enable-hierarchical-cache") && n.contains("not modelled")));
    assert!(c
        .notes
        .iter()
        .any(|n| n.contains("--frobnicate") && n.contains("ignored")));
    // --context-length 32k is not a number SGLang reads: a one-line error naming it
    let bad = sglang::parse(
        &Command::parse(&["python -m sglang.launch_server --model-path m --context-length 32k"])
            .unwrap(),
    );
    assert!(bad.unwrap_err().to_string().contains("32k"));
    assert_eq!(c.context_length, Some(32768));
    let e = sglang::parse(
        &Command::parse(&[
            "python -m sglang.launch_server --model-path m --mem-fraction-static 1.5",
        ])
        .unwrap(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("1.5") && e.contains("--mem-fraction-static"),
        "{e}"
    );
    let e = sglang::parse(&Command::parse(&["python -m sglang.launch_server --tp 2"]).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("no model"), "{e}");
}

/// server_args.py `_handle_gpu_memory_settings`: H100 (79.6 GiB), TP1: chunked 8192, graphs 256,
/// reserved = 512 + 12288 + 512 + 128 = 13440 MiB → 1 − 13440/81559 = 0.835.
/// RTX 4090 (24 GiB): chunked 2048, graphs 24 → 512 + 3072 + 48 + 128 = 3760 MiB → 0.847.
#[test]
fn default_fraction_by_gpu_and_tp() {
    let c = cfg("python -m sglang.launch_server --model-path m");
    let h100 = gpu_defaults(&c, 81559.0);
    assert_eq!(
        (h100.chunked_prefill_size, h100.cuda_graph_max_bs),
        (8192, 256)
    );
    assert_eq!(h100.mem_fraction_static, 0.835);
    let r4090 = gpu_defaults(&c, 24564.0);
    assert_eq!(
        (r4090.chunked_prefill_size, r4090.cuda_graph_max_bs),
        (2048, 24)
    );
    assert_eq!(r4090.mem_fraction_static, 0.847);
    let tp8 = gpu_defaults(
        &cfg("python -m sglang.launch_server --model-path m --tp 8"),
        81559.0,
    );
    assert_eq!(tp8.cuda_graph_max_bs, 512);
    assert!(tp8.mem_fraction_static < h100.mem_fraction_static);
    let given = gpu_defaults(
        &cfg("python -m sglang.launch_server --model-path m --mem-fraction-static 0.7"),
        81559.0,
    );
    assert_eq!(given.mem_fraction_static, 0.7);
}

#[test]
fn cuda_graph_capture_list() {
    let bs = sglang::args::cuda_graph_batch_sizes(256);
    assert_eq!(&bs[..6], &[1, 2, 4, 8, 12, 16]);
    assert_eq!(*bs.last().unwrap(), 256);
    assert_eq!(sglang::args::cuda_graph_batch_sizes(8), vec![1, 2, 4, 8]);
    let big = sglang::args::cuda_graph_batch_sizes(640);
    assert!(big.contains(&496) && big.contains(&608) && !big.contains(&672));
}

/// vllm-log-024 (../shared/data/dev/vllm_logs.dev.jsonl; from vllm#21348): SGLang,
/// Qwen3-235B-A22B-FP8, --tp 4 on H100 80GB, --mem-fraction-static 0.93:
/// "KV Cache is allocated. #tokens: 367404, K size: 8.23 GB, V size: 8.23 GB" (GiB).
#[test]
fn vllm_log_024_qwen3_235b_fp8_tp4_h100() {
    let c = cfg("python3 -m sglang.launch_server --model /path/to/Qwen3-235B-A22B-FP8 --tp 4 --trust-remote-code --host 0.0.0.0 --port 8000 --mem-fraction-static 0.93");
    let spec = spec_from_config("Qwen/Qwen3-235B-A22B-FP8", &qwen3_235b_fp8()).unwrap();
    // H100 SXM 80GB as CUDA reports it: 81559 MiB
    let p = sglang::plan(
        &spec,
        None,
        &c,
        &gpus("NVIDIA H100 80GB HBM3", 81559 * MIB, 4),
    );
    assert_eq!(p.devices.len(), 4);
    // cell: 94 layers × 1 KV head per rank × (128 + 128) × 2 bytes
    assert_eq!(p.kv_cache.bytes_per_token, 94 * 256 * 2);
    let kv_gib = p.devices[0].kv_cache_bytes as f64 / GIB as f64;
    println!(
        "tokens {} (367404), KV {kv_gib:.2} GiB (16.46), weights {:.2} GiB",
        p.kv_cache.tokens,
        p.devices[0].weights_bytes as f64 / GIB as f64
    );
    assert!(
        (p.kv_cache.tokens as f64 / 367404.0 - 1.0).abs() < 0.05,
        "{}",
        p.kv_cache.tokens
    );
    assert!((kv_gib - 16.46).abs() < 0.8);
    assert_eq!(
        p.verdict,
        Verdict::Fits,
        "{:?} {:?}",
        p.problems,
        p.devices[0]
    );
    assert_eq!(p.max_model_len, 40960);
}

/// The same model on one H100 cannot hold its weights: no pool, and the error SGLang prints.
#[test]
fn weights_larger_than_the_fraction() {
    let c = cfg("python -m sglang.launch_server --model-path Qwen/Qwen3-235B-A22B-FP8");
    let spec = spec_from_config("Qwen/Qwen3-235B-A22B-FP8", &qwen3_235b_fp8()).unwrap();
    let p = sglang::plan(
        &spec,
        None,
        &c,
        &gpus("NVIDIA H100 80GB HBM3", 81559 * MIB, 1),
    );
    assert_eq!(p.verdict, Verdict::DoesNotFit);
    assert_eq!(p.kv_cache.tokens, 0);
    assert!(p
        .problems
        .iter()
        .any(|x| x.contains("--mem-fraction-static")));
    assert!(!p.suggestions.is_empty());
}

/// A smaller fraction leaves a smaller pool; more GPUs (TP) a larger one per token.
#[test]
fn pool_moves_with_fraction_and_tp() {
    let spec = spec_from_config("Qwen/Qwen3-235B-A22B-FP8", &qwen3_235b_fp8()).unwrap();
    let hw = gpus("NVIDIA H100 80GB HBM3", 81559 * MIB, 8);
    let at = |f: &str, tp: u32| {
        sglang::plan(
            &spec,
            None,
            &cfg(&format!(
                "python -m sglang.launch_server --model-path m --tp {tp} --mem-fraction-static {f}"
            )),
            &hw,
        )
        .kv_cache
        .tokens
    };
    assert!(at("0.85", 4) < at("0.93", 4));
    assert!(at("0.93", 4) < at("0.93", 8));
}

/// A flag that changes memory but is not modelled is a problem of the plan, not a failure; DP
/// attention keeps the GPU count at tp and shares KV heads over tp / dp ranks.
#[test]
fn unmodelled_flags_and_dp_attention() {
    let spec = spec_from_config("Qwen/Qwen3-235B-A22B-FP8", &qwen3_235b_fp8()).unwrap();
    let hw = gpus("NVIDIA H100 80GB HBM3", 81559 * MIB, 8);
    let p = sglang::plan(
        &spec,
        None,
        &cfg("python -m sglang.launch_server --model-path m --tp 8 --enable-lora --mem-fraction-static 0.9"),
        &hw,
    );
    assert_eq!(p.verdict, Verdict::Fits);
    assert!(p.problems.iter().any(|x| x.contains("--enable-lora")));
    let dpa = sglang::plan(
        &spec,
        None,
        &cfg("python -m sglang.launch_server --model-path m --tp 8 --dp 8 --enable-dp-attention --mem-fraction-static 0.9"),
        &hw,
    );
    assert_eq!(dpa.devices.len(), 8);
    // attention TP 1: all 4 KV heads on every rank
    assert_eq!(dpa.kv_cache.bytes_per_token, 94 * 4 * 256 * 2);
}

fn llama70b() -> vramfit_model::ModelSpec {
    // meta-llama/Llama-3.3-70B-Instruct's config.json
    let c = json!({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8192,
        "intermediate_size": 28672, "num_hidden_layers": 80, "num_attention_heads": 64,
        "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
        "tie_word_embeddings": false, "torch_dtype": "bfloat16"});
    spec_from_config("meta-llama/Llama-3.3-70B-Instruct", &c).unwrap()
}

#[test]
fn not_enough_memory_gets_sglangs_own_flags_and_each_one_starts() {
    // Llama-3.3-70B at TP2 on two H100s: the default fraction leaves no pool after 65.8 GiB of
    // weights per GPU ("Not enough memory. Please try to increase --mem-fraction-static.")
    let spec = llama70b();
    let hw = gpus("NVIDIA H100 80GB HBM3", 81559 * MIB, 4);
    for (line, want_tp4) in [
        ("python -m sglang.launch_server --model-path M --tp 2 --context-length 8192", true),
        ("CUDA_VISIBLE_DEVICES=0,1 python -m sglang.launch_server --model-path M --tp 2 --context-length 8192", false),
    ] {
        let c = cfg(line);
        let p = sglang::plan(&spec, None, &c, &hw);
        assert_eq!(p.verdict, Verdict::DoesNotFit);
        assert_eq!(p.kv_cache.tokens, 0);
        let s = sglang::suggest::suggest(&spec, None, &c, &hw, &p);
        // the smallest fraction whose pool holds one 8k request, then TP4 where 4 GPUs are visible
        let f: f64 = s[0]
            .strip_prefix("--mem-fraction-static ")
            .unwrap_or_else(|| panic!("{s:?}"))
            .parse()
            .unwrap();
        assert!(f > p.settings.iter().find(|(k, _)| k == "mem_fraction_static").map(|(_, v)| v[..5].parse::<f64>().unwrap()).unwrap());
        assert!(f <= 0.95, "{f}");
        assert_eq!(s.contains(&"--tp-size 4".to_string()), want_tp4, "{s:?}");
        for flag in &s {
            let fixed = cfg(&format!("{line} {flag}"));
            let q = sglang::plan(&spec, None, &fixed, &hw);
            assert_eq!(q.verdict, Verdict::Fits, "{flag}: {:?}", q.problems);
            assert!(q.kv_cache.tokens >= 8192, "{flag}: {}", q.kv_cache.tokens);
        }
        // one step below the suggested fraction does not hold the request
        let below = cfg(&format!("{line} --mem-fraction-static {:.2}", f - 0.01));
        let q = sglang::plan(&spec, None, &below, &hw);
        assert!(q.verdict == Verdict::DoesNotFit || q.kv_cache.tokens < 8192);
    }
    // a context no fraction can hold gets the largest pool with the context it holds
    let c = cfg("python -m sglang.launch_server --model-path M --tp 2 --context-length 131072");
    let p = sglang::plan(
        &spec,
        None,
        &c,
        &gpus("NVIDIA H100 80GB HBM3", 81559 * MIB, 2),
    );
    let s = sglang::suggest::suggest(
        &spec,
        None,
        &c,
        &gpus("NVIDIA H100 80GB HBM3", 81559 * MIB, 2),
        &p,
    );
    assert!(
        s.iter()
            .any(|f| f.starts_with("--mem-fraction-static ") && f.contains(" --context-length ")),
        "{s:?}"
    );
}

/// A model with a vision tower gets SGLang's reduction of the default fraction
/// (`adjust_mem_fraction_for_vlm`): gemma-3-27b's SigLIP tower (27 layers of 1152) takes 0.9097
/// of it; an explicit `--mem-fraction-static` is left alone.
#[test]
fn a_vision_tower_lowers_the_default_fraction() {
    let m = vramfit_model::catalog::find_model("google/gemma-3-27b-it").unwrap();
    let spec = spec_from_config(&m.id, &m.config).unwrap();
    assert_eq!(spec.vision_shape, Some((27, 1152)));
    let hw = gpus("NVIDIA H100 80GB HBM3", 80 * GIB, 1);
    let fraction = |p: &vramfit_engine::plan::MemoryPlan| -> f64 {
        let v = &p
            .settings
            .iter()
            .find(|s| s.0 == "mem_fraction_static")
            .unwrap()
            .1;
        v.split_whitespace().next().unwrap().parse().unwrap()
    };
    let c = cfg("python3 -m sglang.launch_server --model-path google/gemma-3-27b-it");
    let p = sglang::plan(&spec, None, &c, &hw);
    let default = gpu_defaults(&c, (80 * GIB / MIB) as f64).mem_fraction_static;
    assert!(
        (fraction(&p) - default * 0.9097363281).abs() < 1e-3,
        "{}",
        fraction(&p)
    );
    assert!(
        p.notes.iter().any(|n| n.contains("vision tower")),
        "{:?}",
        p.notes
    );
    let c = cfg("python3 -m sglang.launch_server --model-path google/gemma-3-27b-it --mem-fraction-static 0.85");
    assert_eq!(fraction(&sglang::plan(&spec, None, &c, &hw)), 0.85);
}
