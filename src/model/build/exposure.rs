//! kaas.yaml `spec.apiServerExposure` and a tenant's `spec.controlPlane.exposure`, `hostname`
//! and `acknowledge` into [`crate::model::exposure`], with the rules that keep every pairing
//! working (see that module for the upstream behaviour they follow).

use std::net::IpAddr;

use super::names::{is_dns1123_label, is_dns1123_subdomain};
use crate::diagnostics::Diagnostic;
use crate::model::exposure::{
    self, DEFAULT_LISTENER, Exposure, ExposureKind, Exposures, Gateway, Ingress, KONNECTIVITY_LISTENER,
    KONNECTIVITY_PORT, TENANT_PLACEHOLDER,
};
use crate::spec::raw;
use crate::spec::source::Source;

pub(super) fn kind(k: raw::ExposureKind) -> ExposureKind {
    match k {
        raw::ExposureKind::Service => ExposureKind::Service,
        raw::ExposureKind::Gateway => ExposureKind::Gateway,
        raw::ExposureKind::Ingress => ExposureKind::Ingress,
    }
}

/// kaas.yaml `spec.apiServerExposure`.
pub(super) fn platform(src: &Source, spec: Option<&raw::ApiServerExposure>, errs: &mut Vec<Diagnostic>) -> Exposures {
    let Some(spec) = spec else {
        return Exposures::default();
    };
    const AT: &str = "spec.apiServerExposure";
    let gateway = spec.gateway.as_ref().map(|g| {
        let at = format!("{AT}.gateway");
        for (field, value) in [("name", &g.name), ("namespace", &g.namespace)] {
            if !is_dns1123_label(value) {
                errs.push(
                    src.error(&format!("{at}.{field}"), format!("`{value}` is not a valid Gateway {field}"))
                        .with_hint("lower-case letters, digits and `-`, at most 63 characters"),
                );
            }
        }
        pattern(src, &format!("{at}.hostname"), &g.hostname, errs);
        let listener = g.listener.clone().unwrap_or_else(|| DEFAULT_LISTENER.to_string());
        if !is_dns1123_subdomain(&listener) {
            errs.push(
                src.error(&format!("{at}.listener"), format!("`{listener}` is not a listener name"))
                    .with_hint("a Gateway API section name: lower-case letters, digits, `-` and `.`"),
            );
        } else if listener == KONNECTIVITY_LISTENER {
            errs.push(
                src.error(&format!("{at}.listener"), format!("`{KONNECTIVITY_LISTENER}` is Konnectivity's listener"))
                    .with_hint("Kamaji attaches every tenant's Konnectivity route to it; name the API server's listener otherwise, e.g. `kube-apiserver`"),
            );
        }
        let port = g.port.unwrap_or(6443);
        if port == 0 || port == KONNECTIVITY_PORT {
            errs.push(
                src.error(&format!("{at}.port"), format!("the API server listener cannot use port {port}"))
                    .with_hint(format!("use 1-65535 but {KONNECTIVITY_PORT} (Konnectivity's listener); the default is 6443")),
            );
        }
        if let Some(class) = &g.class_name
            && !is_dns1123_subdomain(class)
        {
            errs.push(
                src.error(&format!("{at}.className"), format!("`{class}` is not a GatewayClass name"))
                    .with_hint("a DNS subdomain: lower-case letters, digits, `-` and `.`"),
            );
        }
        Gateway {
            name: g.name.clone(),
            namespace: g.namespace.clone(),
            hostname: g.hostname.clone(),
            listener,
            class_name: g.class_name.clone(),
            port,
        }
    });
    let ingress = spec.ingress.as_ref().map(|i| {
        let at = format!("{AT}.ingress");
        if !is_dns1123_subdomain(&i.class_name) {
            errs.push(
                src.error(
                    &format!("{at}.className"),
                    format!("`{}` is not an IngressClass name", i.class_name),
                )
                .with_hint("a DNS subdomain: lower-case letters, digits, `-` and `.`"),
            );
        }
        pattern(src, &format!("{at}.hostname"), &i.hostname, errs);
        let port = i.port.unwrap_or(443);
        if port == 0 {
            errs.push(
                src.error(&format!("{at}.port"), "port 0 is not a port")
                    .with_hint("use 1-65535; the default is 443"),
            );
        }
        Ingress {
            class_name: i.class_name.clone(),
            hostname: i.hostname.clone(),
            port,
            annotations: i.annotations.clone(),
        }
    });
    let default = spec.default.map_or(ExposureKind::Service, kind);
    if let Some(missing) = unconfigured(default, gateway.is_some(), ingress.is_some()) {
        errs.push(
            src.error(
                &format!("{AT}.default"),
                format!("the default `{}` has no `{missing}` to use", default.as_str()),
            )
            .with_hint(format!("add `{AT}.{missing}`, or choose another default")),
        );
    }
    Exposures {
        default,
        gateway,
        ingress,
    }
}

/// The block `kind` needs when it is not configured.
fn unconfigured(kind: ExposureKind, gateway: bool, ingress: bool) -> Option<&'static str> {
    match kind {
        ExposureKind::Gateway if !gateway => Some("gateway"),
        ExposureKind::Ingress if !ingress => Some("ingress"),
        _ => None,
    }
}

/// A hostname pattern: `{tenant}` once, and a DNS name for any tenant name.
fn pattern(src: &Source, at: &str, pattern: &str, errs: &mut Vec<Diagnostic>) {
    let example = exposure::hostname(pattern, "acme");
    if pattern.matches(TENANT_PLACEHOLDER).count() != 1 {
        errs.push(
            src.error(at, format!("`{pattern}` does not contain `{TENANT_PLACEHOLDER}` once"))
                .with_hint("every tenant needs its own hostname: write e.g. `{tenant}.k8s.example.com`"),
        );
    } else if !is_dns1123_subdomain(&example) || !example.contains('.') {
        errs.push(
            src.error(
                at,
                format!("`{pattern}` does not make a DNS name (`{example}` for tenant `acme`)"),
            )
            .with_hint("lower-case letters, digits, `-` and `.`, with a domain: e.g. `{tenant}.k8s.example.com`"),
        );
    }
}

/// Where a tenant's file chose its exposure: `exposure` when it names one, else `otherwise`
/// (the platform's default chose it).
pub(super) fn chosen_at(cp: &raw::ControlPlane, otherwise: &'static str) -> &'static str {
    if cp.exposure.is_some() {
        "spec.controlPlane.exposure"
    } else {
        otherwise
    }
}

/// What a tenant's file makes of its exposure. `vip` is its `endpoint.host`, already parsed.
pub(super) struct TenantExposure {
    /// How it is reached.
    pub exposure: Exposure,
    /// Its API server port, when the exposure decides it (behind a Gateway).
    pub port: Option<u16>,
    /// `acknowledge: [endpointMove]`.
    pub move_acknowledged: bool,
}

/// A tenant's `spec.controlPlane.exposure`, `hostname` and `acknowledge`.
pub(super) fn tenant(
    src: &Source,
    name: &str,
    cp: &raw::ControlPlane,
    exposures: &Exposures,
    errs: &mut Vec<Diagnostic>,
) -> TenantExposure {
    let chosen = cp.exposure.map_or(exposures.default, kind);
    let field = chosen_at(cp, "spec.controlPlane");
    if let Some(missing) = unconfigured(chosen, exposures.gateway.is_some(), exposures.ingress.is_some()) {
        errs.push(
            src.error(
                field,
                format!(
                    "exposure `{}` needs kaas.yaml `spec.apiServerExposure.{missing}`",
                    chosen.as_str()
                ),
            )
            .with_hint(format!("configure the platform's {missing} there, or choose `service`")),
        );
    }
    if let Some(h) = &cp.hostname
        && (!is_dns1123_subdomain(h) || !h.contains('.') || h.parse::<IpAddr>().is_ok())
    {
        errs.push(
            src.error("spec.controlPlane.hostname", format!("`{h}` is not a DNS name"))
                .with_hint("a fully qualified name such as `acme.k8s.example.com`, without a port"),
        );
    }
    let hostname = |pattern: &str| cp.hostname.clone().unwrap_or_else(|| exposure::hostname(pattern, name));
    let mut port = None;
    let exposure = match chosen {
        ExposureKind::Service => Exposure::Service {
            extra_name: cp.hostname.clone(),
        },
        ExposureKind::Gateway => {
            let g = exposures.gateway.as_ref();
            if let (Some(g), Some(own)) = (g, cp.endpoint.as_ref().and_then(|e| e.port))
                && own != g.port
            {
                errs.push(
                    src.error("spec.controlPlane.endpoint.port", format!("port {own} differs from the Gateway listener's port {}", g.port))
                        .with_hint("behind a Gateway Kamaji gives kubelets the hostname with the API server's own port, so it is the listener's (kaas.yaml `spec.apiServerExposure.gateway.port`): drop `endpoint.port`"),
                );
            }
            port = g.map(|g| g.port);
            Exposure::Gateway {
                hostname: hostname(g.map_or("", |g| &g.hostname)),
            }
        }
        ExposureKind::Ingress => Exposure::Ingress {
            hostname: hostname(exposures.ingress.as_ref().map_or("", |i| &i.hostname)),
        },
    };
    TenantExposure {
        exposure,
        port,
        move_acknowledged: cp.acknowledge.contains(&raw::ControlPlaneAcknowledgement::EndpointMove),
    }
}
