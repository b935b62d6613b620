//! IONOS Cloud (CAPIC v0.6.3, API `v1alpha1`). Kamaji's provider writes the
//! `IonosCloudCluster`'s endpoint (cluster-api-control-plane-provider-kamaji v0.20.0
//! `controllers/kamajicontrolplane_controller_cluster_patch.go`, `patchGenericCluster`), and
//! without a `loadBalancerProviderRef` CAPIC reserves nothing and is ready at once
//! (`internal/controller/ionoscloudcluster_controller.go`): the cluster only names the
//! credentials. No cloud controller manager runs on the nodes: as CAPIC's own templates do
//! (`templates/cluster-template.yaml`), each node writes its provider ID, `ionos://<server
//! UUID>`, onto its Node after joining.

use super::{ClusterParts, NodeWiring, Size};
use crate::map;
use crate::model::{IonosImage, IonoscloudCluster};
use crate::render::node::Node;

/// CAPIC's post-join commands: the Node's system UUID is the server's, which CAPIC's
/// `IonosCloudMachine` names as `ionos://<UUID>`.
const SET_PROVIDER_ID: [&str; 2] = [
    "export system_uuid=$(kubectl --kubeconfig /etc/kubernetes/kubelet.conf get node $(hostname) -ojsonpath='{..systemUUID }')",
    "kubectl --kubeconfig /etc/kubernetes/kubelet.conf patch node $(hostname) --type strategic -p '{\"spec\": {\"providerID\": \"ionos://'${system_uuid}'\"}}'",
];

/// `IonosCloudCluster.spec`.
pub(super) fn cluster(i: &IonoscloudCluster) -> ClusterParts {
    ClusterParts {
        annotations: Vec::new(),
        spec: map! {"credentialsRef" => map! {"name" => &i.credentials_secret}},
    }
}

/// `IonosCloudMachineTemplate.spec.template.spec`: the pool's size as cores and memory.
pub(super) fn machine(i: &IonoscloudCluster, size: &Size) -> Node {
    let image = match &i.image {
        IonosImage::Id(id) => map! {"id" => id},
        IonosImage::Selector(labels) => map! {"selector" => map! {"matchLabels" => labels}},
    };
    map! {
        "datacenterID" => &i.datacenter_id,
        "type" => &i.server_type,
        "numCores" => size.cpus,
        "memoryMB" => size.memory_mib,
        "availabilityZone" => i.availability_zone.clone(),
        "disk" => map! {
            "sizeGB" => size.disk_gib,
            "diskType" => i.disk_type.clone(),
            "image" => image,
        },
    }
}

/// The provider ID set after joining; no external cloud provider.
pub(super) fn node() -> NodeWiring {
    NodeWiring {
        post_kubeadm_commands: SET_PROVIDER_ID.to_vec(),
        ..NodeWiring::default()
    }
}
