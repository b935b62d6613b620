//! OpenStack (CAPO v0.14.7, API `v1beta1`). Kamaji serves the API server, so CAPO makes no
//! endpoint of its own: no Octavia load balancer, no floating IP. Kamaji's provider patches the
//! endpoint into `apiServerFixedIP` and `apiServerPort` (cluster-api-control-plane-provider-kamaji
//! v0.20.0 `controllers/kamajicontrolplane_controller_cluster_patch.go`,
//! `patchOpenStackCluster`), which CAPO turns into `controlPlaneEndpoint` when the load balancer
//! and the floating IP are off (cluster-api-provider-openstack v0.14.7
//! `controllers/openstackcluster_controller.go`, `reconcileControlPlaneEndpoint`). Both are
//! written when the endpoint is known at render time, as the same values. CAPO's webhook lets
//! `apiServerFixedIP` be set once (`pkg/webhooks/openstackcluster_webhook.go`), so a tenant's
//! endpoint never moves (`model::transitions`).

use super::{ClusterContext, ClusterParts, NodeWiring, Size};
use crate::map;
use crate::model::{OpenstackCluster, OpenstackRef};
use crate::render::node::Node;

/// The kubelet's provider ID and node name, as CAPO's templates set them
/// (`templates/cluster-template.yaml`): the OpenStack CCM matches nodes by both.
const PROVIDER_ID: &str = "openstack:///'{{ instance_id }}'";
const NODE_NAME: &str = "{{ local_hostname }}";

fn reference(r: &OpenstackRef) -> Node {
    match r {
        OpenstackRef::Id(id) => map! {"id" => id},
        OpenstackRef::Name(name) => map! {"filter" => map! {"name" => name}},
    }
}

/// `OpenStackCluster.spec`. A class template carries no endpoint (a class patch sets the VIP
/// when the tenant has one).
pub(super) fn cluster(o: &OpenstackCluster, ctx: &ClusterContext<'_>) -> ClusterParts {
    let endpoint = ctx.endpoint.filter(|_| ctx.tenant.is_some());
    ClusterParts {
        annotations: Vec::new(),
        spec: map! {
            "identityRef" => map! {
                "type" => "Secret",
                "name" => &o.credentials_secret,
                "cloudName" => &o.cloud_name,
                "region" => o.region.clone(),
            },
            "apiServerLoadBalancer" => map! {"enabled" => false},
            "disableAPIServerFloatingIP" => true,
            "apiServerFixedIP" => endpoint.map(|(host, _)| host),
            "apiServerPort" => endpoint.map(|(_, port)| port),
            "network" => o.network.as_ref().map(reference),
            "managedSubnets" => o.network.is_none().then(|| crate::seq![map! {
                "cidr" => &o.node_cidr,
                "dnsNameservers" => Node::from(&o.dns_nameservers).or_absent(),
            }]),
            "externalNetwork" => o.external_network.as_ref().map(reference),
            "disableExternalNetwork" => o.external_network.is_none().then_some(true),
            // Node-to-node traffic of any CNI; the control plane is not on these servers.
            "managedSecurityGroups" => map! {"allowAllInClusterTraffic" => true},
        },
    }
}

/// `OpenStackMachineTemplate.spec.template.spec`: the flavor decides the size; the disk size
/// applies when the server boots from a volume.
pub(super) fn machine(o: &OpenstackCluster, size: &Size) -> Node {
    map! {
        "flavor" => &o.flavor,
        "image" => reference(&o.image),
        "sshKeyName" => o.ssh_key_name.clone(),
        "rootVolume" => o.root_volume_type.as_ref().map(|t| map! {"sizeGiB" => size.disk_gib, "type" => t}),
    }
}

/// The provider ID, the node name and an external CCM.
pub(super) fn node() -> NodeWiring {
    NodeWiring {
        provider_id: Some(PROVIDER_ID),
        external_cloud: true,
        node_name: Some(NODE_NAME),
        ..NodeWiring::default()
    }
}
