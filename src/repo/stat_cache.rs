//! The stat cache: proves that a `render` (or a `render --check`) would find nothing to do
//! without reading a file, the way git's index proves a clean working tree. After a run that
//! found the disk as rendered, it records the status (size, mtime, ctime, inode, mode) of every
//! input and of every output and folder the run compared; the next run of the same mode whose
//! stats all match prints the recorded outcome and stops. Any difference, or anything it cannot
//! prove, falls back to the full pipeline.
//!
//! Two modes, two records: a plain `render` compares what its input-hash skip does not trust
//! (see `repo::inputs`: files outside the overlays, each overlay's `kustomization.yaml` and
//! file list), so its record holds those; `render --check` compares every byte of every output,
//! so its record holds every output file. A check served from its record therefore proves what
//! a full check proves: each file is, stat for stat, the one that was compared byte for byte.
//!
//! Racy entries: a file changed within the file system's timestamp granularity of the moment it
//! was compared could change again with the same mtime. As git does, an entry whose mtime or
//! ctime is not strictly older than the run's start, as the file system's own clock stamped a
//! file created then (`Stamp`), is racy, and a record with a racy entry is not written (the next
//! run records it). Taking the stamp before the comparison, not after, also means a file changed
//! while the run compared it is never recorded as compared.
//!
//! The cache lives in the repository's git folder (`.git/kaas-gitops/`, as git keeps its own
//! index there), so the working tree never changes on a no-op and nothing can commit it. A
//! folder that is in no git repository of this user's gets no cache (see `cache_dir`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::diagnostics::Diagnostic;

/// Which run a record proves, and so which outputs it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A plain `render`: inputs, files outside the overlays, overlay kustomizations.
    Render,
    /// `render --check`: inputs and every output file.
    Check,
}

impl Mode {
    fn file(self) -> &'static str {
        match self {
            Mode::Render => "render-stat.bin",
            Mode::Check => "check-stat.bin",
        }
    }
}

/// Larger than any real record (a 10,000-tenant check's is ~11 MB); a bigger file is not read.
const MAX_CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// What `stat` says of a path; `None` in a record means the path did not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sig {
    size: u64,
    mtime_ns: i64,
    ctime_ns: i64,
    ino: u64,
    mode: u32,
}

/// The bytes of one entry in a record: a presence byte, then the `Sig` fields little-endian.
const PACKED_SIG: usize = 1 + 8 + 8 + 8 + 8 + 4;

/// Appends `sig` to `out` as a record stores it: fixed width, so a folder's entries are
/// compared as one byte string.
fn pack(out: &mut Vec<u8>, sig: Option<Sig>) {
    match sig {
        None => out.extend_from_slice(&[0; PACKED_SIG]),
        Some(s) => {
            out.push(1);
            out.extend_from_slice(&s.size.to_le_bytes());
            out.extend_from_slice(&s.mtime_ns.to_le_bytes());
            out.extend_from_slice(&s.ctime_ns.to_le_bytes());
            out.extend_from_slice(&s.ino.to_le_bytes());
            out.extend_from_slice(&s.mode.to_le_bytes());
        }
    }
}

impl Sig {
    fn of(path: &Path) -> std::io::Result<Option<Sig>> {
        match std::fs::symlink_metadata(path) {
            Ok(m) => Ok(Some(Sig {
                size: m.size(),
                mtime_ns: Self::nanos(m.mtime(), m.mtime_nsec()),
                ctime_ns: Self::nanos(m.ctime(), m.ctime_nsec()),
                ino: m.ino(),
                mode: m.mode(),
            })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn from_stat(st: &rustix::fs::Stat) -> Sig {
        Sig {
            size: u64::try_from(st.st_size).unwrap_or(u64::MAX),
            mtime_ns: Self::nanos(st.st_mtime, i64::try_from(st.st_mtime_nsec).unwrap_or(0)),
            ctime_ns: Self::nanos(st.st_ctime, i64::try_from(st.st_ctime_nsec).unwrap_or(0)),
            ino: st.st_ino,
            // `mode_t` is u16 on macOS, u32 on Linux.
            #[allow(clippy::useless_conversion)]
            mode: u32::from(st.st_mode),
        }
    }

    /// Nanoseconds since the epoch, which fit an `i64` until 2262; a time beyond saturates (and
    /// is then never older than a stamp, so never trusted).
    fn nanos(secs: i64, nsec: i64) -> i64 {
        secs.saturating_mul(1_000_000_000).saturating_add(nsec)
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

/// A record, written with postcard. Reading one is most of what a cached check does besides
/// its stats, so it is laid out to be read without allocating per path: its strings and bytes
/// are borrowed from the file's bytes, and each folder's names are one string.
#[derive(Debug, Serialize, Deserialize)]
struct Record<'a> {
    /// The binary and the options the outcome depends on.
    key: &'a str,
    /// The `Outcome`, as JSON: diagnostics use serde attributes only a self-describing format
    /// reads.
    outcome: &'a str,
    /// Each warning's caret line (`Location::line_text`, `text_column`), which diagnostics do
    /// not serialize: without it a replayed warning would print an empty source line.
    #[serde(borrow)]
    carets: Vec<Option<(&'a str, usize)>>,
    /// The recorded paths by folder, each folder once; the repository root is `""`. A folder
    /// is itself an entry of its parent's group, so replacing one by a symlink is seen there.
    #[serde(borrow)]
    groups: Vec<Group<'a>>,
}

/// One folder of a record: `("overlays/tenants/acme", "cluster.yaml\0kustomization.yaml…",
/// packed sigs)`. A file name cannot hold a NUL, so NUL separates the names; `sigs` holds one
/// `pack`ed status per name, in the same order.
type Group<'a> = (&'a str, &'a str, &'a [u8]);

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

/// The files a run compared and the folders it listed to find stale files, with every folder
/// holding one of them: a folder's mtime moves when a file in it is added, removed or renamed,
/// and an in-place edit moves the file's own. A plain render compares fewer files than a check
/// (of an overlay its input-hash skip keeps, only the `kustomization.yaml`, which records the
/// hash), so its record holds fewer.
pub fn output_paths<'a>(files: impl Iterator<Item = &'a str>, listed_dirs: &[String]) -> Vec<String> {
    let mut out: BTreeSet<String> = listed_dirs.iter().cloned().collect();
    for f in files {
        out.insert(f.to_string());
        for (end, _) in f.match_indices('/') {
            out.insert(f[..end].to_string());
        }
    }
    out.into_iter().collect()
}

/// `paths` by folder, sorted, each folder with its names.
fn group(paths: Vec<String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut groups: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for p in paths {
        let (dir, name) = p.rsplit_once('/').unwrap_or(("", &p));
        groups.entry(dir.to_string()).or_default().insert(name.to_string());
    }
    groups
}

/// The folder `dir` of the repository, opened to stat the names in it: a stat relative to it
/// skips walking the path from the root for every file (16,000 of them in a 1,000-tenant
/// check). `None` when the folder is missing, so holds nothing.
fn open_dir(repo: &Path, dir: &str) -> std::io::Result<Option<rustix::fd::OwnedFd>> {
    use rustix::fs::{Mode as Perm, OFlags};
    // The root is the user's path and may go through symlinks; every folder below it is
    // opened without following one (its own entry in its parent records what it is).
    // `O_PATH` (Linux) opens a folder without read permission and reads nothing; elsewhere,
    // and with `KAAS_PORTABLE_FS=1`, it is opened read-only (`repo::portable`).
    #[cfg(target_os = "linux")]
    let access = if crate::repo::portable::enabled() {
        OFlags::RDONLY
    } else {
        OFlags::PATH
    };
    #[cfg(not(target_os = "linux"))]
    let access = OFlags::RDONLY;
    let flags = access | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let flags = if dir.is_empty() {
        flags
    } else {
        flags | OFlags::NOFOLLOW
    };
    match rustix::fs::open(repo.join(dir), flags, Perm::empty()) {
        Ok(fd) => Ok(Some(fd)),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The status of `name` in a folder `open_dir` opened.
fn stat_at(dir: Option<&rustix::fd::OwnedFd>, name: &str) -> std::io::Result<Option<Sig>> {
    let Some(fd) = dir else { return Ok(None) };
    match rustix::fs::statat(fd, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(Sig::from_stat(&st))),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// An owned `Group`: `(folder, names joined by NUL, packed statuses)`.
type OwnedGroup = (String, String, Vec<u8>);

/// The status of every path, by folder, as a record's groups hold them. `None` when an entry
/// cannot be trusted as of `now`: a symlink (its target's changes would go unseen) or one
/// changed at or after the run started (racy).
fn stat_all(repo: &Path, paths: Vec<String>, now: i64) -> std::io::Result<Option<Vec<OwnedGroup>>> {
    group(paths)
        .into_par_iter()
        .map(|(dir, names)| {
            let fd = open_dir(repo, &dir)?;
            let mut sigs = Vec::with_capacity(names.len() * PACKED_SIG);
            for name in &names {
                let sig = stat_at(fd.as_ref(), name)?;
                if sig.is_some_and(|s| s.is_symlink() || s.mtime_ns >= now || s.ctime_ns >= now) {
                    return Ok(None);
                }
                pack(&mut sigs, sig);
            }
            let names: Vec<String> = names.into_iter().collect();
            Ok(Some((dir, names.join("\0"), sigs)))
        })
        .collect::<std::io::Result<Option<Vec<_>>>>()
}

/// The recorded outcome, when every recorded path still has its recorded status. `None`
/// whenever that cannot be shown.
pub fn lookup(repo: &Path, mode: Mode, key: &str) -> Option<Outcome> {
    let bytes = read_cache(repo, mode.file(), MAX_CACHE_BYTES)?;
    // The whole file or nothing: a record cut short by a damaged count must not read as a
    // record of fewer paths.
    let (record, rest): (Record, _) = postcard::take_from_bytes(&bytes).ok()?;
    if !rest.is_empty() {
        return None;
    }
    if record.key != key {
        return None;
    }
    // Stops at the first difference: a changed repository falls back to the pipeline at once.
    let same = record.groups.par_iter().all(|&(dir, names, then)| {
        open_dir(repo, dir).is_ok_and(|fd| {
            let mut now = Vec::with_capacity(then.len());
            names
                .split('\0')
                .all(|name| stat_at(fd.as_ref(), name).map(|sig| pack(&mut now, sig)).is_ok())
                && now == then
        })
    });
    // A temp file a killed run left in the root is drift (see `tree::plan`); the root folder
    // itself cannot be recorded, as the repository lock comes and goes there on every run.
    if !same || crate::repo::tree::root_leftovers(repo).map_or(true, |l| !l.is_empty()) {
        return None;
    }
    let mut outcome: Outcome = serde_json::from_str(record.outcome).ok()?;
    if record.carets.len() != outcome.warnings.len() {
        return None;
    }
    for (w, caret) in outcome.warnings.iter_mut().zip(record.carets) {
        if let (Some(loc), Some((text, column))) = (w.location.as_mut(), caret) {
            loc.line_text = text.to_string();
            loc.text_column = column;
        }
    }
    Some(outcome)
}

/// The file system's clock at the start of a run: the timestamps of a file created then. It is
/// the temp file a record is later written to; dropped unused, it is removed.
pub struct Stamp {
    mode: Mode,
    dir: std::path::PathBuf,
    tmp: std::path::PathBuf,
    file: Option<std::fs::File>,
    now: i64,
}

impl Stamp {
    /// Taken before the run reads anything. `None` where no cache can be kept.
    pub fn take(repo: &Path, mode: Mode) -> Option<Stamp> {
        let dir = cache_dir(repo)?;
        prepare_dir(&dir).ok()?;
        let tmp = dir.join(format!("{}.{}.tmp", mode.file(), std::process::id()));
        let file = create_temp(&tmp).ok()?;
        let now = match file.metadata() {
            Ok(m) => Sig::nanos(m.mtime(), m.mtime_nsec()),
            Err(_) => {
                let _ = std::fs::remove_file(&tmp);
                return None;
            }
        };
        Some(Stamp {
            mode,
            dir,
            tmp,
            file: Some(file),
            now,
        })
    }
}

impl Drop for Stamp {
    fn drop(&mut self) {
        if self.file.is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Records `outcome` for the current state of the disk, as of `stamp`. Best effort: a cache
/// that cannot be written (read-only checkout, racy entries, a symlink planted where the folder
/// goes) is simply not there, and an old one is removed so it cannot be trusted.
pub fn store(repo: &Path, mut stamp: Stamp, key: &str, outputs: Vec<String>, outcome: Outcome) {
    let file = stamp.dir.join(stamp.mode.file());
    let Some(mut f) = stamp.file.take() else { return };
    let written = (|| -> std::io::Result<bool> {
        let mut paths = input_paths(repo)?;
        paths.extend(outputs);
        let Some(groups) = stat_all(repo, paths, stamp.now)? else {
            return Ok(false);
        };
        let carets = outcome
            .warnings
            .iter()
            .map(|w| w.location.as_ref().map(|l| (l.line_text.as_str(), l.text_column)))
            .collect();
        let outcome = serde_json::to_string(&outcome).map_err(std::io::Error::other)?;
        let record = Record {
            key,
            outcome: &outcome,
            carets,
            groups: groups
                .iter()
                .map(|(dir, names, sigs)| (dir.as_str(), names.as_str(), sigs.as_slice()))
                .collect(),
        };
        f.write_all(&postcard::to_stdvec(&record).map_err(std::io::Error::other)?)?;
        drop(f);
        std::fs::rename(&stamp.tmp, &file)?;
        Ok(true)
    })();
    if !matches!(written, Ok(true)) {
        let _ = std::fs::remove_file(&stamp.tmp);
        let _ = std::fs::remove_file(&file);
    }
}

/// Forgets both records: before any run writes, as it may leave the disk other than rendered.
pub fn forget(repo: &Path) {
    if let Some(dir) = cache_dir(repo) {
        for mode in [Mode::Render, Mode::Check] {
            let _ = std::fs::remove_file(dir.join(mode.file()));
        }
    }
}

/// Where a kaas repository keeps its caches: `<git dir>/kaas-gitops`, or for a kaas repository
/// in a folder of a larger git repository (a platform monorepo) `<git dir>/kaas-gitops-<hash of
/// that folder's path>`, so two kaas repositories in one git repository do not overwrite each
/// other's records. `None` outside a git repository, or when `KAAS_GITOPS_NO_CACHE` is set.
///
/// A record proves a check passed, so only a git folder this user owns is trusted, as git itself
/// trusts only repositories its user owns (`safe.directory`): anyone may create `/tmp/.git`.
/// The walk up stops at the file system's boundary.
pub(crate) fn cache_dir(repo: &Path) -> Option<std::path::PathBuf> {
    use sha2::{Digest, Sha256};
    use std::os::unix::ffi::OsStrExt;
    // An escape hatch for debugging and for measuring the tool without its caches.
    if std::env::var_os("KAAS_GITOPS_NO_CACHE").is_some_and(|v| !v.is_empty() && v != "0") {
        return None;
    }
    // Most kaas repositories are the top of their working tree: one stat finds the git folder.
    if let Some(git_dir) = git_dir_at(repo) {
        return Some(git_dir.join("kaas-gitops"));
    }
    let path = std::fs::canonicalize(repo).ok()?;
    let device = std::fs::metadata(&path).ok()?.dev();
    let (top, git_dir) = path
        .ancestors()
        .skip(1)
        .take_while(|dir| std::fs::metadata(dir).is_ok_and(|m| m.dev() == device))
        .find_map(|dir| git_dir_at(dir).map(|git_dir| (dir, git_dir)))?;
    let folder = path.strip_prefix(top).ok()?;
    let digest = Sha256::digest(folder.as_os_str().as_bytes());
    Some(git_dir.join(format!("kaas-gitops-{}", hex::encode(&digest[..8]))))
}

/// The git folder of the working tree whose top is `dir`: `dir/.git` itself, or the folder a
/// `.git` file names (a linked worktree, a submodule; a relative name is relative to `dir`).
/// `None` unless both are this user's.
fn git_dir_at(dir: &Path) -> Option<std::path::PathBuf> {
    let mine = |m: &std::fs::Metadata| m.uid() == rustix::process::geteuid().as_raw();
    let dot_git = dir.join(".git");
    let meta = std::fs::symlink_metadata(&dot_git).ok()?;
    if !mine(&meta) {
        return None;
    }
    if meta.is_dir() {
        Some(dot_git)
    } else if meta.is_file() && meta.len() < 4096 {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let git_dir = dir.join(text.strip_prefix("gitdir:")?.trim());
        std::fs::metadata(&git_dir)
            .is_ok_and(|m| m.is_dir() && mine(&m))
            .then_some(git_dir)
    } else {
        None
    }
}

/// Creates the temp file `path` afresh: whatever is there (a killed run's leftover under a
/// reused pid) is removed, and the file is created exclusively, so a symlink planted in its
/// place is never followed.
pub(crate) fn create_temp(path: &Path) -> std::io::Result<std::fs::File> {
    let _ = std::fs::remove_file(path);
    std::fs::OpenOptions::new().write(true).create_new(true).open(path)
}

/// The bytes of the cache file `name`, when it is a regular file (not a symlink) of at most
/// `max` bytes. Opened once; the checks are made on the open file.
pub(crate) fn read_cache(repo: &Path, name: &str, max: u64) -> Option<Vec<u8>> {
    use rustix::fs::{Mode as Perm, OFlags};
    let fd = rustix::fs::open(
        cache_dir(repo)?.join(name),
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Perm::empty(),
    )
    .ok()?;
    let mut file = std::fs::File::from(fd);
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > max {
        return None;
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).ok()?);
    std::io::Read::read_to_end(&mut file, &mut bytes).ok()?;
    Some(bytes)
}

/// Removes temp files (`<name>.<pid>.tmp`) that runs killed before their rename left in the
/// cache folder: those whose process is gone.
fn remove_stale_temps(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_suffix(".tmp"))
            .and_then(|n| n.rsplit_once('.'))
            .and_then(|(_, pid)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        // `kill(pid, 0)`: no such process (`ESRCH`) means the run is gone; portable, where
        // `/proc/<pid>` is Linux only.
        let gone = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .is_some_and(|p| rustix::process::test_kill_process(p) == Err(rustix::io::Errno::SRCH));
        if gone {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Creates the cache folder as a real folder.
pub(crate) fn prepare_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => {
            remove_stale_temps(dir);
            Ok(())
        }
        Ok(_) => Err(std::io::Error::other("the cache folder is not a folder")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir(dir),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_the_compared_files_their_folders_and_the_listed_folders() {
        let files = [
            "flux/tenant-acme.yaml",
            "overlays/tenants/acme/kustomization.yaml",
            "overlays/platform/kamaji/helmrelease-kamaji.yaml",
        ];
        let listed = ["flux".to_string(), "flux/empty".to_string()];
        assert_eq!(
            output_paths(files.into_iter(), &listed),
            [
                "flux",
                "flux/empty",
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

    #[test]
    fn a_record_reads_back_borrowed_with_its_packed_statuses() {
        let sig = Sig {
            size: 42,
            mtime_ns: -1,
            ctime_ns: 1_700_000_000_123_456_789,
            ino: u64::MAX,
            mode: 0o100644,
        };
        let mut sigs = Vec::new();
        pack(&mut sigs, Some(sig));
        pack(&mut sigs, None);
        assert_eq!(sigs.len(), 2 * PACKED_SIG);
        assert_eq!(sigs[0], 1, "a present entry starts with 1");
        assert!(
            sigs[PACKED_SIG..].iter().all(|&b| b == 0),
            "a missing entry is all zero"
        );
        let record = Record {
            key: "0.1.0 1-2-3 locked=false",
            outcome: r#"{"tenants":["acme"],"unchanged":3,"warnings":[]}"#,
            carets: vec![None, Some(("  tier: gold", 3))],
            groups: vec![
                ("", "kaas.yaml\0tenants", &sigs),
                ("tenants", "acme.yaml", &sigs[..PACKED_SIG]),
            ],
        };
        let bytes = postcard::to_stdvec(&record).unwrap();
        let back: Record = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back.key, record.key);
        assert_eq!(back.outcome, record.outcome);
        assert_eq!(back.carets, record.carets);
        assert_eq!(back.groups, record.groups);
        // Borrowed, not copied: the names point into the bytes read.
        let range = bytes.as_ptr_range();
        assert!(range.contains(&back.groups[1].1.as_ptr()));
        assert!(range.contains(&back.groups[0].2.as_ptr()));
    }

    #[test]
    fn a_temp_file_never_follows_a_symlink_planted_in_its_place() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "keep me").unwrap();
        let tmp = dir.path().join("check-stat.bin.1.tmp");
        std::os::unix::fs::symlink(&victim, &tmp).unwrap();
        std::io::Write::write_all(&mut create_temp(&tmp).unwrap(), b"record").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
        assert!(std::fs::symlink_metadata(&tmp).unwrap().is_file());
        assert_eq!(std::fs::read_to_string(&tmp).unwrap(), "record");
    }

    #[test]
    fn a_record_with_bytes_after_it_is_not_trusted() {
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir(repo.path().join(".git")).unwrap();
        std::fs::write(repo.path().join("kaas.yaml"), "kind: Platform\n").unwrap();
        // Older than the stamp by more than the clock's tick, so the entries are not racy.
        std::thread::sleep(std::time::Duration::from_millis(25));
        let stamp = Stamp::take(repo.path(), Mode::Check).unwrap();
        let outcome = Outcome {
            tenants: vec![],
            unchanged: 1,
            warnings: vec![],
        };
        store(repo.path(), stamp, "key", vec![], outcome.clone());
        assert_eq!(lookup(repo.path(), Mode::Check, "key"), Some(outcome));
        let file = cache_dir(repo.path()).unwrap().join(Mode::Check.file());
        let mut bytes = std::fs::read(&file).unwrap();
        bytes.push(0);
        std::fs::write(&file, bytes).unwrap();
        assert_eq!(lookup(repo.path(), Mode::Check, "key"), None);
    }
}
