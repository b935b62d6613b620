//! Tenant add-ons across a tenant's overlay: a CNI release that replaces kube-proxy next to a
//! control plane that still installs Kamaji's kube-proxy (both would program every node's
//! Service rules; `render` never writes it, a hand edit or another tool can).

use serde_json::Value;

use crate::validate::{Check, Finding, Fleet, Manifest, error};

/// Whether a HelmRelease installs into a remote cluster with kube-proxy replacement on (Cilium's
/// `kubeProxyReplacement`, a bool or the strings `"true"`).
fn replaces_kube_proxy(o: &Manifest) -> bool {
    let on = match o.pointer("/spec/values/kubeProxyReplacement") {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s == "true",
        _ => false,
    };
    on && o.kind == "HelmRelease" && o.group() == "helm.toolkit.fluxcd.io" && o.pointer("/spec/kubeConfig").is_some()
}

/// Every control plane that keeps Kamaji's kube-proxy while an add-on in its folder replaces it.
pub fn check(fleet: &Fleet) -> Vec<Finding> {
    let mut out = Vec::new();
    for cni in fleet.rendered().filter(|o| replaces_kube_proxy(o)) {
        for kcp in fleet.rendered().filter(|o| {
            o.kind == "KamajiControlPlane" && o.folder == cni.folder && o.pointer("/spec/addons/kubeProxy").is_some()
        }) {
            out.push(
                error(
                    Check::Fleet,
                    kcp,
                    "spec.addons.kubeProxy",
                    format!(
                        "Kamaji's kube-proxy is on, and the HelmRelease `{}` ({}) installs a CNI that replaces it",
                        cni.name, cni.file
                    ),
                )
                .with_hint("turn one off: leave out `spec.addons.kubeProxy`, or set the CNI's `kubeProxyReplacement: false` (kaas-gitops renders them consistently)"),
            );
        }
    }
    out
}
