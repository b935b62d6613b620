//! The command line, exactly as typed. `--help` is generated from these doc comments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Renders a GitOps repository for Kubernetes-as-a-Service on Cluster API with Kamaji hosted
/// control planes, applied by Flux.
///
/// People write `kaas.yaml` (the platform) and one `tenants/<name>.yaml` per tenant cluster;
/// kaas-gitops writes `overlays/` and `flux/` from them.
///
/// Exit codes: 0 done; 1 something to fix (invalid spec, drift under --check, a missing pin
/// under --locked); 2 the environment failed (file system, git, registry).
#[derive(Debug, Parser)]
#[command(name = "kaas-gitops", version, max_term_width = 100)]
pub struct Cli {
    /// The repository to work on.
    #[arg(long, global = true, value_name = "DIR", default_value = ".", env = "KAAS_REPO")]
    pub repo: PathBuf,
    /// Print only errors.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Print more detail (every file written).
    #[arg(short, long, global = true)]
    pub verbose: bool,
    /// Colour in messages: auto (on a terminal, unless NO_COLOR is set), always or never.
    #[arg(long, global = true, value_enum, default_value_t = Color::Auto)]
    pub color: Color,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// When to colour output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Color {
    /// On a terminal unless `NO_COLOR` is set.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// The output format of `render`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Messages for people.
    Human,
    /// One JSON document on stdout.
    Json,
    /// GitHub Actions annotations (`::error file=...,line=...::`) on stdout.
    Github,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a new repository: kaas.yaml, an example tenant, base/ and .gitignore.
    ///
    /// Refuses to overwrite any existing file.
    Init(InitArgs),
    /// Render everything: write changed files under overlays/ and flux/, delete stale ones.
    ///
    /// Prints one line per tenant (created, changed, deleted, unchanged). Writes nothing when
    /// any input is invalid. A second render of the same inputs writes nothing.
    Render(RenderArgs),
    /// Print what `render` would change, as a unified diff. Always exits 0 unless the inputs
    /// are invalid.
    Diff(DiffArgs),
    /// Print the JSON Schema of the Tenant and Platform files (for editors).
    Schema,
}

/// `init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Where to create the repository (default: --repo).
    pub dir: Option<PathBuf>,
}

/// Options shared by the commands that render.
#[derive(Debug, Args, Clone, Default)]
pub struct SelectArgs {
    /// Render only this tenant (and the platform layer and flux/); repeatable.
    #[arg(long = "tenant", value_name = "NAME")]
    pub tenants: Vec<String>,
    /// Fail (exit 1) when an image has no digest in kaas.lock, instead of rendering the tag
    /// alone with a warning. Use it in CI.
    #[arg(long)]
    pub locked: bool,
    /// Re-render and compare every tenant, including those whose overlay records the same input
    /// hash as this run (the default skips them). Catches hand edits inside overlays.
    #[arg(long)]
    pub full: bool,
}

/// `render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// Render in memory only: exit 1 and print a unified diff when the files on disk differ.
    #[arg(long)]
    pub check: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    #[command(flatten)]
    pub select: SelectArgs,
}

/// `diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    #[command(flatten)]
    pub select: SelectArgs,
}
