//! The output contract of every command (docs/output.md, issue 20): `-q` never hides an
//! error, `--format json` prints one envelope on success and on failure that validates against
//! docs/output.schema.json, `-vv` counts, completions and the man page come from the clap
//! definitions.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{Repo, Run, crds_dir, project_root};

/// The documented schema of the envelope.
fn validator() -> &'static jsonschema::Validator {
    static V: std::sync::OnceLock<jsonschema::Validator> = std::sync::OnceLock::new();
    V.get_or_init(|| {
        let text = std::fs::read_to_string(project_root().join("docs/output.schema.json")).unwrap();
        let schema: Value = serde_json::from_str(&text).expect("docs/output.schema.json is JSON");
        jsonschema::validator_for(&schema).expect("docs/output.schema.json is a valid schema")
    })
}

/// The one JSON document on stdout: of `kind`, `ok` exactly when the run exited 0, valid
/// against the documented schema.
#[track_caller]
fn envelope(run: &Run, kind: &str, code: i32) -> Value {
    assert_eq!(
        run.code, code,
        "exit code; stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    let doc: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}):\n{}\nstderr:\n{}",
            run.stdout, run.stderr
        )
    });
    assert_eq!(doc["apiVersion"], "kaas-gitops.dev/v1", "{doc}");
    assert_eq!(doc["kind"], kind, "{doc}");
    assert_eq!(doc["ok"], code == 0, "{doc}");
    assert!(doc["diagnostics"].is_array(), "{doc}");
    let errors: Vec<String> = validator()
        .iter_errors(&doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{doc}\ndoes not match docs/output.schema.json: {errors:?}"
    );
    doc
}

/// The first error diagnostic's message.
#[track_caller]
fn first_error(doc: &Value) -> String {
    doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["severity"] == "error")
        .unwrap_or_else(|| panic!("no error diagnostic in {doc}"))["message"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `-q` on a failing run: the same exit code, and `needle` still on stderr.
#[track_caller]
fn quiet_still_errs(repo: &Repo, args: &[&str], code: i32, needle: &str) {
    let mut all = vec!["-q"];
    all.extend_from_slice(args);
    let run = repo.run(&all);
    assert_eq!(run.code, code, "{args:?}: {}", run.stderr);
    assert!(
        run.stderr.contains(&format!("error: {needle}")) || run.stderr.contains(needle) && run.stderr.contains("error"),
        "{args:?} -q hid the error `{needle}`:\n{}",
        run.stderr
    );
}

/// A tenant file with a field that does not exist.
fn break_acme(repo: &Repo) {
    let acme = repo.read("tenants/acme.yaml");
    repo.write("tenants/acme.yaml", &format!("{}\n  colour: blue\n", acme.trim_end()));
}

#[test]
fn init() {
    let repo = Repo::empty();
    let ok = envelope(&repo.run(&["init", "--format", "json"]), "InitResult", 0);
    assert!(
        ok["created"].as_array().unwrap().contains(&Value::from("kaas.yaml")),
        "{ok}"
    );
    // The second init refuses: exit 1 and the error, which -q used to swallow.
    quiet_still_errs(&repo, &["init"], 1, "already has `kaas.yaml`");
    let failed = envelope(&repo.run(&["init", "-o", "json"]), "InitResult", 1);
    assert!(first_error(&failed).contains("init never overwrites"), "{failed}");
    assert_eq!(
        failed["diagnostics"][0]["hint"],
        "run init in an empty folder, or edit the existing files"
    );
}

#[test]
fn render_and_render_check() {
    let repo = Repo::example();
    // --check before any render: every file is drift, each an error diagnostic of the envelope.
    quiet_still_errs(
        &repo,
        &["render", "--check"],
        1,
        "file(s) differ from the rendered output",
    );
    let drift = envelope(&repo.run(&["render", "--check", "--format", "json"]), "RenderResult", 1);
    let paths = drift["drift"].as_array().unwrap();
    assert!(!paths.is_empty(), "{drift}");
    assert!(
        drift["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["severity"] == "error" && d["file"] == paths[0]),
        "{drift}"
    );
    let ok = envelope(&repo.run(&["render", "--format", "json"]), "RenderResult", 0);
    assert!(
        ok["units"].as_array().unwrap().iter().any(|u| u["name"] == "acme"),
        "{ok}"
    );
    // The example pins no image: the warning is a diagnostic of the envelope.
    assert!(
        ok["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["severity"] == "warning"),
        "{ok}"
    );
    envelope(&repo.run(&["render", "--check", "-o", "json"]), "RenderResult", 0);
    // Invalid input: exit 1 printed nothing on stdout before; now the envelope with the location.
    break_acme(&repo);
    quiet_still_errs(&repo, &["render"], 1, "problem(s) found; nothing was written");
    let run = repo.run(&["-q", "render"]);
    assert!(run.stderr.contains("--> tenants/acme.yaml:"), "{}", run.stderr);
    let run = repo.run(&["render", "--format", "json"]);
    // The error also reaches stderr, located, and without an empty source snippet (the copy
    // read back from the envelope has no line text).
    assert!(run.stderr.contains("--> tenants/acme.yaml:"), "{}", run.stderr);
    assert!(!run.stderr.contains(" | \n"), "an empty snippet line:\n{}", run.stderr);
    let failed = envelope(&run, "RenderResult", 1);
    let d = failed["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["severity"] == "error" && d["file"] == "tenants/acme.yaml")
        .unwrap_or_else(|| panic!("no error in tenants/acme.yaml: {failed}"))
        .clone();
    assert_eq!(d["field"], "spec.colour", "{failed}");
    assert!(
        d["line"].as_u64().unwrap() > 1 && d["column"].as_u64().unwrap() >= 1,
        "{failed}"
    );
    // --locked: every unpinned image is an error.
    let repo = Repo::example();
    let locked = envelope(&repo.run(&["render", "--locked", "-o", "json"]), "RenderResult", 1);
    assert!(first_error(&locked).contains("has no digest in kaas.lock"), "{locked}");
}

#[test]
fn diff() {
    let repo = Repo::example();
    let ok = envelope(&repo.run(&["diff", "--format", "json"]), "DiffResult", 0);
    assert!(
        ok["changed"]
            .as_array()
            .unwrap()
            .contains(&Value::from("overlays/tenants/acme/kustomization.yaml")),
        "{ok}"
    );
    assert!(
        ok["diff"]
            .as_str()
            .unwrap()
            .contains("+++ b/overlays/tenants/acme/kustomization.yaml"),
        "{ok}"
    );
    break_acme(&repo);
    quiet_still_errs(&repo, &["diff"], 1, "problem(s) found; nothing was written");
    let failed = envelope(&repo.run(&["diff", "-o", "json"]), "DiffResult", 1);
    assert!(first_error(&failed).contains("colour"), "{failed}");
}

#[test]
fn validate() {
    let repo = Repo::example();
    assert_eq!(repo.run(&["render"]).code, 0);
    let crds = crds_dir();
    let crds = crds.to_string_lossy();
    let ok = envelope(
        &repo.run(&["validate", "--crds", &crds, "--no-kustomize", "--format", "json"]),
        "ValidateResult",
        0,
    );
    assert!(ok["objects"].as_u64().unwrap() > 10, "{ok}");
    // A folder that is not there is an error of the environment: exit 2, one envelope.
    let missing = repo.path().join("no-crds");
    let missing = missing.to_string_lossy();
    quiet_still_errs(&repo, &["validate", "--crds", &missing, "--no-kustomize"], 2, "no-crds");
    let failed = envelope(
        &repo.run(&["validate", "--crds", &missing, "--no-kustomize", "-o", "json"]),
        "ValidateResult",
        2,
    );
    assert!(first_error(&failed).contains("no-crds"), "{failed}");
    // A finding: the object's file and line in the envelope's diagnostics.
    let kcp = repo.file_starting("overlays/tenants/acme", "kamajicontrolplane");
    repo.replace(&kcp, "kind: KamajiControlPlane", "kind: KamajiControlPlanes");
    let run = repo.run(&["validate", "--crds", &crds, "--no-kustomize", "--format", "json"]);
    let findings = envelope(&run, "ValidateResult", 1);
    assert!(
        findings["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["severity"] == "error" && d["file"] == kcp.as_str()),
        "{findings}"
    );
    let quiet = repo.run(&["-q", "validate", "--crds", &crds, "--no-kustomize"]);
    assert_eq!(quiet.code, 1);
    assert!(quiet.stderr.contains(&format!("--> {kcp}")), "{}", quiet.stderr);
    assert!(quiet.stderr.contains("error(s)"), "{}", quiet.stderr);
}

#[test]
fn pin() {
    // A broken kaas.lock is refused before any registry is asked.
    let repo = Repo::example();
    repo.write("kaas.lock", "version: 1\nimages: {oops\n");
    quiet_still_errs(&repo, &["pin"], 1, "problem(s) found");
    let failed = envelope(&repo.run(&["pin", "--format", "json"]), "PinResult", 1);
    assert_eq!(failed["diagnostics"][0]["file"], "kaas.lock", "{failed}");
    // An unreachable registry: exit 2, the error with its causes in the envelope.
    let repo = Repo::example();
    repo.replace("kaas.yaml", "docker.io/clastix/kamaji", "127.0.0.1:9/clastix/kamaji");
    let run = repo.run(&["pin", "--timeout", "2", "-o", "json", "127.0.0.1:9/clastix/kamaji"]);
    let failed = envelope(&run, "PinResult", 2);
    assert!(first_error(&failed).contains("127.0.0.1:9"), "{failed}");
    assert_eq!(failed["written"], false);
}

/// The example's inputs committed on `main` in a fresh git repository.
fn committed_example() -> (Repo, tempfile::TempDir) {
    let repo = Repo::example();
    let home = tempfile::tempdir().unwrap();
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "-A"],
        &["commit", "-q", "-m", "inputs"],
    ] {
        let out = git(home.path(), repo.path()).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    (repo, home)
}

fn git(home: &Path, dir: &Path) -> Command {
    crate::common::git_cmd(home, dir)
}

fn pr(repo: &Repo, home: &Path, args: &[&str]) -> Run {
    crate::common::bin_in_home(home)
        .arg("--repo")
        .arg(repo.path())
        .args(args)
        .output()
        .unwrap()
        .into()
}

#[test]
fn pr_honours_locked_and_prints_one_envelope() {
    let (repo, home) = committed_example();
    repo.replace("tenants/acme.yaml", "version: v1.33.4", "version: v1.33.5");
    let branches = || {
        let out = git(home.path(), repo.path())
            .args(["branch", "--list"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // The example pins no image: --locked refuses, as `render --locked` does, and makes no
    // branch. Before issue 20 `pr` ignored --locked and proposed unpinned images.
    let refused = pr(&repo, home.path(), &["-q", "pr", "acme", "--locked"]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("has no digest in kaas.lock (--locked)"),
        "{}",
        refused.stderr
    );
    assert!(!branches().contains("acme"), "{}", branches());
    let failed = envelope(
        &pr(&repo, home.path(), &["pr", "acme", "--locked", "-o", "json"]),
        "PrResult",
        1,
    );
    assert!(first_error(&failed).contains("has no digest in kaas.lock"), "{failed}");
    let ok = envelope(
        &pr(&repo, home.path(), &["pr", "acme", "--format", "json"]),
        "PrResult",
        0,
    );
    assert_eq!(ok["tenant"], "acme");
    assert!(ok["branch"].as_str().unwrap().ends_with("acme"), "{ok}");
    assert_eq!(ok["commit"].as_str().unwrap().len(), 40, "{ok}");
    assert!(
        ok["changes"]
            .as_array()
            .unwrap()
            .contains(&Value::from("tenants/acme.yaml")),
        "{ok}"
    );
    assert!(ok["body"].as_str().unwrap().contains("acme"), "{ok}");
    // A name that cannot be a tenant: exit 1, the error under -q and in the envelope.
    quiet_still_errs(&repo, &["pr", "Not_A_Name"], 1, "`Not_A_Name` is not a tenant name");
    envelope(&repo.run(&["pr", "Not_A_Name", "-o", "json"]), "PrResult", 1);
}

#[test]
fn upgrade() {
    let repo = Repo::example();
    let ok = envelope(
        &repo.run(&["upgrade", "--kubernetes", "v1.33", "--dry-run", "--format", "json"]),
        "UpgradeResult",
        0,
    );
    assert_eq!(ok["target"], "v1.33", "{ok}");
    assert_eq!(ok["written"], false, "{ok}");
    let initech = ok["tenants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tenant"] == "initech")
        .unwrap()
        .clone();
    assert_eq!(initech["from"], "v1.32.9", "{ok}");
    assert_eq!(initech["to"], "v1.33.5", "{ok}");
    quiet_still_errs(
        &repo,
        &["upgrade", "--kubernetes", "nonsense"],
        1,
        "`nonsense` is not a Kubernetes version",
    );
    let failed = envelope(
        &repo.run(&["upgrade", "--kubernetes", "nonsense", "-o", "json"]),
        "UpgradeResult",
        1,
    );
    assert!(first_error(&failed).contains("nonsense"), "{failed}");
    // With --pr each tenant's `pr` document is one entry of the one document on stdout.
    let (committed, home) = committed_example();
    let run = pr(
        &committed,
        home.path(),
        &["upgrade", "--kubernetes", "v1.33", "--pr", "-o", "json"],
    );
    let doc = envelope(&run, "UpgradeResult", 0);
    assert_eq!(doc["written"], true, "{doc}");
    let prs = doc["pullRequests"].as_array().unwrap();
    let tenants: Vec<&str> = prs.iter().map(|p| p["tenant"].as_str().unwrap()).collect();
    assert_eq!(tenants, ["acme", "initech"], "{doc}");
    for p in prs {
        assert_eq!(p["kind"], "PrResult", "{p}");
        assert_eq!(p["apiVersion"], "kaas-gitops.dev/v1", "{p}");
        assert!(validator().is_valid(p), "{}", p["tenant"]);
        assert!(
            p["body"].as_str().unwrap().contains("+    version: v1.33.5"),
            "{}",
            p["title"]
        );
    }
}

#[test]
fn backup_restore_plan() {
    let repo = Repo::example();
    let ok = envelope(
        &repo.run(&["backup", "restore-plan", "acme", "--format", "json"]),
        "RestorePlanResult",
        0,
    );
    assert!(
        ok["script"]
            .as_str()
            .unwrap()
            .contains("flux -n flux-system suspend kustomization kaas-tenant-acme")
    );
    // The example pins no image: the restore would run etcd by tag, and says so.
    assert!(
        ok["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["severity"] == "warning" && d["message"].as_str().unwrap().contains("no digest in kaas.lock")),
        "{}",
        ok["diagnostics"]
    );
    quiet_still_errs(&repo, &["backup", "restore-plan", "nobody"], 1, "no tenant `nobody`");
    let failed = envelope(
        &repo.run(&["backup", "restore-plan", "nobody", "-o", "json"]),
        "RestorePlanResult",
        1,
    );
    assert!(first_error(&failed).contains("no tenant `nobody`"), "{failed}");
}

#[test]
fn status_and_wait_fail_in_one_envelope() {
    // Nothing rendered: exit 1 with the error, which -q used to hide.
    let empty = Repo::example();
    for (command, kind) in [("status", "StatusResult"), ("wait", "WaitResult")] {
        quiet_still_errs(&empty, &[command], 1, "nothing rendered");
        let failed = envelope(&empty.run(&[command, "-o", "json"]), kind, 1);
        assert!(first_error(&failed).contains("nothing rendered"), "{failed}");
    }
    // An unreachable cluster: exit 2.
    let repo = Repo::example();
    assert_eq!(repo.run(&["render"]).code, 0);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    std::fs::write(
        &config,
        "apiVersion: v1\nkind: Config\ncurrent-context: lab\nclusters: [{name: lab, cluster: {server: 'https://127.0.0.1:9'}}]\nusers: [{name: lab, user: {token: t}}]\ncontexts: [{name: lab, context: {cluster: lab, user: lab}}]\n",
    )
    .unwrap();
    let config = config.to_string_lossy();
    for (command, kind) in [("status", "StatusResult"), ("wait", "WaitResult")] {
        let args = [command, "--kubeconfig", &config, "--revision", "0123456"];
        quiet_still_errs(&repo, &args, 2, "cannot reach the management cluster");
        let mut json = args.to_vec();
        json.extend(["--format", "json"]);
        let failed = envelope(&repo.run(&json), kind, 2);
        assert!(
            first_error(&failed).contains("cannot reach the management cluster"),
            "{failed}"
        );
    }
}

#[test]
fn verbosity_counts() {
    let repo = Repo::example();
    let once = repo.run(&["-v", "render"]);
    assert_eq!(once.code, 0, "{}", once.stderr);
    assert!(once.stderr.contains("timings: read inputs"), "{}", once.stderr);
    assert!(!once.stderr.contains("\ntook "), "{}", once.stderr);
    let twice = repo.run(&["-vv", "render"]);
    assert_eq!(twice.code, 0, "{}", twice.stderr);
    assert!(twice.stderr.contains("\ntook "), "{}", twice.stderr);
    let quiet = repo.run(&["-q", "render"]);
    assert_eq!(quiet.stderr, "", "-q hides progress and warnings");
}

#[test]
fn completions_come_from_the_command_line_definitions() {
    let subcommands = [
        "init",
        "render",
        "diff",
        "pr",
        "upgrade",
        "pin",
        "validate",
        "schema",
        "watch",
        "backup",
        "status",
        "wait",
        "kubeconfig",
        "completions",
        "man",
    ];
    let repo = Repo::empty();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let run = repo.run(&["completions", shell]);
        assert_eq!(run.code, 0, "{shell}: {}", run.stderr);
        for s in subcommands {
            assert!(run.stdout.contains(s), "{shell}: no `{s}` in the script");
        }
        assert!(run.stdout.contains("format"), "{shell}: no `--format`");
    }
    let bash = repo.run(&["completions", "bash"]);
    let file = repo.path().join("kaas-gitops.bash");
    std::fs::write(&file, &bash.stdout).unwrap();
    let check = Command::new("bash").arg("-n").arg(&file).output().expect("bash runs");
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
    // Sourced, it completes the subcommands.
    let script = format!(
        "source {}; COMP_WORDS=(kaas-gitops ren); COMP_CWORD=1; _kaas__gitops kaas-gitops ren kaas-gitops; echo \"${{COMPREPLY[@]}}\"",
        file.display()
    );
    let out = Command::new("bash").arg("-c").arg(script).output().expect("bash runs");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "render",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_man_page_lists_every_command() {
    let repo = Repo::empty();
    let run = repo.run(&["man"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with(".ie") || run.stdout.contains(".TH kaas-gitops 1"),
        "{}",
        &run.stdout[..200]
    );
    for s in [
        "render",
        "diff",
        "pr",
        "upgrade",
        "pin",
        "validate",
        "watch",
        "status",
        "wait",
        "kubeconfig",
        "completions",
    ] {
        assert!(
            run.stdout
                .contains(&format!(".SH \"KAAS-GITOPS {}\"", s.to_uppercase())),
            "no section for `{s}`"
        );
    }
    assert!(run.stdout.contains(".SH \"KAAS-GITOPS BACKUP RESTORE-PLAN\""));
    // Rendered by man itself where it is installed.
    let file = repo.path().join("kaas-gitops.1");
    std::fs::write(&file, &run.stdout).unwrap();
    let man = Command::new("man")
        .arg("-l")
        .arg(&file)
        .env("MANWIDTH", "100")
        .env("LC_ALL", "C")
        .output();
    if let Ok(out) = man
        && out.status.success()
    {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("lock-timeout"), "{text}");
        assert!(text.contains("KAAS-GITOPS BACKUP RESTORE-PLAN"), "{text}");
    }
}

#[test]
fn a_run_stopped_before_its_command_prints_the_envelope_with_the_error_and_hint() {
    let repo = Repo::example();
    let _guard = kaas_gitops::repo::process_lock::acquire(repo.path(), std::time::Duration::ZERO).expect("the lock");
    let failed = envelope(
        &repo.run(&["render", "--lock-timeout", "0", "-o", "json"]),
        "RenderResult",
        2,
    );
    let d = &failed["diagnostics"][0];
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .starts_with("another kaas-gitops run (pid "),
        "{failed}"
    );
    assert!(d["hint"].as_str().unwrap().starts_with("waited"), "{failed}");
    assert_eq!(
        failed.as_object().unwrap().len(),
        4,
        "only the envelope's fields: {failed}"
    );
}
