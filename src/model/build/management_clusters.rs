//! kaas.yaml `spec.managementClusters` and a tenant's `spec.placement`, checked field by field.
//! Where each tenant lands is decided later, once every tenant is built
//! (`crate::model::placement::place`).

use std::collections::BTreeSet;

use crate::diagnostics::Diagnostic;
use crate::model::placement::{ManagementCluster, PlacementRequest};
use crate::model::{LoadBalancer, Platform};
use crate::spec::raw;
use crate::spec::source::Source;

use super::fields::{labels, pools as pools_at};
use super::names::is_dns1123_label;

/// `spec.managementClusters`: names unique DNS-1123 labels, at most one `default` (else the
/// first listed), capacities above zero, pools parsed.
pub(super) fn platform(
    src: &Source,
    spec: &raw::PlatformSpec,
    load_balancer: LoadBalancer,
    errs: &mut Vec<Diagnostic>,
) -> Vec<ManagementCluster> {
    let mut seen = BTreeSet::new();
    let mut out: Vec<ManagementCluster> = Vec::new();
    for (i, mc) in spec.management_clusters.iter().enumerate() {
        let at = |f: &str| format!("spec.managementClusters[{i}].{f}");
        // A name is a folder (`flux/<name>/`) and a label value: a DNS-1123 label fits both.
        if !is_dns1123_label(&mc.name) || mc.name.len() > 63 {
            errs.push(
                src.error(&at("name"), format!("`{}` is not a DNS-1123 label", mc.name))
                    .with_hint("lower-case letters, digits and `-`, starting and ending with a letter or digit, at most 63 characters, e.g. `eu-west-1`"),
            );
        } else if !seen.insert(mc.name.as_str()) {
            errs.push(
                src.error(&at("name"), format!("management cluster `{}` is listed twice", mc.name))
                    .with_hint("every management cluster needs its own name"),
            );
        }
        labels(src, &at("labels"), &mc.labels, errs);
        let capacity = mc.capacity.as_ref();
        for (v, f) in [
            (capacity.and_then(|c| c.tenants), "capacity.tenants"),
            (
                capacity.and_then(|c| c.control_plane_replicas),
                "capacity.controlPlaneReplicas",
            ),
        ] {
            if v == Some(0) {
                errs.push(
                    src.error(&at(f), "a capacity of 0 takes no tenant")
                        .with_hint("leave `capacity` out for no limit, or give a number above 0"),
                );
            }
        }
        let vip_pools = mc.pools.as_ref().map(|pools| {
            if load_balancer == LoadBalancer::Cloud && !pools.is_empty() {
                errs.push(
                    src.error(&at("pools"), "a cloud load balancer chooses its addresses: pools cannot be used")
                        .with_hint("drop `pools`, or name the implementation that serves them in `spec.loadBalancer.implementation`"),
                );
            }
            pools_at(src, &at("pools"), pools, errs)
        });
        out.push(ManagementCluster {
            name: mc.name.clone(),
            labels: mc.labels.clone(),
            default: mc.default,
            max_tenants: capacity.and_then(|c| c.tenants),
            max_replicas: capacity.and_then(|c| c.control_plane_replicas),
            vip_pools,
            context: mc.context.clone(),
        });
    }
    let defaults: Vec<usize> = (0..out.len()).filter(|&i| out[i].default).collect();
    if defaults.len() > 1 {
        for &i in &defaults[1..] {
            errs.push(
                src.error(
                    &format!("spec.managementClusters[{i}].default"),
                    format!("`{}` is the second default management cluster", out[i].name),
                )
                .with_hint(format!(
                    "one cluster is the default (`{}` already is): tenants without `spec.placement` run there and its entry point is `flux/`",
                    out[defaults[0]].name
                )),
            );
        }
    }
    if defaults.is_empty()
        && let Some(first) = out.first_mut()
    {
        first.default = true;
    }
    out
}

/// What several management clusters share that they should not: every one applies the one
/// platform layer, whose backup of Kamaji's bundled etcd writes `kamaji-etcd/` snapshots to the
/// bucket its credentials Secret names, and prunes the oldest there (src/render/backup.rs,
/// `BACKUP_NAME`). One bucket for all would mix their snapshots and let each cluster's retention
/// delete the others'.
pub(super) fn warnings(src: &Source, spec: &raw::PlatformSpec, platform: &Platform) -> Vec<Diagnostic> {
    let s3 = spec.backups.as_ref().and_then(|b| b.destination.s3.as_ref());
    match s3 {
        Some(s3) if platform.management_clusters.len() > 1 => vec![
            src.warning(
                "spec.backups.destination.s3",
                "every management cluster backs up Kamaji's bundled etcd as `kamaji-etcd/` in the bucket its own `credentialsSecret` names",
            )
            .with_hint(format!(
                "give the Secret `{}` of each management cluster its own bucket: in one bucket their snapshots mix and each cluster's retention deletes the others'",
                s3.credentials_secret
            )),
        ],
        _ => Vec::new(),
    }
}

/// A tenant's `spec.placement`: exactly one of `managementCluster` and `selector`, naming a
/// listed cluster or labels one carries (checked here, so the error points at the name).
pub(super) fn tenant(
    src: &Source,
    spec: &raw::TenantSpec,
    platform: &Platform,
    errs: &mut Vec<Diagnostic>,
) -> (PlacementRequest, bool) {
    let Some(p) = &spec.placement else {
        return (PlacementRequest::Default, false);
    };
    let acknowledged = p.acknowledge.contains(&raw::PlacementAcknowledgement::Move);
    let request = match (&p.management_cluster, &p.selector) {
        (Some(name), None) => {
            if !platform.management_clusters.is_empty() && !platform.management_clusters.iter().any(|m| m.name == *name)
            {
                let listed: Vec<&str> = platform.management_clusters.iter().map(|m| m.name.as_str()).collect();
                errs.push(
                    src.error(
                        "spec.placement.managementCluster",
                        format!("kaas.yaml lists no management cluster `{name}`"),
                    )
                    .with_hint(format!("listed: {}", listed.join(", "))),
                );
            }
            PlacementRequest::Named(name.clone())
        }
        (None, Some(selector)) => {
            labels(src, "spec.placement.selector", selector, errs);
            PlacementRequest::Selector(selector.clone())
        }
        (Some(_), Some(_)) => {
            errs.push(
                src.key_error("spec.placement", "`managementCluster` and `selector` both set")
                    .with_hint("name a management cluster, or select one by labels: not both"),
            );
            PlacementRequest::Default
        }
        (None, None) => {
            errs.push(
                src.key_error("spec.placement", "`placement` names no management cluster")
                    .with_hint("set `managementCluster: <name>` or `selector: {region: eu-west}`, or drop `placement` for the default one"),
            );
            PlacementRequest::Default
        }
    };
    (request, acknowledged)
}
