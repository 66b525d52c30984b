//! Outputs that other programs read.

pub mod prometheus;
