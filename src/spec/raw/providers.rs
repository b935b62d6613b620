//! The provider blocks of `spec.infrastructure` (and of a ClusterClass in `kaas.yaml`), one per
//! infrastructure provider, as written. Field names follow the upstream objects they feed (see
//! docs/reference/tenant.md); credentials are always the name of a Secret, never a value.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `spec.infrastructure`: the provider and exactly its block.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Infrastructure {
    /// The infrastructure provider of the worker machines.
    pub provider: Provider,
    /// Settings for `provider: proxmox`.
    pub proxmox: Option<Proxmox>,
    /// Settings for `provider: hetzner`.
    pub hetzner: Option<Hetzner>,
    /// Settings for `provider: kubevirt`.
    pub kubevirt: Option<Kubevirt>,
    /// Settings for `provider: nutanix`.
    pub nutanix: Option<Nutanix>,
    /// Settings for `provider: metal-stack`.
    #[serde(rename = "metal-stack")]
    pub metal_stack: Option<MetalStack>,
    /// Settings for `provider: packet`.
    pub packet: Option<Packet>,
    /// Settings for `provider: aws`.
    pub aws: Option<Aws>,
    /// Settings for `provider: vsphere`.
    pub vsphere: Option<Vsphere>,
    /// Settings for `provider: openstack`.
    pub openstack: Option<Openstack>,
    /// Settings for `provider: metal3`.
    pub metal3: Option<Metal3>,
    /// Settings for `provider: tinkerbell`.
    pub tinkerbell: Option<Tinkerbell>,
    /// Settings for `provider: ionoscloud`.
    pub ionoscloud: Option<Ionoscloud>,
    /// Settings for `provider: azure`.
    pub azure: Option<Azure>,
}

impl Infrastructure {
    /// The names of the provider blocks that are written, in declaration order.
    pub fn blocks(&self) -> Vec<Provider> {
        let mut out = Vec::new();
        let written = [
            (Provider::Proxmox, self.proxmox.is_some()),
            (Provider::Hetzner, self.hetzner.is_some()),
            (Provider::Kubevirt, self.kubevirt.is_some()),
            (Provider::Nutanix, self.nutanix.is_some()),
            (Provider::MetalStack, self.metal_stack.is_some()),
            (Provider::Packet, self.packet.is_some()),
            (Provider::Aws, self.aws.is_some()),
            (Provider::Vsphere, self.vsphere.is_some()),
            (Provider::Openstack, self.openstack.is_some()),
            (Provider::Metal3, self.metal3.is_some()),
            (Provider::Tinkerbell, self.tinkerbell.is_some()),
            (Provider::Ionoscloud, self.ionoscloud.is_some()),
            (Provider::Azure, self.azure.is_some()),
        ];
        for (p, present) in written {
            if present {
                out.push(p);
            }
        }
        out
    }
}

/// An infrastructure provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Provider {
    /// Proxmox VE (ionos-cloud/cluster-api-provider-proxmox, CAPMOX).
    Proxmox,
    /// Hetzner Cloud (syself/cluster-api-provider-hetzner, CAPH).
    Hetzner,
    /// KubeVirt virtual machines (kubernetes-sigs/cluster-api-provider-kubevirt, CAPK).
    Kubevirt,
    /// Nutanix AHV (nutanix-cloud-native/cluster-api-provider-nutanix, CAPX).
    Nutanix,
    /// metal-stack bare metal (metal-stack/cluster-api-provider-metal-stack, CAPMS).
    MetalStack,
    /// Equinix Metal, formerly Packet (kubernetes-sigs/cluster-api-provider-packet, CAPP);
    /// deprecated upstream.
    Packet,
    /// Amazon EC2 (kubernetes-sigs/cluster-api-provider-aws, CAPA).
    Aws,
    /// VMware vSphere (kubernetes-sigs/cluster-api-provider-vsphere, CAPV).
    Vsphere,
    /// OpenStack (kubernetes-sigs/cluster-api-provider-openstack, CAPO).
    Openstack,
    /// Bare metal through Metal³ and Ironic (metal3-io/cluster-api-provider-metal3, CAPM3).
    Metal3,
    /// Bare metal through Tinkerbell (tinkerbell/cluster-api-provider-tinkerbell, CAPT).
    Tinkerbell,
    /// IONOS Cloud (ionos-cloud/cluster-api-provider-ionoscloud, CAPIC).
    Ionoscloud,
    /// Microsoft Azure virtual machines (kubernetes-sigs/cluster-api-provider-azure, CAPZ).
    Azure,
}

impl Provider {
    /// Every provider, in the order the docs list them.
    pub const ALL: [Provider; 13] = [
        Provider::Proxmox,
        Provider::Hetzner,
        Provider::Kubevirt,
        Provider::Nutanix,
        Provider::MetalStack,
        Provider::Packet,
        Provider::Aws,
        Provider::Vsphere,
        Provider::Openstack,
        Provider::Metal3,
        Provider::Tinkerbell,
        Provider::Ionoscloud,
        Provider::Azure,
    ];

    /// The name used in `kaas.yaml`, in the tenant file and by clusterctl.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Proxmox => "proxmox",
            Provider::Hetzner => "hetzner",
            Provider::Kubevirt => "kubevirt",
            Provider::Nutanix => "nutanix",
            Provider::MetalStack => "metal-stack",
            Provider::Packet => "packet",
            Provider::Aws => "aws",
            Provider::Vsphere => "vsphere",
            Provider::Openstack => "openstack",
            Provider::Metal3 => "metal3",
            Provider::Tinkerbell => "tinkerbell",
            Provider::Ionoscloud => "ionoscloud",
            Provider::Azure => "azure",
        }
    }

    /// Why a deployed tenant's API endpoint can never move on this provider, acknowledged or
    /// not (its webhook keeps the infrastructure cluster's endpoint once set, so Kamaji's patch
    /// of a new one would fail for good), or `None` where a move can be acknowledged:
    /// cluster-api-provider-openstack v0.14.7 `pkg/webhooks/openstackcluster_webhook.go`
    /// (`ValidateUpdate`: `apiServerFixedIP` set once, `controlPlaneEndpoint` never changed once
    /// it has a host) and cluster-api-provider-azure v1.26.0
    /// `internal/webhooks/azurecluster_webhook.go`.
    pub fn fixed_endpoint(self) -> Option<&'static str> {
        match self {
            Provider::Openstack => Some("CAPO refuses a change of `apiServerFixedIP` once it is set"),
            Provider::Azure => {
                Some("CAPZ refuses a change of the AzureCluster's `controlPlaneEndpoint` once it is set")
            }
            _ => None,
        }
    }

    /// The provider named `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// Every provider name, comma-separated in backticks, for hints.
    pub fn names() -> String {
        Provider::ALL
            .iter()
            .map(|p| format!("`{}`", p.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// `spec.infrastructure.proxmox`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Proxmox {
    /// The Proxmox node that holds the VM template.
    pub source_node: String,
    /// The VM template's ID.
    #[serde(rename = "templateID")]
    pub template_id: u32,
    /// DNS servers of the nodes.
    pub dns_servers: Vec<String>,
    /// Proxmox nodes the VMs may run on (default: `[sourceNode]`).
    #[serde(default)]
    pub allowed_nodes: Vec<String>,
    /// The bridge of the VMs' first NIC (default `vmbr0`).
    pub bridge: Option<String>,
    /// Static IPv4 addresses for the nodes.
    pub ipv4: Option<Ipv4Config>,
    /// The Secret holding the Proxmox API credentials (in the tenant namespace).
    pub credentials_secret: Option<String>,
}

/// `proxmox.ipv4`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ipv4Config {
    /// Address ranges (`10.0.5.10-10.0.5.60`) or CIDRs.
    pub addresses: Vec<String>,
    /// The default gateway.
    pub gateway: String,
    /// The prefix length of the node network.
    pub prefix: u8,
}

/// A per-pool override of the Proxmox block.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProxmoxPool {
    /// Overrides `sourceNode`.
    pub source_node: Option<String>,
    /// Overrides `templateID`.
    #[serde(rename = "templateID")]
    pub template_id: Option<u32>,
    /// Overrides `bridge`.
    pub bridge: Option<String>,
    /// Overrides `allowedNodes`.
    pub allowed_nodes: Option<Vec<String>>,
}

/// `spec.infrastructure.hetzner`: Hetzner Cloud servers (CAPH `HCloudMachine`s).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Hetzner {
    /// The Hetzner Cloud location: `fsn1`, `nbg1`, `hel1`, `ash`, `hil` or `sin`. Also the
    /// location of the API server's load balancer when the management cluster runs on Hetzner.
    pub region: String,
    /// Names of SSH keys in the Hetzner Cloud project, put on every server.
    pub ssh_keys: Vec<String>,
    /// The Secret (in the tenant namespace) whose key `hcloud` holds the Hetzner Cloud API token.
    pub hetzner_secret: String,
    /// The server image (default `ubuntu-24.04`).
    pub image_name: Option<String>,
    /// The server type (default `cpx31`).
    pub instance_type: Option<String>,
    /// Put the servers on a private network in this zone: `eu-central`, `us-east`, `us-west`
    /// or `ap-southeast` (default: public network only).
    pub network_zone: Option<String>,
    /// Name servers the kubelet hands to pods, written to `/etc/kubernetes/resolv.conf` (default:
    /// the server's own resolver).
    pub nameservers: Option<Vec<String>>,
}

/// `spec.infrastructure.kubevirt`: KubeVirt virtual machines in the management cluster.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Kubevirt {
    /// The node image: a container disk such as `quay.io/capk/ubuntu-2404-container-disk:v1.33.4`.
    pub image: String,
    /// Give each VM a persistent root disk of `machine.diskGiB` in this storage class, imported
    /// from `image` (default: an ephemeral container disk).
    pub storage_class: Option<String>,
}

/// `spec.infrastructure.nutanix`: Nutanix AHV virtual machines.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Nutanix {
    /// The Prism Central that manages the cluster.
    pub prism_central: PrismCentral,
    /// The Prism Element cluster the VMs run on: its name, or its UUID.
    pub cluster: String,
    /// The subnet of the VMs' NIC: its name, or its UUID.
    pub subnet: String,
    /// The VM image: its name, or its UUID.
    pub image: String,
}

/// `nutanix.prismCentral`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PrismCentral {
    /// Host name or IP address of Prism Central.
    pub address: String,
    /// Its port (default 9440).
    pub port: Option<u16>,
    /// The Secret (in the tenant namespace) with Prism Central credentials in its `credentials`
    /// key, and `username` and `password` for the Nutanix cloud controller manager, whose chart
    /// writes its own Secret in the tenant cluster from them.
    pub credentials_secret: String,
    /// Skip TLS verification of Prism Central (default false).
    pub insecure: Option<bool>,
}

/// `spec.infrastructure.metal-stack`: metal-stack bare-metal machines.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MetalStack {
    /// The metal-stack project.
    #[serde(rename = "projectID")]
    pub project_id: String,
    /// The partition the machines run in.
    pub partition: String,
    /// The ID of the node network.
    pub network: String,
    /// The machine image, e.g. `ubuntu-24.04`.
    pub image: String,
    /// The machine size, e.g. `c1-xlarge-x86`.
    pub size: String,
    /// A firewall in front of the node network.
    pub firewall: Option<MetalStackFirewall>,
}

/// `metal-stack.firewall`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetalStackFirewall {
    /// The firewall image, e.g. `firewall-ubuntu-3.0`.
    pub image: String,
    /// The firewall machine size.
    pub size: String,
    /// External networks the firewall routes to, e.g. `[internet]`.
    pub networks: Vec<String>,
}

/// `spec.infrastructure.packet`: Equinix Metal devices (deprecated upstream).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Packet {
    /// The Equinix Metal project.
    #[serde(rename = "projectID")]
    pub project_id: String,
    /// The metro, e.g. `da`.
    pub metro: String,
    /// The device plan (default `c3.small.x86`).
    pub plan: Option<String>,
    /// The operating system (default `ubuntu_24_04`).
    pub os: Option<String>,
}

/// `spec.infrastructure.aws`: Amazon EC2 instances.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Aws {
    /// The AWS region, e.g. `eu-central-1`.
    pub region: String,
    /// The AMI ID of the node image, e.g. `ami-0123456789abcdef0`.
    pub ami: String,
    /// The instance type (default `t3.large`).
    pub instance_type: Option<String>,
    /// The name of an EC2 key pair put on every instance.
    pub ssh_key_name: Option<String>,
}

/// `spec.infrastructure.vsphere`: VMware vSphere virtual machines cloned from a template.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Vsphere {
    /// The vCenter's host name or IP address.
    pub server: String,
    /// The SHA-1 (or SHA-256) fingerprint of vCenter's TLS certificate, e.g.
    /// `AB:CD:...`: set it when vCenter's certificate is not signed by a trusted CA.
    pub thumbprint: Option<String>,
    /// The Secret (in the tenant namespace) with vCenter's `username` and `password`: CAPV's
    /// `identityRef` and, through the `vsphere-cpi` add-on wiring, the vSphere cloud provider's
    /// credentials. Exclusive with `identity`.
    pub credentials_secret: Option<String>,
    /// A `VSphereClusterIdentity` (cluster-scoped, made by the platform) CAPV uses instead of a
    /// Secret per tenant. Exclusive with `credentialsSecret`; the cloud provider then reads the
    /// Secret named by `cloudProviderSecret`.
    pub identity: Option<String>,
    /// The Secret (in the tenant namespace, keys `username` and `password`) the vSphere cloud
    /// provider reads when CAPV uses an `identity` (default: `credentialsSecret`).
    pub cloud_provider_secret: Option<String>,
    /// The datacenter the VMs run in.
    pub datacenter: String,
    /// The datastore of the VMs' disks (default: the template's).
    pub datastore: Option<String>,
    /// The port group of the VMs' NIC (addresses by DHCP), e.g. `VM Network`.
    pub network: String,
    /// The VM template the machines are cloned from, e.g. `ubuntu-2404-kube-v1.34.4`.
    pub template: String,
    /// The VM folder (default: the datacenter's).
    pub folder: Option<String>,
    /// The resource pool, e.g. `cluster1/Resources` (default: the cluster's root pool).
    pub resource_pool: Option<String>,
    /// A storage policy for the VMs' disks.
    pub storage_policy: Option<String>,
    /// `fullClone` (default) or `linkedClone` (faster, needs a template with a snapshot).
    pub clone_mode: Option<String>,
}

/// `spec.infrastructure.openstack`: OpenStack (Nova) servers.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Openstack {
    /// The Secret (in the tenant namespace) whose key `clouds.yaml` holds an OpenStack
    /// `clouds.yaml` (and optionally `cacert`): CAPO's `identityRef`, and the cloud config of the
    /// `openstack-ccm` and `openstack-cinder-csi` add-on wirings.
    pub credentials_secret: String,
    /// The entry of that `clouds.yaml` to use (default `openstack`).
    pub cloud_name: Option<String>,
    /// The region, when `clouds.yaml` names several.
    pub region: Option<String>,
    /// The server flavor, e.g. `m1.large`: it decides the size, as on Hetzner.
    pub flavor: String,
    /// The Glance image: its name, or its UUID.
    pub image: String,
    /// The network of the servers: its name, or its UUID (default: a network and subnet CAPO
    /// creates from `nodeCIDR`).
    pub network: Option<String>,
    /// The CIDR of the network CAPO creates when `network` is not given (default
    /// `10.6.0.0/24`).
    #[serde(rename = "nodeCIDR")]
    pub node_cidr: Option<String>,
    /// DNS servers of the subnet CAPO creates.
    #[serde(default)]
    pub dns_nameservers: Vec<String>,
    /// The external network (name or UUID) for the router CAPO creates; without it the servers
    /// are on `network` only (`disableExternalNetwork`).
    pub external_network: Option<String>,
    /// The name of a Nova key pair put on every server.
    pub ssh_key_name: Option<String>,
    /// Boot from a Cinder volume of `machine.diskGiB` of this volume type (default: the
    /// flavor's local disk).
    pub root_volume_type: Option<String>,
}

/// `spec.infrastructure.metal3`: bare-metal hosts (`BareMetalHost`s of the tenant's namespace)
/// provisioned by Metal³ with a disk image.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Metal3 {
    /// The disk image written to the hosts.
    pub image: Metal3Image,
    /// Labels a `BareMetalHost` must carry to be chosen, e.g. `{pool: tenant-a}` (default: any
    /// free host of the tenant's namespace).
    #[serde(default)]
    pub host_selector: std::collections::BTreeMap<String, String>,
}

/// `metal3.image`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Metal3Image {
    /// Where Ironic downloads the image, e.g. `http://172.22.0.1/images/ubuntu-2404-kube-v1.33.4.raw`.
    pub url: String,
    /// The image's checksum, or the URL of a checksum file.
    pub checksum: String,
    /// `sha256` (default), `sha512` or `md5`.
    pub checksum_type: Option<String>,
    /// `raw` (default), `qcow2`, `vdi`, `vmdk` or `live-iso`.
    pub format: Option<String>,
}

/// `spec.infrastructure.tinkerbell`: bare-metal `Hardware` provisioned by Tinkerbell.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Tinkerbell {
    /// Labels a `Hardware` must carry to be chosen, e.g. `{tenant: acme}`. Required: without it
    /// CAPT takes any free `Hardware` of the whole management cluster.
    pub hardware_selector: std::collections::BTreeMap<String, String>,
    /// The registry of the OS images (default CAPT's `ghcr.io/tinkerbell/cluster-api-provider-tinkerbell`).
    pub image_registry: Option<String>,
    /// The OS distribution of the image (default `ubuntu`).
    pub os_distro: Option<String>,
    /// The OS version of the image, e.g. `24.04` (default CAPT's `20.04`).
    pub os_version: Option<String>,
    /// How the machines boot: `netboot`, `isoboot`, `iso` or `customboot` (default: CAPT's).
    pub boot_mode: Option<String>,
}

/// `spec.infrastructure.ionoscloud`: IONOS Cloud servers.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Ionoscloud {
    /// The Secret (in the tenant namespace) whose key `token` holds an IONOS Cloud API token
    /// (optional keys `apiURL`, `caBundle`): CAPIC's `credentialsRef`.
    pub credentials_secret: String,
    /// The UUID of the data center the servers run in.
    #[serde(rename = "datacenterID")]
    pub datacenter_id: String,
    /// The UUID of the boot image. Exclusive with `imageSelector`.
    pub image: Option<String>,
    /// Labels that select the boot image (CAPIC adds the machine's Kubernetes version), e.g.
    /// `{os: ubuntu}`. Exclusive with `image`.
    #[serde(default)]
    pub image_selector: std::collections::BTreeMap<String, String>,
    /// The server type: `VCPU` (default, as CAPIC's templates) or `ENTERPRISE` (dedicated cores).
    #[serde(rename = "type")]
    pub server_type: Option<String>,
    /// The disk type: `HDD` (default), `SSD Standard` or `SSD Premium`.
    pub disk_type: Option<String>,
    /// The availability zone: `AUTO` (default), `ZONE_1` or `ZONE_2`.
    pub availability_zone: Option<String>,
}

/// `spec.infrastructure.azure`: Azure virtual machines.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Azure {
    /// The Azure region, e.g. `westeurope`.
    pub location: String,
    /// The `AzureClusterIdentity` CAPZ authenticates with (made by the platform; its
    /// `allowedNamespaces` must admit the tenant's namespace).
    pub identity: String,
    /// The namespace of that identity (default: the tenant's).
    pub identity_namespace: Option<String>,
    /// The subscription ID (default: CAPZ's `AZURE_SUBSCRIPTION_ID`).
    #[serde(rename = "subscriptionID")]
    pub subscription_id: Option<String>,
    /// The resource group CAPZ creates the network and VMs in (default: the tenant's name).
    pub resource_group: Option<String>,
    /// The VM size, e.g. `Standard_D4s_v5` (default `Standard_D2s_v3`): it decides vCPUs and
    /// memory, as on Hetzner.
    pub vm_size: Option<String>,
    /// An OpenSSH public key put on every VM (CAPZ needs one: without it its webhook makes a
    /// new random key on every apply, and refuses the changed template).
    pub ssh_public_key: String,
}

/// A machine's size: `workers[].machine` of a tenant, `machine` of a platform ClusterClass.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    /// vCPUs (default 2).
    pub cpus: Option<u32>,
    /// Memory in MiB (default 4096).
    #[serde(rename = "memoryMiB")]
    pub memory_mib: Option<u32>,
    /// Boot disk in GiB (default 40).
    #[serde(rename = "diskGiB")]
    pub disk_gib: Option<u32>,
}
