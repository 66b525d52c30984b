//! Every catalog entry reads through the same HF config reader as a downloaded config.json, and
//! the parameter count computed from it agrees with the model card: a wrong layer count, width
//! or expert count in the catalog shows up here.

use vramfit_model::catalog;
use vramfit_model::hf_config::spec_from_config;
use vramfit_model::layout::param_counts;

#[test]
fn every_catalog_config_reads_as_a_model_spec() {
    for m in catalog::models() {
        let spec = spec_from_config(&m.id, &m.config).unwrap_or_else(|e| panic!("{}: {e}", m.id));
        assert_eq!(spec.n_layer(), m.num_layers().unwrap(), "{}", m.id);
        assert!(!spec.attention_words().is_empty(), "{}", m.id);
    }
}

#[test]
fn computed_parameters_agree_with_the_model_cards() {
    for m in catalog::models() {
        let Some(official) = m.params_official_total else {
            continue;
        };
        let spec = spec_from_config(&m.id, &m.config).unwrap();
        let (total, active) = param_counts(&spec);
        // Cards round ("7B"), and multimodal totals include the vision tower the text spec leaves out.
        let tolerance = if m.config.get("vision_config").is_some() {
            0.15
        } else {
            0.10
        };
        let ratio = total as f64 / official as f64;
        assert!(
            (ratio - 1.0).abs() <= tolerance,
            "{}: computed {total} vs card {official}",
            m.id
        );
        if let Some(card_active) = m.params_official_active {
            let ratio = active as f64 / card_active as f64;
            assert!(
                (0.8..=1.35).contains(&ratio),
                "{}: active {active} vs card {card_active}",
                m.id
            );
        }
    }
}

#[test]
fn known_exact_counts_are_reproduced() {
    // safetensors totals: Llama-3.1-8B 8,030,261,248; Pythia-2.8B 2,775,208,960 (paper table);
    // Phi-4-mini 3,836,021,760 (count at a pinned revision, code-index id 67658155331).
    for (id, exact) in [
        ("meta-llama/Llama-3.1-8B-Instruct", 8_030_261_248u64),
        ("EleutherAI/pythia-2.8b", 2_775_208_960),
        ("microsoft/Phi-4-mini-instruct", 3_836_021_760),
    ] {
        let m = catalog::find_model(id).unwrap();
        let (total, _) = param_counts(&spec_from_config(&m.id, &m.config).unwrap());
        assert_eq!(total, exact, "{id}");
    }
}
