//! The terminal dashboard, kept in three layers as in `bottom`: [`view`] converts reports into
//! what is drawn (numbers to strings and chart points), [`render`] draws a view into any ratatui
//! backend (a real terminal, or `TestBackend` in tests), and [`terminal`] owns the screen, the
//! keys and the loop. None of it knows where samples come from.

pub mod render;
pub mod terminal;
pub mod view;
