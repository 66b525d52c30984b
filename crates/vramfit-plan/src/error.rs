//! Solver errors: one line, naming the offending value and what to do.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum PlanError {
    /// bad input (an unknown model, quant, engine, or an impossible request)
    #[error("{0}")]
    Input(String),
}

impl PlanError {
    pub fn input(msg: impl Into<String>) -> PlanError {
        PlanError::Input(msg.into())
    }
}
