//! `upgrade --kubernetes vX.Y [TENANT... | --selector LABEL=VALUE | --wave NAME]`: one allowed
//! step for each selected tenant, written into its file as text (only the version scalars
//! change), rendered with every rule `render` applies, and printed as a plan. Nothing is
//! written unless every selected tenant can take its step and the whole fleet renders.
//!
//! A step to a new minor moves the control plane first and holds the pools that follow it at
//! the old version (`spec.kubernetes.workersVersion`): Kamaji's upgrade guide upgrades the
//! tenant control plane, then the workers (clastix/kamaji `docs/content/guides/upgrade.md`),
//! the version skew policy wants every API server at the new minor before any kubelet, and
//! outside topology mode Cluster API rolls a MachineDeployment without waiting for the control
//! plane. The next run releases the pools once the management cluster reports the control
//! plane at the new version (the KamajiControlPlane's `status.version` and conditions, read as
//! `wait` reads them), so no kubelet is ever newer than the API server that runs.

mod gate;
mod select;

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;

use crate::cli::{Format, PrArgs, Printer, UpgradeArgs};
use crate::cluster::{Cluster, KAMAJI_CONTROL_PLANE};
use crate::commands::report_invalid;
use crate::commands::upgrade::gate::{Deadline, Health};
use crate::commands::upgrade::select::{committed_versions, earlier_waves, select, wave_gate};
use crate::commands::{ExitStatus, pipeline, pr};
use crate::diagnostics::Diagnostic;
use crate::model::KubeVersion;
use crate::model::upgrade::{Allowed, Step, Target, patch_step, step, wave_of};
use crate::model::window::{self, MaintenanceWindow, Opening, When};
use crate::render::Options;
use crate::repo::{inputs, stat_cache, tree};
use crate::spec::edit::{insert_after, remove_entry, replace_scalar};
use crate::spec::load::ParseCache;
use crate::spec::source::Source;

const FIELD: &str = "spec.kubernetes.version";
/// Where `upgrade` holds the pools while the control plane steps first.
const HELD: &str = "spec.kubernetes.workersVersion";

/// What `upgrade` moves tenants towards.
#[derive(Debug, Clone, Copy)]
enum Goal {
    /// `--kubernetes vX.Y[.Z]`.
    Version(Target),
    /// `--patch`: the newest listed patch of each tenant's own minor.
    Patch,
}

impl Goal {
    fn target(self) -> Option<Target> {
        match self {
            Goal::Version(t) => Some(t),
            Goal::Patch => None,
        }
    }
}

impl std::fmt::Display for Goal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Goal::Version(t) => write!(f, "{t}"),
            Goal::Patch => f.write_str("the newest listed patch"),
        }
    }
}

/// One line of the plan.
struct Line {
    tenant: String,
    from: KubeVersion,
    /// `None`: nothing to do.
    to: Option<KubeVersion>,
    further: bool,
    skipped: Option<&'static str>,
    /// The control plane steps and the pools that follow it stay at `from`.
    holds_pools: bool,
    /// The pools are held at this version: released now (`to` is the control plane's), or
    /// still waiting for it (`waiting`).
    pools: Option<KubeVersion>,
    /// Why held pools wait: the control plane is not at its version on the cluster yet.
    waiting: Option<String>,
    /// The tenant's maintenance windows at this run's instant (`None`: it has none).
    window: Option<Opening>,
}

impl Line {
    /// Outside every window: the step it would take is not written.
    fn outside_window(&self) -> Option<&jiff::Zoned> {
        match &self.window {
            Some(Opening::Closed { opens }) => Some(opens),
            _ => None,
        }
    }
}

/// Runs `upgrade`.
pub fn run(printer: &Printer, repo: &Path, args: &UpgradeArgs) -> Result<ExitStatus> {
    let invalid = |d: Vec<Diagnostic>| Ok(report_invalid(printer, args.output.get(), d));
    // `--to`: the same steps as `--kubernetes`, each written only once the cluster reports the
    // previous one healthy.
    let chained = args.to.is_some() && !args.no_cluster_check;
    let (goal, now) = match goal_and_clock(args) {
        Err(d) => return invalid(d),
        Ok(g) => g,
    };
    let inputs = match inputs::read(repo, &[])? {
        Err(d) => return invalid(d),
        Ok(i) => i,
    };
    // The repository as it is must be valid: a step is planned from its versions.
    let current = match pipeline::resolve(&inputs, &Options::default(), &mut ParseCache::default()) {
        Err(d) => return invalid(d),
        Ok(r) => r,
    };
    let model = &current.model;
    let selected = match select(model, args) {
        Err(d) => return invalid(d),
        Ok(s) => s,
    };
    let sources: BTreeMap<&str, Source> = inputs
        .tenants
        .iter()
        .map(|(path, stem, bytes)| {
            let text = String::from_utf8_lossy(bytes).into_owned();
            (stem.as_str(), Source::unindexed(path, text))
        })
        .collect();
    if let Some(wave) = &args.wave {
        let committed = committed_versions(repo).unwrap_or_else(|| {
            printer.status(
                "note: not a git repository with commits: earlier waves are judged from the tenant files as they are",
            );
            BTreeMap::new()
        });
        let errs = wave_gate(model, wave, goal.target(), &committed, &sources);
        if !errs.is_empty() {
            return invalid(errs);
        }
    }
    // A chained upgrade's wave starts only once every tenant of the earlier waves, at the target
    // in git, is also healthy at it on the cluster.
    let mut cluster: Option<Cluster> = None;
    if let (true, Some(wave)) = (chained, &args.wave) {
        let errs = wave_health_gate(args, wave, model, &sources, &mut cluster);
        if !errs.is_empty() {
            return invalid(errs);
        }
    }
    let allowed = Allowed {
        min: model.platform.min_kubernetes,
        max: model.platform.max_kubernetes,
        releases: &model.platform.kubernetes_releases,
    };
    let mut errs = Vec::new();
    let mut lines = Vec::new();
    let mut edits: BTreeMap<String, (Vec<u8>, Vec<u8>)> = BTreeMap::new();
    // A step still waiting past `--step-deadline` stops the chain; the rest keep waiting.
    let mut waits = Waits {
        deadline: Deadline::new(args.step_deadline, now, repo),
        undated: Vec::new(),
    };
    for t in selected {
        let src = &sources[t.name.as_str()];
        let mut line = Line {
            tenant: t.name.clone(),
            from: t.version,
            to: None,
            further: false,
            skipped: None,
            holds_pools: false,
            pools: None,
            waiting: None,
            window: window::opening(windows_of(model, t), now),
        };
        if t.decommissioned {
            line.skipped = Some("decommissioned, skipped");
            lines.push(line);
            continue;
        }
        let held = src.scalar(HELD).and_then(|s| KubeVersion::parse(&s.text));
        // `--patch` moves control planes within their minor only: pools held for a minor step
        // stay held (the next `--kubernetes` run releases them).
        if let (Some(pools), Goal::Version(target)) = (held.filter(|h| *h < t.version), goal) {
            let held = Held { pools, target };
            release_pools(
                args,
                chained,
                &mut cluster,
                &mut waits,
                (src, t),
                held,
                &mut line,
                &mut edits,
                &mut errs,
            );
            lines.push(line);
            continue;
        }
        let next = match goal {
            Goal::Version(target) => step(t.version, target, &allowed),
            Goal::Patch => patch_step(t.version, &allowed),
        };
        match next {
            Step::AtTarget => {}
            Step::Blocked { reason, hint } => errs.push(
                src.error(
                    FIELD,
                    format!(
                        "tenant `{}` at {} cannot move towards {goal}: {reason}",
                        t.name, t.version
                    ),
                )
                .with_hint(hint),
            ),
            // Outside its windows the step is planned, shown, and not written.
            Step::Move { to, further } if line.outside_window().is_some() => {
                line.to = Some(to);
                line.further = further;
            }
            // A chained upgrade writes the next step only once the cluster runs the last one.
            Step::Move { to, further } if chained => {
                let health = tenant_health(args, &mut cluster, t);
                match health {
                    Err(e) => errs.push(
                        src.error(
                            FIELD,
                            format!(
                                "tenant `{}`: the next step towards {goal} waits for the cluster to run {}, and the management cluster cannot say whether it does: {e}",
                                t.name, t.version
                            ),
                        )
                        .with_hint(format!("{}; or take the step without asking: `--kubernetes {goal}`", e.hint())),
                    ),
                    Ok(Health::Failed(why)) => errs.push(stopped(src, t, goal.target().unwrap_or(Target::Exact(t.version)), &why)),
                    Ok(Health::Waiting(why)) => errs.extend(waits.wait(
                        src,
                        t,
                        goal.target().unwrap_or(Target::Exact(t.version)),
                        why,
                        &mut line,
                    )),
                    Ok(Health::Healthy) => write_step(src, t, to, further, &mut line, &mut edits, &mut errs),
                }
            }
            Step::Move { to, further } => write_step(src, t, to, further, &mut line, &mut edits, &mut errs),
        }
        lines.push(line);
    }
    for note in waits.undated {
        printer.status(&format!("note: {note}; that step waits without a deadline"));
    }
    if !errs.is_empty() {
        return invalid(errs);
    }
    let mut next = inputs.clone();
    for (path, _, bytes) in &mut next.tenants {
        if let Some((_, new)) = edits.get(path.as_str()) {
            bytes.clone_from(new);
        }
    }
    // The same pipeline as `render`, on the edited files: the skew rules against the deployed
    // overlays, and every other rule, decide before anything is written.
    let options = Options {
        locked: args.render.locked,
        ..Options::default()
    };
    let rendered = match pipeline::run(&next, &options) {
        Err(d) => return invalid(d),
        Ok(r) => r,
    };
    printer.diagnostics(&rendered.warnings);
    let json = args.output.get() == Format::Json;
    if !json {
        printer.data(&plan_text(goal, args, &lines));
    }
    if args.dry_run || edits.is_empty() {
        printer.envelope(true, plan_json(goal, args, &lines, false, vec![]));
        return Ok(ExitStatus::Success);
    }
    let mut plan = tree::plan(repo, rendered.tree, &rendered.owned, &rendered.keep)?;
    let edited = edits.len();
    plan.changed
        .extend(edits.into_iter().map(|(path, (old, new))| (path, old, new)));
    stat_cache::forget(repo);
    tree::apply(repo, &plan)?;
    let moved: Vec<&str> = lines
        .iter()
        .filter(|l| l.to.is_some() && l.outside_window().is_none())
        .map(|l| l.tenant.as_str())
        .collect();
    printer.status(&format!(
        "upgrade: {edited} tenant file(s) edited, {} file(s) written or deleted",
        plan.paths().len() - edited
    ));
    if !args.pr {
        printer.status(&format!(
            "next: commit and push (or rerun with --pr), let Flux apply it (`kaas-gitops wait {}`), then run the same upgrade again for tenants with further steps",
            moved.join(" ")
        ));
        printer.envelope(true, plan_json(goal, args, &lines, true, vec![]));
        return Ok(ExitStatus::Success);
    }
    propose(printer, repo, args, goal, &lines, &moved)
}

/// A tenant's pools held at `pools` (`workersVersion`) while its control plane moves towards
/// `target`.
struct Held {
    pools: KubeVersion,
    target: Target,
}

/// Steps that wait for the cluster: stopped past `--step-deadline` (`Deadline`), else recorded as
/// waiting; `undated` collects the files whose step has no date to judge.
struct Waits {
    deadline: Option<Deadline>,
    undated: Vec<String>,
}

impl Waits {
    /// The stop of a step waiting past its deadline, else `None` with the reason on the line.
    fn wait(
        &mut self,
        src: &Source,
        t: &crate::model::Tenant,
        target: Target,
        why: String,
        line: &mut Line,
    ) -> Option<Diagnostic> {
        match self.deadline.as_ref().map(|d| d.overdue(&src.path)) {
            Some(Ok(Some(late))) => return Some(stopped(src, t, target, &format!("{why} ({late})"))),
            Some(Err(e)) => self.undated.push(e),
            _ => {}
        }
        line.waiting = Some(why);
        None
    }
}

/// Releases held pools (removes `workersVersion`) once the control plane runs its version, as the
/// management cluster says (`--no-cluster-check`: at once); otherwise the tenant waits or stops.
#[expect(clippy::too_many_arguments, reason = "the state of one tenant's step in `run`")]
fn release_pools(
    args: &UpgradeArgs,
    chained: bool,
    cluster: &mut Option<Cluster>,
    waits: &mut Waits,
    (src, t): (&Source, &crate::model::Tenant),
    held: Held,
    line: &mut Line,
    edits: &mut BTreeMap<String, (Vec<u8>, Vec<u8>)>,
    errs: &mut Vec<Diagnostic>,
) {
    let Held { pools, target } = held;
    // The pools wait for the control plane's last step: this run's step is theirs.
    line.pools = Some(pools);
    if line.outside_window().is_some() {
        // Releasing the pools rolls machines: it waits for the window too.
        line.to = Some(t.version);
        return;
    }
    let verdict = if args.no_cluster_check {
        Ok(None)
    } else {
        let connected = match cluster.take() {
            Some(c) => Ok(c),
            None => Cluster::connect(&crate::commands::cluster_target(&args.cluster)),
        };
        match connected {
            Ok(c) => {
                let v = control_plane_behind(&c, t, chained);
                *cluster = Some(c);
                v
            }
            Err(e) => Err(e),
        }
    };
    match verdict {
        Err(e) => errs.push(
            src.error(
                HELD,
                format!(
                    "tenant `{}`: its pools wait at {pools} for the control plane at {}, and the management cluster cannot say whether it runs it: {e}",
                    t.name, t.version
                ),
            )
            .with_hint(format!("{}; or, once you checked it yourself, `--no-cluster-check`", e.hint())),
        ),
        Ok(Some(Err(failed))) => errs.push(stopped(src, t, target, &failed)),
        Ok(Some(Ok(why))) => errs.extend(waits.wait(src, t, target, why, line)),
        Ok(None) => match remove_entry(&src.path, &src.text, HELD) {
            Some(text) => {
                edits.insert(src.path.clone(), (src.text.clone().into_bytes(), text.into_bytes()));
                line.to = Some(t.version);
                line.further = !target.reached_by(t.version);
            }
            None => errs.push(
                src.error(HELD, "cannot remove this line in place")
                    .with_hint("delete `workersVersion` yourself: the pools then follow `version`"),
            ),
        },
    }
}

/// What the run moves tenants to (`--kubernetes`/`--to`, else `--patch`) and the instant the
/// windows are judged at (`--now`, else the clock, read once, here in the shell).
fn goal_and_clock(args: &UpgradeArgs) -> Result<(Goal, jiff::Timestamp), Vec<Diagnostic>> {
    let asked = args.kubernetes.as_deref().or(args.to.as_deref());
    let goal = match asked.map(|k| (k, Target::parse(k))) {
        None => Goal::Patch,
        Some((_, Some(target))) => Goal::Version(target),
        Some((text, None)) => {
            return Err(vec![
                Diagnostic::error(format!("`{text}` is not a Kubernetes version")).with_hint(
                    "write `vX.Y` (the newest patch of that minor in `spec.upgrades.kubernetesReleases`) or an exact `vX.Y.Z`",
                ),
            ]);
        }
    };
    let now = match args.now.as_deref().map(str::parse::<jiff::Timestamp>) {
        None => jiff::Timestamp::now(),
        Some(Ok(t)) => t,
        Some(Err(e)) => {
            return Err(vec![
                Diagnostic::error(format!(
                    "`--now {}` is not a time: {e}",
                    args.now.as_deref().unwrap_or_default()
                ))
                .with_hint(
                    "an RFC 3339 time with its offset, e.g. `2026-12-05T01:30:00Z` or `2026-12-05T02:30:00+01:00`",
                ),
            ]);
        }
    };
    Ok((goal, now))
}

/// `--pr`: one branch (and pull request) per moved tenant, as `pr TENANT` makes it; the plan
/// with every proposal as this command's document.
fn propose(
    printer: &Printer,
    repo: &Path,
    args: &UpgradeArgs,
    goal: Goal,
    lines: &[Line],
    moved: &[&str],
) -> Result<ExitStatus> {
    let mut proposals = Vec::new();
    for tenant in moved {
        let pr_args = PrArgs {
            tenant: Some(tenant.to_string()),
            base: args.base.clone(),
            push: args.push.clone(),
            render: args.render,
            output: args.output,
            ..PrArgs::default()
        };
        // Under --format json each proposal is one entry of this command's document.
        let nested = printer.nested("PrResult");
        let status = pr::run(&nested, repo, &pr_args)?;
        proposals.extend(nested.captured());
        if status != ExitStatus::Success {
            printer.envelope(false, plan_json(goal, args, lines, true, proposals));
            return Ok(status);
        }
    }
    printer.envelope(true, plan_json(goal, args, lines, true, proposals));
    Ok(ExitStatus::Success)
}

/// Writes the control plane step to `to` into the tenant's file (in `edits`) and records it on
/// its plan line; a version line that cannot be rewritten in place is an error there.
fn write_step(
    src: &Source,
    t: &crate::model::Tenant,
    to: KubeVersion,
    further: bool,
    line: &mut Line,
    edits: &mut BTreeMap<String, (Vec<u8>, Vec<u8>)>,
    errs: &mut Vec<Diagnostic>,
) {
    match move_control_plane(src, t, to) {
        Some((text, holds_pools)) => {
            edits.insert(src.path.clone(), (src.text.clone().into_bytes(), text.into_bytes()));
            line.to = Some(to);
            line.further = further;
            line.holds_pools = holds_pools;
        }
        None => errs.push(
            src.error(FIELD, format!("cannot rewrite this version in place to {to}"))
                .with_hint("write it as a plain or quoted one-line string, e.g. `version: v1.33.4`"),
        ),
    }
}

/// The tenant file with the control plane at `to` and, for a new minor, the pools that follow
/// it held at the version they run (`workersVersion`); whether pools were held. Topology mode
/// needs no hold: Cluster API's topology controller upgrades the machine deployments only once
/// the control plane is stable (cluster-api v1.14.0 `exp/topology/desiredstate/desired_state.go`,
/// `computeMachineDeploymentVersion`). A patch step within a minor holds nothing: the skew
/// policy is about minors.
fn move_control_plane(src: &Source, t: &crate::model::Tenant, to: KubeVersion) -> Option<(String, bool)> {
    let text = replace_scalar(&src.path, &src.text, FIELD, &to.to_string())?;
    let follows = t.pools.iter().any(|p| p.version.is_none());
    let new_minor = (to.major, to.minor) != (t.version.major, t.version.minor);
    if !follows || !new_minor || t.topology.is_some() || src.scalar(HELD).is_some() {
        return Some((text, false));
    }
    let held = insert_after(&src.path, &text, FIELD, "workersVersion", &t.version.to_string())?;
    Some((held, true))
}

/// The windows that govern `t`: its own, else its wave's (empty: any time).
fn windows_of<'m>(model: &'m crate::model::Model, t: &'m crate::model::Tenant) -> &'m [MaintenanceWindow] {
    if !t.maintenance_windows.is_empty() {
        return &t.maintenance_windows;
    }
    let waves = &model.platform.waves;
    wave_of(waves, &t.labels, model.platform.management_cluster_labels(t))
        .map_or(&[], |i| &waves[i].maintenance_windows)
}

/// How tenant `t` runs on the management cluster, connecting to it on first use (`cluster` keeps
/// the connection for the next tenant).
fn tenant_health(
    args: &UpgradeArgs,
    cluster: &mut Option<Cluster>,
    t: &crate::model::Tenant,
) -> Result<Health, crate::cluster::ClusterError> {
    let c = match cluster.take() {
        Some(c) => c,
        None => Cluster::connect(&crate::commands::cluster_target(&args.cluster))?,
    };
    let health = gate::read(&c, t);
    *cluster = Some(c);
    health
}

/// Refuses `--to --wave NAME` while a tenant of an earlier wave is not healthy on the cluster
/// (each problem at that tenant's `version` line); `cluster` is connected on first use.
fn wave_health_gate(
    args: &UpgradeArgs,
    wave: &str,
    model: &crate::model::Model,
    sources: &BTreeMap<&str, Source>,
    cluster: &mut Option<Cluster>,
) -> Vec<Diagnostic> {
    let mut errs = Vec::new();
    for (t, earlier) in earlier_waves(model, wave) {
        let health = tenant_health(args, cluster, t);
        let (message, hint) = match health {
            Ok(Health::Healthy) => continue,
            Ok(Health::Waiting(why) | Health::Failed(why)) => (
                format!(
                    "wave `{wave}` cannot start: tenant `{}` of the earlier wave `{earlier}` is at {} in git but not healthy on the cluster: {why}",
                    t.name, t.version
                ),
                format!(
                    "run the same upgrade again once it is (`kaas-gitops wait {}` waits for it), or finish wave `{earlier}` first",
                    t.name
                ),
            ),
            Err(e) => (
                format!(
                    "wave `{wave}` cannot start: the management cluster cannot say whether tenant `{}` of the earlier wave `{earlier}` runs {}: {e}",
                    t.name, t.version
                ),
                format!("{}; or, once you checked it yourself, `--no-cluster-check`", e.hint()),
            ),
        };
        let d = match sources.get(t.name.as_str()) {
            Some(src) => src.error(FIELD, message),
            None => Diagnostic::error(message).in_file(t.source_path.clone()),
        };
        errs.push(d.with_hint(hint));
        // An unreadable cluster says the same for every tenant: once is enough.
        if cluster.is_none() {
            break;
        }
    }
    errs
}

/// The error that stops a chained upgrade: the tenant's last step will not become healthy.
fn stopped(src: &Source, t: &crate::model::Tenant, target: Target, why: &str) -> Diagnostic {
    src.error(
        FIELD,
        format!(
            "tenant `{}`: the step to {} did not become healthy, so the upgrade to {target} stops here: {why}",
            t.name, t.version
        ),
    )
    .with_hint(format!(
        "fix what its controller reports (`kaas-gitops status {0}` shows the tenant), or roll the step back in `tenants/{0}.yaml`; the same upgrade goes on once the cluster runs {1}",
        t.name, t.version
    ))
}

/// What [`control_plane_behind`] found: `None`, at its version; `Some(Ok(why))`, not yet;
/// `Some(Err(why))`, its controller gave up.
type Behind = Option<Result<String, String>>;

/// Why the control plane of `t` is not yet at its version on the cluster (`None`: it is), read
/// as `wait` reads it (`crate::status::health::kamaji_control_plane`); `Err` inside: its
/// controller gave up on it (only when `chained`: a chained upgrade stops there).
fn control_plane_behind(
    cluster: &Cluster,
    t: &crate::model::Tenant,
    chained: bool,
) -> Result<Behind, crate::cluster::ClusterError> {
    let listed = cluster.list(KAMAJI_CONTROL_PLANE, Some(&t.name), None)?;
    let Some(kcp) = listed.iter().find(|o| o["metadata"]["name"] == t.name.as_str()) else {
        return Ok(Some(Ok(format!(
            "KamajiControlPlane {0}/{0} is not on the cluster",
            t.name
        ))));
    };
    let want = t.version.to_string();
    let spec = kcp["spec"]["version"].as_str().unwrap_or_default();
    if spec.trim_start_matches('v') != want.trim_start_matches('v') {
        return Ok(Some(Ok(format!(
            "KamajiControlPlane {0}/{0} asks for {spec}, not {want}: Flux has not applied the control plane step yet",
            t.name
        ))));
    }
    let (state, summary) = crate::status::health::kamaji_control_plane(kcp);
    let why = format!("KamajiControlPlane {0}/{0} is {1}: {summary}", t.name, state.word());
    Ok(match state {
        crate::status::State::Ready => None,
        crate::status::State::Failed if chained => Some(Err(why)),
        _ => Some(Ok(why)),
    })
}

/// The plan under `--format json`: `written` when the tenant files were edited and rendered;
/// `pullRequests` the `pr` documents of `--pr`.
fn plan_json(
    goal: Goal,
    args: &UpgradeArgs,
    lines: &[Line],
    written: bool,
    pull_requests: Vec<serde_json::Value>,
) -> serde_json::Value {
    let tenants: Vec<_> = lines
        .iter()
        .map(|l| {
            let step = match (l.pools, l.holds_pools) {
                (Some(_), _) => "pools",
                (None, true) => "controlPlane",
                (None, false) => "both",
            };
            let window = match &l.window {
                None => serde_json::Value::Null,
                Some(Opening::Open { closes }) => serde_json::json!({"open": true, "closes": closes.to_string()}),
                Some(Opening::Closed { opens }) => serde_json::json!({"open": false,
                    "nextOpens": opens.timestamp().to_string(), "nextOpensLocal": opens.to_string()}),
            };
            serde_json::json!({"tenant": l.tenant, "from": l.from.to_string(),
                "to": l.to.map(|t| t.to_string()), "furtherSteps": l.further || l.holds_pools || l.waiting.is_some(), "skipped": l.skipped,
                "step": step, "poolsHeldAt": l.pools.or(l.holds_pools.then_some(l.from)).map(|v| v.to_string()),
                "waiting": l.waiting, "maintenanceWindow": window,
                "outsideWindow": l.outside_window().is_some() && l.to.is_some()})
        })
        .collect();
    serde_json::json!({"target": goal.target().map_or_else(|| "patch".to_string(), |t| t.to_string()), "chained": args.to.is_some(), "wave": args.wave, "written": written,
        "tenants": tenants, "pullRequests": pull_requests})
}

/// The plan as the user reads it: who moves from what to what, who needs more steps.
fn plan_text(target: Goal, args: &UpgradeArgs, lines: &[Line]) -> String {
    let scope = match &args.wave {
        Some(w) => format!(" (wave `{w}`)"),
        None => String::new(),
    };
    let mut out = format!("upgrade to {target}{scope}:\n");
    let width = lines.iter().map(|l| l.tenant.len()).max().unwrap_or(0);
    let (mut moving, mut further, mut done, mut closed, mut waiting) = (0, 0, 0, 0, 0);
    // A chained upgrade's tenants arrive; the others are already there.
    let arrived = if args.to.is_some() { "arrived at" } else { "already at" };
    for l in lines {
        let what = match (l.to, l.skipped, l.pools, l.outside_window()) {
            (_, Some(why), _, _) => format!("{}  {why}", l.from),
            (Some(to), None, pools, Some(opens)) => {
                closed += 1;
                let opens = When(opens);
                let step = match pools {
                    Some(p) => format!("pools {p} -> {to}"),
                    None => format!("{} -> {to}", l.from),
                };
                format!("{step}  not written: outside its maintenance window, which opens next {opens}")
            }
            (None, None, Some(pools), _) => {
                further += 1;
                format!(
                    "{}  pools wait at {pools}: {}",
                    l.from,
                    l.waiting.as_deref().unwrap_or("the control plane is not there yet")
                )
            }
            (None, None, None, _) if l.waiting.is_some() => {
                further += 1;
                waiting += 1;
                format!(
                    "{}  next step waits for the cluster: {}",
                    l.from,
                    l.waiting.as_deref().unwrap_or_default()
                )
            }
            (None, None, None, _) => {
                done += 1;
                format!("{}  {arrived} {target}", l.from)
            }
            (Some(to), None, pools, None) => {
                moving += 1;
                let step = match pools {
                    Some(p) => format!("pools {p} -> {to}  (the control plane runs {to})"),
                    None if l.holds_pools => {
                        further += usize::from(!l.further);
                        format!("{} -> {to}  (control plane first; pools held at {})", l.from, l.from)
                    }
                    None => format!("{} -> {to}", l.from),
                };
                if l.further {
                    further += 1;
                    format!("{step}  (then further steps to {target})")
                } else {
                    step
                }
            }
        };
        out.push_str(&format!("  {:width$}  {what}\n", l.tenant));
    }
    let mut tail = String::new();
    if waiting > 0 {
        tail.push_str(&format!(", {waiting} waiting for the cluster"));
    }
    if closed > 0 {
        tail.push_str(&format!(", {closed} outside their maintenance window"));
    }
    out.push_str(&format!(
        "{moving} to move, {further} with further steps after this one, {done} {arrived} {target}{tail}\n"
    ));
    out
}
