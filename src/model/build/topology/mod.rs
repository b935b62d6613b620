//! Topology mode: the ClusterClasses of `kaas.yaml` (`spec.topology`) and a tenant built from
//! one (`spec.topology: {class, variables}`). Variables are checked against the class's schemas
//! here, so a value out of range fails the render with the tenant file's line instead of
//! failing in the management cluster.

mod patches;
mod variables;

use std::collections::{BTreeMap, BTreeSet};

use crate::diagnostics::Diagnostic;
use crate::model::build::names::{is_dns1123_label, is_dns1123_subdomain};
use crate::model::build::providers;
use crate::model::{ClusterClass, Provider, Topology};
use crate::spec::raw::{self, PlatformTopology};
use crate::spec::source::Source;

/// The default namespace of the classes and their shared templates.
pub const DEFAULT_NAMESPACE: &str = "kaas-classes";

/// Providers that ship no infrastructure cluster template kind, so no ClusterClass can use them.
const WITHOUT_CLUSTER_TEMPLATE: [Provider; 3] = [Provider::MetalStack, Provider::Packet, Provider::Tinkerbell];

/// Validates `spec.topology` of the platform.
pub(crate) fn classes(
    src: &Source,
    raw: &PlatformTopology,
    installed: &BTreeMap<Provider, String>,
    errs: &mut Vec<Diagnostic>,
) -> Topology {
    let namespace = raw.namespace.clone().unwrap_or_else(|| DEFAULT_NAMESPACE.into());
    if !is_dns1123_label(&namespace) {
        errs.push(src.error(
            "spec.topology.namespace",
            format!("`{namespace}` is not a namespace name"),
        ));
    }
    let mut names = BTreeSet::new();
    let mut out = Vec::new();
    for (i, c) in raw.classes.iter().enumerate() {
        let f = format!("spec.topology.classes[{i}]");
        if !is_dns1123_subdomain(&c.name) || c.name.len() > 40 {
            errs.push(
                src.error(&format!("{f}.name"), format!("`{}` is not a class name", c.name))
                    .with_hint("a DNS-1123 name of at most 40 characters (its templates append suffixes)"),
            );
        }
        if !names.insert(c.name.clone()) {
            errs.push(src.error(&format!("{f}.name"), format!("a second class named `{}`", c.name)));
        }
        let provider = c.infrastructure.provider;
        if provider == Provider::Azure {
            // AzureClusterTemplate has no `controlPlaneEnabled` (cluster-api-provider-azure
            // v1.26.0 CRD), which defaults to true: a class-built AzureCluster would make its
            // own API server load balancer beside Kamaji's.
            errs.push(
                src.error(
                    &format!("{f}.infrastructure.provider"),
                    "`azure` cannot back a ClusterClass for Kamaji tenants",
                )
                .with_hint("CAPZ's AzureClusterTemplate cannot say `controlPlaneEnabled: false`, so a class-built AzureCluster would make an API server load balancer of its own; define Azure tenants with `spec.infrastructure` instead"),
            );
        }
        if WITHOUT_CLUSTER_TEMPLATE.contains(&provider) {
            errs.push(
                src.error(
                    &format!("{f}.infrastructure.provider"),
                    format!("`{}` cannot back a ClusterClass", provider.as_str()),
                )
                .with_hint(format!(
                    "the `{}` provider ships no infrastructure cluster template kind; define its tenants with `spec.infrastructure` instead",
                    provider.as_str()
                )),
            );
        }
        let infrastructure =
            providers::infrastructure(src, &format!("{f}.infrastructure"), &c.infrastructure, installed, errs);
        let vars = variables::declarations(src, &format!("{f}.variables"), &c.variables, errs);
        let declared: BTreeSet<String> = vars.iter().map(|v| v.name.clone()).collect();
        let patches = patches::patches(src, &format!("{f}.patches"), &c.patches, &declared, errs);
        let Some(infrastructure) = infrastructure else {
            continue;
        };
        out.push(ClusterClass {
            name: c.name.clone(),
            infrastructure,
            cpus: c.machine.cpus.unwrap_or(2),
            memory_mib: c.machine.memory_mib.unwrap_or(4096),
            disk_gib: c.machine.disk_gib.unwrap_or(40),
            variables: vars,
            patches,
        });
    }
    Topology {
        namespace,
        classes: out,
    }
}

/// Checks a tenant's `spec.topology` against the platform's classes; returns the class.
pub(crate) fn tenant<'a>(
    src: &Source,
    spec: &raw::TenantSpec,
    topology: &raw::TenantTopology,
    platform: Option<&'a Topology>,
    errs: &mut Vec<Diagnostic>,
) -> Option<(&'a ClusterClass, Vec<(String, serde_json::Value)>)> {
    let cp = &spec.control_plane;
    let class_owned = [
        ("service", cp.service.is_some()),
        ("addons", cp.addons.is_some()),
        ("apiServer", cp.api_server.is_some()),
        ("controllerManager", cp.controller_manager.is_some()),
        ("scheduler", cp.scheduler.is_some()),
        ("kubelet", cp.kubelet.is_some()),
    ];
    for (key, present) in class_owned {
        if present {
            errs.push(
                src.key_error(
                    &format!("spec.controlPlane.{key}"),
                    format!("`controlPlane.{key}` is decided by the class in topology mode"),
                )
                .with_hint("the classes share one KamajiControlPlaneTemplate; add a class variable and a patch to vary it per tenant"),
            );
        }
    }
    for (i, w) in spec.workers.iter().enumerate() {
        for (key, present) in [("machine", w.machine.is_some()), ("proxmox", w.proxmox.is_some())] {
            if present {
                errs.push(
                    src.key_error(
                        &format!("spec.workers[{i}].{key}"),
                        format!("`{key}` is decided by the class in topology mode"),
                    )
                    .with_hint(
                        "the class's machine template sizes every worker; use a class variable and a patch to vary it",
                    ),
                );
            }
        }
    }
    let known = |t: &Topology| {
        t.classes
            .iter()
            .map(|c| format!("`{}`", c.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some(class) = platform.and_then(|t| t.class(&topology.class)) else {
        errs.push(
            src.error(
                "spec.topology.class",
                format!("the platform defines no ClusterClass `{}`", topology.class),
            )
            .with_hint(match platform {
                Some(t) if !t.classes.is_empty() => {
                    format!("classes in kaas.yaml `spec.topology.classes`: {}", known(t))
                }
                _ => {
                    "kaas.yaml defines no classes: add them under `spec.topology.classes`, or use `spec.infrastructure`"
                        .into()
                }
            }),
        );
        return None;
    };
    let values = variables::values(src, class, &topology.variables, errs);
    Some((class, values))
}
