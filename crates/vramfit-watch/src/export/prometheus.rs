//! The Prometheus exporter: the latest [`Report`] rendered in the text exposition format and
//! served at `/metrics`.
//!
//! The server is a plain `std::net` loop on one thread: Prometheus scrapes once per interval, one
//! connection at a time is plenty, and an async stack (axum + tokio, or hyper) would triple the
//! crate's compile time on a 2-core CI for nothing. `tiny_http` would do, but it is still a
//! dependency for ~60 lines. Requests are read with a timeout and a size cap, so a slow or
//! hostile client cannot hold the exporter or its memory.

use crate::detect::AlertKind;
use crate::error::WatchError;
use crate::monitor::Report;
use crate::promtext::escape_label;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The exposition format version Prometheus negotiates for text.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

fn family(out: &mut String, name: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
}

/// Renders one report as a metrics page.
pub fn render(report: &Report) -> String {
    let mut o = String::with_capacity(2048);
    family(
        &mut o,
        "vramfit_gpu_memory_used_bytes",
        "GPU memory in use, as NVML reports it.",
    );
    for g in &report.gpus {
        let _ = writeln!(
            o,
            "vramfit_gpu_memory_used_bytes{{gpu=\"{}\"}} {}",
            g.gpu, g.used_bytes
        );
    }
    family(
        &mut o,
        "vramfit_gpu_memory_total_bytes",
        "GPU memory installed.",
    );
    for g in &report.gpus {
        let _ = writeln!(
            o,
            "vramfit_gpu_memory_total_bytes{{gpu=\"{}\"}} {}",
            g.gpu, g.total_bytes
        );
    }
    family(&mut o, "vramfit_gpu_memory_free_bytes", "GPU memory free.");
    for g in &report.gpus {
        let _ = writeln!(
            o,
            "vramfit_gpu_memory_free_bytes{{gpu=\"{}\"}} {}",
            g.gpu, g.free_bytes
        );
    }
    family(
        &mut o,
        "vramfit_process_memory_used_bytes",
        "GPU memory held by one process.",
    );
    for g in &report.gpus {
        for p in &g.processes {
            let _ = writeln!(
                o,
                "vramfit_process_memory_used_bytes{{gpu=\"{}\",pid=\"{}\",name=\"{}\"}} {}",
                g.gpu,
                p.pid,
                escape_label(&p.name),
                p.used_bytes
            );
        }
    }
    family(
        &mut o,
        "vramfit_engine_kv_cache_usage_ratio",
        "Serving engine KV-cache usage, 0 to 1.",
    );
    for g in &report.gpus {
        if let Some(kv) = g.engine.as_ref().and_then(|e| e.kv_cache_usage) {
            let _ = writeln!(
                o,
                "vramfit_engine_kv_cache_usage_ratio{{gpu=\"{}\"}} {}",
                g.gpu, kv
            );
        }
    }
    family(
        &mut o,
        "vramfit_engine_requests_running",
        "Requests the serving engine is running.",
    );
    for g in &report.gpus {
        if let Some(r) = g.engine.as_ref().and_then(|e| e.requests_running) {
            let _ = writeln!(
                o,
                "vramfit_engine_requests_running{{gpu=\"{}\"}} {}",
                g.gpu, r
            );
        }
    }
    family(
        &mut o,
        "vramfit_engine_requests_waiting",
        "Requests waiting in the serving engine's queue.",
    );
    for g in &report.gpus {
        if let Some(r) = g.engine.as_ref().and_then(|e| e.requests_waiting) {
            let _ = writeln!(
                o,
                "vramfit_engine_requests_waiting{{gpu=\"{}\"}} {}",
                g.gpu, r
            );
        }
    }
    family(
        &mut o,
        "vramfit_oom_forecast_seconds",
        "Seconds until GPU memory runs out at the current trend; absent while memory is not climbing.",
    );
    for f in &report.forecast {
        if let Some(s) = f.time_to_oom_s {
            let _ = writeln!(
                o,
                "vramfit_oom_forecast_seconds{{gpu=\"{}\"}} {:.1}",
                f.gpu, s
            );
        }
    }
    family(
        &mut o,
        "vramfit_alert_active",
        "1 while an alert of this kind holds on this GPU.",
    );
    for g in &report.gpus {
        for kind in AlertKind::ALL {
            let on = report
                .active
                .iter()
                .any(|a| a.gpu == g.gpu && a.kind == kind);
            let _ = writeln!(
                o,
                "vramfit_alert_active{{gpu=\"{}\",kind=\"{}\"}} {}",
                g.gpu,
                kind.as_str(),
                on as u8
            );
        }
    }
    family(
        &mut o,
        "vramfit_sample_time_seconds",
        "Time of the latest sample on the sampler's clock.",
    );
    let _ = writeln!(o, "vramfit_sample_time_seconds {}", report.t);
    o
}

/// The page the server hands out; the watch loop replaces it after every tick.
#[derive(Clone, Default)]
pub struct MetricsPage(Arc<Mutex<String>>);

impl MetricsPage {
    pub fn set(&self, page: String) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = page;
    }
    pub fn get(&self) -> String {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// A running exporter.
pub struct Exporter {
    pub addr: SocketAddr,
    pub page: MetricsPage,
}

/// Binds `addr` and serves `page` on a background thread for the life of the process.
pub fn serve(addr: &str) -> Result<Exporter, WatchError> {
    let listener = TcpListener::bind(addr).map_err(|e| WatchError::Listen {
        addr: addr.to_string(),
        reason: e.to_string(),
    })?;
    let local = listener.local_addr().map_err(|e| WatchError::Listen {
        addr: addr.to_string(),
        reason: e.to_string(),
    })?;
    let page = MetricsPage::default();
    let shared = page.clone();
    std::thread::Builder::new()
        .name("vramfit-exporter".into())
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                let _ = answer(stream, &shared);
            }
        })
        .map_err(|e| WatchError::Listen {
            addr: addr.to_string(),
            reason: e.to_string(),
        })?;
    Ok(Exporter { addr: local, page })
}

fn answer(mut stream: TcpStream, page: &MetricsPage) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    stream.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        let n = stream.read(&mut buf)?;
        if n == 0 || head.len() > 16 * 1024 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = String::from_utf8_lossy(&head);
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    let (status, ctype, body) = match (method, path) {
        ("GET", "/metrics") => ("200 OK", CONTENT_TYPE, page.get()),
        ("GET", "/") => (
            "200 OK",
            "text/plain; charset=utf-8",
            "vramfit watch exporter: metrics at /metrics\n".to_string(),
        ),
        ("GET", _) => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "not found: try /metrics\n".to_string(),
        ),
        _ => (
            "405 Method Not Allowed",
            "text/plain; charset=utf-8",
            "only GET\n".to_string(),
        ),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    stream.flush()
}
