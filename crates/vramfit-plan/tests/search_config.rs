//! The searches lay out `--n-cpu-moe N` as one equivalent `-ot` regex; the printed command
//! uses the flag itself. Both must put every byte in the same place.

use vramfit_engine::{llamacpp, Gpu, Hardware};
use vramfit_model::GgmlType;
use vramfit_plan::headroom;
use vramfit_plan::llamacpp::{Knobs, Setup};
use vramfit_plan::solve::Model;

#[test]
fn n_cpu_moe_search_config_lays_out_like_the_flag() {
    let dir = std::env::temp_dir().join("vramfit-plan-tests-empty-hub");
    let _ = std::fs::create_dir_all(&dir);
    std::env::set_var("HF_HUB_OFFLINE", "1");
    std::env::set_var("HF_HUB_CACHE", &dir);
    let m = Model::load("Qwen/Qwen3-30B-A3B").unwrap();
    let g = m.ggufs(Some(&["Q8_0".to_string()])).unwrap();
    let (q, w) = &g[0];
    let hw = Hardware {
        gpus: vec![
            Gpu {
                name: "a".into(),
                total_bytes: 24 << 30,
                free_bytes: 24 << 30,
                bandwidth_gbps: None,
                compute_capability: None,
                unified: false,
            };
            2
        ],
        host_ram_bytes: None,
    };
    let s = Setup::new(
        m.spec(),
        w,
        m.llama_args(q),
        q.clone(),
        &hw,
        headroom::fixed(&hw, 0),
    );
    for n in [1u64, 9, 10, 31, 48] {
        let k = Knobs {
            kv: GgmlType::Q8_0,
            np: 2,
            ctx: 8192,
            ngl: None,
            n_cpu_moe: Some(n),
            tensor_split: s.split(),
        };
        let a = llamacpp::layout(m.spec(), w, &s.config(&k), &s.hw, 16384);
        let b = llamacpp::layout(m.spec(), w, &s.search_config(&k), &s.hw, 16384);
        assert_eq!(a.weights, b.weights, "n_cpu_moe {n}");
        assert_eq!(a.compute, b.compute, "n_cpu_moe {n}");
        assert_eq!(a.kv, b.kv, "n_cpu_moe {n}");
        assert_eq!(a.host_weights, b.host_weights, "n_cpu_moe {n}");
        assert!(a.host_weights > 0);
    }
}
