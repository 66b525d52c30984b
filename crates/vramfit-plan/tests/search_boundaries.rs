//! The solver's searches (`max_ctx`, `max_np`, `min_cpu_moe`, `max_ngl`) lay the model out from
//! tensors read once per quant; each answer they give must be the exact boundary when every
//! probe is evaluated from scratch, as `vramfit check` does: the printed command parsed again
//! and laid out with `llamacpp::layout`.

use vramfit_engine::{llamacpp, Gpu, Hardware};
use vramfit_model::GgmlType;
use vramfit_plan::headroom;
use vramfit_plan::llamacpp::{Knobs, Setup};
use vramfit_plan::solve::Model;

fn offline() {
    let dir = std::env::temp_dir().join("vramfit-plan-tests-empty-hub");
    let _ = std::fs::create_dir_all(&dir);
    std::env::set_var("HF_HUB_OFFLINE", "1");
    std::env::set_var("HF_HUB_CACHE", &dir);
}

fn hw(free_gib: &[u64]) -> Hardware {
    Hardware {
        gpus: free_gib
            .iter()
            .map(|g| Gpu {
                name: format!("{g} GiB"),
                total_bytes: g << 30,
                free_bytes: g << 30,
                bandwidth_gbps: None,
                compute_capability: None,
                unified: false,
            })
            .collect(),
        host_ram_bytes: None,
    }
}

/// Fits, by a layout from scratch of the command `s` prints for `k`.
fn fresh_fits(s: &Setup, k: &Knobs) -> bool {
    let argv = s.argv(k);
    let cfg = llamacpp::parse(&argv[0], &argv[1..], &[], None).unwrap();
    llamacpp::layout(s.spec, s.weights, &cfg, &s.hw, k.ctx * k.np).fits(&s.hw.gpus)
}

#[test]
fn search_answers_are_the_boundaries_of_fresh_layouts() {
    offline();
    let cases: &[(&str, &[&str], &[u64])] = &[
        ("Qwen/Qwen3-30B-A3B", &["Q8_0", "Q4_K_M"], &[24]),
        ("Qwen/Qwen3-30B-A3B", &["Q6_K"], &[12, 8]),
        (
            "meta-llama/Llama-3.1-8B-Instruct",
            &["BF16", "Q4_K_M"],
            &[8],
        ),
        ("deepseek-ai/DeepSeek-V2-Lite", &["Q8_0"], &[10]),
        ("Qwen/Qwen3-0.6B", &["BF16"], &[2]),
        ("google/gemma-3-4b-it", &["Q4_K_M"], &[3, 3]),
    ];
    let mut checked = 0;
    for (id, quants, gib) in cases {
        let m = Model::load(id).unwrap();
        let quants: Vec<String> = quants.iter().map(|q| q.to_string()).collect();
        for (q, w) in m.ggufs_any(Some(&quants)).unwrap() {
            let hw = hw(gib);
            let h = headroom::llamacpp(&w, &hw);
            let s = Setup::new(m.spec(), &w, m.llama_args(&q), q.clone(), &hw, h);
            for kv in [GgmlType::F16, GgmlType::Q4_0] {
                for np in [1u64, 3] {
                    let base = Knobs {
                        kv,
                        np,
                        ctx: 4096,
                        ngl: None,
                        n_cpu_moe: None,
                        tensor_split: s.split(),
                    };
                    let at = |f: &dyn Fn(&mut Knobs)| {
                        let mut k = base.clone();
                        f(&mut k);
                        fresh_fits(&s, &k)
                    };
                    let what = format!("{id} {q} on {gib:?} GiB, {kv} x{np}");
                    assert_eq!(s.fits(&base), at(&|_| ()), "{what}: fits");
                    let c = s.max_ctx(&base);
                    let top = (s.spec.n_ctx_train / 256).max(1) * 256;
                    assert!(c == 0 || at(&|k| k.ctx = c), "{what}: max_ctx {c}");
                    assert!(c == top || !at(&|k| k.ctx = c + 256), "{what}: max_ctx {c}");
                    let n = s.max_np(&base);
                    assert!(n == 0 || at(&|k| k.np = n), "{what}: max_np {n}");
                    assert!(n == 256 || !at(&|k| k.np = n + 1), "{what}: max_np {n}");
                    if let Some(g) = s.max_ngl(&base) {
                        let all = s.n_blocks + 1;
                        assert!(at(&|k| k.ngl = Some(g)), "{what}: max_ngl {g}");
                        assert!(g == all || !at(&|k| k.ngl = Some(g + 1)), "{what}: ngl {g}");
                    }
                    if s.spec.is_moe() {
                        if let Some(e) = s.min_cpu_moe(&base, s.n_blocks) {
                            // the knobs the planner prints for n experts' layers in host RAM
                            // (on several GPUs with the layer split that goes with n)
                            let moe = |n: u64| fresh_fits(&s, &s.with_cpu_moe(&base, n));
                            assert!(moe(e), "{what}: cpu_moe {e}");
                            assert!(e == 0 || !moe(e - 1), "{what}: cpu_moe {e}");
                        }
                    }
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 30, "{checked}");
}
