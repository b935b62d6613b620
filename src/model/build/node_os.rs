//! `workers[].os`: what a pool's image boots with, and so the format in which kubeadm's
//! configuration reaches it.
//!
//! Flatcar Container Linux boots with Ignition only: it ignores the cloud-config that Cluster
//! API's kubeadm bootstrap provider writes by default, so a Flatcar pool needs
//! `KubeadmConfigTemplate.spec.template.spec.format: ignition` (cluster-api v1.14.0
//! `api/bootstrap/kubeadm/v1beta2/kubeadmconfig_types.go`, `Format`; the conversion in
//! `bootstrap/kubeadm/pkg/ignition/clc/clc.go`), which the kubeadm bootstrap provider
//! accepts only with its `KubeadmBootstrapFormatIgnition` gate on
//! (`bootstrap/kubeadm/webhooks/admission/kubeadmconfig.go`, `validateIgnition`). kaas-gitops
//! renders that for Hetzner, Proxmox and metal-stack (see `render/providers/flatcar.rs`);
//! elsewhere a Flatcar pool is refused rather than rendered to never join.

use crate::diagnostics::Diagnostic;
use crate::model::{NodeOs, Platform, Provider};
use crate::spec::raw;
use crate::spec::source::Source;

/// The gate Cluster API's kubeadm bootstrap provider needs for `format: ignition`.
pub(crate) const IGNITION_GATE: &str = "KubeadmBootstrapFormatIgnition";

/// The pool's OS: written, or read off the provider's image name.
pub(super) fn pool(
    src: &Source,
    f: &str,
    w: &raw::Worker,
    spec: &raw::TenantSpec,
    platform: &Platform,
    errs: &mut Vec<Diagnostic>,
) -> NodeOs {
    let Some(infra) = &spec.infrastructure else {
        if let Some(os) = w.os {
            errs.push(
                src.error(
                    &format!("{f}.os"),
                    format!("`os: {}` on a pool of a topology tenant", os.as_str()),
                )
                .with_hint("in topology mode the ClusterClass decides how machines boot: drop `os`"),
            );
        }
        return NodeOs::CloudInit;
    };
    let named = flatcar_image(infra);
    let os = match (w.os, infra.provider) {
        (Some(NodeOs::CloudInit), Provider::MetalStack) => {
            errs.push(
                src.error(
                    &format!("{f}.os"),
                    "metal-stack machines boot with Ignition, not cloud-init",
                )
                .with_hint("drop `os`: metal-stack pools are rendered with `format: ignition`"),
            );
            return NodeOs::Flatcar;
        }
        (Some(NodeOs::CloudInit), _) => {
            if let Some((field, image)) = named {
                errs.push(
                    src.error(field, format!("`{image}` is a Flatcar image, which boots with Ignition, and `{f}.os` says `cloud-init`"))
                        .with_hint("drop `os: cloud-init` to render the pool with Ignition, or use an image with cloud-init (e.g. Ubuntu)"),
                );
            }
            return NodeOs::CloudInit;
        }
        (_, Provider::MetalStack) => return NodeOs::Flatcar,
        (Some(NodeOs::Flatcar), _) => NodeOs::Flatcar,
        (None, _) if named.is_some() => NodeOs::Flatcar,
        (None, _) => return NodeOs::CloudInit,
    };
    let at = match (w.os, named) {
        (None, Some((field, _))) => field.to_string(),
        _ => format!("{f}.os"),
    };
    match infra.provider {
        Provider::Hetzner | Provider::Proxmox => {}
        other => {
            errs.push(
                src.error(&at, format!("Flatcar pools are not rendered for `{}`", other.as_str()))
                    .with_hint("kaas-gitops renders Flatcar (Ignition) pools for hetzner, proxmox and metal-stack; use an image with cloud-init (e.g. Ubuntu) here"),
            );
            return NodeOs::CloudInit;
        }
    }
    if let Some(declared) = &platform.feature_gates
        && declared.get(IGNITION_GATE) != Some(&true)
    {
        errs.push(
            src.error(&at, format!("a Flatcar pool needs Cluster API's feature gate `{IGNITION_GATE}` (off by default; its webhook refuses `format: ignition`), and kaas.yaml `spec.clusterApi.featureGates` does not turn it on"))
                .with_hint(gate_hint()),
        );
    }
    os
}

/// How to turn the gate on, for the error here and the warning when the platform declares no
/// gates at all.
pub(crate) fn gate_hint() -> String {
    format!(
        "run Cluster API's kubeadm bootstrap provider with the gate on (cluster-api-operator: `spec.manager.featureGates: {{{IGNITION_GATE}: true}}`; clusterctl: `EXP_KUBEADM_BOOTSTRAP_FORMAT_IGNITION=true`), then declare it in kaas.yaml: `spec.clusterApi.featureGates: {{{IGNITION_GATE}: true}}`"
    )
}

/// The field and value of an image name that says Flatcar. Proxmox templates and AWS AMIs are
/// numbers and IDs: there `os: flatcar` says it.
fn flatcar_image(infra: &raw::Infrastructure) -> Option<(&'static str, &str)> {
    let (field, image) = match infra.provider {
        Provider::Hetzner => (
            "spec.infrastructure.hetzner.imageName",
            infra.hetzner.as_ref()?.image_name.as_deref()?,
        ),
        Provider::Kubevirt => (
            "spec.infrastructure.kubevirt.image",
            infra.kubevirt.as_ref()?.image.as_str(),
        ),
        Provider::Nutanix => (
            "spec.infrastructure.nutanix.image",
            infra.nutanix.as_ref()?.image.as_str(),
        ),
        Provider::Packet => ("spec.infrastructure.packet.os", infra.packet.as_ref()?.os.as_deref()?),
        Provider::Vsphere => (
            "spec.infrastructure.vsphere.template",
            infra.vsphere.as_ref()?.template.as_str(),
        ),
        Provider::Openstack => (
            "spec.infrastructure.openstack.image",
            infra.openstack.as_ref()?.image.as_str(),
        ),
        Provider::Metal3 => (
            "spec.infrastructure.metal3.image.url",
            infra.metal3.as_ref()?.image.url.as_str(),
        ),
        Provider::Ionoscloud | Provider::Azure => return None,
        Provider::Tinkerbell => (
            "spec.infrastructure.tinkerbell.osDistro",
            infra.tinkerbell.as_ref()?.os_distro.as_deref()?,
        ),
        Provider::Proxmox | Provider::MetalStack | Provider::Aws => return None,
    };
    image.to_ascii_lowercase().contains("flatcar").then_some((field, image))
}
