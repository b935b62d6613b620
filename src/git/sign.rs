//! Signed commits, as `git commit` makes them when git config says so (`commit.gpgsign`).
//!
//! The signing programs and their arguments are git's (`gpg-interface.c` in git/git:
//! `sign_buffer_gpg` and `sign_buffer_ssh`):
//!
//! - OpenPGP (`gpg.format` unset or `openpgp`): `<gpg.program> --status-fd=2 -bsau <key>`, the
//!   commit on stdin, the armored signature on stdout; it signed only when its status output has
//!   a line starting `[GNUPG:] SIG_CREATED `. X.509 (`x509`) is the same with `gpgsm`.
//! - SSH (`ssh`): `<gpg.ssh.program> -Y sign -n git -f <key file> <file>`, the signature in
//!   `<file>.sig`. A `user.signingkey` that is a public key itself (`ssh-…` or `key::…`) is
//!   written to a temporary file and signed with `-U`, so the private key comes from ssh-agent.
//!
//! The key is `user.signingkey`; without it OpenPGP and X.509 use the committer's
//! `Name <email>`, as git does, and SSH is an error (git's `gpg.ssh.defaultKeyCommand` is not
//! run). The signature goes in the commit's `gpgsig` header, each continuation line indented by
//! one space (git's `add_header_signature` in `commit.c`), through libgit2's
//! `commit_create_buffer` and `commit_signed`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use git2::{Commit, Config, Oid, Repository, Signature, Tree};

use crate::git::GitError;

/// How commits are signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `gpg.format = openpgp` (git's default).
    OpenPgp,
    /// `gpg.format = x509` (`gpgsm`).
    X509,
    /// `gpg.format = ssh`.
    Ssh,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::OpenPgp => "openpgp",
            Format::X509 => "x509",
            Format::Ssh => "ssh",
        }
    }
}

/// Signs commits as the user's git config says.
#[derive(Debug, Clone)]
pub struct Signer {
    /// The signature format.
    pub format: Format,
    /// The program that signs (`gpg`, `gpgsm`, `ssh-keygen` or the configured one).
    pub program: String,
    /// `user.signingkey`, or the committer's `Name <email>` for OpenPGP and X.509.
    pub key: String,
}

/// The output of a signing program that failed, shown as the error's cause.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ProgramOutput(pub String);

impl Signer {
    /// The signer git config asks for: `None` unless `commit.gpgsign` is true. Checks that the
    /// program can be found and that an SSH key file exists, so a commit is not attempted (and
    /// no file written) with a configuration that cannot sign.
    pub fn from_config(repo: &Repository, committer: &Signature<'_>) -> Result<Option<Signer>, GitError> {
        let mut config = repo.config().map_err(GitError::git("read git config"))?;
        let config = config.snapshot().map_err(GitError::git("read git config"))?;
        if !config.get_bool("commit.gpgsign").unwrap_or(false) {
            return Ok(None);
        }
        let format = match config.get_string("gpg.format").ok().as_deref() {
            None | Some("openpgp") => Format::OpenPgp,
            Some("x509") => Format::X509,
            Some("ssh") => Format::Ssh,
            Some(other) => {
                return Err(GitError::SigningConfig {
                    problem: format!("`gpg.format` is `{other}`; git knows `openpgp`, `x509` and `ssh`"),
                });
            }
        };
        let program = program(&config, format);
        let key = match config.get_string("user.signingkey") {
            Ok(k) if !k.trim().is_empty() => k.trim().to_string(),
            _ if format == Format::Ssh => {
                return Err(GitError::SigningConfig {
                    problem: "`gpg.format` is `ssh` but `user.signingkey` is not set".into(),
                });
            }
            _ => format!(
                "{} <{}>",
                committer.name().unwrap_or_default(),
                committer.email().unwrap_or_default()
            ),
        };
        let signer = Signer { format, program, key };
        signer.check()?;
        Ok(Some(signer))
    }

    /// The program is on PATH (or a path that exists), and an SSH key file exists.
    fn check(&self) -> Result<(), GitError> {
        if find_program(&self.program).is_none() {
            return Err(GitError::SigningConfig {
                problem: format!(
                    "commits are to be signed ({}) with `{}`, which is not installed or not on PATH",
                    self.format.name(),
                    self.program
                ),
            });
        }
        if self.format == Format::Ssh && literal_ssh_key(&self.key).is_none() {
            let path = expand_home(&self.key);
            if !path.is_file() {
                return Err(GitError::SigningConfig {
                    problem: format!("`user.signingkey` names `{}`, which is not a file", path.display()),
                });
            }
        }
        Ok(())
    }

    /// Signs `payload` (a commit object without its signature), returning the armored signature.
    pub fn sign(&self, payload: &str) -> Result<String, GitError> {
        let signature = match self.format {
            Format::OpenPgp | Format::X509 => self.sign_gpg(payload)?,
            Format::Ssh => self.sign_ssh(payload)?,
        };
        // Strip CR from the line endings, as git does (`remove_cr_after`).
        Ok(signature.replace('\r', ""))
    }

    fn failed(&self, output: impl Into<String>) -> GitError {
        let output = output.into();
        let output = output.trim();
        GitError::Sign {
            format: self.format.name(),
            program: self.program.clone(),
            key: self.key.clone(),
            source: ProgramOutput(if output.is_empty() {
                "(no output)".into()
            } else {
                output.to_string()
            }),
        }
    }

    fn sign_gpg(&self, payload: &str) -> Result<String, GitError> {
        let mut child = Command::new(&self.program)
            .args(["--status-fd=2", "-bsau", &self.key])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| self.failed(format!("failed to run `{}`: {e}", self.program)))?;
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let payload = payload.as_bytes().to_vec();
        // Written from another thread: gpg may fill its stderr before it reads all of stdin. A
        // write error (gpg exited early on a bad key) shows in its status output below.
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&payload);
        });
        let output = child
            .wait_with_output()
            .map_err(|e| self.failed(format!("failed to run `{}`: {e}", self.program)))?;
        let _ = writer.join();
        let status = String::from_utf8_lossy(&output.stderr);
        let created = status.lines().any(|l| l.starts_with("[GNUPG:] SIG_CREATED "));
        if !output.status.success() || !created {
            return Err(self.failed(status));
        }
        String::from_utf8(output.stdout).map_err(|_| self.failed("the signature is not UTF-8"))
    }

    fn sign_ssh(&self, payload: &str) -> Result<String, GitError> {
        let dir = tempfile::tempdir().map_err(|e| self.failed(format!("could not create a temporary folder: {e}")))?;
        let buffer = dir.path().join("commit");
        fs_err::write(&buffer, payload).map_err(|e| self.failed(e.to_string()))?;
        let mut cmd = Command::new(&self.program);
        cmd.args(["-Y", "sign", "-n", "git", "-f"]);
        match literal_ssh_key(&self.key) {
            Some(public) => {
                let key_file = dir.path().join("key.pub");
                fs_err::write(&key_file, public).map_err(|e| self.failed(e.to_string()))?;
                cmd.arg(key_file).arg("-U");
            }
            None => {
                cmd.arg(expand_home(&self.key));
            }
        }
        let output = cmd
            .arg(&buffer)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| self.failed(format!("failed to run `{}`: {e}", self.program)))?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            if stderr.contains("usage:") {
                return Err(self.failed(format!(
                    "`ssh-keygen -Y sign` is needed for SSH signing (OpenSSH 8.2p1 or later)\n{stderr}"
                )));
            }
            return Err(self.failed(stderr));
        }
        fs_err::read_to_string(dir.path().join("commit.sig")).map_err(|e| self.failed(e.to_string()))
    }
}

/// `gpg.<format>.program` (and `gpg.program` for OpenPGP), else git's default program.
fn program(config: &Config, format: Format) -> String {
    let keys: &[&str] = match format {
        Format::OpenPgp => &["gpg.openpgp.program", "gpg.program"],
        Format::X509 => &["gpg.x509.program"],
        Format::Ssh => &["gpg.ssh.program"],
    };
    keys.iter()
        .find_map(|k| config.get_string(k).ok().filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| {
            match format {
                Format::OpenPgp => "gpg",
                Format::X509 => "gpgsm",
                Format::Ssh => "ssh-keygen",
            }
            .to_string()
        })
}

/// git's `is_literal_ssh_key`: `key::<public key>` or a value starting `ssh-`.
fn literal_ssh_key(key: &str) -> Option<&str> {
    key.strip_prefix("key::")
        .or_else(|| key.starts_with("ssh-").then_some(key))
}

/// `~/…` as git's `interpolate_path` expands it.
fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), dirs::home_dir()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(path),
    }
}

/// `program` as the system would run it: a path, or a name found on PATH.
fn find_program(program: &str) -> Option<PathBuf> {
    let path = Path::new(program);
    if path.components().count() > 1 {
        return path.is_file().then(|| path.to_path_buf());
    }
    let dirs = std::env::var_os("PATH")?;
    std::env::split_paths(&dirs)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Creates a commit, signed when `signer` is given; the commit is not on any ref yet.
pub(crate) fn create_commit(
    repo: &Repository,
    signer: Option<&Signer>,
    sig: &Signature<'_>,
    message: &str,
    tree: &Tree<'_>,
    parents: &[&Commit<'_>],
) -> Result<Oid, GitError> {
    let Some(signer) = signer else {
        return repo
            .commit(None, sig, sig, message, tree, parents)
            .map_err(GitError::git("create the commit"));
    };
    let buffer = repo
        .commit_create_buffer(sig, sig, message, tree, parents)
        .map_err(GitError::git("create the commit"))?;
    let content = buffer.as_str().map_err(GitError::git("create the commit"))?;
    let signature = signer.sign(content)?;
    // libgit2 ends the header with its own newline; git's header has no empty last line.
    repo.commit_signed(content, signature.trim_end_matches('\n'), None)
        .map_err(GitError::git("store the signed commit"))
}
