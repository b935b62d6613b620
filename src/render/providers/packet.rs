//! Equinix Metal (CAPP, deprecated upstream). The `PacketCluster` is marked as managed by
//! Kamaji, so CAPP skips it entirely and reserves no elastic IP; its CRD still requires a
//! `vipManager`, so the default is written. CAPP runs user data through Go's `text/template`
//! before cloud-init sees it, hence the escaped Jinja expression in the provider ID.

use super::kubevirt::MANAGED_BY;
use super::{ClusterParts, NodeWiring, Size};
use crate::map;
use crate::model::PacketCluster;
use crate::render::node::Node;

/// The kubelet's provider ID as the Kamaji docs and CAPP's templates write it.
const PROVIDER_ID: &str = "equinixmetal://{{ `{{ v1.instance_id }}` }}";

/// `PacketCluster.spec`.
pub(super) fn cluster(p: &PacketCluster) -> ClusterParts {
    ClusterParts {
        annotations: vec![(MANAGED_BY, "kamaji")],
        spec: map! {
            "projectID" => &p.project_id,
            "metro" => &p.metro,
            // Required by the CRD; unused, since CAPP skips an externally managed cluster.
            "vipManager" => "CPEM",
        },
    }
}

/// `PacketMachineTemplate.spec.template.spec`: the plan decides the machine.
pub(super) fn machine(p: &PacketCluster, _size: &Size) -> Node {
    map! {
        "machineType" => &p.plan,
        "os" => &p.os,
        "billingCycle" => "hourly",
    }
}

/// The provider ID and an external CCM (Equinix's cloud-provider-equinix-metal).
pub(super) fn node() -> NodeWiring {
    NodeWiring {
        provider_id: Some(PROVIDER_ID),
        external_cloud: true,
        ..NodeWiring::default()
    }
}
