//! Pushes to SSH and HTTPS remotes through the `git` binary (`git push`), so the connection is
//! made exactly as for the user's own pushes. Over SSH, OpenSSH: `~/.ssh/config` (`Host` aliases,
//! `IdentityFile`, `ProxyJump`, `IdentitiesOnly`, …), keys on disk and in ssh-agent,
//! `known_hosts`, `core.sshCommand` and `GIT_SSH_COMMAND` (libgit2 only offers keys from
//! ssh-agent and reads none of that configuration). Over HTTPS, git's TLS and credential helpers
//! (`credential.helper`, `http.sslCAInfo`, `http.proxy`); it is never asked to prompt
//! (`GIT_TERMINAL_PROMPT=0`): a missing credential is an error, not a hang.
//!
//! The outcome is read from `git push --porcelain` (one `<flag>\t<from>:<to>\t<summary>` line per
//! ref; git's `Documentation/git-push.txt`, OUTPUT) and OpenSSH's messages, and mapped onto the
//! same [`GitError`]s as a libgit2 push.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use git2::Oid;

use crate::git::sign::ProgramOutput;
use crate::git::{GitError, Workspace};

/// Whether `url` is reached over SSH: `ssh://`, `git+ssh://`, `ssh+git://`, or git's scp-like
/// `[user@]host:path` (a colon before any slash; git's `url_is_local_not_ssh` in `connect.c`).
pub fn is_ssh(url: &str) -> bool {
    if let Some((scheme, _)) = url.split_once("://") {
        return matches!(scheme, "ssh" | "git+ssh" | "ssh+git");
    }
    match (url.find(':'), url.find('/')) {
        (Some(colon), Some(slash)) => colon < slash,
        (Some(_), None) => true,
        _ => false,
    }
}

/// Whether `url` is an `https://` URL.
pub fn is_https(url: &str) -> bool {
    url.get(..8).is_some_and(|s| s.eq_ignore_ascii_case("https://"))
}

/// `git` on PATH, when there is one.
pub fn git_binary() -> Option<PathBuf> {
    let dirs = std::env::var_os("PATH")?;
    std::env::split_paths(&dirs)
        .map(|d| d.join("git"))
        .find(|p| p.is_file())
}

/// What the push is asked to do.
pub struct Request<'a> {
    /// The remote's name.
    pub remote: &'a str,
    /// Its push URL (for messages).
    pub url: &'a str,
    /// `refs/heads/...`, pushed to the same name.
    pub refname: &'a str,
    /// `--force-with-lease`, with the remote-tracking ref's value (zero: it must not exist).
    pub lease: Option<Oid>,
}

/// Runs `git push --porcelain` and maps its outcome: whether the remote branch was replaced
/// (a forced update, under the lease).
pub fn push(ws: &Workspace, git: &Path, req: &Request<'_>) -> Result<bool, GitError> {
    let branch = req.refname.trim_start_matches("refs/heads/").to_string();
    let mut cmd = Command::new(git);
    cmd.arg("-C")
        .arg(&ws.workdir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .args(["push", "--porcelain"]);
    if let Some(lease) = req.lease {
        // An empty expected value means "must not exist" (git-push.txt, --force-with-lease).
        let expect = if lease.is_zero() {
            String::new()
        } else {
            lease.to_string()
        };
        cmd.arg(format!("--force-with-lease={}:{expect}", req.refname));
    }
    let output = cmd
        .arg("--")
        .arg(req.remote)
        .arg(format!("{0}:{0}", req.refname))
        .stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| GitError::PushCommand {
            remote: req.remote.to_string(),
            source: ProgramOutput(format!("failed to run `{}`: {e}", git.display())),
        })?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if let Some((flag, summary)) = ref_line(&stdout, req.refname) {
        return match flag {
            '!' => Err(rejected(ws, git, req, &branch, summary)),
            _ => Ok(flag == '+'),
        };
    }
    if output.status.success() {
        return Ok(false);
    }
    let cause = || git2::Error::from_str(stderr.trim());
    if stderr.contains("Host key verification failed") || stderr.contains("REMOTE HOST IDENTIFICATION HAS CHANGED") {
        return Err(GitError::HostKey {
            url: req.url.to_string(),
            source: cause(),
        });
    }
    // OpenSSH's refusal, and git's HTTP ones (`http.c`, `HTTP_NOAUTH`; `credential.c` when it
    // may not prompt).
    if stderr.contains("Permission denied (")
        || stderr.contains("Authentication failed for")
        || stderr.contains("could not read Username")
        || stderr.contains("terminal prompts disabled")
    {
        return Err(GitError::Auth {
            url: req.url.to_string(),
            source: cause(),
        });
    }
    Err(GitError::PushCommand {
        remote: req.remote.to_string(),
        source: ProgramOutput(stderr.trim().to_string()),
    })
}

/// The porcelain line for `refname`: its flag and summary.
fn ref_line<'s>(stdout: &'s str, refname: &str) -> Option<(char, &'s str)> {
    stdout.lines().find_map(|line| {
        let mut parts = line.splitn(3, '\t');
        let flag = parts.next()?.chars().next()?;
        let (_, to) = parts.next()?.split_once(':')?;
        (to == refname).then(|| (flag, parts.next().unwrap_or_default()))
    })
}

fn rejected(ws: &Workspace, git: &Path, req: &Request<'_>, branch: &str, summary: &str) -> GitError {
    let remote = req.remote.to_string();
    if summary.contains("stale info") {
        let expected = match req.lease {
            Some(l) if !l.is_zero() => crate::git::short(l),
            _ => "nothing".into(),
        };
        return GitError::StaleLease {
            remote,
            branch: branch.to_string(),
            expected,
            actual: remote_value(ws, git, req).unwrap_or_else(|| "an unknown commit".into()),
        };
    }
    if summary.contains("non-fast-forward") || summary.contains("fetch first") {
        return GitError::NonFastForward {
            remote,
            branch: branch.to_string(),
        };
    }
    let reason = summary
        .strip_prefix("[remote rejected]")
        .unwrap_or(summary)
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .to_string();
    GitError::Rejected {
        remote,
        refname: req.refname.to_string(),
        reason,
    }
}

/// The remote branch's commit, shortened, for the stale-lease message (`git ls-remote`).
fn remote_value(ws: &Workspace, git: &Path, req: &Request<'_>) -> Option<String> {
    let out = Command::new(git)
        .arg("-C")
        .arg(&ws.workdir)
        .args(["ls-remote", "--", req.remote, req.refname])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let hex = text.split_whitespace().next()?;
    Some(hex.get(..7)?.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_urls_are_told_from_paths_and_https() {
        for url in [
            "ssh://git@github.com/org/fleet.git",
            "git@github.com:org/fleet.git",
            "fleet-origin:org/fleet",
            "git+ssh://host/x",
        ] {
            assert!(is_ssh(url), "{url}");
        }
        for url in [
            "https://github.com/org/fleet",
            "http://127.0.0.1:3000/org/fleet",
            "/srv/git/fleet.git",
            "file:///srv/fleet",
            "./a:b",
        ] {
            assert!(!is_ssh(url), "{url}");
        }
    }

    #[test]
    fn https_urls_are_told_from_http_and_ssh() {
        assert!(is_https("https://github.com/org/fleet"));
        assert!(is_https("HTTPS://github.com/org/fleet"));
        for url in [
            "http://127.0.0.1/x",
            "git@github.com:org/x",
            "/srv/https://x",
            "ssh://h/x",
        ] {
            assert!(!is_https(url), "{url}");
        }
    }

    #[test]
    fn porcelain_lines_are_read_per_ref() {
        let out = "To ssh://h/x\n!\trefs/heads/kaas/acme:refs/heads/kaas/acme\t[rejected] (stale info)\nDone\n";
        assert_eq!(
            ref_line(out, "refs/heads/kaas/acme"),
            Some(('!', "[rejected] (stale info)"))
        );
        let out = "To ssh://h/x\n+\trefs/heads/a:refs/heads/a\t1234567...89abcde (forced update)\nDone\n";
        assert_eq!(ref_line(out, "refs/heads/a").map(|l| l.0), Some('+'));
        assert_eq!(ref_line(out, "refs/heads/b"), None);
    }
}
