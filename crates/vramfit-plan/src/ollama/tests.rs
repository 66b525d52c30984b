use super::*;
use crate::request::{Engine, Goal};
use vramfit_model::catalog::find_gpu;

fn offline() {
    let dir = std::env::temp_dir().join("vramfit-plan-ollama-tests-empty-hub");
    let _ = std::fs::create_dir_all(&dir);
    std::env::set_var("HF_HUB_OFFLINE", "1");
    std::env::set_var("HF_HUB_CACHE", &dir);
}

fn gpu(id: &str) -> Gpu {
    let g = find_gpu(id).unwrap();
    Gpu::from_catalog(g)
}

fn req(context: Option<u64>, concurrency: Option<u64>, quants: &[&str]) -> Request {
    Request {
        engines: vec![Engine::Ollama],
        context,
        concurrency,
        goal: Goal::Quality,
        quants: Some(quants.iter().map(|s| s.to_string()).collect()),
        headroom: None,
    }
}

fn hw(gpus: Vec<Gpu>) -> Hardware {
    Hardware {
        gpus,
        host_ram_bytes: None,
    }
}

fn setup_of<'a>(m: &'a Model, w: &'a WeightSet, q: &str, hw: &Hardware) -> Setup<'a> {
    let r = req(None, None, &[q]);
    let h = headroom_for(m.spec(), w, hw, &r);
    Setup::new(
        m.spec(),
        w,
        q.into(),
        source_name(m, q).unwrap_or_default(),
        hw,
        h,
    )
}

#[test]
fn library_tags_and_hub_names_come_from_the_gguf_catalog() {
    offline();
    let m = Model::load("Qwen/Qwen3-8B").unwrap();
    let name = |m: &Model, q: &str| source_name(m, q);
    assert_eq!(name(&m, "Q4_K_M").as_deref(), Some("qwen3:8b"));
    assert_eq!(name(&m, "Q8_0").as_deref(), Some("qwen3:8b-q8_0"));
    // not a library name the catalog has seen: Qwen's own GGUF repo publishes Q6_K
    assert_eq!(
        name(&m, "Q6_K").as_deref(),
        Some("hf.co/Qwen/Qwen3-8B-GGUF:Q6_K")
    );
    // nobody known publishes an F16 GGUF of it: no name is invented
    assert_eq!(name(&m, "F16"), None);
    let m = Model::load("openai/gpt-oss-20b").unwrap();
    assert_eq!(name(&m, "MXFP4_MOE").as_deref(), Some("gpt-oss:20b"));
    let m = Model::load("mistralai/Mistral-7B-v0.1").unwrap();
    assert_eq!(name(&m, "Q4_K_M"), None);
}

#[test]
fn every_knob_is_pinned_in_the_command_and_modelfile() {
    offline();
    let m = Model::load("Qwen/Qwen3-8B").unwrap();
    let h = hw(vec![gpu("rtx-4090")]);
    let p = &plans(&m, &h, &req(None, None, &["Q4_K_M"]))[0];
    for f in [
        "OLLAMA_FLASH_ATTENTION=1",
        "OLLAMA_KV_CACHE_TYPE=",
        "OLLAMA_NUM_PARALLEL=1",
        "ollama serve &",
        "ollama create qwen3-8b-vramfit -f Modelfile && ollama run qwen3-8b-vramfit",
    ] {
        assert!(p.command.contains(f), "{} lacks {f}", p.command);
    }
    let mf = &p
        .settings
        .iter()
        .find(|s| s.knob == MODELFILE)
        .unwrap()
        .value;
    for f in [
        "'FROM qwen3:8b'",
        "'PARAMETER num_ctx 40960'",
        "'PARAMETER num_gpu 37'",
        "'PARAMETER num_batch 512'",
    ] {
        assert!(mf.contains(f), "{mf} lacks {f}");
    }
    assert!(
        p.check.starts_with("printf '%s\\n' 'FROM qwen3:8b'"),
        "{}",
        p.check
    );
    assert!(
        p.check.contains("-- 'OLLAMA_FLASH_ATTENTION=1 "),
        "{}",
        p.check
    );
    assert_eq!(p.max_model_len, 40960);
}

/// The context boundary is exact in steps of 256, the slot boundary in steps of 1.
#[test]
fn boundaries_are_exact() {
    offline();
    let m = Model::load("Qwen/Qwen3-14B").unwrap();
    let h = hw(vec![gpu("rtx-4060-ti-16gb")]);
    let ggufs = m.ggufs(Some(&["Q6_K".to_string()])).unwrap();
    let s = setup_of(&m, &ggufs[0].1, "Q6_K", &h);
    let mut k = Knobs {
        kv: GgmlType::F16,
        np: 1,
        num_ctx: 4096,
        num_gpu: s.all_layers(),
    };
    let c = s.max_ctx(&k);
    assert!(
        c > 4096 && c < m.spec().n_ctx_train && c.is_multiple_of(256),
        "{c}"
    );
    k.num_ctx = c;
    assert!(s.fits(&k));
    k.num_ctx = c + 1;
    assert!(
        !s.fits(&k),
        "num_ctx {} pads to the next 256 and fails",
        c + 1
    );
    k.num_ctx = 4096;
    let n = s.max_np(&k);
    assert!(n > 1);
    k.np = n;
    assert!(s.fits(&k));
    k.np = n + 1;
    assert!(!s.fits(&k));
}

/// A 70B model on one 24 GB card: not every layer fits, so num_gpu holds the most that do.
#[test]
fn partial_offload_pins_num_gpu() {
    offline();
    let m = Model::load("meta-llama/Llama-3.3-70B-Instruct").unwrap();
    let h = hw(vec![gpu("rtx-4090")]);
    let ps = plans(&m, &h, &req(Some(8192), None, &["Q4_K_M"]));
    assert!(!ps.is_empty());
    for p in &ps {
        let ngl: u64 = p
            .settings
            .iter()
            .find(|s| s.knob == "num_gpu")
            .unwrap()
            .value
            .parse()
            .unwrap();
        assert!(ngl > 10 && ngl < 81, "{ngl}");
        assert!(p.host.weights_bytes > 10 << 30);
        assert_eq!(p.max_model_len, 8192);
        assert!(p.est_tokens_per_s < 10.0);
    }
}

#[test]
fn several_gpus_spread() {
    offline();
    let m = Model::load("Qwen/Qwen3-32B").unwrap();
    let h = hw(vec![gpu("rtx-3090"), gpu("rtx-3090")]);
    let ps = plans(&m, &h, &req(None, None, &["Q4_K_M"]));
    let p = &ps[0];
    assert_eq!(p.env["OLLAMA_SCHED_SPREAD"], "1");
    assert_eq!(p.devices.len(), 2);
    assert!(p.devices.iter().all(|d| d.weights_bytes > 5 << 30));
}

#[test]
fn one_slot_architectures() {
    offline();
    let m = Model::load("Qwen/Qwen3-Next-80B-A3B-Instruct").unwrap();
    let h = hw(vec![gpu("h100-sxm")]);
    let ps = plans(&m, &h, &req(None, None, &["Q4_K_M"]));
    assert!(!ps.is_empty() && ps.iter().all(|p| p.max_concurrency == 1));
    assert!(plans(&m, &h, &req(None, Some(2), &["Q4_K_M"])).is_empty());
}

#[test]
fn table_rows_are_quants() {
    offline();
    let m = Model::load("Qwen/Qwen3-8B").unwrap();
    let (rows, cells) = table_cells(&m, &[gpu("rtx-4060"), gpu("rtx-4090")], None, None).unwrap();
    assert_eq!(rows, ["F16", "Q8_0", "Q4_K_M"]);
    assert_eq!(cells.len(), 6);
    let c = |g: &str, q: &str| {
        cells
            .iter()
            .find(|c| c.gpu.contains(g) && c.quant == q)
            .unwrap()
            .clone()
    };
    assert_eq!(c("4060", "F16").max_context, None);
    assert_eq!(c("4090", "Q4_K_M").max_context, Some(40960));
    let (_, at) =
        table_cells(&m, &[gpu("rtx-4090")], Some(&["Q4_K_M".into()]), Some(8192)).unwrap();
    assert!(at[0].max_concurrency.unwrap() > 4);
    let e = table_cells(&m, &[gpu("rtx-4090")], Some(&["Q9_Z".into()]), None).unwrap_err();
    assert!(e.to_string().contains("Q9_Z"), "{e}");
}
