//! Collection glue: engine figures joined onto NVML samples, and the sampler moved to its own
//! thread so that a screen or exporter never waits on NVML or on a slow engine.

use crate::engine_metrics::EngineProbe;
use crate::error::WatchError;
use crate::sample::Tick;
use crate::sampler::Sampler;
use std::sync::mpsc::{sync_channel, Receiver};

/// A sampler whose GPUs get the engine figures of the probes that cover them.
pub struct WithEngines<S> {
    pub inner: S,
    pub probes: Vec<EngineProbe>,
    /// The last failure per probe, reported once until the probe recovers.
    pub last_error: Vec<Option<String>>,
}

impl<S: Sampler> WithEngines<S> {
    pub fn new(inner: S, probes: Vec<EngineProbe>) -> Self {
        let n = probes.len();
        WithEngines {
            inner,
            probes,
            last_error: vec![None; n],
        }
    }
}

impl<S: Sampler> Sampler for WithEngines<S> {
    fn next_tick(&mut self) -> Result<Option<Tick>, WatchError> {
        let Some(mut tick) = self.inner.next_tick()? else {
            return Ok(None);
        };
        for (i, probe) in self.probes.iter_mut().enumerate() {
            match probe.poll() {
                Ok(sample) => {
                    self.last_error[i] = None;
                    for g in tick.gpus.iter_mut().filter(|g| probe.applies_to(g.gpu)) {
                        g.engine.get_or_insert_with(|| sample.clone());
                    }
                }
                Err(e) => {
                    if self.last_error[i].as_deref() != Some(e.as_str()) {
                        eprintln!(
                            "vramfit: engine http://{}:{}: {e}",
                            probe.url.host, probe.url.port
                        );
                    }
                    self.last_error[i] = Some(e);
                }
            }
        }
        Ok(Some(tick))
    }
}

/// What the sampling thread sends: a tick, the end of the source, or a failure.
pub type TickEvent = Result<Option<Tick>, WatchError>;

/// Runs the sampler on its own thread. The channel holds at most 4 ticks: a consumer that falls
/// behind slows the sampler instead of growing memory.
pub fn spawn(mut sampler: Box<dyn Sampler + Send>) -> Receiver<TickEvent> {
    let (tx, rx) = sync_channel(4);
    std::thread::Builder::new()
        .name("vramfit-sampler".into())
        .spawn(move || loop {
            let event = sampler.next_tick();
            let stop = !matches!(event, Ok(Some(_)));
            if tx.send(event).is_err() || stop {
                break;
            }
        })
        .expect("spawning the sampler thread");
    rx
}
