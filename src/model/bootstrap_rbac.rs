//! The grant the kubeadm bootstrap controller of Cluster API v1.14 needs on Kamaji's control
//! plane objects, and when kaas-gitops must render it.
//!
//! kubernetes-sigs/cluster-api v1.14.0,
//! `bootstrap/kubeadm/reconcilers/kubeadmconfig/kubeadmconfig_controller.go`: `joinWorker` calls
//! `resolveFiles`, which calls `getControlPlaneVersion`; that reads the object of the Cluster's
//! `spec.controlPlaneRef` through the API reader, unconditionally, and a failure stops the
//! worker's bootstrap data. The controller's own RBAC (kubebuilder markers above `Reconcile`,
//! `config/rbac/role.yaml`) covers `kubeadmcontrolplanes` only. v1.13 has no such read.
//!
//! clastix/cluster-api-control-plane-provider-kamaji v0.20.0 (`config/control-plane-components.yaml`)
//! grants the bootstrap controller nothing: the binding arrived on master with daa1cb6 (#392,
//! `config/rbac/capi_kubeadm_bootstrap_role_binding.yaml`), which no release tag holds yet. So
//! every released provider up to v0.20.0 needs kaas-gitops's grant.

use super::{KubeVersion, Platform};

/// The ClusterRole and ClusterRoleBinding kaas-gitops renders (one name for both).
pub const READER_NAME: &str = "kaas-capi-kubeadm-bootstrap-kamaji-reader";
/// The kubeadm bootstrap controller's ServiceAccount as clusterctl (and cluster-api-operator,
/// which runs clusterctl's installer) names it: cluster-api v1.14.0
/// `bootstrap/kubeadm/config/default/kustomization.yaml` (`namespace:
/// capi-kubeadm-bootstrap-system`, `namePrefix: capi-kubeadm-bootstrap-`) over
/// `config/rbac/service_account.yaml` (`manager`).
pub const BOOTSTRAP_SERVICE_ACCOUNT: &str = "capi-kubeadm-bootstrap-manager";
/// Its namespace.
pub const BOOTSTRAP_NAMESPACE: &str = "capi-kubeadm-bootstrap-system";
/// The newest Kamaji control plane provider release without the grant.
const LAST_PROVIDER_WITHOUT_GRANT: KubeVersion = KubeVersion {
    major: 0,
    minor: 20,
    patch: 0,
};

/// Whether Cluster API `core` reads the control plane object while the Kamaji control plane
/// provider `provider` grants it no read. Unparsable versions (refused elsewhere) need nothing.
pub fn needs_reader(core: &str, provider: &str) -> bool {
    let (Some(core), Some(provider)) = (KubeVersion::parse(core), KubeVersion::parse(provider)) else {
        return false;
    };
    (core.major, core.minor) >= (1, 14) && provider <= LAST_PROVIDER_WITHOUT_GRANT
}

impl Platform {
    /// Whether the platform layer carries the bootstrap controller's read of KamajiControlPlanes.
    pub fn needs_bootstrap_reader(&self) -> bool {
        needs_reader(&self.management.cluster_api, &self.cp_provider_version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_api_v1_14_with_a_provider_up_to_v0_20_0_needs_the_grant() {
        assert!(needs_reader("v1.14.0", "v0.20.0"));
        assert!(needs_reader("v1.15.2", "v0.19.1"));
        assert!(!needs_reader("v1.13.9", "v0.20.0"));
        assert!(!needs_reader("v1.10.4", "v0.19.0"));
        assert!(!needs_reader("v1.14.0", "v0.20.1"));
        assert!(!needs_reader("v1.14.0", "v0.21.0"));
        assert!(!needs_reader("latest", "v0.20.0"));
    }
}
