//! vramfit-watch
