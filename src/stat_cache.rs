//! The stat cache: proves that a `render` would change nothing without reading a file, the way
//! git's index proves a clean working tree. After a render that leaves the disk as rendered, it
//! records the status (size, mtime, ctime, inode) of every input and of the outputs a render
//! compares; the next plain `render` whose stats all match prints the recorded outcome and
//! stops. Any difference, or anything it cannot prove, falls back to the full pipeline.
//!
//! Racy entries: a file changed within the file system's timestamp granularity of the moment it
//! was recorded could change again with the same mtime. As git does, an entry whose mtime or
//! ctime is not strictly older than the cache file's own creation time is racy, and a cache
//! with a racy entry is not written (the next render records it).
//!
//! The cache lives in the repository's git folder (`.git/kaas-gitops/`, as git keeps its own
//! index there), so the working tree never changes on a no-op and nothing can commit it. A
//! folder that is not a git repository gets no cache.
//!
//! Trust is that of the input-hash skip (see `commands::inputs`): an overlay is current when its
//! `kustomization.yaml` and its file list are; `--full` and `--check` compare every byte.

use std::collections::BTreeSet;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::diagnostics::Diagnostic;

const CACHE_FILE: &str = "render-stat.json";
/// Larger than any real cache (10,000 tenants is ~4 MB); a bigger file is not read.
const MAX_CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// What `stat` says of a path; `None` in a record means the path did not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "SigRow", into = "SigRow")]
pub struct Sig {
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    ino: u64,
    mode: u32,
}

/// A `Sig` as written in the cache file: a bare array, which keeps the file small and quick to
/// read (a fleet has a few thousand entries).
type SigRow = (u64, i128, i128, u64, u32);

impl From<SigRow> for Sig {
    fn from((size, mtime_ns, ctime_ns, ino, mode): SigRow) -> Sig {
        Sig {
            size,
            mtime_ns,
            ctime_ns,
            ino,
            mode,
        }
    }
}

impl From<Sig> for SigRow {
    fn from(s: Sig) -> SigRow {
        (s.size, s.mtime_ns, s.ctime_ns, s.ino, s.mode)
    }
}

impl Sig {
    fn of(path: &Path) -> std::io::Result<Option<Sig>> {
        match std::fs::symlink_metadata(path) {
            Ok(m) => Ok(Some(Sig {
                size: m.size(),
                mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
                ctime_ns: i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
                ino: m.ino(),
                mode: m.mode(),
            })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn is_symlink(&self) -> bool {
        self.mode & 0o170000 == 0o120000
    }
}

/// The outcome of a render that changed nothing, replayed when the stats still match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// The tenants rendered, by name.
    pub tenants: Vec<String>,
    /// Files a render compares and found as desired.
    pub unchanged: usize,
    /// Warnings the render printed.
    pub warnings: Vec<Diagnostic>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Record {
    /// The binary and the options the outcome depends on.
    key: String,
    outcome: Outcome,
    entries: Vec<(String, Option<Sig>)>,
}

/// What the outcome depends on besides the files: this binary (a rebuilt binary may render
/// differently even at the same version) and `--locked`.
pub fn key(locked: bool) -> String {
    format!("{} locked={locked}", binary_key())
}

/// This binary: its version and the status of its file, so a rebuilt binary trusts no cache.
pub(crate) fn binary_key() -> String {
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| Sig::of(&p).ok().flatten())
        .map(|s| format!("{}-{}-{}", s.size, s.mtime_ns, s.ino))
        .unwrap_or_default();
    format!("{} {exe}", env!("CARGO_PKG_VERSION"))
}

/// The inputs a render reads: `kaas.yaml`, `kaas.lock`, the two `base/` kustomizations, the
/// `tenants` folder (its mtime moves when a file is added, removed or renamed) and its files.
fn input_paths(repo: &Path) -> std::io::Result<Vec<String>> {
    let mut paths: Vec<String> = [
        "kaas.yaml",
        "kaas.lock",
        "base/platform/kustomization.yaml",
        "base/tenant/kustomization.yaml",
        "tenants",
    ]
    .map(String::from)
    .to_vec();
    match std::fs::read_dir(repo.join("tenants")) {
        Ok(entries) => {
            for e in entries {
                paths.push(format!("tenants/{}", e?.file_name().to_string_lossy()));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    Ok(paths)
}

/// The outputs a render compares: every written file outside the tenant overlays, each
/// overlay's `kustomization.yaml` (it records the overlay's input hash), and every folder that
/// holds one of them (a folder's mtime moves when a file in it is added, removed or renamed).
pub fn output_paths<'a>(files: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: BTreeSet<String> = BTreeSet::new();
    for f in files {
        let in_overlay = f
            .strip_prefix("overlays/tenants/")
            .is_some_and(|rest| rest.contains('/'));
        if in_overlay && !f.ends_with("/kustomization.yaml") {
            continue;
        }
        out.insert(f.to_string());
        for (end, _) in f.match_indices('/') {
            out.insert(f[..end].to_string());
        }
    }
    out.into_iter().collect()
}

fn stat_all(repo: &Path, paths: Vec<String>) -> std::io::Result<Vec<(String, Option<Sig>)>> {
    paths
        .into_par_iter()
        .map(|p| Sig::of(&repo.join(&p)).map(|s| (p, s)))
        .collect()
}

/// The recorded outcome, when every recorded path still has its recorded status and `tenants/`
/// holds the same files. `None` whenever that cannot be shown.
pub fn lookup(repo: &Path, key: &str) -> Option<Outcome> {
    let path = cache_dir(repo)?.join(CACHE_FILE);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > MAX_CACHE_BYTES {
        return None;
    }
    let record: Record = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
    if record.key != key {
        return None;
    }
    let now = record
        .entries
        .par_iter()
        .map(|(p, sig)| Sig::of(&repo.join(p)).ok().is_some_and(|s| s == *sig))
        .all(|same| same);
    now.then_some(record.outcome)
}

/// Records `outcome` for the current state of the disk. Best effort: a cache that cannot be
/// written (read-only checkout, racy entries, a symlink planted where the folder goes) is
/// simply not there, and an old one is removed so it cannot be trusted.
pub fn store(repo: &Path, key: &str, outputs: Vec<String>, outcome: Outcome) {
    let Some(dir) = cache_dir(repo) else { return };
    let file = dir.join(CACHE_FILE);
    let written = (|| -> std::io::Result<bool> {
        prepare_dir(&dir)?;
        // The temp file's own timestamps are "now" on this file system's clock and granularity.
        let tmp = dir.join(format!("{CACHE_FILE}.{}.tmp", std::process::id()));
        let mut f = std::fs::File::create(&tmp)?;
        let now = Sig::of(&tmp)?.map_or(i128::MIN, |s| s.mtime_ns);
        let mut paths = input_paths(repo)?;
        paths.extend(outputs);
        let entries = stat_all(repo, paths)?;
        let trusted = entries.iter().all(|(p, s)| match s {
            None => true,
            // A symlinked input may point anywhere: its target's changes would go unseen.
            Some(s) if s.is_symlink() && !p.starts_with("overlays/") => false,
            Some(s) => s.mtime_ns < now && s.ctime_ns < now,
        });
        if !trusted {
            drop(f);
            let _ = std::fs::remove_file(&tmp);
            return Ok(false);
        }
        let record = Record {
            key: key.to_string(),
            outcome,
            entries,
        };
        f.write_all(&serde_json::to_vec(&record).map_err(std::io::Error::other)?)?;
        drop(f);
        std::fs::rename(&tmp, &file)?;
        Ok(true)
    })();
    if !matches!(written, Ok(true)) {
        let _ = std::fs::remove_file(&file);
    }
}

/// Forgets the cache: after any run that may leave the disk other than rendered.
pub fn forget(repo: &Path) {
    if let Some(dir) = cache_dir(repo) {
        let _ = std::fs::remove_file(dir.join(CACHE_FILE));
    }
}

/// `<git dir>/kaas-gitops`: `.git/` itself, or the folder a `.git` file names (a worktree or a
/// submodule). `None` outside a git repository, or when `KAAS_GITOPS_NO_CACHE` is set.
pub(crate) fn cache_dir(repo: &Path) -> Option<std::path::PathBuf> {
    // An escape hatch for debugging and for measuring the tool without its caches.
    if std::env::var_os("KAAS_GITOPS_NO_CACHE").is_some_and(|v| !v.is_empty() && v != "0") {
        return None;
    }
    let dot_git = repo.join(".git");
    let meta = std::fs::symlink_metadata(&dot_git).ok()?;
    let git_dir = if meta.is_dir() {
        dot_git
    } else if meta.is_file() && meta.len() < 4096 {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        repo.join(text.strip_prefix("gitdir:")?.trim())
    } else {
        return None;
    };
    Some(git_dir.join("kaas-gitops"))
}

/// Creates the cache folder as a real folder.
pub(crate) fn prepare_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(std::io::Error::other("the cache folder is not a folder")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir(dir),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_files_outside_overlays_kustomizations_and_their_folders() {
        let files = [
            "flux/tenant-acme.yaml",
            "overlays/tenants/acme/kustomization.yaml",
            "overlays/tenants/acme/cluster-acme.yaml",
            "overlays/platform/kamaji/helmrelease-kamaji.yaml",
        ];
        assert_eq!(
            output_paths(files.into_iter()),
            [
                "flux",
                "flux/tenant-acme.yaml",
                "overlays",
                "overlays/platform",
                "overlays/platform/kamaji",
                "overlays/platform/kamaji/helmrelease-kamaji.yaml",
                "overlays/tenants",
                "overlays/tenants/acme",
                "overlays/tenants/acme/kustomization.yaml",
            ]
        );
    }
}
