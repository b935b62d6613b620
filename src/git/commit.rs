//! `render --commit`: one commit on the current branch holding exactly the paths a render wrote
//! or deleted. The commit's tree is HEAD's tree with those paths replaced by their working-tree
//! content, built in an index that lives only in memory; so the user's other edits, untracked
//! files and staged changes never reach the commit. The real index is then updated for those
//! paths only, so `git status` agrees with the new HEAD and keeps showing the user's own work.

use std::path::Path;

use git2::{ErrorCode, Index, IndexEntry, IndexTime, Oid, Repository, RepositoryState, Signature, Tree};

use crate::git::sign::{Signer, create_commit};
use crate::git::{GitError, Workspace};

/// A regular, non-executable file.
const MODE_FILE: u32 = 0o100_644;

/// A commit that was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// The new commit.
    pub id: Oid,
    /// The branch it is on (`refs/heads/...`).
    pub branch: String,
}

/// Checks everything that could stop a commit, before the render writes a file: HEAD is a
/// branch and nobody holds the index lock.
pub fn preflight(ws: &Workspace) -> Result<(), GitError> {
    ws.head_branch()?;
    let operation = match ws.repo.state() {
        RepositoryState::Clean => None,
        RepositoryState::Merge => Some("merge"),
        RepositoryState::Revert | RepositoryState::RevertSequence => Some("revert"),
        RepositoryState::CherryPick | RepositoryState::CherryPickSequence => Some("cherry-pick"),
        RepositoryState::Bisect => Some("bisect"),
        RepositoryState::Rebase | RepositoryState::RebaseInteractive | RepositoryState::RebaseMerge => Some("rebase"),
        RepositoryState::ApplyMailbox | RepositoryState::ApplyMailboxOrRebase => Some("`git am`"),
    };
    if let Some(operation) = operation {
        return Err(GitError::Busy {
            operation: operation.to_string(),
        });
    }
    ws.check_index_unlocked()
}

/// Commits `paths` (relative to the kaas repository) as they are in the working tree; a path
/// that is gone is removed. `Ok(None)` when the result equals HEAD's tree: no empty commits.
pub fn commit_paths(
    ws: &Workspace,
    paths: &[String],
    sig: &Signature<'_>,
    message: &str,
) -> Result<Option<Committed>, GitError> {
    let repo = &ws.repo;
    let branch = ws.head_branch()?;
    ws.check_index_unlocked()?;
    let parent = match repo.refname_to_id(&branch) {
        Ok(id) => Some(repo.find_commit(id).map_err(GitError::git("read the HEAD commit"))?),
        Err(e) if e.code() == ErrorCode::NotFound => None,
        Err(e) => return Err(GitError::git(format!("resolve `{branch}`"))(e)),
    };
    let base = match &parent {
        Some(c) => Some(c.tree().map_err(GitError::git("read the HEAD tree"))?),
        None => None,
    };
    let mut updates = Vec::with_capacity(paths.len());
    let mut real = repo.index().map_err(GitError::git("read the git index"))?;
    for rel in paths {
        let git_path = ws.git_path(rel);
        let abs = ws.workdir.join(&git_path);
        let is_file = std::fs::symlink_metadata(&abs).is_ok_and(|m| m.is_file());
        if is_file {
            let id = repo
                .blob_path(&abs)
                .map_err(GitError::git(format!("store `{git_path}` in git")))?;
            updates.push((git_path.clone(), Some(id)));
            real.add_path(Path::new(&git_path))
                .map_err(GitError::git(format!("stage `{git_path}`")))?;
        } else {
            updates.push((git_path.clone(), None));
            real.remove_path(Path::new(&git_path))
                .map_err(GitError::git(format!("unstage `{git_path}`")))?;
        }
    }
    let tree_id = tree_with(repo, base.as_ref(), &updates)?;
    if base.as_ref().is_some_and(|t| t.id() == tree_id) {
        return Ok(None);
    }
    let tree = repo.find_tree(tree_id).map_err(GitError::git("read the new tree"))?;
    let parents: Vec<_> = parent.iter().collect();
    let signer = Signer::from_config(repo, sig)?;
    let id = create_commit(repo, signer.as_ref(), sig, message, &tree, &parents)?;
    let subject = message.lines().next().unwrap_or_default();
    let reflog = format!("commit: {subject}");
    let old = parent.as_ref().map(git2::Commit::id);
    move_ref(repo, &branch, old, id, &reflog)?;
    if let Err(source) = real.write() {
        // Put the branch back, so a failure leaves the repository as it was.
        let _ = move_ref(
            repo,
            &branch,
            Some(id),
            old.unwrap_or(Oid::ZERO_SHA1),
            "kaas-gitops: undo commit",
        );
        if source.code() == ErrorCode::Locked {
            return Err(GitError::IndexLocked {
                lock: repo.path().join("index.lock"),
            });
        }
        return Err(GitError::git("write the git index")(source));
    }
    Ok(Some(Committed { id, branch }))
}

/// Moves `name` from `old` (`None`: it must not exist) to `new` (zero: delete it), failing if
/// someone else moved it meanwhile.
pub(crate) fn move_ref(
    repo: &Repository,
    name: &str,
    old: Option<Oid>,
    new: Oid,
    reflog: &str,
) -> Result<(), GitError> {
    let moved = |e: git2::Error| {
        if matches!(e.code(), ErrorCode::Modified | ErrorCode::Exists) {
            GitError::RefMoved {
                branch: name.trim_start_matches("refs/heads/").to_string(),
            }
        } else {
            GitError::git(format!("update `{name}`"))(e)
        }
    };
    if new.is_zero() {
        let mut r = repo.find_reference(name).map_err(moved)?;
        if Some(r.target().unwrap_or(Oid::ZERO_SHA1)) != old {
            return Err(GitError::RefMoved {
                branch: name.trim_start_matches("refs/heads/").to_string(),
            });
        }
        return r.delete().map_err(GitError::git(format!("delete `{name}`")));
    }
    match old {
        Some(old) => repo
            .reference_matching(name, new, true, old, reflog)
            .map(drop)
            .map_err(moved),
        None => repo.reference(name, new, false, reflog).map(drop).map_err(moved),
    }
}

/// Writes the tree `base` with `updates` applied: `(path in the git tree, Some(blob))` sets a
/// file, `None` removes it. Built in an index that only lives in memory.
pub(crate) fn tree_with(
    repo: &Repository,
    base: Option<&Tree<'_>>,
    updates: &[(String, Option<Oid>)],
) -> Result<Oid, GitError> {
    let mut index = Index::new().map_err(GitError::git("create an in-memory index"))?;
    if let Some(base) = base {
        index.read_tree(base).map_err(GitError::git("read the base tree"))?;
    }
    for (path, blob) in updates {
        match blob {
            Some(id) => {
                // Keep the mode a file already has (an executable stays executable).
                let mode = index.get_path(Path::new(path), 0).map_or(MODE_FILE, |e| e.mode);
                index
                    .add(&entry(path, *id, mode))
                    .map_err(GitError::git(format!("add `{path}` to the tree")))?;
            }
            None => index
                .remove_path(Path::new(path))
                .map_err(GitError::git(format!("remove `{path}` from the tree")))?,
        }
    }
    index.write_tree_to(repo).map_err(GitError::git("write the tree"))
}

fn entry(path: &str, id: Oid, mode: u32) -> IndexEntry {
    IndexEntry {
        ctime: IndexTime::new(0, 0),
        mtime: IndexTime::new(0, 0),
        dev: 0,
        ino: 0,
        mode,
        uid: 0,
        gid: 0,
        file_size: 0,
        id,
        flags: 0,
        flags_extended: 0,
        path: path.as_bytes().to_vec(),
    }
}
