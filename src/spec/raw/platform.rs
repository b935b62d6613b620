//! `kaas.yaml`: the Platform file, as written.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{MaintenanceWindow, Metadata, PlatformAccess, PlatformAddons, PlatformTopology, Quantity};

/// The management cluster: `kaas.yaml`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PlatformFile {
    /// Always `kaas-gitops.dev/v1alpha1`.
    pub api_version: String,
    /// Always `Platform`.
    pub kind: String,
    /// The platform's name.
    pub metadata: Metadata,
    /// The platform settings.
    pub spec: PlatformSpec,
}

/// `spec` of the Platform.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PlatformSpec {
    /// How Flux reads this repository.
    pub flux: Flux,
    /// The Kamaji operator.
    pub kamaji: Kamaji,
    /// The kamaji-etcd chart used for dedicated datastores.
    pub kamaji_etcd: KamajiEtcd,
    /// Cluster API providers, installed by cluster-api-operator.
    pub cluster_api: ClusterApi,
    /// The cluster-autoscaler chart for autoscaled pools.
    pub cluster_autoscaler: ClusterAutoscaler,
    /// The management cluster's load balancer and its address pools for tenant VIPs.
    pub load_balancer: Option<LoadBalancer>,
    /// How tenant API servers are reached: their own Service (default), a Gateway or an
    /// Ingress, by hostname (see docs/exposure.md).
    pub api_server_exposure: Option<super::ApiServerExposure>,
    /// Shared DataStores that tenants may name in `dataStore.shared`: a name (created elsewhere)
    /// or a DataStore declared here (see docs/datastores.md).
    #[serde(default)]
    pub data_stores: Vec<super::DataStoreEntry>,
    /// What tenants' control planes keep their state in unless their file says: a shared
    /// DataStore, and resources kept on a DataStore of their own (`/events`).
    pub tenant_data_stores: Option<super::TenantDataStores>,
    /// Registry settings for `pin`.
    pub registries: Option<Registries>,
    /// Settings for commits and branches.
    pub git: Option<Git>,
    /// Charts of cloud controller managers installed into tenant clusters.
    pub cloud_controller_managers: Option<CloudControllerManagers>,
    /// ClusterClasses tenants may be built from (`spec.topology.class` in a tenant file).
    pub topology: Option<PlatformTopology>,
    /// Scheduled etcd snapshots of every DataStore kaas-gitops creates (off when absent).
    pub backups: Option<Backups>,
    /// How `kaas-gitops upgrade` moves tenants to a new Kubernetes version: the patch releases
    /// it may pick and the waves it moves tenants in (see docs/upgrades.md).
    pub upgrades: Option<Upgrades>,
    /// Add-ons installed into tenant clusters: a catalog of charts and what tenants get by
    /// default (see docs/addons.md).
    pub addons: Option<PlatformAddons>,
    /// Facts about the management cluster that rendered objects depend on.
    pub management: Option<Management>,
    /// The management clusters tenants run on, when there is more than one (see
    /// docs/management-clusters.md). Absent: one, and the layout of a single cluster.
    #[serde(default)]
    pub management_clusters: Vec<super::ManagementCluster>,
    /// Single sign-on to the tenant API servers: the OIDC issuers they trust (see
    /// docs/access.md).
    pub access: Option<PlatformAccess>,
}

/// `spec.management`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Management {
    /// The management cluster's DNS domain (its kubelets' `clusterDomain`, default
    /// `cluster.local`): the etcd members' and DataStores' endpoints are built from it.
    pub cluster_domain: Option<String>,
}

/// `spec.upgrades`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Upgrades {
    /// Kubernetes releases `upgrade --kubernetes vX.Y` may pick from, e.g. `[v1.33.5, v1.34.2]`:
    /// each step goes to the newest listed patch of the next minor. Without a patch of that
    /// minor here, `upgrade` needs an exact `vX.Y.Z`.
    #[serde(default)]
    pub kubernetes_releases: Vec<String>,
    /// Named waves, in order: each takes the tenants whose labels match its `selector` and that
    /// no earlier wave took. Only the last may leave out `selector`: it takes the rest.
    #[serde(default)]
    pub waves: Vec<Wave>,
}

/// `spec.upgrades.waves[]`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Wave {
    /// The wave's name, a DNS-1123 label (`upgrade --wave NAME`).
    pub name: String,
    /// Tenant labels that must all match (`metadata.labels` of the tenant file), e.g.
    /// `{ring: canary}`. Absent on the last wave only: every tenant no earlier wave took.
    pub selector: Option<BTreeMap<String, String>>,
    /// Labels of the tenant's management cluster that must all match (`spec.managementClusters[].labels`),
    /// e.g. `{region: eu-west}` for a canary region. With `selector`, both must match.
    #[serde(rename = "managementClusterSelector")]
    pub management_cluster_selector: Option<BTreeMap<String, String>>,
    /// When `upgrade` may write the steps of this wave's tenants (a tenant's own
    /// `maintenanceWindows` replace these); absent: any time.
    #[serde(default, rename = "maintenanceWindows")]
    pub maintenance_windows: Vec<MaintenanceWindow>,
}

/// `spec.cloudControllerManagers`: a shorthand for the Nutanix CCM's `spec.addons` catalog
/// entry `nutanix-ccm` (installed like every add-on, see docs/addons.md).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CloudControllerManagers {
    /// The `nutanix-cloud-provider` chart, e.g. `{repository: https://nutanix.github.io/helm/,
    /// version: 0.6.2}`.
    pub nutanix: Option<Chart>,
}

/// `spec.backups`: a `CronJob` next to each kamaji-etcd release (see docs/backup.md).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Backups {
    /// When to take a snapshot: a five-field cron expression in UTC (default `0 */6 * * *`).
    pub schedule: Option<String>,
    /// Snapshots kept per datastore; older ones are deleted (default 7).
    pub retention: Option<u32>,
    /// Where snapshots go: exactly one of `pvc` or `s3`.
    pub destination: BackupDestination,
    /// The image that takes snapshots: needs `/bin/sh` and `etcdctl` (default
    /// `quay.io/coreos/etcd:v3.5.6`, the last etcd image with a shell).
    pub image: Option<Image>,
}

/// `spec.backups.destination`: exactly one of `pvc` or `s3`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BackupDestination {
    /// A PersistentVolumeClaim `<datastore>-backups` next to each etcd release.
    pub pvc: Option<PvcDestination>,
    /// An S3-compatible bucket.
    pub s3: Option<S3Destination>,
}

/// `spec.backups.destination.pvc`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PvcDestination {
    /// The size of each backup volume (default `10Gi`).
    pub size: Option<Quantity>,
    /// Its storage class (default: the cluster's default class).
    pub storage_class: Option<String>,
}

/// `spec.backups.destination.s3`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct S3Destination {
    /// The Secret, in every namespace holding a backed-up datastore, with the keys `endpoint`,
    /// `bucket`, `accessKeyID` and `secretAccessKey`. Never inline.
    pub credentials_secret: String,
    /// The uploader image: needs `/bin/sh` and the `aws` CLI (default
    /// `docker.io/amazon/aws-cli:2.17.0`).
    pub image: Option<Image>,
}

/// `spec.flux`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Flux {
    /// The Flux source that holds this repository.
    pub source_ref: SourceRef,
    /// Reconcile interval of Kustomizations and HelmReleases (default `10m`).
    pub interval: Option<String>,
    /// Spread tenant Kustomizations over this many kustomize-controller shards: each gets the
    /// label `sharding.fluxcd.io/key: shard<K>` (K = 1..N, a stable hash of the tenant name).
    pub shards: Option<u32>,
    /// The Flux controller releases on the management cluster, whose CRDs `validate` checks
    /// against (defaults: the Flux v2.9 line).
    pub controllers: Option<FluxControllers>,
    /// How tenant Kustomizations get their manifests (default `mode: git`: every tenant reads
    /// the one source above). See docs/delivery.md for which to pick at which fleet size.
    pub delivery: Option<Delivery>,
}

/// `spec.flux.delivery`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Delivery {
    /// `git` (default): tenant Kustomizations read `sourceRef`, the whole repository.
    /// `oci`: each tenant reads its own OCIRepository, published by `kaas-gitops publish`, whose
    /// revision moves only when that tenant's rendered content moves.
    /// `artifact`: each tenant reads its own ExternalArtifact, cut out of the repository's source
    /// by source-watcher's ArtifactGenerator (Flux >= 2.7; not run end to end by the project's
    /// tests, see docs/delivery.md).
    pub mode: DeliveryMode,
    /// Settings of `mode: oci` (required there, refused otherwise).
    pub oci: Option<OciDelivery>,
    /// Settings of `mode: artifact` (optional there, refused otherwise).
    pub artifact: Option<ArtifactDelivery>,
}

/// `spec.flux.delivery.artifact`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ArtifactDelivery {
    /// Reconcile interval of tenant Kustomizations, i.e. drift correction (default `1h`, as
    /// Flux recommends: a new artifact revision is applied at once, whatever the interval).
    pub tenant_interval: Option<String>,
}

/// `spec.flux.delivery.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryMode {
    /// Every tenant Kustomization reads the repository's source.
    Git,
    /// One OCI artifact per tenant.
    Oci,
    /// One ExternalArtifact per tenant, made by source-watcher's ArtifactGenerator.
    Artifact,
}

/// `spec.flux.delivery.oci`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OciDelivery {
    /// `<registry host>/<path>`, without a scheme or tag: tenant `acme`'s artifact is
    /// `<repository>/acme:<tag>`.
    pub repository: String,
    /// The tag every tenant artifact is pushed to and Flux follows (default `latest`).
    pub tag: Option<String>,
    /// Reach the registry over plain HTTP (OCIRepository `spec.insecure`; default false).
    pub insecure: Option<bool>,
    /// A `kubernetes.io/dockerconfigjson` Secret in the Flux namespace with pull credentials.
    pub secret_ref: Option<String>,
    /// How often source-controller asks the registry for each tenant's digest (one HEAD request
    /// per tenant per interval; default `5m`; `wait --reconcile` asks the changed ones at once).
    pub interval: Option<String>,
    /// Reconcile interval of tenant Kustomizations, i.e. drift correction (default `1h`, as
    /// Flux recommends: a new artifact is applied at once, whatever the interval).
    pub tenant_interval: Option<String>,
}

/// `spec.flux.controllers`: Flux controller releases.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FluxControllers {
    /// source-controller (default `v1.9.1`).
    pub source: Option<String>,
    /// kustomize-controller (default `v1.9.4`).
    pub kustomize: Option<String>,
    /// helm-controller (default `v1.6.3`).
    pub helm: Option<String>,
    /// source-watcher, whose ArtifactGenerator CRD `validate` checks against (default `v2.2.4`;
    /// only with `delivery.mode: artifact`).
    pub source_watcher: Option<String>,
}

/// A Flux source reference.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceRef {
    /// `GitRepository`, `OCIRepository` or `Bucket`.
    pub kind: String,
    /// The source's name.
    pub name: String,
    /// The source's namespace (default `flux-system`).
    pub namespace: Option<String>,
}

/// A Helm chart source.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Chart {
    /// A Helm repository URL (`https://...`) or an OCI one (`oci://...`).
    pub repository: String,
    /// The chart version or a semver range.
    pub version: String,
}

/// A container image.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Image {
    /// e.g. `docker.io/clastix/kamaji`.
    pub repository: String,
    /// The tag to pin. Exclusive with `tagPolicy`.
    pub tag: Option<String>,
    /// Pick the newest tag matching a policy (`pin --update` applies it).
    pub tag_policy: Option<TagPolicy>,
}

/// `image.tagPolicy`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TagPolicy {
    /// `edge`: the newest `YY.M.N-edge` or `edge-YY.M.N` tag.
    pub pattern: TagPattern,
    /// Tags never to pick.
    #[serde(default)]
    pub exclude: Vec<String>,
}

/// A tag policy pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TagPattern {
    /// Kamaji's edge releases in either tag format.
    Edge,
}

/// `spec.kamaji`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Kamaji {
    /// The namespace of the Kamaji release (default `kamaji-system`).
    pub namespace: Option<String>,
    /// The kamaji chart.
    pub chart: Chart,
    /// The Kamaji controller image.
    pub image: Image,
    /// The datastore the kamaji chart deploys for itself (DataStore `default`).
    pub default_data_store: Option<DefaultDataStore>,
    /// The kine sidecar image Kamaji runs beside the API server of a tenant on a MySQL,
    /// PostgreSQL or NATS DataStore (default Kamaji's own, `docker.io/rancher/kine`
    /// `v0.11.10-amd64`: amd64 only).
    pub kine_image: Option<Image>,
    /// The Kubernetes versions tenants may run.
    pub supported_kubernetes: VersionRange,
}

/// `spec.kamaji.defaultDataStore`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DefaultDataStore {
    /// etcd members of the default datastore (default 3).
    pub replicas: Option<u32>,
}

/// An inclusive Kubernetes version range.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VersionRange {
    /// The oldest supported version, e.g. `v1.31.0`.
    pub min: String,
    /// The newest supported version, e.g. `v1.34.99`.
    pub max: String,
}

/// `spec.kamajiEtcd`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KamajiEtcd {
    /// The kamaji-etcd chart.
    pub chart: Chart,
    /// The etcd image.
    pub image: Image,
    /// Images of the chart's setup jobs (defaults: cfssl/cfssl v1.6.5, clastix/kubectl v1.33,
    /// quay.io/coreos/etcd v3.5.6).
    pub jobs: Option<EtcdJobs>,
}

/// `spec.kamajiEtcd.jobs`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EtcdJobs {
    /// The certificate job's image.
    pub cfssl: Option<Image>,
    /// The kubectl job's image.
    pub kubectl: Option<Image>,
    /// The etcd member job's image (needs a shell).
    pub etcd: Option<Image>,
}

/// `spec.clusterApi`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClusterApi {
    /// The Cluster API contract of the management cluster: `v1beta2` (the default; `v1beta1` is
    /// refused, since kaas-gitops renders v1beta2 objects).
    pub contract: Option<Contract>,
    /// The Cluster API release on the management cluster (core and kubeadm bootstrap), whose
    /// CRDs `validate` checks against (default `v1.14.0`).
    pub core_version: Option<String>,
    /// The cluster-api-operator release on the management cluster, whose `*Provider` CRDs
    /// `validate` checks against (default `v0.28.0`).
    pub operator_version: Option<String>,
    /// The Kamaji control plane provider.
    pub control_plane_provider: ControlPlaneProvider,
    /// Infrastructure provider versions by name, e.g. `{proxmox: v0.9.0}`.
    #[serde(default)]
    pub infrastructure_providers: BTreeMap<String, String>,
    /// Secrets (in each provider's namespace) with the variables a provider's controller reads,
    /// by provider name, e.g. `{aws: capa-variables}` holding `AWS_B64ENCODED_CREDENTIALS`.
    #[serde(default)]
    pub provider_config_secrets: BTreeMap<String, String>,
    /// Addon provider versions by name, e.g. `{helm: v0.6.4}` (CAAPH, which the Nutanix
    /// provider needs for its cloud controller manager).
    #[serde(default)]
    pub addon_providers: BTreeMap<String, String>,
    /// IPAM provider versions by name, e.g. `{in-cluster: v1.1.0}`. The in-cluster provider is
    /// installed at its default release whenever the `proxmox` provider is, which needs it.
    #[serde(default)]
    pub ipam_providers: BTreeMap<String, String>,
    /// The feature gates the management cluster's Cluster API core and kubeadm bootstrap
    /// providers run with, e.g. `{ClusterTopology: true}` (kaas-gitops does not install them, so
    /// this declares, it does not set). Declared, what the fleet needs and is not on is an error;
    /// left out, a warning names each gate the fleet needs.
    pub feature_gates: Option<BTreeMap<String, bool>>,
}

/// A Cluster API contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Contract {
    /// Cluster API v1.11 and newer (default).
    V1beta2,
    /// Cluster API v1.10 and older: refused (kaas-gitops renders v1beta2 objects), parsed to
    /// say so at the field.
    V1beta1,
}

/// `spec.clusterApi.controlPlaneProvider`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ControlPlaneProvider {
    /// The provider release, e.g. `v0.20.0`.
    pub version: String,
    /// Controller replicas (default 2).
    pub replicas: Option<u32>,
    /// The controller image; its tag defaults to `version`.
    pub image: Image,
}

/// `spec.clusterAutoscaler`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterAutoscaler {
    /// The cluster-autoscaler chart.
    pub chart: Chart,
    /// The cluster-autoscaler image; its tag serves tenants of a minor `tagsByMinor` lacks.
    pub image: Image,
    /// The image tag for tenants of each Kubernetes minor, e.g. `{"1.33": v1.33.5}`: upstream
    /// releases cluster-autoscaler per Kubernetes minor and tests each against its own.
    #[serde(default, rename = "tagsByMinor")]
    pub tags_by_minor: BTreeMap<String, String>,
}

/// `spec.loadBalancer`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoadBalancer {
    /// What serves `LoadBalancer` Services in the management cluster: `metallb` (default),
    /// `kube-vip` or `cilium` are told the tenant's VIP with their own Service annotation;
    /// `cloud` chooses the address itself (no pools, no VIP unless a tenant sets one).
    pub implementation: Option<LoadBalancerImplementation>,
    /// Address ranges (`10.0.4.100-10.0.4.199`) or CIDRs that tenant VIPs are allocated from.
    #[serde(default)]
    pub pools: Vec<String>,
}

/// `spec.loadBalancer.implementation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum LoadBalancerImplementation {
    /// MetalLB: `metallb.io/loadBalancerIPs`.
    Metallb,
    /// kube-vip's cloud provider: `kube-vip.io/loadbalancerIPs`.
    KubeVip,
    /// Cilium's LB IPAM: `lbipam.cilium.io/ips`.
    Cilium,
    /// A cloud load balancer that chooses the address.
    Cloud,
}

/// `spec.registries`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Registries {
    /// Registries (`host:port`) served over plain HTTP.
    #[serde(default)]
    pub insecure: Vec<String>,
}

/// `spec.git`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Git {
    /// Prefix of the branches `pr` creates (default `kaas/`).
    pub branch_prefix: Option<String>,
    /// The commit author (default: git config).
    pub author: Option<Author>,
}

/// A commit author.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Author {
    /// The author's name.
    pub name: String,
    /// The author's e-mail.
    pub email: String,
}
