//! Per-tenant delivery (`spec.flux.delivery.mode: oci`): what each tenant's OCI artifact holds
//! and its exact bytes, computed from a rendered tree alone (pure: no disk, git or network).
//!
//! kustomize-controller v1.9.4 re-applies a Kustomization only when its source's revision
//! string changes (`internal/controller/source_predicate.go`, `SourceRevisionChangePredicate`,
//! and `kustomization_indexers.go`, `requestsForRevisionChangeOf`), and downloads and untars the
//! whole artifact on every reconcile (`kustomization_controller.go`, `reconcile`: `fetch.New(...,
//! fetch.WithUntar(...))`). An OCIRepository's revision is `<tag>@<manifest digest>`
//! (source-controller v1.9.1, `internal/controller/ocirepository_controller.go`, `getRevision`).
//! So an artifact holding only one tenant's files, with bytes that depend only on those files,
//! is applied only when that tenant's content changes, and each apply untars ~20 files.

pub(crate) mod artifact;
pub(crate) mod tree;

pub use artifact::{Artifact, CONFIG_MEDIA_TYPE, CONTENT_MEDIA_TYPE, MANIFEST_MEDIA_TYPE};
pub use tree::{TenantSource, tenant_files, tenant_sources};
