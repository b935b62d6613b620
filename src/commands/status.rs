//! `status [TENANT...]`: the rendered fleet against the management cluster, one row per tenant
//! and one for the platform (the engine is `crate::status`, the reads `crate::cluster`).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use serde_json::json;

use crate::cli::{ClusterArgs, Format, Printer, StatusArgs};
use crate::cluster::{self, Cluster, ClusterError, Target};
use crate::commands::ExitStatus;
use crate::git::Workspace;
use crate::status::{self, Entry, ObjectStatus, Report, Row, State};
use crate::validate::Fleet;

/// Runs `status`.
pub fn run(printer: &Printer, repo: &Path, args: &StatusArgs) -> Result<ExitStatus> {
    if args.placement.all_management_clusters {
        return run_all(printer, repo, args);
    }
    let prepared = match prepare(
        printer,
        repo,
        &args.tenants,
        args.revision.as_deref(),
        &args.cluster,
        args.placement.management_cluster.as_deref(),
        args.output.format,
    )? {
        Ok(p) => p,
        Err(status) => return Ok(status),
    };
    let (live, notes) = match cluster::read::fleet(&prepared.cluster, &prepared.entries) {
        Ok(l) => l,
        Err(e) => return Ok(report_cluster_error(printer, args.output.format, &e)),
    };
    let mut want = prepared.want.map(status::Want::new);
    if let (Some(w), Ok(ws)) = (want.as_mut(), Workspace::open(repo)) {
        w.later = ws.descendants_of(&w.revision, &status::applied_commits(&live));
    }
    let report = status::assess(&prepared.entries, &live, want.as_ref(), &prepared.artifacts);
    match args.output.format {
        Format::Json => printer.envelope(
            true,
            json!({"context": prepared.cluster.context, "server": prepared.cluster.server,
                   "revision": report.revision, "sources": report.sources, "artifacts": report.artifacts,
                   "rows": report.rows, "notes": notes}),
        ),
        Format::Human | Format::Github => {
            printer.data(&table(&report, printer.verbose()));
            for n in notes {
                printer.status(&format!("note: {n}"));
            }
        }
    }
    Ok(ExitStatus::Success)
}

/// `status --all-management-clusters`: every management cluster of kaas.yaml through its own
/// context, in one table. A cluster that cannot be read is reported and the others still are
/// (exit 2).
fn run_all(printer: &Printer, repo: &Path, args: &StatusArgs) -> Result<ExitStatus> {
    let format = args.output.format;
    let clusters = match management_clusters(printer, repo, &args.placement.context_of, format)? {
        Ok(c) => c,
        Err(status) => return Ok(status),
    };
    let Some(asked) = tenants_by_cluster(printer, repo, &clusters, &args.tenants)? else {
        return Ok(ExitStatus::Failure);
    };
    let mut reports = Vec::new();
    let mut docs = Vec::new();
    let mut notes_all = Vec::new();
    let mut exit = ExitStatus::Success;
    for (name, context) in &clusters {
        let tenants = &asked[name];
        if !args.tenants.is_empty() && tenants.is_empty() {
            continue; // none of the tenants asked for runs here
        }
        let target = ClusterArgs {
            kubeconfig: args.cluster.kubeconfig.clone(),
            context: Some(context.clone()),
        };
        // Problems are printed to stderr as messages: stdout keeps one JSON document.
        let prepared = match prepare(
            printer,
            repo,
            tenants,
            args.revision.as_deref(),
            &target,
            Some(name),
            Format::Human,
        )? {
            Ok(p) => p,
            Err(ExitStatus::Error) => {
                // This cluster cannot be reached (printed); the others still are read.
                exit = ExitStatus::Error;
                docs.push(
                    json!({"name": name, "context": context, "error": {"message": "cannot be read (see stderr)"}}),
                );
                continue;
            }
            Err(status) => return Ok(status),
        };
        let read = cluster::read::fleet(&prepared.cluster, &prepared.entries);
        let (live, notes) = match read {
            Ok(l) => l,
            Err(e) => {
                exit = ExitStatus::Error;
                if format == Format::Json {
                    docs.push(json!({"name": name, "context": context, "error": {"message": e.to_string(), "hint": e.hint()}}));
                } else {
                    printer.error(
                        &format!("management cluster `{name}` (context `{context}`): {e}"),
                        Some(&e.hint()),
                    );
                }
                continue;
            }
        };
        let mut want = prepared.want.map(status::Want::new);
        if let (Some(w), Ok(ws)) = (want.as_mut(), Workspace::open(repo)) {
            w.later = ws.descendants_of(&w.revision, &status::applied_commits(&live));
        }
        let report = status::assess(&prepared.entries, &live, want.as_ref(), &prepared.artifacts);
        docs.push(
            json!({"name": name, "context": prepared.cluster.context, "server": prepared.cluster.server,
                         "revision": report.revision, "sources": report.sources, "artifacts": report.artifacts,
                         "rows": report.rows, "notes": notes}),
        );
        notes_all.extend(notes.into_iter().map(|n| format!("[{name}] {n}")));
        reports.push((name.clone(), report));
    }
    match format {
        Format::Json => printer.envelope(exit == ExitStatus::Success, json!({"managementClusters": docs})),
        Format::Human | Format::Github => {
            let named: Vec<(Option<&str>, &Report)> = reports.iter().map(|(n, r)| (Some(n.as_str()), r)).collect();
            printer.data(&fleet_table(&named, printer.verbose()));
            for n in notes_all {
                printer.status(&format!("note: {n}"));
            }
        }
    }
    Ok(exit)
}

/// `--all-management-clusters TENANT...`: the tenants asked for, by the management cluster whose
/// entry point renders them (every cluster, with none asked for); `None` when a tenant is rendered
/// for none or a cluster is not rendered (printed).
pub(crate) fn tenants_by_cluster(
    printer: &Printer,
    repo: &Path,
    clusters: &[(String, String)],
    tenants: &[String],
) -> Result<Option<BTreeMap<String, Vec<String>>>> {
    let fleet = Fleet::load(repo)?;
    let mut asked = BTreeMap::new();
    let mut placed = std::collections::BTreeSet::new();
    for (name, _) in clusters {
        let Some(dir) = entry_point(printer, repo, &fleet, Some(name))? else {
            return Ok(None);
        };
        let here: Vec<String> = status::entries(&fleet.objects, &dir)
            .into_iter()
            .filter_map(|e| e.tenant)
            .collect();
        placed.extend(here.iter().cloned());
        asked.insert(
            name.clone(),
            tenants.iter().filter(|t| here.contains(t)).cloned().collect(),
        );
    }
    let unknown: Vec<&String> = tenants.iter().filter(|t| !placed.contains(*t)).collect();
    for t in &unknown {
        printer.error(
            &format!("no tenant `{t}` is rendered for any management cluster"),
            Some(&format!(
                "rendered tenants: {}",
                placed.iter().cloned().collect::<Vec<_>>().join(", ")
            )),
        );
    }
    Ok(unknown.is_empty().then_some(asked))
}

/// kaas.yaml's management clusters with the context each is read through (its `context`, or
/// `--context-of`), in kaas.yaml's order; or why not (printed).
pub(crate) fn management_clusters(
    printer: &Printer,
    repo: &Path,
    context_of: &[(String, String)],
    format: Format,
) -> Result<Result<Vec<(String, String)>, ExitStatus>> {
    let loaded = match crate::commands::pin::load(repo)? {
        Ok(l) => l,
        Err(d) => return Ok(Err(crate::commands::report_invalid(printer, format, d))),
    };
    let listed = &loaded.platform.management_clusters;
    if listed.is_empty() {
        printer.error(
            "kaas.yaml lists no management clusters",
            Some("leave out `--all-management-clusters`: the one management cluster is read through `--context`"),
        );
        return Ok(Err(ExitStatus::Failure));
    }
    let overrides: BTreeMap<&str, &str> = context_of.iter().map(|(n, c)| (n.as_str(), c.as_str())).collect();
    let names: Vec<&str> = listed.iter().map(|m| m.name.as_str()).collect();
    let mut failed = false;
    for n in overrides.keys().filter(|n| !names.contains(n)) {
        printer.error(
            &format!("`--context-of {n}=...` names no management cluster of kaas.yaml"),
            Some(&format!("listed: {}", names.join(", "))),
        );
        failed = true;
    }
    let mut out = Vec::new();
    for mc in listed {
        match overrides
            .get(mc.name.as_str())
            .map(|c| c.to_string())
            .or_else(|| mc.context.clone())
        {
            Some(c) => out.push((mc.name.clone(), c)),
            None => {
                printer.error(
                    &format!("management cluster `{}` has no kubeconfig context", mc.name),
                    Some(&format!(
                        "set `context` on it in kaas.yaml `spec.managementClusters`, or pass `--context-of {}=CONTEXT`",
                        mc.name
                    )),
                );
                failed = true;
            }
        }
    }
    if failed {
        return Ok(Err(ExitStatus::Failure));
    }
    Ok(Ok(out))
}

/// What `status` and `wait` start from.
pub(crate) struct Prepared {
    /// The rendered entry points, filtered to the tenants asked for (and the platform).
    pub entries: Vec<Entry>,
    /// The revision asked for.
    pub want: Option<String>,
    /// The artifact revision each OCI-delivered tenant has at `want` (empty with git delivery).
    pub artifacts: BTreeMap<String, String>,
    /// The connection.
    pub cluster: Cluster,
}

/// The entry point of the management cluster `--management-cluster` names: `flux/<name>/`, or
/// `flux/` for the default one (`kaas.lock` names it) and without the flag; `None` when no such
/// cluster is rendered (printed).
fn entry_point(printer: &Printer, repo: &Path, fleet: &Fleet, mc: Option<&str>) -> Result<Option<String>> {
    let Some(name) = mc else {
        return Ok(Some(crate::layout::FLUX_DIR.to_string()));
    };
    let dirs: std::collections::BTreeSet<&str> = fleet
        .objects
        .iter()
        .filter_map(|m| crate::layout::entry_point_of(&m.file))
        .collect();
    let wanted = crate::layout::flux_dir(Some(name));
    if dirs.contains(wanted.as_str()) {
        return Ok(Some(wanted));
    }
    let lock = match std::fs::read(repo.join(crate::repo::lock::LOCK_PATH)) {
        Ok(bytes) => crate::repo::lock::Lock::parse(&bytes).ok(),
        Err(_) => None,
    };
    let default = lock.and_then(|l| l.placements.default);
    if default.as_deref() == Some(name) {
        return Ok(Some(crate::layout::FLUX_DIR.to_string()));
    }
    let mut known: Vec<String> = default.into_iter().collect();
    known.extend(dirs.iter().filter_map(|d| d.strip_prefix("flux/").map(str::to_string)));
    printer.error(
        &format!("no management cluster `{name}` is rendered"),
        Some(&if known.is_empty() {
            "kaas.yaml lists no `spec.managementClusters`: leave out `--management-cluster`".to_string()
        } else {
            format!("rendered management clusters: {}", known.join(", "))
        }),
    );
    Ok(None)
}

/// Reads the rendered fleet, picks the tenants, finds the revision and connects; or prints
/// why not and returns the exit status.
pub(crate) fn prepare(
    printer: &Printer,
    repo: &Path,
    tenants: &[String],
    revision: Option<&str>,
    target: &ClusterArgs,
    management_cluster: Option<&str>,
    format: Format,
) -> Result<Result<Prepared, ExitStatus>> {
    let fleet = Fleet::load(repo)?;
    let Some(flux_dir) = entry_point(printer, repo, &fleet, management_cluster)? else {
        return Ok(Err(ExitStatus::Failure));
    };
    let all = status::entries(&fleet.objects, &flux_dir);
    if all.is_empty() {
        printer.error(
            &format!("nothing rendered: no Flux Kustomization under `{flux_dir}/`"),
            Some("run `kaas-gitops render` first, or pass the repository with `--repo DIR`"),
        );
        return Ok(Err(ExitStatus::Failure));
    }
    let unknown: Vec<&String> = tenants
        .iter()
        .filter(|t| !all.iter().any(|e| e.tenant.as_deref() == Some(t.as_str())))
        .collect();
    if !unknown.is_empty() {
        let known: Vec<&str> = all.iter().filter_map(|e| e.tenant.as_deref()).collect();
        let hint = format!("rendered tenants: {}", known.join(", "));
        for t in unknown {
            printer.error(&format!("no tenant `{t}` is rendered under `{flux_dir}/`"), Some(&hint));
        }
        return Ok(Err(ExitStatus::Failure));
    }
    let entries: Vec<Entry> = all
        .into_iter()
        .filter(|e| tenants.is_empty() || e.tenant.as_ref().is_none_or(|t| tenants.contains(t)))
        .collect();
    let want = match revision {
        Some(r) => Some(r.to_string()),
        None => Workspace::open(repo).ok().and_then(|ws| ws.head_commit()),
    };
    let oci = entries.iter().any(|e| {
        e.source
            .as_ref()
            .is_some_and(|s| s.kind == crate::cluster::OCI_REPOSITORY.kind)
    });
    let artifacts = match (&want, oci) {
        (Some(w), true) => match artifacts_at(repo, w) {
            Ok(a) => a,
            Err(e) => {
                printer.error(
                    &format!("cannot tell which artifact revision each tenant should have at `{w}`: {e}"),
                    Some("pass a commit of this repository with `--revision`"),
                );
                return Ok(Err(ExitStatus::Failure));
            }
        },
        _ => BTreeMap::new(),
    };
    let target = Target {
        kubeconfig: target.kubeconfig.clone(),
        context: target.context.clone(),
        timeout: None,
    };
    let cluster = match Cluster::connect(&target) {
        Ok(c) => c,
        Err(e) => return Ok(Err(report_cluster_error(printer, format, &e))),
    };
    if want.is_none() && format == Format::Human {
        printer.status("note: not a git repository with a commit: revisions are not compared (pass `--revision REV`)");
    }
    Ok(Ok(Prepared {
        entries,
        want,
        artifacts,
        cluster,
    }))
}

/// tenant -> `<tag>@sha256:<digest>` of the artifact `publish` makes from commit `want` (a commit,
/// or a Flux revision `<branch>@sha1:<commit>`), computed from git alone.
fn artifacts_at(repo: &Path, want: &str) -> Result<BTreeMap<String, String>, String> {
    let ws = Workspace::open(repo).map_err(|e| e.to_string())?;
    let commit = want.rsplit_once("sha1:").map_or(want, |(_, c)| c);
    let commit = crate::publish::sources::resolve(&ws, Some(commit))?;
    let sources = crate::publish::sources::sources_at(&ws, commit).map_err(|e| e.join("; "))?;
    Ok(sources.into_iter().map(|s| (s.tenant.clone(), s.revision())).collect())
}

/// One message and a hint; exit 2.
pub(crate) fn report_cluster_error(printer: &Printer, format: Format, e: &ClusterError) -> ExitStatus {
    match format {
        Format::Json => {
            let d = crate::diagnostics::Diagnostic::error(e.to_string()).with_hint(e.hint());
            printer.envelope(
                false,
                json!({"diagnostics": [d], "error": {"message": e.to_string(), "hint": e.hint()}}),
            );
        }
        Format::Human | Format::Github => printer.error(&e.to_string(), Some(&e.hint())),
    }
    ExitStatus::Error
}

/// The table people read: one line per row, then what is not Ready and why.
pub(crate) fn table(report: &Report, verbose: bool) -> String {
    fleet_table(&[(None, report)], verbose)
}

/// [`table`] of one report per management cluster (`status --all-management-clusters`): one
/// table with a column saying where each row runs; without names, exactly [`table`].
fn fleet_table(reports: &[(Option<&str>, &Report)], verbose: bool) -> String {
    let mut out = String::new();
    let named = reports.iter().any(|(mc, _)| mc.is_some());
    let at = |mc: &Option<&str>| mc.map_or(String::new(), |m| format!("[{m}] "));
    if let Some(r) = reports.iter().find_map(|(_, r)| r.revision.as_ref()) {
        out.push_str(&format!("revision {}\n", short(r)));
    }
    let per_tenant = |kind: &str| kind == "OCIRepository" || kind == "ExternalArtifact";
    for (mc, report) in reports {
        for kind in ["OCIRepository", "ExternalArtifact"] {
            let of_kind: Vec<_> = report.sources.iter().filter(|s| s.object.kind == kind).collect();
            if !of_kind.is_empty() {
                // One line for the per-tenant sources (1,000 at fleet scale); those not Ready below.
                let ready = of_kind.iter().filter(|s| s.state == State::Ready).count();
                out.push_str(&format!(
                    "sources  {}{} {kind} (one per tenant): {ready} Ready\n",
                    at(mc),
                    of_kind.len()
                ));
            }
        }
        for s in report
            .sources
            .iter()
            .filter(|s| !per_tenant(&s.object.kind) || s.state != State::Ready || verbose)
        {
            out.push_str(&format!(
                "source   {}{} {}/{}: {} at {}\n",
                at(mc),
                s.object.kind,
                s.object.namespace,
                s.object.name,
                s.state.word(),
                s.revision.as_deref().unwrap_or("no artifact")
            ));
        }
    }
    let mut header: Vec<String> = ["NAME", "FLUX", "APPLIED", "HELM", "CLUSTER", "CONTROL PLANE", "WORKERS"]
        .map(String::from)
        .to_vec();
    if named {
        header.insert(0, "MANAGEMENT CLUSTER".into());
    }
    let lines: Vec<Vec<String>> = reports
        .iter()
        .flat_map(|(mc, report)| {
            report.rows.iter().map(move |row| {
                let mut line = columns(row).to_vec();
                if named {
                    line.insert(0, mc.unwrap_or("-").to_string());
                }
                line
            })
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            lines
                .iter()
                .map(|l| l[i].len())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    for line in std::iter::once(&header).chain(lines.iter()) {
        let cells: Vec<String> = line.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    let problems: Vec<(&Option<&str>, &Row, &ObjectStatus)> = reports
        .iter()
        .flat_map(|(mc, report)| report.rows.iter().map(move |r| (mc, r)))
        .flat_map(|(mc, r)| r.objects.iter().map(move |o| (mc, r, o)))
        .filter(|(_, _, o)| verbose || o.state != State::Ready)
        .collect();
    if !problems.is_empty() {
        out.push('\n');
    }
    for (mc, row, o) in problems {
        out.push_str(&format!(
            "{}{}: {} {}/{} {}: {}\n",
            at(mc),
            row.name,
            o.object.kind,
            o.object.namespace,
            o.object.name,
            o.state.word(),
            if verbose {
                o.summary.clone()
            } else {
                one_line(&o.summary)
            }
        ));
        if verbose {
            for c in &o.conditions {
                out.push_str(&format!("    {}={} {}: {}\n", c.kind, c.status, c.reason, c.message));
            }
        }
    }
    out
}

fn objects_of<'a>(row: &'a Row, kind: &'a str) -> impl Iterator<Item = &'a ObjectStatus> {
    row.objects.iter().filter(move |o| o.object.kind == kind)
}

fn columns(row: &Row) -> [String; 7] {
    let of = |kind: &'static str| objects_of(row, kind);
    let one = |kind: &'static str| {
        let found: Vec<&ObjectStatus> = of(kind).collect();
        match found.as_slice() {
            [] => "-".to_string(),
            [o] if o.state == State::Ready || o.state == State::Progressing => o.summary.clone(),
            [o] => o.state.word().to_string(),
            many => format!("{} objects", many.len()),
        }
    };
    // The platform row has two (`kaas-kamaji`, `kaas-platform`): the worst speaks for the row,
    // the later one on a tie (it applies last).
    let flux = of("Kustomization").max_by_key(|k| k.state);
    let helm: Vec<&ObjectStatus> = of("HelmRelease").collect();
    let helm = if helm.is_empty() {
        "-".into()
    } else {
        format!(
            "{}/{} Ready",
            helm.iter().filter(|h| h.state == State::Ready).count(),
            helm.len()
        )
    };
    let pools: Vec<&ObjectStatus> = of("MachineDeployment").collect();
    let workers = if pools.is_empty() {
        "-".into()
    } else {
        let sum = |f: fn(&status::Replicas) -> Option<u64>| -> u64 {
            pools.iter().filter_map(|p| p.replicas.as_ref().and_then(f)).sum()
        };
        let bounds: Vec<String> = pools
            .iter()
            .filter_map(|p| p.autoscaling.map(|(lo, hi)| format!("{lo}-{hi}")))
            .collect();
        let auto = if bounds.is_empty() {
            String::new()
        } else {
            format!(" (autoscaled {})", bounds.join(", "))
        };
        if pools
            .iter()
            .all(|p| p.state == State::NoStatus || p.state == State::Missing)
        {
            format!("{}{auto}", pools[0].state.word())
        } else {
            format!("{}/{} ready{auto}", sum(|r| r.ready), sum(|r| r.desired))
        }
    };
    [
        row.name.clone(),
        flux.map_or("-".into(), |k| k.state.word().to_string()),
        flux.and_then(|k| k.applied_revision.as_deref())
            .map_or("-".into(), short),
        helm,
        one("Cluster"),
        one("KamajiControlPlane"),
        workers,
    ]
}

/// A controller's message on one line of at most 300 characters (Helm's run to many lines;
/// `-v` and `--format json` show them whole).
pub(crate) fn one_line(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(300) {
        Some((at, _)) => format!("{}…", &flat[..at]),
        None => flat,
    }
}

/// `main@sha1:<40 hex>` -> `main@<7 hex>`; a bare commit -> 7 hex digits.
fn short(revision: &str) -> String {
    match revision.split_once("@sha1:") {
        Some((branch, sha)) => format!("{branch}@{}", &sha[..sha.len().min(7)]),
        None if revision.len() == 40 => revision[..7].to_string(),
        None => revision.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::table;
    use crate::status::{ObjectRef, Report, Source, State};

    #[test]
    fn per_tenant_external_artifacts_are_one_line_and_only_those_not_ready_are_listed() {
        let source = |kind: &str, name: &str, state: State, revision: Option<&str>| Source {
            object: ObjectRef {
                kind: kind.into(),
                namespace: "flux-system".into(),
                name: name.into(),
            },
            revision: revision.map(str::to_string),
            state,
            summary: String::new(),
        };
        let report = Report {
            revision: None,
            sources: vec![
                source(
                    "ExternalArtifact",
                    "kaas-tenant-acme",
                    State::Ready,
                    Some("latest@sha256:aaa"),
                ),
                source("ExternalArtifact", "kaas-tenant-globex", State::Missing, None),
                source("GitRepository", "flux-system", State::Ready, Some("main@sha1:0123456")),
            ],
            artifacts: BTreeMap::new(),
            rows: Vec::new(),
        };
        let text = table(&report, false);
        assert!(
            text.contains("sources  2 ExternalArtifact (one per tenant): 1 Ready\n"),
            "{text}"
        );
        assert!(
            text.contains("source   ExternalArtifact flux-system/kaas-tenant-globex: Missing at no artifact\n"),
            "{text}"
        );
        assert!(!text.contains("kaas-tenant-acme"), "{text}");
        assert!(
            text.contains("source   GitRepository flux-system/flux-system: Ready"),
            "{text}"
        );
        assert!(table(&report, true).contains("kaas-tenant-acme: Ready at latest@sha256:aaa"));
    }
}
