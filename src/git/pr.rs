//! `pr`: a tenant's branch built from git objects alone. The base commit's files are read from
//! its tree, the new tree is the base tree plus the changes, and the branch ref moves; no
//! checkout, so the user's branch, working tree and index stay as they were.

use std::collections::BTreeMap;
use std::path::PathBuf;

use git2::{Delta, ErrorCode, ObjectType, Oid, Repository, Signature, TreeWalkMode, TreeWalkResult};

use crate::git::commit::{move_ref, tree_with};
use crate::git::sign::{Signer, create_commit};
use crate::git::{Change, GitError, Workspace};
use crate::spec::load::MAX_FILE_BYTES;

/// The commit a pull request starts from.
#[derive(Debug, Clone)]
pub struct Base {
    /// How to name it to people: `main`, `origin/main`.
    pub label: String,
    /// The commit.
    pub commit: Oid,
}

/// What happened to the branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BranchUpdate {
    /// The branch is new, one commit on the base.
    Created,
    /// A new commit on top of the branch, which already contained the base.
    Advanced,
    /// The branch did not contain the base (the base moved on): rebuilt as one commit on the
    /// base. Its remote copy then needs `--force-with-lease`.
    Rebuilt,
    /// The branch already holds exactly these changes.
    Unchanged,
}

/// The branch before and after.
#[derive(Debug, Clone)]
pub struct Updated {
    /// What happened.
    pub how: BranchUpdate,
    /// Its commit before (`None`: it did not exist).
    pub old: Option<Oid>,
    /// Its commit now.
    pub new: Oid,
}

/// Resolves `--base`: a local branch, a remote-tracking branch (`origin/main`) or any commit.
/// Without it: the current branch's upstream, else `main`.
pub fn resolve_base(ws: &Workspace, name: Option<&str>) -> Result<Base, GitError> {
    let repo = &ws.repo;
    if let Some(name) = name {
        return lookup(repo, name).ok_or_else(|| GitError::NoBase { name: name.to_string() });
    }
    if let Ok(head) = ws.head_branch()
        && let Ok(upstream) = repo.branch_upstream_name(&head)
        && let Ok(upstream) = upstream.as_str()
        && let Ok(commit) = repo.refname_to_id(upstream)
    {
        return Ok(Base {
            label: shorthand(upstream),
            commit,
        });
    }
    lookup(repo, "main").ok_or_else(|| GitError::NoBase { name: "main".into() })
}

fn lookup(repo: &Repository, name: &str) -> Option<Base> {
    for candidate in [format!("refs/heads/{name}"), format!("refs/remotes/{name}")] {
        if let Ok(commit) = repo.refname_to_id(&candidate) {
            return Some(Base {
                label: shorthand(&candidate),
                commit: repo.find_commit(commit).ok()?.id(),
            });
        }
    }
    let commit = repo.revparse_single(name).ok()?.peel_to_commit().ok()?;
    Some(Base {
        label: name.to_string(),
        commit: commit.id(),
    })
}

fn shorthand(refname: &str) -> String {
    refname
        .strip_prefix("refs/heads/")
        .or_else(|| refname.strip_prefix("refs/remotes/"))
        .unwrap_or(refname)
        .to_string()
}

/// The files of `commit` under the kaas repository for which `want` holds, by kaas path. Like
/// reading from disk, a file is cut one byte past the size limit (so the loader reports it) and
/// symlinks are not followed.
pub fn read_files(
    ws: &Workspace,
    commit: Oid,
    want: impl Fn(&str) -> bool,
) -> Result<BTreeMap<String, Vec<u8>>, GitError> {
    let repo = &ws.repo;
    let action = || format!("read the files of commit {commit}");
    let tree = repo
        .find_commit(commit)
        .and_then(|c| c.tree())
        .map_err(GitError::git(action()))?;
    let root = if ws.prefix.is_empty() {
        tree
    } else {
        match tree.get_path(std::path::Path::new(ws.prefix.trim_end_matches('/'))) {
            Ok(e) => e
                .to_object(repo)
                .and_then(|o| o.peel_to_tree())
                .map_err(GitError::git(action()))?,
            Err(e) if e.code() == ErrorCode::NotFound => return Ok(BTreeMap::new()),
            Err(e) => return Err(GitError::git(action())(e)),
        }
    };
    let mut wanted = Vec::new();
    root.walk(TreeWalkMode::PreOrder, |dir, entry| {
        let path = format!("{dir}{}", String::from_utf8_lossy(entry.name_bytes()));
        if entry.kind() == Some(ObjectType::Blob) && entry.filemode() != 0o120_000 && want(&path) {
            wanted.push((path, entry.id()));
        }
        TreeWalkResult::Ok
    })
    .map_err(GitError::git(action()))?;
    let mut out = BTreeMap::new();
    for (path, id) in wanted {
        let blob = repo.find_blob(id).map_err(GitError::git(action()))?;
        let content = blob.content();
        out.insert(path, content[..content.len().min(MAX_FILE_BYTES + 1)].to_vec());
    }
    Ok(out)
}

/// Checks that `branch` can be created or moved: a valid name, and not checked out in any
/// working tree (moving it would change that tree's files under the user's feet).
pub fn check_branch(ws: &Workspace, branch: &str) -> Result<String, GitError> {
    let refname = format!("refs/heads/{branch}");
    if !git2::Reference::is_valid_name(&refname) {
        return Err(GitError::BadBranchName {
            branch: branch.to_string(),
        });
    }
    if let Some(worktree) = checked_out(&ws.repo, &refname) {
        return Err(GitError::BranchCheckedOut {
            branch: branch.to_string(),
            worktree,
        });
    }
    Ok(refname)
}

/// The working tree that has `refname` checked out, among the main one and every linked one.
fn checked_out(repo: &Repository, refname: &str) -> Option<PathBuf> {
    let mut repos = Vec::new();
    if let Ok(main) = Repository::open(repo.commondir()) {
        repos.push(main);
    }
    if let Ok(names) = repo.worktrees() {
        for name in names.iter().filter_map(|n| n.ok().flatten()) {
            if let Ok(wt) = repo.find_worktree(name)
                && let Ok(r) = Repository::open_from_worktree(&wt)
            {
                repos.push(r);
            }
        }
    }
    repos.into_iter().find_map(|r| {
        let head = r.find_reference("HEAD").ok()?;
        (head.symbolic_target().ok().flatten() == Some(refname)).then(|| r.workdir().unwrap_or(r.path()).to_path_buf())
    })
}

/// Points `refname` at a commit whose tree is `base`'s tree plus `changes`.
///
/// When the branch already contains `base`, the commit goes on top of it and keeps what others
/// added there, except on the paths `decided` says kaas-gitops decides (those get exactly the
/// new content); otherwise the branch is rebuilt on `base`.
pub fn update_branch(
    ws: &Workspace,
    refname: &str,
    base: Oid,
    changes: &[Change],
    decided: impl Fn(&str) -> bool,
    sig: &Signature<'_>,
    message: &str,
) -> Result<Updated, GitError> {
    let repo = &ws.repo;
    let base_commit = repo.find_commit(base).map_err(GitError::git("read the base commit"))?;
    let base_tree = base_commit.tree().map_err(GitError::git("read the base tree"))?;
    let mut updates = Vec::with_capacity(changes.len());
    for c in changes {
        let blob = match &c.new {
            Some(bytes) => Some(
                repo.blob(bytes)
                    .map_err(GitError::git(format!("store `{}` in git", c.path)))?,
            ),
            None => None,
        };
        updates.push((ws.git_path(&c.path), blob));
    }
    let desired = tree_with(repo, Some(&base_tree), &updates)?;
    let tip = match repo.refname_to_id(refname) {
        Ok(id) => Some(id),
        Err(e) if e.code() == ErrorCode::NotFound => None,
        Err(e) => return Err(GitError::git(format!("resolve `{refname}`"))(e)),
    };
    let contains_base = |tip: Oid| tip == base || repo.graph_descendant_of(tip, base).unwrap_or(false);
    let (how, parent, tree) = match tip {
        None => (BranchUpdate::Created, base_commit, desired),
        Some(tip) if contains_base(tip) => {
            let tip_commit = repo.find_commit(tip).map_err(GitError::git("read the branch"))?;
            let tip_tree = tip_commit.tree().map_err(GitError::git("read the branch"))?;
            let kept = others_work(ws, &base_tree, &tip_tree, &decided)?;
            let desired = repo.find_tree(desired).map_err(GitError::git("read the new tree"))?;
            let tree = tree_with(repo, Some(&desired), &kept)?;
            if tree == tip_tree.id() {
                return Ok(Updated {
                    how: BranchUpdate::Unchanged,
                    old: Some(tip),
                    new: tip,
                });
            }
            (BranchUpdate::Advanced, tip_commit, tree)
        }
        Some(_) => (BranchUpdate::Rebuilt, base_commit, desired),
    };
    let tree = repo.find_tree(tree).map_err(GitError::git("read the new tree"))?;
    let signer = Signer::from_config(repo, sig)?;
    let id = create_commit(repo, signer.as_ref(), sig, message, &tree, &[&parent])?;
    let subject = message.lines().next().unwrap_or_default();
    move_ref(repo, refname, tip, id, &format!("kaas-gitops pr: {subject}"))?;
    Ok(Updated { how, old: tip, new: id })
}

/// What the branch changed against the base outside the paths kaas-gitops decides: carried
/// over, so a reviewer's commit on the branch survives a rerun.
fn others_work(
    ws: &Workspace,
    base: &git2::Tree<'_>,
    tip: &git2::Tree<'_>,
    decided: &impl Fn(&str) -> bool,
) -> Result<Vec<(String, Option<Oid>)>, GitError> {
    let diff = ws
        .repo
        .diff_tree_to_tree(Some(base), Some(tip), None)
        .map_err(GitError::git("compare the branch with its base"))?;
    let mut kept = Vec::new();
    for delta in diff.deltas() {
        let Some(path) = delta.new_file().path().or(delta.old_file().path()) else {
            continue;
        };
        let path = path.to_string_lossy().replace('\\', "/");
        let ours = path.strip_prefix(&ws.prefix).is_some_and(decided);
        if ours {
            continue;
        }
        let blob = (delta.status() != Delta::Deleted).then(|| delta.new_file().id());
        kept.push((path, blob));
    }
    Ok(kept)
}

/// Puts the branch back where it was before `updated` (removes it if `updated` created it).
pub fn undo(ws: &Workspace, refname: &str, updated: &Updated) -> Result<(), GitError> {
    if updated.how == BranchUpdate::Unchanged {
        return Ok(());
    }
    let old = updated.old.unwrap_or(Oid::ZERO_SHA1);
    move_ref(
        &ws.repo,
        refname,
        Some(updated.new),
        old,
        "kaas-gitops pr: undo after a failed push",
    )
}
