//! Tinkerbell (CAPT v0.7.0, API `v1beta1`). Kamaji's provider writes the
//! `TinkerbellCluster`'s endpoint while it is empty and checks it once set
//! (cluster-api-control-plane-provider-kamaji v0.20.0
//! `controllers/kamajicontrolplane_controller_cluster_patch.go`, `checkOrPatchGenericCluster`): it
//! is written whenever known. No cloud provider runs: CAPT replaces the kubelet flag's literal
//! `PROVIDER_ID` with `tinkerbell://<namespace>/<hardware>` in the user data it hands the
//! machine (v0.7.0 `controller/machine/hardware.go`; its own templates carry that placeholder).

use super::{ClusterContext, ClusterParts, NodeWiring, Size};
use crate::model::TinkerbellCluster;
use crate::render::node::Node;
use crate::{map, seq};

/// The placeholder CAPT replaces in the bootstrap data.
const PROVIDER_ID: &str = "PROVIDER_ID";

/// `TinkerbellCluster.spec`.
pub(super) fn cluster(t: &TinkerbellCluster, ctx: &ClusterContext<'_>) -> ClusterParts {
    ClusterParts {
        annotations: Vec::new(),
        spec: map! {
            "controlPlaneEndpoint" => ctx.endpoint.filter(|_| ctx.tenant.is_some()).map(|(host, port)| map! {"host" => host, "port" => port}),
            "imageLookupBaseRegistry" => t.image_registry.clone(),
            "imageLookupOSDistro" => t.os_distro.clone(),
            "imageLookupOSVersion" => t.os_version.clone(),
        },
    }
}

/// `TinkerbellMachineTemplate.spec.template.spec`: only `Hardware` with the tenant's labels.
pub(super) fn machine(t: &TinkerbellCluster, _size: &Size) -> Node {
    map! {
        "hardwareAffinity" => map! {
            "required" => seq![map! {"labelSelector" => map! {"matchLabels" => &t.hardware_selector}}],
        },
        "bootOptions" => t.boot_mode.as_ref().map(|mode| map! {"bootMode" => mode}),
    }
}

/// The placeholder provider ID; no external cloud provider.
pub(super) fn node() -> NodeWiring {
    NodeWiring {
        provider_id: Some(PROVIDER_ID),
        ..NodeWiring::default()
    }
}
