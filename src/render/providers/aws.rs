//! AWS (CAPA). Kamaji serves the API server, so the `AWSCluster` gets no load balancer. The
//! kubelet registers under the EC2 private DNS name the AWS cloud controller manager expects
//! and takes the provider ID it computes (`aws:///<zone>/<instance>`) from cloud-init's
//! standard instance data.

use super::{ClusterParts, NodeWiring, Size};
use crate::map;
use crate::model::AwsCluster;
use crate::render::node::Node;

/// The kubelet's provider ID, from cloud-init's standardized `v1` instance data.
const PROVIDER_ID: &str = "aws:///{{ v1.availability_zone }}/{{ v1.instance_id }}";
/// The node name the AWS CCM matches instances by.
const NODE_NAME: &str = "{{ ds.meta_data.local_hostname }}";
/// The instance profile CAPA's bootstrap CloudFormation stack creates for nodes.
const NODES_PROFILE: &str = "nodes.cluster-api-provider-aws.sigs.k8s.io";

/// `AWSCluster.spec`.
pub(super) fn cluster(a: &AwsCluster) -> ClusterParts {
    ClusterParts {
        annotations: Vec::new(),
        spec: map! {
            "region" => &a.region,
            "sshKeyName" => a.ssh_key_name.clone(),
            "controlPlaneLoadBalancer" => map! {"loadBalancerType" => "disabled"},
        },
    }
}

/// `AWSMachineTemplate.spec.template.spec`.
pub(super) fn machine(a: &AwsCluster, size: &Size) -> Node {
    map! {
        "ami" => map! {"id" => &a.ami},
        "instanceType" => &a.instance_type,
        "iamInstanceProfile" => NODES_PROFILE,
        "sshKeyName" => a.ssh_key_name.clone(),
        "rootVolume" => map! {"size" => i64::from(size.disk_gib)},
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
