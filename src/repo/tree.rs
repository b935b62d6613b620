//! The desired file tree against the disk: what to write, what to delete, and doing it durably
//! in one batch. Temp files a killed run left are deleted first (the repository lock rules out a
//! live writer). New content goes to temp files next to their targets, made durable together
//! with one `syncfs`, then renamed into place (`kustomization.yaml` files and `flux/` last, after
//! another `syncfs`); stale files are deleted last, then a last `syncfs` commits the folders. A crash at any
//! moment leaves every file with its old or its new content, and never a deletion without its
//! replacement (issue 9).

use std::collections::{BTreeSet, HashSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rayon::prelude::*;

use super::pause_point::step;
use crate::render::Tree;

/// Marks temp files, so a later run can clean up after a killed one.
pub const TEMP_MARK: &str = ".kaas-tmp-";

/// What a render changes on disk.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Files to create, with their bytes.
    pub created: Vec<(String, Vec<u8>)>,
    /// Files to overwrite, with old and new bytes.
    pub changed: Vec<(String, Vec<u8>, Vec<u8>)>,
    /// Files to delete, with their old bytes.
    pub deleted: Vec<(String, Vec<u8>)>,
    /// Temp files a killed run left behind.
    pub leftovers: Vec<String>,
    /// Files already as desired.
    pub unchanged: usize,
    /// The desired files already as desired (kept overlays' files are counted, not listed).
    pub unchanged_paths: Vec<String>,
    /// The folders listed to find stale files: a file added to one moves its mtime, which is
    /// what the stat cache watches (see `stat_cache`).
    pub listed_dirs: Vec<String>,
}

impl Plan {
    /// Nothing to write or delete.
    pub fn is_empty(&self) -> bool {
        self.created.is_empty() && self.changed.is_empty() && self.deleted.is_empty() && self.leftovers.is_empty()
    }

    /// Every path the plan writes or deletes, sorted.
    pub fn paths(&self) -> Vec<String> {
        let mut p: Vec<String> = self
            .created
            .iter()
            .map(|(p, _)| p.clone())
            .chain(self.changed.iter().map(|(p, _, _)| p.clone()))
            .chain(self.deleted.iter().map(|(p, _)| p.clone()))
            .collect();
        p.sort();
        p
    }

    /// A unified diff of the whole plan, file by file in path order.
    pub fn unified_diff(&self) -> String {
        let mut entries: Vec<(&str, &[u8], &[u8])> = Vec::new();
        for (p, new) in &self.created {
            entries.push((p, b"", new));
        }
        for (p, old, new) in &self.changed {
            entries.push((p, old, new));
        }
        for (p, old) in &self.deleted {
            entries.push((p, old, b""));
        }
        entries.sort_by(|a, b| a.0.cmp(b.0));
        let mut out = String::new();
        for (path, old, new) in entries {
            let old = String::from_utf8_lossy(old);
            let new = String::from_utf8_lossy(new);
            let from = if old.is_empty() {
                "/dev/null".to_string()
            } else {
                format!("a/{path}")
            };
            let to = if new.is_empty() {
                "/dev/null".to_string()
            } else {
                format!("b/{path}")
            };
            let diff = similar::TextDiff::from_lines(old.as_ref(), new.as_ref());
            out.push_str(&diff.unified_diff().context_radius(3).header(&from, &to).to_string());
        }
        out
    }
}

/// Compares `tree` with the files under `repo`. Files under an `owned` prefix that the tree
/// does not contain are stale, except under a `keep` prefix (overlays known to be current).
/// Takes the tree by value: its bytes move into the plan instead of being copied (a fleet's
/// first render is hundreds of megabytes at 10,000 tenants).
pub fn plan(repo: &Path, tree: Tree, owned: &[String], keep: &[String]) -> Result<Plan> {
    let mut plan = Plan::default();
    refuse_symlinked_dirs(repo, tree.keys().chain(owned))?;
    // Reads are independent; on a cold cache they overlap well across threads.
    let existing: Vec<Result<Option<Vec<u8>>>> = tree
        .par_iter()
        .map(|(path, new)| read_if_exists(&repo.join(path), new.len()))
        .collect();
    // Kept paths are looked up once per file and folder: a fleet keeps thousands of them.
    let keep: HashSet<&str> = keep.iter().map(|k| k.trim_end_matches('/')).collect();
    let kept = |path: &str| keep.contains(path) || path.match_indices('/').any(|(end, _)| keep.contains(&path[..end]));
    let mut on_disk = BTreeSet::new();
    for prefix in owned {
        list_files(
            repo,
            prefix.trim_end_matches('/'),
            &keep,
            &mut on_disk,
            &mut plan.listed_dirs,
        )?;
    }
    // `kaas.lock`'s temp file lives in the root, which no render owns as a whole.
    on_disk.extend(root_leftovers(repo)?);
    for path in on_disk {
        if path.rsplit('/').next().is_some_and(|f| f.contains(TEMP_MARK)) {
            plan.leftovers.push(path);
        } else if kept(&path) {
            plan.unchanged += 1;
        } else if !tree.contains_key(&path) {
            let old = read_stale(&repo.join(&path))?;
            plan.deleted.push((path, old));
        }
    }
    for ((path, new), old) in tree.into_iter().zip(existing) {
        match old? {
            None => plan.created.push((path, new)),
            Some(old) if old == new => {
                plan.unchanged += 1;
                plan.unchanged_paths.push(path);
            }
            Some(old) => plan.changed.push((path, old, new)),
        }
    }
    Ok(plan)
}

/// The old bytes of a file about to be deleted, for the diff. Only a regular file is read: a
/// symlink planted in an owned folder could point at `/dev/zero` or a FIFO (issue 9).
fn read_stale(path: &Path) -> Result<Vec<u8>> {
    let meta = fs_err::symlink_metadata(path)?;
    if meta.is_file() {
        Ok(fs_err::read(path)?)
    } else {
        Ok(format!("(not a regular file: {:?})\n", meta.file_type()).into_bytes())
    }
}

/// Refuses to write through a symlinked folder: `overlays/tenants/acme -> /etc` would otherwise
/// put a tenant's files outside the repository (issue 9). Checks each folder once.
fn refuse_symlinked_dirs<'a>(repo: &Path, paths: impl Iterator<Item = &'a String>) -> Result<()> {
    let mut checked: BTreeSet<&str> = BTreeSet::new();
    for path in paths {
        for (end, _) in path.match_indices('/') {
            let dir = &path[..end];
            if !checked.insert(dir) {
                continue;
            }
            match std::fs::symlink_metadata(repo.join(dir)) {
                Ok(m) if m.file_type().is_symlink() => anyhow::bail!(
                    "`{}` is a symlink; kaas-gitops writes only into real folders of the repository",
                    repo.join(dir).display()
                ),
                Ok(_) => {}
                // Below a missing folder nothing exists yet: `apply` creates real folders.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                Err(e) => return Err(e).with_context(|| format!("failed to inspect `{}`", repo.join(dir).display())),
            }
        }
    }
    Ok(())
}

/// Temp files a killed run left in the repository root (`kaas.lock`'s).
pub(crate) fn root_leftovers(repo: &Path) -> Result<Vec<String>> {
    let entries = match std::fs::read_dir(repo) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        other => other.with_context(|| format!("failed to list `{}`", repo.display()))?,
    };
    let mut out = Vec::new();
    for entry in entries {
        let name = entry
            .with_context(|| format!("failed to list `{}`", repo.display()))?
            .file_name()
            .to_string_lossy()
            .into_owned();
        if name.starts_with('.') && name.contains(TEMP_MARK) {
            out.push(name);
        }
    }
    Ok(out)
}

/// Reads a file if it exists. `expected` lets a size mismatch skip reading the content.
fn read_if_exists(path: &Path, expected: usize) -> Result<Option<Vec<u8>>> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("failed to inspect `{}`", path.display())),
        Ok(m) if !m.is_file() => {
            anyhow::bail!("`{}` is not a regular file; kaas-gitops owns this path", path.display())
        }
        Ok(m) if m.len() != expected as u64 => {
            // Different size: certainly different content; read it only for the diff.
            Ok(Some(fs_err::read(path)?))
        }
        Ok(_) => {
            let mut buf = Vec::with_capacity(expected);
            fs_err::File::open(path)?.read_to_end(&mut buf)?;
            Ok(Some(buf))
        }
    }
}

fn list_files(
    repo: &Path,
    rel: &str,
    keep: &HashSet<&str>,
    out: &mut BTreeSet<String>,
    listed: &mut Vec<String>,
) -> Result<()> {
    let dir = repo.join(rel);
    let entries = match std::fs::read_dir(&dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        other => other.with_context(|| format!("failed to list `{}`", dir.display()))?,
    };
    listed.push(rel.to_string());
    for entry in entries {
        let entry = entry.with_context(|| format!("failed to list `{}`", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let child = format!("{rel}/{name}");
        let ft = entry.file_type()?;
        if ft.is_dir() {
            // A kept overlay is current: its files need not be listed one by one.
            if !keep.contains(child.as_str()) {
                list_files(repo, &child, keep, out, listed)?;
            }
        } else {
            out.insert(child);
        }
    }
    Ok(())
}

/// Applies `plan` durably. Returns once every change is on disk.
pub fn apply(repo: &Path, plan: &Plan) -> Result<()> {
    let writes: Vec<(&String, &Vec<u8>)> = plan
        .created
        .iter()
        .map(|(p, b)| (p, b))
        .chain(plan.changed.iter().map(|(p, _, b)| (p, b)))
        .collect();
    // Temp files of killed runs first: the repository lock guarantees their writers are gone,
    // and a run killed again and again must not pile up a copy of the tree per attempt.
    for rel in &plan.leftovers {
        let _ = std::fs::remove_file(repo.join(rel));
    }
    let pid = std::process::id();
    let targets: Vec<PathBuf> = writes.iter().map(|(rel, _)| repo.join(rel)).collect();
    let dirs: BTreeSet<PathBuf> = targets
        .iter()
        .map(|t| {
            t.parent()
                .expect("a file in the tree has a parent directory")
                .to_path_buf()
        })
        .collect();
    for d in &dirs {
        fs_err::create_dir_all(d)?;
    }
    let temp_of = |target: &Path| {
        let name = target.file_name().expect("a file name").to_string_lossy();
        target.with_file_name(format!(".{name}{TEMP_MARK}{pid}"))
    };
    // 1. Every temp file, in parallel: file creation dominates a cold render.
    let written: Vec<Result<()>> = writes
        .par_iter()
        .zip(targets.par_iter())
        .map(|((_, bytes), target)| {
            step(|| {
                let mut f = fs_err::File::create(temp_of(target))?;
                f.write_all(bytes)?;
                Ok(())
            })
        })
        .collect();
    if let Some(Err(e)) = written.into_iter().find(Result::is_err) {
        for t in &targets {
            let _ = std::fs::remove_file(temp_of(t));
        }
        return Err(e);
    }
    // 2. One syncfs makes all of them durable before any rename exposes them.
    if !targets.is_empty() {
        let temps: Vec<PathBuf> = targets.iter().map(|t| temp_of(t)).collect();
        sync_files(repo, &temps)?;
    }
    // 3. Renames: each file switches atomically from old to new content. Kustomizations and
    //    Flux entries go last, after a second sync: an overlay's `kustomization.yaml` records
    //    its input hash, and a later run trusts that hash only if the files it lists are
    //    already the new ones; Flux entries point at overlays, which must be complete first.
    let (first, last): (Vec<&PathBuf>, Vec<&PathBuf>) = targets.iter().partition(|t| !is_entry_point(repo, t));
    let rename = |t: &&PathBuf| -> Result<()> { step(|| Ok(fs_err::rename(temp_of(t), t)?)) };
    first.par_iter().try_for_each(rename)?;
    if !first.is_empty() && !last.is_empty() {
        sync_folders(repo, first.iter().map(|p| p.as_path()))?;
    }
    last.par_iter().try_for_each(rename)?;
    // 4. Deletions come last: a crash before this point leaves the old tenant, never a hole.
    for (rel, _) in &plan.deleted {
        let path = repo.join(rel);
        step(|| fs_err::remove_file(&path))?;
        let mut dir = path.parent().map(Path::to_path_buf);
        while let Some(d) = dir {
            if d == repo || std::fs::remove_dir(&d).is_err() {
                break;
            }
            dir = d.parent().map(Path::to_path_buf);
        }
    }
    // 5. One more `syncfs`, so the renames and deletions themselves survive a power loss: it
    //    commits every folder's changes at once, where an fsync per folder costs one journal
    //    commit each (a thousand folders for a fleet's first render).
    if !targets.is_empty() || !plan.deleted.is_empty() {
        let deleted: Vec<PathBuf> = plan.deleted.iter().map(|(rel, _)| repo.join(rel)).collect();
        sync_folders(repo, targets.iter().chain(&deleted).map(PathBuf::as_path))?;
    }
    Ok(())
}

/// A file other files depend on: a `kustomization.yaml` or anything under `flux/`.
fn is_entry_point(repo: &Path, target: &Path) -> bool {
    target.file_name().is_some_and(|n| n == crate::layout::KUSTOMIZATION)
        || target.starts_with(repo.join(crate::layout::FLUX_DIR))
}

/// One `syncfs` for the whole batch of temp files instead of one fsync per file.
#[cfg(target_os = "linux")]
fn sync_filesystem(repo: &Path) -> Result<()> {
    let dir = fs_err::File::open(repo)?;
    rustix::fs::syncfs(&dir).with_context(|| format!("failed to sync the file system of `{}`", repo.display()))
}

/// Makes `files` durable: one `syncfs` on Linux, else (`repo::portable`) an fsync per file.
fn sync_files(repo: &Path, files: &[PathBuf]) -> Result<()> {
    #[cfg(target_os = "linux")]
    if !crate::repo::portable::enabled() {
        return sync_filesystem(repo);
    }
    let _ = repo;
    files.par_iter().try_for_each(|f| {
        fs_err::File::open(f)
            .and_then(|file| file.sync_all())
            .map_err(anyhow::Error::from)
    })
}

/// Makes the renames and deletions of `paths` durable: one `syncfs` on Linux, else an fsync of
/// every folder from each path's parent up to `repo` (a new folder is an entry in its parent).
fn sync_folders<'a>(repo: &Path, paths: impl Iterator<Item = &'a Path>) -> Result<()> {
    #[cfg(target_os = "linux")]
    if !crate::repo::portable::enabled() {
        return sync_filesystem(repo);
    }
    let mut folders: BTreeSet<&Path> = BTreeSet::new();
    for path in paths {
        for dir in path.ancestors().skip(1) {
            if !dir.starts_with(repo) || !folders.insert(dir) || dir == repo {
                break;
            }
        }
    }
    for dir in folders {
        match std::fs::File::open(dir) {
            // A folder the deletions removed: its parent's fsync records that.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(anyhow::Error::from(e).context(format!("failed to open `{}`", dir.display()))),
            Ok(f) => f
                .sync_all()
                .with_context(|| format!("failed to sync the folder `{}`", dir.display()))?,
        }
    }
    Ok(())
}
