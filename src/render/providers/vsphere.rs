//! VMware vSphere (CAPV v1.16.1, API `v1beta2`). Kamaji's provider only checks
//! `VSphereCluster.spec.controlPlaneEndpoint` once it is set, and writes it while it is empty
//! (cluster-api-control-plane-provider-kamaji v0.20.0
//! `controllers/kamajicontrolplane_controller_cluster_patch.go`, `checkOrPatchGenericCluster`):
//! it is written whenever the endpoint is known at render time, so that the VIP and the
//! Cluster's `apiServerPort` are the ones in the VSphereCluster. The vSphere cloud provider
//! (CPI) sets node provider IDs (`vsphere://<BIOS UUID>`), which Cluster API matches machines
//! by: it runs on the tenant's workers as an add-on (`render::addons`, wiring `vsphere-cpi`).

use super::{ClusterContext, ClusterParts, NodeWiring, Size};
use crate::model::{VsphereCluster, VsphereIdentity};
use crate::render::node::Node;
use crate::{map, seq};

/// The node name and the hostname lines CAPV's own templates set before kubeadm runs
/// (cluster-api-provider-vsphere v1.16.1 `templates/cluster-template.yaml`): the VM's guest
/// hostname comes from vSphere's metadata, and the kubelet registers under it.
const NODE_NAME: &str = "{{ local_hostname }}";
const PRE_KUBEADM: [&str; 3] = [
    "hostnamectl set-hostname \"{{ ds.meta_data.hostname }}\"",
    "echo \"::1         ipv6-localhost ipv6-loopback localhost6 localhost6.localdomain6\" >/etc/hosts",
    "echo \"127.0.0.1   {{ ds.meta_data.hostname }} {{ local_hostname }} localhost localhost.localdomain localhost4 localhost4.localdomain4\" >>/etc/hosts",
];

/// `VSphereCluster.spec`. A class template carries no endpoint (a class patch sets the VIP
/// when the tenant has one).
pub(super) fn cluster(v: &VsphereCluster, ctx: &ClusterContext<'_>) -> ClusterParts {
    let (kind, name) = match &v.identity {
        VsphereIdentity::Secret(s) => ("Secret", s),
        VsphereIdentity::ClusterIdentity(i) => ("VSphereClusterIdentity", i),
    };
    ClusterParts {
        annotations: Vec::new(),
        spec: map! {
            "server" => &v.server,
            "thumbprint" => v.thumbprint.clone(),
            "identityRef" => map! {"kind" => kind, "name" => name},
            "controlPlaneEndpoint" => ctx.endpoint.filter(|_| ctx.tenant.is_some()).map(|(host, port)| map! {"host" => host, "port" => port}),
        },
    }
}

/// `VSphereMachineTemplate.spec.template.spec`: a clone of the template with one NIC on the
/// port group, addressed by DHCP.
pub(super) fn machine(v: &VsphereCluster, size: &Size) -> Node {
    map! {
        "server" => &v.server,
        "thumbprint" => v.thumbprint.clone(),
        "datacenter" => &v.datacenter,
        "datastore" => v.datastore.clone(),
        "folder" => v.folder.clone(),
        "resourcePool" => v.resource_pool.clone(),
        "storagePolicyName" => v.storage_policy.clone(),
        "template" => &v.template,
        "cloneMode" => &v.clone_mode,
        "os" => "Linux",
        "numCPUs" => size.cpus,
        "memoryMiB" => i64::from(size.memory_mib),
        "diskGiB" => size.disk_gib,
        "network" => map! {
            "devices" => seq![map! {"networkName" => &v.network, "dhcp4" => true}],
        },
    }
}

/// An external cloud provider, and the node name from vSphere's metadata.
pub(super) fn node() -> NodeWiring {
    NodeWiring {
        external_cloud: true,
        node_name: Some(NODE_NAME),
        pre_kubeadm_commands: PRE_KUBEADM.to_vec(),
        ..NodeWiring::default()
    }
}
