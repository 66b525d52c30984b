//! vramfit-doctor: crash diagnosis for LLM serving.

pub mod snapshot;
