//! The portable file-system paths (`repo::portable`): where `syncfs` and `O_PATH` do not exist
//! (macOS), the rendered tree is made durable with an fsync per file and per changed folder,
//! and the stat cache opens folders read-only. Linux runs them with `KAAS_PORTABLE_FS=1`; here a
//! render, a decommission and `render --check` (also from the stat cache) give what the Linux
//! paths give, and `strace` shows which system calls each path made.

use std::collections::BTreeMap;
use std::process::Command;

use crate::common::{Repo, Run};

const HIT: &str = "stat cache: no input or output changed";

/// `kaas-gitops ARGS` in `repo` under `strace -f`, with `KAAS_PORTABLE_FS=portable`: the run,
/// and strace's log of the calls that tell the two paths apart.
fn traced(repo: &Repo, portable: &str, args: &[&str]) -> (Run, String) {
    crate::common::traced(
        repo,
        "trace=syncfs,fsync,open,openat",
        &[("KAAS_PORTABLE_FS", portable)],
        args,
    )
}

fn git_repo() -> Repo {
    let repo = Repo::example();
    let out = Command::new("git")
        .args(["init", "-q"])
        .current_dir(repo.path())
        .output()
        .expect("git runs");
    assert!(out.status.success(), "{out:?}");
    repo
}

/// What a render wrote: everything but the inputs.
fn rendered(repo: &Repo) -> BTreeMap<String, Vec<u8>> {
    let mut files = repo.snapshot();
    files.retain(|p, _| p.starts_with("overlays/") || p.starts_with("flux/") || p == "kaas.lock");
    files
}

/// Two no-op checks after the racy window: the first records the stat cache, the second is
/// served from it. The calls both made.
#[track_caller]
fn checked_from_stats(repo: &Repo, portable: &str) -> String {
    crate::common::wait_until_timestamps_advance(repo.path());
    let (r, mut calls) = traced(repo, portable, &["-v", "render", "--check"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let (r, more) = traced(repo, portable, &["-v", "render", "--check"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains(HIT), "not served from the stat cache: {}", r.stderr);
    calls.push_str(&more);
    calls
}

#[test]
fn the_portable_paths_render_decommission_and_check_like_the_linux_ones() {
    let linux = git_repo();
    let portable = git_repo();

    let (r, calls) = traced(&linux, "", &["render"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(calls.contains("syncfs("), "the Linux path syncs with syncfs:\n{calls}");

    let (r, calls) = traced(&portable, "1", &["render"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        !calls.contains("syncfs("),
        "the portable path never calls syncfs:\n{calls}"
    );
    // An fsync per rendered file (its temp file), and more for the folders.
    let files = rendered(&portable).len();
    let fsyncs = calls.matches("fsync(").count();
    assert!(fsyncs > files, "{fsyncs} fsyncs for {files} rendered files:\n{calls}");
    assert_eq!(rendered(&portable), rendered(&linux));

    // A decommissioned tenant: files change and go, on both paths alike.
    for (repo, switch) in [(&linux, ""), (&portable, "1")] {
        repo.decommission("globex");
        let (r, calls) = traced(repo, switch, &["render"]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(calls.contains("syncfs("), switch.is_empty(), "{calls}");
    }
    assert_eq!(rendered(&portable), rendered(&linux));

    // The stat cache: O_PATH on Linux, folders opened read-only on the portable path.
    let calls = checked_from_stats(&linux, "");
    assert!(
        calls.contains("O_PATH"),
        "the Linux path stats through O_PATH:\n{calls}"
    );
    let calls = checked_from_stats(&portable, "1");
    assert!(
        !calls.contains("O_PATH"),
        "the portable path never opens with O_PATH:\n{calls}"
    );
    assert!(
        calls
            .lines()
            .any(|l| l.contains("O_RDONLY") && l.contains("O_DIRECTORY") && l.contains("/overlays")),
        "{calls}"
    );

    // And a hand edit is still caught.
    let acme = "overlays/tenants/acme/kustomization.yaml";
    let text = portable.read(acme);
    portable.write(acme, &format!("{text}# edited by hand\n"));
    let (r, _) = traced(&portable, "1", &["render", "--check"]);
    assert_eq!(r.code, 1, "a hand edit is drift: {}{}", r.stdout, r.stderr);
    assert!(
        format!("{}{}", r.stdout, r.stderr).contains(acme),
        "{}{}",
        r.stdout,
        r.stderr
    );
}
