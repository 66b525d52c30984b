//! vramfit-plan
