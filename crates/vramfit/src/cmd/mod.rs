//! One module per subcommand. Each exposes `Args` (clap) and `run(Args) -> CmdResult`.

pub mod calibrate;
pub mod catalog;
pub mod check;
pub mod doctor;
pub mod doctor_recheck;
pub mod extras;
pub mod fit;
pub mod fit_render;
pub mod from_log;
pub mod inspect;
pub mod probe;
pub mod python;
pub mod run;
pub mod snapshot;
pub mod stress;
pub mod table;
pub mod watch;
