//! Raw specs -> model. Every file is checked and every problem collected before anything is
//! rendered, so one run reports everything that needs fixing.

mod access;
mod addons;
mod backup;
mod compatibility;
mod datastore_names;
mod datastores;
mod exposure;
mod feature_gates;
mod fields;
mod kamaji_version;
mod management_clusters;
pub(crate) mod names;
mod node_os;
mod platform;
mod pool_version;
mod providers;
mod removed_flags;
mod tenant;
mod topology;
pub(crate) mod transitions;
mod upgrades;
mod warnings;
pub(crate) mod window;

pub use datastores::datastore_driver_changes;
pub use kamaji_version::{TagOrigin, check as kamaji_ceiling};

use crate::diagnostics::Diagnostic;
use crate::model::placement::{self, Placements};
use crate::model::vips;
use crate::model::vips::VipAllocations;
use crate::model::{Model, Platform};
use crate::spec::load::Loaded;
use crate::spec::raw::{PlatformFile, TenantFile};
use rayon::prelude::*;

/// A loaded tenant file and its stem (`acme` for `tenants/acme.yaml`).
pub type TenantInput = (String, std::sync::Arc<Loaded<TenantFile>>);

/// The model and the VIP allocations as this run leaves them.
#[derive(Debug)]
pub struct Validated {
    /// The fleet.
    pub model: Model,
    /// This run's VIP allocations.
    pub vips: VipAllocations,
    /// Each tenant's management cluster, for `kaas.lock` (empty when kaas.yaml lists none).
    pub placements: Placements,
    /// Each tenant's schema and user in its DataStore, for `kaas.lock`.
    pub datastore_names: crate::model::datastore_names::DataStoreNamesByTenant,
    /// The tenants whose datastore names the last render decided (see
    /// `datastore_names::resolve`): their input hash was computed before.
    pub datastore_names_changed: std::collections::BTreeSet<String>,
    /// Problems that do not stop the run.
    pub warnings: Vec<Diagnostic>,
}

/// Validates `kaas.yaml` alone and builds the platform model, for commands that need no
/// tenants (`pin`); `Err` holds every problem of the file.
pub fn platform(platform: &Loaded<PlatformFile>) -> Result<Platform, Vec<Diagnostic>> {
    platform::platform(platform)
}

/// The exposure a tenant file chooses for itself (`spec.controlPlane.exposure`), if it does.
pub fn chosen_exposure(file: &TenantFile) -> Option<crate::model::exposure::ExposureKind> {
    file.spec.control_plane.exposure.map(exposure::kind)
}

/// Validates everything; `Err` holds every problem of every file. `previous` gives what the last
/// render left of the tenants that may make a transition (see [`transitions::Previous`]); it is
/// asked once, with the built tenants, when they got this far.
pub fn validate(
    platform: &Loaded<PlatformFile>,
    tenants: &[TenantInput],
    previous_vips: &VipAllocations,
    previous_datastore_names: &crate::model::datastore_names::DataStoreNamesByTenant,
    previous_placements: &Placements,
    previous: transitions::Previous<'_>,
) -> Result<Validated, Vec<Diagnostic>> {
    let platform_model = platform::platform(platform)?;
    let mut errs = Vec::new();
    let mut built = Vec::new();
    // Each tenant on its own, in parallel; results are taken in input order, so the errors
    // come out the same on every run.
    let stems: std::collections::BTreeSet<&str> = tenants.iter().map(|(stem, _)| stem.as_str()).collect();
    let checked: Vec<_> = tenants
        .par_iter()
        .map(|(stem, loaded)| (tenant::tenant(loaded, stem, &stems, &platform_model), &loaded.source))
        .collect();
    for (result, source) in checked {
        match result {
            Ok(t) => built.push((t, source)),
            Err(e) => errs.extend(e),
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    built.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    if let Some(e) = artifact_generators(platform, &platform_model, built.iter().map(|(t, _)| t.name.as_str())) {
        return Err(vec![e]);
    }
    // Another default would hand `flux/` to another cluster: the cause of whatever placement
    // then fails, so it is the one error.
    if let Some(d) = placement::default_moves(&platform_model, &platform.source, previous_placements) {
        return Err(vec![d]);
    }
    let placements = placement::place(&platform_model, &mut built, previous_placements)?;
    let vips = vips::allocate(&platform_model, &mut built, previous_vips)?;
    datastore_names::from_lock(&mut built, previous_datastore_names);
    let rule_errors: Vec<Vec<Diagnostic>> = built
        .par_iter()
        .map(|(t, src)| {
            let mut e = Vec::new();
            providers::tenant_rules(src, t, &mut e);
            e
        })
        .collect();
    errs.extend(rule_errors.into_iter().flatten());
    let deployed = previous(&platform_model, &built);
    errs.extend(placement::over_capacity(&platform_model, &platform.source, &built));
    errs.extend(placement::default_moves(
        &platform_model,
        &platform.source,
        previous_placements,
    ));
    errs.extend(placement::unrecorded_moves(
        &platform_model,
        &built,
        previous_placements,
        &|t| deployed.contains_key(t),
    ));
    errs.extend(datastores::nats_shared(&platform_model, &built));
    let names = datastore_names::resolve(&mut built, previous_datastore_names, &deployed);
    errs.extend(names.errors);
    errs.extend(transitions::check(&platform_model, &built, &deployed));
    errs.extend(transitions::cni_changes(
        &platform_model,
        &platform.source,
        &built,
        &deployed,
    ));
    if !errs.is_empty() {
        return Err(errs);
    }
    let mut warnings = platform::warnings(platform, &platform_model);
    warnings.extend(names.warnings);
    warnings.extend(transitions::warnings(&built, &deployed));
    warnings.extend(transitions::endpoint_moves(&platform_model, &built, &deployed));
    for (t, src) in &built {
        warnings.extend(warnings::tenant(src, &platform_model, t));
    }
    Ok(Validated {
        model: Model {
            platform: platform_model,
            tenants: built.into_iter().map(|(t, _)| t).collect(),
        },
        vips,
        placements,
        datastore_names: names.names,
        datastore_names_changed: names.changed,
        warnings,
    })
}

/// `delivery.mode: artifact`: no ArtifactGenerator may list more than
/// [`crate::model::MAX_GENERATOR_ARTIFACTS`] tenants (the API server refuses the object), so a
/// fleet that outgrows one generator (or a shard of `spec.flux.shards`) is an error at the mode.
fn artifact_generators<'a>(
    platform: &Loaded<PlatformFile>,
    model: &Platform,
    tenants: impl Iterator<Item = &'a str>,
) -> Option<Diagnostic> {
    if !matches!(model.delivery, crate::model::Delivery::Artifact(_)) {
        return None;
    }
    let mut sizes: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    let mut total: usize = 0;
    for t in tenants {
        *sizes
            .entry(crate::model::artifact_generator(t, model.flux_shards))
            .or_default() += 1;
        total += 1;
    }
    let max = crate::model::MAX_GENERATOR_ARTIFACTS;
    let (name, n) = sizes.into_iter().find(|(_, n)| *n > max)?;
    // Shards are a hash of the name: leave room for an uneven spread.
    let shards = total.div_ceil(max * 9 / 10).max(2);
    Some(platform
        .source
        .error(
            "spec.flux.delivery.mode",
            format!(
                "`mode: artifact` would give the ArtifactGenerator `{name}` {n} tenants; one lists at most {max} artifacts (source-watcher api/v2 `spec.artifacts` MaxItems)"
            ),
        )
        .with_hint(format!(
            "spread the tenants over generators with `spec.flux.shards: {shards}` (one generator per kustomize-controller shard), or use `mode: oci`"
        )))
}
