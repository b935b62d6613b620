//! A tenant's (or a ClusterClass's) infrastructure, one variant per provider, defaults applied.

use crate::spec::raw::Provider;

/// Where a cluster's worker machines run.
#[derive(Debug, Clone)]
pub enum Infrastructure {
    /// Proxmox VE.
    Proxmox(ProxmoxCluster),
    /// Hetzner Cloud.
    Hetzner(HetznerCluster),
    /// KubeVirt.
    Kubevirt(KubevirtCluster),
    /// Nutanix AHV.
    Nutanix(NutanixCluster),
    /// metal-stack.
    MetalStack(MetalStackCluster),
    /// Equinix Metal (Packet).
    Packet(PacketCluster),
    /// Amazon EC2.
    Aws(AwsCluster),
    /// VMware vSphere.
    Vsphere(VsphereCluster),
    /// OpenStack.
    Openstack(OpenstackCluster),
    /// Metal³ bare metal.
    Metal3(Metal3Cluster),
    /// Tinkerbell bare metal.
    Tinkerbell(TinkerbellCluster),
    /// IONOS Cloud.
    Ionoscloud(IonoscloudCluster),
    /// Microsoft Azure.
    Azure(AzureCluster),
}

impl Infrastructure {
    /// The provider of this infrastructure.
    pub fn provider(&self) -> Provider {
        match self {
            Infrastructure::Proxmox(_) => Provider::Proxmox,
            Infrastructure::Hetzner(_) => Provider::Hetzner,
            Infrastructure::Kubevirt(_) => Provider::Kubevirt,
            Infrastructure::Nutanix(_) => Provider::Nutanix,
            Infrastructure::MetalStack(_) => Provider::MetalStack,
            Infrastructure::Packet(_) => Provider::Packet,
            Infrastructure::Aws(_) => Provider::Aws,
            Infrastructure::Vsphere(_) => Provider::Vsphere,
            Infrastructure::Openstack(_) => Provider::Openstack,
            Infrastructure::Metal3(_) => Provider::Metal3,
            Infrastructure::Tinkerbell(_) => Provider::Tinkerbell,
            Infrastructure::Ionoscloud(_) => Provider::Ionoscloud,
            Infrastructure::Azure(_) => Provider::Azure,
        }
    }
}

/// Cluster-wide Proxmox settings.
#[derive(Debug, Clone)]
pub struct ProxmoxCluster {
    /// DNS servers.
    pub dns_servers: Vec<String>,
    /// Allowed nodes.
    pub allowed_nodes: Vec<String>,
    /// Static IPv4 pool for nodes.
    pub ipv4: Option<(Vec<String>, String, u8)>,
    /// Credentials Secret.
    pub credentials_secret: Option<String>,
    /// The machine settings of pools without an override.
    pub machine: ProxmoxMachine,
}

/// Per-pool Proxmox machine settings (cluster block merged with the pool override).
#[derive(Debug, Clone)]
pub struct ProxmoxMachine {
    /// Source node.
    pub source_node: String,
    /// Template VM ID.
    pub template_id: u32,
    /// Bridge.
    pub bridge: String,
    /// Allowed nodes.
    pub allowed_nodes: Vec<String>,
}

/// The Service annotation with which the hcloud cloud controller manager places a load
/// balancer: Kamaji's API server Service carries it on Hetzner.
pub const LOCATION_ANNOTATION: &str = "load-balancer.hetzner.cloud/location";

/// Hetzner Cloud settings.
#[derive(Debug, Clone)]
pub struct HetznerCluster {
    /// Location, e.g. `fsn1`.
    pub region: String,
    /// SSH key names in the project.
    pub ssh_keys: Vec<String>,
    /// The Secret with the API token (key `hcloud`).
    pub secret: String,
    /// Server image.
    pub image_name: String,
    /// Server type.
    pub instance_type: String,
    /// Private network zone, if any.
    pub network_zone: Option<String>,
    /// Name servers for the kubelet's resolv.conf; empty for the server's own.
    pub nameservers: Vec<String>,
}

/// KubeVirt settings.
#[derive(Debug, Clone)]
pub struct KubevirtCluster {
    /// Container disk image.
    pub image: String,
    /// Storage class of a persistent root disk, if any.
    pub storage_class: Option<String>,
}

/// A Nutanix object named by name or by UUID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NutanixRef {
    /// By name.
    Name(String),
    /// By UUID.
    Uuid(String),
}

/// Nutanix settings.
#[derive(Debug, Clone)]
pub struct NutanixCluster {
    /// Prism Central address.
    pub address: String,
    /// Prism Central port.
    pub port: u16,
    /// Skip TLS verification.
    pub insecure: bool,
    /// The credentials Secret.
    pub credentials_secret: String,
    /// Prism Element cluster.
    pub cluster: NutanixRef,
    /// Subnet.
    pub subnet: NutanixRef,
    /// Image.
    pub image: NutanixRef,
}

/// metal-stack settings.
#[derive(Debug, Clone)]
pub struct MetalStackCluster {
    /// Project ID.
    pub project_id: String,
    /// Partition.
    pub partition: String,
    /// Node network ID.
    pub network: String,
    /// Machine image.
    pub image: String,
    /// Machine size.
    pub size: String,
    /// The firewall, if any.
    pub firewall: Option<MetalStackFirewall>,
}

/// A metal-stack firewall.
#[derive(Debug, Clone)]
pub struct MetalStackFirewall {
    /// Image.
    pub image: String,
    /// Size.
    pub size: String,
    /// External networks.
    pub networks: Vec<String>,
}

/// Equinix Metal settings.
#[derive(Debug, Clone)]
pub struct PacketCluster {
    /// Project ID.
    pub project_id: String,
    /// Metro.
    pub metro: String,
    /// Device plan.
    pub plan: String,
    /// Operating system.
    pub os: String,
}

/// AWS settings.
#[derive(Debug, Clone)]
pub struct AwsCluster {
    /// Region.
    pub region: String,
    /// AMI ID.
    pub ami: String,
    /// Instance type.
    pub instance_type: String,
    /// EC2 key pair, if any.
    pub ssh_key_name: Option<String>,
}

/// How CAPV authenticates to vCenter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VsphereIdentity {
    /// A Secret in the tenant namespace (`username`, `password`).
    Secret(String),
    /// A cluster-scoped `VSphereClusterIdentity`.
    ClusterIdentity(String),
}

/// vSphere settings.
#[derive(Debug, Clone)]
pub struct VsphereCluster {
    /// vCenter.
    pub server: String,
    /// vCenter's certificate fingerprint.
    pub thumbprint: Option<String>,
    /// CAPV's identity.
    pub identity: VsphereIdentity,
    /// The Secret the vSphere cloud provider reads (`username`, `password`), when known.
    pub cloud_provider_secret: Option<String>,
    /// Datacenter.
    pub datacenter: String,
    /// Datastore.
    pub datastore: Option<String>,
    /// Port group.
    pub network: String,
    /// VM template.
    pub template: String,
    /// VM folder.
    pub folder: Option<String>,
    /// Resource pool.
    pub resource_pool: Option<String>,
    /// Storage policy.
    pub storage_policy: Option<String>,
    /// `fullClone` or `linkedClone`.
    pub clone_mode: String,
}

/// An OpenStack object named by name or by UUID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenstackRef {
    /// By name.
    Name(String),
    /// By UUID.
    Id(String),
}

/// OpenStack settings.
#[derive(Debug, Clone)]
pub struct OpenstackCluster {
    /// The `clouds.yaml` Secret.
    pub credentials_secret: String,
    /// The `clouds.yaml` entry.
    pub cloud_name: String,
    /// The region, if named.
    pub region: Option<String>,
    /// Flavor.
    pub flavor: String,
    /// Image.
    pub image: OpenstackRef,
    /// An existing network, or `None` for one CAPO creates from `node_cidr`.
    pub network: Option<OpenstackRef>,
    /// The CIDR of the network CAPO creates.
    pub node_cidr: String,
    /// DNS servers of that network's subnet.
    pub dns_nameservers: Vec<String>,
    /// The external network, or `None` for none.
    pub external_network: Option<OpenstackRef>,
    /// Nova key pair.
    pub ssh_key_name: Option<String>,
    /// Boot volume type, when booting from a volume.
    pub root_volume_type: Option<String>,
}

/// Metal³ settings.
#[derive(Debug, Clone)]
pub struct Metal3Cluster {
    /// Image URL.
    pub image_url: String,
    /// Image checksum (or its URL).
    pub checksum: String,
    /// `sha256`, `sha512` or `md5`.
    pub checksum_type: String,
    /// `raw`, `qcow2`, ...
    pub format: String,
    /// Labels of the hosts to choose.
    pub host_selector: std::collections::BTreeMap<String, String>,
}

/// Tinkerbell settings.
#[derive(Debug, Clone)]
pub struct TinkerbellCluster {
    /// Labels of the `Hardware` to choose.
    pub hardware_selector: std::collections::BTreeMap<String, String>,
    /// Image registry.
    pub image_registry: Option<String>,
    /// OS distribution.
    pub os_distro: Option<String>,
    /// OS version.
    pub os_version: Option<String>,
    /// Boot mode.
    pub boot_mode: Option<String>,
}

/// An IONOS Cloud image: by UUID, or by labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IonosImage {
    /// By UUID.
    Id(String),
    /// By labels.
    Selector(std::collections::BTreeMap<String, String>),
}

/// IONOS Cloud settings.
#[derive(Debug, Clone)]
pub struct IonoscloudCluster {
    /// The API token Secret.
    pub credentials_secret: String,
    /// Data center UUID.
    pub datacenter_id: String,
    /// Boot image.
    pub image: IonosImage,
    /// `VCPU` or `ENTERPRISE`.
    pub server_type: String,
    /// Disk type.
    pub disk_type: Option<String>,
    /// Availability zone.
    pub availability_zone: Option<String>,
}

/// Azure settings.
#[derive(Debug, Clone)]
pub struct AzureCluster {
    /// Region.
    pub location: String,
    /// The `AzureClusterIdentity`.
    pub identity: String,
    /// Its namespace, if not the tenant's.
    pub identity_namespace: Option<String>,
    /// Subscription.
    pub subscription_id: Option<String>,
    /// Resource group.
    pub resource_group: Option<String>,
    /// VM size.
    pub vm_size: String,
    /// The OpenSSH public key, as written.
    pub ssh_public_key: String,
}
