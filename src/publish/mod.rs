//! `publish`: each tenant's OCI artifact (built by [`crate::delivery`] from a commit's rendered
//! tree) pushed to its repository, only where the tag does not already name that manifest.
//!
//! Safe to stop at any moment: per tenant the layer and config blobs go first and the manifest
//! (which moves the tag) last, so a tag only ever names complete content, the previous or the
//! new one; a run that stopped half-way leaves some tenants at their old artifact, and the next
//! run finds their tags differ and pushes them. Idempotent: a tag already at the digest is left
//! alone (one HEAD request).

pub mod oci;
pub(crate) mod sources;

use serde::Serialize;

use crate::delivery::TenantSource;

/// Where artifacts go: the registry, or a test's wrapper around it.
pub trait Target {
    /// The digest `repository:tag` names now; `None` when the tag (or repository) does not exist.
    fn current(&mut self, source: &TenantSource) -> Result<Option<String>, String>;
    /// Uploads a blob under `source.repository` (the registry checks it against `digest`).
    fn push_blob(&mut self, source: &TenantSource, digest: &str, bytes: &[u8]) -> Result<(), String>;
    /// Puts the manifest under `source.tag`.
    fn push_manifest(&mut self, source: &TenantSource) -> Result<(), String>;
}

/// What happened to one tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// The tag now names the new manifest.
    Pushed,
    /// The tag already named it.
    Unchanged,
    /// Something failed; the tag is as it was.
    Failed,
}

/// One tenant after the run.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Published {
    /// The tenant.
    pub tenant: String,
    /// `host/path/<tenant>:<tag>`.
    pub reference: String,
    /// The manifest digest the tenant's content has.
    pub digest: String,
    /// The OCIRepository revision Flux reports once it has it: `<tag>@<digest>`.
    pub revision: String,
    /// What the tag named before (`None`: nothing).
    pub previous: Option<String>,
    /// What happened.
    pub change: Change,
    /// Bytes uploaded for it.
    pub bytes: usize,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Registry operations of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Operations {
    /// Manifest HEADs (one per tenant).
    pub checks: usize,
    /// Blob uploads.
    pub blobs: usize,
    /// Manifest PUTs.
    pub manifests: usize,
}

/// Publishes every source, going on past a tenant that fails (so one run reports every
/// problem). Per tenant: HEAD the tag; if it names another digest, upload the layer, the config,
/// then the manifest.
pub fn publish(sources: &[TenantSource], target: &mut dyn Target) -> (Vec<Published>, Operations) {
    let mut ops = Operations::default();
    let mut out = Vec::with_capacity(sources.len());
    for s in sources {
        let digest = s.artifact.digest();
        let mut one = Published {
            tenant: s.tenant.clone(),
            reference: format!("{}:{}", s.repository, s.tag),
            digest: digest.clone(),
            revision: s.revision(),
            previous: None,
            change: Change::Failed,
            bytes: 0,
            error: None,
        };
        ops.checks += 1;
        let result = target.current(s).and_then(|current| {
            one.previous = current.clone();
            if current.as_deref() == Some(digest.as_str()) {
                return Ok(Change::Unchanged);
            }
            for blob in [&s.artifact.layer, &s.artifact.config] {
                ops.blobs += 1;
                target.push_blob(s, &crate::delivery::artifact::digest(blob), blob)?;
                one.bytes += blob.len();
            }
            ops.manifests += 1;
            target.push_manifest(s)?;
            one.bytes += s.artifact.manifest.len();
            Ok(Change::Pushed)
        });
        match result {
            Ok(c) => one.change = c,
            Err(e) => one.error = Some(e),
        }
        out.push(one);
    }
    (out, ops)
}
