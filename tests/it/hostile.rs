//! Hostile input (issue 9): each is refused before anything is written, names the file, and is
//! bounded in time and memory. The repository sits inside a folder of its own, so a test can
//! also prove that nothing was written next to it. Time and peak memory of each refusal are
//! printed (run with `--nocapture`), never asserted.
//!
//! See: issues/9

use std::path::Path;
use std::time::Instant;

use crate::common::{PROXMOX_TENANT, Repo, Run, bin, copy_tree, project_root};

/// A repository at `<outer>/repo` with the example's inputs, rendered once, plus a sibling file.
fn setup() -> (tempfile::TempDir, Repo) {
    let outer = tempfile::tempdir().expect("a temp dir");
    let repo = Repo {
        dir: tempfile::Builder::new()
            .prefix("repo")
            .tempdir_in(outer.path())
            .expect("a temp dir"),
    };
    let root = project_root();
    for input in ["kaas.yaml", "tenants", "base"] {
        copy_tree(&root.join(input), &repo.path().join(input));
    }
    std::fs::write(outer.path().join("sibling.txt"), "next to the repository\n").unwrap();
    assert_eq!(repo.run(&["render"]).code, 0);
    (outer, repo)
}

/// Every file under `dir`, relative path -> bytes.
fn files(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn walk(root: &Path, dir: &Path, out: &mut std::collections::BTreeMap<String, Vec<u8>>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let meta = std::fs::symlink_metadata(&p).unwrap();
        let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        if meta.is_dir() {
            walk(root, &p, out);
        } else if meta.is_file() {
            out.insert(rel, std::fs::read(&p).unwrap());
        } else {
            out.insert(rel, format!("{:?}", meta.file_type()).into_bytes());
        }
    }
}

/// Peak memory allowed for one run on a hostile input (where `/usr/bin/time` measures it).
const MAX_KIB: u64 = 512 * 1024;
/// Time allowed for one run on a hostile input.
const MAX_TIME: std::time::Duration = std::time::Duration::from_secs(60);

/// Runs `kaas-gitops --repo <repo> args` under `/usr/bin/time` when it is there, prints how long
/// the run took and its peak memory, and fails when either is over its bound.
#[track_caller]
fn measured(name: &str, repo: &Repo, args: &[&str]) -> Run {
    let rss = tempfile::NamedTempFile::new().unwrap();
    let timer = Path::new("/usr/bin/time");
    let mut cmd = if timer.exists() {
        let mut c = std::process::Command::new(timer);
        c.arg("-f").arg("%M").arg("-o").arg(rss.path());
        c.arg(bin().get_program());
        c.env("NO_COLOR", "1").env_remove("KAAS_REPO");
        c
    } else {
        bin()
    };
    cmd.arg("--repo").arg(repo.path()).args(args);
    let started = Instant::now();
    let run: Run = cmd.output().expect("the binary runs").into();
    let elapsed = started.elapsed();
    let kib = std::fs::read_to_string(rss.path()).unwrap_or_default();
    let kib = kib.trim().lines().last().and_then(|l| l.parse::<u64>().ok());
    eprintln!(
        "hostile input `{name}`: exit {} in {} ms, peak memory {} KiB",
        run.code,
        elapsed.as_millis(),
        kib.map_or("?".to_string(), |k| k.to_string())
    );
    // The bounds a hostile file must stay under (the worst, the alias bomb, peaks near 90 MiB
    // and 6 s in a debug build): far above that is an input growing without a limit.
    assert!(elapsed < MAX_TIME, "`{name}` took {} ms", elapsed.as_millis());
    if timer.exists() {
        let kib = kib.unwrap_or_else(|| panic!("`{name}`: /usr/bin/time reported no peak memory"));
        assert!(kib < MAX_KIB, "`{name}` peaked at {kib} KiB");
    }
    run
}

/// Adds `rel` (made by `plant`), renders, and checks: exit 1, every `expected` text in stderr,
/// nothing written in or next to the repository.
#[track_caller]
fn refused(name: &str, plant: impl FnOnce(&Repo), expected: &[&str]) -> String {
    let (outer, repo) = setup();
    plant(&repo);
    let before = files(outer.path());
    let run = measured(name, &repo, &["render"]);
    assert_eq!(run.code, 1, "exit code; stderr:\n{}", run.stderr);
    for text in expected {
        assert!(run.stderr.contains(text), "no `{text}` in:\n{}", run.stderr);
    }
    assert!(run.stderr.contains("nothing was written"), "{}", run.stderr);
    assert_eq!(before, files(outer.path()), "a refused render changed files");
    run.stderr
}

const TENANT_HEAD: &str = "apiVersion: kaas-gitops.dev/v1alpha1\nkind: Tenant\n";

/// A valid tenant named `name`.
fn tenant_named(name: &str) -> String {
    PROXMOX_TENANT.replacen("  name: bad\n", &format!("  name: {name}\n"), 1)
}

/// `tenant_named` without its address pool line: the encoding tests below are refused before
/// validation, and they point at line numbers of this shorter text.
fn short_tenant_named(name: &str) -> String {
    let text = tenant_named(name);
    let pool = text
        .lines()
        .find(|l| l.trim_start().starts_with("ipv4:"))
        .expect("an ipv4 line");
    text.replacen(&format!("{pool}\n"), "", 1)
}

#[test]
fn alias_bomb() {
    // "Billion laughs": nine levels of ten aliases each would expand to 10^9 strings.
    let mut bomb = format!(
        "{TENANT_HEAD}metadata: {{name: bomb}}\nspec:\n  a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    );
    for i in 1..10 {
        let p = i - 1;
        bomb.push_str(&format!(
            "  a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    refused(
        "alias bomb",
        |r| r.write("tenants/bomb.yaml", &bomb),
        &["--> tenants/bomb.yaml:5:7", "YAML anchors (`&name`) are not allowed"],
    );
}

#[test]
fn ten_thousand_levels_of_nesting() {
    let deep = format!(
        "{TENANT_HEAD}metadata: {{name: deep}}\nspec: {}{}\n",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    refused(
        "10,000-deep flow nesting",
        |r| r.write("tenants/deep.yaml", &deep),
        &["--> tenants/deep.yaml:4", "nesting deeper than 32 levels"],
    );
    // Block style: `- - - … x`, one compact sequence inside the next.
    let block = format!(
        "{TENANT_HEAD}metadata: {{name: deep}}\nspec:\n{}x\n",
        "- ".repeat(10_000)
    );
    refused(
        "10,000-deep block nesting",
        |r| r.write("tenants/deep.yaml", &block),
        &["--> tenants/deep.yaml:", "nesting deeper than 32 levels"],
    );
}

#[test]
fn fifty_megabyte_file() {
    refused(
        "50 MB file",
        |r| {
            // A valid start, then 50 MB of comment: only the first MiB and a byte are ever read.
            let mut big = tenant_named("huge").into_bytes();
            let line = format!("# {}\n", "x".repeat(1021));
            while big.len() < 50 * 1024 * 1024 {
                big.extend_from_slice(line.as_bytes());
            }
            std::fs::write(r.path().join("tenants/huge.yaml"), big).unwrap();
        },
        &["tenants/huge.yaml", "file is larger than 1024 KiB"],
    );
}

#[test]
fn non_utf8() {
    refused(
        "non-UTF-8",
        |r| {
            let mut bytes = short_tenant_named("latin").into_bytes();
            bytes.extend_from_slice(b"# caf\xe9\n");
            std::fs::write(r.path().join("tenants/latin.yaml"), bytes).unwrap();
        },
        &["--> tenants/latin.yaml:17:6", "file is not valid UTF-8"],
    );
}

#[test]
fn nul_bytes() {
    refused(
        "NUL byte",
        |r| r.write("tenants/nul.yaml", &short_tenant_named("nul").replace("md-0", "md\0-0")),
        &["--> tenants/nul.yaml:15:15", "NUL byte in the file"],
    );
}

#[test]
fn symlink_to_etc_passwd() {
    refused(
        "symlink to /etc/passwd",
        |r| std::os::unix::fs::symlink("/etc/passwd", r.path().join("tenants/passwd.yaml")).unwrap(),
        &["`tenants/passwd.yaml` is a symlink to `/etc/passwd`, outside the repository"],
    );
}

#[test]
fn symlink_to_a_valid_tenant_outside_the_repository() {
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().join("evil.yaml");
    std::fs::write(&target, tenant_named("evil")).unwrap();
    let target = std::fs::canonicalize(target).unwrap();
    refused(
        "symlink to a valid tenant outside",
        |r| std::os::unix::fs::symlink(&target, r.path().join("tenants/evil.yaml")).unwrap(),
        &["`tenants/evil.yaml` is a symlink to", "outside the repository"],
    );
}

#[test]
fn tenants_folder_that_is_a_symlink_out_of_the_repository() {
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("evil.yaml"), tenant_named("evil")).unwrap();
    refused(
        "tenants/ symlinked out",
        |r| {
            std::fs::rename(r.path().join("tenants"), r.path().join("people")).unwrap();
            std::os::unix::fs::symlink(elsewhere.path(), r.path().join("tenants")).unwrap();
        },
        &["`tenants` is a symlink to", "outside the repository"],
    );
}

#[test]
fn fifo_and_device_instead_of_a_tenant_file() {
    refused(
        "FIFO tenant file",
        |r| {
            let fifo = r.path().join("tenants/pipe.yaml");
            let ok = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
            assert!(ok.success(), "mkfifo");
        },
        &["`tenants/pipe.yaml` is not a regular file"],
    );
}

#[test]
fn names_that_try_to_escape() {
    for (name, file) in [("../x", "x"), ("/abs", "abs"), ("a%2fb", "a%2fb"), ("..", "dots")] {
        let rel = format!("tenants/{file}.yaml");
        refused(
            &format!("metadata.name `{name}`"),
            |r| r.write(&rel, &tenant_named(&format!("{name:?}"))),
            &[&format!("--> {rel}:4:9"), &format!("`{name}` is not a DNS-1035 label")],
        );
    }
}

#[test]
fn tenant_arguments_that_try_to_escape() {
    let (outer, repo) = setup();
    let before = files(outer.path());
    for name in ["../x", "/abs", "a%2fb", "..", "acme/../../x"] {
        let run = measured(&format!("--tenant {name}"), &repo, &["render", "--tenant", name]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(
            run.stderr.contains(&format!("`--tenant {name}` names no tenant")),
            "{}",
            run.stderr
        );
        let run = measured(&format!("pr {name}"), &repo, &["pr", name]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(
            run.stderr.contains(&format!("`{name}` is not a tenant name")),
            "{}",
            run.stderr
        );
    }
    assert_eq!(before, files(outer.path()));
}

#[test]
fn an_overlay_folder_that_is_a_symlink_out_of_the_repository() {
    // Planted by a hostile commit: writing acme's overlay would write into `elsewhere`.
    let (outer, repo) = setup();
    let elsewhere = tempfile::tempdir().unwrap();
    let acme = repo.path().join("overlays/tenants/acme");
    std::fs::remove_dir_all(&acme).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), &acme).unwrap();
    let before = files(outer.path());
    let run = measured("overlay folder symlinked out", &repo, &["render"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("overlays/tenants/acme` is a symlink; kaas-gitops writes only into real folders"),
        "{}",
        run.stderr
    );
    assert_eq!(before, files(outer.path()));
    assert_eq!(
        std::fs::read_dir(elsewhere.path()).unwrap().count(),
        0,
        "wrote outside the repository"
    );
}

#[test]
fn a_megabyte_of_problems_prints_a_bounded_report() {
    // One line of 200,000 aliases, then 100,000 tab-indented lines: each would be a diagnostic.
    let line = format!(
        "{TENANT_HEAD}metadata: {{name: many}}\nspec: [{}]\n",
        "*a, ".repeat(200_000)
    );
    let stderr = refused(
        "200,000 aliases on one line",
        |r| r.write("tenants/many.yaml", &line),
        &["--> tenants/many.yaml:4:8", "YAML aliases (`*name`) are not allowed"],
    );
    assert!(stderr.len() < 64 * 1024, "{} bytes of messages", stderr.len());
    let tabs = format!("{TENANT_HEAD}metadata: {{name: tabs}}\n{}", "\tk: v\n".repeat(100_000));
    let stderr = refused(
        "100,000 tab-indented lines",
        |r| r.write("tenants/tabs.yaml", &tabs),
        &["--> tenants/tabs.yaml:4:1", "tab used for indentation"],
    );
    assert!(stderr.len() < 64 * 1024, "{} bytes of messages", stderr.len());
}

#[test]
fn a_dangling_symlink_is_reported_not_an_environment_failure() {
    refused(
        "dangling symlink",
        |r| std::os::unix::fs::symlink("/nonexistent/kaas", r.path().join("tenants/gone.yaml")).unwrap(),
        &["`tenants/gone.yaml` is a symlink to a file that does not exist"],
    );
}

#[test]
fn pr_refuses_a_tenant_file_that_links_out_of_the_repository() {
    let (outer, repo) = setup();
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "-A"],
        &["commit", "-qm", "initial"],
    ] {
        let ok = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(repo.path())
            .status()
            .unwrap();
        assert!(ok.success(), "git {args:?}");
    }
    std::os::unix::fs::symlink("/etc/passwd", repo.path().join("tenants/passwd.yaml")).unwrap();
    let before = files(outer.path());
    let run = measured("pr of a symlink to /etc/passwd", &repo, &["pr", "passwd"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("`tenants/passwd.yaml` is a symlink to `/etc/passwd`, outside the repository"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("root:"),
        "the file's content leaked:\n{}",
        run.stderr
    );
    assert_eq!(before, files(outer.path()));
}
