//! The tenant overlays of the last commit: what Flux applied, or will once it is pushed. A render
//! that was never committed reached no cluster, so the Kubernetes version rules judge a tenant's
//! version against these (issue 22), not against the overlays on disk.

use std::collections::BTreeMap;
use std::path::Path;

use git2::ObjectType;

use crate::git::Workspace;
use crate::spec::load::MAX_FILE_BYTES;

/// Each folder of `overlays/tenants/` at HEAD that `folder` (tenant) asks for: its file names,
/// with the bytes of those `want` (tenant, file name) asks for (the others empty). `None` outside
/// a git repository or before its first commit; empty when HEAD has no overlays. The other
/// folders' trees are not read.
pub fn overlay_files(
    dir: &Path,
    folder: impl Fn(&str) -> bool,
    want: impl Fn(&str, &str) -> bool,
) -> Option<BTreeMap<String, BTreeMap<String, Vec<u8>>>> {
    let ws = Workspace::open(dir).ok()?;
    let repo = &ws.repo;
    let head = repo.head().ok()?.peel_to_tree().ok()?;
    let mut out = BTreeMap::new();
    let Ok(entry) = head.get_path(Path::new(&ws.git_path(crate::layout::TENANTS_DIR))) else {
        return Some(out);
    };
    let tenants = entry.to_object(repo).ok()?.peel_to_tree().ok()?;
    for folder_entry in tenants.iter().filter(|e| e.kind() == Some(ObjectType::Tree)) {
        let Ok(name) = folder_entry.name() else { continue };
        if !folder(name) {
            continue;
        }
        let Ok(tree) = folder_entry.to_object(repo).and_then(|o| o.peel_to_tree()) else {
            continue;
        };
        let mut files = BTreeMap::new();
        for file in tree.iter() {
            let Ok(file_name) = file.name() else { continue };
            let bytes = if file.kind() == Some(ObjectType::Blob) && want(name, file_name) {
                let blob = file.to_object(repo).ok()?.peel_to_blob().ok()?;
                let content = blob.content();
                content[..content.len().min(MAX_FILE_BYTES + 1)].to_vec()
            } else {
                Vec::new()
            };
            files.insert(file_name.to_string(), bytes);
        }
        out.insert(name.to_string(), files);
    }
    Some(out)
}
