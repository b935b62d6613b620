//! The files people write, exactly as written: `kaas.yaml` (Platform) and `tenants/*.yaml`
//! (Tenant). Every struct denies unknown keys so that a typo is an error, never ignored.
//! Defaults are not applied here; `model::build` turns these into the `model`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mod access;
mod addons;
mod datastores;
mod exposure;
mod management_clusters;
mod platform;
mod providers;
mod tenant;
mod topology;

pub use access::{ClaimMapping, OidcIssuer, PlatformAccess};
pub use addons::{
    Acknowledgement, AddonDefaults, AddonImage, AddonKind, AddonWiring, CatalogAddon, DigestFormat, PlatformAddons,
    TenantAddons,
};
pub use datastores::{
    BasicAuth, CertificateSecret, DataStoreDriver, DataStoreEntry, DataStoreOverride, DataStoreTls, DeclaredDataStore,
    TenantDataStores,
};
pub use exposure::{ApiServerExposure, ControlPlaneAcknowledgement, ExposureKind, GatewayExposure, IngressExposure};
pub use management_clusters::{Capacity, ManagementCluster, Placement, PlacementAcknowledgement};
pub use platform::{
    ArtifactDelivery, Author, BackupDestination, Backups, Chart, CloudControllerManagers, ClusterApi,
    ClusterAutoscaler, Contract, ControlPlaneProvider, DefaultDataStore, Delivery, DeliveryMode, EtcdJobs, Flux,
    FluxControllers, Git, Image, Kamaji, KamajiEtcd, LoadBalancer, LoadBalancerImplementation, Management, OciDelivery,
    PlatformFile, PlatformSpec, PvcDestination, Registries, S3Destination, SourceRef, TagPattern, TagPolicy, Upgrades,
    VersionRange, Wave,
};
pub use providers::{
    Aws, Azure, Hetzner, Infrastructure, Ionoscloud, Ipv4Config, Kubevirt, Machine, Metal3, Metal3Image, MetalStack,
    MetalStackFirewall, Nutanix, Openstack, Packet, PrismCentral, Provider, Proxmox, ProxmoxPool, Tinkerbell, Vsphere,
};
pub use tenant::{
    Access, Addons, AddressType, Autoscaling, CgroupDriver, Component, ControlPlane, DataStore, Dedicated, Endpoint,
    Kubelet, Kubernetes, MaintenanceWindow, Network, NodeOs, Resources, Service, ServiceType, Taint, TaintEffect,
    TenantBackup, TenantFile, TenantSpec, Worker,
};
pub use topology::{
    AnyValue, ClassSpec, Patch, PatchOp, PatchOpKind, PatchTarget, PlatformTopology, SchemaType, TenantTopology,
    Variable, VariableSchema,
};

/// The `apiVersion` both files carry.
pub const API_VERSION: &str = "kaas-gitops.dev/v1alpha1";

/// A Kubernetes resource quantity (`250m`, `1Gi`, `2`): written as a string or a number.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Quantity {
    /// `250m`, `1Gi`.
    Text(String),
    /// `2`.
    Int(i64),
    /// `0.5`.
    Float(f64),
}

impl Quantity {
    /// The quantity as Kubernetes writes it.
    pub fn as_string(&self) -> String {
        match self {
            Quantity::Text(s) => s.clone(),
            Quantity::Int(i) => i.to_string(),
            Quantity::Float(f) => f.to_string(),
        }
    }
}

/// `metadata` of both files.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Metadata {
    /// The name. For a tenant: a DNS-1035 label of at most 40 characters, equal to the file stem.
    pub name: String,
    /// Labels copied onto the tenant's `Cluster`.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}
