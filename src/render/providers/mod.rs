//! What each infrastructure provider contributes: its infrastructure cluster object (or, in a
//! ClusterClass, cluster template), its worker machine template, what its nodes' kubelets need,
//! what the Kamaji control plane needs, and any objects of its own. One file per provider; this
//! one dispatches on the model's `Infrastructure` and builds the objects around their specs.

mod aws;
mod azure;
mod flatcar;
mod hetzner;
mod ionoscloud;
mod kubevirt;
mod metal3;
mod metal_stack;
mod nutanix;
mod openstack;
mod packet;
mod proxmox;
mod tinkerbell;
mod vsphere;

use crate::model::Platform;

use crate::map;
use crate::model::{Infrastructure, NodeOs, Provider, ProxmoxMachine, Tenant};
use crate::render::Object;
use crate::render::node::Node;
use crate::render::shared::tmeta;

/// The API group of every infrastructure object.
pub(crate) const GROUP: &str = "infrastructure.cluster.x-k8s.io";

/// A kind and its `apiVersion`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kind {
    /// `kind`.
    pub kind: &'static str,
    /// `apiVersion`.
    pub api_version: &'static str,
}

/// The kinds a provider renders.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kinds {
    /// The infrastructure cluster.
    pub cluster: Kind,
    /// Its template, for ClusterClasses (`None`: the provider ships none).
    pub cluster_template: Option<Kind>,
    /// The worker machine template.
    pub machine_template: Kind,
}

/// The kinds of `provider`, in the API versions of the pinned provider releases.
pub(crate) fn kinds(provider: Provider) -> Kinds {
    let k = |kind, api_version| Kind { kind, api_version };
    let (version, cluster, template, machine) = match provider {
        Provider::Proxmox => (
            "v1alpha2",
            "ProxmoxCluster",
            Some("ProxmoxClusterTemplate"),
            "ProxmoxMachineTemplate",
        ),
        Provider::Hetzner => (
            "v1beta1",
            "HetznerCluster",
            Some("HetznerClusterTemplate"),
            "HCloudMachineTemplate",
        ),
        Provider::Kubevirt => (
            "v1alpha1",
            "KubevirtCluster",
            Some("KubevirtClusterTemplate"),
            "KubevirtMachineTemplate",
        ),
        Provider::Nutanix => (
            "v1beta1",
            "NutanixCluster",
            Some("NutanixClusterTemplate"),
            "NutanixMachineTemplate",
        ),
        Provider::MetalStack => ("v1alpha1", "MetalStackCluster", None, "MetalStackMachineTemplate"),
        Provider::Packet => ("v1beta1", "PacketCluster", None, "PacketMachineTemplate"),
        Provider::Aws => (
            "v1beta2",
            "AWSCluster",
            Some("AWSClusterTemplate"),
            "AWSMachineTemplate",
        ),
        Provider::Vsphere => (
            "v1beta2",
            "VSphereCluster",
            Some("VSphereClusterTemplate"),
            "VSphereMachineTemplate",
        ),
        Provider::Openstack => (
            "v1beta1",
            "OpenStackCluster",
            Some("OpenStackClusterTemplate"),
            "OpenStackMachineTemplate",
        ),
        Provider::Metal3 => (
            "v1beta2",
            "Metal3Cluster",
            Some("Metal3ClusterTemplate"),
            "Metal3MachineTemplate",
        ),
        // CAPT v0.7.0 ships no TinkerbellClusterTemplate.
        Provider::Tinkerbell => ("v1beta1", "TinkerbellCluster", None, "TinkerbellMachineTemplate"),
        Provider::Ionoscloud => (
            "v1alpha1",
            "IonosCloudCluster",
            Some("IonosCloudClusterTemplate"),
            "IonosCloudMachineTemplate",
        ),
        Provider::Azure => (
            "v1beta1",
            "AzureCluster",
            Some("AzureClusterTemplate"),
            "AzureMachineTemplate",
        ),
    };
    let api_version = api_version(version);
    Kinds {
        cluster: k(cluster, api_version),
        cluster_template: template.map(|t| k(t, api_version)),
        machine_template: k(machine, api_version),
    }
}

fn api_version(version: &str) -> &'static str {
    match version {
        "v1alpha1" => "infrastructure.cluster.x-k8s.io/v1alpha1",
        "v1alpha2" => "infrastructure.cluster.x-k8s.io/v1alpha2",
        "v1beta1" => "infrastructure.cluster.x-k8s.io/v1beta1",
        _ => "infrastructure.cluster.x-k8s.io/v1beta2",
    }
}

/// For whom an infrastructure cluster (or its class template) is rendered.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClusterContext<'a> {
    /// The tenant (also its namespace); `None` in a ClusterClass template.
    pub tenant: Option<&'a str>,
    /// The endpoint (the VIP, or the hostname behind a Gateway or an Ingress) and its port,
    /// when known at render time.
    pub endpoint: Option<(&'a str, u16)>,
    /// The endpoint is a hostname behind the platform's Gateway or Ingress: written into the
    /// infrastructure clusters Kamaji's provider only checks once set (Proxmox, whose endpoint
    /// the provider writes only while it is empty, `checkOrPatchGenericCluster`), so that a
    /// tenant moved onto it does not keep the old address there.
    pub routed: bool,
}

/// Where the provider's infrastructure cluster carries the API endpoint (the VIP) that
/// Kamaji's provider checks against the control plane's address, or patches only while empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EndpointField {
    /// `spec.controlPlaneEndpoint` `{host, port}`.
    ControlPlaneEndpoint,
    /// OpenStack's `spec.apiServerFixedIP` and `spec.apiServerPort`.
    FixedIp,
}

/// The field of the infrastructure cluster a known endpoint is written to (`None`: Kamaji's
/// provider writes it, or the provider has none).
pub(crate) fn endpoint_field(provider: Provider) -> Option<EndpointField> {
    match provider {
        Provider::Nutanix | Provider::MetalStack | Provider::Vsphere | Provider::Metal3 | Provider::Tinkerbell => {
            Some(EndpointField::ControlPlaneEndpoint)
        }
        Provider::Openstack => Some(EndpointField::FixedIp),
        _ => None,
    }
}

/// An infrastructure cluster's annotations and spec.
#[derive(Debug, Clone)]
pub(crate) struct ClusterParts {
    /// `metadata.annotations`.
    pub annotations: Vec<(&'static str, &'static str)>,
    /// `spec` (`Absent` when the kind needs none).
    pub spec: Node,
}

/// The infrastructure cluster's parts.
pub(crate) fn cluster_parts(infra: &Infrastructure, ctx: &ClusterContext<'_>) -> ClusterParts {
    match infra {
        Infrastructure::Proxmox(x) => proxmox::cluster(x, ctx),
        Infrastructure::Hetzner(x) => hetzner::cluster(x),
        Infrastructure::Kubevirt(_) => kubevirt::cluster(),
        Infrastructure::Nutanix(x) => nutanix::cluster(x, ctx),
        Infrastructure::MetalStack(x) => metal_stack::cluster(x, ctx),
        Infrastructure::Packet(x) => packet::cluster(x),
        Infrastructure::Aws(x) => aws::cluster(x),
        Infrastructure::Vsphere(x) => vsphere::cluster(x, ctx),
        Infrastructure::Openstack(x) => openstack::cluster(x, ctx),
        Infrastructure::Metal3(x) => metal3::cluster(x, ctx),
        Infrastructure::Tinkerbell(x) => tinkerbell::cluster(x, ctx),
        Infrastructure::Ionoscloud(x) => ionoscloud::cluster(x),
        Infrastructure::Azure(x) => azure::cluster(x),
    }
}

/// A tenant's infrastructure cluster object, named after the tenant.
pub(crate) fn cluster_object(p: &Platform, t: &Tenant) -> Object {
    let kind = kinds(t.provider()).cluster;
    let endpoint = t.endpoint(p);
    let ctx = ClusterContext {
        tenant: Some(&t.name),
        endpoint: endpoint.as_ref().map(|(host, port)| (host.as_str(), *port)),
        routed: t.exposure.hostname().is_some(),
    };
    let parts = cluster_parts(&t.infrastructure, &ctx);
    let mut metadata = tmeta(t, &t.name);
    if let Node::Map(m) = &mut metadata {
        m.push(("annotations".into(), annotations(&parts.annotations)));
    }
    Object {
        kind: kind.kind,
        name: t.name.clone(),
        body: map! {
            "apiVersion" => kind.api_version,
            "kind" => kind.kind,
            "metadata" => metadata,
            "spec" => parts.spec,
        },
    }
}

/// `metadata.annotations` from pairs (`Absent` when there are none).
pub(crate) fn annotations(pairs: &[(&'static str, &'static str)]) -> Node {
    Node::Map(pairs.iter().map(|(k, v)| ((*k).to_string(), Node::from(*v))).collect()).or_absent()
}

/// A worker's size.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Size {
    /// vCPUs.
    pub cpus: u32,
    /// Memory in MiB.
    pub memory_mib: u32,
    /// Boot disk in GiB.
    pub disk_gib: u32,
}

/// The machine template's `spec.template.spec`. `proxmox` is the pool's merged Proxmox settings
/// (the block's own when `None`); `tenant` is `None` in a ClusterClass.
pub(crate) fn machine_spec(
    infra: &Infrastructure,
    size: &Size,
    proxmox: Option<&ProxmoxMachine>,
    os: NodeOs,
    tenant: Option<&str>,
) -> Node {
    match infra {
        Infrastructure::Proxmox(x) => proxmox::machine(proxmox.unwrap_or(&x.machine), size, os),
        Infrastructure::Hetzner(x) => hetzner::machine(x, size),
        Infrastructure::Kubevirt(x) => kubevirt::machine(x, size),
        Infrastructure::Nutanix(x) => nutanix::machine(x, size),
        Infrastructure::MetalStack(x) => metal_stack::machine(x, size),
        Infrastructure::Packet(x) => packet::machine(x, size),
        Infrastructure::Aws(x) => aws::machine(x, size),
        Infrastructure::Vsphere(x) => vsphere::machine(x, size),
        Infrastructure::Openstack(x) => openstack::machine(x, size),
        Infrastructure::Metal3(x) => metal3::machine(x, size, tenant),
        Infrastructure::Tinkerbell(x) => tinkerbell::machine(x, size),
        Infrastructure::Ionoscloud(x) => ionoscloud::machine(x, size),
        Infrastructure::Azure(x) => azure::machine(x, size),
    }
}

/// What a provider's nodes need from kubeadm.
#[derive(Debug, Clone, Default)]
pub(crate) struct NodeWiring {
    /// The kubelet's `provider-id`, when the node can know it at boot; `None` when a controller
    /// (the provider's or its cloud controller manager) sets it.
    pub provider_id: Option<&'static str>,
    /// `cloud-provider: external`: the node waits for the provider's cloud controller manager.
    pub external_cloud: bool,
    /// Further kubelet flags.
    pub extra_args: Vec<(&'static str, String)>,
    /// Files written before kubeadm runs.
    pub files: Vec<Node>,
    /// `nodeRegistration.name`, when the provider needs a particular node name.
    pub node_name: Option<&'static str>,
    /// The nodes boot with Ignition instead of cloud-init.
    pub ignition: bool,
    /// Ignition only: a Container Linux Config merged into what kubeadm's bootstrap writes
    /// (`ignition.containerLinuxConfig.additionalConfig`).
    pub ignition_config: Option<&'static str>,
    /// Commands run before kubeadm.
    pub pre_kubeadm_commands: Vec<&'static str>,
    /// Commands run after kubeadm joined the node.
    pub post_kubeadm_commands: Vec<&'static str>,
    /// A file from a Secret the provider writes per machine template (named after it).
    pub machine_secret_file: Option<MachineSecretFile>,
    /// The user the tenant's SSH keys go to (`root` when `None`).
    pub user: Option<&'static str>,
}

/// A node file whose content is a key of the Secret `<machine template><suffix>`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MachineSecretFile {
    /// Appended to the machine template's name.
    pub suffix: &'static str,
    /// The Secret's key.
    pub key: &'static str,
    /// Where the file goes on the node.
    pub path: &'static str,
}

impl MachineSecretFile {
    /// The `files` entry for the pool whose machine template is `machine_template`.
    pub(crate) fn file(&self, machine_template: &str) -> Node {
        map! {
            "contentFrom" => map! {"secret" => map! {"name" => format!("{machine_template}{}", self.suffix), "key" => self.key}},
            "owner" => "root:root",
            "path" => self.path,
            "permissions" => "0644",
        }
    }
}

impl NodeWiring {
    /// The kubelet flags this wiring sets, in a fixed order.
    pub(crate) fn kubelet_args(&self) -> Vec<Node> {
        let mut args = Vec::new();
        if let Some(id) = self.provider_id {
            args.push(map! {"name" => "provider-id", "value" => id});
        }
        if self.external_cloud {
            args.push(map! {"name" => "cloud-provider", "value" => "external"});
        }
        for (name, value) in &self.extra_args {
            args.push(map! {"name" => *name, "value" => value});
        }
        args
    }
}

/// The provider's node wiring for a pool whose image boots `os`. The model admits Flatcar
/// only where it is wired here (`model/build/node_os.rs`).
pub(crate) fn node(infra: &Infrastructure, os: NodeOs) -> NodeWiring {
    match (infra, os) {
        (Infrastructure::Proxmox(_), NodeOs::Flatcar) => flatcar::proxmox(proxmox::node()),
        (Infrastructure::Proxmox(_), _) => proxmox::node(),
        (Infrastructure::Hetzner(x), NodeOs::Flatcar) => flatcar::hetzner(hetzner::node(x)),
        (Infrastructure::Hetzner(x), _) => hetzner::node(x),
        (Infrastructure::Kubevirt(_), _) => kubevirt::node(),
        (Infrastructure::Nutanix(_), _) => nutanix::node(),
        (Infrastructure::MetalStack(_), _) => metal_stack::node(),
        (Infrastructure::Packet(_), _) => packet::node(),
        (Infrastructure::Aws(_), _) => aws::node(),
        (Infrastructure::Vsphere(_), _) => vsphere::node(),
        (Infrastructure::Openstack(_), _) => openstack::node(),
        (Infrastructure::Metal3(_), _) => metal3::node(),
        (Infrastructure::Tinkerbell(_), _) => tinkerbell::node(),
        (Infrastructure::Ionoscloud(_), _) => ionoscloud::node(),
        (Infrastructure::Azure(_), _) => azure::node(),
    }
}

/// What a provider needs from the Kamaji control plane.
#[derive(Debug, Clone, Default)]
pub(crate) struct ControlPlaneWiring {
    /// Annotations on the API server's Service.
    pub service_annotations: Vec<(&'static str, String)>,
    /// The controller manager runs with `--cloud-provider=external`.
    pub external_cloud: bool,
}

impl ControlPlaneWiring {
    /// The controller manager leaves cloud work to the provider's CCM, and the Service needs
    /// nothing of its own.
    const EXTERNAL_CLOUD: ControlPlaneWiring = ControlPlaneWiring {
        service_annotations: Vec::new(),
        external_cloud: true,
    };
}

/// The provider's control plane wiring.
pub(crate) fn control_plane(infra: &Infrastructure) -> ControlPlaneWiring {
    match infra {
        Infrastructure::Hetzner(x) => hetzner::control_plane(x),
        // Their nodes wait for a cloud controller manager in the tenant.
        Infrastructure::Nutanix(_)
        | Infrastructure::MetalStack(_)
        | Infrastructure::Aws(_)
        | Infrastructure::Vsphere(_)
        | Infrastructure::Openstack(_)
        | Infrastructure::Azure(_) => ControlPlaneWiring::EXTERNAL_CLOUD,
        Infrastructure::Proxmox(_)
        | Infrastructure::Kubevirt(_)
        | Infrastructure::Packet(_)
        | Infrastructure::Metal3(_)
        | Infrastructure::Tinkerbell(_)
        | Infrastructure::Ionoscloud(_) => ControlPlaneWiring::default(),
    }
}

pub(crate) use metal3::DATA_TEMPLATE_REF as METAL3_DATA_TEMPLATE_REF;

/// Objects of the provider's own in the tenant's overlay (either mode).
pub(crate) fn extra_objects(t: &Tenant) -> Vec<Object> {
    match &t.infrastructure {
        Infrastructure::MetalStack(x) => metal_stack::firewall(t, x),
        Infrastructure::Metal3(_) => vec![metal3::data_template(t)],
        _ => Vec::new(),
    }
}
