//! `wait [TENANT...]`: until Flux has applied the revision (or a later commit that descends from
//! it) to the tenants (all when none) and the platform, their Kustomizations and HelmReleases
//! are Ready, and (unless `--flux-only`) each tenant's Cluster is Available, its control plane
//! runs the version its spec asks for and its MachineDeployments are rolled out. Exit 0 then;
//! 1 when one failed for good or at the timeout; 2 when the cluster cannot be read.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Result;
use serde_json::json;

use crate::cli::{Format, Printer, WaitArgs};
use crate::cluster::{self, ClusterError, GIT_REPOSITORY, KUSTOMIZATION, OCI_REPOSITORY};
use crate::commands::ExitStatus;
use crate::commands::status::{Prepared, one_line, prepare, report_cluster_error, table};
use crate::git::Workspace;
use crate::status::{self, Gate, Report, Verdict, Want};

/// How often the cluster is read again.
const POLL: Duration = Duration::from_secs(2);

/// Runs `wait`.
pub fn run(printer: &Printer, repo: &Path, args: &WaitArgs) -> Result<ExitStatus> {
    let started = Instant::now();
    if args.placement.all_management_clusters {
        return run_all(printer, repo, args, started);
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
    let outcome = match wait_on(printer, repo, args, prepared, started, args.output.format)? {
        Ok(o) => o,
        Err(status) => return Ok(status),
    };
    finish(
        printer,
        args.output.format,
        &outcome.report,
        outcome.status,
        &outcome.line,
    );
    Ok(outcome.status)
}

/// `wait --all-management-clusters`: each management cluster of kaas.yaml in turn, through its
/// own context, within the one `--timeout`; the first that fails ends the wait.
fn run_all(printer: &Printer, repo: &Path, args: &WaitArgs, started: Instant) -> Result<ExitStatus> {
    let format = args.output.format;
    let clusters =
        match crate::commands::status::management_clusters(printer, repo, &args.placement.context_of, format)? {
            Ok(c) => c,
            Err(status) => return Ok(status),
        };
    let Some(asked) = crate::commands::status::tenants_by_cluster(printer, repo, &clusters, &args.tenants)? else {
        return Ok(ExitStatus::Failure);
    };
    let mut docs = Vec::new();
    let mut waited = 0;
    for (name, context) in &clusters {
        let target = crate::cli::ClusterArgs {
            kubeconfig: args.cluster.kubeconfig.clone(),
            context: Some(context.clone()),
        };
        let mine = &asked[name];
        if !args.tenants.is_empty() && mine.is_empty() {
            continue; // none of the tenants asked for runs here
        }
        let prepared = match prepare(
            printer,
            repo,
            mine,
            args.revision.as_deref(),
            &target,
            Some(name),
            Format::Human,
        )? {
            Ok(p) => p,
            Err(status) => return Ok(status),
        };
        if format != Format::Json {
            printer.status(&format!("management cluster `{name}` (context `{context}`):"));
        }
        let outcome = match wait_on(printer, repo, args, prepared, started, format)? {
            Ok(o) => o,
            Err(status) => return Ok(status),
        };
        waited += 1;
        let ok = outcome.status == ExitStatus::Success;
        if format == Format::Json {
            docs.push(
                json!({"name": name, "context": context, "ok": ok, "message": outcome.line,
                             "revision": outcome.report.revision, "rows": outcome.report.rows}),
            );
        } else {
            finish(
                printer,
                format,
                &outcome.report,
                outcome.status,
                &format!("{name}: {}", outcome.line),
            );
        }
        if !ok {
            if format == Format::Json {
                printer.envelope(false, json!({"managementClusters": docs}));
            }
            return Ok(outcome.status);
        }
    }
    if format == Format::Json {
        printer.envelope(true, json!({"managementClusters": docs}));
    } else {
        printer.status(&format!("ok: {waited} management cluster(s) at the revision"));
    }
    Ok(ExitStatus::Success)
}

/// How a wait on one management cluster ended.
struct Outcome {
    status: ExitStatus,
    line: String,
    report: Report,
}

/// Waits on one management cluster until the revision is Ready there, fails, or the timeout
/// (counted from `started`) passes; `Err` when the cluster cannot be read (reported).
fn wait_on(
    printer: &Printer,
    repo: &Path,
    args: &WaitArgs,
    prepared: Prepared,
    started: Instant,
    format: Format,
) -> Result<Result<Outcome, ExitStatus>> {
    let Prepared {
        entries,
        want,
        artifacts,
        cluster,
    } = prepared;
    let Some(want) = want else {
        printer.error(
            "no revision to wait for: the repository has no commit",
            Some("pass `--revision REV`"),
        );
        return Ok(Err(ExitStatus::Failure));
    };
    let gate = if args.flux_only { Gate::Flux } else { Gate::Cluster };
    let workspace = Workspace::open(repo).ok();
    let mut want = Want::new(want);
    let mut asked = std::collections::BTreeSet::new();
    let mut said = String::new();
    let mut reconciled = false;
    loop {
        let (live, _) = match cluster::read::fleet(&cluster, &entries) {
            Ok(l) => l,
            Err(e) => return Ok(Err(report_cluster_error(printer, format, &e))),
        };
        // Commits Flux applied that this run has not asked git about yet: a later merge that
        // descends from the one waited for applies it too.
        let new: std::collections::BTreeSet<String> =
            status::applied_commits(&live).difference(&asked).cloned().collect();
        if let Some(ws) = &workspace {
            want.later.extend(ws.descendants_of(&want.revision, &new));
        }
        asked.extend(new);
        if args.reconcile && !reconciled {
            reconciled = true;
            if let Err(e) = request_reconciles(printer, &cluster, &entries, &live, &want, &artifacts) {
                return Ok(Err(report_cluster_error(printer, format, &e)));
            }
        }
        let report = status::assess(&entries, &live, Some(&want), &artifacts);
        let verdict = status::verdict(&report, gate);
        let elapsed = started.elapsed();
        let outcome = match verdict {
            Verdict::Done => Some((
                ExitStatus::Success,
                format!(
                    "ok: {} Ready at {}{} in {}s",
                    plural(entries.len(), "Kustomization"),
                    want.revision,
                    if gate == Gate::Cluster {
                        ", clusters caught up"
                    } else {
                        ""
                    },
                    elapsed.as_secs()
                ),
            )),
            Verdict::Failed(why) => Some((ExitStatus::Failure, one_line(&why))),
            Verdict::Waiting(why) if elapsed >= args.timeout => Some((
                ExitStatus::Failure,
                format!(
                    "not Ready after {}: {}",
                    humantime::format_duration(args.timeout),
                    one_line(&why)
                ),
            )),
            Verdict::Waiting(why) => {
                if why != said && format == Format::Human {
                    printer.status(&format!("waiting: {}", one_line(&why)));
                }
                said = why;
                None
            }
        };
        if let Some((status, line)) = outcome {
            return Ok(Ok(Outcome { status, line, report }));
        }
        std::thread::sleep(
            POLL.min(args.timeout.saturating_sub(elapsed))
                .max(Duration::from_millis(100)),
        );
    }
}

/// `--reconcile`: asks Flux to reconcile now what is behind the revision, and only that
/// ([`status::reconcile::requests`]), once, after the first look at the cluster.
fn request_reconciles(
    printer: &Printer,
    cluster: &cluster::Cluster,
    entries: &[status::Entry],
    live: &status::Live,
    want: &Want,
    artifacts: &std::collections::BTreeMap<String, String>,
) -> Result<(), ClusterError> {
    let at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let asks = status::reconcile::requests(entries, live, want, artifacts);
    for o in &asks {
        let kind = match o.kind.as_str() {
            "GitRepository" => GIT_REPOSITORY,
            "OCIRepository" => OCI_REPOSITORY,
            _ => KUSTOMIZATION,
        };
        match cluster.request_reconcile(kind, &o.namespace, &o.name, &at) {
            // Gone since the look (a tenant just deleted): nothing to ask.
            Err(ClusterError::Api { code: 404, .. }) | Ok(()) => {}
            Err(e) => return Err(e),
        }
    }
    let sources = asks.iter().filter(|o| o.kind != "Kustomization").count();
    printer.status(&if asks.is_empty() {
        "nothing to ask Flux to reconcile: every source is at the revision".to_string()
    } else {
        format!(
            "asked Flux to reconcile {} source(s) and {} Kustomization(s) now (only what is behind the revision)",
            sources,
            asks.len() - sources
        )
    });
    Ok(())
}

fn finish(printer: &Printer, format: Format, report: &Report, status: ExitStatus, line: &str) {
    match format {
        Format::Json => {
            let ok = status == ExitStatus::Success;
            let (message, diagnostics) = if ok {
                (line.to_string(), vec![])
            } else {
                (
                    format!("error: {line}"),
                    vec![crate::diagnostics::Diagnostic::error(line)],
                )
            };
            printer.envelope(
                ok,
                json!({"message": message, "revision": report.revision, "diagnostics": diagnostics,
                       "sources": report.sources, "artifacts": report.artifacts, "rows": report.rows}),
            );
        }
        Format::Human | Format::Github => {
            if status == ExitStatus::Success {
                printer.status(line);
            } else {
                // The table says which object failed: shown with the error, under -q too.
                printer.status(&table(report, false));
                printer.failed(line);
            }
        }
    }
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}
