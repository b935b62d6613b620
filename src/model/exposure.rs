//! How a tenant API server is reached: its own Service (a VIP per tenant), or one of the
//! platform's entry points shared by every tenant and told apart by hostname (SNI): a Gateway
//! (Kamaji creates a TLSRoute per tenant) or an Ingress with TLS passthrough.
//!
//! Upstream, at the pinned versions:
//! - The Kamaji provider v0.20.0 turns `KamajiControlPlane.spec.network.gateway` into the
//!   TenantControlPlane's `controlPlane.gateway` with the hostname's port cut off and one parent
//!   reference (name, namespace, `sectionName`), and adds the host to the certificate SANs
//!   (`controllers/kamajicontrolplane_controller_tcp.go:164-196`); `ingress` likewise
//!   (`:198-219`). It writes the Cluster's endpoint as the hostname and the port written after
//!   it, **443 when none is** (`controllers/kamajicontrolplane_controller_cluster_patch.go`,
//!   `controlPlaneEndpoint`).
//! - Kamaji 26.8.2-edge gives kubelets (kubeadm's `controlPlaneEndpoint`, `cluster-info`) the
//!   Gateway hostname with the **API server's own port** (`internal/resources/kubeadm_config.go`,
//!   `GetControlPlaneAddressAndPortFromHostname(hostname, port)`), and the Ingress hostname with
//!   the port written after it. So the hostname is always rendered with its port, and behind a
//!   Gateway the listener's port is the API server's port.
//! - Konnectivity gets a second TLSRoute on every parent, with the listener name
//!   `konnectivity-server` and the Konnectivity Service's port (8132) fixed
//!   (`internal/resources/konnectivity/gateway_resource.go`, `newParentRefsSpecWithPortAndSection`).

use std::collections::BTreeMap;

/// The listener Kamaji attaches every Konnectivity TLSRoute to.
pub const KONNECTIVITY_LISTENER: &str = "konnectivity-server";
/// The Konnectivity server's port (Kamaji's default for `addons.konnectivity.server.port`).
pub const KONNECTIVITY_PORT: u16 = 8132;
/// The API server listener's name when kaas.yaml does not name one.
pub const DEFAULT_LISTENER: &str = "kube-apiserver";
/// What stands for the tenant's name in a hostname pattern.
pub const TENANT_PLACEHOLDER: &str = "{tenant}";

/// The platform's entry points (kaas.yaml `spec.apiServerExposure`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exposures {
    /// What tenants get when their file does not choose.
    pub default: ExposureKind,
    /// The Gateway, when one is configured.
    pub gateway: Option<Gateway>,
    /// The Ingress class, when one is configured.
    pub ingress: Option<Ingress>,
}

/// The three ways, without their details.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ExposureKind {
    /// The tenant's own Service.
    #[default]
    Service,
    /// The platform's Gateway.
    Gateway,
    /// The platform's Ingress class.
    Ingress,
}

impl ExposureKind {
    /// The word in the files.
    pub fn as_str(self) -> &'static str {
        match self {
            ExposureKind::Service => "service",
            ExposureKind::Gateway => "gateway",
            ExposureKind::Ingress => "ingress",
        }
    }
}

/// The Gateway every tenant API server's TLSRoute attaches to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gateway {
    /// Its name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// The hostname pattern, with [`TENANT_PLACEHOLDER`].
    pub hostname: String,
    /// The API server listener (`sectionName` of the TLSRoutes).
    pub listener: String,
    /// The GatewayClass, when kaas-gitops renders the Gateway.
    pub class_name: Option<String>,
    /// The API server listener's port, which is every such tenant's API server port.
    pub port: u16,
}

/// The Ingress class tenant API servers are routed through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ingress {
    /// The IngressClass.
    pub class_name: String,
    /// The hostname pattern, with [`TENANT_PLACEHOLDER`].
    pub hostname: String,
    /// The port the controller serves TLS on.
    pub port: u16,
    /// Annotations of every Ingress (the controller's passthrough switch).
    pub annotations: BTreeMap<String, String>,
}

/// The hostname `pattern` gives tenant `name`.
pub fn hostname(pattern: &str, name: &str) -> String {
    pattern.replace(TENANT_PLACEHOLDER, name)
}

/// The listener hostname that covers every tenant of `pattern`: `*.<rest>` when the tenant's
/// name is the whole first label, else none (the listener then accepts any hostname).
pub fn wildcard(pattern: &str) -> Option<String> {
    let rest = pattern.strip_prefix(TENANT_PLACEHOLDER)?.strip_prefix('.')?;
    (!rest.contains(TENANT_PLACEHOLDER)).then(|| format!("*.{rest}"))
}

/// How one tenant API server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exposure {
    /// Its own Service; `extra_name` is a hostname its certificate also carries (kept while the
    /// tenant moves off a Gateway or an Ingress).
    Service {
        /// An extra certificate name.
        extra_name: Option<String>,
    },
    /// A TLSRoute on the platform's Gateway.
    Gateway {
        /// The tenant's hostname.
        hostname: String,
    },
    /// An Ingress of the platform's class.
    Ingress {
        /// The tenant's hostname.
        hostname: String,
    },
}

impl Exposure {
    /// Which of the three.
    pub fn kind(&self) -> ExposureKind {
        match self {
            Exposure::Service { .. } => ExposureKind::Service,
            Exposure::Gateway { .. } => ExposureKind::Gateway,
            Exposure::Ingress { .. } => ExposureKind::Ingress,
        }
    }

    /// The hostname clients use, behind a Gateway or an Ingress.
    pub fn hostname(&self) -> Option<&str> {
        match self {
            Exposure::Service { .. } => None,
            Exposure::Gateway { hostname } | Exposure::Ingress { hostname } => Some(hostname),
        }
    }
}
