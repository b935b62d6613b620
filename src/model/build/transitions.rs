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
//! - A running cluster that loses Kamaji's kube-proxy, or gains a CNI that replaces it, loses
//!   its Services and its own CNI at once (see [`cni_changes`]): refused unless acknowledged.

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
    /// Kamaji's kube-proxy add-on is on (`KamajiControlPlane.spec.addons.kubeProxy` rendered),
    /// when a control plane is rendered.
    pub kube_proxy: Option<bool>,
    /// The control plane's `dataStoreSchema` and `dataStoreUsername` as rendered (each `None`
    /// when not rendered, as before kaas-gitops set them), when a control plane is rendered.
    pub datastore_names: Option<(Option<String>, Option<String>)>,
    /// The endpoint its control plane gave kubelets (`spec.network` of the
    /// `KamajiControlPlane`: the Gateway's or Ingress's `hostname`, else `serviceAddress`, else
    /// empty for the address its load balancer chose), when a control plane is rendered.
    pub endpoint: Option<String>,
    /// The names of the add-ons rendered (`helmrelease-<tenant>-<name>.yaml`; its etcd too).
    pub addons: std::collections::BTreeSet<String>,
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
        if let Some(e) = deployed.get(&t.name).and_then(|d| endpoint_move(platform, t, src, d)) {
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
                .in_file(crate::layout::tenant_prefix(name))
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
        if let (Some(from), Some(to)) = (t.driver_of(platform, before), t.driver_of(platform, &now))
            && from != to
            && !t.decommissioned
        {
            errs.push(
                src.error(
                    "spec.controlPlane.dataStore",
                    format!(
                        "moving from the {} DataStore `{before}` to the {} DataStore `{now}`: Kamaji migrates only between DataStores of one driver",
                        from.as_str(),
                        to.as_str()
                    ),
                )
                .with_hint(crate::model::build::tenant::DRIVER_MOVE_HINT),
            );
            continue;
        }
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

/// A deployed control plane whose endpoint changes: every kubelet was given the old one at
/// join (kubeadm's `cluster-info`, which Kamaji writes from it) and every kubeconfig names it,
/// so the move takes steps (docs/exposure.md): refused unless acknowledged
/// (`spec.controlPlane.acknowledge: [endpointMove]`). A tenant whose new endpoint is not known
/// at render time (a cloud load balancer's address) is not judged.
fn endpoint_move(platform: &Platform, t: &Tenant, src: &Source, d: &Deployed) -> Option<Diagnostic> {
    if let Some(why) = t.provider().fixed_endpoint() {
        return fixed_endpoint_move(platform, t, src, d, why);
    }
    if t.endpoint_move_acknowledged {
        return None;
    }
    let (before, now) = endpoint_change(platform, t, d)?;
    Some(
        src.error(
            endpoint_field(t),
            format!(
                "tenant `{}` would move from the endpoint {} to {}: its kubelets and every kubeconfig name the old one",
                t.name,
                shown(before),
                shown(&now)
            ),
        )
        .with_hint(format!(
            "to stay, keep its exposure{}; to move, add `acknowledge: [endpointMove]` to `spec.controlPlane` of `{}` and keep the old endpoint serving until the machines rolled (docs/exposure.md, \"Moving a running tenant\")",
            if before.is_empty() || before.parse::<std::net::IpAddr>().is_ok() {
                " (`exposure: service` in `spec.controlPlane`)"
            } else {
                ""
            },
            t.source_path
        )),
    )
}

/// A tenant on a provider whose endpoint cannot move ([`crate::model::Provider::fixed_endpoint`]
/// says `why`): refused even when acknowledged.
fn fixed_endpoint_move(platform: &Platform, t: &Tenant, src: &Source, d: &Deployed, why: &str) -> Option<Diagnostic> {
    let (before, now) = endpoint_change(platform, t, d)?;
    Some(
        src.error(
            endpoint_field(t),
            format!(
                "`{}` tenant `{}` cannot move from the endpoint {} to {}: {why}",
                t.provider().as_str(),
                t.name,
                shown(before),
                shown(&now),
            ),
        )
        .with_hint("keep the endpoint; to move, create a new tenant at the new endpoint and move the workloads (the infrastructure cluster cannot be changed in place)"),
    )
}

/// The field that decides a tenant's endpoint: its exposure behind a Gateway or an Ingress, else
/// its endpoint.
fn endpoint_field(t: &Tenant) -> &'static str {
    if t.exposure.hostname().is_some() {
        "spec.controlPlane.exposure"
    } else {
        "spec.controlPlane.endpoint"
    }
}

/// An acknowledged move still gets the steps that follow on the cluster, which git cannot carry:
/// Kamaji re-issues kubeconfigs only when the checksum of its kubeadm configuration changes, and
/// that checksum leaves the endpoint out (clastix/kamaji 26.8.2-edge `internal/kubeadm/types.go`,
/// `Checksum`: the InitConfiguration, whose ClusterConfiguration kubeadm's internal API does not
/// serialize); its rotation annotation re-issues `admin.conf` but not `super-admin.conf`, which
/// `cluster-info` is written from, so the Secret is deleted (Kamaji writes both again); and it
/// writes the tenant's `cluster-info` again only when that ConfigMap's data changed
/// (`internal/resources/kubeadm_utils.go`, `KubeadmBootstrap`). Proved in the kamaji bed
/// (tests/e2e/lib/kamaji_gateway.py).
pub fn endpoint_moves(
    platform: &Platform,
    tenants: &[(Tenant, &Source)],
    deployed: &BTreeMap<String, Deployed>,
) -> Vec<Diagnostic> {
    tenants
        .iter()
        .filter(|(t, _)| t.endpoint_move_acknowledged)
        .filter_map(|(t, src)| {
            let (before, now) = endpoint_change(platform, t, deployed.get(&t.name)?)?;
            Some({
                let name = &t.name;
                src.warning(
                    "spec.controlPlane.acknowledge",
                    format!("tenant `{name}` moves from the endpoint {} to {}: once Flux applied it, finish the move on the cluster", shown(before), shown(&now)),
                )
                .with_hint(format!(
                    "`kubectl -n {name} delete secret {name}-admin-kubeconfig` (Kamaji writes it again, but does not re-issue kubeconfigs for a new endpoint by itself), then in the tenant `kubectl -n kube-public delete configmap cluster-info` (joining kubelets read the endpoint there), then roll the machines; keep the old endpoint until they rolled (docs/exposure.md, \"Moving a running tenant\")"
                ))
            })
        })
        .collect()
}

/// The deployed endpoint and the new one, when a rendered, live tenant's endpoint changes.
fn endpoint_change<'a>(platform: &Platform, t: &Tenant, d: &'a Deployed) -> Option<(&'a str, String)> {
    let before = d.endpoint.as_deref()?;
    let now = rendered_endpoint(platform, t)?;
    (!t.decommissioned && now != before).then_some((before, now))
}

/// The endpoint as [`Deployed::endpoint`] reads it back from the rendered control plane.
fn rendered_endpoint(platform: &Platform, t: &Tenant) -> Option<String> {
    match t.exposure.hostname() {
        Some(_) => t.endpoint(platform).map(|(host, port)| format!("{host}:{port}")),
        None => Some(t.vip.map(|ip| ip.to_string()).unwrap_or_default()),
    }
}

/// An endpoint as [`Deployed::endpoint`] holds it, for a message.
fn shown(endpoint: &str) -> String {
    if endpoint.is_empty() {
        "its load balancer chose".to_string()
    } else {
        format!("`{endpoint}`")
    }
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

/// A deployed tenant that loses Kamaji's kube-proxy, or gains a CNI add-on that replaces it, in
/// one render: refused unless its file acknowledges it (`spec.addons.acknowledge:
/// [cniMigration]`). Judged from the same previous state as the version steps, so a tenant
/// whose previous overlay was not read (`kube_proxy: None`) or is new passes.
///
/// - Kamaji deletes kube-proxy from the running cluster once the control plane drops it:
///   clastix/kamaji 26.8.2-edge `internal/resources/addons/kube_proxy.go`, `ShouldCleanup`
///   (`spec.addons.kubeProxy == nil && status.addons.kubeProxy.enabled`) and `CleanUp` (deletes
///   its DaemonSet, ConfigMap, ServiceAccount and RBAC in the tenant cluster).
/// - Cilium's chart defaults to `cni.exclusive: true` (values.yaml of chart 1.19.6): its agent
///   removes every other CNI's configuration from each node, so a CNI the team installed
///   itself stops on every node at once.
///
/// Tenants that get the CNI from kaas.yaml's `spec.addons.defaults.cni` (their file says
/// nothing about add-ons) are reported once, at that line.
pub fn cni_changes(
    platform: &Platform,
    platform_src: &Source,
    tenants: &[(Tenant, &Source)],
    deployed: &BTreeMap<String, Deployed>,
) -> Vec<Diagnostic> {
    use crate::model::AddonKind;
    let replacing = |name: &str| {
        platform
            .addons
            .get(name)
            .is_some_and(|a| a.kind == AddonKind::Cni && a.replaces_kube_proxy)
    };
    let mut errs = Vec::new();
    let mut by_default: Vec<&str> = Vec::new();
    for (t, src) in tenants {
        let Some(d) = deployed.get(&t.name) else { continue };
        let Some(had_kube_proxy) = d.kube_proxy else { continue };
        if t.decommissioned || t.cni_migration_acknowledged {
            continue;
        }
        let cni = t.addons.iter().map(|a| a.name.as_str()).find(|n| replacing(n));
        let loses_kube_proxy = had_kube_proxy && !t.kube_proxy;
        let gains_cni = cni.is_some() && !d.addons.iter().any(|a| replacing(a));
        if !loses_kube_proxy && !gains_cni {
            continue;
        }
        let name = &t.name;
        let field = match cni {
            None => "spec.controlPlane.addons.kubeProxy",
            Some(_) if src.scalar("spec.addons.cni").is_some() => "spec.addons.cni",
            Some(_) if src.has("spec.addons") => "spec.addons",
            Some(_) => {
                by_default.push(name);
                continue;
            }
        };
        let message = match cni {
            None => format!(
                "tenant `{name}` runs kube-proxy, and this turns it off: Kamaji deletes the kube-proxy DaemonSet from the running cluster, and its Services stop working until a CNI replaces kube-proxy"
            ),
            Some(c) if loses_kube_proxy => format!(
                "tenant `{name}` runs kube-proxy and gains the CNI `{c}`, which replaces it: Kamaji deletes the kube-proxy DaemonSet from the running cluster, and Cilium's `cni.exclusive` removes any other CNI's configuration from every node"
            ),
            Some(c) => format!(
                "tenant `{name}` gains the CNI `{c}`: Cilium's `cni.exclusive` removes the configuration of the CNI the running cluster has from every node"
            ),
        };
        // `spec.addons` as a whole: its key, not the first line of its block.
        let at = if field == "spec.addons" {
            src.key_error(field, message)
        } else {
            src.error(field, message)
        };
        errs.push(at.with_hint(format!(
            "migrate the running cluster first (docs/addons.md, \"Adding a CNI to a running tenant\"), then add `acknowledge: [cniMigration]` to `spec.addons` of `{}`; or keep it as it is{}",
            t.source_path,
            if cni.is_some() { " with `spec.addons.cni: none`" } else { " by removing `kubeProxy: false`" }
        )));
    }
    if !by_default.is_empty() {
        let shown: Vec<String> = by_default.iter().take(5).map(|n| format!("`{n}`")).collect();
        let more = by_default.len().saturating_sub(shown.len());
        let more = if more > 0 {
            format!(" (and {more} more)")
        } else {
            String::new()
        };
        let cni = platform.addon_defaults.cni.as_deref().unwrap_or_default();
        errs.push(
            platform_src
                .error(
                    "spec.addons.defaults.cni",
                    format!(
                        "the default CNI `{cni}` reaches deployed tenant(s) {}{more}, which run kube-proxy or another CNI: Kamaji deletes their kube-proxy DaemonSet, and Cilium's `cni.exclusive` removes any other CNI's configuration from every node",
                        shown.join(", ")
                    ),
                )
                .with_hint(
                    "migrate each cluster first (docs/addons.md, \"Adding a CNI to a running tenant\"), then add `spec.addons.acknowledge: [cniMigration]` to its tenant file; a tenant that keeps its own CNI and kube-proxy says `spec.addons.cni: none`",
                ),
        );
    }
    errs
}
