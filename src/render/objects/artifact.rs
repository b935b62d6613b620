//! source.extensions.fluxcd.io/v1beta1: source-watcher's `ArtifactGenerator` (fields and limits
//! from `v1beta1/artifactgenerator_types.go` @ fluxcd/source-watcher api/v2 v2.2.4, the newest
//! release of that module this project's Go toolchain builds; its CRD is generated from it by
//! `tests/upstream/artifactgenerator.sh`).

use serde::Serialize;

use super::ObjectMeta;

/// The API version of `ArtifactGenerator` (`v1beta1/groupversion_info.go`).
pub const API_VERSION: &str = "source.extensions.fluxcd.io/v1beta1";

/// The source alias a generator gives the platform's source in `from` paths.
pub const SOURCE_ALIAS: &str = "repo";

/// An `ArtifactGenerator`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactGenerator {
    api_version: &'static str,
    kind: &'static str,
    /// `metadata`.
    pub metadata: ObjectMeta,
    /// `spec`.
    pub spec: ArtifactGeneratorSpec,
}

impl ArtifactGenerator {
    /// An `ArtifactGenerator` with its apiVersion and kind.
    pub fn new(metadata: ObjectMeta, spec: ArtifactGeneratorSpec) -> ArtifactGenerator {
        ArtifactGenerator {
            api_version: API_VERSION,
            kind: "ArtifactGenerator",
            metadata,
            spec,
        }
    }
}

/// `ArtifactGenerator.spec`: `sources` and `artifacts` (each 1 to 1,000 items).
#[derive(Debug, Clone, Serialize)]
pub struct ArtifactGeneratorSpec {
    /// The Flux sources, by alias.
    pub sources: Vec<GeneratorSource>,
    /// One ExternalArtifact each.
    pub artifacts: Vec<OutputArtifact>,
}

/// `spec.sources[]`.
#[derive(Debug, Clone, Serialize)]
pub struct GeneratorSource {
    /// `^[a-z0-9]([a-z0-9_-]*[a-z0-9])?$`, at most 63.
    pub alias: String,
    /// `Bucket`, `GitRepository`, `OCIRepository`, `HelmChart` or `ExternalArtifact`.
    pub kind: String,
    /// The source's name.
    pub name: String,
    /// The source's namespace.
    pub namespace: String,
}

/// `spec.artifacts[]`. No `revision`: the ExternalArtifact's revision is then
/// `latest@sha256:<digest of its content>` (`internal/builder/builder.go` @ source-watcher
/// v2.2.1, `Build`), which moves only when the tenant's files do.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutputArtifact {
    /// The ExternalArtifact's name (a DNS-1123 subdomain: the spec's CEL rule without
    /// `pathPattern`).
    pub name: String,
    /// `@<alias>`: the source's revision is written to the artifact's
    /// `metadata["org.opencontainers.image.revision"]` without touching its revision
    /// (`internal/controller/artifactgenerator_controller.go`, `setArtifactRevisions`).
    pub origin_revision: String,
    /// Copies, in order.
    pub copy: Vec<CopyOperation>,
}

/// `spec.artifacts[].copy[]`: `from` is `@<alias>/<path>`, `to` is `@artifact/<path>`. A
/// directory without glob characters is copied as a subdirectory of `to` (`cp -r dir to/`:
/// `applySingleDirectoryCopy`).
#[derive(Debug, Clone, Serialize)]
pub struct CopyOperation {
    /// The source path.
    pub from: String,
    /// The destination.
    pub to: String,
}
