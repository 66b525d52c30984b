//! Predicted GGUF quants against real llama.cpp model buffers.
//!
//! Each case names a record of `../shared/data/dev/cases_check.dev.jsonl` (the config and the
//! measured GPU model buffer come from there) and carries the facts the record's notes give:
//! the quant, whether an imatrix was used, which tensors that GPU holds, and the tensor type
//! counts the log printed. The config goes through the HF config reader, the layout is
//! synthesized, the quant predicted, and the GPU's tensors summed.

use serde_json::Value;
use std::collections::BTreeMap;
use vramfit_model::hf_config::spec_from_config;
use vramfit_model::layout::synthesize;
use vramfit_model::quant::{predict, FileType};
use vramfit_model::{GgmlType, Tensor, WeightSet};

const MIB: f64 = 1024.0 * 1024.0;

fn shared_cases() -> Option<Vec<Value>> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/dev/cases_check.dev.jsonl"
    );
    let Ok(text) = std::fs::read_to_string(path) else {
        println!("SKIP: {path} not found (the shared data directory is absent)");
        return None;
    };
    Some(
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
    )
}

fn blk(t: &Tensor) -> Option<u64> {
    t.name.strip_prefix("blk.")?.split('.').next()?.parse().ok()
}

fn is_output_layer(t: &Tensor) -> bool {
    t.name.starts_with("output")
}

/// Which tensors of the file a GPU holds.
enum Gpu {
    /// full offload: everything but token_embd (input layer stays on the CPU); with tied
    /// embeddings the output layer gets its own copy of token_embd
    AllButTokenEmbd,
    /// the repeating layers in `layers`, minus the tensors `moved` (by -ot) elsewhere, plus the
    /// `extra` tensors moved here, plus the output layer when `output`
    Slice {
        layers: std::ops::Range<u64>,
        output: bool,
        moved: fn(&Tensor) -> bool,
        extra: fn(&Tensor) -> bool,
    },
}

fn gpu_bytes(set: &WeightSet, gpu: &Gpu) -> u64 {
    match gpu {
        Gpu::AllButTokenEmbd => {
            let tied = set.get("output.weight").is_none();
            let embd = set.get("token_embd.weight").map(|t| t.bytes).unwrap_or(0);
            set.total_bytes() - embd + if tied { embd } else { 0 }
        }
        Gpu::Slice {
            layers,
            output,
            moved,
            extra,
        } => set
            .tensors
            .iter()
            .filter(|t| {
                let here = match blk(t) {
                    Some(l) => layers.contains(&l) && !moved(t),
                    None => *output && is_output_layer(t),
                };
                here || extra(t)
            })
            .map(|t| t.bytes)
            .sum(),
    }
}

fn counts(set: &WeightSet) -> BTreeMap<String, u64> {
    set.count_by_dtype()
}

struct Case {
    id: &'static str,
    device: usize,
    quant: &'static str,
    imatrix: bool,
    gpu: Gpu,
    /// the measured value is printed in MiB with this resolution (0.01, or 1.0 truncated)
    printed_mib: f64,
    /// tensor type counts of the whole file, as the load log printed them
    type_counts: &'static [(&'static str, u64)],
}

fn never(_: &Tensor) -> bool {
    false
}

fn cases() -> Vec<Case> {
    vec![
        // Llama-3-8B fine-tune, standard Q4_K_M (log: f32 65, q4_K 193, q6_K 33); token_embd
        // 281.81 MiB in CPU_Mapped
        Case {
            id: "code_llama3_8b_korean_bllossom_q4km_rtx3070_ctx512",
            device: 0,
            quant: "Q4_K_M",
            imatrix: false,
            gpu: Gpu::AllButTokenEmbd,
            printed_mib: 0.01,
            type_counts: &[("f32", 65), ("q4_K", 193), ("q6_K", 33)],
        },
        // Llama-3.1-8B standard Q4_0 (output q6_K); the file also carries rope_freqs (256 B),
        // below the log's 0.01 MiB resolution
        Case {
            id: "arch_d562_llama31_8b_q4_0_vulkan_ctx16k_fa_ub1024",
            device: 0,
            quant: "Q4_0",
            imatrix: false,
            gpu: Gpu::AllButTokenEmbd,
            printed_mib: 0.01,
            type_counts: &[],
        },
        // GLM-Z1-32B-0414 IQ4_XS with imatrix (306 iq4_xs, 61 q5_K attn_v, 1 q6_K, 245 f32)
        Case {
            id: "arch_pr370_glmz1_32b_iq4xs_ctx32k_fa",
            device: 0,
            quant: "IQ4_XS",
            imatrix: true,
            gpu: Gpu::AllButTokenEmbd,
            printed_mib: 0.01,
            type_counts: &[("f32", 245), ("iq4_xs", 306), ("q5_K", 61), ("q6_K", 1)],
        },
        // pythia-2.8b (ggml CI) Q6_K: f32 258, q6_K 130
        Case {
            id: "ci_v100_pythia2.8b_q6_k_ctx2048",
            device: 0,
            quant: "Q6_K",
            imatrix: false,
            gpu: Gpu::AllButTokenEmbd,
            printed_mib: 0.01,
            type_counts: &[("f32", 258), ("q6_K", 130)],
        },
        // pythia-2.8b Q5_0 without imatrix: output q6_K, the rest q5_0
        Case {
            id: "ci_v100_pythia2.8b_q5_0_ctx2048",
            device: 0,
            quant: "Q5_0",
            imatrix: false,
            gpu: Gpu::AllButTokenEmbd,
            printed_mib: 0.01,
            type_counts: &[("f32", 258), ("q5_0", 129), ("q6_K", 1)],
        },
        // pythia-2.8b F16: f16 130, f32 258
        Case {
            id: "ci_v100_pythia2.8b_f16_ctx2048",
            device: 0,
            quant: "F16",
            imatrix: false,
            gpu: Gpu::AllButTokenEmbd,
            printed_mib: 0.01,
            type_counts: &[("f16", 130), ("f32", 258)],
        },
        // gemma-3-1b Q8_0, tied: the output layer holds a copy of token_embd
        Case {
            id: "code_gemma3_1b_q8_0_vulkan_ctx8192_pre_iswa",
            device: 0,
            quant: "Q8_0",
            imatrix: false,
            gpu: Gpu::AllButTokenEmbd,
            printed_mib: 0.01,
            type_counts: &[],
        },
        // Qwen3-30B-A3B F16 (fit-params README): attention, routers and norms of all 48 layers
        // plus the experts of layers 0-13; -ngl 48 leaves the output layer on the CPU; the
        // breakdown prints whole MiB, truncated
        Case {
            id: "code_fitparams_readme_qwen3_30b_a3b_f16_rtx4090",
            device: 0,
            quant: "F16",
            imatrix: false,
            gpu: Gpu::Slice {
                layers: 0..48,
                output: false,
                moved: |t| blk(t).is_some_and(|l| l >= 14) && t.name.contains("_exps"),
                extra: never,
            },
            printed_mib: 1.0,
            type_counts: &[],
        },
        // Qwen3-30B-A3B Q4_K_M, all routed experts on the CPU, layers 0-11 on CUDA0 and 12-47
        // plus the output layer on CUDA1
        Case {
            id: "arch_i514_qwen3_30b_a3b_q4km_2gpu_exps_cpu_nofa_ctx16k",
            device: 0,
            quant: "Q4_K_M",
            imatrix: false,
            gpu: Gpu::Slice {
                layers: 0..12,
                output: false,
                moved: |t| t.name.contains("_exps"),
                extra: never,
            },
            printed_mib: 0.01,
            type_counts: &[],
        },
        Case {
            id: "arch_i514_qwen3_30b_a3b_q4km_2gpu_exps_cpu_nofa_ctx16k",
            device: 1,
            quant: "Q4_K_M",
            imatrix: false,
            gpu: Gpu::Slice {
                layers: 12..48,
                output: true,
                moved: |t| t.name.contains("_exps"),
                extra: never,
            },
            printed_mib: 0.01,
            type_counts: &[],
        },
        // Qwen3-235B-A22B Q6_K on 2 GPUs: layers 0-47 / 48-93 by the default split, then -ot
        // puts the FFN tensors (`blk.N.ffn*`) of layers 0-6 on CUDA0, 7-13 on CUDA1, the rest on
        // the CPU
        Case {
            id: "arch_d357_qwen3_235b_q6k_2x3090_ot_q8kv",
            device: 0,
            quant: "Q6_K",
            imatrix: false,
            gpu: Gpu::Slice {
                layers: 0..48,
                output: false,
                moved: |t| t.name.contains(".ffn") && blk(t).is_some_and(|l| l > 6),
                extra: never,
            },
            printed_mib: 0.01,
            type_counts: &[],
        },
        Case {
            id: "arch_d357_qwen3_235b_q6k_2x3090_ot_q8kv",
            device: 1,
            quant: "Q6_K",
            imatrix: false,
            gpu: Gpu::Slice {
                layers: 48..94,
                output: true,
                moved: |t| t.name.contains(".ffn"),
                extra: |t| t.name.contains(".ffn") && blk(t).is_some_and(|l| (7..=13).contains(&l)),
            },
            printed_mib: 0.01,
            type_counts: &[],
        },
    ]
}

#[test]
fn predicted_gpu_model_buffers_match_real_logs() {
    let Some(records) = shared_cases() else {
        return;
    };
    let mut failures = Vec::new();
    for case in cases() {
        let rec = records
            .iter()
            .find(|r| r["id"] == case.id)
            .unwrap_or_else(|| panic!("case {} not in cases_check.dev.jsonl", case.id));
        let expected = rec["expect"]["gpu_model_bytes"]
            .as_array()
            .and_then(|a| a.iter().find(|d| d["device"] == case.device as u64))
            .and_then(|d| d["value"].as_u64())
            .unwrap_or_else(|| {
                panic!("{}: no gpu_model_bytes for device {}", case.id, case.device)
            });
        let spec = spec_from_config(case.id, &rec["config"]).expect("config reads");
        let f16 = synthesize(&spec, GgmlType::F16);
        let ftype = FileType::parse(case.quant).unwrap().ftype;
        let set = predict(&f16, &spec, ftype, case.imatrix);
        let predicted = gpu_bytes(&set, &case.gpu);

        let err = predicted as f64 - expected as f64;
        // the log printed MiB with `printed_mib` resolution: rounded to 0.01, or truncated to 1
        let ok = if case.printed_mib >= 1.0 {
            (predicted as f64 / MIB).floor() == (expected as f64 / MIB).round()
        } else {
            (err / MIB).abs() <= case.printed_mib / 2.0 + 1e-9
        };
        println!(
            "{:<58} dev{} {:<7} predicted {:>14} expected {:>14} error {:+.4} MiB ({:+.5}%)",
            case.id,
            case.device,
            case.quant,
            predicted,
            expected,
            err / MIB,
            100.0 * err / expected as f64
        );
        if !ok {
            failures.push(format!(
                "{} dev{}: off by {:.3} MiB",
                case.id,
                case.device,
                err / MIB
            ));
        }
        if !case.type_counts.is_empty() {
            let got = counts(&set);
            for (ty, n) in case.type_counts {
                if got.get(*ty).copied().unwrap_or(0) != *n {
                    failures.push(format!(
                        "{}: {ty} count {:?} != {n} (all: {got:?})",
                        case.id,
                        got.get(*ty)
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The load log's `file size = X GiB (Y BPW)` line is the sum of every tensor's bytes
/// (llama-model-loader `n_bytes`) and `model params = Z B` the sum of their elements; both
/// printed with two decimals. (case id in both dev files, quant, imatrix)
const WHOLE_FILES: &[(&str, &str, bool)] = &[
    ("arch_pr370_glmz1_32b_iq4xs_ctx32k_fa", "IQ4_XS", true),
    ("arch_d357_qwen3_235b_q6k_2x3090_ot_q8kv", "Q6_K", false),
    (
        "arch_d562_llama31_8b_q4_0_vulkan_ctx16k_fa_ub1024",
        "Q4_0",
        false,
    ),
    (
        "arch_i514_qwen3_30b_a3b_q4km_2gpu_exps_cpu_nofa_ctx16k",
        "Q4_K_M",
        false,
    ),
    ("ci_v100_pythia2.8b_q6_k_ctx2048", "Q6_K", false),
    ("ci_v100_pythia2.8b_q5_0_ctx2048", "Q5_0", false),
    ("ci_v100_pythia2.8b_f16_ctx2048", "F16", false),
    (
        "code_llama3_8b_korean_bllossom_q4km_rtx3070_ctx512",
        "Q4_K_M",
        false,
    ),
    ("code_gemma3_1b_q8_0_vulkan_ctx8192_pre_iswa", "Q8_0", false),
];

/// "16.38 GiB (4.32 BPW)" -> bytes and resolution; "999.89 M" -> elements and resolution
fn printed(text: &str) -> Option<(f64, f64)> {
    let mut it = text.split_whitespace();
    let num: f64 = it.next()?.parse().ok()?;
    let unit = match it.next()? {
        "GiB" => MIB * 1024.0,
        "MiB" => MIB,
        "B" => 1e9,
        "M" => 1e6,
        _ => return None,
    };
    Some((num * unit, 0.01 * unit))
}

#[test]
fn whole_files_match_printed_size_and_params() {
    let Some(records) = shared_cases() else {
        return;
    };
    let logs_path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/dev/llamacpp_logs.dev.jsonl"
    );
    let Ok(logs) = std::fs::read_to_string(logs_path) else {
        println!("SKIP: {logs_path} not found");
        return;
    };
    let logs: Vec<Value> = logs
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut failures = Vec::new();
    for (id, quant, imatrix) in WHOLE_FILES {
        let rec = records
            .iter()
            .find(|r| r["id"] == *id)
            .expect("case present");
        let log = logs.iter().find(|r| r["id"] == *id).expect("log present");
        let spec = spec_from_config(id, &rec["config"]).unwrap();
        let set = predict(
            &synthesize(&spec, GgmlType::F16),
            &spec,
            FileType::parse(quant).unwrap().ftype,
            *imatrix,
        );
        let (size, size_res) = printed(log["model"]["file_size"].as_str().unwrap()).unwrap();
        let (params, params_res) = printed(log["model"]["params"].as_str().unwrap()).unwrap();
        let bytes = set.total_bytes() as f64;
        let elems = set.total_elems() as f64;
        println!(
            "{id:<58} {quant:<7} size {:.4} GiB (printed {:.2}, error {:+.4}%), params {:.4e} (printed {:.4e})",
            bytes / MIB / 1024.0,
            size / MIB / 1024.0,
            100.0 * (bytes - size) / size,
            elems,
            params
        );
        if (bytes - size).abs() > size_res / 2.0 + 1.0 {
            failures.push(format!("{id}: size {bytes} vs printed {size}"));
        }
        if (elems - params).abs() > params_res / 2.0 + 1.0 {
            failures.push(format!("{id}: params {elems} vs printed {params}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
