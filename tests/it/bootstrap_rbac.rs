//! The read of KamajiControlPlanes that Cluster API v1.14's kubeadm bootstrap controller needs
//! and the Kamaji control plane provider up to v0.20.0 does not grant (see
//! `kaas_gitops::model::bootstrap_rbac`): rendered into the platform layer, as data.

use serde_json::json;

use crate::common::Repo;

const ROLE: &str = "overlays/platform/clusterrole-kaas-capi-kubeadm-bootstrap-kamaji-reader.yaml";
const BINDING: &str = "overlays/platform/clusterrolebinding-kaas-capi-kubeadm-bootstrap-kamaji-reader.yaml";

#[test]
fn cluster_api_v1_14_gets_a_read_only_grant_for_the_kubeadm_bootstrap_controller() {
    let repo = Repo::example();
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let role = repo.object(ROLE);
    assert_eq!(role["metadata"]["name"], "kaas-capi-kubeadm-bootstrap-kamaji-reader");
    assert_eq!(role["metadata"].get("namespace"), None);
    assert_eq!(
        role["rules"],
        json!([{
            "apiGroups": ["controlplane.cluster.x-k8s.io"],
            "resources": ["kamajicontrolplanes"],
            "verbs": ["get", "list", "watch"],
        }])
    );
    let binding = repo.object(BINDING);
    assert_eq!(binding["metadata"]["name"], "kaas-capi-kubeadm-bootstrap-kamaji-reader");
    assert_eq!(
        binding["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kaas-capi-kubeadm-bootstrap-kamaji-reader"})
    );
    assert_eq!(
        binding["subjects"],
        json!([{"kind": "ServiceAccount", "name": "capi-kubeadm-bootstrap-manager", "namespace": "capi-kubeadm-bootstrap-system"}])
    );
    let kustomization = repo.read("overlays/platform/kustomization.yaml");
    for file in [ROLE, BINDING] {
        let name = file.rsplit('/').next().unwrap();
        assert!(kustomization.contains(&format!("- {name}\n")), "{kustomization}");
    }
}

#[test]
fn an_older_cluster_api_core_gets_no_grant_and_the_next_render_deletes_it() {
    let repo = Repo::example();
    assert_eq!(repo.run(&["render"]).code, 0);
    repo.replace(
        "kaas.yaml",
        "    contract: v1beta2\n",
        "    contract: v1beta2\n    coreVersion: v1.13.2\n",
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for file in [ROLE, BINDING] {
        assert!(
            !repo.path().join(file).exists(),
            "{file} still rendered for Cluster API v1.13"
        );
    }
    assert!(
        !repo
            .read("overlays/platform/kustomization.yaml")
            .contains("kamaji-reader")
    );
}
