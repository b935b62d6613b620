//! `render --commit`: checks git before the render writes anything, then commits exactly what
//! the render wrote or deleted, with a message naming each tenant and what happened to it.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use git2::Signature;

use crate::cli::Printer;
use crate::commands::summary::Status;
use crate::git::{self, GitError, Workspace};
use crate::layout;
use crate::model::Platform;
use crate::repo::lock::LOCK_PATH;
use crate::repo::tree::Plan;

/// The commit time: `KAAS_COMMIT_TIME` (unix seconds) when set, so tests and reproducible
/// pipelines get fixed commits; else `None`, the system clock. The only place it is read.
pub(crate) fn commit_time() -> Result<Option<i64>, GitError> {
    match std::env::var("KAAS_COMMIT_TIME") {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| GitError::BadCommitTime { value: v }),
        _ => Ok(None),
    }
}

/// A repository checked and ready to take the render's commit.
pub struct Committer {
    ws: Workspace,
    sig: Signature<'static>,
}

impl Committer {
    /// Everything that could stop the commit, checked before the render writes a file, so a
    /// failure leaves the repository as it was.
    pub fn prepare(repo: &Path, platform: &Platform) -> Result<Committer, GitError> {
        let ws = Workspace::open(repo)?;
        git::commit::preflight(&ws)?;
        let sig = git::signature(&ws.repo, platform.author.as_ref(), commit_time()?)?;
        // A signing configuration that cannot sign stops the run before a file is written.
        git::sign::Signer::from_config(&ws.repo, &sig)?;
        Ok(Committer { ws, sig })
    }

    /// Commits the paths `plan` wrote or deleted; nothing when it changed nothing.
    pub fn commit(self, printer: &Printer, plan: &Plan, summary: &BTreeMap<String, (Status, usize)>) -> Result<()> {
        let paths = plan.paths();
        if paths.is_empty() {
            printer.status("nothing changed; no commit");
            return Ok(());
        }
        let message = message(&paths, summary);
        let committed = git::commit::commit_paths(&self.ws, &paths, &self.sig, &message)
            .context("the rendered files are written but not committed")?;
        match committed {
            None => printer.status("the rendered files match HEAD; no commit"),
            Some(c) => printer.status(&format!(
                "committed {} on `{}`: {}",
                git::short(c.id),
                c.branch.trim_start_matches("refs/heads/"),
                message.lines().next().unwrap_or_default()
            )),
        }
        Ok(())
    }
}

/// `kaas-gitops render: acme created, globex changed, platform changed`, then one line per
/// unit. A tenant whose only change is its Flux entry counts as changed.
pub fn message(paths: &[String], summary: &BTreeMap<String, (Status, usize)>) -> String {
    let mut units: BTreeMap<String, (Status, usize)> = summary
        .iter()
        .filter(|(_, (s, _))| *s != Status::Unchanged)
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    for p in paths {
        let unit = if layout::is_platform_flux_file(p) {
            Some("platform".to_string())
        } else {
            layout::tenant_of_flux_file(p).map(str::to_string)
        };
        if let Some(u) = unit {
            units.entry(u).or_insert((Status::Changed, 0)).1 += 1;
        }
    }
    let platform = units.remove("platform");
    let mut parts: Vec<String> = units
        .iter()
        .map(|(name, (s, _))| format!("{name} {}", s.as_str()))
        .collect();
    if let Some((s, _)) = platform {
        parts.push(format!("platform {}", s.as_str()));
    }
    let lock = paths.iter().any(|p| p == LOCK_PATH);
    if parts.is_empty() {
        parts.push(if lock {
            "kaas.lock changed".to_string()
        } else {
            format!("{} file(s) changed", paths.len())
        });
    }
    let mut subject = format!("kaas-gitops render: {}", parts.join(", "));
    if subject.len() > 72 {
        // Too long for a subject line: count instead; the body names every tenant.
        let count = |want: Status| units.values().filter(|(s, _)| *s == want).count();
        let mut counts = Vec::new();
        for s in [Status::Created, Status::Changed, Status::Deleted] {
            let n = count(s);
            if n > 0 {
                counts.push(format!("{n} {}", s.as_str()));
            }
        }
        subject = format!("kaas-gitops render: tenants {}", counts.join(", "));
        if let Some((s, _)) = platform {
            subject.push_str(&format!(", platform {}", s.as_str()));
        }
    }
    let mut body = String::new();
    let files = crate::commands::summary::files;
    for (name, (s, n)) in &units {
        body.push_str(&format!("- tenant {name}: {} ({})\n", s.as_str(), files(*n)));
    }
    if let Some((s, n)) = platform {
        body.push_str(&format!("- platform layer: {} ({})\n", s.as_str(), files(n)));
    }
    if lock {
        body.push_str("- kaas.lock: changed\n");
    }
    format!("{subject}\n\n{body}\nWritten by `kaas-gitops render --commit`.\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(entries: &[(&str, Status, usize)]) -> BTreeMap<String, (Status, usize)> {
        entries.iter().map(|(n, s, c)| (n.to_string(), (*s, *c))).collect()
    }

    #[test]
    fn names_each_tenant_and_the_platform() {
        let summary = summary(&[
            ("platform", Status::Changed, 1),
            ("acme", Status::Created, 3),
            ("globex", Status::Unchanged, 0),
        ]);
        let paths = [
            "flux/kustomization-kaas-tenant-globex.yaml",
            "kaas.lock",
            "overlays/platform/x.yaml",
        ]
        .map(String::from);
        assert_eq!(
            message(&paths, &summary),
            "kaas-gitops render: acme created, globex changed, platform changed\n\n\
             - tenant acme: created (3 files)\n\
             - tenant globex: changed (1 file)\n\
             - platform layer: changed (1 file)\n\
             - kaas.lock: changed\n\
             \nWritten by `kaas-gitops render --commit`.\n"
        );
    }

    #[test]
    fn counts_tenants_when_the_names_do_not_fit_a_subject_line() {
        let summary = summary(&[
            ("platform", Status::Unchanged, 0),
            ("acme-payments", Status::Created, 3),
            ("globex-batch", Status::Created, 3),
            ("initech-reports", Status::Changed, 1),
            ("old", Status::Deleted, 2),
        ]);
        let m = message(&["overlays/tenants/old/x.yaml".to_string()], &summary);
        assert!(
            m.starts_with(
                "kaas-gitops render: tenants 2 created, 1 changed, 1 deleted\n\n- tenant acme-payments: created"
            ),
            "{m}"
        );
    }
}
