//! Which tenants a rendered tree delivers as OCI artifacts, where to, and what each holds.
//!
//! Read from the rendered `flux/` files themselves (the OCIRepository `kaas-gitops render`
//! writes per tenant), so `publish`, `wait` and `status` agree with what Flux is told, for any
//! commit, without loading kaas.yaml again.

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde::Deserialize;

use super::Artifact;
use crate::layout::{self, INPUT_HASH_PREFIX, artifact};

/// The OCIRepository of a tenant, as rendered (only what `publish` needs).
#[derive(Debug, Deserialize)]
struct OciRepository {
    kind: String,
    metadata: Meta,
    spec: OciSpec,
}

#[derive(Debug, Deserialize)]
struct Meta {
    name: String,
    labels: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Deserialize)]
struct OciSpec {
    url: String,
    #[serde(rename = "ref")]
    reference: Option<OciRef>,
    #[serde(default)]
    insecure: bool,
}

#[derive(Debug, Deserialize)]
struct OciRef {
    tag: Option<String>,
}

/// The label `render` puts on every tenant's Flux objects.
const TENANT_LABEL: &str = "kaas-gitops.dev/tenant";

/// One tenant delivered as an OCI artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantSource {
    /// The tenant.
    pub tenant: String,
    /// The OCIRepository's name.
    pub object: String,
    /// `host[:port]/path/<tenant>` (the OCIRepository's url without `oci://`).
    pub repository: String,
    /// The tag.
    pub tag: String,
    /// Plain HTTP.
    pub insecure: bool,
    /// The artifact, built from the tree.
    pub artifact: Artifact,
}

impl TenantSource {
    /// `<tag>@sha256:<digest>`, the revision the OCIRepository reports once it has this content.
    pub fn revision(&self) -> String {
        self.artifact.revision(&self.tag)
    }
}

/// The files of `tenant`'s artifact: its overlay and `base/tenant/` (which overlays reference
/// as `../../../base/tenant`), repository-relative. The overlay's input-hash comment is left
/// out: it moves with every kaas.yaml edit and every kaas-gitops release (so that `render` can
/// skip unchanged tenants), not with what Flux applies, and an artifact must change only when
/// the objects do.
pub fn tenant_files(tree: &BTreeMap<String, Vec<u8>>, tenant: &str) -> BTreeMap<String, Vec<u8>> {
    let index = layout::overlay_index(Some(tenant));
    tree.iter()
        .filter(|(p, _)| artifact::holds(tenant, p))
        .map(|(p, b)| {
            let bytes = if *p == index { without_input_hash(b) } else { b.clone() };
            (p.clone(), bytes)
        })
        .collect()
}

/// `bytes` without the line that starts with [`INPUT_HASH_PREFIX`].
fn without_input_hash(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        if !line.starts_with(INPUT_HASH_PREFIX.as_bytes()) {
            out.extend_from_slice(line);
        }
    }
    out
}

/// Every tenant whose rendered `flux/` (or `flux/<mc>/`) has an OCIRepository, sorted by tenant, with its artifact.
/// `Err` names the files that are not what `render` writes (a hand edit): nothing is published
/// from a tree that cannot be read whole.
pub fn tenant_sources(tree: &BTreeMap<String, Vec<u8>>) -> Result<Vec<TenantSource>, Vec<String>> {
    let mut found = Vec::new();
    let mut errors = Vec::new();
    // Every management cluster's entry point (`flux/`, `flux/<mc>/`).
    for (path, bytes) in tree.range(format!("{}/", layout::FLUX_DIR)..) {
        if !layout::in_flux(path) {
            break;
        }
        if !artifact::names_one(path) {
            continue;
        }
        let text = String::from_utf8_lossy(bytes);
        let repo: OciRepository = match serde_saphyr::from_str(&text) {
            Ok(r) => r,
            Err(e) => {
                errors.push(format!("{path}: not an OCIRepository: {e}"));
                continue;
            }
        };
        let tenant = repo.metadata.labels.as_ref().and_then(|l| l.get(TENANT_LABEL)).cloned();
        let (Some(tenant), Some(repository)) = (tenant, repo.spec.url.strip_prefix("oci://")) else {
            errors.push(format!(
                "{path}: {} {} has no `{TENANT_LABEL}` label or no `oci://` url",
                repo.kind, repo.metadata.name
            ));
            continue;
        };
        let files = tenant_files(tree, &tenant);
        if !files.keys().any(|p| layout::tenant_of(p).is_some()) {
            errors.push(format!(
                "{path}: tenant `{tenant}` has no {} in this tree",
                layout::tenant_prefix(&tenant)
            ));
            continue;
        }
        let tag = repo
            .spec
            .reference
            .and_then(|r| r.tag)
            .unwrap_or_else(|| "latest".into());
        found.push((
            tenant,
            repo.metadata.name,
            repository.to_string(),
            tag,
            repo.spec.insecure,
            files,
        ));
    }
    // Compressing 1,000 small archives is the CPU of a publish: one per core, same bytes.
    let mut out: Vec<TenantSource> = found
        .into_par_iter()
        .map(|(tenant, object, repository, tag, insecure, files)| TenantSource {
            artifact: Artifact::build(&tenant, &files),
            tenant,
            object,
            repository,
            tag,
            insecure,
        })
        .collect();
    if !errors.is_empty() {
        return Err(errors);
    }
    out.sort_by(|a, b| a.tenant.cmp(&b.tenant));
    Ok(out)
}
