//! The NVML path on whatever machine runs the tests: without the NVIDIA driver a clear error that
//! points to --replay; with one, a sample of every GPU.

use std::time::Duration;
use vramfit_watch::sampler::{NvmlSampler, Sampler};
use vramfit_watch::WatchError;

#[test]
fn nvml_is_sampled_or_its_absence_explained() {
    match NvmlSampler::new(Duration::from_millis(100)) {
        Ok(mut s) => {
            let tick = s.next_tick().unwrap().unwrap();
            assert!(!tick.gpus.is_empty());
            for g in &tick.gpus {
                assert!(g.total_bytes > 0 && g.used_bytes <= g.total_bytes, "{g:?}");
                assert!(
                    g.free_bytes.unwrap() + g.used_bytes <= g.total_bytes,
                    "{g:?}"
                );
            }
        }
        Err(e @ WatchError::NvmlUnavailable(_)) => {
            let msg = e.to_string();
            assert!(
                msg.contains("NVML") && msg.contains("--replay") && !msg.contains('\n'),
                "{msg}"
            );
        }
        Err(e) => panic!("unexpected error kind: {e}"),
    }
}
