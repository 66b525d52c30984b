//! The mechanisms of session 10, read from holdout9's misses, each on the real report it was
//! read from (tests/fixtures, by id) and on a variant that must not trigger it.
//! docs/accuracy-doctor.md lists, for each, the reports it changed in every set.

#[path = "support/cases.rs"]
mod cases;

use cases::{cause, excerpt, flag};
use vramfit_doctor::{diagnose, Cause};

#[test]
fn nccls_shared_memory_segment_is_the_hosts_ram() {
    let log = excerpt("nccl-tests-166");
    assert_eq!(cause(&log), Cause::HostMemory);
    // NCCL's own warnings without the /dev/shm segment stay a communication lookalike
    let no_shm: String = log
        .lines()
        .map(|l| match l.find("NCCL WARN") {
            Some(at) if l.contains("shm") => format!(
                "{}NCCL WARN NET/IB : Got completion with error 12",
                &l[..at]
            ),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(no_shm.contains("NCCL WARN NET/IB"));
    assert_eq!(cause(&no_shm), Cause::NotOom);
}

#[test]
fn memory_taken_from_the_remaining_free_memory_is_a_tenant() {
    let log = excerpt("vllm-omni-4285");
    assert_eq!(cause(&log), Cause::OtherProcesses);
    // the engine's own share of the GPU is no tenant
    let own = log.replace(
        "Occupies 92% of the remaining free GPU memory.",
        "vLLM occupies 92% of the GPU memory.",
    );
    assert_ne!(cause(&own), Cause::OtherProcesses);
}

#[test]
fn a_second_process_loading_another_model_is_a_tenant() {
    let log = excerpt("textgen-5987");
    assert_eq!(cause(&log), Cause::OtherProcesses);
    // one process loading one model that does not fit: the weights
    let alone = log.replace(
        "Then start a second process (e.g. by a second user) which tries to load another large GGUF model.",
        "",
    );
    assert_eq!(cause(&alone), Cause::WeightsDoNotFit);
}

#[test]
fn host_ram_named_short_beside_a_buffer_failure_is_the_host() {
    let log = excerpt("ollama-6606");
    assert_eq!(cause(&log), Cause::HostMemory);
    // the GPU's memory named instead: the buffer rule decides
    let gpu = log.replace(
        "my memory on the computer was insufficient",
        "my GPU memory was insufficient",
    );
    assert_ne!(cause(&gpu), Cause::HostMemory);
    let db = excerpt("db-gpt-63");
    assert_eq!(cause(&db), Cause::HostMemory);
    // "the lack of CPU swap space" is vLLM's swap pool, not host RAM run short
    assert_ne!(
        cause("RuntimeError: Aborted due to the lack of CPU swap space."),
        Cause::HostMemory
    );
}

#[test]
fn a_kill_while_reading_checkpoint_shards_is_the_host() {
    assert_eq!(cause(&excerpt("alpaca-lora-546")), Cause::HostMemory);
    // the same progress line with no kill is no failure of the host
    assert_ne!(
        cause("Generate.py stops at `Loading checkpoint shards: 52%` with an error"),
        Cause::HostMemory
    );
    // a progress bar closed by a quote or bracket in a pasted title
    assert_eq!(
        cause("(title: Loading checkpoint shards: 0%| | 0/2 [00:00<?, ?it/s]Killed)"),
        Cause::HostMemory
    );
}

#[test]
fn a_failure_only_off_cuda0_is_a_device_selection_lookalike() {
    let log = excerpt("ant-multimodal-26");
    assert_eq!(cause(&log), Cause::NotOom);
    let d = diagnose(&log);
    assert!(
        d.fixes.iter().all(|f| f.flag.is_empty()),
        "no computed flag"
    );
    // the same cuBLAS failure with no device-index sentence is an OOM outside the allocator
    let bare = log.replace("only happens when the GPU is not cuda:0", "it happens");
    assert_ne!(cause(&bare), Cause::NotOom);
}

#[test]
fn vllms_swap_space_abort_is_the_kv_cache() {
    let log = excerpt("vllm-787");
    assert_eq!(cause(&log), Cause::KvCache);
    let d = diagnose(&log);
    assert_eq!(flag(&d, "--swap-space"), Some("16"));
    // never the value already set: with --swap-space 16 on the command line, twice that
    let set = format!("$ vllm serve m --swap-space 16\n{log}");
    assert_eq!(flag(&diagnose(&set), "--swap-space"), Some("32"));
    assert_ne!(
        cause("WARNING config.py: Possibly too large swap space. 8.00 GiB out of the 15.27 GiB total CPU memory"),
        Cause::KvCache
    );
}

#[test]
fn vllms_swap_space_check_is_the_hosts_ram() {
    let log = excerpt("index-tts-vllm-99");
    assert_eq!(cause(&log), Cause::HostMemory);
    // 0.4 x 4.30 GiB = 1.72 GiB: 1 GiB per GPU passes vLLM's check
    assert_eq!(flag(&diagnose(&log), "--swap-space"), Some("1"));
    // the warning (above 0.4, below 0.7) is not a failure
    let warning = "WARNING 09-09 21:35:38 config.py:436] Possibly too large swap space. 8.00 GiB out of the 15.27 GiB total CPU memory is allocated for the swap space.";
    assert_ne!(cause(warning), Cause::HostMemory);
}

#[test]
fn sglangs_token_pool_messages_are_the_kv_cache() {
    for id in ["sglang-7353", "sglang-4602", "sglang-14942"] {
        assert_eq!(cause(&excerpt(id)), Cause::KvCache, "{id}");
    }
    let d = diagnose(&excerpt("sglang-4602"));
    // --page-size 64 is set: token-granular pages are the fix; the pool's own numbers are shown
    assert_eq!(flag(&d, "--page-size"), Some("1"));
    assert!(
        d.summary.contains("148 tokens asked, 2048 free"),
        "{}",
        d.summary
    );
    // SGLang's request-slot message is another pool (concurrency), not the token pool
    assert_eq!(
        cause("RuntimeError: alloc_req_slots runs out of memory. Please set a smaller number for `--max-running-requests`."),
        Cause::Concurrency
    );
}

#[test]
fn a_vocoder_stage_is_a_forward_pass() {
    let log = excerpt("sglang-omni-235");
    assert_eq!(cause(&log), Cause::ActivationPeak);
    let no_stage: String = log
        .lines()
        .filter(|l| !l.contains("ocoder"))
        .collect::<Vec<_>>()
        .join("\n");
    assert_ne!(cause(&no_stage), Cause::ActivationPeak);
}

#[test]
fn the_kernels_enomem_is_the_hosts_ram() {
    // Python's OSError for ENOMEM, as DataLoader workers and multiprocessing print it on fork
    let log = "  File \"/usr/lib/python3.10/multiprocessing/popen_fork.py\", line 66, in _launch\n    self.pid = os.fork()\nOSError: [Errno 12] Cannot allocate memory\n";
    assert_eq!(cause(log), Cause::HostMemory);
    // another errno is not memory
    assert_ne!(
        cause(&log.replace(
            "[Errno 12] Cannot allocate memory",
            "[Errno 28] No space left on device"
        )),
        Cause::HostMemory
    );
}

#[test]
fn an_oom_in_the_dataloaders_pin_memory_thread_is_the_hosts_ram() {
    // as PyTorch prints it (torch/utils/data/_utils/pin_memory.py wraps the exception)
    let log = "torch.AcceleratorError: Caught AcceleratorError in pin memory thread for device 0.\ntorch.AcceleratorError: CUDA error: out of memory\n";
    assert_eq!(cause(log), Cause::HostMemory);
    // the same thread failing with another CUDA error is no lack of memory
    let other = log.replace("out of memory", "invalid argument");
    assert_eq!(cause(&other), Cause::NotOom);
    // and a CUDA OOM outside that thread is the GPU's
    assert_ne!(
        cause("RuntimeError: CUDA error: out of memory\n"),
        Cause::HostMemory
    );
    // Rust's io::Error for ENOMEM, as the safetensors loader prints it
    assert_eq!(
        cause("safetensors_rust.SafetensorError: Error while deserializing header: Cannot allocate memory (os error 12)"),
        Cause::HostMemory
    );
}
