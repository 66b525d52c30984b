//! What happens to every tick, whatever the output: record it, observe it, publish it.

use crate::detect::DetectConfig;
use crate::error::WatchError;
use crate::export::prometheus::{self, MetricsPage};
use crate::monitor::{Monitor, Report};
use crate::sample::Tick;
use crate::trace::TraceWriter;

pub struct Pipeline {
    pub monitor: Monitor,
    pub recorder: Option<TraceWriter>,
    pub exporter: Option<MetricsPage>,
}

impl Pipeline {
    pub fn new(cfg: DetectConfig) -> Pipeline {
        Pipeline {
            monitor: Monitor::new(cfg),
            recorder: None,
            exporter: None,
        }
    }

    pub fn process(&mut self, tick: &Tick) -> Result<Report, WatchError> {
        if let Some(r) = self.recorder.as_mut() {
            r.write_tick(tick)?;
        }
        let report = self.monitor.observe(tick);
        if let Some(page) = &self.exporter {
            page.set(prometheus::render(&report));
        }
        Ok(report)
    }
}
