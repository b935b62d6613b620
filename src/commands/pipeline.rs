//! The render pipeline shared by `render`, `diff` and later `watch`/`pr`: inputs -> load ->
//! validate -> resolve images -> render -> desired tree (including `kaas.lock` when this run
//! changes it). Pure after the inputs are read.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use crate::diagnostics::Diagnostic;
use crate::model::build::{self, TenantInput};
use crate::model::{Model, Platform, Tenant};
use crate::render::{self, Context, Options, Tree, images};
use crate::repo::inputs::{Inputs, PLATFORM_PATH};
use crate::repo::lock::{LOCK_PATH, Lock};
use crate::spec::load::{self, ParseCache, Parsed};
use crate::spec::raw::{PlatformFile, TenantFile};

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
    /// Overlay folders left as they are: their recorded input hash equals this run's.
    pub keep: Vec<String>,
    /// Every platform image as rendered (pinned from kaas.lock where it can be).
    pub images: images::Images,
}

/// Each tenant's input hash: the tool version, every platform input that reaches a tenant
/// overlay (kaas.yaml, resolved images, base/tenant), the tenant file and its VIP. Equal hashes
/// mean byte-identical overlays, so an unchanged tenant need not be rendered or compared, and
/// its previous output need not be read for the transition rules.
fn input_hashes<'a>(
    inputs: &Inputs,
    platform_model: &Platform,
    tenants: impl Iterator<Item = &'a Tenant>,
    images: &images::Images,
) -> BTreeMap<String, String> {
    let mut platform = Sha256::new();
    platform.update(env!("CARGO_PKG_VERSION").as_bytes());
    // The rendering code's fingerprint (build.rs): a changed renderer re-renders every tenant.
    platform.update(env!("KAAS_RENDER_CODE").as_bytes());
    platform.update(&inputs.platform);
    for spec in platform_model.images() {
        platform.update(images.get(spec).full().as_bytes());
        platform.update(b"\n");
    }
    platform.update([u8::from(inputs.base_tenant)]);
    let platform = platform.finalize();
    let bytes: BTreeMap<&str, &[u8]> = inputs
        .tenants
        .iter()
        .map(|(_, stem, b)| (stem.as_str(), b.as_slice()))
        .collect();
    tenants
        .map(|t| {
            let mut h = Sha256::new();
            h.update(platform);
            h.update(bytes.get(t.name.as_str()).copied().unwrap_or_default());
            h.update(t.vip.map(|v| v.to_string()).unwrap_or_default().as_bytes());
            // The datastore names come from kaas.lock (or what was deployed), not the file.
            h.update(format!("\n{:?}", t.datastore_names).as_bytes());
            (t.name.clone(), format!("sha256:{}", hex::encode(h.finalize())))
        })
        .collect()
}

/// Runs the pure pipeline. `Err` holds every problem of every input.
pub fn run(inputs: &Inputs, select: &Options) -> Result<Rendered, Vec<Diagnostic>> {
    run_cached(inputs, select, &mut ParseCache::default())
}

/// The validated fleet with its images resolved: what a render works from, and all that
/// `backup restore-plan` needs.
#[derive(Debug)]
pub struct Resolved {
    /// The fleet.
    pub model: Model,
    /// Every platform image as rendered.
    pub images: images::Images,
    /// Warnings to print.
    pub warnings: Vec<Diagnostic>,
    /// `kaas.lock` as this run leaves it, when its bytes change.
    pub new_lock: Option<Vec<u8>>,
    /// Each tenant's input hash (see [`input_hashes`]).
    pub hashes: BTreeMap<String, String>,
}

/// `run`, reusing and updating `cache`.
pub fn run_cached(inputs: &Inputs, select: &Options, cache: &mut ParseCache) -> Result<Rendered, Vec<Diagnostic>> {
    let Resolved {
        model,
        images,
        warnings,
        new_lock,
        hashes,
    } = resolve(inputs, select, cache)?;
    let ctx = Context {
        base_platform: inputs.base_platform,
        base_tenant: inputs.base_tenant,
    };
    let only = (!select.tenants.is_empty()).then_some(select.tenants.as_slice());
    let skip: BTreeSet<String> = if select.full {
        BTreeSet::new()
    } else {
        hashes
            .iter()
            .filter(|(name, h)| inputs.overlay_hashes.get(*name) == Some(*h))
            .map(|(name, _)| name.clone())
            .collect()
    };
    let selection = render::Selection {
        only,
        skip: &skip,
        hashes: &hashes,
    };
    let (mut tree, owned) = render::render(&model, &images, ctx, selection);
    let flux_dirs: BTreeMap<&str, String> = model
        .tenants
        .iter()
        .filter(|t| skip.contains(&t.name))
        .map(|t| {
            (
                t.name.as_str(),
                model.platform.flux_dir(t.management_cluster.as_deref()),
            )
        })
        .collect();
    let keep = flux_dirs
        .iter()
        .flat_map(|(t, dir)| {
            // The OCIRepository is kept when it exists (`delivery.mode: oci`); with `git` there
            // is none to keep.
            crate::layout::tenant_owned(t, dir)
        })
        .collect();
    if let Some(bytes) = new_lock {
        tree.insert(LOCK_PATH.to_string(), bytes);
    }
    Ok(Rendered {
        model,
        tree,
        owned,
        warnings,
        keep,
        images,
    })
}

/// The images as resolved (with their diagnostics) and, when every image resolved, each tenant's
/// input hash.
type ImagesAndHashes = (images::Images, Vec<Diagnostic>, Option<BTreeMap<String, String>>);

/// Loads and validates every input and resolves the images, reusing and updating `cache`.
/// `Err` holds every problem of every input.
pub fn resolve(inputs: &Inputs, select: &Options, cache: &mut ParseCache) -> Result<Resolved, Vec<Diagnostic>> {
    let mut errs = inputs.problems.clone();
    let platform = load::parse::<PlatformFile>(PLATFORM_PATH, &inputs.platform);
    let mut tenants: Vec<TenantInput> = Vec::new();
    // Tenant files are independent: parse the new or changed ones in parallel.
    let stale: Vec<&(String, String, Vec<u8>)> = inputs
        .tenants
        .iter()
        .filter(|(path, _, bytes)| cache.parsed.get(path).is_none_or(|(b, _)| b != bytes))
        .collect();
    // kaas.lock (a line or more per tenant) is parsed beside them, not after: it was a tenth of
    // a no-op render at 1,000 tenants, all of it on one core (BENCHMARKS.md).
    let (fresh, lock) = rayon::join(
        || -> Vec<(String, Vec<u8>, Parsed)> {
            stale
                .par_iter()
                .map(|(path, _, bytes)| {
                    (
                        path.clone(),
                        bytes.clone(),
                        load::parse::<TenantFile>(path, bytes).map(Arc::new),
                    )
                })
                .collect()
        },
        || inputs.lock.as_deref().map(Lock::parse),
    );
    for (path, bytes, parsed) in fresh {
        cache.parsed.insert(path, (bytes, parsed));
    }
    let present: HashSet<&String> = inputs.tenants.iter().map(|(p, _, _)| p).collect();
    cache.parsed.retain(|path, _| present.contains(path));
    for (path, stem, _) in &inputs.tenants {
        match &cache.parsed.get(path).expect("every input was parsed above").1 {
            Ok(t) => tenants.push((stem.clone(), Arc::clone(t))),
            Err(e) => errs.extend(e.iter().cloned()),
        }
    }
    let lock = match lock {
        None => Lock::default(),
        Some(parsed) => parsed.unwrap_or_else(|e| {
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
        // A tenant whose file is gone may still be named, to render its deletion.
        if !known && !inputs.rendered.contains(name) {
            let stems: Vec<&str> = inputs.tenants.iter().map(|(_, stem, _)| stem.as_str()).collect();
            let listed = match stems.len() {
                0 => "there are none yet".to_string(),
                n if n <= 8 => format!("tenants here: {}", stems.join(", ")),
                n => format!("tenants here: {}, … ({n} in all)", stems[..8].join(", ")),
            };
            errs.push(
                Diagnostic::error(format!(
                    "`--tenant {name}` names no tenant: there is no `tenants/{name}.yaml`, and no rendered overlay of that name to delete"
                ))
                .with_hint(match name.strip_suffix(".yaml").or_else(|| name.strip_suffix(".yml")) {
                    Some(stem) => format!("pass the tenant's name, not its file: `--tenant {stem}`"),
                    None => format!("pass the stem of a file in tenants/ ({listed})"),
                }),
            );
        }
    }
    // The images and input hashes are worked out once the tenants are built (a VIP is part of
    // a hash), before the transition rules run: only a tenant whose hash changed is asked about.
    let mut resolved: Option<ImagesAndHashes> = None;
    let previous: build::transitions::Previous<'_> = Box::new(|platform_model, built| {
        let present: BTreeSet<&str> = inputs.tenants.iter().map(|(_, stem, _)| stem.as_str()).collect();
        let (images, diags) = images::resolve(platform_model, &platform.source, &lock.images, select.locked);
        if diags.iter().any(Diagnostic::is_error) {
            // No hash without every image: every tenant is judged, and the run fails below.
            resolved = Some((images, diags, None));
            return inputs.previous.deployed(&present, &present);
        }
        let hashes = input_hashes(inputs, platform_model, built.iter().map(|(t, _)| t), &images);
        let changed: BTreeSet<&str> = hashes
            .iter()
            .filter(|(name, h)| inputs.overlay_hashes.get(*name) != Some(*h))
            .map(|(name, _)| name.as_str())
            .collect();
        let deployed = inputs.previous.deployed(&changed, &present);
        resolved = Some((images, diags, Some(hashes)));
        deployed
    });
    let validated = build::validate(
        &platform,
        &tenants,
        &lock.vips,
        &lock.datastores,
        &lock.placements,
        previous,
    );
    let validated = match validated {
        Ok(v) if errs.is_empty() => v,
        Ok(_) => return Err(errs),
        Err(e) => {
            errs.extend(e);
            return Err(errs);
        }
    };
    let driver_changes = build::datastore_driver_changes(
        &platform.source,
        &validated.model.platform,
        inputs.previous.datastore_drivers(),
    );
    if !driver_changes.is_empty() {
        return Err(driver_changes);
    }
    // A validation that passes has asked `previous`, which resolved the images.
    let (images, diags, hashes) = resolved.unwrap_or_else(|| {
        let (images, diags) = images::resolve(&validated.model.platform, &platform.source, &lock.images, select.locked);
        (images, diags, None)
    });
    let (image_errors, mut warnings): (Vec<_>, Vec<_>) = diags.into_iter().partition(Diagnostic::is_error);
    if !image_errors.is_empty() {
        return Err(image_errors);
    }
    let kamaji = &validated.model.platform.kamaji_image;
    if kamaji.tag.is_none()
        && let Some(d) = build::kamaji_ceiling(
            &platform.source,
            &images.get(kamaji).tag,
            validated.model.platform.max_kubernetes,
            build::TagOrigin::Locked,
        )
    {
        if d.is_error() {
            return Err(vec![d]);
        }
        warnings.push(d);
    }
    let mut hashes = hashes.unwrap_or_else(|| {
        input_hashes(
            inputs,
            &validated.model.platform,
            validated.model.tenants.iter(),
            &images,
        )
    });
    // A tenant whose datastore names the transition rules decided was hashed with the lock's.
    if !validated.datastore_names_changed.is_empty() {
        hashes.extend(input_hashes(
            inputs,
            &validated.model.platform,
            validated
                .model
                .tenants
                .iter()
                .filter(|t| validated.datastore_names_changed.contains(&t.name)),
            &images,
        ));
    }
    warnings.extend(validated.warnings.iter().cloned());
    let after = Lock {
        images: lock.images.clone(),
        vips: validated.vips,
        crds: lock.crds.clone(),
        datastores: validated.datastore_names,
        placements: validated.placements,
    };
    let new_lock = (after != lock || (inputs.lock.is_some() && inputs.lock.as_deref() != Some(&after.to_bytes()[..])))
        .then(|| after.to_bytes());
    Ok(Resolved {
        model: validated.model,
        images,
        warnings,
        new_lock,
        hashes,
    })
}
