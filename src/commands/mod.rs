//! The shell: each command turns the command line (`cli`) into a pipeline run over the
//! repository (`repo`) and an exit status.

mod adopt;
mod backup;
mod commit;
mod crds;
mod diff;
mod init;
mod kubeconfig;
mod pin;
pub mod pipeline;
mod pr;
pub(crate) mod publish;
mod render;
mod schema;
mod status;
mod summary;
mod upgrade;
mod validate;
mod wait;
mod watch;

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use crate::cli::{Cli, Command, Printer};
use crate::repo::process_lock::{self, Guard};

/// The management cluster `--kubeconfig`/`--context` name, with the client's default timeout.
pub(crate) fn cluster_target(args: &crate::cli::ClusterArgs) -> crate::cluster::Target {
    crate::cluster::Target {
        kubeconfig: args.kubeconfig.clone(),
        context: args.context.clone(),
        timeout: None,
    }
}

/// Prints every problem of a run ([`Printer::invalid`]) and returns exit 1.
pub(crate) fn report_invalid(
    printer: &Printer,
    format: crate::cli::Format,
    diags: Vec<crate::diagnostics::Diagnostic>,
) -> ExitStatus {
    printer.invalid(format, diags);
    ExitStatus::Failure
}

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
    let started = std::time::Instant::now();
    let printer = Printer::new(cli.quiet, cli.verbose, cli.color).json(cli.command.json_kind());
    // Held until this function returns: the whole read -> plan -> write of a run is one step
    // for every other kaas-gitops on this repository.
    let _lock = match lock(&printer, &cli) {
        Ok(guard) => guard,
        Err(status) => {
            printer.finish(false);
            return status;
        }
    };
    let result = match &cli.command {
        Command::Init(args) => init::run(&printer, args.dir.as_deref().unwrap_or(&cli.repo)),
        Command::Completions(args) => {
            printer.data(&String::from_utf8_lossy(&crate::cli::generate::completions(args.shell)));
            Ok(ExitStatus::Success)
        }
        Command::Man => crate::cli::generate::man_page().map_err(Into::into).map(|page| {
            printer.data(&String::from_utf8_lossy(&page));
            ExitStatus::Success
        }),
        Command::Render(args) => render::run(&printer, &cli.repo, args),
        Command::Diff(args) => diff::run(&printer, &cli.repo, args),
        Command::Pr(args) => pr::run(&printer, &cli.repo, args),
        Command::Upgrade(args) => upgrade::run(&printer, &cli.repo, args),
        Command::Pin(args) => pin::run(&printer, &cli.repo, args),
        Command::Publish(args) => publish::run(&printer, &cli.repo, args),
        Command::Validate(args) => validate::run(&printer, &cli.repo, args),
        Command::Schema => schema::run(&printer),
        Command::Watch(args) => watch::run(&printer, &cli.repo, args, Duration::from_secs(cli.lock_timeout)),
        Command::Backup(args) => backup::run(&printer, &cli.repo, args),
        Command::Adopt(args) => adopt::run(&printer, &cli.repo, args),
        Command::Status(args) => status::run(&printer, &cli.repo, args),
        Command::Wait(args) => wait::run(&printer, &cli.repo, args),
        Command::Kubeconfig(args) => kubeconfig::run(&printer, &cli.repo, args),
    };
    let status = match result {
        Ok(status) => status,
        Err(e) => {
            printer.error_chain(&e);
            ExitStatus::Error
        }
    };
    // Under --format json, stdout carries one envelope however the command ended.
    printer.finish(status == ExitStatus::Success);
    if printer.very_verbose() {
        printer.status(&format!("took {} ms", started.elapsed().as_millis()));
    }
    // Data the user asked for and did not get is a failed run, whatever the command found.
    if crate::cli::printer::stdout_failed() {
        return ExitStatus::Error;
    }
    status
}

/// Takes the repository lock for the commands that write (issue 9). `render --check` and `diff`
/// only read, so they never wait. A folder that is not a repository yet is left untouched: the
/// command itself reports that.
fn lock(printer: &Printer, cli: &Cli) -> Result<Option<Guard>, ExitStatus> {
    let writes = match &cli.command {
        Command::Render(args) => !args.check,
        Command::Pin(_) | Command::Pr(_) => true,
        Command::Upgrade(args) => !args.dry_run,
        Command::Adopt(args) => !args.dry_run,
        // `watch` takes the lock around each render instead, so `pin` and `pr` can run while it
        // waits for the next save.
        // `backup restore-plan` only prints; `validate` builds overlays in a temp dir.
        Command::Init(_)
        | Command::Diff(_)
        | Command::Schema
        | Command::Watch(_)
        | Command::Backup(_)
        | Command::Status(_)
        | Command::Wait(_)
        | Command::Kubeconfig(_)
        | Command::Publish(_)
        | Command::Validate(_)
        | Command::Completions(_)
        | Command::Man => false,
    };
    if !writes || !is_repository(&cli.repo) {
        return Ok(None);
    }
    let timeout = Duration::from_secs(cli.lock_timeout);
    acquire_lock(printer, &cli.repo, timeout, |who| {
        format!(
            "waiting up to {} s for another kaas-gitops run{who} to finish",
            timeout.as_secs()
        )
    })
    .map(Some)
    .ok_or(ExitStatus::Error)
}

/// Takes the repository lock. While another run holds it, prints `waiting(" (pid N)")` once;
/// when it cannot be had, prints the error with its hint and returns `None`.
pub(crate) fn acquire_lock(
    printer: &Printer,
    repo: &Path,
    timeout: Duration,
    waiting: impl FnOnce(String) -> String,
) -> Option<Guard> {
    let on_wait = |pid: Option<u32>| {
        let who = pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
        printer.status(&waiting(who));
    };
    process_lock::acquire_with(repo, timeout, on_wait)
        .map_err(|e| {
            let hint = e.hint();
            printer.error_chain_hinted(&anyhow::Error::new(e), Some(hint));
        })
        .ok()
}

fn is_repository(repo: &Path) -> bool {
    repo.join(crate::repo::inputs::PLATFORM_PATH).exists() || repo.join(".git").exists()
}
