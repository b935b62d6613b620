//! The shell: each command turns settings into a pipeline run and an exit status.

mod backup;
mod commit;
mod diff;
mod init;
pub mod inputs;
mod pin;
pub mod pipeline;
mod pr;
mod pr_body;
mod printer;
mod render;
mod schema;
mod summary;
mod validate;
mod watch;

use std::process::ExitCode;

use crate::cli::{Cli, Command};
pub use printer::Printer;

/// How a command ended (see `cli.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Done.
    Success,
    /// Something the user must fix.
    Failure,
    /// The environment failed.
    Error,
}

impl From<ExitStatus> for ExitCode {
    fn from(s: ExitStatus) -> ExitCode {
        match s {
            ExitStatus::Success => ExitCode::SUCCESS,
            ExitStatus::Failure => ExitCode::from(1),
            ExitStatus::Error => ExitCode::from(2),
        }
    }
}

/// Runs one command line.
pub fn run(cli: Cli) -> ExitStatus {
    let printer = Printer::new(cli.quiet, cli.verbose, cli.color);
    let result = match &cli.command {
        Command::Init(args) => init::run(&printer, args.dir.as_deref().unwrap_or(&cli.repo)),
        Command::Render(args) => render::run(&printer, &cli.repo, args),
        Command::Diff(args) => diff::run(&printer, &cli.repo, &args.select),
        Command::Pr(args) => pr::run(&printer, &cli.repo, args),
        Command::Pin(args) => pin::run(&printer, &cli.repo, args),
        Command::Validate(args) => validate::run(&printer, &cli.repo, args),
        Command::Schema => schema::run(),
        Command::Watch(args) => watch::run(&printer, &cli.repo, args),
        Command::Backup(args) => backup::run(&printer, &cli.repo, args),
    };
    match result {
        Ok(status) => status,
        Err(e) => {
            printer.error_chain(&e);
            ExitStatus::Error
        }
    }
}
