//! `pr --push` over SSH, as teams push to GitHub or GitLab: a real `sshd` on loopback (Debian's
//! `openssh-server`), the user's key in a real `ssh-agent`, the server's host key in
//! `~/.ssh/known_hosts`, and a bare repository as the remote.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::{Repo, Run, free_port, git, run_ok};

const SSHD: &str = "/usr/sbin/sshd";
const TIME: &str = "1700000000";
/// Another ed25519 public key (github.com's published host key): what `known_hosts` holds when
/// the server's key changed, or another server answers at its address.
const OTHER_ED25519: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";

/// A throwaway `sshd` on 127.0.0.1 that lets in one key, and an `ssh-agent` that may hold it;
/// both killed on drop.
struct Ssh {
    dir: tempfile::TempDir,
    sshd: Child,
    agent: Child,
    port: u16,
}

impl Ssh {
    #[track_caller]
    fn start() -> Ssh {
        // Not a skip: this is the proof that SSH pushes work. `.ci/run` installs the package.
        assert!(
            Path::new(SSHD).is_file(),
            "`{SSHD}` is missing: install it with `apt-get install -y openssh-server` (CI's `.ci/run` does)"
        );
        let dir = tempfile::tempdir().expect("a temp dir");
        let d = dir.path();
        for key in ["host_key", "user_key"] {
            run_ok(
                Command::new("ssh-keygen")
                    .args(["-q", "-t", "ed25519", "-N", "", "-C", key, "-f"])
                    .arg(d.join(key)),
            );
        }
        std::fs::copy(d.join("user_key.pub"), d.join("authorized_keys")).unwrap();
        // sshd run as root needs its privilege separation folder.
        let _ = std::fs::create_dir_all("/run/sshd");
        let port = free_port();
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {hk}\nAuthorizedKeysFile {ak}\nPidFile none\n\
             UsePAM no\nStrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
             PermitRootLogin prohibit-password\nLogLevel VERBOSE\n",
            hk = d.join("host_key").display(),
            ak = d.join("authorized_keys").display(),
        );
        std::fs::write(d.join("sshd_config"), config).unwrap();
        let log = std::fs::File::create(d.join("sshd.log")).unwrap();
        let sshd = Command::new(SSHD)
            .arg("-D")
            .arg("-e")
            .arg("-f")
            .arg(d.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("failed to start `{SSHD}`: {e}"));
        let agent = Command::new("ssh-agent")
            .arg("-D")
            .arg("-a")
            .arg(d.join("agent.sock"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("ssh-agent runs");
        let mut ssh = Ssh { dir, sshd, agent, port };
        ssh.wait_until_ready();
        ssh
    }

    /// Polls until this sshd says it listens on its port (not merely until something answers
    /// there) and the agent's socket exists; fails at once if sshd exits (a readiness bound,
    /// not a timing assertion).
    fn wait_until_ready(&mut self) {
        let listening = format!("Server listening on 127.0.0.1 port {}", self.port);
        for _ in 0..200 {
            if let Ok(Some(status)) = self.sshd.try_wait() {
                panic!("sshd exited with {status}:\n{}", self.log());
            }
            if self.log().contains(&listening) && self.agent_socket().exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("sshd or ssh-agent did not start within 10 s:\n{}", self.log());
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }

    fn agent_socket(&self) -> PathBuf {
        self.dir.path().join("agent.sock")
    }

    /// Puts the user's key in the agent, as `ssh-add` does after login.
    fn add_key(&self) {
        run_ok(
            Command::new("ssh-add")
                .env("SSH_AUTH_SOCK", self.agent_socket())
                .arg(self.dir.path().join("user_key")),
        );
    }

    /// The base64 body of the server's public host key.
    fn host_key_body(&self) -> String {
        let key = std::fs::read_to_string(self.dir.path().join("host_key.pub")).unwrap();
        key.split_whitespace().nth(1).expect("a key body").to_string()
    }

    /// The `known_hosts` line for this server, as `ssh-keyscan` would print it.
    fn known_hosts_line(&self) -> String {
        format!("[127.0.0.1]:{} ssh-ed25519 {}\n", self.port, self.host_key_body())
    }
    /// An ssh config file with `body`, and the `GIT_SSH_COMMAND` that makes `git push` read it.
    ///
    /// kaas-gitops pushes to SSH remotes through `git push`, so OpenSSH makes the connection and
    /// reads the user's `~/.ssh/config`. OpenSSH finds `~` in the passwd database, not in
    /// `$HOME`, so a test cannot give it a config (or a `known_hosts`) in a temp home without
    /// touching the real user's `~/.ssh`; `ssh -F FILE` reads FILE instead of `~/.ssh/config`,
    /// with the same syntax and effect, and git runs it for every SSH connection when it is in
    /// `GIT_SSH_COMMAND` (as `core.sshCommand` would). `BatchMode` keeps ssh from asking
    /// anything on the terminal of whoever runs the tests.
    fn ssh_command(&self, name: &str, body: &str) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(
            &path,
            format!("{body}\nHost *\n  BatchMode yes\n  StrictHostKeyChecking yes\n"),
        )
        .unwrap();
        format!("ssh -F {}", path.display())
    }
}

impl Drop for Ssh {
    fn drop(&mut self) {
        for child in [&mut self.sshd, &mut self.agent] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn pr_pushes_over_ssh_with_the_key_in_ssh_agent_and_checks_the_host_key() {
    let ssh = Ssh::start();
    let home = tempfile::tempdir().unwrap();
    let repo = Repo::example();
    let remote = tempfile::tempdir().unwrap();
    git(home.path(), remote.path(), &["init", "-q", "--bare"]);
    git(home.path(), repo.path(), &["init", "-q", "-b", "main"]);
    git(home.path(), repo.path(), &["add", "-A"]);
    git(home.path(), repo.path(), &["commit", "-q", "-m", "inputs"]);
    let user = run_ok(Command::new("id").arg("-un")).trim().to_string();
    let url = format!("ssh://{user}@127.0.0.1:{}{}", ssh.port, remote.path().display());
    git(home.path(), repo.path(), &["remote", "add", "origin", &url]);
    let spec = repo.read("tenants/acme.yaml");
    repo.write(
        "tenants/acme.yaml",
        &spec.replace("replicas: 2", "replicas: 3 # scaled"),
    );

    // No key file: only ssh-agent's keys, as in the libgit2 days of this test.
    let ssh_command = ssh.ssh_command(
        "ssh_config",
        &format!(
            "UserKnownHostsFile {}\nIdentityFile {}",
            home.path().join(".ssh/known_hosts").display(),
            home.path().join(".ssh/no_key_file").display()
        ),
    );
    let pr = |agent: &Path| -> Run {
        crate::common::bin_in_home(home.path())
            .env("GIT_SSH_COMMAND", &ssh_command)
            .env("KAAS_COMMIT_TIME", TIME)
            .env("SSH_AUTH_SOCK", agent)
            .arg("--repo")
            .arg(repo.path())
            .args(["pr", "acme", "--push", "origin"])
            .output()
            .expect("the binary runs")
            .into()
    };
    let no_branch = || {
        let out = Command::new("git")
            .current_dir(remote.path())
            .args(["rev-parse", "--verify", "-q", "kaas/acme"])
            .output()
            .unwrap();
        !out.status.success()
    };

    // A host that is not in known_hosts: refused before any key is offered.
    let r = pr(&ssh.agent_socket());
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "error: the SSH host key of `{url}` is not in ~/.ssh/known_hosts, or does not match it"
        )) && r.stderr.contains("hint: connect once with `ssh`"),
        "{}",
        r.stderr
    );
    assert!(no_branch());

    // Another key under the host's name (a changed or spoofed host): refused the same way.
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    let other = ssh.known_hosts_line().replace(&ssh.host_key_body(), OTHER_ED25519);
    std::fs::write(home.path().join(".ssh/known_hosts"), other).unwrap();
    let r = pr(&ssh.agent_socket());
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("the SSH host key of"), "{}", r.stderr);
    assert!(no_branch());

    // A known host, but the agent holds no key: refused, with what to do.
    std::fs::write(home.path().join(".ssh/known_hosts"), ssh.known_hosts_line()).unwrap();
    let r = pr(&ssh.agent_socket());
    crate::git::assert_auth_refused(&r, &url);
    assert!(no_branch());

    // After `ssh-add`: pushed, and the remote's branch is the local one.
    ssh.add_key();
    let r = pr(&ssh.agent_socket());
    assert_eq!(r.code, 0, "{}\nsshd log:\n{}", r.stderr, ssh.log());
    let theirs = run_ok(
        Command::new("git")
            .current_dir(remote.path())
            .args(["rev-parse", "kaas/acme"]),
    );
    let ours = git(home.path(), repo.path(), &["rev-parse", "kaas/acme"]);
    assert_eq!(theirs, ours);
    assert!(ssh.log().contains("Accepted publickey"), "{}", ssh.log());
}

#[test]
fn pr_pushes_through_a_host_alias_with_identity_file_and_proxy_jump_from_the_ssh_config() {
    let ssh = Ssh::start();
    let home = tempfile::tempdir().unwrap();
    let repo = Repo::example();
    let remote = tempfile::tempdir().unwrap();
    git(home.path(), remote.path(), &["init", "-q", "--bare"]);
    git(home.path(), repo.path(), &["init", "-q", "-b", "main"]);
    git(home.path(), repo.path(), &["add", "-A"]);
    git(home.path(), repo.path(), &["commit", "-q", "-m", "inputs"]);
    // The remote is named by a `Host` alias only ssh's config resolves; the key is a file the
    // config names (the agent is empty and not even offered), and the connection goes through
    // a jump host (the same sshd, reached first under another alias).
    let user = run_ok(Command::new("id").arg("-un")).trim().to_string();
    let known_hosts = ssh.dir.path().join("known_hosts");
    std::fs::write(&known_hosts, ssh.known_hosts_line()).unwrap();
    let ssh_command = ssh.ssh_command(
        "ssh_config",
        &format!(
            "Host kaas-jump\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n\
             Host kaas-fleet-origin\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  ProxyJump kaas-jump\n\
             Host kaas-*\n  IdentityFile {key}\n  IdentitiesOnly yes\n  UserKnownHostsFile {kh}\n",
            port = ssh.port,
            key = ssh.dir.path().join("user_key").display(),
            kh = known_hosts.display(),
        ),
    );
    let url = format!("kaas-fleet-origin:{}", remote.path().display());
    git(home.path(), repo.path(), &["remote", "add", "origin", &url]);
    let spec = repo.read("tenants/acme.yaml");
    repo.write(
        "tenants/acme.yaml",
        &spec.replace("replicas: 2", "replicas: 3 # scaled"),
    );

    let r: Run = crate::common::bin_in_home(home.path())
        .env("KAAS_COMMIT_TIME", TIME)
        .env("GIT_SSH_COMMAND", &ssh_command)
        .env_remove("SSH_AUTH_SOCK")
        .arg("--repo")
        .arg(repo.path())
        .args(["pr", "acme", "--push", "origin"])
        .output()
        .expect("the binary runs")
        .into();
    assert_eq!(r.code, 0, "{}\nsshd log:\n{}", r.stderr, ssh.log());
    assert!(r.stderr.contains("pushed `kaas/acme` to `origin`"), "{}", r.stderr);
    let theirs = run_ok(
        Command::new("git")
            .current_dir(remote.path())
            .args(["rev-parse", "kaas/acme"]),
    );
    let ours = git(home.path(), repo.path(), &["rev-parse", "kaas/acme"]);
    assert_eq!(theirs, ours);
    // Two logins with the key file: the jump host's, then the remote's through its tunnel.
    let log = ssh.log();
    assert_eq!(log.matches("Accepted publickey").count(), 2, "{log}");

    // Without the config the alias names no host: exit 2 with git's and ssh's own words.
    let r: Run = crate::common::bin_in_home(home.path())
        .env("KAAS_COMMIT_TIME", TIME)
        .env("GIT_SSH_COMMAND", ssh.ssh_command("empty_config", ""))
        .env_remove("SSH_AUTH_SOCK")
        .arg("--repo")
        .arg(repo.path())
        .args(["pr", "acme", "--push", "origin", "--base", "main"])
        .output()
        .expect("the binary runs")
        .into();
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("kaas-fleet-origin"), "{}", r.stderr);
}

#[test]
fn over_ssh_a_non_fast_forward_is_refused_and_the_lease_is_honoured() {
    let ssh = Ssh::start();
    let home = tempfile::tempdir().unwrap();
    let repo = Repo::example();
    let remote = tempfile::tempdir().unwrap();
    git(home.path(), remote.path(), &["init", "-q", "--bare"]);
    git(home.path(), repo.path(), &["init", "-q", "-b", "main"]);
    git(home.path(), repo.path(), &["add", "-A"]);
    git(home.path(), repo.path(), &["commit", "-q", "-m", "inputs"]);
    let user = run_ok(Command::new("id").arg("-un")).trim().to_string();
    let known_hosts = ssh.dir.path().join("known_hosts");
    std::fs::write(&known_hosts, ssh.known_hosts_line()).unwrap();
    let ssh_command = ssh.ssh_command(
        "ssh_config",
        &format!(
            "Host kaas-fleet-origin\n  HostName 127.0.0.1\n  Port {}\n  User {user}\n  IdentityFile {}\n  UserKnownHostsFile {}\n",
            ssh.port,
            ssh.dir.path().join("user_key").display(),
            known_hosts.display(),
        ),
    );
    git(
        home.path(),
        repo.path(),
        &[
            "remote",
            "add",
            "origin",
            &format!("kaas-fleet-origin:{}", remote.path().display()),
        ],
    );
    let pr = |extra: &[&str]| -> Run {
        crate::common::bin_in_home(home.path())
            .env("KAAS_COMMIT_TIME", TIME)
            .env("GIT_SSH_COMMAND", &ssh_command)
            .env_remove("SSH_AUTH_SOCK")
            .arg("--repo")
            .arg(repo.path())
            .args(["pr", "acme", "--push", "origin"])
            .args(extra)
            .output()
            .expect("the binary runs")
            .into()
    };
    let remote_tip = || git(home.path(), remote.path(), &["rev-parse", "kaas/acme"]);
    let spec = repo.read("tenants/acme.yaml");
    repo.write(
        "tenants/acme.yaml",
        &spec.replace("replicas: 2", "replicas: 3 # scaled"),
    );
    let r = pr(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);

    // A colleague pushes a commit on the same branch (straight to the bare repository).
    let other = tempfile::tempdir().unwrap();
    let clone = other.path().join("clone");
    git(
        home.path(),
        other.path(),
        &[
            "clone",
            "-q",
            "-b",
            "kaas/acme",
            &remote.path().to_string_lossy(),
            "clone",
        ],
    );
    std::fs::write(clone.join("REVIEW.md"), "looks good\n").unwrap();
    git(home.path(), &clone, &["add", "REVIEW.md"]);
    git(home.path(), &clone, &["commit", "-q", "-m", "review"]);
    git(home.path(), &clone, &["push", "-q"]);
    let theirs = remote_tip();

    let spec = repo.read("tenants/acme.yaml");
    repo.write("tenants/acme.yaml", &spec.replace("cpus: 2", "cpus: 4"));
    let local = git(home.path(), repo.path(), &["rev-parse", "kaas/acme"]);
    let r = pr(&[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "error: `kaas/acme` on `origin` has commits that are not on the local `kaas/acme` (non-fast-forward)"
        ),
        "{}",
        r.stderr
    );
    assert_eq!(
        git(home.path(), repo.path(), &["rev-parse", "kaas/acme"]),
        local,
        "put back"
    );
    assert_eq!(remote_tip(), theirs);

    // The lease is the remote-tracking branch: not the colleague's commit, until a fetch.
    let r = pr(&["--force-with-lease"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "error: `kaas/acme` on `origin` is at {}, but the last known value is",
            &theirs[..7]
        )),
        "{}",
        r.stderr
    );
    assert_eq!(remote_tip(), theirs);

    let fetch = Command::new("git")
        .current_dir(repo.path())
        .env("HOME", home.path())
        .env("GIT_SSH_COMMAND", &ssh_command)
        .env_remove("SSH_AUTH_SOCK")
        .args(["fetch", "-q", "origin"])
        .output()
        .unwrap();
    assert!(fetch.status.success(), "{fetch:?}");
    let r = pr(&["--force-with-lease"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("force-pushed"), "{}", r.stderr);
    assert_eq!(remote_tip(), git(home.path(), repo.path(), &["rev-parse", "kaas/acme"]));
}
