//! The embedded GPU catalog: it parses, its numbers are plausible, and loose names find the
//! right card (and only that card).

use vramfit_model::catalog::lookup::{find_gpu_in, gpu_tokens};
use vramfit_model::catalog::{self, find_gpu};

const GIB: f64 = (1u64 << 30) as f64;

fn id_of(query: &str) -> String {
    match find_gpu(query) {
        Ok(g) => g.id.clone(),
        Err(e) => panic!("{query}: {e}"),
    }
}

#[test]
fn embedded_gpus_parse_with_plausible_numbers() {
    let gpus = catalog::gpus();
    assert!(gpus.len() >= 60, "only {} GPUs", gpus.len());
    for g in gpus {
        let marketing = g.memory_marketing_gb * GIB;
        let ratio = g.memory_bytes as f64 / marketing;
        // ECC (1/16) and the driver's reserve make it smaller (A10G: 22.06 of 24), never larger.
        assert!(
            (0.9..=1.0).contains(&ratio),
            "{}: {} bytes for {} GB",
            g.id,
            g.memory_bytes,
            g.memory_marketing_gb
        );
        assert!(
            g.bandwidth_gbps > 50.0 && g.bandwidth_gbps < 10_000.0,
            "{} bandwidth",
            g.id
        );
        assert!(!g.sources.is_empty(), "{} has no source", g.id);
        assert!(!g.fp4 || g.fp8, "{}: fp4 without fp8", g.id);
        assert!(!g.fp8 || g.bf16, "{}: fp8 without bf16", g.id);
        match g.vendor.as_str() {
            "NVIDIA" => {
                let cc: f64 = g
                    .compute_capability
                    .as_deref()
                    .unwrap_or("x")
                    .parse()
                    .unwrap_or(0.0);
                assert!((6.0..=13.0).contains(&cc), "{} compute capability", g.id);
                assert_eq!(g.bf16, cc >= 8.0, "{}: bf16 needs sm_80", g.id);
            }
            "AMD" => assert!(
                g.compute_capability
                    .as_deref()
                    .is_some_and(|c| c.starts_with("gfx")),
                "{}",
                g.id
            ),
            "Apple" => assert!(g.unified_memory, "{}", g.id),
            _ => {}
        }
    }
}

#[test]
fn real_totals_are_the_ones_engines_print() {
    let mib = |q: &str| find_gpu(q).unwrap().memory_bytes >> 20;
    // the CUDA-visible totals vLLM multiplies by gpu_memory_utilization (Linux)
    assert_eq!(mib("RTX 4090"), 24115); // 23.55 GiB: vllm#13061's printed components at 0.98
    assert_eq!(mib("RTX 3090"), 24146); // vLLM total_gpu_memory=23.58GiB (vllm#10517)
    assert_eq!(mib("RTX 5090"), 32607); // vLLM 31.84 GiB
    assert_eq!(mib("L40S"), 45486); // vLLM 0.10.2 on 8x L40S: 44.42 GiB (nvidia-smi 46068 MiB)
    assert_eq!(mib("A100 80GB"), 81152); // vLLM 79.25 GiB
    assert_eq!(mib("T4"), 15094); // vLLM total_gpu_memory (14.74GiB), a Colab T4
    assert_eq!(mib("L4"), 22559); // PyTorch 'total capacity of 22.03 GiB'; vLLM budgets 0.45 x 22.03
    assert!(!find_gpu("4090").unwrap().memory_estimated);
}

#[test]
fn a_malformed_catalog_is_an_error_not_a_panic() {
    assert!(catalog::parse_gpus("[{\"id\": \"x\"}]").is_err());
    assert!(catalog::parse_gpus("{").is_err());
}

#[test]
fn every_id_and_alias_finds_its_own_entry_and_names_find_theirs_or_a_twin() {
    let gpus = catalog::gpus();
    for (i, g) in gpus.iter().enumerate() {
        assert_eq!(id_of(&g.id), g.id, "id {}", g.id);
        for a in &g.aliases {
            assert_eq!(id_of(a), g.id, "alias {a}");
        }
        // The driver prints one name for some twins (RTX 4060 Ti 8 GB and 16 GB): the first wins.
        let first_with_name = gpus
            .iter()
            .position(|o| gpu_tokens(&o.name) == gpu_tokens(&g.name))
            .unwrap();
        assert_eq!(id_of(&g.name), gpus[first_with_name].id, "name {}", g.name);
        if first_with_name == i {
            assert_eq!(id_of(&g.name), g.id);
        }
    }
}

#[test]
fn no_alias_names_two_entries() {
    let gpus = catalog::gpus();
    for g in gpus {
        for a in g.aliases.iter().chain(std::iter::once(&g.id)) {
            let t = gpu_tokens(a);
            for o in gpus.iter().filter(|o| o.id != g.id) {
                let clash = std::iter::once(&o.id)
                    .chain(&o.aliases)
                    .any(|n| gpu_tokens(n) == t);
                assert!(!clash, "'{a}' of {} also names {}", g.id, o.id);
            }
        }
    }
}

#[test]
fn loose_names_find_the_intended_card() {
    let cases = [
        ("4090", "rtx-4090"),
        ("rtx4090", "rtx-4090"),
        ("RTX 4090", "rtx-4090"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("rtx 4090 24gb", "rtx-4090"),
        ("4090 laptop", "rtx-4090-laptop"),
        ("H100", "h100-sxm"),
        ("h100-sxm", "h100-sxm"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("H100 PCIe", "h100-pcie"),
        ("A100", "a100-sxm-80gb"),
        ("A100-80G", "a100-sxm-80gb"),
        ("A100 80GB", "a100-sxm-80gb"),
        ("a100 40gb", "a100-sxm-40gb"),
        ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
        ("V100 16GB", "v100-sxm2-16gb"),
        ("Tesla V100-PCIE-16GB", "v100-pcie-16gb"),
        ("RTX PRO 6000 Blackwell", "rtx-pro-6000-blackwell"),
        ("L40S", "l40s"),
        ("L40", "l40"),
        ("5070 Ti", "rtx-5070-ti"),
        ("5070", "rtx-5070"),
        ("3090", "rtx-3090"),
        ("3090 Ti", "rtx-3090-ti"),
        ("RTX 3090 Ti", "rtx-3090-ti"),
        ("A10G", "a10g"),
        ("A10", "a10"),
        ("4060 Ti", "rtx-4060-ti-16gb"),
        ("4060 Ti 8GB", "rtx-4060-ti-8gb"),
        ("A6000", "rtx-a6000"),
        ("RTX 6000 Ada", "rtx-6000-ada"),
        ("MI300X", "mi300x"),
        ("RTX 2060 12GB", "rtx-2060-12gb"),
        ("RTX 2060", "rtx-2060"),
        ("AMD Instinct MI250X/MI250", "mi250x"),
        ("7900 XTX", "rx-7900-xtx"),
        ("7900 XT", "rx-7900-xt"),
        ("M3 Max", "apple-m3-max"),
        ("Apple M2 Ultra", "apple-m2-ultra"),
        ("DGX Spark", "dgx-spark-gb10"),
        ("GB200", "gb200"),
        ("B200", "b200"),
        ("Intel(R) Arc(TM) A770 Graphics", "intel-arc-a770-16gb"),
    ];
    for (query, want) in cases {
        assert_eq!(id_of(query), want, "{query}");
    }
}

#[test]
fn a_variant_name_never_matches_its_sibling() {
    assert_ne!(id_of("3090 Ti"), "rtx-3090");
    assert_ne!(id_of("3090"), "rtx-3090-ti");
    assert_ne!(id_of("4070 Ti Super"), "rtx-4070-ti");
    assert_eq!(id_of("4070 Ti Super"), "rtx-4070-ti-super");
    assert!(find_gpu("RTX 3090 Ti Super").is_err(), "no such card");
}

#[test]
fn unknown_names_list_the_five_closest() {
    let err = find_gpu("RTX 9999").unwrap_err();
    assert_eq!(err.suggestions.len(), 5);
    let msg = err.to_string();
    assert!(msg.contains("'RTX 9999'"), "{msg}");
    assert!(msg.contains("RTX"), "{msg}");
    assert!(!msg.contains('\n'));
    let near = find_gpu("H1OO").unwrap_err();
    assert!(
        near.suggestions.iter().any(|s| s.contains("H100")),
        "{:?}",
        near.suggestions
    );
    let empty = find_gpu("  ").unwrap_err();
    assert!(empty.to_string().contains("empty"));
    assert!(find_gpu_in(&[], "4090").is_err());
}

/// Device names exactly as real engine logs print them (../shared/data/dev/llamacpp_logs.dev.jsonl
/// `gpus[].name`, vllm_logs.dev.jsonl) find the card they name, and memory engines saw there matches.
#[test]
fn names_printed_in_real_logs_find_their_card() {
    let cases = [
        ("NVIDIA GeForce RTX 3090 Ti", "rtx-3090-ti"),
        ("NVIDIA GeForce RTX 3090", "rtx-3090"),
        ("NVIDIA GeForce RTX 4080", "rtx-4080"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("NVIDIA GeForce RTX 5090", "rtx-5090"),
        ("NVIDIA RTX A6000", "rtx-a6000"),
        (
            "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
            "rtx-pro-6000-blackwell",
        ),
        ("Tesla V100-PCIE-16GB", "v100-pcie-16gb"),
        ("NVIDIA GeForce GTX 1080 Ti", "gtx-1080-ti"),
        ("NVIDIA GeForce RTX 3070", "rtx-3070"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA H20", "h20"),
        ("NVIDIA A10G", "a10g"),
    ];
    for (name, want) in cases {
        assert_eq!(id_of(name), want, "{name}");
    }
    // llama.cpp memory breakdown totals: GTX 1080 Ti 11165 MiB, RTX 3070 8192 MiB; vLLM: RTX PRO 6000 95.59 GiB.
    assert_eq!(
        find_gpu("NVIDIA GeForce GTX 1080 Ti").unwrap().memory_bytes >> 20,
        11165
    );
    assert_eq!(
        find_gpu("NVIDIA GeForce RTX 3070").unwrap().memory_bytes >> 20,
        8192
    );
    let pro = find_gpu("NVIDIA RTX PRO 6000 Blackwell Workstation Edition").unwrap();
    assert!((pro.memory_bytes as f64 / GIB - 95.59).abs() < 0.01);
}
