//! source.toolkit.fluxcd.io/v1: Flux's `OCIRepository` (v1 since source-controller v1.6.0;
//! fields from `api/v1/ocirepository_types.go` @ source-controller v1.9.1).

use serde::Serialize;

use super::ObjectMeta;

/// The API version of `OCIRepository`.
pub const API_VERSION: &str = "source.toolkit.fluxcd.io/v1";

/// An `OCIRepository`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OciRepository {
    api_version: &'static str,
    kind: &'static str,
    /// `metadata`.
    pub metadata: ObjectMeta,
    /// `spec`.
    pub spec: OciRepositorySpec,
}

impl OciRepository {
    /// An `OCIRepository` with its apiVersion and kind.
    pub fn new(metadata: ObjectMeta, spec: OciRepositorySpec) -> OciRepository {
        OciRepository {
            api_version: API_VERSION,
            kind: "OCIRepository",
            metadata,
            spec,
        }
    }
}

/// `OCIRepository.spec`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OciRepositorySpec {
    /// How often the tag's digest is checked (one HEAD request).
    pub interval: String,
    /// `oci://<host>/<path>`.
    pub url: String,
    /// The tag followed.
    #[serde(rename = "ref")]
    pub reference: OciRef,
    /// Which layer is extracted.
    pub layer_selector: LayerSelector,
    /// Plain HTTP (`spec.insecure`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub insecure: bool,
    /// A `kubernetes.io/dockerconfigjson` Secret in the same namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalRef>,
}

/// `spec.ref`.
#[derive(Debug, Clone, Serialize)]
pub struct OciRef {
    /// The tag.
    pub tag: String,
}

/// `spec.layerSelector`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LayerSelector {
    /// The layer's media type.
    pub media_type: String,
    /// `extract` (untar it into the artifact) or `copy`.
    pub operation: String,
}

/// `{name}` of an object in the same namespace.
#[derive(Debug, Clone, Serialize)]
pub struct LocalRef {
    /// Its name.
    pub name: String,
}
