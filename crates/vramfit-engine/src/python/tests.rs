use super::*;

const RTX_4090: Device = Device {
    total_bytes: 24 * GIB,
    name: "NVIDIA GeForce RTX 4090",
};
const H100: Device = Device {
    total_bytes: 80 * GIB,
    name: "NVIDIA H100 80GB HBM3",
};

fn argv(t: &Translated) -> String {
    t.argv.join(" ")
}

#[test]
fn vllm_llm_class_gets_its_own_batch_default() {
    let src = "from vllm import LLM, SamplingParams\n\
        llm = LLM(model=\"meta-llama/Llama-3.1-8B-Instruct\", gpu_memory_utilization=0.85,\n\
                  max_model_len=8192, max_num_seqs=32)\n\
        params = SamplingParams(temperature=0.7, max_tokens=512)\n";
    let t = translate(src, RTX_4090).unwrap();
    assert_eq!(
        argv(&t),
        "vllm serve meta-llama/Llama-3.1-8B-Instruct --gpu-memory-utilization 0.85 --max-model-len 8192 --max-num-seqs 32 --max-num-batched-tokens 8192"
    );
    let t = translate(src, H100).unwrap();
    assert!(
        argv(&t).ends_with("--max-num-batched-tokens 16384"),
        "{}",
        argv(&t)
    );
    // an A100 is excluded from the large default (PR #17885)
    let a100 = Device {
        total_bytes: 80 * GIB,
        name: "NVIDIA A100-SXM4-80GB",
    };
    assert!(argv(&translate(src, a100).unwrap()).ends_with("--max-num-batched-tokens 8192"));
    // capped at max_num_seqs * max_model_len
    let small = "LLM('Qwen/Qwen3-0.6B', max_model_len=1024, max_num_seqs=2)";
    assert!(argv(&translate(small, RTX_4090).unwrap()).ends_with("--max-num-batched-tokens 2048"));
}

#[test]
fn async_engine_args_are_the_serve_flags() {
    let src = "from vllm.engine.arg_utils import AsyncEngineArgs\n\
        args = AsyncEngineArgs(model='Qwen/Qwen3-8B', tensor_parallel_size=2, enforce_eager=True,\n\
            enable_prefix_caching=False, kv_cache_dtype='fp8', speculative_config={'method': 'ngram', 'num_speculative_tokens': 3})\n\
        engine = AsyncLLMEngine.from_engine_args(args)\n";
    let t = translate(src, RTX_4090).unwrap();
    assert_eq!(
        argv(&t),
        "vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2 --enforce-eager --no-enable-prefix-caching --kv-cache-dtype fp8 --speculative-config {\"method\":\"ngram\",\"num_speculative_tokens\":3}"
    );
}

#[test]
fn sglang_engine() {
    let src = "import sglang as sgl\nllm = sgl.Engine(model_path=\"Qwen/Qwen3-8B\", mem_fraction_static=0.8, tp_size=2, disable_cuda_graph=True, enable_torch_compile=False)\n";
    let t = translate(src, RTX_4090).unwrap();
    assert_eq!(
        argv(&t),
        "python -m sglang.launch_server --model-path Qwen/Qwen3-8B --mem-fraction-static 0.8 --tp-size 2 --disable-cuda-graph"
    );
}

#[test]
fn transformers_nf4_loader() {
    let src = r#"
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig

model_id = "meta-llama/Llama-3.1-8B-Instruct"
bnb_config = BitsAndBytesConfig(
    load_in_4bit=True,
    bnb_4bit_quant_type="nf4",
    bnb_4bit_compute_dtype=torch.bfloat16,
    bnb_4bit_use_double_quant=True,
)
tokenizer = AutoTokenizer.from_pretrained(model_id)
model = AutoModelForCausalLM.from_pretrained(
    model_id,
    quantization_config=bnb_config,
    device_map="auto",
    torch_dtype=torch.bfloat16,
)
prompts = ["Hello", "Bonjour", "Hallo", "Hola"]
inputs = tokenizer(prompts, return_tensors="pt", padding=True).to("cuda")
outputs = model.generate(**inputs, max_new_tokens=256)
"#;
    let t = translate(src, RTX_4090).unwrap();
    assert_eq!(
        argv(&t),
        "transformers meta-llama/Llama-3.1-8B-Instruct --load-in-4bit --bnb-4bit-quant-type nf4 --bnb-4bit-compute-dtype bfloat16 --bnb-4bit-use-double-quant --device-map auto --dtype bfloat16 --max-new-tokens 256 --batch-size 4"
    );
}

#[test]
fn accelerate_offload_helper() {
    let src = r#"
from accelerate import infer_auto_device_map, init_empty_weights
from transformers import AutoConfig, AutoModelForCausalLM
config = AutoConfig.from_pretrained("mistralai/Mistral-7B-Instruct-v0.3")
with init_empty_weights():
    model = AutoModelForCausalLM.from_config(config)
device_map = infer_auto_device_map(model, max_memory={0: "6GiB", "cpu": "30GiB"}, no_split_module_classes=["MistralDecoderLayer"])
model = AutoModelForCausalLM.from_pretrained("mistralai/Mistral-7B-Instruct-v0.3", device_map=device_map, torch_dtype=torch.float16)
"#;
    let t = translate(src, RTX_4090).unwrap();
    assert_eq!(
        argv(&t),
        "transformers mistralai/Mistral-7B-Instruct-v0.3 --dtype float16 --device-map sequential --max-memory 0:6GiB,cpu:30GiB"
    );
    assert!(
        t.notes.iter().any(|n| n.contains("sequential")),
        "{:?}",
        t.notes
    );
}

#[test]
fn a_model_that_is_not_a_literal_is_named() {
    let err = translate("import os\nLLM(model=os.environ['MODEL'])", RTX_4090)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("os.environ") && err.contains("literal"),
        "{err}"
    );
    assert!(!err.contains('\n'));
    let err = translate("print('hello')", RTX_4090)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no engine call"), "{err}");
}

#[test]
fn unreadable_arguments_are_named_not_guessed() {
    let t = translate(
        "import sys\nLLM('Qwen/Qwen3-8B', max_model_len=int(sys.argv[1]), gpu_memory_utilization=0.9, **extra)",
        RTX_4090,
    )
    .unwrap();
    assert!(!argv(&t).contains("--max-model-len"), "{}", argv(&t));
    assert!(
        t.notes
            .iter()
            .any(|n| n.contains("max_model_len") && n.contains("not read")),
        "{:?}",
        t.notes
    );
    assert!(
        t.notes.iter().any(|n| n.contains("**extra")),
        "{:?}",
        t.notes
    );
}

#[test]
fn transformers_pipeline() {
    let src = "import torch\nfrom transformers import pipeline\npipe = pipeline('text-generation', 'Qwen/Qwen3-8B', model_kwargs={'torch_dtype': torch.bfloat16}, device_map='auto')\nout = pipe(['a', 'b'], max_new_tokens=64)\n";
    let t = translate(src, RTX_4090).unwrap();
    assert!(
        argv(&t).starts_with("transformers Qwen/Qwen3-8B --device-map auto --dtype bfloat16"),
        "{}",
        argv(&t)
    );
}
