//! Microsoft Azure (CAPZ v1.26.0, API `v1beta1`). Kamaji serves the API server, so the
//! `AzureCluster` has `controlPlaneEnabled: false`: CAPZ then makes no API server load balancer,
//! control-plane subnet or rules, and waits for the endpoint, which Kamaji's provider writes
//! (cluster-api-provider-azure v1.26.0 `controllers/azurecluster_controller.go`;
//! cluster-api-control-plane-provider-kamaji v0.20.0 `patchGenericCluster`). The field defaults
//! to true, so it is always written. Nodes run the external Azure cloud provider, which reads
//! `/etc/kubernetes/azure.json`: CAPZ writes it per machine template into the Secret
//! `<AzureMachineTemplate>-azure-json` (`controllers/azurejson_machinetemplate_controller.go`),
//! which each pool's bootstrap template names.

use base64::Engine as _;

use super::{ClusterParts, MachineSecretFile, NodeWiring, Size};
use crate::map;
use crate::model::AzureCluster;
use crate::render::node::Node;

/// The node name CAPZ's templates register under (`templates/cluster-template.yaml`).
const NODE_NAME: &str = "{{ ds.meta_data[\"local_hostname\"] }}";

/// `AzureCluster.spec`.
pub(super) fn cluster(a: &AzureCluster) -> ClusterParts {
    ClusterParts {
        annotations: Vec::new(),
        spec: map! {
            "location" => &a.location,
            "subscriptionID" => a.subscription_id.clone(),
            "resourceGroup" => a.resource_group.clone(),
            "identityRef" => map! {
                "kind" => "AzureClusterIdentity",
                "name" => &a.identity,
                "namespace" => a.identity_namespace.clone(),
            },
            "controlPlaneEnabled" => false,
        },
    }
}

/// `AzureMachineTemplate.spec.template.spec`: the VM size decides vCPUs and memory; the disk is
/// the pool's. The key is base64-encoded, as CAPZ's field wants it.
pub(super) fn machine(a: &AzureCluster, size: &Size) -> Node {
    map! {
        "vmSize" => &a.vm_size,
        "osDisk" => map! {"osType" => "Linux", "diskSizeGB" => size.disk_gib},
        "sshPublicKey" => base64::engine::general_purpose::STANDARD.encode(&a.ssh_public_key),
    }
}

/// The cloud config file from CAPZ's per-template Secret, the node name, an external CCM.
pub(super) fn node() -> NodeWiring {
    NodeWiring {
        external_cloud: true,
        node_name: Some(NODE_NAME),
        machine_secret_file: Some(MachineSecretFile {
            suffix: "-azure-json",
            key: "worker-node-azure.json",
            path: "/etc/kubernetes/azure.json",
        }),
        ..NodeWiring::default()
    }
}
