//! Tests of the statement reader (syntax.rs) on snippets as people paste them.

use super::*;

#[test]
fn reads_imports_constants_and_nested_calls() {
    let s = read(
        "import sglang as sgl\nfrom vllm import LLM, SamplingParams as SP\nMODEL = 'Qwen/Qwen3-8B'\nLEN = 8 * 1024\n\
         llm = LLM(model=MODEL, max_model_len=LEN,\n   gpu_memory_utilization=0.85)  # comment\nsp = SP(max_tokens=-1)\n\
         e = sgl.Engine(model_path=\"x\", tp_size=2); cfg = {0: '6GiB', 'cpu': \"30\" \"GiB\"}\n",
    );
    let llm = s.calls.iter().find(|c| c.func == "vllm.LLM").unwrap();
    assert_eq!(llm.kw("model"), Some(&Py::Str("Qwen/Qwen3-8B".into())));
    assert_eq!(llm.kw("max_model_len"), Some(&Py::Int(8192)));
    assert_eq!(llm.kw("gpu_memory_utilization"), Some(&Py::Float(0.85)));
    assert!(s
        .calls
        .iter()
        .any(|c| c.func == "vllm.SamplingParams" && c.kw("max_tokens") == Some(&Py::Int(-1))));
    assert!(s.calls.iter().any(|c| c.func == "sglang.Engine"));
    assert_eq!(
        s.constants["cfg"],
        Py::Dict(vec![
            (Py::Int(0), Py::Str("6GiB".into())),
            (Py::Str("cpu".into()), Py::Str("30GiB".into()))
        ])
    );
}

#[test]
fn what_cannot_be_read_is_opaque_with_its_text() {
    let s = read("import os\nm = os.environ['MODEL']\nn = f'{x}'\nk = 1 if a else 2\nLLM(model=m, max_model_len=n, seed=k, quantization=None)\n");
    let c = s.calls.iter().find(|c| c.func == "LLM").unwrap();
    assert!(
        matches!(c.kw("model"), Some(Py::Opaque(t)) if t.contains("environ")),
        "{:?}",
        c.kw("model")
    );
    assert!(matches!(c.kw("max_model_len"), Some(Py::Opaque(_))));
    assert!(matches!(c.kw("seed"), Some(Py::Opaque(_))));
    assert_eq!(c.kw("quantization"), Some(&Py::None));
}

#[test]
fn hostile_input_ends() {
    for src in [
        "((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((x",
        "LLM(",
        "'''",
        "f(**",
        "{1:",
        ")))]]]",
        "x = [",
        "LLM(model=[x for x in y], **kw)",
    ] {
        let _ = read(src);
    }
    let deep = "f(".repeat(10_000);
    let _ = read(&deep);
    let _ = read(&format!("x = {}1", "-".repeat(100_000)));
    let _ = read(&format!("x = {}2", "2**".repeat(100_000)));
    let _ = read(&format!("LLM({})", "[".repeat(100_000)));
}
