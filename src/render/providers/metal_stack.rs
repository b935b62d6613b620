//! metal-stack (CAPMS). Kamaji only checks that `MetalStackCluster.spec.controlPlaneEndpoint`
//! equals the API server's address, it never sets it: so the VIP is rendered into both (and
//! validation refuses a metal-stack tenant without one). The optional firewall lets the nodes
//! reach the API server and the Konnectivity server at the VIP. metal-stack images boot with
//! Ignition, which cannot template a provider ID; the metal-stack CCM sets
//! `metal://<partition>/<machine>`.

use std::net::IpAddr;

use super::{ClusterContext, ClusterParts, NodeWiring, Size};
use crate::model::{MetalStackCluster, Tenant};
use crate::render::Object;
use crate::render::node::Node;
use crate::render::shared::tmeta;
use crate::{map, seq};

/// The Konnectivity server's port on the Kamaji API server address.
const KONNECTIVITY_PORT: u16 = 8132;

/// `MetalStackCluster.spec`. Only the VIP is the endpoint; CAPMS would otherwise reserve an
/// address of its own.
pub(super) fn cluster(m: &MetalStackCluster, ctx: &ClusterContext<'_>) -> ClusterParts {
    ClusterParts {
        annotations: Vec::new(),
        spec: map! {
            "projectID" => &m.project_id,
            "partition" => &m.partition,
            "nodeNetworkID" => &m.network,
            "controlPlaneEndpoint" => ctx.endpoint.map(|(host, port)| map! {"host" => host.to_string(), "port" => port}),
            "firewallDeploymentRef" => m.firewall.as_ref().and(ctx.tenant).map(|name| map! {"name" => name}),
        },
    }
}

/// `MetalStackMachineTemplate.spec.template.spec`: the size decides the machine.
pub(super) fn machine(m: &MetalStackCluster, _size: &Size) -> Node {
    map! {"size" => &m.size, "image" => &m.image}
}

/// Ignition, and an external CCM.
pub(super) fn node() -> NodeWiring {
    NodeWiring {
        external_cloud: true,
        ignition: true,
        ..NodeWiring::default()
    }
}

/// The firewall template and deployment, when the tenant asks for a firewall.
pub(super) fn firewall(t: &Tenant, m: &MetalStackCluster) -> Vec<Object> {
    let (Some(f), Some(vip)) = (&m.firewall, t.vip) else {
        return Vec::new();
    };
    let any = "0.0.0.0/0";
    let rule = |comment: &str, ports: Node, protocol: &str, to: Node| {
        map! {"comment" => comment, "ports" => ports, "protocol" => protocol, "to" => to}
    };
    let egress = seq![
        rule(
            "tenant API server at the VIP (kubeadm join, kubelet)",
            seq![t.port],
            "TCP",
            seq![host_cidr(vip)],
        ),
        rule(
            "Konnectivity server at the VIP (control plane to node tunnel)",
            seq![KONNECTIVITY_PORT],
            "TCP",
            seq![host_cidr(vip)],
        ),
        rule(
            "HTTP and HTTPS (images, packages)",
            seq![80u16, 443u16],
            "TCP",
            seq![any]
        ),
        rule("DNS over TCP", seq![53u16], "TCP", seq![any]),
        rule("DNS and NTP", seq![53u16, 123u16], "UDP", seq![any]),
        rule("metal-api, for the CCM and CSI", seq![8080u16], "TCP", seq![any]),
    ];
    let ingress = seq![map! {
        "comment" => "kubelet API, for the Kamaji control plane",
        "ports" => seq![10250u16],
        "protocol" => "TCP",
        "from" => seq![any],
    }];
    let template = Object {
        kind: "MetalStackFirewallTemplate",
        name: t.name.clone(),
        body: map! {
            "apiVersion" => "infrastructure.cluster.x-k8s.io/v1alpha1",
            "kind" => "MetalStackFirewallTemplate",
            "metadata" => tmeta(t, &t.name),
            "spec" => map! {
                "image" => &f.image,
                "size" => &f.size,
                "networks" => &f.networks,
                "partition" => &m.partition,
                "project" => &m.project_id,
                "initialRuleSet" => map! {"egress" => egress, "ingress" => ingress},
            },
        },
    };
    let deployment = Object {
        kind: "MetalStackFirewallDeployment",
        name: t.name.clone(),
        body: map! {
            "apiVersion" => "infrastructure.cluster.x-k8s.io/v1alpha1",
            "kind" => "MetalStackFirewallDeployment",
            "metadata" => tmeta(t, &t.name),
            "spec" => map! {
                "autoUpdate" => map! {"machineImage" => true},
                "firewallTemplateRef" => map! {"name" => &t.name},
            },
        },
    };
    vec![template, deployment]
}

/// The VIP as a one-address CIDR.
fn host_cidr(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(_) => format!("{ip}/32"),
        IpAddr::V6(_) => format!("{ip}/128"),
    }
}
