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
//! - A control plane's Kubernetes version goes up one minor at a time and never down a minor
//!   (Kamaji's webhook, `internal/webhook/handlers/tcp_version.go`, and the Kubernetes version
//!   skew policy; see `model::upgrade`). A refused version leaves the tenant stuck with the
//!   provider retrying. A patch may go down within its minor (a rollback): a warning.

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

/// Every refused transition of `tenants` (with their files) from `deployed`.
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
                "{new} would take tenant `{name}` down a minor from {current}, the deployed version; Kamaji's webhook refuses a lower minor"
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

/// What a valid transition still gets told: a control plane whose patch goes down within its
/// minor. Kamaji allows it (it compares versions with the patches zeroed, `tcp_version.go`;
/// `internal/resources/kubeadm_upgrade.go`: "Patch upgrades are allowed"), and it is how a bad
/// patch release is rolled back, but the kubelets of a pool that follows the control plane
/// roll to the lower patch too.
pub fn warnings(tenants: &[(Tenant, &Source)], deployed: &BTreeMap<String, Deployed>) -> Vec<Diagnostic> {
    tenants
        .iter()
        .filter(|(t, _)| !t.decommissioned)
        .filter_map(|(t, src)| {
            let current = deployed.get(&t.name)?.version?;
            let new = t.version;
            ((new.major, new.minor) == (current.major, current.minor) && new < current).then(|| {
                src.warning(
                    "spec.kubernetes.version",
                    format!(
                        "{new} rolls tenant `{}` back from {current}, the deployed patch: Kamaji allows a lower patch of the same minor, and the pools that follow the control plane roll back too",
                        t.name
                    ),
                )
                .with_hint("a rollback is meant for a bad patch release; go forward again with `kaas-gitops upgrade` once a fixed patch exists")
            })
        })
        .collect()
}
