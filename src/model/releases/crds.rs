//! Which upstream release assets hold the CRDs the fleet is checked against: one list per
//! platform, built from the versions `kaas.yaml` pins. `validate` fetches these (through a
//! cache, `crate::crd_fetch`), `pin` records their sha256 in `kaas.lock`.
//!
//! The asset names follow clusterctl's provider contract (cluster-api v1.14.0
//! `docs/book/src/developer/providers/contracts/clusterctl.md`: a provider "MUST release a file
//! called" `core-components.yaml`, `bootstrap-components.yaml`, `control-plane-components.yaml`,
//! `infrastructure-components.yaml` or `addon-components.yaml`), which are also the files
//! cluster-api-operator fetches for the `*Provider` objects kaas-gitops renders.
//! cluster-api-operator publishes `operator-components.yaml` (its `docs/book`, "Using Manifests
//! from Release Assets"); each Flux controller `<controller>.crds.yaml` (what flux2's
//! `manifests/bases/<controller>/kustomization.yaml` fetches). Kamaji publishes no manifest
//! asset: its CRDs are the chart's `charts/kamaji/crds/` at the git tag of the Kamaji image.

use std::fmt;

use crate::model::exposure::ExposureKind;
use crate::model::pins::ImagePins;
use crate::model::{Platform, Provider};

/// The host that serves every asset; a mirror replaces it.
pub const UPSTREAM: &str = "https://github.com";

/// The Gateway API release whose CRDs a fleet behind a Gateway is checked against: the one the
/// Kamaji release kaas-gitops renders for is built with (Kamaji 26.8.2-edge `go.mod`:
/// `sigs.k8s.io/gateway-api v1.5.1`; its Makefile installs that release's
/// `standard-install.yaml` too). Kamaji creates its TLSRoutes with these types, so the platform
/// installs this release or a newer one (docs/exposure.md).
pub const GATEWAY_API_RELEASE: &str = "v1.5.1";

/// The `kaas.yaml` field that brings the Gateway API release in (its version is
/// [`GATEWAY_API_RELEASE`], not a field).
pub const GATEWAY_API_FIELD: &str = "spec.apiServerExposure.gateway";

/// One file of CRDs (among other objects) that an upstream release publishes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CrdAsset {
    /// What it belongs to, e.g. `cluster-api`, `infrastructure-proxmox`, `flux-helm-controller`.
    pub component: String,
    /// The release, e.g. `v1.14.0`.
    pub version: String,
    /// `owner/name` of the GitHub repository.
    pub repository: &'static str,
    /// The path after the repository: `releases/download/<version>/<file>` or
    /// `raw/<tag>/<path>`.
    pub path: String,
    /// The `kaas.yaml` field that sets the version (or would: most have a default); for the
    /// Gateway API, whose release kaas-gitops picks, the field that brings it in.
    pub field: String,
}

impl CrdAsset {
    /// The asset's address under `base` (`UPSTREAM`, or a mirror laid out the same way).
    pub fn url(&self, base: &str) -> String {
        format!("{}/{}/{}", base.trim_end_matches('/'), self.repository, self.path)
    }

    /// The file name, the last part of the path.
    pub fn file_name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }

    fn release(
        component: impl Into<String>,
        (field, version): (&str, &str),
        repository: &'static str,
        file: &str,
    ) -> CrdAsset {
        CrdAsset {
            component: component.into(),
            version: version.to_string(),
            repository,
            path: format!("releases/download/{version}/{file}"),
            field: field.to_string(),
        }
    }
}

impl fmt::Display for CrdAsset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} ({})", self.component, self.version, self.file_name())
    }
}

/// The GitHub repository that releases an infrastructure provider.
pub fn provider_repository(provider: Provider) -> &'static str {
    match provider {
        Provider::Proxmox => "ionos-cloud/cluster-api-provider-proxmox",
        Provider::Hetzner => "syself/cluster-api-provider-hetzner",
        Provider::Kubevirt => "kubernetes-sigs/cluster-api-provider-kubevirt",
        Provider::Nutanix => "nutanix-cloud-native/cluster-api-provider-nutanix",
        Provider::MetalStack => "metal-stack/cluster-api-provider-metal-stack",
        Provider::Packet => "kubernetes-sigs/cluster-api-provider-packet",
        Provider::Aws => "kubernetes-sigs/cluster-api-provider-aws",
        Provider::Vsphere => "kubernetes-sigs/cluster-api-provider-vsphere",
        Provider::Openstack => "kubernetes-sigs/cluster-api-provider-openstack",
        Provider::Metal3 => "metal3-io/cluster-api-provider-metal3",
        Provider::Tinkerbell => "tinkerbell/cluster-api-provider-tinkerbell",
        Provider::Ionoscloud => "ionos-cloud/cluster-api-provider-ionoscloud",
        Provider::Azure => "kubernetes-sigs/cluster-api-provider-azure",
    }
}

/// Whether the fleet uses the Gateway API, so that its CRDs are checked against: kaas-gitops
/// renders the Gateway (`spec.apiServerExposure.gateway.className`), or some tenant's API server
/// is routed through it. `any_tenant_behind_gateway` reads the tenant files: it is asked only
/// when kaas.yaml configures a Gateway it does not render (with none configured no tenant can
/// be behind one, `render` refuses it; a rendered Gateway needs the CRDs whatever the tenants
/// choose).
pub fn uses_gateway_api(p: &Platform, any_tenant_behind_gateway: impl FnOnce() -> bool) -> bool {
    match &p.exposures.gateway {
        None => false,
        Some(g) if g.class_name.is_some() => true,
        Some(_) => any_tenant_behind_gateway(),
    }
}

/// Whether a tenant whose file writes `chosen` (`spec.controlPlane.exposure`, `None`: the
/// platform's default) is routed through the platform's Gateway.
pub fn behind_gateway(p: &Platform, chosen: Option<ExposureKind>) -> bool {
    chosen.unwrap_or(p.exposures.default) == ExposureKind::Gateway
}

/// Every asset whose CRDs the platform's fleet uses, sorted by component. Kamaji's follow its
/// image tag; a tag policy's tag is the one `pins` holds (none pinned yet: no Kamaji asset).
/// `gateway_api`: the fleet uses the Gateway API ([`uses_gateway_api`]), whose release
/// [`GATEWAY_API_RELEASE`] is added.
pub fn crd_assets(p: &Platform, pins: &ImagePins, gateway_api: bool) -> Vec<CrdAsset> {
    let m = &p.management;
    let mut out = vec![
        CrdAsset::release(
            "cluster-api",
            ("spec.clusterApi.coreVersion", &m.cluster_api),
            "kubernetes-sigs/cluster-api",
            "core-components.yaml",
        ),
        CrdAsset::release(
            "bootstrap-kubeadm",
            ("spec.clusterApi.coreVersion", &m.cluster_api),
            "kubernetes-sigs/cluster-api",
            "bootstrap-components.yaml",
        ),
        CrdAsset::release(
            "cluster-api-operator",
            ("spec.clusterApi.operatorVersion", &m.operator),
            "kubernetes-sigs/cluster-api-operator",
            "operator-components.yaml",
        ),
        CrdAsset::release(
            "control-plane-kamaji",
            ("spec.clusterApi.controlPlaneProvider.version", &p.cp_provider_version),
            "clastix/cluster-api-control-plane-provider-kamaji",
            "control-plane-components.yaml",
        ),
        CrdAsset::release(
            "flux-source-controller",
            ("spec.flux.controllers.source", &m.flux_source),
            "fluxcd/source-controller",
            "source-controller.crds.yaml",
        ),
        CrdAsset::release(
            "flux-kustomize-controller",
            ("spec.flux.controllers.kustomize", &m.flux_kustomize),
            "fluxcd/kustomize-controller",
            "kustomize-controller.crds.yaml",
        ),
        CrdAsset::release(
            "flux-helm-controller",
            ("spec.flux.controllers.helm", &m.flux_helm),
            "fluxcd/helm-controller",
            "helm-controller.crds.yaml",
        ),
    ];
    if let Some(version) = &m.flux_source_watcher {
        out.push(CrdAsset::release(
            "flux-source-watcher",
            ("spec.flux.controllers.sourceWatcher", version),
            "fluxcd/source-watcher",
            "source-watcher.crds.yaml",
        ));
    }
    for (provider, version) in &p.infrastructure_providers {
        out.push(CrdAsset::release(
            format!("infrastructure-{}", provider.as_str()),
            (
                &format!("spec.clusterApi.infrastructureProviders.{}", provider.as_str()),
                version,
            ),
            provider_repository(*provider),
            "infrastructure-components.yaml",
        ));
    }
    for (name, version) in &p.addon_providers {
        if name == "helm" {
            out.push(CrdAsset::release(
                "addon-helm",
                ("spec.clusterApi.addonProviders.helm", version),
                "kubernetes-sigs/cluster-api-addon-provider-helm",
                "addon-components.yaml",
            ));
        }
    }
    if gateway_api {
        out.push(CrdAsset::release(
            "gateway-api",
            (GATEWAY_API_FIELD, GATEWAY_API_RELEASE),
            "kubernetes-sigs/gateway-api",
            "standard-install.yaml",
        ));
    }
    let image = &p.kamaji_image;
    let pinned = || pins.tags_of(&image.repository).into_iter().max();
    let Some(kamaji_tag) = image.tag.as_deref().or_else(pinned) else {
        out.sort();
        return out;
    };
    for plural in ["tenantcontrolplanes", "datastores"] {
        out.push(CrdAsset {
            component: "kamaji".into(),
            version: kamaji_tag.to_string(),
            repository: "clastix/kamaji",
            path: format!("raw/{kamaji_tag}/charts/kamaji/crds/kamaji.clastix.io_{plural}.yaml"),
            field: "spec.kamaji.image.tag".into(),
        });
    }
    out.sort();
    out
}
