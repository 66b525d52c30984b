//! Safetensors headers and checkpoints written by the Python `safetensors` package
//! (scripts/make_safetensors_fixtures.py), and quantized layouts from AWQ, GPTQ, FP8, NVFP4,
//! MXFP4 and bitsandbytes.

use std::path::{Path, PathBuf};
use vramfit_model::safetensors::quant::{classify, quant_summary, QuantScheme, TensorRole};
use vramfit_model::safetensors::{
    logical_params, read_checkpoint, read_checkpoint_dir, read_safetensors_header, StError,
};
use vramfit_model::source::{FileSource, MemSource};
use vramfit_model::TensorDtype;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/safetensors_fixtures")
        .join(rel)
}

fn header_of(rel: &str) -> vramfit_model::safetensors::SafetensorsHeader {
    read_safetensors_header(&FileSource::open(&fixture(rel)).unwrap()).unwrap()
}

#[test]
fn single_file_written_by_python_safetensors() {
    let h = header_of("single/model.safetensors");
    assert_eq!(h.metadata.get("format").map(String::as_str), Some("pt"));
    assert_eq!(
        h.metadata.get("producer").map(String::as_str),
        Some("vramfit fixtures")
    );
    assert_eq!(h.tensors.len(), 15);
    assert!(h.issues.is_empty(), "{:?}", h.issues);
    // the data section is exactly the tensors, back to back
    assert_eq!(h.data_start() + h.tensor_bytes(), h.file_len.unwrap());
    let dtypes: std::collections::BTreeSet<&str> =
        h.tensors.iter().map(|t| t.dtype.as_str()).collect();
    assert_eq!(
        dtypes.into_iter().collect::<Vec<_>>(),
        ["BOOL", "F16", "F32", "F64", "I64"]
    );
    for t in &h.tensors {
        assert_eq!(Some(t.bytes()), t.expected_bytes(), "{}", t.name);
    }

    let set = h.to_weight_set();
    let q = set.get("model.layers.0.mlp.down_proj.weight").unwrap();
    // PyTorch shape [64, 128] → ggml dims [128, 64]
    assert_eq!(q.dims, vec![128, 64]);
    assert_eq!(q.dtype, TensorDtype::Named("F16".into()));
    assert_eq!(q.bytes, 64 * 128 * 2);
    assert_eq!(set.get("model.flags").unwrap().bytes, 3);
    assert_eq!(set.total_bytes(), h.tensor_bytes());
}

#[test]
fn sharded_checkpoint_with_index() {
    let ckpt = read_checkpoint_dir(&fixture("sharded")).unwrap();
    assert_eq!(ckpt.shards.len(), 3);
    assert_eq!(ckpt.shards[0].file, "model-00001-of-00003.safetensors");
    assert!(ckpt.issues.is_empty(), "{:?}", ckpt.issues);
    // the index's total_size (numpy nbytes summed by the writer) matches the headers exactly
    assert_eq!(ckpt.index_total_size, Some(ckpt.weights.total_bytes()));
    assert_eq!(ckpt.weights.tensors.len(), 1 + 9 + 9 + 1 + 1);
    let per_shard: u64 = ckpt.shards.iter().map(|s| s.tensor_bytes).sum();
    assert_eq!(per_shard, ckpt.weights.total_bytes());
    assert_eq!(
        ckpt.weights.get("lm_head.weight").unwrap().bytes,
        256 * 64 * 4
    );
    assert_eq!(ckpt.metadata.get("format").map(String::as_str), Some("pt"));
    // the same through the index path and through one shard file
    let via_index = read_checkpoint(&fixture("sharded/model.safetensors.index.json")).unwrap();
    assert_eq!(via_index.weights, ckpt.weights);
    let one = read_checkpoint(&fixture("sharded/model-00003-of-00003.safetensors")).unwrap();
    assert_eq!(one.weights.tensors.len(), 1);
}

#[test]
fn index_that_disagrees_with_shards_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    for f in [
        "model-00001-of-00003.safetensors",
        "model-00002-of-00003.safetensors",
    ] {
        std::fs::copy(fixture("sharded").join(f), dir.path().join(f)).unwrap();
    }
    let index = r#"{"metadata": {"total_size": 5}, "weight_map": {
        "model.embed_tokens.weight": "model-00002-of-00003.safetensors",
        "ghost.weight": "model-00001-of-00003.safetensors"}}"#;
    std::fs::write(dir.path().join("model.safetensors.index.json"), index).unwrap();
    let ckpt = read_checkpoint_dir(dir.path()).unwrap();
    let all = ckpt.issues.join("\n");
    assert!(
        all.contains("puts tensor 'model.embed_tokens.weight' in model-00002"),
        "{all}"
    );
    assert!(
        all.contains("'model.norm.weight' in model-00002-of-00003.safetensors is not in the index"),
        "{all}"
    );
    assert!(all.contains("first: 'ghost.weight'"), "{all}");
    assert!(all.contains("total_size is 5 bytes"), "{all}");

    // a shard the index names but that is missing: one-line error naming the file
    std::fs::remove_file(dir.path().join("model-00002-of-00003.safetensors")).unwrap();
    let err = read_checkpoint_dir(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("model-00002-of-00003.safetensors") && !err.contains('\n'),
        "{err}"
    );
}

#[test]
fn directory_without_checkpoint_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let err = read_checkpoint_dir(dir.path()).unwrap_err();
    assert!(matches!(err, StError::NoCheckpoint { .. }), "{err}");
}

#[test]
fn broken_files_are_flagged_or_refused() {
    let h = header_of("broken/mismatch.safetensors");
    assert_eq!(h.issues.len(), 1, "{:?}", h.issues);
    assert!(
        h.issues[0].contains("tensor 'b' holds 8 bytes but shape [3] × F16 needs 6"),
        "{}",
        h.issues[0]
    );

    let err = read_safetensors_header(
        &FileSource::open(&fixture("broken/truncated.safetensors")).unwrap(),
    )
    .unwrap_err();
    assert!(
        matches!(err, StError::TensorPastEnd { ref tensor, .. } if tensor == "b"),
        "{err}"
    );
    assert!(err.to_string().contains("truncated"));
}

fn mem(bytes: Vec<u8>) -> MemSource {
    MemSource {
        data: bytes,
        label: "mem.safetensors".into(),
    }
}

fn with_header(json: &str, data: usize) -> Vec<u8> {
    let mut v = (json.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(json.as_bytes());
    v.resize(v.len() + data, 0);
    v
}

#[test]
fn malformed_headers_are_one_line_errors() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (vec![1, 2, 3], "too short"),
        (
            u64::MAX.to_le_bytes().to_vec(),
            "exceeds the 100000000-byte limit",
        ),
        (
            100u64.to_le_bytes().into_iter().chain(*b"{}").collect(),
            "runs past the end",
        ),
        (with_header("[1,2]", 0), "not a JSON object"),
        (
            with_header(r#"{"a":{"dtype":"F32","shape":[1]}}"#, 0),
            "tensor 'a' has a malformed entry",
        ),
        (
            with_header(
                r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}}"#,
                8,
            ),
            "ends (byte 0) before it begins",
        ),
        (
            with_header(
                r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#,
                2,
            ),
            "past the end",
        ),
        (
            with_header(r#"{"__metadata__":[1]}"#, 0),
            "`__metadata__` is not a JSON object",
        ),
        (
            with_header(
                r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#,
                8,
            ),
            "tensors 'a' and 'b' overlap",
        ),
        (
            with_header(
                r#"{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}}"#,
                4,
            ),
            "cannot fit in 4 bytes",
        ),
    ];
    for (bytes, want) in cases {
        let err = read_safetensors_header(&mem(bytes))
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "wanted '{want}' in: {err}");
        assert!(
            err.starts_with("mem.safetensors") && !err.contains('\n'),
            "{err}"
        );
    }
}

#[test]
fn unknown_dtype_and_gaps_are_issues_not_errors() {
    let json = r#"{"a":{"dtype":"F3_WEIRD","shape":[2],"data_offsets":[0,4]},
                  "b":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]},
                  "__metadata__":{"n":3}}"#;
    let h = read_safetensors_header(&mem(with_header(json, 12))).unwrap();
    assert_eq!(
        h.tensors
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert_eq!(h.metadata.get("n").map(String::as_str), Some("3"));
    assert!(
        h.issues.iter().any(|i| i.contains("'F3_WEIRD', unknown")),
        "{:?}",
        h.issues
    );
    assert!(
        h.issues
            .iter()
            .any(|i| i.contains("gap of 4 bytes before tensor 'b'")),
        "{:?}",
        h.issues
    );
    assert_eq!(h.tensor_bytes(), 8);
}

fn set_of(rel: &str) -> vramfit_model::WeightSet {
    read_checkpoint(&fixture(rel)).unwrap().weights
}

fn scheme_and_role(
    set: &vramfit_model::WeightSet,
    name: &str,
) -> (Option<QuantScheme>, TensorRole, u64) {
    let classes = classify(set, None);
    let i = set
        .tensors
        .iter()
        .position(|t| t.name == name)
        .unwrap_or_else(|| panic!("no {name}"));
    (
        classes[i].scheme,
        classes[i].role,
        classes[i].logical_params,
    )
}

#[test]
fn awq_packs_eight_weights_per_i32_along_the_output_dim() {
    let set = set_of("awq/model.safetensors");
    // q_proj 64×64, down_proj 64×128, embed 256×64, lm_head 256×64, norm 64
    assert_eq!(logical_params(&set), 4096 + 8192 + 2 * 16384 + 64);
    assert_eq!(
        scheme_and_role(&set, "model.layers.0.mlp.down_proj.qweight"),
        (Some(QuantScheme::Awq), TensorRole::Weight, 8192)
    );
    assert_eq!(
        scheme_and_role(&set, "model.layers.0.mlp.down_proj.scales"),
        (Some(QuantScheme::Awq), TensorRole::QuantAux, 0)
    );
    let s = quant_summary(&set, None);
    assert_eq!(s.schemes, vec![QuantScheme::Awq]);
    let aux = s
        .roles
        .iter()
        .find(|r| r.role == TensorRole::QuantAux)
        .unwrap();
    assert_eq!(aux.tensors, 4);
    let emb = s
        .roles
        .iter()
        .find(|r| r.role == TensorRole::Embedding)
        .unwrap();
    assert_eq!((emb.tensors, emb.logical_params), (2, 2 * 16384));
    assert_eq!(s.bytes, set.total_bytes());
}

#[test]
fn gptq_packs_along_the_input_dim_and_keeps_g_idx_apart() {
    let set = set_of("gptq/model.safetensors");
    assert_eq!(logical_params(&set), 4096 + 8192 + 16384);
    assert_eq!(
        scheme_and_role(&set, "model.layers.0.self_attn.q_proj.qweight"),
        (Some(QuantScheme::Gptq), TensorRole::Weight, 4096)
    );
    assert_eq!(
        scheme_and_role(&set, "model.layers.0.self_attn.q_proj.g_idx").2,
        0
    );
}

#[test]
fn fp8_weights_with_block_scales() {
    let set = set_of("fp8/model.safetensors");
    assert_eq!(logical_params(&set), 16384 + 4096 + 8192 + 64 + 16384);
    let w = set.get("model.layers.0.self_attn.q_proj.weight").unwrap();
    assert_eq!((w.bytes, w.dtype.name()), (4096, "F8_E4M3".to_string()));
    assert_eq!(
        scheme_and_role(&set, "model.layers.0.self_attn.q_proj.weight_scale_inv"),
        (Some(QuantScheme::Fp8), TensorRole::QuantAux, 0)
    );
    assert_eq!(
        scheme_and_role(&set, "model.layers.0.input_layernorm.weight"),
        (None, TensorRole::Norm, 64)
    );
}

#[test]
fn nvfp4_compressed_tensors_two_values_per_byte() {
    let set = set_of("nvfp4/model.safetensors");
    assert_eq!(logical_params(&set), 16384 + 4096 + 8192 + 64);
    assert_eq!(
        scheme_and_role(&set, "model.layers.0.mlp.down_proj.weight_packed"),
        (Some(QuantScheme::Nvfp4), TensorRole::Weight, 8192)
    );
    // group-16 F8_E4M3 scales: 64 × 128/16 bytes
    let sc = set
        .get("model.layers.0.mlp.down_proj.weight_scale")
        .unwrap();
    assert_eq!(sc.bytes, 64 * 8);
    assert_eq!(
        scheme_and_role(&set, "model.layers.0.mlp.down_proj.weight_scale").0,
        Some(QuantScheme::Nvfp4)
    );
}

#[test]
fn mxfp4_gpt_oss_blocks_hold_32_values_per_16_bytes() {
    let set = set_of("mxfp4/model.safetensors");
    // experts: 2 × 128 × 64 (gate_up) + 2 × 64 × 64 (down); biases 256 + 128; router 128; embed
    assert_eq!(logical_params(&set), 16384 + 8192 + 256 + 128 + 128 + 16384);
    assert_eq!(
        scheme_and_role(&set, "model.layers.0.mlp.experts.gate_up_proj_scales"),
        (Some(QuantScheme::Mxfp4), TensorRole::QuantAux, 0)
    );
    assert_eq!(
        scheme_and_role(&set, "model.layers.0.mlp.experts.down_proj_blocks").2,
        8192
    );
}

#[test]
fn bitsandbytes_nf4_state_is_not_parameters() {
    let set = set_of("bnb4/model.safetensors");
    assert_eq!(logical_params(&set), 64 * 128 + 64);
    let s = quant_summary(&set, None);
    assert_eq!(s.schemes, vec![QuantScheme::BitsAndBytes4bit]);
    let aux = s
        .roles
        .iter()
        .find(|r| r.role == TensorRole::QuantAux)
        .unwrap();
    assert_eq!(aux.tensors, 5);
}

#[test]
fn unquantized_checkpoint_counts_every_element() {
    let set = set_of("single/model.safetensors");
    assert_eq!(logical_params(&set), set.total_elems());
    assert!(quant_summary(&set, None).schemes.is_empty());
}
