//! The engine in the loop: launching and stopping engine processes (`proc`), reading what a
//! llama.cpp startup log allocated (`llamalog`), and talking to an OpenAI-compatible server on
//! loopback (`openai`). Used by `probe`, `stress` and `run`.

pub mod argv;
pub mod group;
pub mod llamalog;
pub mod openai;
pub mod proc;
