//! Proxmox VE (CAPMOX): Kamaji runs the control plane, so the `ProxmoxCluster` is marked as
//! externally managed, and the kubelet reads its provider ID from cloud-init's metadata.

use super::{ClusterContext, ClusterParts, NodeWiring, Size};
use crate::map;
use crate::model::{NodeOs, ProxmoxCluster, ProxmoxMachine};
use crate::render::node::Node;
use crate::seq;

/// The kubelet's provider ID, as the Kamaji docs give it; cloud-init expands the expression.
pub(super) const PROVIDER_ID: &str = "proxmox://'{{ ds.meta_data.instance_id }}'";

/// `ProxmoxCluster.spec`. The credentials Secret is in the tenant's namespace (in a class
/// template the namespace is left out: each tenant namespace holds its own).
pub(super) fn cluster(px: &ProxmoxCluster, ctx: &ClusterContext<'_>) -> ClusterParts {
    ClusterParts {
        annotations: Vec::new(),
        spec: map! {
            "externalManagedControlPlane" => true,
            "allowedNodes" => &px.allowed_nodes,
            "dnsServers" => &px.dns_servers,
            "ipv4Config" => px.ipv4.as_ref().map(|(addresses, gateway, prefix)| map! {
                "addresses" => addresses,
                "gateway" => gateway,
                "prefix" => *prefix,
            }),
            "credentialsRef" => px.credentials_secret.as_ref().map(|s| map! {"name" => s, "namespace" => ctx.tenant}),
            "controlPlaneEndpoint" => ctx.endpoint.filter(|_| ctx.routed).map(|(host, port)| map! {"host" => host, "port" => port}),
        },
    }
}

/// `ProxmoxMachineTemplate.spec.template.spec`. CAPMOX waits for cloud-init to report done
/// through the QEMU guest agent unless told not to (v0.9.0 `api/v1alpha2`, `checks`): Flatcar
/// has no cloud-init, so its machines skip that check, as CAPMOX's Flatcar template does.
pub(super) fn machine(m: &ProxmoxMachine, size: &Size, os: NodeOs) -> Node {
    map! {
        "checks" => (os == NodeOs::Flatcar).then(|| map! {"skipCloudInitStatus" => true}),
        "sourceNode" => &m.source_node,
        "templateID" => m.template_id,
        "allowedNodes" => &m.allowed_nodes,
        "format" => "qcow2",
        "full" => true,
        "numSockets" => 1u32,
        "numCores" => size.cpus,
        "memoryMiB" => size.memory_mib,
        "disks" => map! {"bootVolume" => map! {"disk" => "scsi0", "sizeGb" => size.disk_gib}},
        "network" => map! {
            "networkDevices" => seq![map! {
                "name" => "net0",
                "bridge" => &m.bridge,
                "model" => "virtio",
            }],
        },
    }
}

/// Proxmox has no cloud controller manager: the kubelet sets its own provider ID.
pub(super) fn node() -> NodeWiring {
    NodeWiring {
        provider_id: Some(PROVIDER_ID),
        ..NodeWiring::default()
    }
}
