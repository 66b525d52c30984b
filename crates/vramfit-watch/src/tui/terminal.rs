//! The live screen: owns the terminal, reads keys, redraws when a tick arrives.

use super::render::draw;
use super::view::ViewState;
use crate::collect::TickEvent;
use crate::error::WatchError;
use crate::pipeline::Pipeline;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::Duration;

/// Runs the dashboard until the user quits (q, Esc, Ctrl-C). When the source ends (a replay),
/// the last frame stays on screen.
pub fn run(
    source: &str,
    rx: Receiver<TickEvent>,
    pipeline: &mut Pipeline,
) -> Result<(), WatchError> {
    let mut terminal = ratatui::try_init().map_err(|e| WatchError::Terminal(e.to_string()))?;
    let result = event_loop(&mut terminal, source, rx, pipeline);
    ratatui::restore();
    result
}

fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    source: &str,
    rx: Receiver<TickEvent>,
    pipeline: &mut Pipeline,
) -> Result<(), WatchError> {
    let mut state = ViewState::default();
    let mut last = None;
    let mut status = "q quit   left/right: GPU".to_string();
    let mut dirty = true;
    let mut open = true;
    loop {
        while open {
            match rx.try_recv() {
                Ok(Ok(Some(tick))) => {
                    let report = pipeline.process(&tick)?;
                    state.record(&report);
                    last = Some(report);
                    dirty = true;
                }
                Ok(Ok(None)) | Err(TryRecvError::Disconnected) => {
                    open = false;
                    status = "replay finished   q quit   left/right: GPU".to_string();
                    dirty = true;
                }
                Ok(Err(e)) => {
                    open = false;
                    status = format!("sampling stopped: {e}   q quit");
                    dirty = true;
                }
                Err(TryRecvError::Empty) => break,
            }
        }
        if dirty {
            if let Some(report) = &last {
                let view = state.view(source, &pipeline.monitor, report, &status);
                terminal
                    .draw(|f| draw(f, &view))
                    .map_err(|e| WatchError::Terminal(e.to_string()))?;
            }
            dirty = false;
        }
        if event::poll(Duration::from_millis(100))
            .map_err(|e| WatchError::Terminal(e.to_string()))?
        {
            if let Event::Key(k) = event::read().map_err(|e| WatchError::Terminal(e.to_string()))? {
                if k.kind != KeyEventKind::Press {
                    continue;
                }
                match k.code {
                    KeyCode::Char('q') | KeyCode::Esc => return Ok(()),
                    KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                        return Ok(())
                    }
                    KeyCode::Right | KeyCode::Tab => {
                        state.pinned = true;
                        state.selected += 1;
                        if let Some(r) = &last {
                            state.selected %= r.gpus.len().max(1);
                        }
                        dirty = true;
                    }
                    KeyCode::Left => {
                        state.pinned = true;
                        state.selected = state.selected.saturating_sub(1);
                        dirty = true;
                    }
                    _ => {}
                }
            } else {
                dirty = true;
            }
        }
    }
}
