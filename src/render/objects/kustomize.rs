//! kustomize.toolkit.fluxcd.io/v1: Flux's `Kustomization`.

use serde::Serialize;

use super::ObjectMeta;
use super::helm::SourceRef;

/// The API version of Flux's `Kustomization`.
pub const API_VERSION: &str = "kustomize.toolkit.fluxcd.io/v1";

/// A Flux `Kustomization`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Kustomization {
    api_version: &'static str,
    kind: &'static str,
    /// `metadata`.
    pub metadata: ObjectMeta,
    /// `spec`.
    pub spec: KustomizationSpec,
}

impl Kustomization {
    /// A `Kustomization` with its apiVersion and kind.
    pub fn new(metadata: ObjectMeta, spec: KustomizationSpec) -> Kustomization {
        Kustomization {
            api_version: API_VERSION,
            kind: "Kustomization",
            metadata,
            spec,
        }
    }
}

/// `Kustomization.spec`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KustomizationSpec {
    /// How often Flux applies it.
    pub interval: String,
    /// The folder in the source.
    pub path: String,
    /// Delete what left the folder.
    pub prune: bool,
    /// Not reconciled; when deleted, its finalizer deletes nothing it applied (kustomize-controller
    /// v1.9.4 `finalizerShouldDeleteResources`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Objects that must be ready before it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health_checks: Option<Vec<HealthCheck>>,
    /// CEL health checks for kinds kstatus cannot judge (kustomize-controller v1.9.4
    /// `api/v1/kustomization_types.go` `HealthCheckExprs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health_check_exprs: Option<Vec<HealthCheckExpr>>,
    /// How long an apply and its health checks may take.
    pub timeout: String,
    /// The wait before a failed apply is retried.
    pub retry_interval: String,
    /// Kustomizations applied first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depends_on: Option<Vec<Dependency>>,
    /// The source.
    pub source_ref: SourceRef,
    /// Apply into another cluster, through a kubeconfig Secret of the Kustomization's namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kube_config: Option<super::helm::KubeConfig>,
}

/// A CEL health check of a kind (fluxcd/pkg `kustomize.CustomHealthCheck`; the v1.9.4 CRD
/// requires `apiVersion` and `current`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HealthCheckExpr {
    /// The apiVersion of the kind.
    pub api_version: String,
    /// The kind.
    pub kind: String,
    /// When the object is ready.
    pub current: String,
}

/// An object of a health check.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HealthCheck {
    /// Its apiVersion.
    pub api_version: String,
    /// Its kind.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
}

/// A Kustomization depended on.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Dependency {
    /// Its name.
    pub name: String,
}
