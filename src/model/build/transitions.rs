//! Changes that must not happen in one step, judged against what the repository last rendered
//! (the overlays on disk, or in the base commit for `pr`): that is what Flux applied, or will.
//!
//! - Deleting a tenant with its own etcd in one step deadlocks: Flux prunes the namespace, the
//!   control plane, the etcd release and the Cluster at once (fluxcd/pkg `ssa/manager_delete.go`
//!   deletes every object in one pass; a Kustomization's deletion ignores `dependsOn`), while
//!   Kamaji needs a serving DataStore to finalize the TenantControlPlane and the DataStore's
//!   finalizer waits for its control planes (clastix/kamaji 26.8.2-edge,
//!   `controllers/tenantcontrolplane_controller.go`, `controllers/datastore_controller.go`).
//!   So the cluster goes first (`spec.decommissioned: true`), the datastore with the file.
//! - Moving a control plane to another DataStore makes Kamaji run a migration Job that reads the
//!   old etcd and writes the new one (`internal/resources/datastore/datastore_migrate.go`,
//!   `cmd/migrate/cmd.go`). The old etcd must keep running until it finished, and a new
//!   dedicated etcd must serve before the switch: both sides exist while `dataStore` names both.
//! - A control plane's Kubernetes version goes up one minor at a time and never down (Kamaji's
//!   webhook, `internal/webhook/handlers/tcp_version.go`, and the Kubernetes version skew
//!   policy; see `model::upgrade`). A refused version leaves the tenant stuck with Flux retrying.

use std::collections::BTreeMap;

use crate::diagnostics::Diagnostic;
use crate::model::upgrade::{self, Allowed, Refusal};
use crate::model::{KubeVersion, Platform, Tenant};
use crate::spec::source::Source;

/// What the last render left of one tenant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deployed {
    /// Its cluster (`Cluster`, control plane, machines) is rendered.
    pub cluster: bool,
    /// Its own kamaji-etcd release is rendered.
    pub etcd: bool,
    /// The DataStore its control plane names (`KamajiControlPlane.spec.dataStoreName`), when one
    /// is rendered in explicit mode.
    pub datastore: Option<String>,
    /// The control plane's Kubernetes version (`KamajiControlPlane.spec.version`, or the
    /// `Cluster`'s `spec.topology.version`), when a cluster is rendered.
    pub version: Option<KubeVersion>,
}

/// Where every transition rule gets what the last render left: called with the platform and the
/// built tenants (VIPs allocated), it returns the [`Deployed`] state of each tenant whose inputs
/// changed this run, and of each rendered tenant whose file is gone. A tenant whose input hash
/// equals its overlay's renders exactly what it rendered before, so it cannot make a transition:
/// it is absent, like a new tenant, and its old output is not read. A rule judges a tenant only
/// through `deployed.get(name)` in [`check`], and so inherits this.
pub type Previous<'a> = Box<dyn FnOnce(&Platform, &[(Tenant, &Source)]) -> BTreeMap<String, Deployed> + 'a>;

/// Every refused transition of `tenants` (with their files) from `deployed` (see [`Previous`]).
pub fn check(
    platform: &Platform,
    tenants: &[(Tenant, &Source)],
    deployed: &BTreeMap<String, Deployed>,
) -> Vec<Diagnostic> {
    let mut errs = Vec::new();
    for (t, src) in tenants {
        if let Some(e) = deployed.get(&t.name).and_then(|d| version_step(platform, t, src, d)) {
            errs.push(e);
        }
    }
    let present: std::collections::BTreeSet<&str> = tenants.iter().map(|(t, _)| t.name.as_str()).collect();
    for (name, d) in deployed {
        if d.cluster && d.etcd && !present.contains(name.as_str()) {
            errs.push(
                Diagnostic::error(format!(
                    "deleting `tenants/{name}.yaml` would prune tenant `{name}`'s cluster and its etcd at once, which never finishes"
                ))
                .in_file(format!("overlays/tenants/{name}/"))
                .with_hint(format!(
                    "restore the file and set `spec.decommissioned: true` first: once Flux has removed the cluster (`kubectl get cluster -n {name}` finds none), delete the file (docs/lifecycle.md)"
                )),
            );
        }
    }
    for (t, src) in tenants {
        let Some(d) = deployed.get(&t.name) else {
            continue;
        };
        let Some(before) = &d.datastore else {
            continue;
        };
        let now = t.datastore_name();
        let own = t.etcd_release();
        if *before == own && now != own && t.dedicated_etcd().is_none() && !t.decommissioned {
            errs.push(
                src.error(
                    "spec.controlPlane.dataStore",
                    format!("moving to `{now}` and removing the etcd `{own}` in one step loses the data Kamaji's migration reads from it"),
                )
                .with_hint(format!(
                    "keep `dedicated:` beside `shared: {now}` until the migration finished, then remove it (docs/lifecycle.md)"
                )),
            );
        }
        if *before != own && now == own && !d.etcd {
            errs.push(
                src.error(
                    "spec.controlPlane.dataStore",
                    format!("moving from `{before}` to the new etcd `{own}` in one step: Kamaji would migrate into an etcd that does not serve yet"),
                )
                .with_hint(format!(
                    "first keep `shared: {before}` beside `dedicated:` (Flux installs the etcd), then remove `shared` (docs/lifecycle.md)"
                )),
            );
        }
    }
    errs
}

/// The refused version change of `t` from what is deployed, if any. A new tenant (or one whose
/// cluster is not rendered, such as a decommissioned one) may start at any supported version.
fn version_step(platform: &Platform, t: &Tenant, src: &Source, d: &Deployed) -> Option<Diagnostic> {
    let current = d.version?;
    if t.decommissioned {
        return None;
    }
    let (new, name) = (t.version, &t.name);
    let allowed = Allowed {
        min: platform.min_kubernetes,
        max: platform.max_kubernetes,
        releases: &platform.kubernetes_releases,
    };
    let next = allowed.next_step_text(current);
    // `upgrade --kubernetes` with the minor asked for walks there one step per run.
    let minor = |v: KubeVersion| format!("v{}.{}", v.major, v.minor.max(current.minor + 1));
    let (message, hint) = match upgrade::refusal(current, new)? {
        Refusal::Downgrade => (
            format!(
                "{new} would downgrade tenant `{name}` from {current}, the deployed version; Kubernetes and Kamaji refuse downgrades"
            ),
            format!(
                "keep `version: {current}`; the next allowed step up is {next} (`kaas-gitops upgrade --kubernetes {} {name}`)",
                minor(current)
            ),
        ),
        Refusal::SkipsMinor => (
            format!(
                "{new} skips a minor: tenant `{name}` runs {current}, and a control plane moves one minor at a time"
            ),
            format!(
                "the next allowed step is {next}; once Flux applied it, go on towards {new} (`kaas-gitops upgrade --kubernetes {} {name}` takes one step per run)",
                minor(new)
            ),
        ),
    };
    Some(src.error("spec.kubernetes.version", message).with_hint(hint))
}
