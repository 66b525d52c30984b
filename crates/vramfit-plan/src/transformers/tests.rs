use super::*;
use crate::request::{Engine, Goal};
use vramfit_model::catalog::find_gpu;

fn offline() {
    let dir = std::env::temp_dir().join("vramfit-plan-transformers-tests-empty-hub");
    let _ = std::fs::create_dir_all(&dir);
    std::env::set_var("HF_HUB_OFFLINE", "1");
    std::env::set_var("HF_HUB_CACHE", &dir);
}

fn gpu(id: &str) -> Gpu {
    let g = find_gpu(id).unwrap();
    Gpu::from_catalog(g)
}

fn hw(gpus: Vec<Gpu>) -> Hardware {
    Hardware {
        gpus,
        host_ram_bytes: None,
    }
}

fn req(context: Option<u64>, concurrency: Option<u64>) -> Request {
    Request {
        engines: vec![Engine::Transformers],
        context,
        concurrency,
        goal: Goal::Quality,
        quants: None,
        headroom: None,
    }
}

fn by_weights<'a>(ps: &'a [Plan], name: &str) -> Option<&'a Plan> {
    ps.iter().find(|p| p.settings[0].value == name)
}

#[test]
fn weight_names() {
    assert_eq!(Weights::parse("bf16").unwrap(), Weights::Half);
    assert_eq!(Weights::parse("BNB4").unwrap(), Weights::Nf4);
    assert_eq!(Weights::parse("int8").unwrap(), Weights::Int8);
    let e = Weights::parse("Q4_K_M").unwrap_err().to_string();
    assert!(e.contains("'Q4_K_M'") && e.contains("NF4"), "{e}");
}

/// The longest total is exact to the token, the batch to the sequence.
#[test]
fn boundaries_are_exact() {
    offline();
    let m = Model::load("Qwen/Qwen3-8B").unwrap();
    let h = hw(vec![gpu("rtx-4090")]);
    let s = Setup::new(m.spec(), m.repo(), &h, headroom::transformers(&h));
    let k = Knobs {
        weights: Weights::Half,
        batch: 1,
        prompt: 3584,
        new_tokens: 512,
        max_memory: None,
    };
    let t = s.max_total(&k);
    assert!(t > 4096 && t < m.spec().n_ctx_train, "{t}");
    assert!(s.fits(&k.with_total(t)));
    assert!(!s.fits(&k.with_total(t + 1)));
    let b = s.max_batch(&k);
    assert!(b > 1);
    let mut kk = k.clone();
    kk.batch = b;
    assert!(s.fits(&kk));
    kk.batch = b + 1;
    assert!(!s.fits(&kk));
}

#[test]
fn one_24gb_card() {
    offline();
    let m = Model::load("Qwen/Qwen3-8B").unwrap();
    let ps = plans(&m, &hw(vec![gpu("rtx-4090")]), &req(None, None));
    assert_eq!(ps.len(), 3);
    let bf16 = by_weights(&ps, "BF16").unwrap();
    assert!(bf16.command.starts_with(
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True transformers Qwen/Qwen3-8B --dtype bf16"
    ));
    assert!(bf16.command.ends_with("--device-map cuda:0"));
    assert_eq!(bf16.max_model_len, bf16.max_context);
    assert!(bf16.max_model_len > 20000);
    let nf4 = by_weights(&ps, "NF4").unwrap();
    assert!(nf4
        .command
        .contains("--load-in-4bit --bnb-4bit-quant-type nf4 --bnb-4bit-use-double-quant"));
    assert!(nf4.weight_bits < 6.0 && nf4.est_tokens_per_s > bf16.est_tokens_per_s);
    let py = &nf4
        .settings
        .iter()
        .find(|s| s.knob == "python")
        .unwrap()
        .value;
    assert!(py.contains("bnb_4bit_use_double_quant=True"), "{py}");
}

/// An 8 GB card: bf16 weights go partly to the CPU with pinned budgets; bitsandbytes cannot
/// offload, so its plans keep everything on the GPU.
#[test]
fn eight_gb_card_offloads_bf16() {
    offline();
    let m = Model::load("Qwen/Qwen3-8B").unwrap();
    let h = hw(vec![gpu("rtx-4060")]);
    let ps = plans(&m, &h, &req(None, None));
    let bf16 = by_weights(&ps, "BF16").unwrap();
    assert!(
        bf16.command.contains("--device-map auto --max-memory 0:"),
        "{}",
        bf16.command
    );
    assert!(bf16.host.weights_bytes > 4 << 30);
    assert_eq!(bf16.max_model_len, 4096);
    assert!(bf16.est_tokens_per_s < 5.0);
    for p in ps.iter().filter(|p| p.command.contains("--load-in")) {
        assert_eq!(p.host.weights_bytes, 0);
        assert!(p.command.ends_with("--device-map cuda:0"));
    }
    // a context no weight precision reaches with the weights on the GPU
    assert!(plans(&m, &h, &req(Some(40960), Some(8)))
        .iter()
        .all(|p| p.host.weights_bytes > 0));
}

#[test]
fn several_gpus_get_pinned_budgets() {
    offline();
    let m = Model::load("Qwen/Qwen3-32B").unwrap();
    let h = hw(vec![gpu("rtx-3090"), gpu("rtx-3090")]);
    let ps = plans(&m, &h, &req(Some(8192), None));
    let nf4 = by_weights(&ps, "NF4").unwrap();
    assert!(nf4.command.contains("--max-memory 0:"), "{}", nf4.command);
    assert!(nf4.command.contains(",1:"), "{}", nf4.command);
    assert!(nf4.devices.iter().all(|d| d.weights_bytes > 4 << 30));
    assert_eq!(nf4.max_model_len, 8192);
}

#[test]
fn pre_ampere_runs_fp16() {
    offline();
    let m = Model::load("Qwen/Qwen3-4B").unwrap();
    let ps = plans(&m, &hw(vec![gpu("t4")]), &req(None, None));
    let half = by_weights(&ps, "FP16").unwrap();
    assert!(half.command.contains("--dtype fp16"));
}

#[test]
fn table_rows() {
    offline();
    let m = Model::load("Qwen/Qwen3-8B").unwrap();
    let (rows, cells) =
        table_cells(&m, &[gpu("rtx-4060"), gpu("a100-sxm-80gb")], None, None).unwrap();
    assert_eq!(rows, ["BF16", "INT8", "NF4"]);
    let c = |g: &str, q: &str| {
        cells
            .iter()
            .find(|c| c.gpu.contains(g) && c.quant == q)
            .unwrap()
            .clone()
    };
    assert_eq!(c("4060", "BF16").max_context, None);
    assert!(c("4060", "NF4").max_context.is_some());
    assert_eq!(c("A100", "BF16").max_context, Some(40960));
    let (_, at) = table_cells(
        &m,
        &[gpu("a100-sxm-80gb")],
        Some(&["NF4".into()]),
        Some(8192),
    )
    .unwrap();
    assert!(at[0].max_concurrency.unwrap() > 8);
    assert!(table_cells(&m, &[gpu("rtx-4090")], Some(&["Q4_K_M".into()]), None).is_err());
}
