//! `publish [--revision REV] [--dry-run]`: each tenant's OCI artifact from a commit's rendered
//! tree to its registry (see `crate::publish` for why a stopped run is safe).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::json;

use crate::cli::{Format, Printer, PublishArgs};
use crate::commands::ExitStatus;
use crate::delivery::TenantSource;
use crate::git::Workspace;
use crate::pin::auth::DockerConfig;
use crate::publish::oci::OciTarget;
use crate::publish::sources::{resolve, sources_at};
use crate::publish::{self, Change, Published, Target};

/// Registry connections at once.
const CONNECTIONS: usize = 8;

/// Runs `publish`.
pub fn run(printer: &Printer, repo: &Path, args: &PublishArgs) -> Result<ExitStatus> {
    let started = Instant::now();
    let ws = match Workspace::open(repo) {
        Ok(ws) => ws,
        Err(e) => {
            printer.error(
                &format!("publish reads the rendered tree from git: {e}"),
                Some("run it in the repository's git work tree, after the render is committed"),
            );
            return Ok(ExitStatus::Failure);
        }
    };
    let commit = match resolve(&ws, args.revision.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            printer.error(&e, Some("pass a commit, a branch or a tag with `--revision`"));
            return Ok(ExitStatus::Failure);
        }
    };
    let sources = match sources_at(&ws, commit) {
        Ok(s) => s,
        Err(errors) => {
            for e in &errors {
                printer.error(
                    &format!("commit {commit}: {e}"),
                    Some("run `kaas-gitops render` and commit its output"),
                );
            }
            return Ok(ExitStatus::Failure);
        }
    };
    if sources.is_empty() {
        let line = format!(
            "nothing to publish: flux/ at {} has no OCIRepository (spec.flux.delivery.mode is not `oci`, or the render is not committed)",
            crate::git::short(commit)
        );
        report(
            printer,
            args.output.format,
            commit,
            &[],
            &publish::Operations::default(),
            started,
            &line,
        );
        return Ok(ExitStatus::Success);
    }
    let mut insecure: Vec<String> = sources
        .iter()
        .filter(|s| s.insecure)
        .filter_map(|s| s.repository.split_once('/').map(|(h, _)| h.to_string()))
        .collect();
    insecure.sort();
    insecure.dedup();
    let env_path = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let docker_config = DockerConfig::locate(env_path("DOCKER_CONFIG"), env_path("HOME"));
    // Tenants are independent: a few connections at once (each its own client), results in
    // tenant order. Each tenant's blobs-then-manifest order is kept within its connection.
    let chunk = sources.len().div_ceil(CONNECTIONS).max(1);
    let timeout = Duration::from_secs(args.timeout);
    let outcomes: Vec<std::io::Result<(Vec<Published>, publish::Operations)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = sources
            .chunks(chunk)
            .map(|part| {
                let (insecure, docker_config) = (insecure.clone(), docker_config.clone());
                scope.spawn(move || {
                    let mut target = OciTarget::new(timeout, insecure, docker_config)?;
                    Ok(if args.dry_run {
                        publish::publish(part, &mut DryRun(&mut target))
                    } else {
                        publish::publish(part, &mut target)
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("a publish thread panicked")))
            })
            .collect()
    });
    let mut results = Vec::with_capacity(sources.len());
    let mut ops = publish::Operations::default();
    for o in outcomes {
        let (r, op) = o?;
        results.extend(r);
        ops.checks += op.checks;
        ops.blobs += op.blobs;
        ops.manifests += op.manifests;
    }
    let pushed = results.iter().filter(|r| r.change == Change::Pushed).count();
    let failed = results.iter().filter(|r| r.change == Change::Failed).count();
    let bytes: usize = results.iter().map(|r| r.bytes).sum();
    let verb = if args.dry_run { "would push" } else { "pushed" };
    let line = format!(
        "{verb} {pushed} of {} tenant artifacts ({bytes} bytes), {} unchanged{} at {} in {:.1}s",
        results.len(),
        results.len() - pushed - failed,
        if failed > 0 {
            format!(", {failed} FAILED")
        } else {
            String::new()
        },
        crate::git::short(commit),
        started.elapsed().as_secs_f64()
    );
    report(printer, args.output.format, commit, &results, &ops, started, &line);
    Ok(if failed > 0 {
        ExitStatus::Error
    } else {
        ExitStatus::Success
    })
}

/// `--dry-run`: reads the tags, pushes nothing.
struct DryRun<'a>(&'a mut OciTarget);

impl Target for DryRun<'_> {
    fn current(&mut self, source: &TenantSource) -> Result<Option<String>, String> {
        self.0.current(source)
    }
    fn push_blob(&mut self, _: &TenantSource, _: &str, _: &[u8]) -> Result<(), String> {
        Ok(())
    }
    fn push_manifest(&mut self, _: &TenantSource) -> Result<(), String> {
        Ok(())
    }
}

fn report(
    printer: &Printer,
    format: Format,
    commit: git2::Oid,
    results: &[Published],
    ops: &publish::Operations,
    started: Instant,
    line: &str,
) {
    let failed: Vec<&Published> = results.iter().filter(|r| r.change == Change::Failed).collect();
    match format {
        Format::Json => {
            let diagnostics: Vec<_> = failed
                .iter()
                .map(|r| {
                    crate::diagnostics::Diagnostic::error(format!(
                        "tenant {}: {}",
                        r.tenant,
                        r.error.as_deref().unwrap_or_default()
                    ))
                })
                .collect();
            printer.envelope(
                failed.is_empty(),
                json!({
                    "message": line,
                    "revision": commit.to_string(),
                    "diagnostics": diagnostics,
                    "tenants": results,
                    "pushed": results.iter().filter(|r| r.change == Change::Pushed).count(),
                    "unchanged": results.iter().filter(|r| r.change == Change::Unchanged).count(),
                    "bytes": results.iter().map(|r| r.bytes).sum::<usize>(),
                    "operations": ops,
                    "seconds": started.elapsed().as_secs_f64(),
                }),
            );
        }
        Format::Human | Format::Github => {
            for r in results {
                match r.change {
                    Change::Pushed => printer.status(&format!("pushed    {} {}", r.tenant, r.revision)),
                    Change::Unchanged if printer.verbose() => {
                        printer.status(&format!("unchanged {} {}", r.tenant, r.revision))
                    }
                    Change::Unchanged => {}
                    Change::Failed => printer.error(
                        &format!("tenant {}: {}", r.tenant, r.error.as_deref().unwrap_or_default()),
                        Some("the tag is as it was; run `publish` again once the registry answers"),
                    ),
                }
            }
            if failed.is_empty() {
                printer.status(line);
            } else {
                printer.failed(line);
            }
        }
    }
}
