//! `pr TENANT`: propose one tenant's change as a branch and a pull-request text.
//!
//! The render runs on the BASE commit's inputs with the working tree's tenant file swapped in,
//! so the branch holds that tenant's change and nothing else a colleague left unrendered. The
//! platform layer and shared files (`flux/kustomization.yaml`, `kaas.lock`) change only where
//! this tenant's change changes them: the base inputs are rendered once more without it, and
//! only the difference between the two renders goes on the branch.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::Result;

use crate::cli::Printer;
use crate::cli::{Format, PrArgs};
use crate::commands::commit::commit_time;
use crate::commands::pr_body::Proposal;
use crate::commands::render::report_invalid;
use crate::commands::summary::Status;
use crate::commands::{ExitStatus, pipeline};
use crate::diagnostics::Diagnostic;
use crate::git::pr::BranchUpdate;
use crate::git::{self, Change, Workspace, push, short};
use crate::model::build::names::is_dns1035;
use crate::render::Options;
use crate::render::{Tree, tenant_kustomization_name};
use crate::repo::inputs::{self, Inputs, PLATFORM_PATH};
use crate::repo::lock::LOCK_PATH;

/// Runs `pr`.
pub fn run(printer: &Printer, repo: &Path, args: &PrArgs) -> Result<ExitStatus> {
    let tenant = args.tenant.as_str();
    if !is_dns1035(tenant) {
        let d = Diagnostic::error(format!("`{tenant}` is not a tenant name"))
            .with_hint("pass the stem of a file in tenants/, e.g. `acme` for tenants/acme.yaml");
        return Ok(report_invalid(printer, Format::Human, vec![d]));
    }
    let ws = Workspace::open(repo)?;
    if let Some(remote) = &args.push {
        push::check_remote(&ws, remote)?;
    }
    let base = git::pr::resolve_base(&ws, args.base.as_deref())?;
    let spec_path = format!("tenants/{tenant}.yaml");
    let base_files = git::pr::read_files(&ws, base.commit, |p| is_input(p) || is_output(tenant, p))?;
    let before_inputs = match Inputs::from_files(&base_files) {
        Ok(i) => i,
        Err(d) => return Ok(report_invalid(printer, Format::Human, d)),
    };
    let on_disk = repo.join(&spec_path);
    // The same rules as `render`: no symlink out of the repository, no FIFO (issue 9).
    let spec = if std::fs::symlink_metadata(&on_disk).is_ok() {
        if let Some(d) = inputs::refuse_file(&fs_err::canonicalize(repo)?, &on_disk, &spec_path)? {
            return Ok(report_invalid(printer, Format::Human, vec![d]));
        }
        Some(inputs::read_bounded(&on_disk)?)
    } else {
        None
    };
    if spec.is_none() && !base_files.contains_key(&spec_path) {
        let d = Diagnostic::error(format!(
            "no tenant `{tenant}`: `{spec_path}` is neither in the working tree nor on `{}`",
            base.label
        ))
        .with_hint("create the file first, e.g. from another tenant's");
        return Ok(report_invalid(printer, Format::Human, vec![d]));
    }
    let mut after_inputs = before_inputs.clone();
    after_inputs.tenants.retain(|(_, stem, _)| stem != tenant);
    if let Some(bytes) = &spec {
        after_inputs
            .tenants
            .push((spec_path.clone(), tenant.to_string(), bytes.clone()));
        after_inputs.tenants.sort();
    }
    let select = Options {
        tenants: vec![tenant.to_string()],
        locked: args.render.locked,
        full: true,
    };
    let after = match pipeline::run(&after_inputs, &select) {
        Ok(r) => r,
        Err(d) => return Ok(report_invalid(printer, Format::Human, d)),
    };
    printer.diagnostics(&after.warnings);
    // Without a valid base render, every difference of the shared files is this change's.
    let before = pipeline::run(&before_inputs, &select).ok();
    let changes = changes(tenant, &base_files, spec, before.as_ref().map(|r| &r.tree), &after.tree);
    if changes.is_empty() {
        printer.status(&format!(
            "`{spec_path}` and its rendered files on `{}` are already as in the working tree; nothing to propose",
            base.label
        ));
        printer.envelope(
            true,
            serde_json::json!({"tenant": tenant, "base": base.label, "changes": []}),
        );
        return Ok(ExitStatus::Success);
    }
    let platform = &after.model.platform;
    let branch = format!("{}{tenant}", platform.branch_prefix);
    let refname = git::pr::check_branch(&ws, &branch)?;
    let proposal = Proposal {
        tenant,
        status: status(tenant, &changes),
        base: &base.label,
        branch: &branch,
        changes: &changes,
    };
    let sig = git::signature(&ws.repo, platform.author.as_ref(), commit_time()?)?;
    let updated = git::pr::update_branch(
        &ws,
        &refname,
        base.commit,
        &changes,
        |p| decided(tenant, p),
        &sig,
        &proposal.commit_message(),
    )?;
    let what = match updated.how {
        BranchUpdate::Created => format!("created at {} from `{}`", short(updated.new), base.label),
        BranchUpdate::Advanced => format!("updated to {}", short(updated.new)),
        BranchUpdate::Rebuilt => format!("rebuilt on `{}` at {}", base.label, short(updated.new)),
        BranchUpdate::Unchanged => format!("already up to date at {}", short(updated.new)),
    };
    printer.status(&format!("branch `{branch}` {what}"));
    if let Some(remote) = &args.push {
        match push::push(&ws, remote, &refname, args.force_with_lease) {
            Ok(pushed) => {
                let how = if pushed.forced {
                    "force-pushed (lease held)"
                } else {
                    "pushed"
                };
                printer.status(&format!("{how} `{branch}` to `{remote}`"));
            }
            Err(e) => {
                // The push failed: put the local branch back, so the repository is as it was.
                git::pr::undo(&ws, &refname, &updated)?;
                return Err(e.into());
            }
        }
    }
    let title = proposal.title();
    if args.output.get() == Format::Json {
        let paths: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
        printer.envelope(
            true,
            serde_json::json!({"tenant": tenant, "base": base.label, "branch": branch,
                "commit": updated.new.to_string(), "pushedTo": args.push, "changes": paths,
                "title": title, "body": proposal.body()}),
        );
    } else if args.body_only {
        printer.status(&format!("title: {title}"));
        printer.data(&proposal.body());
    } else {
        printer.data(&format!("{title}\n\n{}", proposal.body()));
    }
    Ok(ExitStatus::Success)
}

/// The files `pr` reads from the base commit to render.
fn is_input(p: &str) -> bool {
    p == PLATFORM_PATH
        || p == LOCK_PATH
        || p.starts_with("tenants/")
        || p == "base/platform/kustomization.yaml"
        || p == "base/tenant/kustomization.yaml"
}

/// The rendered files of the base that a tenant's change can touch.
fn is_output(tenant: &str, p: &str) -> bool {
    p.starts_with("overlays/platform/")
        || p.strip_prefix("overlays/tenants/")
            .is_some_and(|r| r.strip_prefix(tenant).is_some_and(|r| r.starts_with('/')))
        || p.starts_with("flux/")
}

/// The paths whose content on the branch kaas-gitops decides: the tenant's file and every
/// rendered file. Anything else a reviewer commits on the branch is kept on reruns.
fn decided(tenant: &str, p: &str) -> bool {
    p == format!("tenants/{tenant}.yaml") || p.starts_with("overlays/") || p.starts_with("flux/") || p == LOCK_PATH
}

/// The tenant's own files: its overlay and its Flux entry.
fn owned_by(tenant: &str, p: &str) -> bool {
    p.starts_with(&format!("overlays/tenants/{tenant}/"))
        || p == format!("flux/kustomization-{}.yaml", tenant_kustomization_name(tenant))
}

/// What the branch changes against the base (`base`: the base commit's files).
///
/// The tenant's file becomes `spec`; its overlay and Flux entry become exactly what `after`
/// renders; any other rendered file changes only where `after` differs from `before`, the base
/// inputs' own render (with no `before`, where `after` differs from the base's files).
pub fn changes(
    tenant: &str,
    base: &BTreeMap<String, Vec<u8>>,
    spec: Option<Vec<u8>>,
    before: Option<&Tree>,
    after: &Tree,
) -> Vec<Change> {
    let mut want: BTreeMap<String, Option<Vec<u8>>> = BTreeMap::new();
    want.insert(format!("tenants/{tenant}.yaml"), spec);
    for p in base.keys().filter(|p| owned_by(tenant, p)) {
        want.insert(p.clone(), None);
    }
    for (p, bytes) in after.iter().filter(|(p, _)| owned_by(tenant, p)) {
        want.insert(p.clone(), Some(bytes.clone()));
    }
    // A render leaves `kaas.lock` out when it would not change it; everything else it owns.
    let content = |tree: &Tree, p: &str| -> Option<Vec<u8>> {
        tree.get(p)
            .or_else(|| if p == LOCK_PATH { base.get(p) } else { None })
            .cloned()
    };
    let mut shared: BTreeSet<&str> = after.keys().map(String::as_str).collect();
    if let Some(before) = before {
        shared.extend(before.keys().map(String::as_str));
    }
    shared.insert(LOCK_PATH);
    for p in shared.into_iter().filter(|p| !owned_by(tenant, p)) {
        let new = content(after, p);
        let old = match before {
            Some(before) => content(before, p),
            None => base.get(p).cloned(),
        };
        if new != old {
            want.insert(p.to_string(), new);
        }
    }
    want.into_iter()
        .filter(|(p, new)| base.get(p) != new.as_ref())
        .map(|(path, new)| Change {
            old: base.get(&path).cloned(),
            path,
            new,
        })
        .collect()
}

/// Created when its overlay is new, deleted when it goes, else changed.
fn status(tenant: &str, changes: &[Change]) -> Status {
    let k = format!("overlays/tenants/{tenant}/kustomization.yaml");
    match changes.iter().find(|c| c.path == k) {
        Some(Change { old: None, .. }) => Status::Created,
        Some(Change { new: None, .. }) => Status::Deleted,
        _ => Status::Changed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(entries: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
        entries
            .iter()
            .map(|(p, c)| (p.to_string(), c.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn takes_shared_files_only_where_this_tenant_changes_them() {
        // The base left `overlays/platform/stale.yaml` unrendered: not this tenant's business.
        let base = tree(&[
            ("tenants/acme.yaml", "v1"),
            ("overlays/tenants/acme/kustomization.yaml", "k1"),
            ("overlays/tenants/acme/gone.yaml", "x"),
            ("overlays/platform/stale.yaml", "old"),
            ("flux/kustomization.yaml", "list"),
            ("kaas.lock", "lock"),
        ]);
        let before = tree(&[
            ("overlays/tenants/acme/kustomization.yaml", "k1"),
            ("overlays/tenants/acme/gone.yaml", "x"),
            ("overlays/platform/stale.yaml", "new"),
            ("flux/kustomization.yaml", "list"),
        ]);
        let after = tree(&[
            ("overlays/tenants/acme/kustomization.yaml", "k2"),
            ("overlays/platform/stale.yaml", "new"),
            ("overlays/platform/provider.yaml", "p"),
            ("flux/kustomization.yaml", "list"),
            ("kaas.lock", "lock2"),
        ]);
        let got = changes("acme", &base, Some(b"v2".to_vec()), Some(&before), &after);
        let paths: Vec<(&str, bool)> = got.iter().map(|c| (c.path.as_str(), c.new.is_some())).collect();
        assert_eq!(
            paths,
            [
                ("kaas.lock", true),
                ("overlays/platform/provider.yaml", true),
                ("overlays/tenants/acme/gone.yaml", false),
                ("overlays/tenants/acme/kustomization.yaml", true),
                ("tenants/acme.yaml", true),
            ]
        );
        assert_eq!(status("acme", &got), Status::Changed);
    }

    #[test]
    fn nothing_to_propose_when_the_base_is_current() {
        let base = tree(&[
            ("tenants/acme.yaml", "v1"),
            ("overlays/tenants/acme/kustomization.yaml", "k1"),
        ]);
        let after = tree(&[("overlays/tenants/acme/kustomization.yaml", "k1")]);
        assert!(changes("acme", &base, Some(b"v1".to_vec()), Some(&after), &after).is_empty());
    }
}
