//! Engine pages as the engines print them, read into one normalized sample; and a probe that
//! polls a real HTTP server on loopback.

use std::io::{Read, Write};
use std::net::TcpListener;
use vramfit_watch::engine_metrics::{from_llama_slots, from_metrics, EngineKind, EngineProbe};

// Shape of vLLM v1's /metrics (vllm/v1/metrics/loggers.py, v0.10): two engine cores, new KV name.
const VLLM_V1: &str = r#"# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-8B"} 12.0
vllm:num_requests_running{engine="1",model_name="Qwen/Qwen3-8B"} 9.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="Qwen/Qwen3-8B"} 3.0
vllm:num_requests_waiting{engine="1",model_name="Qwen/Qwen3-8B"} 0.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-8B"} 0.8125
vllm:kv_cache_usage_perc{engine="1",model_name="Qwen/Qwen3-8B"} 0.74
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="Qwen/Qwen3-8B"} 4.0
vllm:num_preemptions_total{engine="1",model_name="Qwen/Qwen3-8B"} 1.0
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.001",model_name="Qwen/Qwen3-8B"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="Qwen/Qwen3-8B"} 20.0
"#;

// vLLM v0 (vllm/engine/metrics.py, v0.6): the old KV name.
const VLLM_V0: &str = r#"# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.4531
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="meta-llama/Llama-3.1-8B-Instruct"} 7.0
vllm:num_requests_waiting{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
vllm:num_requests_swapped{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
"#;

// llama-server --metrics from a build that still exported the KV gauge.
const LLAMA_OLD: &str =
    "# HELP llamacpp:kv_cache_usage_ratio KV-cache usage. 1 means 100 percent usage.\n\
# TYPE llamacpp:kv_cache_usage_ratio gauge\nllamacpp:kv_cache_usage_ratio 0.63\n\
# TYPE llamacpp:kv_cache_tokens gauge\nllamacpp:kv_cache_tokens 2580\n\
# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 2\n\
# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred 1\n";

// A current llama-server: no KV gauge.
const LLAMA_NEW: &str =
    "# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total 1234\n\
# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 1\n\
# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred 0\n";

// llama-server /slots with 2 slots of 4096 cells, one busy (current `next_token` object form).
const LLAMA_SLOTS: &str = r#"[
 {"id":0,"n_ctx":4096,"speculative":false,"is_processing":true,"id_task":7,"n_prompt_tokens":1500,
  "params":{},"next_token":{"has_next_token":true,"has_new_line":false,"n_remain":-1,"n_decoded":548}},
 {"id":1,"n_ctx":4096,"speculative":false,"is_processing":false}
]"#;

// SGLang /metrics (python/sglang/srt/metrics/collector.py).
const SGLANG: &str = r#"# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct",tp_rank="0"} 31.0
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct",tp_rank="0"} 5.0
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="meta-llama/Llama-3.1-8B-Instruct",tp_rank="0"} 0.28
"#;

#[test]
fn vllm_new_and_old_kv_names() {
    let (kind, s) = from_metrics(VLLM_V1).unwrap();
    assert_eq!(kind, EngineKind::Vllm);
    assert_eq!(
        s.kv_cache_usage,
        Some(0.8125),
        "the fuller engine core decides"
    );
    assert_eq!(
        (s.requests_running, s.requests_waiting, s.preemptions_total),
        (Some(21), Some(3), Some(5))
    );
    let (_, old) = from_metrics(VLLM_V0).unwrap();
    assert_eq!(old.kv_cache_usage, Some(0.4531));
    assert_eq!(old.requests_running, Some(7));
}

#[test]
fn llama_server_gauge_or_slots() {
    let (kind, s) = from_metrics(LLAMA_OLD).unwrap();
    assert_eq!(kind, EngineKind::LlamaServer);
    assert_eq!(
        (s.kv_cache_usage, s.requests_running, s.requests_waiting),
        (Some(0.63), Some(2), Some(1))
    );
    let (_, s) = from_metrics(LLAMA_NEW).unwrap();
    assert_eq!(s.kv_cache_usage, None);
    let slots = from_llama_slots(LLAMA_SLOTS).unwrap();
    assert_eq!(slots.requests_running, Some(1));
    assert!((slots.kv_cache_usage.unwrap() - 2048.0 / 8192.0).abs() < 1e-9);
    // Older builds wrapped next_token in an array.
    let old = LLAMA_SLOTS
        .replace(r#""next_token":{"#, r#""next_token":[{"#)
        .replace("548}}", "548}]}");
    assert_eq!(
        from_llama_slots(&old).unwrap().kv_cache_usage,
        slots.kv_cache_usage
    );
}

#[test]
fn sglang_token_usage() {
    let (kind, s) = from_metrics(SGLANG).unwrap();
    assert_eq!(kind, EngineKind::Sglang);
    assert_eq!(
        (s.kv_cache_usage, s.requests_running, s.requests_waiting),
        (Some(0.28), Some(31), Some(5))
    );
}

#[test]
fn unknown_pages_and_bad_urls() {
    assert!(from_metrics("process_cpu_seconds_total 3.2\n").is_none());
    for bad in [
        "https://x:8000",
        "localhost:8000",
        "0,x=http://a:1",
        "http://:80",
        "http://h:99999",
    ] {
        let e = EngineProbe::parse(bad).unwrap_err().to_string();
        assert!(e.contains(bad), "{e}");
    }
    let p = EngineProbe::parse("0,1=http://127.0.0.1:8000/").unwrap();
    assert!(p.applies_to(1) && !p.applies_to(2));
}

/// Serves `/metrics` and `/slots` like llama-server, `n` requests, then stops.
fn serve_llama(n: usize) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().take(n) {
            let mut s = s.unwrap();
            let mut buf = [0u8; 2048];
            let k = s.read(&mut buf).unwrap();
            let req = String::from_utf8_lossy(&buf[..k]);
            let body = if req.starts_with("GET /metrics") {
                LLAMA_NEW
            } else {
                LLAMA_SLOTS
            };
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

#[test]
fn probe_polls_a_server_on_loopback_and_fills_kv_from_slots() {
    let port = serve_llama(2);
    let mut probe = EngineProbe::parse(&format!("http://127.0.0.1:{port}")).unwrap();
    let s = probe.poll().expect("poll");
    assert_eq!(probe.kind(), Some(EngineKind::LlamaServer));
    assert_eq!(s.requests_running, Some(1));
    assert!((s.kv_cache_usage.unwrap() - 0.25).abs() < 1e-9);
}

#[test]
fn probe_reports_a_closed_port_as_an_error() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut probe = EngineProbe::parse(&format!("http://127.0.0.1:{port}")).unwrap();
    assert!(probe.poll().is_err());
}
