//! `vramfit inspect URL` on a multi-GB GGUF and on a sharded safetensors model served by a local
//! range-capable HTTP server: the answers are exact and under 1% of the bytes are fetched.

#[path = "../../vramfit-model/tests/remote_server.rs"]
mod server;

use server::{Route, Server};
use std::io::Write;
use std::process::Command;
use vramfit_model::hf_config::spec_from_config;
use vramfit_model::{layout, quant, GgmlType, TensorDtype};

fn llama8b_config() -> serde_json::Value {
    serde_json::json!({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
        "tie_word_embeddings": false, "torch_dtype": "bfloat16"})
}

/// A GGUF v3 file laid out as llama.cpp would read it: metadata, every tensor info of a
/// Q4_K_M Llama-3.1-8B, aligned offsets, and a sparse data section of the real size.
fn write_gguf(path: &std::path::Path) -> (u64, u64) {
    let spec = spec_from_config("llama8b", &llama8b_config()).unwrap();
    let w = quant::predict(
        &layout::synthesize(&spec, GgmlType::F16),
        &spec,
        quant::FileType::parse("Q4_K_M").unwrap().ftype,
        false,
    );
    let mut v = b"GGUF".to_vec();
    let s = |v: &mut Vec<u8>, x: &str| {
        v.extend((x.len() as u64).to_le_bytes());
        v.extend(x.as_bytes());
    };
    let kvs: Vec<(&str, u64)> = vec![
        ("llama.block_count", 32),
        ("llama.context_length", 131072),
        ("llama.embedding_length", 4096),
        ("llama.feed_forward_length", 14336),
        ("llama.attention.head_count", 32),
        ("llama.attention.head_count_kv", 8),
        ("llama.vocab_size", 128256),
        ("general.file_type", 15),
    ];
    v.extend(3u32.to_le_bytes());
    v.extend((w.tensors.len() as u64).to_le_bytes());
    v.extend((kvs.len() as u64 + 1).to_le_bytes());
    s(&mut v, "general.architecture");
    v.extend(8u32.to_le_bytes());
    s(&mut v, "llama");
    for (k, x) in &kvs {
        s(&mut v, k);
        v.extend(4u32.to_le_bytes()); // uint32
        v.extend((*x as u32).to_le_bytes());
    }
    let mut offset = 0u64;
    for t in &w.tensors {
        s(&mut v, &t.name);
        v.extend((t.dims.len() as u32).to_le_bytes());
        for d in &t.dims {
            v.extend(d.to_le_bytes());
        }
        let TensorDtype::Ggml(ty) = t.dtype else {
            panic!("ggml types")
        };
        v.extend(ty.id().to_le_bytes());
        v.extend(offset.to_le_bytes());
        offset += t.bytes.div_ceil(32) * 32;
    }
    let data_start = (v.len() as u64).div_ceil(32) * 32;
    let f = std::fs::File::create(path).unwrap();
    (&f).write_all(&v).unwrap();
    f.set_len(data_start + offset).unwrap();
    (data_start + offset, w.total_bytes())
}

fn inspect(url: &str) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_vramfit"))
        .args(["inspect", "--json", url])
        .env_remove("HF_HUB_OFFLINE")
        .env_remove("HF_TOKEN")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn remote_gguf_header_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("Llama-3.1-8B-Instruct-Q4_K_M.gguf");
    let (file_len, tensor_bytes) = write_gguf(&path);
    assert!(file_len > 4 << 30, "a multi-GB file");
    let srv = Server::start();
    let url = srv.route(
        "/m/Llama-3.1-8B-Instruct-Q4_K_M.gguf",
        Route::File {
            path: path.clone(),
            ranges: true,
        },
    );
    let j = inspect(&url);
    let (bytes, requests) = srv.served();
    println!("GGUF: {file_len} bytes on the server, {bytes} fetched in {requests} requests");
    assert_eq!(j["weights_bytes"].as_u64().unwrap(), tensor_bytes);
    assert_eq!(j["params"].as_u64().unwrap(), 8_030_261_248);
    assert_eq!(j["kv_bytes_per_token"]["f16"].as_u64().unwrap(), 131_072);
    assert!(bytes * 100 < file_len, "fetched {bytes} of {file_len}");
}

#[test]
fn remote_sharded_safetensors_headers_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut total = 0u64;
    let mut map = serde_json::Map::new();
    let shards = 2;
    let mut file_bytes = 0u64;
    for s in 0..shards {
        let name = format!("model-0000{}-of-0000{shards}.safetensors", s + 1);
        let layers = (s * 16)..((s + 1) * 16);
        let mut tensors = server::layer_tensors(layers);
        if s == 0 {
            tensors.push((
                "model.embed_tokens.weight".into(),
                "BF16",
                vec![128256, 8192],
            ));
        }
        for t in &tensors {
            map.insert(t.0.clone(), serde_json::json!(name));
        }
        total += server::sparse_safetensors(&dir.path().join(&name), &tensors);
        file_bytes += std::fs::metadata(dir.path().join(&name)).unwrap().len();
    }
    let index = serde_json::json!({"metadata": {"total_size": total}, "weight_map": map});
    std::fs::write(
        dir.path().join("model.safetensors.index.json"),
        index.to_string(),
    )
    .unwrap();
    let mut cfg = llama8b_config();
    cfg["hidden_size"] = serde_json::json!(8192);
    cfg["intermediate_size"] = serde_json::json!(28672);
    cfg["num_attention_heads"] = serde_json::json!(64);
    std::fs::write(dir.path().join("config.json"), cfg.to_string()).unwrap();
    let srv = Server::start();
    for f in std::fs::read_dir(dir.path()).unwrap().flatten() {
        let n = f.file_name().to_string_lossy().to_string();
        srv.route(
            &format!("/repo/{n}"),
            Route::File {
                path: f.path(),
                ranges: true,
            },
        );
    }
    let j = inspect(&format!("{}/repo/model.safetensors.index.json", srv.base));
    let (bytes, requests) = srv.served();
    println!(
        "safetensors: {file_bytes} bytes on the server, {bytes} fetched in {requests} requests"
    );
    assert_eq!(j["weights_bytes"].as_u64().unwrap(), total);
    assert!(j["weights_source"].as_str().unwrap().starts_with("exact"));
    assert!(bytes * 100 < file_bytes, "fetched {bytes} of {file_bytes}");
}
