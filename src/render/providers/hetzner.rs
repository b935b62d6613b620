//! Hetzner Cloud (CAPH). Kamaji serves the API server, so the `HetznerCluster` gets no load
//! balancer and no control-plane regions, and may have an empty endpoint until Kamaji fills it;
//! the API server's own load balancer is placed in the tenant's region.

use super::{ClusterParts, ControlPlaneWiring, NodeWiring, Size};
use crate::map;
use crate::model::{HetznerCluster, LOCATION_ANNOTATION};
use crate::render::node::Node;

/// Lets CAPH wait for Kamaji to fill `controlPlaneEndpoint`.
pub(crate) const ALLOW_EMPTY_ENDPOINT: &str = "capi.syself.com/allow-empty-control-plane-address";
/// The kubelet's provider ID: the hcloud CCM's `hcloud://<server ID>`, which cloud-init's
/// Hetzner datasource exposes as the instance ID.
const PROVIDER_ID: &str = "hcloud://{{ ds.meta_data.instance_id }}";
/// The resolv.conf the kubelet hands to pods when the tenant names its name servers.
const RESOLV_CONF: &str = "/etc/kubernetes/resolv.conf";

/// `HetznerCluster.spec`.
pub(super) fn cluster(h: &HetznerCluster) -> ClusterParts {
    ClusterParts {
        annotations: vec![(ALLOW_EMPTY_ENDPOINT, "true")],
        spec: map! {
            "controlPlaneRegions" => Node::Seq(Vec::new()),
            "controlPlaneLoadBalancer" => map! {"enabled" => false},
            "hcloudNetwork" => match &h.network_zone {
                Some(zone) => map! {"enabled" => true, "networkZone" => zone},
                None => map! {"enabled" => false},
            },
            "hetznerSecretRef" => map! {
                "name" => &h.secret,
                // The key name of the Kamaji docs and of the Syself CCM.
                "key" => map! {"hcloudToken" => "hcloud"},
            },
            "sshKeys" => map! {
                "hcloud" => h.ssh_keys.iter().map(|k| map! {"name" => k}).collect::<Vec<_>>(),
            },
        },
    }
}

/// `HCloudMachineTemplate.spec.template.spec`: the server type decides the size.
pub(super) fn machine(h: &HetznerCluster, _size: &Size) -> Node {
    map! {
        "type" => &h.instance_type,
        "imageName" => &h.image_name,
    }
}

/// An external CCM, the provider ID, and the resolv.conf when name servers are given.
pub(super) fn node(h: &HetznerCluster) -> NodeWiring {
    let mut wiring = NodeWiring {
        provider_id: Some(PROVIDER_ID),
        external_cloud: true,
        ..NodeWiring::default()
    };
    if !h.nameservers.is_empty() {
        let content: String = h.nameservers.iter().map(|n| format!("nameserver {n}\n")).collect();
        wiring.files.push(map! {
            "path" => RESOLV_CONF,
            "owner" => "root:root",
            "permissions" => "0644",
            "content" => content,
        });
        wiring.extra_args.push(("resolv-conf", RESOLV_CONF.to_string()));
    }
    wiring
}

/// The API server's load balancer goes to the tenant's region.
pub(super) fn control_plane(h: &HetznerCluster) -> ControlPlaneWiring {
    ControlPlaneWiring {
        service_annotations: vec![(LOCATION_ANNOTATION, h.region.clone())],
        external_cloud: true,
    }
}
