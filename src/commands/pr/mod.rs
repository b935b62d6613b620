//! `pr TENANT`: propose one tenant's change as a branch and a pull-request text; `pr
//! --all-changed` does that for every tenant that changed, `pr --platform` (`platform`) for
//! the platform's inputs, and `--open` (`open`) opens the pull requests on the forge.
//!
//! The render runs on the BASE commit's inputs with the working tree's tenant file swapped in,
//! so the branch holds that tenant's change and nothing else a colleague left unrendered. The
//! platform layer and shared files (`flux/kustomization.yaml`, `kaas.lock`) change only where
//! this tenant's change changes them: the base inputs are rendered once more without it, and
//! only the difference between the two renders goes on the branch.

mod body;
mod open;
mod plan;
mod platform;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::Result;
use serde_json::json;

use crate::cli::Printer;
use crate::cli::{Format, PrArgs};
use crate::commands::commit::commit_time;
use crate::commands::pr::body::Proposal;
use crate::commands::pr::plan::{Plan, Planned, against_base, is_any_output};
use crate::commands::report_invalid;
use crate::commands::summary::Status;
use crate::commands::{ExitStatus, pipeline};
use crate::diagnostics::Diagnostic;
use crate::git::pr::{Base, BranchUpdate};
use crate::git::{self, Change, Workspace, push, short};
use crate::layout;
use crate::model::build::names::is_dns1035;
use crate::render::Options;
use crate::render::Tree;
use crate::repo::inputs::{self, Inputs, PLATFORM_PATH};
use crate::repo::lock::LOCK_PATH;

/// Runs `pr`.
pub fn run(printer: &Printer, repo: &Path, args: &PrArgs) -> Result<ExitStatus> {
    let tenant = args.tenant.as_deref().unwrap_or_default();
    let single = !args.platform && !args.all_changed;
    if single && !is_dns1035(tenant) {
        let d = Diagnostic::error(format!("`{tenant}` is not a tenant name"))
            .with_hint("pass the stem of a file in tenants/, e.g. `acme` for tenants/acme.yaml");
        return Ok(report_invalid(printer, args.output.get(), vec![d]));
    }
    let ws = Workspace::open(repo)?;
    if let Some(remote) = &args.push {
        push::check_remote(&ws, remote)?;
    }
    let base = git::pr::resolve_base(&ws, args.base.as_deref())?;
    let base_files = git::pr::read_files(&ws, base.commit, |p| {
        is_input(p) || if single { is_output(tenant, p) } else { is_any_output(p) }
    })?;
    let before_inputs = match Inputs::from_files(&base_files) {
        Ok(i) => i,
        Err(d) => return Ok(report_invalid(printer, args.output.get(), d)),
    };
    let planned = if args.platform {
        vec![platform::plan(repo, &base, &base_files, &before_inputs)?]
    } else if args.all_changed {
        let mut out = Vec::new();
        for tenant in tenants_anywhere(repo, &before_inputs)? {
            out.push(plan_tenant(
                printer,
                repo,
                &base,
                &base_files,
                &before_inputs,
                &tenant,
                args.render.locked,
            )?);
        }
        out
    } else {
        vec![plan_tenant(
            printer,
            repo,
            &base,
            &base_files,
            &before_inputs,
            tenant,
            args.render.locked,
        )?]
    };
    // Every problem of every branch together, and nothing written when there is one.
    let invalid: Vec<Diagnostic> = planned
        .iter()
        .flat_map(|p| match p {
            Planned::Invalid(d) => d.clone(),
            _ => Vec::new(),
        })
        .collect();
    if !invalid.is_empty() {
        return Ok(report_invalid(printer, args.output.get(), invalid));
    }
    let mut plans = Vec::new();
    for p in planned {
        match p {
            Planned::Branch(plan) => plans.push(plan),
            Planned::Nothing(why) if !args.all_changed || printer.verbose() => printer.status(&why),
            _ => {}
        }
    }
    if plans.is_empty() {
        if args.all_changed {
            printer.status(&format!("no tenant differs from `{}`; nothing to propose", base.label));
        }
        let data = if single {
            json!({"tenant": tenant, "base": base.label, "changes": []})
        } else {
            json!({"base": base.label, "pullRequests": []})
        };
        printer.envelope(true, data);
        return Ok(ExitStatus::Success);
    }
    let mut commits = Vec::new();
    for plan in &plans {
        commits.push(write_branch(printer, &ws, args, &base, plan)?);
    }
    let (status, requests) = if args.open {
        open::open_all(printer, &ws, args, &base, &plans)
    } else {
        (ExitStatus::Success, Vec::new())
    };
    if args.output.get() == Format::Json {
        // One document: a single tenant's fields at the top, or a list of them.
        let mut entries: Vec<serde_json::Value> = plans
            .iter()
            .zip(&commits)
            .enumerate()
            .map(|(i, (plan, commit))| {
                let paths: Vec<&str> = plan.changes.iter().map(|c| c.path.as_str()).collect();
                json!({"tenant": plan.tenant, "base": base.label, "branch": plan.branch,
                    "commit": commit, "pushedTo": args.push, "changes": paths,
                    "title": plan.title, "body": plan.body, "request": requests.get(i).cloned().flatten()})
            })
            .collect();
        let data = if single && entries.len() == 1 {
            entries.remove(0)
        } else {
            json!({"base": base.label, "pullRequests": entries})
        };
        printer.envelope(status == ExitStatus::Success, data);
        return Ok(status);
    }
    if args.open {
        return Ok(status);
    }
    for (i, plan) in plans.iter().enumerate() {
        let sep = if i > 0 { "\n" } else { "" };
        if args.body_only {
            printer.status(&format!("title: {}", plan.title));
            printer.data(&format!("{sep}{}", plan.body));
        } else {
            printer.data(&format!("{sep}{}\n\n{}", plan.title, plan.body));
        }
    }
    Ok(ExitStatus::Success)
}

/// Every tenant in the base or the working tree, by name.
fn tenants_anywhere(repo: &Path, base: &Inputs) -> Result<Vec<String>> {
    let mut names: BTreeSet<String> = base.tenants.iter().map(|(_, stem, _)| stem.clone()).collect();
    let dir = repo.join("tenants");
    if dir.is_dir() {
        for entry in fs_err::read_dir(&dir)? {
            let name = entry?.file_name().to_string_lossy().into_owned();
            if let Some(stem) = name.strip_suffix(".yaml")
                && !stem.starts_with('.')
            {
                names.insert(stem.to_string());
            }
        }
    }
    Ok(names.into_iter().collect())
}

/// One tenant's branch: its file from the working tree, rendered on the base's other inputs.
fn plan_tenant(
    printer: &Printer,
    repo: &Path,
    base: &Base,
    base_files: &BTreeMap<String, Vec<u8>>,
    before_inputs: &Inputs,
    tenant: &str,
    locked: bool,
) -> Result<Planned> {
    let spec_path = format!("tenants/{tenant}.yaml");
    if !is_dns1035(tenant) {
        let d = Diagnostic::error(format!("`{spec_path}`: `{tenant}` is not a tenant name"))
            .with_hint("tenant file stems are DNS-1035 labels: lower-case letters, digits and `-`");
        return Ok(Planned::Invalid(vec![d]));
    }
    let on_disk = repo.join(&spec_path);
    // The same rules as `render`: no symlink out of the repository, no FIFO (issue 9).
    let spec = if std::fs::symlink_metadata(&on_disk).is_ok() {
        if let Some(d) = inputs::refuse_file(&fs_err::canonicalize(repo)?, &on_disk, &spec_path)? {
            return Ok(Planned::Invalid(vec![d]));
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
        return Ok(Planned::Invalid(vec![d]));
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
        locked,
        full: true,
    };
    let after = match pipeline::run(&after_inputs, &select) {
        Ok(r) => r,
        Err(d) => return Ok(Planned::Invalid(d)),
    };
    printer.diagnostics(&after.warnings);
    // Without a valid base render, every difference of the shared files is this change's.
    let before = pipeline::run(before_inputs, &select).ok();
    let changes = changes(tenant, base_files, spec, before.as_ref().map(|r| &r.tree), &after.tree);
    if changes.is_empty() {
        return Ok(Planned::Nothing(format!(
            "`{spec_path}` and its rendered files on `{}` are already as in the working tree; nothing to propose",
            base.label
        )));
    }
    let platform = &after.model.platform;
    let branch = format!("{}{tenant}", platform.branch_prefix);
    let proposal = Proposal {
        tenant,
        status: status(tenant, &changes),
        base: &base.label,
        branch: &branch,
        changes: &changes,
    };
    let (title, message, body) = (proposal.title(), proposal.commit_message(), proposal.body());
    let owner = tenant.to_string();
    Ok(Planned::Branch(Plan {
        tenant: Some(tenant.to_string()),
        branch,
        changes,
        decided: Box::new(move |p| decided(&owner, p)),
        author: platform.author.clone(),
        title,
        message,
        body,
    }))
}

/// Creates or moves the plan's branch, then pushes it when asked; a failed push puts the local
/// branch back.
fn write_branch(printer: &Printer, ws: &Workspace, args: &PrArgs, base: &Base, plan: &Plan) -> Result<String> {
    let refname = git::pr::check_branch(ws, &plan.branch)?;
    let sig = git::signature(&ws.repo, plan.author.as_ref(), commit_time()?)?;
    let updated = git::pr::update_branch(
        ws,
        &refname,
        base.commit,
        &plan.changes,
        &plan.decided,
        &sig,
        &plan.message,
    )?;
    let what = match updated.how {
        BranchUpdate::Created => format!("created at {} from `{}`", short(updated.new), base.label),
        BranchUpdate::Advanced => format!("updated to {}", short(updated.new)),
        BranchUpdate::Rebuilt => format!("rebuilt on `{}` at {}", base.label, short(updated.new)),
        BranchUpdate::Unchanged => format!("already up to date at {}", short(updated.new)),
    };
    let branch = &plan.branch;
    printer.status(&format!("branch `{branch}` {what}"));
    if let Some(remote) = &args.push {
        match push::push(ws, remote, &refname, args.force_with_lease) {
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
                git::pr::undo(ws, &refname, &updated)?;
                return Err(e.into());
            }
        }
    }
    Ok(updated.new.to_string())
}

/// The files `pr` reads from the base commit to render.
pub fn is_input(p: &str) -> bool {
    p == PLATFORM_PATH
        || p == LOCK_PATH
        || p.starts_with("tenants/")
        || p == "base/platform/kustomization.yaml"
        || p == "base/tenant/kustomization.yaml"
}

/// The rendered files of the base that a tenant's change can touch.
fn is_output(tenant: &str, p: &str) -> bool {
    layout::in_platform(p) || layout::tenant_of(p) == Some(tenant) || layout::in_flux(p)
}

/// The paths whose content on the branch kaas-gitops decides: the tenant's file and every
/// rendered file. Anything else a reviewer commits on the branch is kept on reruns.
fn decided(tenant: &str, p: &str) -> bool {
    p == format!("tenants/{tenant}.yaml") || layout::is_rendered(p) || p == LOCK_PATH
}

/// The tenant's own files: its overlay and its Flux entry.
fn owned_by(tenant: &str, p: &str) -> bool {
    layout::tenant_of(p) == Some(tenant) || layout::tenant_of_flux_file(p) == Some(tenant)
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
    against_base(base, want)
}

/// Created when its overlay is new, deleted when it goes, else changed.
fn status(tenant: &str, changes: &[Change]) -> Status {
    let k = layout::overlay_index(Some(tenant));
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
