//! How tenant API servers are reached, as written: kaas.yaml `spec.apiServerExposure` (the
//! fleet's choice and the Gateway or Ingress it uses) and a tenant's
//! `spec.controlPlane.exposure` (its own choice).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How one tenant API server is reached from outside the management cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ExposureKind {
    /// Its own Service (`spec.controlPlane.service`): a load-balanced VIP by default.
    Service,
    /// A TLSRoute on the platform's Gateway, by hostname (`spec.apiServerExposure.gateway`).
    Gateway,
    /// An Ingress with TLS passthrough, by hostname (`spec.apiServerExposure.ingress`).
    Ingress,
}

/// `spec.apiServerExposure` of kaas.yaml.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApiServerExposure {
    /// What tenants whose file does not say get: `service` (default), `gateway` or `ingress`.
    pub default: Option<ExposureKind>,
    /// The Gateway tenant API servers are routed through, by hostname (Gateway API TLSRoutes
    /// that Kamaji creates).
    pub gateway: Option<GatewayExposure>,
    /// The Ingress class tenant API servers are routed through with TLS passthrough.
    pub ingress: Option<IngressExposure>,
}

/// `spec.apiServerExposure.gateway`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GatewayExposure {
    /// The Gateway's name.
    pub name: String,
    /// The Gateway's namespace.
    pub namespace: String,
    /// Each tenant's hostname, with `{tenant}` for its name: `{tenant}.k8s.example.com`.
    pub hostname: String,
    /// The listener the API servers' TLSRoutes attach to (default `kube-apiserver`): TLS,
    /// passthrough, on the tenants' API server port. Konnectivity's routes attach to the
    /// listener `konnectivity-server` on port 8132 (Kamaji's fixed names).
    pub listener: Option<String>,
    /// A GatewayClass: kaas-gitops then renders the Gateway itself, with both listeners, into
    /// the platform layer. Without it the platform provides the Gateway.
    pub class_name: Option<String>,
    /// The API server port of every tenant behind the Gateway: its listener's port (default
    /// 6443). Kamaji gives kubelets the hostname with the API server's own port, so the two
    /// must be equal.
    pub port: Option<u16>,
}

/// `spec.apiServerExposure.ingress`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct IngressExposure {
    /// The IngressClass.
    pub class_name: String,
    /// Each tenant's hostname, with `{tenant}` for its name: `{tenant}.k8s.example.com`.
    pub hostname: String,
    /// The port the ingress controller serves TLS on (default 443).
    pub port: Option<u16>,
    /// Annotations of every tenant's Ingress: the controller's TLS passthrough switch, e.g.
    /// `nginx.ingress.kubernetes.io/ssl-passthrough: "true"`.
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

/// A change to a running tenant's control plane that kaas-gitops refuses unless acknowledged
/// (`spec.controlPlane.acknowledge`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ControlPlaneAcknowledgement {
    /// The API server's endpoint (its address or hostname, or its port) changes: every
    /// kubelet and kubeconfig must move to it (docs/exposure.md says how).
    EndpointMove,
}
