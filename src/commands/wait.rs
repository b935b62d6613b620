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
    let Prepared {
        entries,
        want,
        artifacts,
        cluster,
    } = match prepare(
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
    let Some(want) = want else {
        printer.error(
            "no revision to wait for: the repository has no commit",
            Some("pass `--revision REV`"),
        );
        return Ok(ExitStatus::Failure);
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
            Err(e) => return Ok(report_cluster_error(printer, args.output.format, &e)),
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
                return Ok(report_cluster_error(printer, args.output.format, &e));
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
                if why != said && args.output.format == Format::Human {
                    printer.status(&format!("waiting: {}", one_line(&why)));
                }
                said = why;
                None
            }
        };
        if let Some((status, line)) = outcome {
            finish(printer, args.output.format, &report, status, &line);
            return Ok(status);
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
