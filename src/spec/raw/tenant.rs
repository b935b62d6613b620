//! `tenants/<name>.yaml`: the Tenant file, as written.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Infrastructure, Machine, Metadata, OidcIssuer, ProxmoxPool, Quantity, TenantAddons, TenantTopology};

/// One tenant cluster: `tenants/<name>.yaml`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TenantFile {
    /// Always `kaas-gitops.dev/v1alpha1`.
    pub api_version: String,
    /// Always `Tenant`.
    pub kind: String,
    /// The tenant's name and labels.
    pub metadata: Metadata,
    /// What the tenant cluster looks like.
    pub spec: TenantSpec,
}

/// `spec` of a Tenant.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TenantSpec {
    /// The Kubernetes version of the tenant control plane and its workers.
    pub kubernetes: Kubernetes,
    /// The hosted control plane (Kamaji).
    #[serde(default)]
    pub control_plane: ControlPlane,
    /// Pod and service CIDRs.
    #[serde(default)]
    pub network: Network,
    /// Where the worker machines run. Exclusive with `topology`.
    pub infrastructure: Option<Infrastructure>,
    /// Build the cluster from a ClusterClass of the platform instead. Exclusive with
    /// `infrastructure`.
    pub topology: Option<TenantTopology>,
    /// Worker pools, one `MachineDeployment` each.
    #[serde(default)]
    pub workers: Vec<Worker>,
    /// Who may read the tenant's `Cluster` and kubeconfig Secret.
    #[serde(default)]
    pub access: Access,
    /// SSH public keys put on every node.
    #[serde(default)]
    pub ssh_authorized_keys: Vec<String>,
    /// The first step of deleting a tenant: its cluster (control plane, machines, autoscaler)
    /// is removed while its namespace and datastore stay, so Kamaji and Cluster API can finish
    /// their cleanup; the tenant file is deleted afterwards.
    #[serde(default)]
    pub decommissioned: bool,
    /// Add-ons installed into the tenant cluster from the platform's catalog: its CNI, extra
    /// add-ons, value overrides (see docs/addons.md).
    pub addons: Option<TenantAddons>,
    /// When `kaas-gitops upgrade` may write this tenant's steps, e.g. `[{days: [sat, sun], start:
    /// "02:00", duration: 4h, timeZone: Europe/Berlin}]`; outside every window nothing is
    /// written for it. Replaces its wave's windows; absent (and no wave windows): any time.
    #[serde(default)]
    pub maintenance_windows: Vec<MaintenanceWindow>,
    /// Which management cluster runs the tenant's control plane, when kaas.yaml lists several
    /// (`spec.managementClusters`): by name or by labels. Absent: the default one.
    pub placement: Option<super::Placement>,
}

/// A weekly maintenance window (`maintenanceWindows[]` of a tenant file or a wave).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MaintenanceWindow {
    /// The days it opens on, in its time zone: `mon`, `tue`, `wed`, `thu`, `fri`, `sat`, `sun`
    /// (default: every day).
    pub days: Option<Vec<String>>,
    /// The local time it opens at, `HH:MM` (24-hour clock), e.g. `"02:00"`.
    pub start: String,
    /// How long it stays open: `4h`, `90m`, `1h30m` (more than zero, at most `168h`).
    pub duration: String,
    /// An IANA time zone name, e.g. `Europe/Berlin` or `UTC` (kaas-gitops carries its own copy
    /// of the time zone database).
    pub time_zone: String,
}

/// `spec.kubernetes`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Kubernetes {
    /// A semantic version such as `v1.33.4`; quote it (`"1.30"`) so YAML does not read a number.
    pub version: String,
    /// The kubelet version of every pool that sets none of its own (default: `version`).
    /// `kaas-gitops upgrade` writes it to hold the pools while the control plane takes a step
    /// first, and removes it once the control plane runs the new version.
    #[serde(rename = "workersVersion")]
    pub workers_version: Option<String>,
}

/// `spec.controlPlane`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ControlPlane {
    /// Control plane pods (default 2).
    pub replicas: Option<u32>,
    /// Where the control plane keeps its state (default: a dedicated etcd).
    pub data_store: Option<DataStore>,
    /// The API server address; the host defaults to an address from the platform's pool.
    pub endpoint: Option<Endpoint>,
    /// How the API server is exposed in the management cluster.
    pub service: Option<Service>,
    /// How the API server is reached: `service`, `gateway` or `ingress` (default: kaas.yaml
    /// `spec.apiServerExposure.default`, else `service`).
    pub exposure: Option<super::ExposureKind>,
    /// The API server's hostname behind a Gateway or an Ingress (default: the platform's
    /// hostname pattern with this tenant's name).
    pub hostname: Option<String>,
    /// Changes to the running control plane that kaas-gitops refuses unless acknowledged here:
    /// `endpointMove`.
    #[serde(default)]
    pub acknowledge: Vec<super::ControlPlaneAcknowledgement>,
    /// Addons Kamaji installs into the tenant cluster.
    pub addons: Option<Addons>,
    /// kube-apiserver settings.
    pub api_server: Option<Component>,
    /// kube-controller-manager settings.
    pub controller_manager: Option<Component>,
    /// kube-scheduler settings.
    pub scheduler: Option<Component>,
    /// How the tenant's kubelets are configured.
    pub kubelet: Option<Kubelet>,
}

/// `spec.controlPlane.dataStore`: exactly one of `dedicated` or `shared`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DataStore {
    /// An own kamaji-etcd release and DataStore, both named `<tenant>-etcd`.
    pub dedicated: Option<Dedicated>,
    /// The name of a DataStore the platform declares in `spec.dataStores`. Given together with
    /// `dedicated`, the control plane uses this one while the dedicated etcd keeps running: the
    /// state on either side of a migration between them.
    pub shared: Option<String>,
    /// Resources kept on a DataStore of their own (replaces kaas.yaml
    /// `spec.tenantDataStores.overrides`; `[]` for none).
    pub overrides: Option<Vec<super::DataStoreOverride>>,
}

/// `spec.controlPlane.dataStore.dedicated`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Dedicated {
    /// etcd members: 1 or an odd number (default 3).
    pub replicas: Option<u32>,
    /// Volume size per member (default `10Gi`).
    pub storage: Option<Quantity>,
    /// Storage class of the volumes (default: the cluster's default class).
    pub storage_class: Option<String>,
    /// Overrides the platform's `spec.backups` for this datastore (only when the platform sets
    /// `backups`).
    pub backup: Option<TenantBackup>,
}

/// `spec.controlPlane.dataStore.dedicated.backup`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantBackup {
    /// `false` renders no backup for this tenant's etcd (default `true`).
    pub enabled: Option<bool>,
    /// Overrides `spec.backups.schedule` of kaas.yaml (a cron expression, UTC).
    pub schedule: Option<String>,
    /// Overrides `spec.backups.retention` of kaas.yaml (snapshots kept).
    pub retention: Option<u32>,
}

/// `spec.controlPlane.endpoint`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Endpoint {
    /// The VIP: an IP address no other tenant uses.
    pub host: Option<String>,
    /// The API server port (default 6443).
    pub port: Option<u16>,
}

/// `spec.controlPlane.service`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Service {
    /// `LoadBalancer` (default), `NodePort` or `ClusterIP`.
    #[serde(rename = "type")]
    pub kind: Option<ServiceType>,
    /// Annotations on the API server's Service.
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

/// The Kubernetes Service type of the tenant API server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum ServiceType {
    /// A load-balanced VIP (default).
    LoadBalancer,
    /// A port on every management node.
    NodePort,
    /// Reachable inside the management cluster only.
    ClusterIP,
}

impl ServiceType {
    /// The value Kubernetes uses.
    pub fn as_str(self) -> &'static str {
        match self {
            ServiceType::LoadBalancer => "LoadBalancer",
            ServiceType::NodePort => "NodePort",
            ServiceType::ClusterIP => "ClusterIP",
        }
    }
}

/// `spec.controlPlane.addons` (all default to `true`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Addons {
    /// CoreDNS.
    #[serde(rename = "coreDNS")]
    pub core_dns: Option<bool>,
    /// kube-proxy.
    pub kube_proxy: Option<bool>,
    /// Konnectivity (API server to node tunnel).
    pub konnectivity: Option<bool>,
}

/// `apiServer`, `controllerManager`, `scheduler`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Component {
    /// Extra command-line flags, e.g. `--cloud-provider=external`.
    #[serde(default)]
    pub extra_args: Vec<String>,
    /// Requests and limits of the container.
    pub resources: Option<Resources>,
}

/// Container resources.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Resources {
    /// e.g. `{cpu: 250m, memory: 1Gi}`.
    #[serde(default)]
    pub requests: BTreeMap<String, Quantity>,
    /// e.g. `{memory: 2Gi}`.
    #[serde(default)]
    pub limits: BTreeMap<String, Quantity>,
}

/// `spec.controlPlane.kubelet`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Kubelet {
    /// `systemd` (default) or `cgroupfs`.
    pub cgroup_driver: Option<CgroupDriver>,
    /// Node address types the API server prefers, in order.
    pub preferred_address_types: Option<Vec<AddressType>>,
}

/// The kubelet cgroup driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CgroupDriver {
    /// systemd (default).
    Systemd,
    /// cgroupfs.
    Cgroupfs,
}

/// A node address type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum AddressType {
    /// `InternalIP`.
    #[serde(rename = "InternalIP")]
    InternalIp,
    /// `ExternalIP`.
    #[serde(rename = "ExternalIP")]
    ExternalIp,
    /// `Hostname`.
    Hostname,
    /// `InternalDNS`.
    #[serde(rename = "InternalDNS")]
    InternalDns,
    /// `ExternalDNS`.
    #[serde(rename = "ExternalDNS")]
    ExternalDns,
}

impl AddressType {
    /// The value Kubernetes uses.
    pub fn as_str(self) -> &'static str {
        match self {
            AddressType::InternalIp => "InternalIP",
            AddressType::ExternalIp => "ExternalIP",
            AddressType::Hostname => "Hostname",
            AddressType::InternalDns => "InternalDNS",
            AddressType::ExternalDns => "ExternalDNS",
        }
    }
}

/// `spec.network`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// Pod CIDRs (default `[192.168.0.0/16]`).
    pub pods: Option<Vec<String>>,
    /// Service CIDRs (default `[10.96.0.0/12]`).
    pub services: Option<Vec<String>>,
}

/// One worker pool.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Worker {
    /// A DNS-1123 label, unique in the tenant.
    pub name: String,
    /// A fixed size. Exclusive with `autoscaling`.
    pub replicas: Option<u32>,
    /// Let cluster-autoscaler size the pool between `min` and `max`.
    pub autoscaling: Option<Autoscaling>,
    /// Machine size (in topology mode the class decides it).
    pub machine: Option<Machine>,
    /// Node labels.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Node taints.
    #[serde(default)]
    pub taints: Vec<Taint>,
    /// Per-pool override of the Proxmox block.
    pub proxmox: Option<ProxmoxPool>,
    /// The failure domain the pool's machines are created in: a `VSphereDeploymentZone` on
    /// vSphere, an availability zone on OpenStack or AWS, as the provider names them (the
    /// `MachineDeployment`'s `failureDomain`).
    pub failure_domain: Option<String>,
    /// The kubelet version of this pool's machines (default: `spec.kubernetes.version`): holds
    /// the pool back while the control plane moves ahead. Never newer than the control plane,
    /// at most three minors older. Not in topology mode.
    pub version: Option<String>,
    /// How the pool's machines boot: `flatcar` (Flatcar Container Linux, configured with
    /// Ignition) or `cloud-init` (any image with cloud-init). Default: `flatcar` when the
    /// provider's image name says Flatcar, else `cloud-init`. Hetzner, Proxmox and metal-stack
    /// pools can be Flatcar. Not in topology mode.
    pub os: Option<NodeOs>,
}

/// `workers[].os`: what the pool's image boots with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum NodeOs {
    /// Flatcar Container Linux: kubeadm's configuration arrives as Ignition.
    #[serde(rename = "flatcar")]
    Flatcar,
    /// An image with cloud-init (Ubuntu, Debian, ...): kubeadm's configuration arrives as
    /// cloud-config.
    #[serde(rename = "cloud-init")]
    CloudInit,
}

impl NodeOs {
    /// The value as written in a tenant file.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeOs::Flatcar => "flatcar",
            NodeOs::CloudInit => "cloud-init",
        }
    }
}

/// `workers[].autoscaling`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Autoscaling {
    /// The smallest size; `0` scales from zero.
    pub min: u32,
    /// The largest size, at least 1.
    pub max: u32,
}

/// A node taint.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Taint {
    /// The taint key.
    pub key: String,
    /// The taint value.
    pub value: Option<String>,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: TaintEffect,
}

/// A taint effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum TaintEffect {
    /// `NoSchedule`.
    NoSchedule,
    /// `PreferNoSchedule`.
    PreferNoSchedule,
    /// `NoExecute`.
    NoExecute,
}

impl TaintEffect {
    /// The value Kubernetes uses.
    pub fn as_str(self) -> &'static str {
        match self {
            TaintEffect::NoSchedule => "NoSchedule",
            TaintEffect::PreferNoSchedule => "PreferNoSchedule",
            TaintEffect::NoExecute => "NoExecute",
        }
    }
}

/// `spec.access`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Access {
    /// Groups that may read the tenant's `Cluster` and its `<name>-kubeconfig` Secret in the
    /// management cluster, and are `cluster-admin` inside the tenant cluster (bound with each
    /// OIDC issuer's groups prefix).
    #[serde(default)]
    pub admin_groups: Vec<String>,
    /// Groups bound to the `view` ClusterRole inside the tenant cluster (with each OIDC
    /// issuer's groups prefix).
    #[serde(default)]
    pub view_groups: Vec<String>,
    /// OIDC issuers of this tenant's API server besides the platform's: an entry named like a
    /// platform issuer overrides the fields it sets, any other is added.
    #[serde(default)]
    pub oidc_issuers: Vec<OidcIssuer>,
}
