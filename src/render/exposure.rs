//! The Gateway tenant API servers are reached through, when kaas.yaml names its GatewayClass
//! (`spec.apiServerExposure.gateway.className`): one listener for every API server and the one
//! Kamaji attaches every Konnectivity route to (see `model::exposure`). Both are TLS
//! passthrough: the API servers terminate TLS with the certificates Kamaji issues, and pick the
//! tenant by SNI. Without a class the platform provides the Gateway (docs/exposure.md lists what
//! it must have).

use crate::map;
use crate::model::Platform;
use crate::model::exposure::{self, Gateway, KONNECTIVITY_LISTENER, KONNECTIVITY_PORT};

use crate::render::node::Node;
use crate::render::shared::platform_labels;
use crate::render::{Object, meta};
use crate::seq;

/// The Gateway API version Kamaji 26.8.2-edge creates its TLSRoutes with
/// (`sigs.k8s.io/gateway-api/apis/v1`, gateway-api v1.5.1 in its go.mod).
pub const GATEWAY_API_VERSION: &str = "gateway.networking.k8s.io/v1";

/// The Gateway's namespace, when kaas-gitops renders the Gateway.
pub fn rendered_namespace(p: &Platform) -> Option<&str> {
    let g = p.exposures.gateway.as_ref()?;
    g.class_name.as_ref().map(|_| g.namespace.as_str())
}

/// The Gateway, when kaas-gitops renders it.
pub fn platform_objects(p: &Platform) -> Vec<Object> {
    let Some(g) = p.exposures.gateway.as_ref() else {
        return Vec::new();
    };
    let Some(class) = &g.class_name else {
        return Vec::new();
    };
    vec![Object {
        kind: "Gateway",
        name: g.name.clone(),
        body: map! {
            "apiVersion" => GATEWAY_API_VERSION,
            "kind" => "Gateway",
            "metadata" => meta(&g.name, Some(&g.namespace), platform_labels()),
            "spec" => map! {
                "gatewayClassName" => class,
                "listeners" => seq![listener(g, &g.listener, g.port), listener(g, KONNECTIVITY_LISTENER, KONNECTIVITY_PORT)],
            },
        },
    }]
}

/// A TLS passthrough listener for TLSRoutes from any namespace (each tenant's route lives in
/// its own), covering every tenant's hostname when the pattern allows a wildcard.
fn listener(g: &Gateway, name: &str, port: u16) -> Node {
    map! {
        "name" => name,
        "protocol" => "TLS",
        "port" => port,
        "hostname" => exposure::wildcard(&g.hostname),
        "tls" => map! {"mode" => "Passthrough"},
        "allowedRoutes" => map! {
            "namespaces" => map! {"from" => "All"},
            "kinds" => seq![map! {"kind" => "TLSRoute"}],
        },
    }
}
