//! Add-ons installed into tenant clusters: the platform's catalog and a tenant's choice, as the
//! renderer reads them.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{AddonKind, AddonWiring, Chart, DigestFormat, ImageSpec, Provider};

/// One add-on of the platform's catalog.
#[derive(Debug, Clone)]
pub struct AddonChart {
    /// Its catalog name, also the `HelmRelease` suffix (`<tenant>-<name>`).
    pub name: String,
    /// The `kaas.yaml` field that declares it (`spec.addons.catalog.<name>`).
    pub field: String,
    /// Its place in the install order.
    pub kind: AddonKind,
    /// The chart.
    pub chart: Chart,
    /// The namespace in the tenant cluster.
    pub namespace: String,
    /// Tenant values the renderer writes into the chart.
    pub wiring: Option<AddonWiring>,
    /// A CNI that replaces kube-proxy (Kamaji's kube-proxy add-on is then off).
    pub replaces_kube_proxy: bool,
    /// Values for every tenant.
    pub values: BTreeMap<String, Value>,
    /// Pinned images, by the dotted path of their block in the values.
    pub images: Vec<AddonImage>,
}

/// An image of an add-on chart.
#[derive(Debug, Clone)]
pub struct AddonImage {
    /// The dotted path of the image's block in the values (`image`, `operator.image`).
    pub path: Vec<String>,
    /// The image.
    pub image: ImageSpec,
    /// How the chart takes the digest.
    pub format: DigestFormat,
}

/// `spec.addons.defaults` with its names checked against the catalog.
#[derive(Debug, Clone, Default)]
pub struct AddonDefaults {
    /// The CNI of tenants that name none.
    pub cni: Option<String>,
    /// Add-ons of every tenant on a provider.
    pub providers: BTreeMap<Provider, Vec<String>>,
    /// Add-ons of every tenant.
    pub extra: Vec<String>,
}

/// One add-on a tenant gets.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantAddon {
    /// The catalog name.
    pub name: String,
    /// The tenant's values, merged over the catalog's by the renderer.
    pub values: BTreeMap<String, Value>,
}
