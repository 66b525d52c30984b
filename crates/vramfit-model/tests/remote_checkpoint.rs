//! Remote safetensors checkpoints against the loopback range server: a 141 GB sparse 4-shard
//! model read by its headers, large headers, redirects, and repos listed through the Hub API.

#[path = "remote_server.rs"]
mod remote_server;

use remote_server::*;
use vramfit_model::safetensors::{read_checkpoint_hub, read_checkpoint_url, StError};

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
