//! Add-ons installed into tenant clusters, as written: the platform's catalog and defaults
//! (`kaas.yaml` `spec.addons`) and a tenant's choice (`spec.addons` of a tenant file).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::AnyValue;

/// `spec.addons` of the Platform.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlatformAddons {
    /// The add-ons tenants may have, by name (a DNS-1123 label): each one Helm chart.
    #[serde(default)]
    pub catalog: BTreeMap<String, CatalogAddon>,
    /// What a tenant gets when its file says nothing.
    #[serde(default)]
    pub defaults: AddonDefaults,
}

/// `spec.addons.catalog.<name>`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CatalogAddon {
    /// `cni` (installed first; a tenant has exactly one), `ccm` (a cloud controller manager,
    /// installed after the CNI) or `other` (installed last).
    pub kind: AddonKind,
    /// A Helm repository URL (`https://...`) or an OCI one (`oci://...`).
    pub repository: String,
    /// The chart's name in that repository, e.g. `cilium`.
    pub chart: String,
    /// The chart version, e.g. `1.19.6`.
    pub version: String,
    /// The namespace in the tenant cluster the chart is installed into (default `kube-system`).
    pub namespace: Option<String>,
    /// What kaas-gitops writes into the values from the tenant (see docs/addons.md):
    /// `cilium` (pod CIDR, API endpoint, kube-proxy replacement), `nutanix-ccm` (Prism
    /// Central endpoint and credentials Secret), `vsphere-cpi` (vCenter and credentials),
    /// `openstack-ccm` (cloud config and cluster name), `openstack-cinder-csi` (the cloud
    /// config the CCM writes), `azure-ccm` (cluster name and pod CIDRs) or `azure-disk-csi`
    /// (Linux nodes only, controller replicas the workers can hold). Without it the chart gets
    /// `values` only.
    pub wiring: Option<AddonWiring>,
    /// Whether this CNI replaces kube-proxy: Kamaji's kube-proxy add-on is then turned off
    /// (default `false`).
    #[serde(default)]
    pub replaces_kube_proxy: bool,
    /// The chart's values for every tenant (a tenant's `spec.addons.values.<name>` is merged
    /// over them). Never literal secrets.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, AnyValue>")]
    pub values: BTreeMap<String, Value>,
    /// Images the chart runs, pinned by digest from kaas.lock like every other image, by the
    /// dotted path of their block in the values (e.g. `image` or `operator.image`).
    #[serde(default)]
    pub images: BTreeMap<String, AddonImage>,
}

/// `spec.addons.catalog.<name>.images.<path>`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AddonImage {
    /// e.g. `quay.io/cilium/cilium`.
    pub repository: String,
    /// The tag to pin, e.g. `v1.19.6`.
    pub tag: String,
    /// How the chart takes a digest: `digest` (separate `digest` and `useDigest: true` keys, as
    /// Cilium's chart has), `tag` (default: `repository` and `tag: <tag>@sha256:...`),
    /// `image-tag` (the repository in `image`, as the vSphere CPI chart's `daemonset` block has)
    /// or `repository-name-tag` (`imageRepository`, `imageName`, `imageTag`, as the Azure cloud
    /// provider's chart has).
    pub digest_format: Option<DigestFormat>,
}

/// How a chart takes an image's digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DigestFormat {
    /// `tag: v1.2.3@sha256:...`.
    Tag,
    /// `tag: v1.2.3`, `digest: sha256:...`, `useDigest: true`.
    Digest,
    /// `image: <repository>`, `tag: v1.2.3@sha256:...`.
    #[serde(rename = "image-tag")]
    ImageTag,
    /// `imageRepository: <registry/path>`, `imageName: <last segment>`,
    /// `imageTag: v1.2.3@sha256:...`.
    #[serde(rename = "repository-name-tag")]
    RepositoryNameTag,
}

/// The kind of an add-on, which decides its place in the install order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AddonKind {
    /// A CNI plugin: first; exactly one per tenant (or none with `cni: none`).
    Cni,
    /// A cloud controller manager: after the CNI.
    Ccm,
    /// Anything else: after the CNI and the CCMs.
    Other,
}

/// The tenant values a renderer knows how to write into a chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AddonWiring {
    /// Cilium: `ipam.operator.clusterPoolIPv4PodCIDRList`, `k8sServiceHost`/`k8sServicePort`
    /// and `kubeProxyReplacement`.
    Cilium,
    /// The Nutanix cloud controller manager: Prism Central's address and credentials Secret.
    NutanixCcm,
    /// The vSphere cloud provider (kubernetes/cloud-provider-vsphere chart `vsphere-cpi`):
    /// vCenter, datacenter and thumbprint, credentials from the tenant's Secret.
    VsphereCpi,
    /// The OpenStack cloud controller manager (chart `openstack-cloud-controller-manager`):
    /// its `cloud.conf` from the tenant's credentials Secret, the cluster's name.
    OpenstackCcm,
    /// OpenStack Cinder CSI (chart `openstack-cinder-csi`): the cloud config the
    /// `openstack-ccm` add-on writes into the tenant.
    OpenstackCinderCsi,
    /// The Azure cloud provider (kubernetes-sigs/cloud-provider-azure chart
    /// `cloud-provider-azure`): the cluster's name and pod CIDRs, on workers.
    AzureCcm,
    /// The Azure Disk CSI driver (kubernetes-sigs/azuredisk-csi-driver chart
    /// `azuredisk-csi-driver`): Linux nodes only, as many controller replicas as the workers
    /// can hold; the cloud config is the `azure.json` CAPZ writes on every node.
    AzureDiskCsi,
}

impl AddonWiring {
    /// The name as written in `kaas.yaml`.
    pub fn as_str(self) -> &'static str {
        match self {
            AddonWiring::Cilium => "cilium",
            AddonWiring::NutanixCcm => "nutanix-ccm",
            AddonWiring::VsphereCpi => "vsphere-cpi",
            AddonWiring::OpenstackCcm => "openstack-ccm",
            AddonWiring::OpenstackCinderCsi => "openstack-cinder-csi",
            AddonWiring::AzureCcm => "azure-ccm",
            AddonWiring::AzureDiskCsi => "azure-disk-csi",
        }
    }

    /// The kind of add-on the wiring is for.
    pub fn kind(self) -> AddonKind {
        match self {
            AddonWiring::Cilium => AddonKind::Cni,
            AddonWiring::NutanixCcm | AddonWiring::VsphereCpi | AddonWiring::OpenstackCcm | AddonWiring::AzureCcm => {
                AddonKind::Ccm
            }
            AddonWiring::OpenstackCinderCsi | AddonWiring::AzureDiskCsi => AddonKind::Other,
        }
    }

    /// The infrastructure provider whose tenants alone can have it (`None`: any).
    pub fn provider(self) -> Option<super::Provider> {
        match self {
            AddonWiring::Cilium => None,
            AddonWiring::NutanixCcm => Some(super::Provider::Nutanix),
            AddonWiring::VsphereCpi => Some(super::Provider::Vsphere),
            AddonWiring::OpenstackCcm | AddonWiring::OpenstackCinderCsi => Some(super::Provider::Openstack),
            AddonWiring::AzureCcm | AddonWiring::AzureDiskCsi => Some(super::Provider::Azure),
        }
    }
}

/// `spec.addons.defaults`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddonDefaults {
    /// The CNI of tenants that name none (a `cni` add-on of the catalog).
    pub cni: Option<String>,
    /// Add-ons every tenant on a provider gets, e.g. `{nutanix: [nutanix-ccm]}`.
    #[serde(default)]
    pub providers: BTreeMap<String, Vec<String>>,
    /// Add-ons every tenant gets.
    #[serde(default)]
    pub extra: Vec<String>,
}

/// `spec.addons` of a tenant: which add-ons of the platform's catalog its cluster gets.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantAddons {
    /// The CNI (a `cni` add-on of the catalog), or `none` to install one yourself (default: the
    /// platform's `spec.addons.defaults.cni`).
    pub cni: Option<String>,
    /// Add-ons on top of the platform's defaults.
    #[serde(default)]
    pub extra: Vec<String>,
    /// Default add-ons this tenant does not get (removing one uninstalls it).
    #[serde(default)]
    pub disable: Vec<String>,
    /// Values merged over the catalog's, by add-on name. Never literal secrets.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, BTreeMap<String, AnyValue>>")]
    pub values: BTreeMap<String, BTreeMap<String, Value>>,
    /// Changes to a running cluster that kaas-gitops refuses unless acknowledged here:
    /// `cniMigration` lets a deployed tenant lose Kamaji's kube-proxy or gain a CNI that
    /// replaces it (see docs/addons.md, "Adding a CNI to a running tenant").
    #[serde(default)]
    pub acknowledge: Vec<Acknowledgement>,
}

/// A change `spec.addons.acknowledge` lets through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Acknowledgement {
    /// Kamaji deletes the tenant's kube-proxy, and a kube-proxy-replacing CNI takes over.
    CniMigration,
}
