//! `pr --push`: push one branch to a named remote, over a path, SSH, HTTP or HTTPS (git's
//! credential helper), as the user's git would. SSH and HTTPS remotes are pushed by the `git`
//! binary (`push_cli.rs`: OpenSSH honours ~/.ssh/config; git's own TLS honours `http.sslCAInfo`
//! and the system's CAs); libgit2 does paths and plain HTTP, and SSH without `git` (keys from
//! ssh-agent only). libgit2 is built without TLS (Cargo.toml: its OpenSSL start-up cost every
//! render a CA-bundle parse), so HTTPS without `git` is refused with a message saying so.
//!
//! A non-fast-forward update is refused before anything is sent, unless `--force-with-lease`
//! is given and the remote branch is still where this repository last saw it (its
//! remote-tracking ref). The check runs in libgit2's push negotiation, on the values the remote
//! advertised on the same connection that then sends the update; the remote itself refuses the
//! update if the branch moves in between, so the lease cannot be lost to a race.

use std::cell::{Cell, RefCell};

use git2::{Cred, CredentialType, Direction, ErrorCode, Oid, ProxyOptions, PushOptions, RemoteCallbacks};

use crate::git::{GitError, Workspace, push_cli, short};

/// A push that went through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// The remote's name.
    pub remote: String,
    /// The remote branch was replaced (non-fast-forward, under the lease).
    pub forced: bool,
}

/// Fails early when `name` is not a remote of the repository, before anything changes.
pub fn check_remote(ws: &Workspace, name: &str) -> Result<(), GitError> {
    ws.repo
        .find_remote(name)
        .map(drop)
        .map_err(|_| GitError::NoRemote { name: name.to_string() })
}

/// Pushes `refname` (`refs/heads/...`) to the same name on `remote_name`.
pub fn push(ws: &Workspace, remote_name: &str, refname: &str, force_with_lease: bool) -> Result<Pushed, GitError> {
    let repo = &ws.repo;
    let mut remote = repo.find_remote(remote_name).map_err(|_| GitError::NoRemote {
        name: remote_name.to_string(),
    })?;
    let url = match remote.pushurl() {
        Ok(Some(u)) => u.to_string(),
        _ => remote.url().unwrap_or_default().to_string(),
    };
    let branch = refname.trim_start_matches("refs/heads/").to_string();
    // The lease: where the remote-tracking ref says the remote branch was last seen.
    let lease = remote
        .refspecs()
        .filter(|s| s.direction() == Direction::Fetch && s.src_matches(refname))
        .find_map(|s| s.transform(refname).ok())
        .and_then(|tracking| tracking.as_str().ok().and_then(|t| repo.refname_to_id(t).ok()))
        .unwrap_or(Oid::ZERO_SHA1);
    // SSH goes through `git push`, so OpenSSH applies the user's ~/.ssh/config and keys
    // (push_cli.rs); without a `git` binary, libgit2 with ssh-agent keys is all there is.
    // HTTPS goes through `git push` always: this libgit2 has no TLS.
    let https = push_cli::is_https(&url);
    let git = push_cli::git_binary();
    if https && git.is_none() {
        return Err(GitError::NoGitForHttps { url });
    }
    if (https || push_cli::is_ssh(&url))
        && let Some(git) = git
    {
        let request = push_cli::Request {
            remote: remote_name,
            url: &url,
            refname,
            lease: force_with_lease.then_some(lease),
        };
        let forced = push_cli::push(ws, &git, &request)?;
        return Ok(Pushed {
            remote: remote_name.to_string(),
            forced,
        });
    }

    let refused: RefCell<Option<GitError>> = RefCell::new(None);
    let forced = Cell::new(false);
    let out_of_credentials = Cell::new(false);
    let config = repo.config().map_err(GitError::git("read git config"))?;
    let mut tried = CredentialType::empty();

    let mut callbacks = RemoteCallbacks::new();
    callbacks.credentials(|url, username, allowed| {
        // libgit2 asks again after every rejected credential; offer each kind once, then stop.
        let user = username.unwrap_or("git");
        let next = [
            CredentialType::USERNAME,
            CredentialType::SSH_KEY,
            CredentialType::USER_PASS_PLAINTEXT,
            CredentialType::DEFAULT,
        ]
        .into_iter()
        .find(|k| allowed.contains(*k) && !tried.contains(*k));
        let cred = match next {
            Some(k) => {
                tried |= k;
                if k == CredentialType::USERNAME {
                    Cred::username(user)
                } else if k == CredentialType::SSH_KEY {
                    Cred::ssh_key_from_agent(user)
                } else if k == CredentialType::USER_PASS_PLAINTEXT {
                    Cred::credential_helper(&config, url, username)
                } else {
                    Cred::default()
                }
            }
            None => Err(git2::Error::from_str("no credential left to try")),
        };
        // Whatever libgit2 then reports, the cause is that no credential worked.
        if cred.is_err() {
            out_of_credentials.set(true);
        }
        cred
    });
    callbacks.push_negotiation(|updates| {
        for u in updates {
            if u.dst_refname().ok() != Some(refname) {
                continue;
            }
            let (theirs, ours) = (u.src(), u.dst());
            let fast_forward =
                theirs.is_zero() || theirs == ours || repo.graph_descendant_of(ours, theirs).unwrap_or(false);
            if fast_forward {
                continue;
            }
            let error = if !force_with_lease {
                GitError::NonFastForward {
                    remote: remote_name.to_string(),
                    branch: branch.clone(),
                }
            } else if theirs != lease {
                GitError::StaleLease {
                    remote: remote_name.to_string(),
                    branch: branch.clone(),
                    expected: if lease.is_zero() {
                        "nothing".into()
                    } else {
                        short(lease)
                    },
                    actual: short(theirs),
                }
            } else {
                forced.set(true);
                continue;
            };
            *refused.borrow_mut() = Some(error);
            return Err(git2::Error::from_str("refused by kaas-gitops"));
        }
        Ok(())
    });
    callbacks.push_update_reference(|name, status| {
        if let Some(reason) = status {
            *refused.borrow_mut() = Some(GitError::Rejected {
                remote: remote_name.to_string(),
                refname: name.to_string(),
                reason: reason.to_string(),
            });
        }
        Ok(())
    });
    let mut proxy = ProxyOptions::new();
    proxy.auto();
    let mut options = PushOptions::new();
    options.remote_callbacks(callbacks).proxy_options(proxy);
    // `+` lets libgit2 send a non-fast-forward; the negotiation above decides whether it may.
    let spec = if force_with_lease {
        format!("+{refname}:{refname}")
    } else {
        format!("{refname}:{refname}")
    };
    let result = remote.push(&[spec.as_str()], Some(&mut options));
    drop(options);
    if let Some(e) = refused.into_inner() {
        return Err(e);
    }
    match result {
        Ok(()) => Ok(Pushed {
            remote: remote_name.to_string(),
            forced: forced.get(),
        }),
        // libgit2 checks the server's key against ~/.ssh/known_hosts, as ssh does.
        Err(source) if source.code() == ErrorCode::Certificate && source.class() == git2::ErrorClass::Ssh => {
            Err(GitError::HostKey { url, source })
        }
        Err(source) if source.code() == ErrorCode::Auth || out_of_credentials.get() => {
            Err(GitError::Auth { url, source })
        }
        Err(e) if e.code() == ErrorCode::NotFastForward => Err(GitError::NonFastForward {
            remote: remote_name.to_string(),
            branch,
        }),
        Err(e) => Err(GitError::git(format!("push `{branch}` to `{remote_name}`"))(e)),
    }
}
