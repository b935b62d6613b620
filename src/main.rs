//! The `kaas-gitops` binary: parse the command line, run, exit with the status.

use std::process::ExitCode;

use clap::Parser;

/// mimalloc, as uv and ruff use: rendering a fleet is millions of small allocations across
/// threads, where glibc's allocator costs a fifth of the time (BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = kaas_gitops::cli::Cli::parse();
    kaas_gitops::commands::run(cli).into()
}
