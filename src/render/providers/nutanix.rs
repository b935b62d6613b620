//! Nutanix (CAPX). The `NutanixCluster` endpoint is the tenant's VIP when one is known, else
//! the `0.0.0.0:0` placeholder the Kamaji provider patches. The Nutanix cloud controller
//! manager sets node provider IDs (`nutanix://<VM UUID>`, which cloud-init cannot know); it
//! must run on workers, because Kamaji clusters have no control-plane nodes, and it is installed
//! from the management cluster like every add-on (`render::addons`).

use super::{ClusterContext, ClusterParts, NodeWiring, Size};
use crate::model::{NutanixCluster, NutanixRef};
use crate::render::node::Node;
use crate::{map, seq};

/// `NutanixCluster.spec`. A class template has no endpoint: the topology controller ignores an
/// empty one, where it would reset the `0.0.0.0` placeholder after Kamaji patched it (a class
/// patch sets the VIP when the tenant has one).
pub(super) fn cluster(n: &NutanixCluster, ctx: &ClusterContext<'_>) -> ClusterParts {
    let endpoint = ctx.tenant.map(|_| match ctx.endpoint {
        Some((host, port)) => map! {"host" => host.to_string(), "port" => port},
        // The Kamaji provider replaces both once the API server has an address.
        None => map! {"host" => "0.0.0.0", "port" => 0u32},
    });
    ClusterParts {
        annotations: Vec::new(),
        spec: map! {
            "prismCentral" => map! {
                "address" => &n.address,
                "port" => n.port,
                "insecure" => n.insecure.then_some(true),
                "credentialRef" => map! {"kind" => "Secret", "name" => &n.credentials_secret, "namespace" => ctx.tenant},
            },
            "controlPlaneEndpoint" => endpoint,
        },
    }
}

fn reference(r: &NutanixRef) -> Node {
    match r {
        NutanixRef::Name(n) => map! {"type" => "name", "name" => n},
        NutanixRef::Uuid(u) => map! {"type" => "uuid", "uuid" => u},
    }
}

/// `NutanixMachineTemplate.spec.template.spec`.
pub(super) fn machine(n: &NutanixCluster, size: &Size) -> Node {
    map! {
        "cluster" => reference(&n.cluster),
        "subnet" => seq![reference(&n.subnet)],
        "image" => reference(&n.image),
        "vcpuSockets" => size.cpus,
        "vcpusPerSocket" => 1u32,
        "memorySize" => format!("{}Mi", size.memory_mib),
        "systemDiskSize" => format!("{}Gi", size.disk_gib),
    }
}

/// Nodes wait for the Nutanix CCM.
pub(super) fn node() -> NodeWiring {
    NodeWiring {
        external_cloud: true,
        ..NodeWiring::default()
    }
}
