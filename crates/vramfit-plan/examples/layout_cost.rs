//! How long one llama.cpp layout takes with and without `--n-cpu-moe` (solver cost profile).
use std::time::Instant;
use vramfit_engine::{llamacpp, Gpu, Hardware};
fn main() {
    let m = vramfit_plan::solve::Model::load("Qwen/Qwen3-30B-A3B").unwrap();
    let g = m.ggufs(Some(&["BF16".to_string()])).unwrap();
    let w = &g[0].1;
    let hw = Hardware {
        gpus: vec![Gpu {
            name: "x".into(),
            total_bytes: 24 << 30,
            free_bytes: 24 << 30,
            bandwidth_gbps: None,
            compute_capability: None,
            unified: false,
        }],
        host_ram_bytes: None,
    };
    for args in [vec!["-c", "4096"], vec!["-c", "4096", "--n-cpu-moe", "31"]] {
        let mut a: Vec<String> = vec!["-hf".into(), "x".into()];
        a.extend(args.iter().map(|s| s.to_string()));
        let t = Instant::now();
        for _ in 0..20 {
            let cfg = llamacpp::parse("llama-server", &a, &[], None).unwrap();
            let _ = llamacpp::layout(m.spec(), w, &cfg, &hw, 4096);
        }
        println!("{:?}: {:?} per layout", args, t.elapsed() / 20);
    }
    let t = Instant::now();
    let _ = m.ggufs(Some(&["BF16".to_string()])).unwrap();
    println!("predict one quant: {:?}", t.elapsed());
}
