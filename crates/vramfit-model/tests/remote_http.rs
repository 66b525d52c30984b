//! Remote byte sources against the loopback range server: a 4 GiB sparse GGUF read by its
//! header, servers without range support, auth and missing files, offline mode, the environment.

#[path = "remote_server.rs"]
mod remote_server;

use remote_server::*;
use std::io::Read;
use std::net::TcpListener;
use vramfit_model::remote::{HttpSource, HubClient, HubConfig, RemoteError};
use vramfit_model::safetensors::{read_checkpoint_hub, read_safetensors_header, StError};
use vramfit_model::source::{ByteSource, ChunkedReader};

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
