//! What a person sees for a few real excerpts from the dev set (tests/fixtures/oom_dev.jsonl):
//! the human report and the JSON contract keys, pinned with insta.

use serde_json::Value;
use vramfit_doctor::{diagnose, render};

const FIXTURE: &str = include_str!("fixtures/oom_dev.jsonl");

fn excerpt(id: &str) -> String {
    FIXTURE
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("valid JSONL"))
        .find(|r| r["id"] == id)
        .and_then(|r| r["error_excerpt"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("record {id} missing from the fixture"))
}

/// The stable keys of `vramfit doctor --json` (events and settings are left out of the pin).
fn contract(id: &str) -> Value {
    let mut v = render::json(&diagnose(&excerpt(id)));
    let o = v.as_object_mut().expect("object");
    o.remove("events");
    o.remove("settings");
    v
}

#[test]
fn human_reports() {
    for id in [
        "tpu-inference-223",
        "vllm-20305",
        "worker-vllm-40",
        "ollama-6860",
        "vllm-12529",
    ] {
        insta::assert_snapshot!(
            format!("human_{id}"),
            render::human(&diagnose(&excerpt(id)))
        );
    }
}

#[test]
fn json_reports() {
    for id in ["tpu-inference-223", "vllm-20305", "textgen-2144"] {
        insta::assert_json_snapshot!(format!("json_{id}"), contract(id));
    }
}
