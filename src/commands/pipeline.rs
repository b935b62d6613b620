//! The render pipeline shared by `render`, `diff` and later `watch`/`pr`: inputs -> load ->
//! validate -> resolve images -> render -> desired tree (including `kaas.lock` when this run
//! changes it). Pure after the inputs are read.

use crate::cli::SelectArgs;
use crate::commands::inputs::{Inputs, PLATFORM_PATH};
use crate::diagnostics::Diagnostic;
use crate::lock::{LOCK_PATH, Lock};
use crate::model::Model;
use crate::render::{self, Context, Tree, images};
use crate::spec::load;
use crate::spec::raw::{PlatformFile, TenantFile};
use crate::validate::{self, TenantInput};

/// A successful render in memory.
#[derive(Debug)]
pub struct Rendered {
    /// The fleet.
    pub model: Model,
    /// Desired files.
    pub tree: Tree,
    /// Path prefixes this render owns.
    pub owned: Vec<String>,
    /// Warnings to print.
    pub warnings: Vec<Diagnostic>,
}

/// Runs the pure pipeline. `Err` holds every problem of every input.
pub fn run(inputs: &Inputs, select: &SelectArgs) -> Result<Rendered, Vec<Diagnostic>> {
    let mut errs = inputs.problems.clone();
    let platform = load::parse::<PlatformFile>(PLATFORM_PATH, &inputs.platform);
    let mut tenants: Vec<TenantInput> = Vec::new();
    for (path, stem, bytes) in &inputs.tenants {
        match load::parse::<TenantFile>(path, bytes) {
            Ok(t) => tenants.push((stem.clone(), t)),
            Err(e) => errs.extend(e),
        }
    }
    let lock = match &inputs.lock {
        None => Lock::default(),
        Some(bytes) => Lock::parse(bytes).unwrap_or_else(|e| {
            errs.extend(e);
            Lock::default()
        }),
    };
    let platform = match platform {
        Ok(p) => p,
        Err(e) => {
            errs.extend(e);
            return Err(errs);
        }
    };
    for name in &select.tenants {
        let known = inputs.tenants.iter().any(|(_, stem, _)| stem == name);
        if !known && !validate::names::is_dns1035(name) {
            errs.push(
                Diagnostic::error(format!("`--tenant {name}` names no tenant"))
                    .with_hint("pass the stem of a file in tenants/, e.g. `--tenant acme` for tenants/acme.yaml"),
            );
        }
    }
    let validated = validate::validate(&platform, &tenants, &lock);
    let validated = match validated {
        Ok(v) if errs.is_empty() => v,
        Ok(_) => return Err(errs),
        Err(e) => {
            errs.extend(e);
            return Err(errs);
        }
    };
    let (images, diags) = images::resolve(&validated.model.platform, &platform.source, &lock, select.locked);
    let (image_errors, warnings): (Vec<_>, Vec<_>) = diags.into_iter().partition(Diagnostic::is_error);
    if !image_errors.is_empty() {
        return Err(image_errors);
    }
    let ctx = Context {
        base_platform: inputs.base_platform,
        base_tenant: inputs.base_tenant,
    };
    let only = (!select.tenants.is_empty()).then_some(select.tenants.as_slice());
    let (mut tree, owned) = render::render(&validated.model, &images, ctx, only);
    if validated.lock != lock
        || (inputs.lock.is_some() && inputs.lock.as_deref() != Some(&validated.lock.to_bytes()[..]))
    {
        tree.insert(LOCK_PATH.to_string(), validated.lock.to_bytes());
    }
    Ok(Rendered {
        model: validated.model,
        tree,
        owned,
        warnings,
    })
}
