//! Remote sources against a range-capable HTTP server on 127.0.0.1 (written here: Python's
//! http.server has no Range support). It serves sparse multi-GB files, so the tests show that a
//! header is read by fetching a tiny fraction of the bytes.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use vramfit_model::remote::{HttpSource, HubClient, HubConfig, RemoteError};
use vramfit_model::safetensors::{
    read_checkpoint_hub, read_checkpoint_url, read_safetensors_header, StError,
};
use vramfit_model::source::{ByteSource, ChunkedReader};

const GIB: u64 = 1 << 30;

#[derive(Clone)]
enum Route {
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
struct Counters {
    body_bytes: AtomicU64,
    requests: AtomicU64,
}

struct Server {
    base: String,
    routes: Arc<Mutex<HashMap<String, Route>>>,
    counters: Arc<Counters>,
}

impl Server {
    fn start() -> Server {
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

    fn route(&self, path: &str, route: Route) -> String {
        self.routes.lock().unwrap().insert(path.to_string(), route);
        format!("{}{}", self.base, path)
    }

    fn served(&self) -> (u64, u64) {
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

fn client(token: Option<&str>, endpoint: &str) -> HubClient {
    HubClient::new(HubConfig {
        endpoint: endpoint.to_string(),
        token: token.map(str::to_string),
        offline: false,
    })
}

/// A GGUF v3 header by hand (magic, version, counts, two KVs, one tensor info), then a sparse
/// tail up to `len` bytes.
fn sparse_gguf(path: &Path, len: u64) {
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
fn sparse_safetensors(path: &Path, tensors: &[(String, &str, Vec<u64>)]) -> u64 {
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

fn layer_tensors(layers: std::ops::Range<u64>) -> Vec<(String, &'static str, Vec<u64>)> {
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

#[test]
fn gguf_header_of_a_4_gib_file_costs_a_few_kib() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.gguf");
    sparse_gguf(&path, 4 * GIB + 4096);
    let server = Server::start();
    let url = server.route("/m/big.gguf", Route::File { path, ranges: true });

    let src = HttpSource::open(&client(None, "http://unused.invalid"), &url).unwrap();
    assert_eq!(src.len(), Some(4 * GIB + 4096));
    // walk the header through ChunkedReader as the GGUF reader does
    let mut r = ChunkedReader::new(&src, 0, 4096, 1 << 20);
    let mut magic = [0u8; 4];
    r.read_exact(&mut magic).unwrap();
    assert_eq!(&magic, b"GGUF");
    let mut word = [0u8; 4];
    r.read_exact(&mut word).unwrap();
    assert_eq!(u32::from_le_bytes(word), 3);
    let mut count = [0u8; 8];
    r.read_exact(&mut count).unwrap();
    assert_eq!(u64::from_le_bytes(count), 1);
    // and the far end of the file, with one ranged request
    let mut tail = [1u8; 16];
    src.read_at(4 * GIB + 4080, &mut tail).unwrap();
    assert_eq!(tail, [0u8; 16]);

    let stats = src.stats();
    let (served, requests) = server.served();
    println!(
        "gguf 4 GiB: client {stats:?}; server sent {served} body bytes in {requests} requests"
    );
    assert_eq!(stats.bytes_fetched, served);
    assert_eq!(stats.round_trips, 2);
    assert!(served * 100 < 4 * GIB, "fetched {served} bytes");
    assert!(served <= 64 * 1024 + 16);

    // the project's GGUF reader over a fresh source: the whole header from the open prefetch
    let src = HttpSource::open(&client(None, "http://unused.invalid"), &url).unwrap();
    let gguf = vramfit_model::gguf::read_gguf(&src).unwrap();
    assert_eq!(gguf.tensors.len(), 1);
    assert_eq!(gguf.tensors[0].bytes, 4 * GIB);
    assert_eq!(gguf.get_str("general.architecture"), Some("llama"));
    println!("read_gguf over HTTP: {:?}", src.stats());
    assert!(src.stats().bytes_fetched <= 64 * 1024);
}

#[test]
fn sharded_remote_checkpoint_reads_only_headers() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start();
    // a 70B-like layout: 80 layers of BF16 over 4 shards of ~35 GB, all sparse
    let mut weight_map = serde_json::Map::new();
    let mut total_file_bytes = 0u64;
    let mut total_tensor_bytes = 0u64;
    for s in 0..4u64 {
        let name = format!("model-{:05}-of-00004.safetensors", s + 1);
        let mut tensors = layer_tensors(s * 20..(s + 1) * 20);
        if s == 0 {
            tensors.insert(
                0,
                (
                    "model.embed_tokens.weight".into(),
                    "BF16",
                    vec![128256, 8192],
                ),
            );
        }
        if s == 3 {
            tensors.push(("lm_head.weight".into(), "BF16", vec![128256, 8192]));
            tensors.push(("model.norm.weight".into(), "BF16", vec![8192]));
        }
        let path = dir.path().join(&name);
        total_tensor_bytes += sparse_safetensors(&path, &tensors);
        total_file_bytes += std::fs::metadata(&path).unwrap().len();
        for (t, _, _) in &tensors {
            weight_map.insert(t.clone(), name.clone().into());
        }
        server.route(
            &format!("/org/llama-70b/resolve/main/{name}"),
            Route::File { path, ranges: true },
        );
    }
    let index = serde_json::json!({"metadata": {"total_size": total_tensor_bytes}, "weight_map": weight_map});
    let index_path = dir.path().join("model.safetensors.index.json");
    std::fs::write(&index_path, serde_json::to_vec(&index).unwrap()).unwrap();
    server.route(
        "/org/llama-70b/resolve/main/model.safetensors.index.json",
        Route::File {
            path: index_path,
            ranges: true,
        },
    );

    let ckpt = read_checkpoint_hub(&client(None, &server.base), "org/llama-70b", "main").unwrap();
    assert_eq!(ckpt.shards.len(), 4);
    assert!(ckpt.issues.is_empty(), "{:?}", ckpt.issues);
    assert_eq!(ckpt.weights.total_bytes(), total_tensor_bytes);
    assert_eq!(ckpt.index_total_size, Some(total_tensor_bytes));
    assert_eq!(ckpt.weights.tensors.len(), 80 * 9 + 3);
    // 70.6e9 parameters in BF16
    assert_eq!(ckpt.weights.total_elems(), 70_553_706_496);

    let fetch = ckpt.fetch.unwrap();
    let (served, requests) = server.served();
    println!(
        "sharded 4 × ~35 GB: client {fetch:?}; server sent {served} body bytes in {requests} requests \
         ({:.6}% of {total_file_bytes})",
        served as f64 * 100.0 / total_file_bytes as f64
    );
    assert_eq!(fetch.bytes_fetched, served);
    assert_eq!(fetch.round_trips, requests);
    // one request for the index, one per shard (each header is under the 64 KiB first read)
    assert_eq!(requests, 5);
    assert!(served * 100 < total_file_bytes);
}

#[test]
fn large_header_costs_a_second_request_and_redirects_are_followed() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start();
    let path = dir.path().join("model.safetensors");
    // ~1,800 tensors: a header well past the 64 KiB first read
    let bytes = sparse_safetensors(&path, &layer_tensors(0..200));
    let target = server.route("/cdn/blob", Route::File { path, ranges: true });
    let url = server.route(
        "/org/m/resolve/main/model.safetensors",
        Route::Redirect(target),
    );

    let ckpt = read_checkpoint_url(&client(None, &server.base), &url).unwrap();
    assert_eq!(ckpt.weights.total_bytes(), bytes);
    let fetch = ckpt.fetch.unwrap();
    let (served, requests) = server.served();
    let header_len = ckpt.shards[0].header_len;
    assert!(header_len > 64 * 1024, "{header_len}");
    // two GETs, each redirected once
    assert_eq!((fetch.round_trips, requests), (2, 4));
    assert_eq!(fetch.bytes_fetched, 8 + header_len);
    assert_eq!(served, 8 + header_len);
}

#[test]
fn server_without_range_support_is_read_without_downloading_everything() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start();
    let path = dir.path().join("model.safetensors");
    let bytes = sparse_safetensors(&path, &layer_tensors(0..2));
    let url = server.route(
        "/plain/model.safetensors",
        Route::File {
            path,
            ranges: false,
        },
    );
    let src = HttpSource::open(&client(None, &server.base), &url).unwrap();
    let h = read_safetensors_header(&src).unwrap();
    assert_eq!(h.tensor_bytes(), bytes);
    // the client hung up after the first 64 KiB of a ~3.7 GB body
    assert!(src.stats().bytes_fetched <= 64 * 1024);
    assert!(bytes > 3 * GIB);
}

#[test]
fn token_goes_to_the_hub_endpoint_only_and_401_404_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start();
    let path = dir.path().join("model.safetensors");
    sparse_safetensors(&path, &layer_tensors(0..1));
    let url = server.route(
        "/gated/m/resolve/main/model.safetensors",
        Route::Private {
            path,
            token: "hf_secret".into(),
        },
    );

    let err = HttpSource::open(&client(None, &server.base), &url)
        .err()
        .unwrap();
    assert!(
        matches!(err, RemoteError::Unauthorized { status: 401, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("set HF_TOKEN"), "{err}");
    assert!(HttpSource::open(&client(Some("hf_secret"), &server.base), &url).is_ok());
    // the same token is not sent to a host that is not the endpoint
    let err = HttpSource::open(&client(Some("hf_secret"), "https://huggingface.co"), &url)
        .err()
        .unwrap();
    assert!(matches!(err, RemoteError::Unauthorized { .. }), "{err}");

    let missing = format!("{}/nobody/nothing/resolve/main/config.json", server.base);
    let err = HttpSource::open(&client(None, &server.base), &missing)
        .err()
        .unwrap();
    assert!(matches!(err, RemoteError::NotFound { .. }), "{err}");
    assert!(err.to_string().contains("not there") && err.to_string().contains(&missing));

    let forbidden = server.route("/f", Route::Status(403));
    let err = client(None, &server.base)
        .fetch_small(&forbidden, 1024)
        .unwrap_err();
    assert!(
        matches!(err, RemoteError::Unauthorized { status: 403, .. }),
        "{err}"
    );
    let broken = server.route("/e", Route::Status(500));
    let err = client(None, &server.base)
        .fetch_small(&broken, 1024)
        .unwrap_err();
    assert!(err.to_string().contains("HTTP 500"), "{err}");

    // a checkpoint read surfaces the same one-line error
    let err = read_checkpoint_hub(&client(None, &server.base), "gated/m", "main").unwrap_err();
    assert!(
        matches!(err, StError::Remote(RemoteError::Unauthorized { .. })),
        "{err}"
    );
}

#[test]
fn connection_refused_is_a_network_error() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/x.safetensors");
    let err = HttpSource::open(&client(None, "http://127.0.0.1"), &url)
        .err()
        .unwrap();
    assert!(matches!(err, RemoteError::Network { .. }), "{err}");
    assert!(err.to_string().contains("network error"), "{err}");
}

#[test]
fn small_files_are_capped_and_repo_files_listed() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start();
    let info = dir.path().join("info.json");
    std::fs::write(&info, r#"{"id":"org/m","siblings":[{"rfilename":"config.json"},{"rfilename":"model.safetensors"}]}"#)
        .unwrap();
    server.route(
        "/api/models/org/m",
        Route::File {
            path: info.clone(),
            ranges: true,
        },
    );
    let c = client(None, &server.base);
    assert_eq!(
        c.list_files("org/m", "main").unwrap(),
        ["config.json", "model.safetensors"]
    );
    let url = format!("{}/api/models/org/m", server.base);
    let err = c.fetch_small(&url, 10).unwrap_err();
    assert!(
        matches!(err, RemoteError::TooLarge { cap: 10, .. }),
        "{err}"
    );
    assert!(matches!(
        c.list_files("../etc", "main"),
        Err(RemoteError::BadRepoId { .. })
    ));
}

#[test]
fn offline_forbids_every_request() {
    let server = Server::start();
    let c = HubClient::new(HubConfig {
        endpoint: server.base.clone(),
        token: None,
        offline: true,
    });
    let url = format!("{}/org/m/resolve/main/model.safetensors", server.base);
    let err = HttpSource::open(&c, &url).err().unwrap();
    assert!(matches!(err, RemoteError::Offline { .. }), "{err}");
    assert!(err.to_string().contains("HF_HUB_OFFLINE"));
    assert!(read_checkpoint_hub(&c, "org/m", "main").is_err());
    assert_eq!(server.served().1, 0, "no request may reach the server");
}

#[test]
fn environment_settings_drive_the_free_functions() {
    // the only test in this binary that reads the process environment
    let server = Server::start();
    std::env::set_var("HF_ENDPOINT", &server.base);
    std::env::set_var("HF_HUB_OFFLINE", "1");
    let url = vramfit_model::remote::hub_file_url("org/m", "main", "config.json");
    assert_eq!(
        url,
        format!("{}/org/m/resolve/main/config.json", server.base)
    );
    let err = vramfit_model::remote::fetch_small(&url).unwrap_err();
    assert!(matches!(err, RemoteError::Offline { .. }), "{err}");
    let err = vramfit_model::remote::hub_list_files("org/m").unwrap_err();
    assert!(matches!(err, RemoteError::Offline { .. }), "{err}");
    std::env::remove_var("HF_HUB_OFFLINE");
    let err = vramfit_model::remote::fetch_small(&url).unwrap_err();
    assert!(matches!(err, RemoteError::NotFound { .. }), "{err}");
    assert_eq!(server.served().1, 1);
}

#[test]
fn hub_repo_without_index_or_model_safetensors_is_listed() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start();
    let path = dir.path().join("consolidated.safetensors");
    let bytes = sparse_safetensors(&path, &layer_tensors(0..1));
    server.route(
        "/org/mistral/resolve/main/consolidated.safetensors",
        Route::File { path, ranges: true },
    );
    let info = dir.path().join("info.json");
    std::fs::write(
        &info,
        r#"{"siblings":[{"rfilename":"params.json"},{"rfilename":"consolidated.safetensors"},{"rfilename":"sub/x.safetensors"}]}"#,
    )
    .unwrap();
    server.route(
        "/api/models/org/mistral",
        Route::File {
            path: info,
            ranges: true,
        },
    );
    let ckpt = read_checkpoint_hub(&client(None, &server.base), "org/mistral", "main").unwrap();
    assert_eq!(ckpt.shards.len(), 1);
    assert_eq!(ckpt.shards[0].file, "consolidated.safetensors");
    assert_eq!(ckpt.weights.total_bytes(), bytes);
    // index 404, model.safetensors 404, listing, one shard
    assert_eq!((ckpt.fetch.unwrap().round_trips, server.served().1), (4, 4));

    // a repo with no safetensors at all: one line naming the repo
    let empty = dir.path().join("empty.json");
    std::fs::write(
        &empty,
        r#"{"siblings":[{"rfilename":"pytorch_model.bin"}]}"#,
    )
    .unwrap();
    server.route(
        "/api/models/org/old",
        Route::File {
            path: empty,
            ranges: true,
        },
    );
    let err = read_checkpoint_hub(&client(None, &server.base), "org/old", "main").unwrap_err();
    assert!(matches!(err, StError::NoCheckpoint { .. }), "{err}");
    assert!(err.to_string().contains("org/old@main"), "{err}");
}
