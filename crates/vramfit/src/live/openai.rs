//! A client for OpenAI-compatible servers on loopback: list the models, and send one streaming
//! completion timing the first token and the whole answer. Bounded: every request has a global
//! timeout, every answer a size cap.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read};
use std::time::{Duration, Instant};

/// One streamed request as the client saw it.
#[derive(Debug, Clone)]
pub struct Timing {
    pub ttft_s: f64,
    pub total_s: f64,
    pub tokens: u64,
}

/// An answer larger than this is not a completion of the size asked for.
const MAX_ANSWER_BYTES: u64 = 64 << 20;

/// `http://127.0.0.1:PORT` (no trailing slash, no `/v1`); anything not on loopback is refused.
pub fn loopback_base(url: &str) -> Result<String, String> {
    let u = vramfit_watch::http::HttpUrl::parse(url).map_err(|e| format!("'{url}': {e}"))?;
    let host = u.host.trim_start_matches('[').trim_end_matches(']');
    if !matches!(host, "127.0.0.1" | "localhost" | "::1") {
        return Err(format!(
            "'{url}' is not on this machine: stress sends load only to 127.0.0.1 (run it on the server's host)"
        ));
    }
    let base = u.base.trim_end_matches("/v1").to_string();
    Ok(format!("http://{}:{}{}", u.host, u.port, base))
}

pub fn agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .build()
        .into()
}

/// The served model names, waiting up to `ready` while the server answers 503 (llama-server and
/// vLLM while they load the model); an error that says what is wrong with the URL.
pub fn models_when_ready(
    agent: &ureq::Agent,
    base: &str,
    ready: Duration,
) -> Result<Vec<String>, String> {
    let t0 = Instant::now();
    loop {
        match models(agent, base) {
            Err(e) if e.contains("HTTP 503") && t0.elapsed() < ready => {
                std::thread::sleep(Duration::from_millis(500))
            }
            Err(e) if e.contains("HTTP 503") => {
                return Err(format!(
                    "{base} still answers 503 (loading) after {:.0}s: the engine never became ready; check its log",
                    ready.as_secs_f64()
                ))
            }
            r => return r,
        }
    }
}

/// The served model names (`GET /v1/models`); an error that says what is wrong with the URL.
pub fn models(agent: &ureq::Agent, base: &str) -> Result<Vec<String>, String> {
    let url = format!("{base}/v1/models");
    let resp = agent
        .get(&url)
        .call()
        .map_err(|e| format!("cannot reach {url}: {e}; start the server or fix the URL"))?;
    let status = resp.status().as_u16();
    let mut body = String::new();
    resp.into_body()
        .into_reader()
        .take(1 << 20)
        .read_to_string(&mut body)
        .map_err(|e| format!("{url}: {e}"))?;
    if status == 503 {
        return Err(format!("{url} answered HTTP 503: the server is not ready"));
    }
    if status != 200 {
        return Err(format!(
            "{url} answered HTTP {status}: not an OpenAI-compatible server (no /v1/models)"
        ));
    }
    let v: Value = serde_json::from_str(&body)
        .map_err(|_| format!("{url} did not answer JSON: not an OpenAI-compatible server"))?;
    let ids: Vec<String> = v["data"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|m| m["id"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    if ids.is_empty() {
        return Err(format!(
            "{url} lists no models: not an OpenAI-compatible server, or nothing loaded yet"
        ));
    }
    Ok(ids)
}

/// A prompt of exactly `n` tokens, as token ids (the completions API takes them; llama-server,
/// vLLM and SGLang accept a list of integers): ids spread over the first few thousand.
pub fn prompt_ids(n: u64, salt: u64) -> Vec<u64> {
    (0..n).map(|i| 300 + (i * 7 + salt * 13) % 3000).collect()
}

/// One streaming `POST /v1/completions`.
pub fn stream_completion(
    agent: &ureq::Agent,
    base: &str,
    model: &str,
    prompt: &[u64],
    max_tokens: u64,
) -> Result<Timing, String> {
    let body = json!({
        "model": model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "stream": true,
        "temperature": 0.0,
        "ignore_eos": true,
        "stream_options": {"include_usage": true},
    });
    let t0 = Instant::now();
    let resp = agent
        .post(&format!("{base}/v1/completions"))
        .header("content-type", "application/json")
        .send(body.to_string())
        .map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    let reader = resp.into_body().into_reader().take(MAX_ANSWER_BYTES);
    if status != 200 {
        let mut s = String::new();
        let _ = reader.take(2000).read_to_string(&mut s);
        return Err(format!(
            "HTTP {status}: {}",
            s.trim().chars().take(200).collect::<String>()
        ));
    }
    let mut ttft = None;
    let mut tokens = 0u64;
    let mut usage = None;
    for line in BufReader::new(reader).lines() {
        let line = line.map_err(|e| e.to_string())?;
        let Some(data) = line.strip_prefix("data:") else {
            continue;
        };
        let data = data.trim();
        if data == "[DONE]" {
            break;
        }
        let Ok(v) = serde_json::from_str::<Value>(data) else {
            continue;
        };
        if let Some(e) = v.get("error") {
            return Err(format!("server error: {e}"));
        }
        if let Some(n) = v["usage"]["completion_tokens"].as_u64() {
            usage = Some(n);
        }
        let text = v["choices"][0]["text"].as_str().unwrap_or("");
        if !text.is_empty() || v["choices"][0]["token"].is_number() {
            ttft.get_or_insert(t0.elapsed().as_secs_f64());
            tokens += 1;
        }
    }
    let total = t0.elapsed().as_secs_f64();
    let tokens = usage.unwrap_or(tokens);
    if tokens == 0 {
        return Err("the stream ended without a token".into());
    }
    Ok(Timing {
        ttft_s: ttft.unwrap_or(total),
        total_s: total,
        tokens,
    })
}
