//! Signed commits: with `commit.gpgsign` in git config, `render --commit` and `pr` sign their
//! commits as `git commit` does (SSH through `ssh-keygen -Y sign`, OpenPGP through `gpg`), and
//! `git verify-commit` accepts them. Real `ssh-keygen`, `gpg` and `git`, with keys made here.

use std::process::Command;

use crate::common::{Repo, Run, bin, run_ok};

const TIME: &str = "1700000000";
/// The example's `spec.git.author`: the committer, and the signer's identity.
const AUTHOR: &str = "kaas-gitops <kaas-gitops@localhost>";
const EMAIL: &str = "kaas-gitops@localhost";

/// A kaas repository under git (inputs committed by `git`, unsigned), with its own `$HOME`
/// (the global git config the signing settings go in) and `GNUPGHOME`.
struct Signed {
    repo: Repo,
    home: tempfile::TempDir,
}

impl Signed {
    fn new() -> Signed {
        let s = Signed {
            repo: Repo::example(),
            home: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir(s.gnupg()).unwrap();
        s.git(&["init", "-q", "-b", "main"]);
        s.git(&["add", "-A"]);
        s.git(&["-c", "commit.gpgsign=false", "commit", "-q", "-m", "inputs"]);
        s
    }

    fn gnupg(&self) -> std::path::PathBuf {
        self.home.path().join("gnupg")
    }

    fn env(&self, cmd: &mut Command) {
        crate::common::git_env(cmd, self.home.path()).env("GNUPGHOME", self.gnupg());
    }

    #[track_caller]
    fn git(&self, args: &[&str]) -> String {
        let mut cmd = Command::new("git");
        cmd.current_dir(self.repo.path()).args(args);
        self.env(&mut cmd);
        run_ok(&mut cmd)
    }

    fn try_git(&self, args: &[&str]) -> Run {
        let mut cmd = Command::new("git");
        cmd.current_dir(self.repo.path()).args(args);
        self.env(&mut cmd);
        cmd.output().expect("git runs").into()
    }

    fn kaas(&self, args: &[&str]) -> Run {
        let mut cmd = bin();
        self.env(&mut cmd);
        cmd.env("KAAS_COMMIT_TIME", TIME)
            .arg("--repo")
            .arg(self.repo.path())
            .args(args)
            .output()
            .expect("the binary runs")
            .into()
    }

    /// Scales acme, so a render has something to commit and `pr acme` something to propose.
    fn edit_acme(&self, replicas: &str) {
        let spec = self.repo.read("tenants/acme.yaml");
        let edited = spec.replacen("replicas: 2", &format!("replicas: {replicas}"), 1);
        assert_ne!(spec, edited, "the example's acme has `replicas: 2`");
        self.repo.write("tenants/acme.yaml", &edited);
    }

    /// `git verify-commit REV` succeeds, and `%G?` says the signature is good.
    #[track_caller]
    fn assert_verified(&self, rev: &str) -> Run {
        let verified = self.try_git(&["verify-commit", "-v", rev]);
        assert_eq!(verified.code, 0, "git verify-commit {rev}:\n{}", verified.stderr);
        assert_eq!(self.git(&["log", "-1", "--format=%G?", rev]).trim(), "G");
        verified
    }

    /// The commit's signature and the bytes it signs (the commit without its `gpgsig` header),
    /// split as git's `parse_signed_commit` does.
    fn signature_and_payload(&self, rev: &str) -> (String, String) {
        let raw = self.git(&["cat-file", "commit", rev]);
        let (mut sig, mut payload, mut in_sig) = (String::new(), String::new(), false);
        for line in raw.split_inclusive('\n') {
            if let Some(first) = line.strip_prefix("gpgsig ") {
                sig.push_str(first);
                in_sig = true;
            } else if in_sig && let Some(more) = line.strip_prefix(' ') {
                sig.push_str(more);
            } else {
                in_sig = false;
                payload.push_str(line);
            }
        }
        (sig, payload)
    }
}

impl Drop for Signed {
    fn drop(&mut self) {
        // gpg started an agent for this GNUPGHOME; stop it with the test.
        let _ = Command::new("gpgconf")
            .env("GNUPGHOME", self.gnupg())
            .args(["--kill", "gpg-agent"])
            .output();
    }
}

#[test]
fn render_commit_and_pr_sign_with_ssh_and_git_verify_commit_accepts_them() {
    let s = Signed::new();
    let key = s.home.path().join("signing_key");
    run_ok(
        Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", "signer", "-f"])
            .arg(&key),
    );
    let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
    let allowed = s.home.path().join("allowed_signers");
    std::fs::write(&allowed, format!("{EMAIL} namespaces=\"git\" {public}")).unwrap();
    for (k, v) in [
        ("commit.gpgsign", "true"),
        ("gpg.format", "ssh"),
        ("user.signingkey", &key.to_string_lossy()),
        ("gpg.ssh.allowedSignersFile", &allowed.to_string_lossy()),
    ] {
        s.git(&["config", "--global", k, v]);
    }

    let r = s.kaas(&["render", "--commit"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("committed "), "{}", r.stderr);
    let verified = s.assert_verified("HEAD");
    assert!(
        verified
            .stderr
            .contains(&format!("Good \"git\" signature for {EMAIL} with ED25519 key")),
        "{}",
        verified.stderr
    );

    // The check an allowed-signers verifier makes (git's `verify_ssh_signed_buffer`; Flux's
    // SSH verification proposal uses the same file): the signature over the commit without its
    // `gpgsig` header, by a key the file allows for `git`.
    let (signature, payload) = s.signature_and_payload("HEAD");
    assert!(signature.starts_with("-----BEGIN SSH SIGNATURE-----"), "{signature}");
    let sig_file = s.home.path().join("commit.sig");
    std::fs::write(&sig_file, &signature).unwrap();
    let check = |payload: &str| {
        let mut child = Command::new("ssh-keygen")
            .args(["-Y", "verify", "-n", "git", "-I", EMAIL, "-f"])
            .arg(&allowed)
            .arg("-s")
            .arg(&sig_file)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), payload.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stdout).to_string())
    };
    let (ok, out) = check(&payload);
    assert!(ok, "ssh-keygen -Y verify: {out}");
    assert!(out.contains(&format!("Good \"git\" signature for {EMAIL}")), "{out}");
    // The same signature over other bytes is refused: it signs this commit.
    assert!(!check(&payload.replace("kaas-gitops render", "kaas-gitops rendr")).0);

    // `pr` signs its branch commit the same way.
    s.edit_acme("3");
    let r = s.kaas(&["pr", "acme"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    s.assert_verified("kaas/acme");
    // The user's branch was not touched.
    assert_eq!(s.git(&["rev-parse", "--abbrev-ref", "HEAD"]).trim(), "main");
}

#[test]
fn render_commit_and_pr_sign_with_openpgp_as_the_committer_by_default() {
    let s = Signed::new();
    let mut gen_key = Command::new("gpg");
    s.env(&mut gen_key);
    run_ok(gen_key.args([
        "--batch",
        "--passphrase",
        "",
        "--quick-gen-key",
        AUTHOR,
        "ed25519",
        "sign",
        "never",
    ]));
    // No `user.signingkey`: git signs as the committer (`get_signing_key` in gpg-interface.c),
    // here the example's `spec.git.author`.
    s.git(&["config", "--global", "commit.gpgsign", "true"]);

    let r = s.kaas(&["render", "--commit"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let verified = s.assert_verified("HEAD");
    assert!(
        verified.stderr.contains(&format!("Good signature from \"{AUTHOR}\"")),
        "{}",
        verified.stderr
    );
    let (signature, _) = s.signature_and_payload("HEAD");
    assert!(signature.starts_with("-----BEGIN PGP SIGNATURE-----"), "{signature}");

    s.edit_acme("3");
    let r = s.kaas(&["pr", "acme"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    s.assert_verified("kaas/acme");
}

#[test]
fn a_signing_failure_is_exit_2_and_moves_no_branch() {
    let s = Signed::new();
    let head = s.git(&["rev-parse", "HEAD"]);
    s.git(&["config", "--global", "commit.gpgsign", "true"]);
    s.git(&["config", "--global", "gpg.format", "ssh"]);

    // A key file that is not there: refused before the render writes a file.
    let missing = s.home.path().join("no_such_key");
    s.git(&["config", "--global", "user.signingkey", &missing.to_string_lossy()]);
    let r = s.kaas(&["render", "--commit"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "error: cannot sign commits: `user.signingkey` names `{}`, which is not a file",
            missing.display()
        )) && r.stderr.contains("hint: check `git config --show-origin"),
        "{}",
        r.stderr
    );
    assert!(!s.repo.path().join("overlays").exists(), "nothing was rendered");
    assert_eq!(s.git(&["rev-parse", "HEAD"]), head);

    // A key ssh-keygen cannot use: what it said is shown, and no commit or branch is made.
    let bogus = s.home.path().join("bogus_key");
    std::fs::write(&bogus, "not a key\n").unwrap();
    s.git(&["config", "--global", "user.signingkey", &bogus.to_string_lossy()]);
    let r = s.kaas(&["render", "--commit"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "signing the commit with `ssh-keygen` (ssh, key `{}`) failed",
            bogus.display()
        )) && r.stderr.contains("Caused by: "),
        "{}",
        r.stderr
    );
    assert_eq!(s.git(&["rev-parse", "HEAD"]), head);
    s.edit_acme("3");
    let r = s.kaas(&["pr", "acme"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("signing the commit with `ssh-keygen`"),
        "{}",
        r.stderr
    );
    assert_ne!(
        s.try_git(&["rev-parse", "--verify", "-q", "refs/heads/kaas/acme"]).code,
        0
    );
}
