//! The normalized fleet: defaults applied, names checked, addresses allocated. Everything the
//! renderer needs and nothing it must decide. Built only by [`build`] (spec -> model, with every
//! rule), VIPs chosen by [`vips`]; collections are sorted when built so the renderer cannot
//! reorder them.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

pub(crate) mod access;
mod addons;
pub mod bootstrap_rbac;
pub(crate) mod build;
pub(crate) mod datastore_names;
pub(crate) mod datastores;
pub(crate) mod dns;
pub(crate) mod exposure;
pub(crate) mod pins;
pub(crate) mod placement;
mod providers;
pub mod releases;
mod topology;
pub(crate) mod upgrade;
pub(crate) mod vips;
pub(crate) mod window;

pub use crate::spec::raw::{
    AddonKind, AddonWiring, AddressType, CgroupDriver, Contract, DigestFormat, NodeOs, Provider, ServiceType,
    TagPattern, TaintEffect,
};
pub use addons::{AddonChart, AddonDefaults, AddonImage, TenantAddon};
pub use providers::{
    AwsCluster, AzureCluster, HetznerCluster, Infrastructure, IonosImage, IonoscloudCluster, KubevirtCluster,
    LOCATION_ANNOTATION, Metal3Cluster, MetalStackCluster, MetalStackFirewall, NutanixCluster, NutanixRef,
    OpenstackCluster, OpenstackRef, PacketCluster, ProxmoxCluster, ProxmoxMachine, TinkerbellCluster, VsphereCluster,
    VsphereIdentity,
};
pub use topology::{ClassPatch, ClassPatchOp, ClassVariable, ClusterClass, PatchValue, TenantTopology, Topology};

/// The whole fleet.
#[derive(Debug, Clone)]
pub struct Model {
    /// The management cluster.
    pub platform: Platform,
    /// Every tenant, sorted by name.
    pub tenants: Vec<Tenant>,
}

/// A Kubernetes version `vMAJOR.MINOR.PATCH`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct KubeVersion {
    /// Major.
    pub major: u32,
    /// Minor.
    pub minor: u32,
    /// Patch.
    pub patch: u32,
}

impl KubeVersion {
    /// Parses `v1.33.4` or `1.33.4`.
    pub fn parse(text: &str) -> Option<KubeVersion> {
        let t = text.strip_prefix('v').unwrap_or(text);
        let mut parts = t.split('.');
        let mut next = || -> Option<u32> {
            let p = parts.next()?;
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) || p.len() > 9 {
                return None;
            }
            p.parse().ok()
        };
        let v = KubeVersion {
            major: next()?,
            minor: next()?,
            patch: next()?,
        };
        parts.next().is_none().then_some(v)
    }
}

impl fmt::Display for KubeVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// A Helm chart source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chart {
    /// The chart's name in its repository (`kamaji`, `kamaji-etcd`, `cluster-autoscaler`).
    pub name: String,
    /// Repository URL.
    pub repository: String,
    /// Version or range.
    pub version: String,
}

/// An image as the platform asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageSpec {
    /// `docker.io/clastix/kamaji`.
    pub repository: String,
    /// The tag, or `None` when a policy picks it (from the lock).
    pub tag: Option<String>,
    /// The tag policy, if any.
    pub policy: Option<TagPolicy>,
    /// Which platform field asks for it (for messages).
    pub field: String,
}

/// A tag policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagPolicy {
    /// The pattern.
    pub pattern: TagPattern,
    /// Tags never picked.
    pub exclude: Vec<String>,
}

/// `spec.flux.delivery`: where tenant Kustomizations read their manifests from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// The platform's source (the whole repository).
    Git,
    /// One OCI artifact per tenant, `<repository>/<tenant>:<tag>`.
    Oci(OciDelivery),
    /// One ExternalArtifact per tenant, generated from the platform's source by source-watcher's
    /// ArtifactGenerator (one generator per [`artifact_generator`] group).
    Artifact(ArtifactDelivery),
}

/// `spec.flux.delivery.artifact`, with its defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactDelivery {
    /// Tenant Kustomization interval.
    pub tenant_interval: String,
}

/// The most artifacts one ArtifactGenerator may list: `spec.artifacts` has
/// `+kubebuilder:validation:MaxItems=1000` (fluxcd/source-watcher api/v2 v2.2.4,
/// `v1beta1/artifactgenerator_types.go`, `ArtifactGeneratorSpec.OutputArtifacts`).
pub const MAX_GENERATOR_ARTIFACTS: usize = 1000;

/// The kustomize-controller shard of a tenant: `shard<K>`, K in 1..=N from a hash of the name,
/// so a tenant's shard never depends on the other tenants. `None` without sharding.
pub fn shard(tenant: &str, shards: u32) -> Option<String> {
    use sha2::{Digest, Sha256};
    if shards < 2 {
        return None;
    }
    let digest = Sha256::digest(tenant.as_bytes());
    let n = u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]);
    Some(format!("shard{}", n % shards + 1))
}

/// The ArtifactGenerator that makes `tenant`'s ExternalArtifact (`delivery.mode: artifact`):
/// `kaas-tenants`, or `kaas-tenants-shard<K>` with `spec.flux.shards` (the tenant's
/// kustomize-controller shard), so a tenant's generator never depends on the other tenants.
pub fn artifact_generator(tenant: &str, shards: u32) -> String {
    match shard(tenant, shards) {
        Some(s) => format!("kaas-tenants-{s}"),
        None => "kaas-tenants".into(),
    }
}

/// `spec.flux.delivery.oci`, with its defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciDelivery {
    /// `<host>/<path>`.
    pub repository: String,
    /// The tag Flux follows.
    pub tag: String,
    /// Plain HTTP.
    pub insecure: bool,
    /// Pull Secret in the Flux namespace.
    pub secret_ref: Option<String>,
    /// OCIRepository interval.
    pub interval: String,
    /// Tenant Kustomization interval.
    pub tenant_interval: String,
}

/// The management cluster's settings.
#[derive(Debug, Clone)]
pub struct Platform {
    /// `metadata.name`.
    pub name: String,
    /// Flux source kind.
    pub source_kind: String,
    /// Flux source name.
    pub source_name: String,
    /// Flux source namespace.
    pub source_namespace: String,
    /// Reconcile interval.
    pub interval: String,
    /// kustomize-controller shards for tenant Kustomizations (0 or 1: no sharding).
    pub flux_shards: u32,
    /// How tenant Kustomizations get their manifests (`spec.flux.delivery`).
    pub delivery: Delivery,
    /// Kamaji's namespace.
    pub kamaji_namespace: String,
    /// The management cluster's DNS domain (`spec.management.clusterDomain`).
    pub cluster_domain: String,
    /// The kamaji chart.
    pub kamaji_chart: Chart,
    /// The Kamaji controller image.
    pub kamaji_image: ImageSpec,
    /// etcd members of Kamaji's default datastore.
    pub default_datastore_replicas: u32,
    /// Oldest supported tenant version.
    pub min_kubernetes: KubeVersion,
    /// Newest supported tenant version.
    pub max_kubernetes: KubeVersion,
    /// The Kubernetes releases `upgrade` may step to (`spec.upgrades.kubernetesReleases`).
    pub kubernetes_releases: Vec<KubeVersion>,
    /// The upgrade waves, in order (`spec.upgrades.waves`).
    pub waves: Vec<upgrade::Wave>,
    /// The kamaji-etcd chart.
    pub etcd_chart: Chart,
    /// The etcd image.
    pub etcd_image: ImageSpec,
    /// The kamaji-etcd certificate job image.
    pub etcd_cfssl_image: ImageSpec,
    /// The kamaji-etcd kubectl job image.
    pub etcd_kubectl_image: ImageSpec,
    /// The kamaji-etcd etcd job image.
    pub etcd_job_image: ImageSpec,
    /// The Cluster API contract.
    pub contract: Contract,
    /// Kamaji control plane provider version.
    pub cp_provider_version: String,
    /// Its controller replicas.
    pub cp_provider_replicas: u32,
    /// Its controller image.
    pub cp_provider_image: ImageSpec,
    /// Infrastructure provider versions.
    pub infrastructure_providers: BTreeMap<Provider, String>,
    /// Secrets with each provider controller's variables (the operator's `configSecret`).
    pub provider_config_secrets: BTreeMap<Provider, String>,
    /// Addon provider versions (`helm`: CAAPH).
    pub addon_providers: BTreeMap<String, String>,
    /// IPAM providers and their releases (the in-cluster one whenever Proxmox is installed).
    pub ipam_providers: BTreeMap<String, String>,
    /// The add-on catalog (`spec.addons.catalog`, with `spec.cloudControllerManagers.nutanix`
    /// as the entry `nutanix-ccm`), by name.
    pub addons: BTreeMap<String, AddonChart>,
    /// What tenants get when their file says nothing.
    pub addon_defaults: AddonDefaults,
    /// ClusterClasses, when the platform defines any.
    pub topology: Option<Topology>,
    /// The cluster-autoscaler chart.
    pub autoscaler_chart: Chart,
    /// The cluster-autoscaler image.
    pub autoscaler_image: ImageSpec,
    /// The cluster-autoscaler image for tenants of a Kubernetes minor (`1.<minor>`).
    pub autoscaler_images_by_minor: BTreeMap<u32, ImageSpec>,
    /// VIP pools as inclusive address ranges.
    pub vip_pools: Vec<(IpAddr, IpAddr)>,
    /// The management clusters tenants run on (`spec.managementClusters`; empty: one, unnamed).
    pub management_clusters: Vec<placement::ManagementCluster>,
    /// What serves the control planes' `LoadBalancer` Services.
    pub load_balancer: LoadBalancer,
    /// The Gateway or Ingress tenant API servers may be reached through, and the default.
    pub exposures: exposure::Exposures,
    /// Shared DataStores tenants may name, by name.
    pub data_stores: BTreeMap<String, datastores::SharedDataStore>,
    /// The shared DataStore of tenants whose file names none (`None`: their own kamaji-etcd).
    pub tenant_datastore_default: Option<String>,
    /// The resources tenants keep on a DataStore of their own unless their file says.
    pub datastore_overrides: Vec<datastores::DataStoreOverride>,
    /// The kine sidecar image, when a DataStore of the fleet uses kine (Kamaji's `--kine-image`).
    pub kine_image: Option<ImageSpec>,
    /// Registries served over plain HTTP.
    pub insecure_registries: Vec<String>,
    /// Branch prefix for `pr`.
    pub branch_prefix: String,
    /// Commit author, if set.
    pub author: Option<(String, String)>,
    /// Scheduled etcd snapshots; `None`: no backups rendered.
    pub backups: Option<Backups>,
    /// The releases on the management cluster that kaas-gitops does not install itself.
    pub management: ManagementReleases,
    /// The OIDC issuers of every tenant API server (`spec.access.oidcIssuers`), by name.
    pub oidc_issuers: Vec<access::OidcIssuer>,
    /// What the management cluster's authenticator puts before group names
    /// (`spec.access.managementGroupsPrefix`, `""` when not set).
    pub management_groups_prefix: String,
    /// The Cluster API feature gates the management cluster runs with
    /// (`spec.clusterApi.featureGates`), when the platform declares them.
    pub feature_gates: Option<BTreeMap<String, bool>>,
}

/// The releases the management cluster runs beside what the platform layer installs: their
/// CRDs are part of what `validate` checks the fleet against (`model::releases::crds`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagementReleases {
    /// Cluster API (core and the kubeadm bootstrap provider).
    pub cluster_api: String,
    /// cluster-api-operator.
    pub operator: String,
    /// Flux source-controller.
    pub flux_source: String,
    /// Flux kustomize-controller.
    pub flux_kustomize: String,
    /// Flux helm-controller.
    pub flux_helm: String,
    /// Flux source-watcher (`delivery.mode: artifact` only).
    pub flux_source_watcher: Option<String>,
}

/// `spec.backups` with defaults applied.
#[derive(Debug, Clone)]
pub struct Backups {
    /// Default schedule and retention of every datastore.
    pub policy: BackupPolicy,
    /// Where snapshots go.
    pub destination: BackupDestination,
    /// The image running the snapshot script (`/bin/sh` and `etcdctl`).
    pub image: ImageSpec,
}

/// When snapshots are taken and how many are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupPolicy {
    /// Five-field cron expression, UTC.
    pub schedule: String,
    /// Snapshots kept.
    pub retention: u32,
}

/// Where snapshots go.
#[derive(Debug, Clone)]
pub enum BackupDestination {
    /// A PersistentVolumeClaim `<datastore>-backups` next to each release.
    Pvc {
        /// Its size.
        size: String,
        /// Its storage class.
        storage_class: Option<String>,
    },
    /// An S3-compatible bucket.
    S3 {
        /// The Secret with `endpoint`, `bucket`, `accessKeyID`, `secretAccessKey`.
        credentials_secret: String,
        /// The uploader image (`/bin/sh` and `aws`).
        image: ImageSpec,
    },
}

impl Chart {
    /// Why this version can stand for other bytes tomorrow, if it can: a range picks the newest
    /// match, and `+latest` build metadata is republished on every push (Clastix's kamaji chart
    /// `0.0.0+latest`), while Flux re-pulls only when the version string changes.
    pub fn moving(&self) -> Option<&'static str> {
        let v = self.version.as_str();
        if v.contains(['^', '~', '>', '<', '*', '|', ' ', ',']) || v.split('.').any(|p| p == "x" || p == "X") {
            Some("a version range picks whatever the newest match is when Flux pulls")
        } else if v.ends_with("+latest") {
            Some("the chart is republished under this same version on every upstream push")
        } else {
            None
        }
    }
}

impl Platform {
    /// The management cluster tenants without a placement run on, whose Flux entry point is
    /// `flux/`; `None` when kaas.yaml lists none.
    pub fn default_management_cluster(&self) -> Option<&placement::ManagementCluster> {
        self.management_clusters.iter().find(|m| m.default)
    }

    /// The folder of the Flux entry point that applies `mc` (`None`: the default cluster's).
    pub fn flux_dir(&self, mc: Option<&str>) -> String {
        let default = self.default_management_cluster().map(|m| m.name.as_str());
        crate::layout::flux_dir(mc.filter(|m| Some(*m) != default))
    }

    /// The labels of the management cluster `t` runs on (empty when kaas.yaml lists none).
    pub fn management_cluster_labels(&self, t: &Tenant) -> &BTreeMap<String, String> {
        static NONE: BTreeMap<String, String> = BTreeMap::new();
        t.management_cluster
            .as_deref()
            .and_then(|n| self.management_clusters.iter().find(|m| m.name == n))
            .map_or(&NONE, |m| &m.labels)
    }

    /// The VIP pools of tenants on `mc`: its own, else the platform's.
    pub fn vip_pools_of(&self, mc: Option<&str>) -> &[(IpAddr, IpAddr)] {
        mc.and_then(|n| self.management_clusters.iter().find(|m| m.name == n))
            .and_then(|m| m.vip_pools.as_deref())
            .unwrap_or(&self.vip_pools)
    }

    /// The driver of the shared DataStore `name`, when known.
    pub fn datastore_driver(&self, name: &str) -> Option<datastores::Driver> {
        self.data_stores.get(name).and_then(|d| d.driver)
    }

    /// The platform's charts (add-ons included) with the `kaas.yaml` field that sets each one's
    /// version.
    pub fn charts(&self) -> Vec<(String, &Chart)> {
        let mut out = vec![
            ("spec.kamaji.chart.version".to_string(), &self.kamaji_chart),
            ("spec.kamajiEtcd.chart.version".to_string(), &self.etcd_chart),
            (
                "spec.clusterAutoscaler.chart.version".to_string(),
                &self.autoscaler_chart,
            ),
        ];
        out.extend(self.addons.values().map(|a| (format!("{}.version", a.field), &a.chart)));
        out
    }

    /// Every image the platform renders, in a fixed order.
    pub fn images(&self) -> Vec<&ImageSpec> {
        let mut images = vec![
            &self.kamaji_image,
            &self.etcd_image,
            &self.etcd_cfssl_image,
            &self.etcd_kubectl_image,
            &self.etcd_job_image,
            &self.cp_provider_image,
            &self.autoscaler_image,
        ];
        images.extend(self.autoscaler_images_by_minor.values());
        images.extend(&self.kine_image);
        images.extend(self.addons.values().flat_map(|a| a.images.iter().map(|i| &i.image)));
        // Backup images only when backups are on, so `pin` does not pin what nothing renders.
        if let Some(b) = &self.backups {
            images.push(&b.image);
            if let BackupDestination::S3 { image, .. } = &b.destination {
                images.push(image);
            }
        }
        images
    }

    /// The cluster-autoscaler image for a tenant of Kubernetes `version`.
    pub fn autoscaler_image_for(&self, version: KubeVersion) -> &ImageSpec {
        self.autoscaler_images_by_minor
            .get(&version.minor)
            .unwrap_or(&self.autoscaler_image)
    }

    /// The namespace of an infrastructure provider's controller.
    pub fn provider_namespace(provider: Provider) -> &'static str {
        match provider {
            Provider::Proxmox => "capmox-system",
            Provider::Hetzner => "caph-system",
            Provider::Kubevirt => "capk-system",
            Provider::Nutanix => "capx-system",
            Provider::MetalStack => "capms-system",
            Provider::Packet => "capp-system",
            Provider::Aws => "capa-system",
            // cluster-api-provider-vsphere v1.16.1 config/default/kustomization.yaml.
            Provider::Vsphere => "capv-system",
            // cluster-api-provider-openstack v0.14.7 config/default/kustomization.yaml.
            Provider::Openstack => "capo-system",
            // cluster-api-provider-metal3 v1.13.2 config/default/capm3/kustomization.yaml.
            Provider::Metal3 => "capm3-system",
            // cluster-api-provider-tinkerbell v0.7.0 config/default/kustomization.yaml.
            Provider::Tinkerbell => "capt-system",
            // cluster-api-provider-ionoscloud v0.6.3 config/default/kustomization.yaml.
            Provider::Ionoscloud => "capic-system",
            // cluster-api-provider-azure v1.26.0 config/capz/kustomization.yaml.
            Provider::Azure => "capz-system",
        }
    }

    /// The namespace of an IPAM provider's controller (clusterctl's default:
    /// `capi-ipam-<name>-system`).
    pub fn ipam_namespace(name: &str) -> String {
        format!("capi-ipam-{name}-system")
    }

    /// The namespace of an addon provider's controller.
    pub fn addon_namespace(name: &str) -> String {
        match name {
            "helm" => "caaph-system".to_string(),
            other => format!("{other}-addon-system"),
        }
    }
}

/// Kubernetes' default DNS domain, and the kamaji-etcd chart's `clusterDomain` default
/// (clastix/kamaji-etcd `values.yaml`).
pub const DEFAULT_CLUSTER_DOMAIN: &str = "cluster.local";

/// One tenant cluster.
#[derive(Debug, Clone)]
pub struct Tenant {
    /// The name (also its namespace).
    pub name: String,
    /// `tenants/<name>.yaml`.
    pub source_path: String,
    /// Labels for the `Cluster`.
    pub labels: BTreeMap<String, String>,
    /// Kubernetes version.
    pub version: KubeVersion,
    /// When `upgrade` may write its steps (`spec.maintenanceWindows`; empty: its wave's, or
    /// any time).
    pub maintenance_windows: Vec<window::MaintenanceWindow>,
    /// Control plane replicas.
    pub cp_replicas: u32,
    /// The datastore the control plane uses.
    pub datastore: DataStore,
    /// Its control plane's schema and user in the DataStore (`kaas.lock` `datastores:`, else
    /// derived from the name: [`datastore_names`]).
    pub datastore_names: datastore_names::DataStoreNames,
    /// A dedicated etcd kept running while the control plane uses a shared DataStore (before or
    /// after a migration between the two): always a `DataStore::Dedicated`.
    pub kept_etcd: Option<DataStore>,
    /// Resources its control plane keeps on another DataStore (`dataStoreOverrides`).
    pub datastore_overrides: Vec<datastores::DataStoreOverride>,
    /// Only the namespace, access and datastore are rendered: the first step of a deletion.
    pub decommissioned: bool,
    /// Where the file asks its control plane to run (`spec.placement`).
    pub placement: placement::PlacementRequest,
    /// `spec.placement.acknowledge` has `move`.
    pub placement_move_acknowledged: bool,
    /// The management cluster it runs on ([`placement::place`]); `None` when kaas.yaml lists
    /// none.
    pub management_cluster: Option<String>,
    /// The VIP, given or allocated.
    pub vip: Option<IpAddr>,
    /// Whether `vip` was allocated from the pool.
    pub vip_allocated: bool,
    /// API server port.
    pub port: u16,
    /// Service type.
    pub service_type: ServiceType,
    /// Service annotations.
    pub service_annotations: BTreeMap<String, String>,
    /// How the API server is reached: its Service, a Gateway or an Ingress.
    pub exposure: exposure::Exposure,
    /// `spec.controlPlane.acknowledge` has `endpointMove`: a deployed cluster may get another
    /// endpoint.
    pub endpoint_move_acknowledged: bool,
    /// CoreDNS addon.
    pub core_dns: bool,
    /// kube-proxy addon.
    pub kube_proxy: bool,
    /// Konnectivity addon.
    pub konnectivity: bool,
    /// kube-apiserver.
    pub api_server: Component,
    /// kube-controller-manager.
    pub controller_manager: Component,
    /// kube-scheduler.
    pub scheduler: Component,
    /// kubelet cgroup driver.
    pub cgroup_driver: CgroupDriver,
    /// kubelet preferred address types.
    pub preferred_address_types: Vec<AddressType>,
    /// Pod CIDRs.
    pub pods: Vec<String>,
    /// Service CIDRs.
    pub services: Vec<String>,
    /// Infrastructure (in topology mode: the class's).
    pub infrastructure: Infrastructure,
    /// The ClusterClass the tenant is built from, in topology mode.
    pub topology: Option<TenantTopology>,
    /// Worker pools, in file order.
    pub pools: Vec<Pool>,
    /// Admin groups: the management cluster Role, and `cluster-admin` inside the tenant.
    pub admin_groups: Vec<String>,
    /// Groups with `view` inside the tenant.
    pub view_groups: Vec<String>,
    /// The OIDC issuers the tenant API server trusts (the platform's with the tenant's
    /// overrides, then the tenant's own), by name.
    pub oidc_issuers: Vec<access::OidcIssuer>,
    /// SSH keys for every node.
    pub ssh_authorized_keys: Vec<String>,
    /// Add-ons of the platform's catalog installed into the cluster, in install order (the CNI,
    /// then cloud controller managers, then the rest, each group by name).
    pub addons: Vec<TenantAddon>,
    /// `spec.addons.acknowledge` has `cniMigration`: a deployed cluster may lose kube-proxy.
    pub cni_migration_acknowledged: bool,
}

impl Tenant {
    /// CoreDNS's Service address, which every kubelet of the tenant gets as `clusterDNS`: the
    /// 10th address of the first service CIDR, as kubeadm picks it ([`dns`]). `None` only for a
    /// tenant validation would refuse.
    pub fn dns_service_ip(&self) -> Option<IpAddr> {
        self.services.first().and_then(|c| dns::dns_service_ip(c))
    }

    /// Whether any pool autoscales.
    pub fn autoscales(&self) -> bool {
        self.pools.iter().any(|p| matches!(p.size, PoolSize::Autoscaled { .. }))
    }

    /// The release (and DataStore) name of a dedicated etcd: `<tenant>-etcd`.
    pub fn etcd_release(&self) -> String {
        format!("{}-etcd", self.name)
    }

    /// The tenant's own etcd, in use or kept: a `DataStore::Dedicated`.
    pub fn dedicated_etcd(&self) -> Option<&DataStore> {
        match &self.datastore {
            d @ DataStore::Dedicated { .. } => Some(d),
            DataStore::Shared(_) => self.kept_etcd.as_ref(),
        }
    }

    /// The name of the DataStore the control plane uses.
    pub fn datastore_name(&self) -> String {
        match &self.datastore {
            DataStore::Dedicated { .. } => self.etcd_release(),
            DataStore::Shared(name) => name.clone(),
        }
    }

    /// The driver of the DataStore `name` as this tenant sees it (its own etcd is one), when
    /// known.
    pub fn driver_of(&self, platform: &Platform, name: &str) -> Option<datastores::Driver> {
        if name == self.etcd_release() {
            return Some(datastores::Driver::Etcd);
        }
        platform.datastore_driver(name)
    }

    /// The infrastructure provider.
    pub fn provider(&self) -> Provider {
        self.infrastructure.provider()
    }

    /// Whether the API server's load balancer chooses its own address, so no VIP can be given:
    /// a Hetzner tenant's Service is an hcloud load balancer (placed by the
    /// `load-balancer.hetzner.cloud/location` annotation), whose public address cannot be
    /// requested (hcloud-cloud-controller-manager: `load-balancer.hetzner.cloud/ipv4` is
    /// read-only). The Kamaji provider then copies the address Kamaji reports into the
    /// KamajiControlPlane, CAPI into the Cluster and the provider into the HetznerCluster
    /// (cluster-api-control-plane-provider-kamaji v0.20.0,
    /// `controllers/kamajicontrolplane_controller_cluster_patch.go`).
    pub fn address_chosen_by_load_balancer(&self) -> bool {
        self.provider() == Provider::Hetzner
    }

    /// The endpoint clients and kubelets use, when known at render time: the hostname with the
    /// Gateway's port (the API server's) or the Ingress's, else the VIP with the API server port.
    pub fn endpoint(&self, platform: &Platform) -> Option<(String, u16)> {
        match &self.exposure {
            exposure::Exposure::Gateway { hostname } => Some((hostname.clone(), self.port)),
            exposure::Exposure::Ingress { hostname } => {
                let port = platform.exposures.ingress.as_ref().map_or(443, |i| i.port);
                Some((hostname.clone(), port))
            }
            exposure::Exposure::Service { .. } => self.vip.map(|ip| (ip.to_string(), self.port)),
        }
    }
}

/// Where a control plane keeps its state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataStore {
    /// Own kamaji-etcd release.
    Dedicated {
        /// Members.
        replicas: u32,
        /// Volume size.
        storage: String,
        /// Storage class.
        storage_class: Option<String>,
        /// Scheduled snapshots; `None`: not backed up (backups off in kaas.yaml, or the tenant's
        /// `backup.enabled: false`). A shared DataStore is backed up with the platform's.
        backup: Option<BackupPolicy>,
    },
    /// A platform DataStore.
    Shared(String),
}

/// A control plane component's settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Component {
    /// Extra flags.
    pub extra_args: Vec<String>,
    /// Requests.
    pub requests: BTreeMap<String, String>,
    /// Limits.
    pub limits: BTreeMap<String, String>,
}

/// A worker pool.
#[derive(Debug, Clone)]
pub struct Pool {
    /// Pool name.
    pub name: String,
    /// Fixed or autoscaled.
    pub size: PoolSize,
    /// vCPUs.
    pub cpus: u32,
    /// Memory in MiB.
    pub memory_mib: u32,
    /// Disk in GiB.
    pub disk_gib: u32,
    /// Node labels.
    pub labels: BTreeMap<String, String>,
    /// Node taints: key, value, effect.
    pub taints: Vec<(String, Option<String>, TaintEffect)>,
    /// The machine settings for Proxmox.
    pub proxmox: Option<ProxmoxMachine>,
    /// The kubelet version, when the pool sets its own (else the tenant's).
    pub version: Option<KubeVersion>,
    /// What the pool's image boots with, which decides the bootstrap format.
    pub os: NodeOs,
    /// The failure domain of its machines, if named.
    pub failure_domain: Option<String>,
}

/// A pool's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolSize {
    /// A fixed number of machines.
    Fixed(u32),
    /// Sized by cluster-autoscaler.
    Autoscaled {
        /// Minimum.
        min: u32,
        /// Maximum.
        max: u32,
    },
}

/// What serves `LoadBalancer` Services in the management cluster (`spec.loadBalancer.implementation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadBalancer {
    /// MetalLB.
    Metallb,
    /// kube-vip's cloud provider.
    KubeVip,
    /// Cilium's LB IPAM.
    Cilium,
    /// A cloud load balancer that chooses the address.
    Cloud,
}

impl LoadBalancer {
    /// The Service annotation that asks for an address, when the implementation takes one.
    /// Kamaji no longer sets `spec.loadBalancerIP` (clastix/kamaji commit 09a5b05,
    /// `internal/resources/k8s_service_resource.go`); its docs
    /// (`docs/content/getting-started/kamaji-generic.md`) pin the address with the load
    /// balancer's own annotation. kube-vip's key is from kube-vip PR #528 (kube-vip-cloud-provider
    /// v0.0.7), Cilium's from its LB IPAM documentation.
    pub fn address_annotation(self) -> Option<&'static str> {
        match self {
            LoadBalancer::Metallb => Some("metallb.io/loadBalancerIPs"),
            LoadBalancer::KubeVip => Some("kube-vip.io/loadbalancerIPs"),
            LoadBalancer::Cilium => Some("lbipam.cilium.io/ips"),
            LoadBalancer::Cloud => None,
        }
    }
}

/// The name of the `HelmRepository` serving `chart`: derived from the URL, stable.
pub fn repository_name(chart: &Chart) -> String {
    let url = chart
        .repository
        .split_once("://")
        .map_or(chart.repository.as_str(), |(_, rest)| rest);
    let mut parts = url.split('/').filter(|p| !p.is_empty());
    let host = parts.next().unwrap_or("charts");
    let host_label = host.split('.').next().unwrap_or(host);
    let last = parts.next_back();
    let raw = match last {
        Some(l) => format!("{host_label}-{l}"),
        None => host_label.to_string(),
    };
    let mut name: String = raw
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    name.truncate(63);
    name.trim_matches('-').to_string()
}
