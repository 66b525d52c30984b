//! `vramfit check` counts what a command loads besides the model: vLLM LoRA slots, a llama.cpp
//! draft model, LoRA adapter and vision projector (real GGUF files written by gguf-py, see
//! scripts/make_extras_fixtures.py). Through the real binary, offline.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

fn check(args: &[&str]) -> (i32, Value, String) {
    common::check_cli(args)
}

fn notes(j: &Value) -> String {
    j["notes"].to_string()
}

/// Llama-3.1-8B with 4 LoRA slots of rank 64: 16 x 80 MiB = 1.25 GiB of slot buffers
/// (vllm/lora/layers/base_linear.py), taken from the KV pool before it is sized.
#[test]
fn vllm_lora_slots_come_out_of_the_kv_pool() {
    let base = [
        "--json",
        "--gpu",
        "RTX 4090",
        "--",
        "vllm",
        "serve",
        "meta-llama/Llama-3.1-8B-Instruct",
        // 16384: at 32768 the LoRA slots leave too little of the 4090's CUDA-visible 23.55 GiB
        "--max-model-len",
        "16384",
    ];
    let (rc, plain, err) = check(&base);
    assert_eq!(rc, 0, "{err}");
    let mut args = base.to_vec();
    args.extend_from_slice(&["--enable-lora", "--max-loras", "4", "--max-lora-rank", "64"]);
    let (rc, lora, err) = check(&args);
    assert_eq!(rc, 0, "{err}");
    let kv = |j: &Value| j["kv_cache"]["bytes"].as_i64().unwrap();
    assert_eq!(kv(&plain) - kv(&lora), 16 * 1_310_720 * 32 * 2);
    assert!(notes(&lora).contains("LoRA slots"), "{}", notes(&lora));
    assert!(
        !notes(&lora).contains("flag not modelled: --max-loras"),
        "{}",
        notes(&lora)
    );
    // 16 slots of rank 256 leave less KV than one 32768-token request needs: vLLM stops at start
    let mut args = base.to_vec();
    args.extend_from_slice(&[
        "--enable-lora",
        "--max-loras",
        "16",
        "--max-lora-rank",
        "256",
    ]);
    let (rc, big, _) = check(&args);
    assert_eq!(rc, 1, "{big}");
    assert_ne!(big["verdict"], "fits");
}

/// llama-server's draft context defaults to the target's per-slot context: Qwen3-0.6B's KV at
/// 32768 cells is 28 layers x 8 KV heads x 128 x 2 x 2 bytes = 112 KiB a token, 3.5 GiB.
#[test]
fn llamacpp_draft_model_brings_its_own_context() {
    let base = [
        "--json",
        "--gpu",
        "RTX 4090",
        "--",
        "llama-server",
        "-hf",
        "unsloth/Qwen3-8B-GGUF:Q4_K_M",
        "-c",
        "32768",
        "-ngl",
        "99",
    ];
    let (_, plain, err) = check(&base);
    let mut args = base.to_vec();
    args.extend_from_slice(&["-md", "unsloth/Qwen3-0.6B-GGUF:Q8_0"]);
    let (_, draft, _) = check(&args);
    let used = |j: &Value| j["devices"][0]["used_bytes"].as_u64().unwrap();
    let added = used(&draft) - used(&plain);
    let kv = 32768u64 * 114_688;
    // the draft context's compute buffer: f32 logits of a 512-token ubatch over 151,936 tokens
    // (311 MB), the hidden state twice and the f16 KQ mask of its 32768 cells
    let compute = 151_936 * 512 * 4 + 2 * 1024 * 512 * 4 + 32768 * 512 * 2;
    assert!(
        added > kv + compute + 500_000_000 && added < kv + compute + 800_000_000,
        "{added} {err}"
    );
    assert!(
        notes(&draft).contains("MiB compute buffer"),
        "{}",
        notes(&draft)
    );
    // -cd 4096 shrinks the draft's KV eightfold, and its mask with it
    args.extend_from_slice(&["-cd", "4096"]);
    let (_, small, _) = check(&args);
    assert_eq!(
        used(&draft) - used(&small),
        kv - 4096 * 114_688 + (32768 - 4096) * 512 * 2
    );
}

fn fixtures() -> Option<(PathBuf, Value)> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("extras-fixtures");
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/make_extras_fixtures.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(&dir)
        .output()
        .ok()?;
    if !out.status.success() {
        assert_ne!(
            std::env::var("VRAMFIT_REQUIRE_GGUF_PY").as_deref(),
            Ok("1"),
            "gguf-py missing"
        );
        eprintln!("SKIP: {}", String::from_utf8_lossy(&out.stderr).trim());
        return None;
    }
    Some((dir, serde_json::from_slice(&out.stdout).unwrap()))
}

#[test]
fn llamacpp_lora_and_mmproj_files_are_counted_by_their_tensors() {
    let Some((dir, sizes)) = fixtures() else {
        return;
    };
    let lora = dir.join("lora.gguf");
    let mmproj = dir.join("mmproj.gguf");
    let base = [
        "--json",
        "--gpu",
        "RTX 4090",
        "--",
        "llama-server",
        "-hf",
        "unsloth/Qwen3-8B-GGUF:Q4_K_M",
        "-c",
        "8192",
        "-ngl",
        "99",
    ];
    let (_, plain, _) = check(&base);
    let mut args = base.to_vec();
    args.extend_from_slice(&[
        "--lora",
        lora.to_str().unwrap(),
        "--mmproj",
        mmproj.to_str().unwrap(),
    ]);
    let (rc, with, err) = check(&args);
    assert_eq!(rc, 0, "{err}");
    let w = |j: &Value| j["devices"][0]["weights_bytes"].as_u64().unwrap();
    let want = sizes["lora.gguf"].as_u64().unwrap() + sizes["mmproj.gguf"].as_u64().unwrap();
    assert_eq!(w(&with) - w(&plain), want);
    // --no-mmproj-offload keeps the projector in host RAM
    args.push("--no-mmproj-offload");
    let (_, host, _) = check(&args);
    assert_eq!(w(&with) - w(&host), sizes["mmproj.gguf"].as_u64().unwrap());
    assert!(
        !notes(&with).contains("no memory effect"),
        "{}",
        notes(&with)
    );
}

/// vLLM: a 1B draft's bf16 weights come out of the pool and its 16 layers cache 32 KiB a token
/// beside the target's 128 KiB, so the pool holds (KV left / KV before) x 128/160 of the tokens.
/// SGLang counts the same draft and still starts with the smaller pool.
#[test]
fn a_draft_model_shares_the_pool() {
    let base = [
        "--json",
        "--gpu",
        "RTX 4090",
        "--",
        "vllm",
        "serve",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--max-model-len",
        "16384",
    ];
    let (_, plain, _) = check(&base);
    let mut args = base.to_vec();
    args.extend_from_slice(&[
        "--speculative-config",
        r#"{"model": "meta-llama/Llama-3.2-1B-Instruct", "num_speculative_tokens": 5}"#,
    ]);
    let (rc, draft, err) = check(&args);
    assert_eq!(rc, 0, "{err}");
    let kv = |j: &Value| j["kv_cache"]["bytes"].as_i64().unwrap() as f64;
    let tokens = |j: &Value| j["kv_cache"]["tokens"].as_u64().unwrap() as f64;
    let want = tokens(&plain) * kv(&draft) / kv(&plain) * 128.0 / 160.0;
    assert!(
        (tokens(&draft) - want).abs() <= 1.0,
        "{} vs {want}",
        tokens(&draft)
    );
    assert!(kv(&plain) - kv(&draft) > 2.3e9, "1.24B parameters in bf16");
    assert!(
        !notes(&draft).contains("drafter's weights and KV are not counted"),
        "{}",
        notes(&draft)
    );
    let (rc, sg, err) = check(&[
        "--json",
        "--gpu",
        "RTX 4090",
        "--",
        "python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--speculative-algorithm",
        "EAGLE",
        "--speculative-draft-model-path",
        "meta-llama/Llama-3.2-1B-Instruct",
    ]);
    assert_eq!(rc, 0, "{err} {sg}");
    assert!(
        notes(&sg).contains("draft model meta-llama/Llama-3.2-1B-Instruct"),
        "{}",
        notes(&sg)
    );
}

/// llama.cpp's projector warm-up (tools/mtmd/clip.cpp warmup): one 896 x 896 image through a
/// SigLIP encoder of 1152 wide, 4304 FFN, 16 heads, patch 14 (gemma-3's projector header):
/// 4096 patches x (4304 + 3 x 1152) f32 with flash attention; without it the 16 heads' f32
/// scores over 4096 x 4096 patches are added (1 GiB).
#[test]
fn the_projector_warmup_compute_is_counted() {
    let Some((dir, sizes)) = fixtures() else {
        return;
    };
    let mmproj = dir.join("mmproj-siglip.gguf");
    let base = [
        "--json",
        "--gpu",
        "RTX 4090",
        "--",
        "llama-server",
        "-hf",
        "unsloth/Qwen3-8B-GGUF:Q4_K_M",
        "-c",
        "8192",
        "-ngl",
        "99",
    ];
    let (_, plain, _) = check(&base);
    let mut args = base.to_vec();
    args.extend_from_slice(&["--mmproj", mmproj.to_str().unwrap()]);
    let (rc, with, err) = check(&args);
    assert_eq!(rc, 0, "{err}");
    let w = |j: &Value| j["devices"][0]["weights_bytes"].as_u64().unwrap();
    let warm = 4 * 4096 * (4304 + 3 * 1152);
    assert_eq!(
        w(&with) - w(&plain),
        sizes["mmproj-siglip.gguf"].as_u64().unwrap() + warm
    );
    let n = notes(&with);
    assert!(
        n.contains("warm-up compute (896 x 896 image, flash attention on)"),
        "{n}"
    );
    assert!(!n.contains("warmup compute buffer"), "{n}");
    args.extend_from_slice(&["-fa", "off"]);
    let (_, off, _) = check(&args);
    assert_eq!(w(&off) - w(&with), 4 * 16 * 4096 * 4096);
}

/// ggml-org/llama.cpp#21489: with `--fit` on, llama-server keeps the projector's memory (its
/// tensors and warm-up compute) free on the first GPU, so a multimodal model that --fit places
/// still starts; a build before it fits the model alone and the projector comes on top.
#[test]
fn fit_leaves_room_for_the_projector_from_its_build() {
    let args = |v: &'static str| {
        vec![
            "--json",
            "--gpu",
            "RTX 3060",
            "--engine-version",
            v,
            "--",
            "llama-server",
            "-hf",
            "unsloth/gemma-3-27b-it-GGUF:Q4_K_M",
        ]
    };
    let (rc, new, err) = check(&args("b9500"));
    assert_eq!(rc, 0, "{err} {new}");
    let n = notes(&new);
    assert!(n.contains("for the vision projector"), "{n}");
    let d = &new["devices"][0];
    assert!(d["used_bytes"].as_u64() <= d["free_bytes"].as_u64(), "{d}");
    // before #21489 the fitted model leaves only --fit-target's 1 GiB for a ~0.9 GiB projector
    let (_, old, _) = check(&args("b9000"));
    assert!(!notes(&old).contains("for the vision projector"));
    let used = |j: &Value| j["devices"][0]["used_bytes"].as_u64().unwrap();
    assert!(used(&old) > used(&new), "the newer build keeps more free");
}
