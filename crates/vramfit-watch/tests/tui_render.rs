//! The dashboard drawn in-process into ratatui's TestBackend at 120x40, pinned by a snapshot:
//! the leak trace stopped at t = 200 s, 80 s into the leak, with the forecast line on the chart.

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::path::PathBuf;
use vramfit_watch::detect::DetectConfig;
use vramfit_watch::monitor::Monitor;
use vramfit_watch::sampler::{ReplaySampler, Sampler};
use vramfit_watch::tui::render::draw;
use vramfit_watch::tui::view::ViewState;

fn screen(terminal: &Terminal<TestBackend>) -> String {
    let buf = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..buf.area.height {
        let line: String = (0..buf.area.width)
            .map(|x| buf[(x, y)].symbol().to_string())
            .collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[test]
fn leak_frame_at_t200() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/traces/leak.jsonl");
    let mut sampler = ReplaySampler::open(&path, None).unwrap();
    let mut monitor = Monitor::new(DetectConfig::default());
    let mut state = ViewState::default();
    let mut view = None;
    while let Some(tick) = sampler.next_tick().unwrap() {
        let report = monitor.observe(&tick);
        state.record(&report);
        view = Some(state.view("replay leak.jsonl", &monitor, &report, "q quit"));
        if tick.t >= 200.0 {
            break;
        }
    }
    let view = view.unwrap();
    assert!(
        !view.chart.forecast.is_empty(),
        "the leak has a forecast line by t=200"
    );
    assert!(
        view.alerts.iter().any(|a| a.contains("leak")),
        "{:?}",
        view.alerts
    );
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    terminal.draw(|f| draw(f, &view)).unwrap();
    let text = screen(&terminal);
    assert!(text.contains("pid") || text.contains("PID"));
    assert!(text.contains("2101") && text.contains("python3"), "{text}");
    insta::assert_snapshot!("leak_t200_120x40", text);
}
