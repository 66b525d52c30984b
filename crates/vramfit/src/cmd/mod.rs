//! One module per subcommand. Each exposes `Args` (clap) and `run(Args) -> CmdResult`.

pub mod catalog;
pub mod check;
pub mod doctor;
pub mod fit;
pub mod inspect;
pub mod probe;
pub mod run;
pub mod snapshot;
pub mod stress;
pub mod table;
pub mod watch;
