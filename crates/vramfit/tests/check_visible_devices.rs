//! A command pasted from a bigger machine keeps its `CUDA_VISIBLE_DEVICES`: with `--gpu`
//! describing only the GPU it runs on, the verdict is the one GPU's, never "0 GPU(s)"; a list
//! naming more GPUs than are described is refused in a line that names the list.
//! (Found scoring the fifth held-apart SGLang set: `CUDA_VISIBLE_DEVICES=2` on one MI355X.)

mod common;

fn lines(v: &serde_json::Value, key: &str) -> Vec<String> {
    v[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn pasted_visible_devices_with_one_described_gpu() {
    for (gpu, argv) in [
        (
            "MI355X",
            "CUDA_VISIBLE_DEVICES=2 python -m sglang.launch_server --model-path Qwen/Qwen3-0.6B --mem-fraction-static 0.6",
        ),
        (
            "H100",
            "CUDA_VISIBLE_DEVICES=3 vllm serve Qwen/Qwen3-8B --max-model-len 8192",
        ),
    ] {
        let (_, v, err) = common::check_on(gpu, argv);
        assert_eq!(v["verdict"], "fits", "{gpu} {argv}: {v} {err}");
        assert_eq!(v["devices"].as_array().unwrap().len(), 1, "{v}");
        assert!(
            lines(&v, "notes")
                .iter()
                .any(|n| n.contains("names GPUs past the 1 described")),
            "{v}"
        );
    }
    let (_, v, _) = common::check_on(
        "H100",
        "CUDA_VISIBLE_DEVICES=2,3 vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2",
    );
    assert_eq!(v["verdict"], "does_not_fit", "{v}");
    assert!(
        lines(&v, "problems")
            .iter()
            .any(|p| p.contains("CUDA_VISIBLE_DEVICES=2,3 names a GPU past the 1 described")),
        "{v}"
    );
}
