//! Which commit a run means and the tenant artifacts its rendered tree gives, read from git
//! alone: `publish` pushes them, `status` and `wait` compare them with what Flux reports.

use std::collections::BTreeMap;

use crate::delivery::{self, TenantSource};
use crate::git::Workspace;
use crate::spec::load::MAX_FILE_BYTES;

/// The commit `rev` names (HEAD when `None`), as a full hex id.
pub fn resolve(ws: &Workspace, rev: Option<&str>) -> Result<git2::Oid, String> {
    let spec = rev.unwrap_or("HEAD");
    ws.repo
        .revparse_single(spec)
        .and_then(|o| o.peel_to_commit())
        .map(|c| c.id())
        .map_err(|e| format!("`{spec}` names no commit: {}", e.message()))
}

/// Every tenant delivered as an OCI artifact at `commit`, with the artifact its rendered tree
/// gives. `Err`: what makes the tree unreadable.
pub fn sources_at(ws: &Workspace, commit: git2::Oid) -> Result<Vec<TenantSource>, Vec<String>> {
    let tree: BTreeMap<String, Vec<u8>> =
        crate::git::pr::read_files(ws, commit, crate::layout::artifact::wanted).map_err(|e| vec![e.to_string()])?;
    let big: Vec<String> = tree
        .iter()
        .filter(|(_, b)| b.len() > MAX_FILE_BYTES)
        .map(|(p, _)| format!("{p}: larger than {MAX_FILE_BYTES} bytes"))
        .collect();
    if !big.is_empty() {
        return Err(big);
    }
    delivery::tenant_sources(&tree)
}
