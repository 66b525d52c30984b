//! vramfit-engine
