use super::*;

fn launch(s: &str) -> Launch {
    Launch::parse(&s.split_whitespace().map(String::from).collect::<Vec<_>>()).unwrap()
}

fn hw(free_gib: &[u64]) -> Hardware {
    let mut h =
        crate::gpu_spec::hardware(Some(&format!("{}x 80GiB", free_gib.len())), None).unwrap();
    for (g, f) in h.gpus.iter_mut().zip(free_gib) {
        g.free_bytes = f << 30;
    }
    h
}

#[test]
fn ranks_from_flags() {
    let l = launch("vllm serve m -tp 4 --pipeline-parallel-size=2");
    assert_eq!(ranks(&l).unwrap().world(), 8);
    let l = launch("python3 -m sglang.launch_server --model-path m --tp 2 --dp 2");
    assert_eq!(ranks(&l).unwrap().world(), 4);
    let l = launch(
        "python3 -m sglang.launch_server --model-path m --tp 4 --dp 2 --enable-dp-attention",
    );
    assert_eq!(ranks(&l).unwrap().world(), 4);
    let e = ranks(&launch("vllm serve m -tp zero")).unwrap_err();
    assert!(e.contains("-tensor-parallel-size 'zero'"), "{e}");
}

#[test]
fn the_group_is_the_visible_gpus_in_order_and_the_binding_one_has_least_free() {
    // the dev log vllm-h2-010: 8 GPUs, CUDA_VISIBLE_DEVICES=1,7, TP 2
    let l = launch("CUDA_VISIBLE_DEVICES=1,7 vllm serve m --tensor-parallel-size 2");
    let g = group(&l, Some(&hw(&[1, 70, 2, 3, 4, 5, 6, 60]))).unwrap();
    let idx: Vec<usize> = g.gpus.iter().map(|g| g.index).collect();
    assert_eq!(idx, vec![1, 7]);
    assert_eq!(g.binding_gpu, Some(7));
    // without the variable: the first TP × PP GPUs
    let l = launch("vllm serve m -tp 2 -pp 2");
    let g = group(&l, Some(&hw(&[70, 70, 10, 70, 5]))).unwrap();
    assert_eq!(g.gpus.len(), 4);
    assert_eq!(g.binding_gpu, Some(2));
    // too few visible, a GPU that is not there, UUIDs: one-line errors
    let l = launch("CUDA_VISIBLE_DEVICES=0 vllm serve m -tp 2");
    assert!(group(&l, Some(&hw(&[70, 70])))
        .unwrap_err()
        .contains("needs 2 GPUs"));
    let l = launch("CUDA_VISIBLE_DEVICES=0,9 vllm serve m -tp 2");
    assert!(group(&l, Some(&hw(&[70, 70])))
        .unwrap_err()
        .contains("GPU 9"));
    let l = launch("CUDA_VISIBLE_DEVICES=GPU-3f2a vllm serve m");
    assert!(group(&l, Some(&hw(&[70]))).unwrap_err().contains("UUID"));
    // CUDA's rule: only the devices before an invalid entry are visible (`-1` hides all)
    let l = launch("CUDA_VISIBLE_DEVICES=1,-1,0 vllm serve m");
    assert_eq!(visible(&l).unwrap(), Some(vec![1]));
    let l = launch("CUDA_VISIBLE_DEVICES=-1 vllm serve m");
    assert!(group(&l, Some(&hw(&[70])))
        .unwrap_err()
        .contains("0 are visible"));
    // no GPUs known: the ranks only
    let g = group(&launch("vllm serve m -tp 2"), None).unwrap();
    assert!(g.gpus.is_empty() && g.binding_gpu.is_none());
}

#[test]
fn vllm_workers_and_the_binding_one() {
    // line shapes of real vLLM TP/PP logs (mp workers `VllmWorker TPn`, `Worker_PPn`, Ray
    // workers with their node's address); the numbers differ per worker
    let log = "\
(VllmWorker TP0 pid=3974) INFO 09-03 02:12:25 [gpu_worker.py:276] Available KV cache memory: 31.83 GiB
(VllmWorker TP1 pid=3975) INFO 09-03 02:12:25 [gpu_worker.py:276] Available KV cache memory: 29.50 GiB
(EngineCore_0 pid=3902) INFO 09-03 02:12:26 [kv_cache_utils.py:849] GPU KV cache size: 1,192,160 tokens
(EngineCore_0 pid=3902) INFO 09-03 02:12:26 [kv_cache_utils.py:849] GPU KV cache size: 1,104,768 tokens
(EngineCore_0 pid=1159) (RayWorkerWrapper pid=345, ip=10.42.9.225) INFO 09-10 23:48:38 [gpu_worker.py:276] Available KV cache memory: 45.32 GiB
(Worker_PP0 pid=77) INFO 01-01 00:00:00 [gpu_worker.py:1] Available KV cache memory: -0.41 GiB
";
    let r = readings(log, false);
    let labels: Vec<&str> = r.iter().map(|x| x.rank.as_str()).collect();
    assert_eq!(
        labels,
        vec![
            "VllmWorker TP0 pid=3974",
            "VllmWorker TP1 pid=3975",
            "EngineCore_0 pid=3902",
            "RayWorkerWrapper pid=345, ip=10.42.9.225",
            "Worker_PP0 pid=77"
        ]
    );
    assert_eq!(binding(&r).unwrap().rank, "Worker_PP0 pid=77");
    assert!(binding(&r).unwrap().available_kv_bytes.unwrap() < 0);
    assert_eq!(capacity(&r), (Some(1_104_768), None));
}

#[test]
fn sglang_ranks() {
    let log = "\
[2025-07-22 10:00:01 TP0] Load weight end. type=Qwen3MoeForCausalLM, dtype=torch.bfloat16, avail mem=63.91 GB, mem usage=15.26 GB.
[2025-07-22 10:00:01 TP1] Load weight end. type=Qwen3MoeForCausalLM, dtype=torch.bfloat16, avail mem=61.50 GB, mem usage=15.26 GB.
[2025-07-22 10:00:02 TP0] KV Cache is allocated. #tokens: 367404, K size: 8.23 GB, V size: 8.23 GB
[2025-07-22 10:00:02 TP1] KV Cache is allocated. #tokens: 367404, K size: 8.23 GB, V size: 8.23 GB
[2025-07-22 10:00:03 TP0] max_total_num_tokens=367404, chunked_prefill_size=8192, max_prefill_tokens=16384
";
    let r = readings(log, true);
    assert_eq!(r.len(), 2);
    assert_eq!(binding(&r).unwrap().rank, "TP1");
    assert_eq!(capacity(&r).0, Some(367_404));
}
