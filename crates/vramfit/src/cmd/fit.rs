//! `vramfit fit` (being built).

use crate::error::{CliError, CmdResult};

#[derive(clap::Args)]
pub struct Args {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Arguments, for now.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub rest: Vec<String>,
}

pub fn run(_args: Args) -> CmdResult {
    Err(CliError::input("'fit' is not built yet"))
}
