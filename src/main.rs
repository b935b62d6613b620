//! The `kaas-gitops` binary: parse the command line, run, exit with the status.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = kaas_gitops::cli::Cli::parse();
    kaas_gitops::commands::run(cli).into()
}
