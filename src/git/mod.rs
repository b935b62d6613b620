//! Git, through libgit2: commit exactly the paths a render changed (`commit`), build a tenant's
//! pull-request branch from git objects alone (`pr`), and push it (`push`). Nothing here checks
//! out a branch or touches a file the tool does not own; every failure is a typed [`GitError`]
//! whose hint says what to do, and leaves the repository as it was.

pub(crate) mod commit;
pub(crate) mod head;
pub(crate) mod pr;
pub(crate) mod push;
pub(crate) mod push_cli;
pub(crate) mod sign;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use git2::{Repository, Signature, Time};

/// A git failure. Each is exit 2 (the environment failed); [`GitError::hint`] says what to do.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// `--repo` is not inside a git repository.
    #[error("`{}` is not in a git repository", path.display())]
    NotARepository {
        /// The folder kaas-gitops was asked to work on.
        path: PathBuf,
        /// What libgit2 said.
        #[source]
        source: git2::Error,
    },
    /// The repository has no working tree to read rendered files from.
    #[error("`{}` is a bare repository", path.display())]
    Bare {
        /// The repository.
        path: PathBuf,
    },
    /// HEAD points at a commit, not a branch: a commit would be on no branch.
    #[error("HEAD is detached; there is no branch to commit on")]
    DetachedHead,
    /// A merge, rebase, cherry-pick or similar is in progress; a commit now would mix into it.
    #[error("a {operation} is in progress")]
    Busy {
        /// What git is in the middle of.
        operation: String,
    },
    /// Another git process holds the index lock.
    #[error("the git index is locked: `{}` exists", lock.display())]
    IndexLocked {
        /// The lock file.
        lock: PathBuf,
    },
    /// Neither `git.author` in `kaas.yaml` nor git's `user.name`/`user.email` is set.
    #[error(
        "no commit author: `git.author` is not set in `kaas.yaml` and git config has no `user.name` and `user.email`"
    )]
    NoIdentity,
    /// `KAAS_COMMIT_TIME` is not a number of seconds.
    #[error("`KAAS_COMMIT_TIME` is `{value}`, not unix seconds")]
    BadCommitTime {
        /// What it was.
        value: String,
    },
    /// A branch moved while kaas-gitops was updating it.
    #[error("branch `{branch}` moved while kaas-gitops was updating it")]
    RefMoved {
        /// The branch.
        branch: String,
    },
    /// `--base` (or the default base) names no branch or commit.
    #[error("base `{name}` is neither a branch nor a commit")]
    NoBase {
        /// What was asked for.
        name: String,
    },
    /// `<branchPrefix><tenant>` is not a valid branch name.
    #[error("`{branch}` is not a valid branch name")]
    BadBranchName {
        /// The name.
        branch: String,
    },
    /// The pull-request branch is checked out, so moving it would change a working tree.
    #[error("branch `{branch}` is checked out in `{}`", worktree.display())]
    BranchCheckedOut {
        /// The branch.
        branch: String,
        /// Where.
        worktree: PathBuf,
    },
    /// `--push` names no remote.
    #[error("no remote named `{name}`")]
    NoRemote {
        /// The name.
        name: String,
    },
    /// The remote branch has commits the new branch does not contain.
    #[error("`{branch}` on `{remote}` has commits that are not on the local `{branch}` (non-fast-forward)")]
    NonFastForward {
        /// The remote.
        remote: String,
        /// The branch.
        branch: String,
    },
    /// `--force-with-lease`: the remote branch is not where this repository last saw it.
    #[error("`{branch}` on `{remote}` is at {actual}, but the last known value is {expected}")]
    StaleLease {
        /// The remote.
        remote: String,
        /// The branch.
        branch: String,
        /// The remote-tracking ref's value (or `nothing`).
        expected: String,
        /// The remote's value.
        actual: String,
    },
    /// The remote refused the update (a hook, a protected branch).
    #[error("`{remote}` rejected the update of `{refname}`: {reason}")]
    Rejected {
        /// The remote.
        remote: String,
        /// The ref.
        refname: String,
        /// What the remote said.
        reason: String,
    },
    /// The SSH server's host key is unknown, or differs from the one known.
    #[error("the SSH host key of `{url}` is not in ~/.ssh/known_hosts, or does not match it")]
    HostKey {
        /// The remote's URL.
        url: String,
        /// What libgit2 said.
        #[source]
        source: git2::Error,
    },
    /// An HTTPS remote, and no `git` program to push to it.
    #[error("cannot push to `{url}`: HTTPS remotes are pushed by the `git` program, and there is no `git` on PATH")]
    NoGitForHttps {
        /// The remote's URL.
        url: String,
    },
    /// No credentials the remote accepts.
    #[error("could not authenticate to `{url}`")]
    Auth {
        /// The remote's URL.
        url: String,
        /// What libgit2 said.
        #[source]
        source: git2::Error,
    },
    /// Commit signing is configured (`commit.gpgsign`) in a way that cannot sign.
    #[error("cannot sign commits: {problem}")]
    SigningConfig {
        /// What is wrong.
        problem: String,
    },
    /// The signing program failed; nothing was committed.
    #[error("signing the commit with `{program}` ({format}, key `{key}`) failed")]
    Sign {
        /// `openpgp`, `x509` or `ssh`.
        format: &'static str,
        /// The program.
        program: String,
        /// The key it was asked to use.
        key: String,
        /// What the program said.
        #[source]
        source: sign::ProgramOutput,
    },
    /// `git push` failed for a reason not recognised above.
    #[error("`git push` to `{remote}` failed")]
    PushCommand {
        /// The remote.
        remote: String,
        /// What git printed.
        #[source]
        source: sign::ProgramOutput,
    },
    /// Any other libgit2 failure.
    #[error("failed to {action}")]
    Git {
        /// What kaas-gitops was doing.
        action: String,
        /// What libgit2 said.
        #[source]
        source: git2::Error,
    },
}

impl GitError {
    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            GitError::NotARepository { .. } => "run `git init` there, or pass `--repo` inside a clone".into(),
            GitError::Bare { .. } => "run kaas-gitops in a clone with a working tree".into(),
            GitError::DetachedHead => "check out a branch first, e.g. `git switch main`".into(),
            GitError::Busy { operation } => format!("finish or abort the {operation} first, then render again"),
            GitError::IndexLocked { lock } => format!(
                "wait for the other git process to finish; if none is running, remove `{}`",
                lock.display()
            ),
            GitError::NoIdentity => {
                "set `spec.git.author` in kaas.yaml, or `git config user.name` and `git config user.email`".into()
            }
            GitError::BadCommitTime { .. } => "unset `KAAS_COMMIT_TIME`, or set it to seconds since 1970".into(),
            GitError::RefMoved { .. } => "another git command ran at the same time; run kaas-gitops again".into(),
            GitError::NoBase { .. } => "pass `--base BRANCH` with an existing branch (`git branch` lists them)".into(),
            GitError::BadBranchName { .. } => "change `spec.git.branchPrefix` in kaas.yaml".into(),
            GitError::BranchCheckedOut { .. } => {
                "switch that working tree to another branch; kaas-gitops never moves a checked-out branch".into()
            }
            GitError::NoRemote { .. } => "list remotes with `git remote -v`, or add one with `git remote add`".into(),
            GitError::NonFastForward { remote, branch } => format!(
                "someone else pushed to `{branch}`: `git fetch {remote}` and review their commits, then rerun with `--force-with-lease` to replace them"
            ),
            GitError::StaleLease { remote, .. } => {
                format!("`git fetch {remote}` to see what changed, then rerun with `--force-with-lease`")
            }
            GitError::Rejected { .. } => "check the remote's branch protection and hooks".into(),
            GitError::HostKey { .. } => {
                "connect once with `ssh` to check the host's key fingerprint and accept it, as `git push` needs too"
                    .into()
            }
            GitError::NoGitForHttps { .. } => {
                "install git (kaas-gitops hands HTTPS to it: its TLS and credential helpers), or push over SSH".into()
            }
            GitError::Auth { .. } => {
                "for SSH, add a key to ssh-agent (`ssh-add`) or name it with `IdentityFile` in ~/.ssh/config; for HTTPS, configure `git config credential.helper`"
                    .into()
            }
            GitError::SigningConfig { .. } | GitError::Sign { .. } => {
                "check `git config --show-origin --get-regexp '^(commit.gpgsign|gpg\\.|user.signingkey)'`; `git commit -S` fails the same way until it is fixed, or turn signing off with `git config commit.gpgsign false`".into()
            }
            GitError::PushCommand { remote, .. } => format!("try `git push {remote}` yourself to see what it needs"),
            GitError::Git { .. } => return None,
        })
    }

    /// Wraps a libgit2 error, naming what was being done.
    pub(crate) fn git(action: impl Into<String>) -> impl FnOnce(git2::Error) -> GitError {
        let action = action.into();
        move |source| GitError::Git { action, source }
    }
}

/// The repository kaas-gitops works on, and where its files sit inside it.
pub struct Workspace {
    /// The git repository (a linked worktree is fine).
    pub repo: Repository,
    /// The kaas repository's folder relative to the git working tree: empty, or ending in `/`.
    pub prefix: String,
    /// The working tree's root.
    pub workdir: PathBuf,
}

impl Workspace {
    /// Finds the git repository that holds `dir`.
    pub fn open(dir: &Path) -> Result<Workspace, GitError> {
        let repo = Repository::discover(dir).map_err(|source| GitError::NotARepository {
            path: dir.to_path_buf(),
            source,
        })?;
        let Some(workdir) = repo.workdir().map(Path::to_path_buf) else {
            return Err(GitError::Bare {
                path: repo.path().to_path_buf(),
            });
        };
        // Both sides canonical, so a symlinked temp dir or `--repo .` still compares equal.
        let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let prefix = canon(dir)
            .strip_prefix(canon(&workdir))
            .map(|rel| {
                let rel = rel.to_string_lossy().replace('\\', "/");
                if rel.is_empty() { rel } else { format!("{rel}/") }
            })
            .unwrap_or_default();
        Ok(Workspace { repo, prefix, workdir })
    }

    /// A kaas path (`overlays/...`) as a path in the git tree.
    pub fn git_path(&self, rel: &str) -> String {
        format!("{}{rel}", self.prefix)
    }

    /// The branch HEAD points at (`refs/heads/...`), which may have no commit yet.
    pub fn head_branch(&self) -> Result<String, GitError> {
        let head = self.repo.find_reference("HEAD").map_err(GitError::git("read `HEAD`"))?;
        match head.symbolic_target().ok().flatten() {
            Some(name) if name.starts_with("refs/heads/") => Ok(name.to_string()),
            _ => Err(GitError::DetachedHead),
        }
    }

    /// The commit HEAD points at, as 40 hex digits; `None` before the first commit.
    pub fn head_commit(&self) -> Option<String> {
        let commit = self.repo.head().ok()?.peel_to_commit().ok()?;
        Some(commit.id().to_string())
    }

    /// Those of `commits` (40 hex digits each) that descend from `ancestor` (a commit or an
    /// abbreviation git resolves); commits this repository does not have are left out.
    pub fn descendants_of(&self, ancestor: &str, commits: &BTreeSet<String>) -> BTreeSet<String> {
        let Some(base) = self
            .repo
            .revparse_single(ancestor)
            .ok()
            .and_then(|o| o.peel_to_commit().ok())
            .map(|c| c.id())
        else {
            return BTreeSet::new();
        };
        commits
            .iter()
            .filter(|c| {
                git2::Oid::from_str(c)
                    .is_ok_and(|id| id != base && self.repo.graph_descendant_of(id, base).unwrap_or(false))
            })
            .cloned()
            .collect()
    }

    /// The newest commit on HEAD's history that changed the kaas path `rel` (compared with its
    /// first parent, so a merge that brought the change counts: that is what Flux applied), as
    /// (unix seconds of its committer time, short id); `None` when no commit has the file.
    pub fn last_change(&self, rel: &str) -> Option<(i64, String)> {
        let path = std::path::PathBuf::from(self.git_path(rel));
        let blob = |c: &git2::Commit| c.tree().ok()?.get_path(&path).ok().map(|e| e.id());
        let mut walk = self.repo.revwalk().ok()?;
        walk.push_head().ok()?;
        walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::TIME).ok()?;
        for oid in walk {
            let commit = self.repo.find_commit(oid.ok()?).ok()?;
            let here = blob(&commit)?;
            if commit.parents().next().and_then(|p| blob(&p)) != Some(here) {
                return Some((commit.time().seconds(), short(commit.id())));
            }
        }
        None
    }

    /// Fails when another process holds the index lock, before anything is changed.
    pub fn check_index_unlocked(&self) -> Result<(), GitError> {
        let lock = self.repo.path().join("index.lock");
        if lock.exists() {
            return Err(GitError::IndexLocked { lock });
        }
        Ok(())
    }
}

/// The signature for a commit: `author` (from `kaas.yaml`), else git config; at `time` (unix
/// seconds, UTC) when given, else now.
pub fn signature(
    repo: &Repository,
    author: Option<&(String, String)>,
    time: Option<i64>,
) -> Result<Signature<'static>, GitError> {
    let (name, email) = match author {
        Some((n, e)) => (n.clone(), e.clone()),
        None => {
            let config = repo.config().map_err(GitError::git("read git config"))?;
            match (config.get_string("user.name"), config.get_string("user.email")) {
                (Ok(n), Ok(e)) if !n.trim().is_empty() && !e.trim().is_empty() => (n, e),
                _ => return Err(GitError::NoIdentity),
            }
        }
    };
    let sig = match time {
        Some(t) => Signature::new(&name, &email, &Time::new(t, 0)),
        None => Signature::now(&name, &email),
    };
    sig.map_err(GitError::git(format!("use `{name} <{email}>` as the commit author")))
}

/// A change to one file, by its path in the kaas repository. `None` is absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Path relative to the kaas repository.
    pub path: String,
    /// Content before.
    pub old: Option<Vec<u8>>,
    /// Content after.
    pub new: Option<Vec<u8>>,
}

/// The first 7 hex digits of an object id, as git prints them.
pub fn short(oid: git2::Oid) -> String {
    oid.to_string()[..7].to_string()
}
