//! controlplane.cluster.x-k8s.io/v1alpha2: the `KamajiControlPlane`.

use std::collections::BTreeMap;

use serde::Serialize;

use super::ObjectMeta;

/// The API version of the `KamajiControlPlane`.
pub const API_VERSION: &str = "controlplane.cluster.x-k8s.io/v1alpha2";

/// A `KamajiControlPlane`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KamajiControlPlane {
    api_version: &'static str,
    kind: &'static str,
    /// `metadata`.
    pub metadata: ObjectMeta,
    /// `spec`.
    pub spec: KamajiControlPlaneSpec,
}

impl KamajiControlPlane {
    /// A `KamajiControlPlane` with its apiVersion and kind.
    pub fn new(metadata: ObjectMeta, spec: KamajiControlPlaneSpec) -> KamajiControlPlane {
        KamajiControlPlane {
            api_version: API_VERSION,
            kind: "KamajiControlPlane",
            metadata,
            spec,
        }
    }
}

/// One of `KamajiControlPlane.spec.dataStoreOverrides` (Kamaji's `DataStoreOverride`, which the
/// provider v0.20.0 copies into the TenantControlPlane: `controllers/kamajicontrolplane_controller_tcp.go`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DataStoreOverride {
    /// `<group>/<resource>`.
    pub resource: String,
    /// The etcd DataStore.
    pub data_store: String,
}

/// `KamajiControlPlane.spec`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KamajiControlPlaneSpec {
    /// The Kubernetes version.
    pub version: String,
    /// API server replicas.
    pub replicas: u32,
    /// The Kamaji DataStore.
    pub data_store_name: String,
    /// The schema (etcd key prefix, SQL database) in it; unset: Kamaji's UID
    /// (`model::datastore_names`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_store_schema: Option<String>,
    /// The user in it; unset: Kamaji's UID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_store_username: Option<String>,
    /// Resources kept on other (etcd) DataStores.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub data_store_overrides: Vec<DataStoreOverride>,
    /// `addons`, written even when all are off (`{}`).
    pub addons: Addons,
    /// `apiServer`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_server: Option<Component>,
    /// `controllerManager`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub controller_manager: Option<Component>,
    /// `scheduler`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<Component>,
    /// `kubelet`.
    pub kubelet: Kubelet,
    /// `network`.
    pub network: Network,
    /// `deployment`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment: Option<Deployment>,
}

/// `deployment`: the control plane pods.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Deployment {
    /// Volumes of the pods (`corev1.Volume`).
    pub extra_volumes: Vec<crate::render::node::Node>,
}

/// The addons Kamaji installs; each one on is an empty map (its defaults).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Addons {
    /// `coreDNS`.
    #[serde(rename = "coreDNS", skip_serializing_if = "Option::is_none")]
    pub core_dns: Option<CoreDns>,
    /// `kubeProxy`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kube_proxy: Option<Defaults>,
    /// `konnectivity`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub konnectivity: Option<Defaults>,
}

/// `addons.coreDNS`: Kamaji's CoreDNS with its Service address.
///
/// The address must be written: the provider copies it to the TenantControlPlane on every
/// reconcile (cluster-api-control-plane-provider-kamaji v0.20.0
/// `controllers/kamajicontrolplane_controller_tcp.go:93-94`, overwriting the
/// `networkProfile.dnsServiceIPs` Kamaji's webhook derived on create only,
/// `internal/webhook/handlers/tcp_defaults.go`), and Kamaji uploads the tenant's
/// `kube-system/kubelet-config` with `clusterDNS` from it (`internal/kubeadm/uploadconfig.go`):
/// left empty, kubelets give pods no cluster DNS.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CoreDns {
    /// `dnsServiceIPs`: the tenant's cluster DNS address.
    #[serde(rename = "dnsServiceIPs", skip_serializing_if = "Vec::is_empty")]
    pub dns_service_ips: Vec<String>,
}

/// An empty map: a block turned on with its defaults.
#[derive(Debug, Clone, Serialize)]
pub struct Defaults {}

/// `apiServer`, `controllerManager` or `scheduler`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Component {
    /// Extra command line flags.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra_args: Option<Vec<String>>,
    /// Resource requests and limits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<Resources>,
    /// Volume mounts of the container (`corev1.VolumeMount`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra_volume_mounts: Option<Vec<crate::render::node::Node>>,
}

/// Requests and limits, by resource name.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resources {
    /// Requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<BTreeMap<String, String>>,
    /// Limits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<BTreeMap<String, String>>,
}

/// `kubelet`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Kubelet {
    /// The cgroup driver (`systemd` or `cgroupfs`).
    pub cgroupfs: String,
    /// The node address types the API server tries, in order.
    pub preferred_address_types: Vec<String>,
}

/// `network`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Network {
    /// The Service type of the API server.
    pub service_type: String,
    /// The VIP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_address: Option<String>,
    /// Annotations of the API server's Service.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_annotations: Option<BTreeMap<String, String>>,
    /// `dnsServiceIPs`: the kubelets' `clusterDNS` when Kamaji's CoreDNS is off (with it on, the
    /// provider takes `addons.coreDNS.dnsServiceIPs` instead, v0.20.0
    /// `controllers/kamajicontrolplane_controller_tcp.go:90,93-94`).
    #[serde(rename = "dnsServiceIPs", skip_serializing_if = "Vec::is_empty")]
    pub dns_service_ips: Vec<String>,
    /// The Gateway the API server is reached through (v0.20.0 `GatewayComponent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway: Option<GatewayRoute>,
    /// The Ingress the API server is reached through (v0.20.0 `IngressComponent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingress: Option<IngressRoute>,
    /// Extra names of the API server's certificate.
    #[serde(rename = "certSANs", skip_serializing_if = "Vec::is_empty")]
    pub cert_sans: Vec<String>,
}

/// `network.gateway`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayRoute {
    /// The Gateway's name.
    pub name: String,
    /// The Gateway's namespace.
    pub namespace: String,
    /// `host:port`: the provider writes the port into the Cluster's endpoint (443 when none
    /// is written) and cuts it off for the TLSRoute and the certificate.
    pub hostname: String,
    /// The API server's listener.
    pub section_name: String,
}

/// `network.ingress`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IngressRoute {
    /// The IngressClass.
    pub class_name: String,
    /// `host:port`, as for the Gateway; Kamaji gives kubelets this port too.
    pub hostname: String,
    /// The Ingress's annotations (the controller's TLS passthrough switch).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra_annotations: BTreeMap<String, String>,
}
