//! The cache of release assets: `<user cache>/kaas-gitops/crds/<component>/<version>/<file>`,
//! written through a temp file and a rename so a crash never leaves half an asset.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::model::releases::crds::CrdAsset;

/// `$XDG_CACHE_HOME/kaas-gitops/crds` (Linux; `~/.cache` without it), `~/Library/Caches` on
/// macOS, `%LOCALAPPDATA%` on Windows; `None` where the platform has no cache folder.
pub fn default_cache_dir() -> Option<PathBuf> {
    dirs::cache_dir().map(|d| d.join("kaas-gitops").join("crds"))
}

/// Where `asset` is cached under `root`.
pub fn path(root: &Path, asset: &CrdAsset) -> PathBuf {
    root.join(&asset.component).join(&asset.version).join(asset.file_name())
}

/// The cached bytes, if any.
pub fn read(path: &Path) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}

/// Stores `bytes` at `path`.
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().expect("a cache path has a folder");
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
