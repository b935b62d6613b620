//! helm.toolkit.fluxcd.io/v2: the `HelmRelease`.

use serde::Serialize;

use super::ObjectMeta;
use crate::render::node::Node;

/// The API version of the `HelmRelease`.
pub const API_VERSION: &str = "helm.toolkit.fluxcd.io/v2";

/// A `HelmRelease`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HelmRelease {
    api_version: &'static str,
    kind: &'static str,
    /// `metadata`.
    pub metadata: ObjectMeta,
    /// `spec`.
    pub spec: HelmReleaseSpec,
}

impl HelmRelease {
    /// A `HelmRelease` with its apiVersion and kind.
    pub fn new(metadata: ObjectMeta, spec: HelmReleaseSpec) -> HelmRelease {
        HelmRelease {
            api_version: API_VERSION,
            kind: "HelmRelease",
            metadata,
            spec,
        }
    }
}

/// `HelmRelease.spec`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HelmReleaseSpec {
    /// How often Flux reconciles it.
    pub interval: String,
    /// The Helm release name.
    pub release_name: String,
    /// The namespace the chart is installed into (default: the HelmRelease's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_namespace: Option<String>,
    /// The namespace of Helm's release Secrets (default: the HelmRelease's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_namespace: Option<String>,
    /// The cluster the chart is installed into (default: this one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kube_config: Option<KubeConfig>,
    /// HelmReleases that must be Ready first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<Dependency>,
    /// `chart`.
    pub chart: HelmChartTemplate,
    /// `install`.
    pub install: Action,
    /// `upgrade`.
    pub upgrade: Action,
    /// `uninstall`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uninstall: Option<Uninstall>,
    /// The chart's values, free-form.
    pub values: Node,
    /// Values read from Secrets or ConfigMaps in the release's namespace at each reconcile
    /// (merged before `values`, which win).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values_from: Vec<ValuesReference>,
}

/// One `spec.valuesFrom` entry (helm-controller v1.6.3 `api/v2/helmrelease_types.go`,
/// `ValuesReference`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ValuesReference {
    /// `Secret` or `ConfigMap`.
    pub kind: String,
    /// Its name, in the HelmRelease's namespace.
    pub name: String,
    /// The key to read.
    pub values_key: String,
    /// Where in the values the key's content goes (a plain string there, not YAML).
    pub target_path: String,
    /// Take the content as written, not as `--set` syntax.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub literal: bool,
}

/// `spec.chart`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HelmChartTemplate {
    /// `spec`.
    pub spec: HelmChartSpec,
}

/// `spec.chart.spec`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HelmChartSpec {
    /// The chart name.
    pub chart: String,
    /// The chart version.
    pub version: String,
    /// The HelmRepository.
    pub source_ref: SourceRef,
    /// How often the chart is checked.
    pub interval: String,
}

/// A Flux source: `{kind, name, namespace}`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceRef {
    /// The kind.
    pub kind: String,
    /// The name.
    pub name: String,
    /// The namespace.
    pub namespace: String,
}

/// `spec.install` or `spec.upgrade`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Action {
    /// Create `targetNamespace` when missing (install only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create_namespace: Option<bool>,
    /// What happens to the chart's CRDs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crds: Option<String>,
    /// `remediation`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remediation: Option<Remediation>,
    /// `strategy`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strategy: Option<Strategy>,
}

/// `remediation`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Remediation {
    /// How many times a failed action is retried.
    pub retries: u32,
}

/// `strategy`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Strategy {
    /// `RetryOnFailure` or `RemediateOnFailure`.
    pub name: String,
    /// The wait between retries.
    pub retry_interval: String,
}

/// `spec.kubeConfig`: a Secret in the HelmRelease's namespace holding a kubeconfig.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeConfig {
    /// `secretRef`.
    pub secret_ref: SecretKeyRef,
}

/// `{name, key}` of a Secret.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SecretKeyRef {
    /// The Secret's name.
    pub name: String,
    /// The key holding the kubeconfig.
    pub key: String,
}

/// One entry of `spec.dependsOn`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Dependency {
    /// The HelmRelease's name (same namespace).
    pub name: String,
}

/// `spec.uninstall`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Uninstall {
    /// The time each uninstall attempt may take.
    pub timeout: String,
    /// Do not wait for the deleted resources to be gone.
    pub disable_wait: bool,
}
