//! The command line, exactly as typed (`--help` is generated from these doc comments), and the
//! terminal: the printer and how diagnostics are drawn. The only module that knows clap.

use std::path::PathBuf;

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};

mod diagnostics;
pub(crate) mod generate;
pub(crate) mod output;
pub(crate) mod printer;

pub use printer::Printer;

/// Renders a GitOps repository for Kubernetes-as-a-Service on Cluster API with Kamaji hosted
/// control planes, applied by Flux.
///
/// People write `kaas.yaml` (the platform) and one `tenants/<name>.yaml` per tenant cluster;
/// kaas-gitops writes `overlays/` and `flux/` from them.
///
/// Exit codes: 0 done; 1 something to fix (invalid spec, drift under --check, a missing pin
/// under --locked, findings of validate); 2 the environment failed (file system, git,
/// registry, kustomize) or the command line is wrong.
#[derive(Debug, Parser)]
#[command(name = "kaas-gitops", version, max_term_width = 100)]
pub struct Cli {
    /// The repository to work on.
    #[arg(
        long,
        global = true,
        value_name = "DIR",
        default_value = ".",
        env = "KAAS_REPO",
        help_heading = "Global options"
    )]
    pub repo: PathBuf,
    /// Hide progress on stderr; errors are always printed, and data on stdout stays.
    #[arg(
        short,
        long,
        global = true,
        conflicts_with = "verbose",
        help_heading = "Global options"
    )]
    pub quiet: bool,
    /// Print more detail: -v every file written, notes, render's timings and cache use; -vv also
    /// validate's time per step and the whole run's time.
    #[arg(short, long, global = true, action = ArgAction::Count, help_heading = "Global options")]
    pub verbose: u8,
    /// Colour in messages: auto (on a terminal, unless NO_COLOR is set), always or never.
    #[arg(long, global = true, value_enum, default_value_t = Color::Auto, help_heading = "Global options")]
    pub color: Color,
    /// Seconds that a run which writes (`render`, `pin`, `pr`, each render of `watch`) waits for
    /// another kaas-gitops run on the same repository to finish before giving up (exit 2). Only
    /// one run writes at a time; the other commands only read and never wait.
    #[arg(long, global = true, value_name = "SECONDS", env = "KAAS_LOCK_TIMEOUT", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(0..=3600), help_heading = "Global options")]
    pub lock_timeout: u64,
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

/// The output format (docs/output.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Messages for people.
    Human,
    /// One JSON document on stdout, the same envelope for every command, also on failure.
    Json,
    /// GitHub Actions annotations (`::error file=...,line=...::`) on stdout.
    Github,
}

/// The output format of a command without a GitHub Actions form.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum PlainFormat {
    /// Messages for people.
    #[default]
    Human,
    /// One JSON document on stdout, the same envelope for every command, also on failure.
    Json,
}

impl From<PlainFormat> for Format {
    fn from(f: PlainFormat) -> Format {
        match f {
            PlainFormat::Human => Format::Human,
            PlainFormat::Json => Format::Json,
        }
    }
}

/// `--format` of the commands with a GitHub Actions form.
#[derive(Debug, Clone, Copy, Args)]
pub struct FormatArgs {
    /// Output format: messages for people, one JSON document on stdout (docs/output.md), or
    /// GitHub Actions annotations on stdout.
    #[arg(short = 'o', long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

/// `--format` of the other commands that report something.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct PlainFormatArgs {
    /// Output format: messages for people, or one JSON document on stdout (docs/output.md).
    #[arg(short = 'o', long, value_enum, default_value_t = PlainFormat::Human)]
    pub format: PlainFormat,
}

impl PlainFormatArgs {
    /// As the common format.
    pub fn get(self) -> Format {
        self.format.into()
    }
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
    ///
    /// Tenants whose inputs are unchanged (the hash recorded in their overlay) are skipped. In a
    /// git repository local caches in its git folder (.git/kaas-gitops/) make repeated runs fast: file stats
    /// that prove a no-op render or a passing check unchanged since the last run that compared
    /// the files, and parsed tenant files by content hash. KAAS_GITOPS_NO_CACHE=1 turns them
    /// off. --check compares every file (or proves each unchanged by its stats); --full
    /// re-renders and compares every file.
    Render(RenderArgs),
    /// Print what `render` would change, as a unified diff. Always exits 0 unless the inputs
    /// are invalid (exit 1), which with --locked includes an image without a pin in kaas.lock.
    Diff(DiffArgs),
    /// Propose one tenant's change as a branch `<git.branchPrefix><TENANT>` and print the pull
    /// request's title and markdown body.
    ///
    /// The branch starts at BASE and gets one commit with the working tree's tenant file and
    /// what it renders (that tenant's overlay and Flux entry, and the platform layer only when
    /// the change needs it). Built from git objects: the checked-out branch, the working tree and
    /// the index are left as they were. Rerunning after another edit updates the same branch.
    ///
    /// `--platform` proposes `kaas.yaml` and `kaas.lock` and everything they re-render instead;
    /// `--all-changed` makes one branch per tenant that changed. With `--push REMOTE --open` the
    /// pull (merge) request is opened on GitHub, GitLab or Gitea/Forgejo, or the open one
    /// updated, and its URL printed (docs/git.md).
    Pr(PrArgs),
    /// Move tenants to a newer Kubernetes version, one allowed step at a time.
    ///
    /// Edits `spec.kubernetes.version` of each selected tenant file in place (only that scalar
    /// changes: comments and formatting stay), renders, and prints the plan: who moves from
    /// what to what, and who needs further steps. A step is one minor up, to the newest patch
    /// of that minor in `spec.upgrades.kubernetesReleases` (or the exact version asked for).
    /// Nothing is written when any selected tenant cannot take its step (docs/upgrades.md).
    ///
    /// `--patch` moves each tenant to the newest listed patch of its own minor instead; `--to`
    /// is a chained upgrade that writes each next step only once the management cluster runs
    /// the previous one healthy (for a scheduled job). A tenant with `maintenanceWindows` (its
    /// own, or its wave's) moves only while one is open; outside them nothing is written for it
    /// and the plan says when the next one opens.
    Upgrade(UpgradeArgs),
    /// Resolve every image's tag to the digest of its manifest and record it in kaas.lock.
    ///
    /// Pins are sticky: without --update only images that have no pin are resolved. Each
    /// manifest's sha256 is checked against the digest the registry states. kaas.lock is
    /// rewritten only when it changes, and left untouched when anything fails (exit 2 for a
    /// registry fault, 1 for a tag that does not exist). `render` never touches the network.
    ///
    /// Credentials come from the Docker config file ($DOCKER_CONFIG/config.json or
    /// ~/.docker/config.json, including credential helpers); registries listed in
    /// spec.registries.insecure are reached over plain HTTP.
    Pin(PinArgs),
    /// Push each tenant's OCI artifact (spec.flux.delivery.mode: oci) from a commit's rendered tree.
    ///
    /// Reads the commit (HEAD by default; never the work tree), builds per tenant a reproducible
    /// artifact of its overlay and base/tenant/, and pushes it only when the tag names another
    /// manifest: blobs first, the manifest last, so a run stopped at any point leaves every tag at
    /// complete content and the next run finishes the job. Credentials come from the Docker
    /// config file as for `pin`. Exit 2 when a registry push failed (the others are done).
    Publish(PublishArgs),
    /// Check the rendered fleet before Flux sees it: every object under overlays/ and flux/
    /// against its CRD schema and CEL rules, references and names across the fleet, provider
    /// contracts, and that every folder builds with kustomize.
    ///
    /// Reports every finding with its file and line; exits 1 on any error-level finding, 2 when
    /// the CRD folder cannot be read or kustomize is missing.
    Validate(ValidateArgs),
    /// Print the JSON Schema of the Tenant and Platform files (for editors).
    ///
    /// One schema for both: `kind: Platform` selects the platform file's, anything else the
    /// tenant file's. Save it (`kaas-gitops schema > kaas.schema.json`) and point the editor's
    /// YAML language server at it for kaas.yaml and tenants/*.yaml (see README.md).
    Schema,
    /// Render on every change under tenants/, base/, kaas.yaml and kaas.lock, until Ctrl-C.
    ///
    /// A burst of saves becomes one render; only tenants whose inputs changed are rendered
    /// again. An invalid file prints the same error as `render` and leaves the overlays as they
    /// are; the watcher keeps running and renders again once the file is fixed.
    Watch(WatchArgs),
    /// Datastore backups: the etcd snapshots rendered from `spec.backups` (docs/backup.md).
    Backup(BackupArgs),
    /// Record in kaas.lock the datastore schema and user that tenants deployed before
    /// kaas-gitops named them run on, so a control plane re-created from git finds its data.
    ///
    /// Kamaji names a TenantControlPlane's etcd key prefix (or SQL database) and datastore user
    /// after its UID unless told otherwise, and never changes either. For each TENANT (default:
    /// every tenant in tenants/) this reads the TenantControlPlane from the management cluster
    /// (get on tenantcontrolplanes.kamaji.clastix.io in the tenant's namespace) and records its
    /// status.storage.setup.schema and .user under `datastores:` in kaas.lock; the next `render`
    /// writes them into the KamajiControlPlane. A tenant with no TenantControlPlane yet is left to
    /// `render`, which names it `kaas_<tenant>`. Refuses (exit 1, writing nothing) when the
    /// cluster runs other names than kaas.lock records; exit 2 when the cluster cannot be read.
    /// Writes only kaas.lock, and only when it changes (docs/backup.md).
    Adopt(AdoptArgs),
    /// Show what Flux made of the fleet on the management cluster, one row per tenant and one
    /// for the platform.
    ///
    /// For each: the revision its Flux Kustomization last applied against the revision the
    /// repository renders (HEAD, or --revision), Ready with its message; its HelmReleases; the
    /// Cluster's phase, the KamajiControlPlane's version and readiness, each MachineDeployment's
    /// ready/desired replicas and autoscaler bounds. What the repository renders but the
    /// cluster lacks is shown as Missing; an object without a status as NoStatus, never as
    /// Ready. Reads only; exit 2 when the cluster cannot be read (docs/status.md).
    Status(StatusArgs),
    /// Wait until Flux has applied a revision (HEAD, or --revision) to the named tenants (all
    /// when none) and the platform, and their Kustomizations and HelmReleases are Ready.
    ///
    /// Exit 0 when they are; 1 as soon as one has failed at that revision, or at the timeout,
    /// naming the object and its message; 2 when the cluster cannot be read. --reconcile first
    /// asks Flux to fetch now what is behind the revision, and only that (a source not at it, a
    /// Kustomization whose source is), as `flux reconcile` does. The step after a merge (and
    /// after `publish`) in CI (docs/status.md).
    Wait(WaitArgs),
    /// Print a kubeconfig for a person to log in to a tenant cluster with the company's identity.
    ///
    /// The tenant API server's address is read from the management cluster (the tenant's
    /// Cluster, which the tenant's `<tenant>-admin` Role lets its admin groups get), its CA from
    /// the tenant API server itself (`kube-public/cluster-info`, readable without credentials),
    /// checked by a second request that trusts only that CA; `--ca-sha256` pins it. The user is
    /// an exec credential plugin, `kubectl oidc-login get-token` (kubelogin, not shipped), for the
    /// tenant's OIDC issuer. No secret is in it. `--admin` prints the admin kubeconfig of the
    /// `<tenant>-kubeconfig` Secret instead, for break-glass use by those who may read it, with a
    /// warning. Exit 1 for a tenant or issuer the repository does not have, 2 when a cluster
    /// cannot be read, has no such tenant yet, or its CA fails the checks (docs/access.md).
    Kubeconfig(KubeconfigArgs),
    /// Print a shell completion script, e.g. `kaas-gitops completions bash >
    /// /etc/bash_completion.d/kaas-gitops` (README.md, "Shell completions").
    Completions(CompletionsArgs),
    /// Print the manual page (roff), e.g. `kaas-gitops man | man -l -`, or save it as
    /// `kaas-gitops.1` in a `man1` folder.
    Man,
}

/// `completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

impl Command {
    /// The `kind` of the JSON envelope this command prints under `--format json`; `None` when
    /// it has no JSON form (docs/output.md says why for each).
    pub fn json_kind(&self) -> Option<&'static str> {
        let format = match self {
            Command::Init(a) => a.output.get(),
            Command::Render(a) => a.output.format,
            Command::Diff(a) => a.output.get(),
            Command::Pr(a) => a.output.get(),
            Command::Upgrade(a) => a.output.get(),
            Command::Pin(a) => a.output.format,
            Command::Publish(a) => a.output.format,
            Command::Validate(a) => a.output.format,
            Command::Status(a) => a.output.format,
            Command::Wait(a) => a.output.format,
            Command::Backup(BackupArgs {
                command: BackupCommand::RestorePlan(a),
            }) => a.output.get(),
            Command::Schema
            | Command::Watch(_)
            | Command::Kubeconfig(_)
            | Command::Adopt(_)
            | Command::Completions(_)
            | Command::Man => {
                return None;
            }
        };
        if format != Format::Json {
            return None;
        }
        Some(match self {
            Command::Init(_) => "InitResult",
            Command::Render(_) => "RenderResult",
            Command::Diff(_) => "DiffResult",
            Command::Pr(_) => "PrResult",
            Command::Upgrade(_) => "UpgradeResult",
            Command::Pin(_) => "PinResult",
            Command::Publish(_) => "PublishResult",
            Command::Validate(_) => "ValidateResult",
            Command::Status(_) => "StatusResult",
            Command::Wait(_) => "WaitResult",
            Command::Backup(_) => "RestorePlanResult",
            Command::Schema
            | Command::Watch(_)
            | Command::Kubeconfig(_)
            | Command::Adopt(_)
            | Command::Completions(_)
            | Command::Man => {
                return None;
            }
        })
    }
}

/// The management cluster, found as kubectl finds it.
#[derive(Debug, Clone, Args)]
pub struct ClusterArgs {
    /// The management cluster's kubeconfig [default: KUBECONFIG, else ~/.kube/config].
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use [default: its current-context].
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
}

/// Which of several management clusters a command reads (`status`, `wait`).
#[derive(Debug, Clone, Args)]
pub struct PlacementArgs {
    /// Which of kaas.yaml's `spec.managementClusters` the context reaches: only the tenants
    /// placed there are read [default: the default management cluster].
    #[arg(long, value_name = "NAME", conflicts_with = "all_management_clusters")]
    pub management_cluster: Option<String>,
    /// Read every management cluster kaas.yaml lists, each through its own kubeconfig context
    /// (its `context` in kaas.yaml, or `--context-of`), in one table with a column for where
    /// each tenant runs.
    #[arg(long, conflicts_with = "context")]
    pub all_management_clusters: bool,
    /// The kubeconfig context of a management cluster, `NAME=CONTEXT` (repeatable), in place of
    /// its `context` in kaas.yaml; with `--all-management-clusters`.
    #[arg(long, value_name = "NAME=CONTEXT", requires = "all_management_clusters", value_parser = name_and_context)]
    pub context_of: Vec<(String, String)>,
}

/// `NAME=CONTEXT` of `--context-of`.
fn name_and_context(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((n, c)) if !n.is_empty() && !c.is_empty() => Ok((n.to_string(), c.to_string())),
        _ => Err(format!("`{s}` is not NAME=CONTEXT, e.g. `us-1=prod-us-1`")),
    }
}

/// `kubeconfig`.
#[derive(Debug, Args)]
pub struct KubeconfigArgs {
    /// The tenant (the name of its file under tenants/).
    #[arg(value_name = "TENANT")]
    pub tenant: String,
    /// The OIDC issuer to log in with, by its name [default: the tenant's only one].
    #[arg(long, value_name = "NAME", conflicts_with = "admin")]
    pub issuer: Option<String>,
    /// An OAuth scope to ask for besides `openid` (repeatable), e.g. `--scope groups --scope
    /// email` for Keycloak or Dex.
    #[arg(long = "scope", value_name = "SCOPE", conflicts_with = "admin")]
    pub scopes: Vec<String>,
    /// Print the admin kubeconfig of the `<tenant>-kubeconfig` Secret instead (break-glass; needs
    /// get on that Secret, which kaas-gitops grants no one).
    #[arg(long)]
    pub admin: bool,
    /// The SHA-256 fingerprint of the tenant's CA certificate, as `openssl x509 -noout
    /// -fingerprint -sha256` prints it (colons and `sha256:` optional): refuse any other CA.
    /// Without it the CA is trusted on first use and its fingerprint printed to compare.
    #[arg(long, value_name = "FINGERPRINT", conflicts_with = "admin")]
    pub ca_sha256: Option<String>,
    /// Reach the tenant API server at this URL (a tunnel, a port-forward, a bastion) instead of
    /// the Cluster's endpoint; its certificate is still checked for the endpoint's host, which the
    /// kubeconfig names as `tls-server-name`.
    #[arg(long, value_name = "URL", conflicts_with = "admin")]
    pub server: Option<String>,
    /// The management cluster.
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// `status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Only these tenants (the platform row is always shown).
    #[arg(value_name = "TENANT")]
    pub tenants: Vec<String>,
    /// The revision to compare with: a commit (full or at least 7 hex digits) or a Flux
    /// revision such as `main@sha1:<sha>` [default: the repository's HEAD].
    #[arg(long, value_name = "REV")]
    pub revision: Option<String>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub placement: PlacementArgs,
    #[command(flatten)]
    pub output: FormatArgs,
}

/// `wait`.
#[derive(Debug, Args)]
pub struct WaitArgs {
    /// Only these tenants (and the platform, which they depend on).
    #[arg(value_name = "TENANT")]
    pub tenants: Vec<String>,
    /// The revision to wait for, as for `status` [default: the repository's HEAD].
    #[arg(long, value_name = "REV")]
    pub revision: Option<String>,
    /// How long to wait, e.g. `90s`, `10m`.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = humantime::parse_duration)]
    pub timeout: std::time::Duration,
    /// Ask Flux now, with the `reconcile.fluxcd.io/requestedAt` annotation `flux reconcile` sets,
    /// to fetch each source that is behind the revision (the GitRepository, a changed tenant's
    /// OCIRepository) and to reconcile each Kustomization whose source has it but which has not
    /// applied it. Nothing already at the revision is asked: that would re-apply it.
    #[arg(long)]
    pub reconcile: bool,
    /// Wait only until Flux applied the revision (Kustomizations and HelmReleases Ready), not
    /// for the tenants' clusters to catch up (Cluster Available, control plane at its version,
    /// MachineDeployments rolled out).
    #[arg(long)]
    pub flux_only: bool,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub placement: PlacementArgs,
    #[command(flatten)]
    pub output: FormatArgs,
}

/// `backup`.
#[derive(Debug, Args)]
pub struct BackupArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: BackupCommand,
}

/// The `backup` subcommands.
#[derive(Debug, Subcommand)]
pub enum BackupCommand {
    /// Print the exact commands (kubectl, flux) that restore the etcd behind one tenant's
    /// control plane from a snapshot: suspend Flux, pause the Cluster, stop the control plane
    /// and etcd, restore every member's volume, start everything again.
    ///
    /// For a tenant on the shared `default` DataStore the plan restores that datastore and
    /// stops every tenant on it. Prints to stdout; changes nothing.
    RestorePlan(RestorePlanArgs),
}

/// `adopt`.
#[derive(Debug, Args)]
pub struct AdoptArgs {
    /// The tenants to read (stems of `tenants/<TENANT>.yaml`) [default: every tenant].
    #[arg(value_name = "TENANT")]
    pub tenants: Vec<String>,
    /// Print what would be recorded; leave kaas.lock as it is.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// `backup restore-plan`.
#[derive(Debug, Args)]
pub struct RestorePlanArgs {
    /// The tenant: the stem of `tenants/<TENANT>.yaml`.
    pub tenant: String,
    /// The snapshot file to restore (e.g. `acme-etcd-20260101T000000Z.db`); default: the newest.
    #[arg(long, value_name = "FILE")]
    pub snapshot: Option<String>,
    #[command(flatten)]
    pub output: PlainFormatArgs,
}

/// `init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Where to create the repository (default: --repo).
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub output: PlainFormatArgs,
}

/// The render options of every command that renders (`render`, `diff`, `pr`, `upgrade`,
/// `watch`).
#[derive(Debug, Args, Clone, Copy, Default)]
pub struct RenderOptionArgs {
    /// Fail (exit 1) when an image has no digest in kaas.lock, instead of rendering the tag
    /// alone with a warning. Use it in CI.
    #[arg(long)]
    pub locked: bool,
}

/// Options shared by the commands that render the fleet on disk (`render`, `diff`).
#[derive(Debug, Args, Clone, Default)]
pub struct SelectArgs {
    /// Render only this tenant (and the platform layer and flux/); repeatable.
    #[arg(long = "tenant", value_name = "NAME")]
    pub tenants: Vec<String>,
    #[command(flatten)]
    pub render: RenderOptionArgs,
    /// Re-render and compare every tenant, including those whose overlay records the same input
    /// hash as this run (the default skips them). Catches hand edits inside overlays.
    #[arg(long)]
    pub full: bool,
}

impl From<&SelectArgs> for crate::render::Options {
    fn from(args: &SelectArgs) -> Self {
        crate::render::Options {
            tenants: args.tenants.clone(),
            locked: args.render.locked,
            full: args.full,
        }
    }
}

/// `render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// Render in memory only: exit 1 and print a unified diff when the files on disk differ.
    #[arg(long)]
    pub check: bool,
    #[command(flatten)]
    pub output: FormatArgs,
    /// After writing, commit exactly the files this run wrote or deleted on the current branch.
    /// Nothing written: no commit. Other changes in the working tree and the index are left
    /// alone. Author: `git.author` in kaas.yaml, else git config.
    #[arg(long, conflicts_with = "check")]
    pub commit: bool,
    #[command(flatten)]
    pub select: SelectArgs,
}

/// `pr`.
#[derive(Debug, Default, Args)]
pub struct PrArgs {
    /// The tenant: the stem of `tenants/<TENANT>.yaml`. Its file is taken from the working tree
    /// as it is (a missing file proposes deleting the tenant).
    #[arg(required_unless_present_any = ["platform", "all_changed"], conflicts_with_all = ["platform", "all_changed"])]
    pub tenant: Option<String>,
    /// Propose the platform instead: `kaas.yaml` and `kaas.lock` as they are in the working tree
    /// and everything they re-render, on one branch `<prefix>platform`; the body lists the
    /// images that moved and how each tenant's overlay changes.
    #[arg(long, conflicts_with = "all_changed")]
    pub platform: bool,
    /// One branch (and with --open one pull request) per tenant whose files or rendered output
    /// differ from the base, in one run.
    #[arg(long)]
    pub all_changed: bool,
    /// Where the branch starts: a branch, a remote-tracking branch or a commit (default: the
    /// current branch's upstream, else `main`).
    #[arg(long, value_name = "BRANCH")]
    pub base: Option<String>,
    /// Push the branch to this remote. A push that would drop commits on the remote branch is
    /// refused (see --force-with-lease).
    #[arg(long, value_name = "REMOTE")]
    pub push: Option<String>,
    /// With --push: replace the remote branch even if that drops commits, but only while it is
    /// still where this repository last saw it (its remote-tracking branch).
    #[arg(long, requires = "push")]
    pub force_with_lease: bool,
    /// Print only the markdown body, for `gh pr create --body-file -` (the title goes to
    /// stderr); by default the title, a blank line, then the body.
    #[arg(long, conflicts_with = "open")]
    pub body_only: bool,
    /// With --push: open the pull (merge) request for the pushed branch, or update the one that
    /// is open (title, body, labels), never a second one; print its URL. The forge is found
    /// from the remote's URL; the token is read from GH_TOKEN or GITHUB_TOKEN, GITLAB_TOKEN,
    /// or GITEA_TOKEN, never printed (docs/git.md).
    #[arg(long, requires = "push")]
    pub open: bool,
    /// The forge, when the remote's host does not tell (self-hosted instances).
    #[arg(long, value_enum, value_name = "FORGE", requires = "open")]
    pub forge: Option<Forge>,
    /// The forge's API base URL for a self-hosted instance, e.g.
    /// https://git.example.org/api/v1 (Gitea), https://gitlab.example.org/api/v4,
    /// https://github.example.org/api/v3 (default: derived from the remote's URL).
    #[arg(long, value_name = "URL", requires = "open")]
    pub forge_url: Option<String>,
    /// With --open: open new requests as drafts (GitHub: draft; GitLab: `Draft:` title;
    /// Gitea: `WIP:` title).
    #[arg(long, requires = "open")]
    pub draft: bool,
    /// With --open: add this label (repeatable); labels already there are kept.
    #[arg(long = "label", value_name = "LABEL", requires = "open")]
    pub labels: Vec<String>,
    /// With --open: ask this user to review a new request (repeatable).
    #[arg(long = "reviewer", value_name = "USER", requires = "open")]
    pub reviewers: Vec<String>,
    #[command(flatten)]
    pub render: RenderOptionArgs,
    #[command(flatten)]
    pub output: PlainFormatArgs,
}

/// A forge `pr --open` talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Forge {
    /// github.com or GitHub Enterprise Server.
    Github,
    /// gitlab.com or a self-managed GitLab.
    Gitlab,
    /// Gitea or Forgejo.
    Gitea,
}

/// `upgrade`.
#[derive(Debug, Args)]
pub struct UpgradeArgs {
    /// The target: `vX.Y` (the newest listed patch of that minor) or an exact `vX.Y.Z`.
    #[arg(long = "kubernetes", value_name = "VERSION", required_unless_present_any = ["patch", "to"])]
    pub kubernetes: Option<String>,
    /// Instead of --kubernetes: a chained upgrade to `vX.Y[.Z]`, several minors away if need be.
    /// Each run writes the next step only (the control plane one minor, then its pools, then
    /// the next minor), and only once the management cluster reports the previous step healthy
    /// (the KamajiControlPlane at its version, every MachineDeployment rolled out); a step
    /// whose controller gave up stops the chain (exit 1). Run it until every tenant arrived.
    #[arg(long, value_name = "VERSION", conflicts_with_all = ["kubernetes", "patch"])]
    pub to: Option<String>,
    /// Instead of --kubernetes: move each selected tenant to the newest patch of its own minor
    /// listed in `spec.upgrades.kubernetesReleases` (never another minor, never down).
    #[arg(long, conflicts_with = "kubernetes")]
    pub patch: bool,
    /// The tenants to move (stems of `tenants/<TENANT>.yaml`); default: every tenant.
    #[arg(value_name = "TENANT", conflicts_with_all = ["selector", "wave"])]
    pub tenants: Vec<String>,
    /// Only tenants whose `metadata.labels` carry LABEL=VALUE.
    #[arg(long, value_name = "LABEL=VALUE", conflicts_with = "wave")]
    pub selector: Option<String>,
    /// Only the tenants of this wave of `spec.upgrades.waves`; refused while an earlier wave's
    /// committed tenant files are not all at the target (with --to: also while one of its
    /// tenants is not healthy at it on the management cluster).
    #[arg(long, value_name = "NAME")]
    pub wave: Option<String>,
    /// Print the plan, write nothing.
    #[arg(long, conflicts_with = "pr")]
    pub dry_run: bool,
    /// Then propose each moved tenant as its own branch and pull-request text, as `pr` does.
    #[arg(long)]
    pub pr: bool,
    /// With --pr: where the branches start (as `pr --base`).
    #[arg(long, value_name = "BRANCH", requires = "pr")]
    pub base: Option<String>,
    /// With --pr: push each branch to this remote (as `pr --push`).
    #[arg(long, value_name = "REMOTE", requires = "pr")]
    pub push: Option<String>,
    /// Release pools held for a control plane step without asking the management cluster
    /// whether the control plane runs the new version (you checked it yourself).
    #[arg(long)]
    pub no_cluster_check: bool,
    /// With --to: a step still not healthy this long (e.g. `2h`) after the commit that wrote it
    /// (the newest commit that changed the tenant's file) stops the chain like a step its
    /// controller gave up on: exit 1, naming what it still waits for. Default: no deadline
    /// (each run says what the step waits for, and writes nothing).
    #[arg(long, value_name = "DURATION", requires = "to", value_parser = humantime::parse_duration)]
    pub step_deadline: Option<std::time::Duration>,
    /// Judge maintenance windows as at this instant, an RFC 3339 time such as
    /// `2026-12-05T01:30:00Z`, instead of the clock (to preview a window, and for tests).
    #[arg(long, value_name = "TIME", env = "KAAS_NOW")]
    pub now: Option<String>,
    /// The management cluster `upgrade` asks whether a control plane step is done, before it
    /// releases the pools held for it.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub render: RenderOptionArgs,
    #[command(flatten)]
    pub output: PlainFormatArgs,
}

/// `pin`.
#[derive(Debug, Args)]
pub struct PinArgs {
    /// Apply tag policies (pick the newest matching tag) and re-resolve every selected tag,
    /// even those already pinned; print what moved.
    #[arg(long)]
    pub update: bool,
    /// Seconds to wait for a registry: connect, each read, and each of the (at most 3) attempts
    /// of a request.
    #[arg(long, value_name = "SECONDS", env = "KAAS_REGISTRY_TIMEOUT", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=600))]
    pub timeout: u64,
    #[command(flatten)]
    pub output: FormatArgs,
    /// Only these images: a repository from kaas.yaml (`docker.io/clastix/kamaji`, or
    /// `clastix/kamaji`), optionally with `:TAG`. Other pins stay as they are.
    #[arg(value_name = "IMAGE")]
    pub images: Vec<String>,
    #[command(flatten)]
    pub fetch: CrdFetchArgs,
}

/// `publish`.
#[derive(Debug, Args)]
pub struct PublishArgs {
    /// The commit whose rendered tree is published: anything git names a commit by
    /// [default: HEAD].
    #[arg(long, value_name = "REV")]
    pub revision: Option<String>,
    /// Only compare: print which tenants a publish would push, push nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Seconds to wait for the registry: connect, each read, each request.
    #[arg(long, value_name = "SECONDS", env = "KAAS_REGISTRY_TIMEOUT", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=600))]
    pub timeout: u64,
    #[command(flatten)]
    pub output: FormatArgs,
}

/// Where the release assets holding the CRDs come from (`validate`, `pin`).
#[derive(Debug, Clone, Args)]
pub struct CrdFetchArgs {
    /// A mirror laid out like https://github.com (`<owner>/<repo>/releases/download/<version>/<file>`)
    /// to download the CRD release assets from, for machines without access to GitHub.
    #[arg(long, value_name = "URL", env = "KAAS_CRD_MIRROR")]
    pub crd_mirror: Option<String>,
    /// The folder downloaded CRD release assets are kept in [default: the user's cache folder,
    /// e.g. ~/.cache/kaas-gitops/crds].
    #[arg(long, value_name = "DIR", env = "KAAS_CRD_CACHE")]
    pub crd_cache: Option<PathBuf>,
}

/// `diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    #[command(flatten)]
    pub select: SelectArgs,
    #[command(flatten)]
    pub output: PlainFormatArgs,
}

/// `watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Commit each render that changed files, as `render --commit` does.
    #[arg(long)]
    pub commit: bool,
    #[command(flatten)]
    pub render: RenderOptionArgs,
}

/// `validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// A folder of CustomResourceDefinition YAML (searched recursively) to check custom
    /// resources against, instead of the CRDs of the releases kaas.yaml pins (which validate
    /// downloads once from their GitHub releases and then reads from its cache).
    #[arg(long, value_name = "DIR", env = "KAAS_CRDS")]
    pub crds: Option<PathBuf>,
    #[command(flatten)]
    pub fetch: CrdFetchArgs,
    #[command(flatten)]
    pub output: FormatArgs,
    /// Skip the kustomize build of every folder (for machines without kustomize or kubectl).
    /// CI should not use it.
    #[arg(long)]
    pub no_kustomize: bool,
}
