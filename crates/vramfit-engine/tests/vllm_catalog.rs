//! vLLM weight bytes against parameter counts, over every model of the embedded catalog: an
//! unquantized checkpoint on one GPU loads two bytes per parameter (the catalog's counts are
//! checked against the model cards in vramfit-model).

use vramfit_engine::cmdline::Command;
use vramfit_engine::vllm;
use vramfit_engine::vllm::weights::{pp_layer_ranges, predicted_stage_bytes};
use vramfit_model::hf_config::spec_from_config;
use vramfit_model::{catalog, layout};

#[test]
fn unquantized_weights_are_two_bytes_per_parameter() {
    let cfg = vllm::parse(
        &Command::parse(&["vllm", "serve", "m", "--dtype", "bfloat16"]).unwrap(),
        None,
    )
    .unwrap();
    let mut worst = Vec::new();
    for m in catalog::models() {
        let Ok(spec) = spec_from_config(&m.id, &m.config) else {
            continue;
        };
        if spec.quant.is_some() {
            continue;
        }
        let ranges = pp_layer_ranges(spec.n_layer(), 1, None).unwrap();
        let bytes = predicted_stage_bytes(&spec, &cfg, &ranges)[0] as f64;
        let params = layout::param_counts(&spec).0 as f64 + spec.vision_params as f64;
        let err = bytes / 2.0 / params - 1.0;
        worst.push((err, m.id.clone()));
    }
    worst.sort_by(|a, b| b.0.abs().total_cmp(&a.0.abs()));
    for (e, id) in worst.iter().take(15) {
        println!("{:>+7.2}%  {id}", 100.0 * e);
    }
    // Nemotron-H / Nemotron-3-Nano come out 26–47 % high: their ModelSpec marks the relu² MLP
    // as gated (a hf_config matter), which doubles the up projection here
    let off: Vec<_> = worst.iter().filter(|(e, _)| e.abs() > 0.01).collect();
    assert!(worst.len() > 20);
    assert!(
        off.len() * 20 <= worst.len(),
        "more than 5 % of catalog models are off by > 1 %: {off:?}"
    );
}
