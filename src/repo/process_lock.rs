//! One writer at a time (issue 9): an exclusive advisory lock ([`File::try_lock`], `flock` on
//! Unix) on [`LOCK_FILE`] in the repository root, held by `render`, `pin`, `pr` and `watch` while they read, plan and write.
//!
//! The kernel releases a `flock` when its holder exits or dies, so a lock can never outlive its
//! process: there is no stale-lock detection to get wrong. The file itself only carries the
//! holder's pid, for the message a second run prints while it waits or gives up, and exists only
//! while a run holds it (or after a killed run, until the next one).

use std::fs::{File, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::fs::OFlags;

/// The lock file, relative to the repository root (listed in the `.gitignore` that `init` writes).
pub const LOCK_FILE: &str = ".kaas-gitops.lock";

/// How long a second run waits for the first, unless `--lock-timeout` says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a waiting run tries the lock again.
const POLL: Duration = Duration::from_millis(50);

/// Why the lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process held the lock for the whole timeout.
    #[error("another kaas-gitops run{} holds the lock on this repository", holder(*pid))]
    Busy {
        /// The holder's pid, when its file says.
        pid: Option<u32>,
        /// The lock file.
        path: PathBuf,
        /// How long this run waited.
        waited: Duration,
    },
    /// The lock file could not be opened or locked.
    #[error("failed to lock `{}`", path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
}

impl LockError {
    /// The next step for the user.
    pub fn hint(&self) -> String {
        match self {
            LockError::Busy { path, waited, .. } => format!(
                "waited {} s; let the other run finish, or wait longer with `--lock-timeout SECONDS` \
                 (the lock is `{}`, released when that process exits)",
                waited.as_secs(),
                path.display()
            ),
            LockError::Io { .. } => "check that the repository folder exists and is writable".to_string(),
        }
    }
}

fn holder(pid: Option<u32>) -> String {
    pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
}

/// Holds the repository lock until dropped (or until the process ends, however it ends).
/// The file is deleted on release, so a repository shows no lock file between runs; one left by
/// a killed run is a file nobody holds, and the next run simply locks it.
#[derive(Debug)]
pub struct Guard {
    /// Open for as long as the lock is held: the kernel releases the lock when it closes.
    _file: File,
    path: PathBuf,
}

impl Drop for Guard {
    fn drop(&mut self) {
        // Deleted while still held (the lock goes when `_file` closes, right after): a waiter
        // that then gets the old file sees it is gone and opens the new one (`is_current`).
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Takes the lock on `repo`, waiting up to `timeout` for another run to finish.
pub fn acquire(repo: &Path, timeout: Duration) -> Result<Guard, LockError> {
    acquire_with(repo, timeout, |_| {})
}

/// Like [`acquire`], and calls `on_wait` with the holder's pid once, when the lock is busy, so
/// the caller can say why it is waiting.
pub fn acquire_with(repo: &Path, timeout: Duration, on_wait: impl FnOnce(Option<u32>)) -> Result<Guard, LockError> {
    let path = repo.join(LOCK_FILE);
    let io = |source| LockError::Io {
        path: path.clone(),
        source,
    };
    let started = Instant::now();
    let mut on_wait = Some(on_wait);
    let mut file = open(&path).map_err(io)?;
    loop {
        match file.try_lock() {
            // The previous holder deletes the file before it lets go: a lock on a file that is
            // no longer at `path` guards nothing, so open the current one and lock that.
            Ok(()) if is_current(&file, &path) => break,
            Ok(()) => {
                file = open(&path).map_err(io)?;
                continue;
            }
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(e)) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        let pid = read_pid(&mut file);
        if let Some(f) = on_wait.take() {
            f(pid);
        }
        let waited = started.elapsed();
        if waited >= timeout {
            return Err(LockError::Busy {
                pid,
                path: path.clone(),
                waited,
            });
        }
        std::thread::sleep(POLL.min(timeout - waited));
    }
    file.set_len(0).map_err(io)?;
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    file.write_all(format!("{}\n", std::process::id()).as_bytes())
        .map_err(io)?;
    Ok(Guard { _file: file, path })
}

/// Opens (creating) the lock file. NOFOLLOW: a hostile repository could make it a symlink to a
/// file elsewhere, which this run would then truncate.
fn open(path: &Path) -> std::io::Result<File> {
    let file = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(i32::try_from(OFlags::NOFOLLOW.bits()).expect("O_NOFOLLOW fits an i32"))
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(file)
}

/// Whether `file` is still the file at `path` (not deleted by the holder it waited for).
fn is_current(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// The pid the holder wrote; `None` while it has not written it yet.
fn read_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(32).read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_waits_then_reports_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let first = acquire(dir.path(), Duration::ZERO).unwrap();
        // flock locks belong to the open file description: a second open in the same process
        // conflicts just as another process would.
        let mut seen = None;
        let err = acquire_with(dir.path(), Duration::from_millis(120), |p| seen = Some(p)).unwrap_err();
        let pid = std::process::id();
        assert_eq!(seen, Some(Some(pid)));
        assert_eq!(
            err.to_string(),
            format!("another kaas-gitops run (pid {pid}) holds the lock on this repository")
        );
        drop(first);
        assert!(!dir.path().join(LOCK_FILE).exists(), "released locks are deleted");
        let again = acquire(dir.path(), Duration::ZERO).unwrap();
        drop(again);
    }

    #[test]
    fn a_lock_file_left_by_a_killed_run_is_not_a_lock() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(LOCK_FILE), "4194303\n").unwrap();
        let guard = acquire(dir.path(), Duration::ZERO).unwrap();
        let pid = std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
        assert_eq!(pid, format!("{}\n", std::process::id()));
        drop(guard);
    }

    #[test]
    fn a_symlinked_lock_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::NamedTempFile::new().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join(LOCK_FILE)).unwrap();
        assert!(matches!(acquire(dir.path(), Duration::ZERO), Err(LockError::Io { .. })));
    }
}
