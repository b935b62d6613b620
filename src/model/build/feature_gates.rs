//! `spec.clusterApi.featureGates`: the feature gates the management cluster's Cluster API runs
//! with, declared once, and every field kaas-gitops renders that needs one of them.
//!
//! Cluster API v1.14.0 `feature/feature.go` turns `ClusterTopology` and
//! `KubeadmBootstrapFormatIgnition` off by default (alpha), and its webhooks refuse what needs
//! them: ClusterClasses and `Cluster.spec.topology` (`core/webhooks/admission/clusterclass.go`,
//! `cluster.go`: "can be set only if the ClusterTopology feature flag is enabled"), and a
//! KubeadmConfig with `format: ignition` (`bootstrap/kubeadm/webhooks/admission/kubeadmconfig.go`,
//! `validateIgnition`). Flux applies such an object, the webhook refuses it, and the tenant never
//! comes up. kaas-gitops installs neither the core nor the kubeadm bootstrap provider, so it
//! cannot turn the gates on; it can say which ones the rendered fleet needs. Declared, a gate
//! that is needed and not on is an error at the field that needs it; not declared, a warning.
//! (Pool taints in topology mode need `MachineTaintPropagation` only on the topology's own
//! `taints` field, which kaas-gitops does not use: they go through kubeadm, see
//! `render/topology/patches.rs`.)

use std::collections::BTreeMap;

use crate::diagnostics::Diagnostic;
use crate::model::Platform;
use crate::model::Provider;
use crate::spec::raw;
use crate::spec::source::Source;

/// The gates of Cluster API v1.14.0 (`feature/feature.go`), for a typo's warning.
const KNOWN: [&str; 10] = [
    "ClusterTopology",
    "InPlaceUpdates",
    "KubeadmBootstrapFormatIgnition",
    "MachinePool",
    "MachineSetPreflightChecks",
    "MachineTaintPropagation",
    "MachineWaitForVolumeDetachConsiderVolumeAttachments",
    "PriorityQueue",
    "ReconcilerRateLimiting",
    "RuntimeSDK",
];

/// A gate the fleet needs: which, the kaas.yaml field that needs it, and what it is for.
struct Need {
    gate: &'static str,
    field: String,
    what: &'static str,
    provider: &'static str,
}

fn needs(p: &Platform) -> Vec<Need> {
    let mut out = Vec::new();
    if p.topology.as_ref().is_some_and(|t| !t.classes.is_empty()) {
        out.push(Need {
            gate: "ClusterTopology",
            field: "spec.topology".into(),
            what: "ClusterClasses and tenants in topology mode",
            provider: "core",
        });
    }
    if p.infrastructure_providers.contains_key(&Provider::MetalStack) {
        out.push(Need {
            gate: "KubeadmBootstrapFormatIgnition",
            field: "spec.clusterApi.infrastructureProviders.metal-stack".into(),
            what: "metal-stack nodes, which boot with Ignition (`format: ignition`)",
            provider: "kubeadm bootstrap",
        });
    }
    out
}

fn hint(n: &Need) -> String {
    let env = match n.gate {
        "ClusterTopology" => "CLUSTER_TOPOLOGY",
        _ => "EXP_KUBEADM_BOOTSTRAP_FORMAT_IGNITION",
    };
    format!(
        "run Cluster API's {} provider with the gate on (cluster-api-operator: `spec.manager.featureGates: {{{}: true}}`; clusterctl: `{env}=true`), then declare it in kaas.yaml: `spec.clusterApi.featureGates: {{{}: true}}`",
        n.provider, n.gate, n.gate
    )
}

/// Errors: a needed gate the platform declares off or leaves out of a declared list.
pub fn errors(src: &Source, declared: Option<&BTreeMap<String, bool>>, p: &Platform) -> Vec<Diagnostic> {
    let Some(declared) = declared else {
        return Vec::new();
    };
    needs(p)
        .into_iter()
        .filter(|n| declared.get(n.gate) != Some(&true))
        .map(|n| {
            src.error(
                &n.field,
                format!(
                    "{} need Cluster API's feature gate `{}` (off by default; its webhook refuses them), and `spec.clusterApi.featureGates` does not turn it on",
                    capitalised(n.what),
                    n.gate
                ),
            )
            .with_hint(hint(&n))
        })
        .collect()
}

/// Warnings: needed gates when the platform declares none, and gate names Cluster API does not
/// have.
pub fn warnings(src: &Source, spec: &raw::PlatformSpec, p: &Platform) -> Vec<Diagnostic> {
    let Some(declared) = &spec.cluster_api.feature_gates else {
        return needs(p)
            .into_iter()
            .map(|n| {
                src.warning(
                    &n.field,
                    format!(
                        "{} need Cluster API's feature gate `{}`, off by default: its webhook refuses them unless the {} provider runs with it",
                        capitalised(n.what),
                        n.gate,
                        n.provider
                    ),
                )
                .with_hint(hint(&n))
            })
            .collect();
    };
    declared
        .keys()
        .filter(|g| !KNOWN.contains(&g.as_str()))
        .map(|g| {
            src.warning(
                &format!("spec.clusterApi.featureGates.{g}"),
                format!("`{g}` is not a feature gate of Cluster API v1.14"),
            )
            .with_hint(format!("its gates: {}", sorted_known().join(", ")))
        })
        .collect()
}

fn sorted_known() -> Vec<&'static str> {
    let mut k: Vec<&str> = KNOWN.to_vec();
    k.sort_unstable();
    k.dedup();
    k
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}
