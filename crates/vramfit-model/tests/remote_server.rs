//! A range-capable HTTP server on 127.0.0.1 for the remote tests (Python's http.server has no
//! Range support), and sparse multi-GB model files for it to serve. Included by remote_http.rs
//! and remote_checkpoint.rs with `#[path]`; as a test target of its own it holds no tests.
#![allow(dead_code)]

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use vramfit_model::remote::{HubClient, HubConfig};

pub const GIB: u64 = 1 << 30;

#[derive(Clone)]
pub enum Route {
    /// a file; `ranges: false` answers every GET with 200 and the whole body
    File {
        path: PathBuf,
        ranges: bool,
    },
    /// a file that needs `Authorization: Bearer <token>`
    Private {
        path: PathBuf,
        token: String,
    },
    Redirect(String),
    Status(u16),
}

#[derive(Default)]
pub struct Counters {
    body_bytes: AtomicU64,
    requests: AtomicU64,
}

pub struct Server {
    pub base: String,
    routes: Arc<Mutex<HashMap<String, Route>>>,
    counters: Arc<Counters>,
}

impl Server {
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let routes: Arc<Mutex<HashMap<String, Route>>> = Arc::default();
        let counters: Arc<Counters> = Arc::default();
        let (r, c) = (routes.clone(), counters.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let (r, c) = (r.clone(), c.clone());
                std::thread::spawn(move || {
                    let _ = serve(conn, &r, &c);
                });
            }
        });
        Server {
            base,
            routes,
            counters,
        }
    }

    pub fn route(&self, path: &str, route: Route) -> String {
        self.routes.lock().unwrap().insert(path.to_string(), route);
        format!("{}{}", self.base, path)
    }

    pub fn served(&self) -> (u64, u64) {
        (
            self.counters.body_bytes.load(Ordering::SeqCst),
            self.counters.requests.load(Ordering::SeqCst),
        )
    }
}

/// One request per connection (`Connection: close`): GET with an optional single Range, HEAD.
fn serve(
    conn: TcpStream,
    routes: &Mutex<HashMap<String, Route>>,
    counters: &Counters,
) -> std::io::Result<()> {
    conn.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let (method, path) = (
        parts.next().unwrap_or("").to_string(),
        parts.next().unwrap_or("").to_string(),
    );
    let mut headers = HashMap::new();
    for _ in 0..100 {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    counters.requests.fetch_add(1, Ordering::SeqCst);
    let mut out = conn;
    let route = routes.lock().unwrap().get(&path).cloned();
    let (file, ranges) = match route {
        None => return respond(&mut out, 404, &[], b"not found"),
        Some(Route::Status(code)) => return respond(&mut out, code, &[], b"nope"),
        Some(Route::Redirect(to)) => return respond(&mut out, 302, &[("Location", to)], b""),
        Some(Route::Private { path, token }) => {
            if headers.get("authorization") != Some(&format!("Bearer {token}")) {
                return respond(&mut out, 401, &[], b"unauthorized");
            }
            (path, true)
        }
        Some(Route::File { path, ranges }) => (path, ranges),
    };
    let f = File::open(&file)?;
    let total = f.metadata()?.len();
    let range = headers.get("range").filter(|_| ranges).and_then(|r| {
        let (a, b) = r.strip_prefix("bytes=")?.split_once('-')?;
        Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?))
    });
    let (status, start, len, mut extra) = match range {
        Some((a, _)) if a >= total => {
            return respond(
                &mut out,
                416,
                &[("Content-Range", format!("bytes */{total}"))],
                b"",
            );
        }
        Some((a, b)) => {
            let b = b.min(total - 1);
            (
                206,
                a,
                b - a + 1,
                vec![("Content-Range", format!("bytes {a}-{b}/{total}"))],
            )
        }
        None => (200, 0, total, vec![]),
    };
    extra.push(("Accept-Ranges", "bytes".to_string()));
    extra.push(("Content-Length", len.to_string()));
    write!(out, "HTTP/1.1 {status} X\r\nConnection: close\r\n")?;
    for (k, v) in &extra {
        write!(out, "{k}: {v}\r\n")?;
    }
    write!(out, "\r\n")?;
    if method == "HEAD" {
        return Ok(());
    }
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; 64 * 1024];
    let mut sent = 0u64;
    while sent < len {
        let n = (len - sent).min(buf.len() as u64) as usize;
        f.read_exact_at(&mut buf[..n], start + sent)?;
        // counted before writing: the client may check the count as soon as it has the bytes
        counters.body_bytes.fetch_add(n as u64, Ordering::SeqCst);
        // the client may hang up after what it needs (a 200 answer): stop then
        out.write_all(&buf[..n])?;
        sent += n as u64;
    }
    Ok(())
}

fn respond(
    out: &mut TcpStream,
    status: u16,
    headers: &[(&str, String)],
    body: &[u8],
) -> std::io::Result<()> {
    write!(
        out,
        "HTTP/1.1 {status} X\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    )?;
    for (k, v) in headers {
        write!(out, "{k}: {v}\r\n")?;
    }
    write!(out, "\r\n")?;
    out.write_all(body)
}

pub fn client(token: Option<&str>, endpoint: &str) -> HubClient {
    HubClient::new(HubConfig {
        endpoint: endpoint.to_string(),
        token: token.map(str::to_string),
        offline: false,
    })
}

/// A GGUF v3 header by hand (magic, version, counts, two KVs, one tensor info), then a sparse
/// tail up to `len` bytes.
pub fn sparse_gguf(path: &Path, len: u64) {
    fn s(v: &mut Vec<u8>, x: &str) {
        v.extend((x.len() as u64).to_le_bytes());
        v.extend(x.as_bytes());
    }
    let mut v = b"GGUF".to_vec();
    v.extend(3u32.to_le_bytes());
    v.extend(1u64.to_le_bytes()); // tensors
    v.extend(2u64.to_le_bytes()); // kv pairs
    s(&mut v, "general.architecture");
    v.extend(8u32.to_le_bytes()); // GGUF_TYPE_STRING
    s(&mut v, "llama");
    s(&mut v, "general.alignment");
    v.extend(4u32.to_le_bytes()); // GGUF_TYPE_UINT32
    v.extend(32u32.to_le_bytes());
    s(&mut v, "token_embd.weight");
    v.extend(2u32.to_le_bytes());
    v.extend(32768u64.to_le_bytes());
    v.extend(32768u64.to_le_bytes());
    v.extend(0u32.to_le_bytes()); // GGML_TYPE_F32: 4 GiB of data
    v.extend(0u64.to_le_bytes());
    let f = File::create(path).unwrap();
    (&f).write_all(&v).unwrap();
    f.set_len(len).unwrap();
}

/// A safetensors file whose header says `tensors` (name, dtype, shape) and whose data section is
/// sparse.
pub fn sparse_safetensors(path: &Path, tensors: &[(String, &str, Vec<u64>)]) -> u64 {
    let mut map = serde_json::Map::new();
    map.insert("__metadata__".into(), serde_json::json!({"format": "pt"}));
    let mut offset = 0u64;
    for (name, dtype, shape) in tensors {
        let width = if *dtype == "BF16" { 2 } else { 4 };
        let bytes = shape.iter().product::<u64>() * width;
        map.insert(name.clone(), serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + bytes]}));
        offset += bytes;
    }
    let mut json = serde_json::to_vec(&map).unwrap();
    json.resize(json.len().div_ceil(8) * 8, b' ');
    let f = File::create(path).unwrap();
    (&f).write_all(&(json.len() as u64).to_le_bytes()).unwrap();
    (&f).write_all(&json).unwrap();
    f.set_len(8 + json.len() as u64 + offset).unwrap();
    offset
}

pub fn layer_tensors(layers: std::ops::Range<u64>) -> Vec<(String, &'static str, Vec<u64>)> {
    let mut v = Vec::new();
    for i in layers {
        let p = format!("model.layers.{i}");
        v.push((
            format!("{p}.self_attn.q_proj.weight"),
            "BF16",
            vec![8192, 8192],
        ));
        v.push((
            format!("{p}.self_attn.k_proj.weight"),
            "BF16",
            vec![1024, 8192],
        ));
        v.push((
            format!("{p}.self_attn.v_proj.weight"),
            "BF16",
            vec![1024, 8192],
        ));
        v.push((
            format!("{p}.self_attn.o_proj.weight"),
            "BF16",
            vec![8192, 8192],
        ));
        v.push((
            format!("{p}.mlp.gate_proj.weight"),
            "BF16",
            vec![28672, 8192],
        ));
        v.push((format!("{p}.mlp.up_proj.weight"), "BF16", vec![28672, 8192]));
        v.push((
            format!("{p}.mlp.down_proj.weight"),
            "BF16",
            vec![8192, 28672],
        ));
        v.push((format!("{p}.input_layernorm.weight"), "BF16", vec![8192]));
        v.push((
            format!("{p}.post_attention_layernorm.weight"),
            "BF16",
            vec![8192],
        ));
    }
    v
}
