//! One module per subcommand. Each exposes `Args` (clap) and `run(Args) -> CmdResult`.

pub mod calibrate;
pub mod catalog;
pub mod check;
pub mod doctor;
pub mod extras;
pub mod doctor_recheck;
pub mod fit;
pub mod fit_render;
pub mod from_log;
pub mod inspect;
pub mod python;
pub mod probe;
pub mod run;
pub mod snapshot;
pub mod stress;
pub mod table;
pub mod watch;
