//! The GGUF reader against real files written by gguf-py's `GGUFWriter`
//! (scripts/make_gguf_fixtures.py), compared with what gguf-py's `GGUFReader` reads back.
//!
//! Needs `python3` with `pip install gguf numpy`; skips with a message otherwise (set
//! VRAMFIT_REQUIRE_GGUF_PY=1 to make a missing gguf-py a failure, as CI does).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;
use vramfit_model::gguf::{
    read_gguf, read_gguf_split, read_gguf_split_sources, read_gguf_with, GgufArch, GgufError,
    GgufFile, GgufValue, GgufValueType, ReadOptions, SlidingWindowPattern,
};
use vramfit_model::source::{ByteSource, FileSource, MemSource};
use vramfit_model::GgmlType;

struct Fixtures {
    dir: PathBuf,
    manifest: Value,
}

/// Write the fixtures once per test binary into Cargo's per-target temp dir.
fn fixtures() -> Option<&'static Fixtures> {
    static CELL: OnceLock<Option<Fixtures>> = OnceLock::new();
    CELL.get_or_init(|| {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/make_gguf_fixtures.py");
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gguf-fixtures");
        let _ = std::fs::remove_dir_all(&dir);
        let require = std::env::var("VRAMFIT_REQUIRE_GGUF_PY").is_ok_and(|v| v == "1");
        let out = match Command::new("python3").arg(&script).arg(&dir).output() {
            Ok(out) => out,
            Err(e) => {
                assert!(!require, "python3 not runnable: {e}");
                eprintln!("SKIP gguf fixture tests: python3 not runnable ({e})");
                return None;
            }
        };
        if out.status.code() == Some(3) {
            assert!(
                !require,
                "gguf-py missing: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            eprintln!(
                "SKIP gguf fixture tests: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return None;
        }
        assert!(
            out.status.success(),
            "fixture script failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let manifest = serde_json::from_slice(&out.stdout).expect("fixture manifest is JSON");
        Some(Fixtures { dir, manifest })
    })
    .as_ref()
}

fn open(path: &Path) -> FileSource {
    FileSource::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()))
}

/// The header matches gguf-py's reading of the same file, tensor by tensor.
fn assert_matches_manifest(g: &GgufFile, m: &Value) {
    assert_eq!(
        g.data_offset,
        m["data_offset"].as_u64().unwrap(),
        "data section offset"
    );
    assert_eq!(g.alignment(), m["alignment"].as_u64().unwrap());
    assert_eq!(
        g.metadata.len() as u64,
        m["kv_count"].as_u64().unwrap(),
        "metadata count"
    );
    assert!(g.header_bytes <= g.data_offset && g.data_offset - g.header_bytes < g.alignment());
    let want = m["tensors"].as_array().unwrap();
    assert_eq!(g.tensors.len(), want.len());
    for (t, w) in g.tensors.iter().zip(want) {
        assert_eq!(t.name, w["name"].as_str().unwrap());
        assert_eq!(
            t.ggml_type.id() as u64,
            w["type"].as_u64().unwrap(),
            "{}",
            t.name
        );
        let dims: Vec<u64> = w["dims"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .collect();
        assert_eq!(t.dims, dims, "{}", t.name);
        assert_eq!(
            t.bytes,
            w["n_bytes"].as_u64().unwrap(),
            "bytes of {}",
            t.name
        );
        assert_eq!(
            g.data_offset + t.offset,
            w["data_offset"].as_u64().unwrap(),
            "offset of {}",
            t.name
        );
    }
    let total: u64 = want.iter().map(|w| w["n_bytes"].as_u64().unwrap()).sum();
    assert_eq!(g.weight_set().total_bytes(), total);
}

#[test]
fn mixed_file_matches_gguf_py() {
    let Some(fx) = fixtures() else { return };
    let g = read_gguf(&open(&fx.dir.join("mixed.gguf"))).unwrap();
    assert_eq!(g.version, 3);
    assert_matches_manifest(&g, &fx.manifest["files"]["mixed"]);
    let types: std::collections::BTreeSet<_> = g.tensors.iter().map(|t| t.ggml_type).collect();
    for t in [
        GgmlType::Q4_K,
        GgmlType::Q6_K,
        GgmlType::Q8_0,
        GgmlType::IQ4_XS,
        GgmlType::BF16,
        GgmlType::Q4_0,
        GgmlType::Q5_K,
        GgmlType::IQ2_XXS,
        GgmlType::TQ1_0,
    ] {
        assert!(types.contains(&t), "fixture lacks {t}");
    }
    let exps = g.tensor("blk.0.ffn_gate_exps.weight").unwrap();
    assert_eq!(exps.dims, vec![256, 96, 4]);
    if exps.ggml_type == GgmlType::MXFP4 {
        assert_eq!(exps.bytes, 256 / 32 * 17 * 96 * 4); // 17 bytes per 32 elements
    } else {
        eprintln!("note: this gguf-py has no MXFP4; the fixture used Q4_0");
    }
}

#[test]
fn every_value_type_decodes() {
    let Some(fx) = fixtures() else { return };
    let g = read_gguf(&open(&fx.dir.join("mixed.gguf"))).unwrap();
    assert_eq!(g.get("test.u8"), Some(&GgufValue::U8(200)));
    assert_eq!(g.get("test.i8"), Some(&GgufValue::I8(-100)));
    assert_eq!(g.get("test.u16"), Some(&GgufValue::U16(60000)));
    assert_eq!(g.get("test.i16"), Some(&GgufValue::I16(-30000)));
    assert_eq!(g.get("test.u32"), Some(&GgufValue::U32(4_000_000_000)));
    assert_eq!(g.get("test.i32"), Some(&GgufValue::I32(-2_000_000_000)));
    assert_eq!(g.get("test.f32"), Some(&GgufValue::F32(0.5)));
    assert_eq!(g.get("test.bool"), Some(&GgufValue::Bool(true)));
    assert_eq!(g.get_str("test.string"), Some("héllo wörld"));
    assert_eq!(g.get_u64("test.u64"), Some((1u64 << 63) + 5));
    assert_eq!(g.get("test.i64"), Some(&GgufValue::I64(-(1i64 << 62))));
    assert_eq!(g.get_f64("test.f64"), Some(1e-300));
    assert_eq!(g.get_u64_array("test.array_u32"), Some(vec![1, 2, 3]));
    assert_eq!(
        g.get("test.array_u8"),
        Some(&GgufValue::Array(vec![GgufValue::U8(7), GgufValue::U8(8)]))
    );
    assert_eq!(
        g.get("test.array_i16"),
        Some(&GgufValue::Array(vec![
            GgufValue::I16(-1),
            GgufValue::I16(1)
        ]))
    );
    let strs: Vec<_> = g
        .get("test.array_str")
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(strs, ["a", "bc", ""]);
    let nested = g.get("test.nested").unwrap().as_array().unwrap();
    assert_eq!(nested.len(), 2);
    assert_eq!(nested[0].as_array().unwrap().len(), 2);
    assert_eq!(nested[1].as_array().unwrap()[0].as_u64(), Some(3));
    let nested_str = g.get("test.nested_str").unwrap().as_array().unwrap();
    assert_eq!(nested_str[1].as_array().unwrap()[0].as_str(), Some("z"));
    let nested3 = g.get("test.nested3").unwrap().as_array().unwrap();
    assert_eq!(
        nested3[0].as_array().unwrap()[1].as_array().unwrap()[1].as_u64(),
        Some(3)
    );
    // large arrays are walked and kept as type + length
    assert_eq!(
        g.get("tokenizer.ggml.tokens"),
        Some(&GgufValue::SkippedArray {
            elem_type: GgufValueType::String,
            len: 2000
        })
    );
    assert_eq!(g.array_len("tokenizer.ggml.scores"), Some(2000));
    assert_eq!(g.array_len("tokenizer.ggml.token_type"), Some(2000));
    assert_eq!(g.architecture(), Some("llama"));
}

#[test]
fn large_arrays_kept_on_request() {
    let Some(fx) = fixtures() else { return };
    let src = open(&fx.dir.join("mixed.gguf"));
    let g = read_gguf_with(
        &src,
        ReadOptions {
            keep_large_arrays: true,
        },
    )
    .unwrap();
    let tokens = g.get("tokenizer.ggml.tokens").unwrap().as_array().unwrap();
    assert_eq!(tokens.len(), 2000);
    assert_eq!(tokens[5].as_str(), Some("tok5"));
    assert_eq!(tokens[1999].as_str(), Some("éé"));
    assert_eq!(
        g.get("tokenizer.ggml.scores").unwrap().as_array().unwrap()[7].as_f64(),
        Some(7.0)
    );
    // the tensor table does not depend on what was kept
    assert_eq!(g.tensors, read_gguf(&src).unwrap().tensors);
}

#[test]
fn custom_alignment_and_big_endian() {
    let Some(fx) = fixtures() else { return };
    let g = read_gguf(&open(&fx.dir.join("aligned64.gguf"))).unwrap();
    assert_eq!(g.alignment(), 64);
    assert_eq!(g.data_offset % 64, 0);
    assert_matches_manifest(&g, &fx.manifest["files"]["aligned64"]);

    let be = read_gguf(&open(&fx.dir.join("bigendian.gguf"))).unwrap();
    assert_eq!(be.version, 3);
    assert_matches_manifest(&be, &fx.manifest["files"]["bigendian"]);
    assert_eq!(be.get_u64("llama.block_count"), Some(4));
    assert_eq!(be.array_len("tokenizer.ggml.tokens"), Some(1500));
    assert_eq!(
        be.get("test.nested").unwrap().as_array().unwrap()[0]
            .as_array()
            .unwrap()[1]
            .as_u64(),
        Some(2)
    );
}

#[test]
fn architecture_keys() {
    let Some(fx) = fixtures() else { return };
    let a = read_gguf(&open(&fx.dir.join("mixed.gguf")))
        .unwrap()
        .arch()
        .unwrap();
    assert_eq!(a.architecture, "llama");
    assert_eq!(a.name.as_deref(), Some("Fixture Llama"));
    assert_eq!(a.size_label.as_deref(), Some("1M"));
    assert_eq!(a.file_type, Some(15));
    assert_eq!(a.block_count, Some(4));
    assert_eq!(a.context_length, Some(8192));
    assert_eq!(a.embedding_length, Some(256));
    assert_eq!(a.head_count, Some(vec![8]));
    assert_eq!(a.head_count_kv, Some(vec![2, 2, 4, 4]));
    assert_eq!(
        (
            a.head_count_at(3),
            a.head_count_kv_at(0),
            a.head_count_kv_at(3)
        ),
        (Some(8), Some(2), Some(4))
    );
    assert_eq!(a.feed_forward_length_at(2), Some(512));
    assert_eq!(
        (a.key_length, a.value_length, a.rope_dimension_count),
        (Some(32), Some(32), Some(32))
    );
    assert_eq!(a.sliding_window, Some(1024));
    assert_eq!(
        a.sliding_window_pattern,
        Some(SlidingWindowPattern::Layers(vec![true, true, true, false]))
    );
    assert_eq!(a.vocab_size, Some(2000));
    assert_eq!(a.expert_count, None);
    assert_eq!(GgufArch::at(&[5], 100), Some(5));
}

#[test]
fn split_set_merges_and_missing_shard_is_named() {
    let Some(fx) = fixtures() else { return };
    let shards = fx.manifest["files"]["split"].as_array().unwrap();
    assert_eq!(shards.len(), 3);
    let paths: Vec<PathBuf> = (1..=3)
        .map(|i| fx.dir.join(format!("split-{i:05}-of-00003.gguf")))
        .collect();
    for (p, m) in paths.iter().zip(shards) {
        assert_matches_manifest(&read_gguf(&open(p)).unwrap(), m);
    }
    let merged = read_gguf_split(&paths[0]).unwrap();
    let names: Vec<&str> = merged.tensors.iter().map(|t| t.name.as_str()).collect();
    let want: Vec<&str> = shards
        .iter()
        .flat_map(|m| {
            m["tensors"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap())
        })
        .collect();
    assert_eq!(names, want);
    assert_eq!(merged.get_u64("split.tensors.count"), Some(5));
    assert_eq!(merged.get_u64("llama.block_count"), Some(4));
    // any shard leads to the same set
    assert_eq!(read_gguf_split(&paths[1]).unwrap(), merged);
    let srcs: Vec<FileSource> = paths.iter().map(|p| open(p)).collect();
    let dyns: Vec<&dyn ByteSource> = srcs.iter().map(|s| s as &dyn ByteSource).collect();
    assert_eq!(
        read_gguf_split_sources(&dyns, ReadOptions::default())
            .unwrap()
            .tensors,
        merged.tensors
    );
    // shards out of order are refused
    let swapped = [dyns[1], dyns[0], dyns[2]];
    assert!(matches!(
        read_gguf_split_sources(&swapped, ReadOptions::default()),
        Err(GgufError::SplitMismatch { .. })
    ));

    let lonely = fx.dir.join("lonely");
    std::fs::create_dir_all(&lonely).unwrap();
    for i in [1, 3] {
        std::fs::copy(
            &paths[i - 1],
            lonely.join(format!("split-{i:05}-of-00003.gguf")),
        )
        .unwrap();
    }
    let err = read_gguf_split(&lonely.join("split-00001-of-00003.gguf")).unwrap_err();
    assert!(
        matches!(err, GgufError::MissingShard { count: 3, .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("split-00002-of-00003.gguf"),
        "{err}"
    );
    // a renamed shard cannot find its siblings: say so
    std::fs::copy(&paths[0], lonely.join("renamed.gguf")).unwrap();
    let err = read_gguf_split(&lonely.join("renamed.gguf")).unwrap_err();
    assert!(err.to_string().contains("split.count is 3"), "{err}");
    // a file merely named like a shard, without split keys, is read alone
    std::fs::copy(
        fx.dir.join("aligned64.gguf"),
        lonely.join("solo-00001-of-00002.gguf"),
    )
    .unwrap();
    let solo = read_gguf_split(&lonely.join("solo-00001-of-00002.gguf")).unwrap();
    assert_eq!(solo.tensors.len(), 4);
    // a shard renamed to a different count is refused
    std::fs::copy(&paths[0], lonely.join("x-00001-of-00002.gguf")).unwrap();
    let err = read_gguf_split(&lonely.join("x-00001-of-00002.gguf")).unwrap_err();
    assert!(err.to_string().contains("file name says 2 shards"), "{err}");
}

fn mixed_bytes(fx: &Fixtures) -> Vec<u8> {
    std::fs::read(fx.dir.join("mixed.gguf")).unwrap()
}

fn read_bytes(data: Vec<u8>) -> Result<GgufFile, GgufError> {
    read_gguf(&MemSource {
        data,
        label: "mem.gguf".into(),
    })
}

#[test]
fn versions_two_one_and_other() {
    let Some(fx) = fixtures() else { return };
    let mut data = mixed_bytes(fx);
    data[4..8].copy_from_slice(&2u32.to_le_bytes()); // v2 has v3's layout (v3 only added big-endian)
    assert_eq!(read_bytes(data.clone()).unwrap().version, 2);
    data[4..8].copy_from_slice(&1u32.to_le_bytes());
    assert!(matches!(
        read_bytes(data.clone()),
        Err(GgufError::Version1 { .. })
    ));
    data[4..8].copy_from_slice(&4u32.to_le_bytes());
    let err = read_bytes(data.clone()).unwrap_err();
    assert!(err.to_string().contains("version 4"), "{err}");
    data[0..4].copy_from_slice(b"GGJT");
    let err = read_bytes(data).unwrap_err();
    assert!(
        err.to_string().contains("not a GGUF file") && err.to_string().contains("GGJT"),
        "{err}"
    );
}

#[test]
fn truncated_files_give_clear_errors() {
    let Some(fx) = fixtures() else { return };
    let data = mixed_bytes(fx);
    let full = read_bytes(data.clone()).unwrap();
    let mut cuts: Vec<usize> = vec![0, 1, 3, 4, 7, 8, 15, 16, 23, 24, 25];
    cuts.extend((30..full.header_bytes as usize).step_by(577));
    // the file ends with alignment padding after the last tensor, which is not needed (llama.cpp's
    // loader checks offset + nbytes against the file size); cut one byte into the last tensor
    let last_end = full
        .tensors
        .iter()
        .map(|t| full.data_offset + t.offset + t.bytes)
        .max()
        .unwrap() as usize;
    assert!(read_bytes(data[..last_end].to_vec()).is_ok());
    cuts.extend([
        full.header_bytes as usize - 1,
        full.data_offset as usize,
        data.len() / 2,
        last_end - 1,
    ]);
    for cut in cuts {
        let Err(err) = read_bytes(data[..cut].to_vec()) else {
            panic!("cut at {cut} read without error")
        };
        let msg = err.to_string();
        assert!(
            !msg.contains('\n') && msg.contains("mem.gguf"),
            "cut {cut}: {msg}"
        );
        if (cut as u64) < full.header_bytes {
            assert!(
                matches!(
                    err,
                    GgufError::Truncated { .. } | GgufError::CountPastEnd { .. }
                ),
                "cut {cut}: {msg}"
            );
        } else {
            assert!(
                matches!(
                    err,
                    GgufError::TensorPastEnd { .. } | GgufError::DataPastEnd { .. }
                ),
                "cut {cut}: {msg}"
            );
            assert!(msg.contains("truncated"), "{msg}");
        }
    }
}

/// Offset just past the name of tensor `name` in the tensor info table (where n_dims starts).
fn tensor_info_at(data: &[u8], name: &str) -> usize {
    let mut needle = (name.len() as u64).to_le_bytes().to_vec();
    needle.extend_from_slice(name.as_bytes());
    let at = data
        .windows(needle.len())
        .position(|w| w == needle.as_slice())
        .expect("tensor name in header");
    at + needle.len()
}

#[test]
fn corrupt_counts_and_tensor_infos_are_named() {
    let Some(fx) = fixtures() else { return };
    let data = mixed_bytes(fx);
    let patch = |at: usize, bytes: &[u8]| {
        let mut d = data.clone();
        d[at..at + bytes.len()].copy_from_slice(bytes);
        read_bytes(d).unwrap_err()
    };
    let err = patch(8, &u64::MAX.to_le_bytes());
    assert!(
        matches!(err, GgufError::TooMany { .. }) && err.to_string().contains("tensor count"),
        "{err}"
    );
    let err = patch(8, &1_000_000u64.to_le_bytes());
    assert!(
        matches!(
            err,
            GgufError::CountPastEnd {
                count: 1_000_000,
                ..
            }
        ),
        "{err}"
    );
    let err = patch(16, &(1u64 << 40).to_le_bytes());
    assert!(err.to_string().contains("metadata count"), "{err}");
    let err = patch(24, &(1u64 << 50).to_le_bytes()); // length of the first key
    assert!(err.to_string().contains("metadata key #0"), "{err}");

    let at = tensor_info_at(&data, "blk.1.attn_k.weight");
    let err = patch(at, &5u32.to_le_bytes());
    assert!(
        matches!(err, GgufError::TooManyDims { n_dims: 5, .. })
            && err.to_string().contains("blk.1.attn_k.weight")
    );
    let err = patch(at + 4 + 16, &4u32.to_le_bytes()); // type id 4 (Q4_2) was removed from ggml
    assert!(
        matches!(err, GgufError::UnknownTensorType { type_id: 4, .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("blk.1.attn_k.weight") && err.to_string().contains("type id 4"),
        "{err}"
    );
    let err = patch(at + 4 + 8, &u64::MAX.to_le_bytes()); // ne[1]: element count overflows
    assert!(matches!(err, GgufError::BadShape { .. }), "{err}");
    let err = patch(at + 4, &100u64.to_le_bytes()); // ne[0] = 100 is not a whole IQ4_XS block
    assert!(err.to_string().contains("256-element blocks"), "{err}");
    let err = patch(at + 4 + 16 + 4, &3u64.to_le_bytes()); // offset not aligned
    assert!(
        matches!(err, GgufError::MisalignedTensor { offset: 3, .. }),
        "{err}"
    );
    let err = patch(at + 4 + 16 + 4, &(1u64 << 40).to_le_bytes()); // offset past the end
    assert!(
        matches!(err, GgufError::TensorPastEnd { .. })
            && err.to_string().contains("blk.1.attn_k.weight")
    );
}
