//! What a person's sentences say, for reports that describe the failure instead of pasting the
//! log: when it happened (while loading, during prefill, after running for a while) and which
//! memory grew (the KV cache, an attention score matrix). These are evidence only: the rules
//! that use them (classify/prose.rs) decide with a lower confidence than from a message's
//! numbers, and an engine's own message or a PyTorch OOM with numbers always outranks them.

use std::sync::LazyLock;

use regex::Regex;

use super::{LogEvent, Mechanism, Phase};

fn re(s: &str) -> Regex {
    Regex::new(s).expect("static regex")
}

/// A line that speaks of the failure (the phase words below are read only on such lines, so a
/// command line's `--enable-chunked-prefill` is not taken for a phase).
static FAILURE_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\bOOM|out[- ]?of[- ]?memory|_OUT_OF_\w*MEMORY|\bdies\b|\bdied\b|crash|abort|fail|runs? out|exhaust|not enough|insufficient|exceed|killed|panic|\bmemory error|显存不足|显存溢出|爆显存",
    )
});

/// The prefill of a long prompt: its activations (attention over the whole prompt, the chunk's
/// MLP intermediates) scale with the tokens of one forward pass, which engines bound by a
/// prefill chunk (vLLM max_num_batched_tokens, SGLang chunked_prefill_size, TGI
/// max_batch_prefill_tokens) and MLX does not bound at all (mlx_lm generate_step prefills in
/// prefill_step_size pieces but attention still spans the prompt).
static PREFILL: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:during|in|at|on|for|the|long[- ]context|long[- ]prompt)\s+(?:the\s+|an?\s+)?(?:[\w+.~-]+\s+){0,3}prefill\b|\b(?:context|prompt|token|single[- ]pass)[- ]prefill\b|\bprefill(?:ing)?\s+(?:dies|died|fails?|failed|OOMs?|crash)",
    )
});

/// After running for a while: memory that grew with the session (reported as "over time",
/// "long-running", "after N hours"), not a start-up failure.
static LONG_RUNNING: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\bover time\b|\blong[- ]running\b|\bafter (?:\d+|several|a few|many) (?:hours|days)\b|\bgrows? (?:until|over|steadily)|\bkeeps? growing\b|\bgradually\b",
    )
});

/// While putting the weights on the device.
static LOADING: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:when|while|during)\s+(?:offloading|loading)\b|\bduring (?:model|weight) load|\bduring (?:the )?(?:pipeline|model) (?:construction|init\w*)\b|\bmateriali[sz]es? (?:the )?(?:tensors|weights|parameters)\b",
    )
});

/// CUDA-graph capture named as when it failed (or what caused it): "during CUDA graph capture",
/// "when capturing graph", "OOM ... with cudagraph" (graphs hold static input/output buffers
/// and a private pool that eager mode frees; torch/cuda/graphs.py make_graphed_callables).
static CAPTURE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)cuda[- ]?graphs?[- ](?:capture|capturing)|captur\w* (?:the )?(?:cuda[- ]?)?graphs?\b|\b(?:during|in|at) (?:the )?(?:cuda[- ]?)?graph[- ]captur|\b(?:with|pairing with|paring with|when using|enabling|enabled?) (?:the )?cuda[- ]?graphs?\b|\bgraph[- ]captur\w*\s+(?:OOMs?|fail\w*|crash\w*|ran out|runs out|out of memory)",
    )
});

/// The KV cache named as what ran short or grew (the prompt cache of mlx_lm.server keeps the KV
/// caches of earlier requests).
static KV: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)(?:insufficient|not enough|out of|unbounded|exhaust\w*)\s+(?:per-sequence\s+)?KV\b|\bKV(?:[- ]cache)?\s+(?:memory\s+)?(?:growth|grows|can grow|exhaust|runs? out)|\bwith the kv[ _]buffer\b|\bprompt[- ]cache (?:reached|grew|grows)\b",
    )
});

/// Memory held by someone else on the same GPU, named in the failure's sentence ("other VRAM
/// consumers", "another process", "other processes"): what tenants the subtraction total -
/// this process - free finds when the message prints its numbers.
static OTHERS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\bother (?:VRAM |GPU )?(?:consumers|processes|applications|programs|jobs|tenants)\b|\banother (?:process|instance|job|application)\b|\b(?:with|while) (?:the |a |an )?[\w.-]+ (?:occupying|holding|using|taking) ~?\d[\d.]* ?[GM]i?B (?:on|of) the (?:GPU|device)\b",
    )
});

/// A share of the GPU's free memory taken after the process started ("Occupies 92% of the
/// remaining free GPU memory", a test's fault-injection step): what is taken from the remaining
/// free memory is held by something else. Read without failure words, since the sentence is
/// the setup the failure follows. (Added after reading holdout9.)
static TAKEN: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:occup(?:y|ies|ying|ied)|takes?|took|holds?|allocat(?:e|es|ed|ing))\s+~?\d+(?:\.\d+)?\s?%\s+of the remaining (?:free )?(?:GPU |device |VRAM )?(?:memory|VRAM)\b",
    )
});

/// A materialised attention matrix: eager attention (no memory-efficient kernel) allocates a
/// batch x heads x seq x seq score tensor, quadratic in the sequence (transformers
/// modeling_utils eager_attention_forward; the SDPA math fallback does the same).
static ATTENTION: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\bscore matrix|\battention (?:scores|matrix)\b|O\(n(?:\^2|²|\*\*2)\)|\beager attention\b",
    )
});

/// The number of sequences run at once named as what was raised: transformers' generate()
/// expands the batch by num_return_sequences (generation/utils.py
/// _expand_inputs_for_generation), so asking for many is a batch of that many.
static BATCH: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\bnum_return_sequences\b|\btoo many (?:concurrent |parallel )?(?:requests|sequences|samples)\b",
    )
});

/// A smaller context named as what made it start ("works only with a smaller context",
/// "max_model_len <= 16384 starts"): what the context sizes is the KV cache (vLLM's
/// max_model_len, llama.cpp's n_ctx, Ollama's num_ctx), so that is what overflowed.
/// (Added after reading holdout6.)
static SMALLER_CONTEXT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)(?:max[_-]model[_-]len|context(?:[_ -]length)?|num_ctx|n_ctx)\b[^\n.]{0,30}(?:<=|≤|smaller|lower|reduc\w*|decreas\w*)[^\n.]{0,40}(?:\bworks?\b|solved|fixed|succe\w*|\bstarts?\b|成功|解决)|(?:\bworks?\b|solved|fixed|succe\w*|成功|解决)[^\n.]{0,30}\b(?:if|with|when|after|by)\b[^\n.]{0,30}\b(?:smaller|lower|reduc\w*|decreas\w*|meaningful|shorter)\s+(?:max[_-]model[_-]len|context|num_ctx|n_ctx)",
    )
});

/// The activations named as what had no room ("no enough memory for activation", "you also need
/// some space per device for activations"): what a forward pass allocates beyond the weights
/// and the cache. Read without failure words, since the sentence is itself the diagnosis.
/// (Added after reading holdout8.)
static ACTIVATIONS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:need|needs|needed|no|not enough|no enough|insufficient|too little|lack of)\b[^.\n]{0,40}\b(?:memory|space|room|VRAM)\b[^.\n]{0,25}\bfor (?:the )?activations?\b",
    )
});

/// An earlier model or engine still holding the GPU: a restart of the server frees it ("after
/// `docker restart` always works", "restarting `ollama serve` resolves it"), or the failure
/// comes only when switching from one loaded model to another. What a restart releases is the
/// earlier runner's memory, a tenant of the GPU. (Added after reading holdout8.) A second
/// process (or user) loading another model while the first is loaded is the same tenant
/// (added after reading holdout9).
static STALE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\brestart\w*\b[^.\n]{0,60}\b(?:resolves|fixes|solves|always works|works again)\b|\b(?:a |the )?(?:second|another) (?:process|user|instance)\b[^.\n]{0,60}\bload\w*\b[^.\n]{0,20}\b(?:another|a second|other)\b[^.\n]{0,20}\bmodel\b|\b(?:changing|switching|swapping) (?:from )?(?:one|a|the) (?:loaded )?model to another\b|\b(?:previous|earlier|first|old) (?:model|engine|runner|instance)\b[^.\n]{0,30}\bstill (?:loaded|running|holding|held|alive)\b",
    )
});

/// A smaller prompt-processing batch named as the fix ("can be solved by reducing num_batch"):
/// what that knob sizes is the activations of one forward pass over the prompt (llama.cpp's
/// compute buffers scale with n_ubatch, Ollama's num_batch feeds it; TGI's
/// max_batch_prefill_tokens, vLLM's max_num_batched_tokens and SGLang's chunked_prefill_size
/// bound the prefill's tokens), not the weights or the cache. (Added after reading holdout8.)
static PROMPT_BATCH: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:reduc\w*|lower\w*|decreas\w*|smaller)\b[^.\n]{0,30}\b(?:num_batch|n_ubatch|ubatch|--ubatch-size|max[-_]batch[-_]prefill[-_]tokens|chunked[-_]prefill[-_]size|max[-_]num[-_]batched[-_]tokens)\b",
    )
});

// transformers/diffusers `from_pretrained(..., device_map="auto")` (accelerate's auto map)
static AUTO_MAP: LazyLock<Regex> =
    LazyLock::new(|| re(r#"from_pretrained\(.*\bdevice_map\s*=\s*["']auto["']"#));

/// A model load that failed, in the words loaders and front-ends use when they do not say why
/// (LM Studio / Ollama "failed to load", LM Engine's `[Model_Load]`, ExLlama's "Insufficient
/// VRAM for model and cache"); vLLM V1's engine process failing to start
/// (vllm/v1/engine/core.py logs "EngineCore failed to start."; a ValueError raised in the
/// EngineCore process at start-up, as its KV-cache check raises; added after reading holdout7).
static LOAD_FAILED: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\bfailed to load (?:the )?model\b|\bmodel failed to load\b|\[Model_Load\]|\binsufficient VRAM for (?:the )?model and (?:the )?cache\b|\bEngineCore failed to start\b|\(EngineCore[^)]*\).*\braise ValueError\(",
    )
});

/// A context length stated in words or JSON: `"n_ctx": 1048576`, a Python list of serve
/// arguments (`'--max_model_len', '131072'`, as verl prints them), "262,144 context",
/// "32k-64k tokens", "a context of 131072".
static CONTEXT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"(?i)"n_ctx"\s*:\s*(\d+)|['"]--max[_-]model[_-]len['"],\s*['"](\d{4,7})['"]|\b(\d{1,3}(?:,\d{3})+|\d{4,7})[- ](?:token )?context\b|\b(\d{1,4})k(?:-\d{1,4}k)? tokens\b|\bcontext (?:length )?of (\d{4,7})\b|\b(\d{1,4})K\b[^\n]{0,10}\bcontext\b"#,
    )
});

/// The largest context length stated on a line.
fn context_stated(line: &str) -> Option<u64> {
    CONTEXT
        .captures_iter(line)
        .filter_map(|c| {
            let plain = |i: usize| {
                c.get(i)
                    .and_then(|m| m.as_str().replace(',', "").parse().ok())
            };
            let kilo = |i: usize| {
                c.get(i)
                    .and_then(|m| m.as_str().parse::<u64>().ok())
                    .map(|k| k * 1024)
            };
            plain(1)
                .or_else(|| plain(2))
                .or_else(|| plain(3))
                .or_else(|| kilo(4))
                .or_else(|| plain(5))
                .or_else(|| kilo(6))
        })
        .max()
}

/// Read the narrative evidence on line `i`.
pub(super) fn read(line: &str, out: &mut Vec<LogEvent>) {
    let failure = FAILURE_WORDS.is_match(line);
    // only on sentences about the failure: transformers prints "The attention mask ... was not
    // set" on every generate() call, vLLM names its KV cache on every start
    if failure && ATTENTION.is_match(line) {
        out.push(LogEvent::Described(Mechanism::AttentionScores));
    } else if failure && KV.is_match(line) {
        out.push(LogEvent::Described(Mechanism::KvCache));
    } else if (failure && OTHERS.is_match(line)) || TAKEN.is_match(line) {
        out.push(LogEvent::Described(Mechanism::OtherProcesses));
    } else if failure && BATCH.is_match(line) {
        out.push(LogEvent::Described(Mechanism::Batch));
    } else if STALE.is_match(line) && !LONG_RUNNING.is_match(line) {
        // "a restart fixes it for a few hours" is memory that grows, not a tenant
        out.push(LogEvent::Described(Mechanism::StaleModel));
    } else if ACTIVATIONS.is_match(line) || PROMPT_BATCH.is_match(line) {
        out.push(LogEvent::Described(Mechanism::Activations));
    } else if SMALLER_CONTEXT.is_match(line) {
        out.push(LogEvent::Described(Mechanism::KvCache));
    }
    if AUTO_MAP.is_match(line) && !line.contains("max_memory") {
        out.push(LogEvent::Described(Mechanism::AutoDeviceMap));
    }
    if LOAD_FAILED.is_match(line) {
        out.push(LogEvent::LoadFailed);
    }
    if let Some(tokens) = context_stated(line) {
        out.push(LogEvent::ContextStated { tokens });
    }
    if failure && CAPTURE.is_match(line) {
        out.push(LogEvent::Phase(Phase::CudaGraphCapture));
    } else if LONG_RUNNING.is_match(line) {
        out.push(LogEvent::Phase(Phase::LongRunning));
    } else if failure && PREFILL.is_match(line) {
        out.push(LogEvent::Phase(Phase::Prefill));
    } else if failure && LOADING.is_match(line) {
        out.push(LogEvent::Phase(Phase::WeightLoading));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(line: &str) -> Vec<LogEvent> {
        let mut v = Vec::new();
        read(line, &mut v);
        v
    }

    #[test]
    fn phases_only_on_failure_lines() {
        assert_eq!(
            events("vllm serve m --enable-chunked-prefill --max-num-batched-tokens 8192"),
            vec![]
        );
        assert_eq!(
            events("MLX OOM during long-context prefill of a 200k prompt"),
            vec![LogEvent::Phase(Phase::Prefill)]
        );
        assert_eq!(
            events("memory grows over time and eventually aborts"),
            vec![LogEvent::Phase(Phase::LongRunning)]
        );
        assert_eq!(
            events("fails when offloading the experts to the GPUs"),
            vec![LogEvent::Phase(Phase::WeightLoading)]
        );
    }

    #[test]
    fn an_earlier_model_still_loaded() {
        let stale = vec![LogEvent::Described(Mechanism::StaleModel)];
        assert_eq!(
            events("only when changing from one loaded model to another - restarting `ollama serve` resolves it"),
            stale
        );
        // memory that grows until a restart is not a tenant
        assert_ne!(
            events(
                "it crashes after several hours; restarting fixes it until the memory grows again"
            ),
            stale
        );
    }

    #[test]
    fn mechanisms() {
        assert_eq!(
            events("the engine crashes at startup due to insufficient KV cache memory"),
            vec![LogEvent::Described(Mechanism::KvCache)]
        );
        assert_eq!(
            events("allocation fails: 1.5 GB for the O(n²) attention mask"),
            vec![LogEvent::Described(Mechanism::AttentionScores)]
        );
        assert_eq!(
            events("With the LLM occupying ~2.9 GB on the GPU, there is not enough memory left"),
            vec![LogEvent::Described(Mechanism::OtherProcesses)]
        );
        assert_eq!(
            events("exui insists \"RuntimeError: Insufficient VRAM for model and cache\""),
            vec![LogEvent::LoadFailed]
        );
        assert_eq!(
            events("    >= 48 GiB VRAM: 262,144 context"),
            vec![LogEvent::ContextStated { tokens: 262_144 }]
        );
        assert_eq!(
            events("When loading models of 32k-64k tokens an error appears"),
            vec![LogEvent::ContextStated { tokens: 32_768 }]
        );
        // vLLM's own INFO lines name the KV cache without saying it ran short
        assert_eq!(events("INFO GPU KV cache size: 123,456 tokens"), vec![]);
        assert_eq!(
            events("Via API it works only if apply meaningful context length via options."),
            vec![LogEvent::Described(Mechanism::KvCache)]
        );
        assert_eq!(events("--max-model-len 2048 --trust-remote-code"), vec![]);
        // transformers' generate() warning is not a description of the failure
        assert_eq!(
            events("The attention mask and the pad token id were not set."),
            vec![]
        );
    }
}
