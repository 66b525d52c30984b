//! vramfit-doctor
