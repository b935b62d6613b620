//! Kubernetes versions against what is deployed (`render`, `validate`) and `upgrade`: one
//! allowed step per run, written into the tenant files as text, in waves. Issue 22.

use std::path::Path;

use crate::common::{Repo, Run, crds_dir, git};

/// The example repository (waves `canary` = acme, `rest`; releases v1.32.9, v1.33.5, v1.34.2),
/// rendered: its overlays are what is deployed.
#[track_caller]
fn rendered() -> Repo {
    let repo = Repo::example();
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    repo
}

#[test]
fn render_refuses_a_downgrade_at_the_version_line_naming_the_deployed_version_and_the_next_step() {
    let repo = rendered();
    let err = repo.assert_edit_refused(
        "tenants/acme.yaml",
        |t| t.replace("version: v1.33.4", "version: v1.31.2"),
        "tenants/acme.yaml:11:14",
        "v1.31.2 would take tenant `acme` down a minor from v1.33.4, the deployed version; Kamaji's webhook refuses a lower minor",
    );
    assert!(
        err.contains("hint: keep `version: v1.33.4`; the next allowed step up is v1.34.2 (`kaas-gitops upgrade --kubernetes v1.34 acme`)"),
        "{err}"
    );
    // A lower patch of the same minor is a rollback Kamaji allows (its webhook zeroes the
    // patches before it compares): rendered, with a warning at the line.
    repo.replace("tenants/acme.yaml", "version: v1.31.2", "version: v1.33.3");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("warning: v1.33.3 rolls tenant `acme` back from v1.33.4, the deployed patch"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("--> tenants/acme.yaml:11:14"), "{}", run.stderr);
    let kcp = repo.object("overlays/tenants/acme/kamajicontrolplane-acme.yaml");
    assert_eq!(kcp["spec"]["version"], "v1.33.3");
}

#[test]
fn render_refuses_a_skipped_minor_and_takes_one_minor() {
    let repo = rendered();
    let err = repo.assert_edit_refused(
        "tenants/initech.yaml",
        |t| t.replace("version: v1.32.9", "version: v1.34.1"),
        "tenants/initech.yaml:8:14",
        "v1.34.1 skips a minor: tenant `initech` runs v1.32.9",
    );
    assert!(
        err.contains("hint: the next allowed step is v1.33.5; once Flux applied it, go on towards v1.34.1"),
        "{err}"
    );
    repo.replace("tenants/initech.yaml", "version: v1.34.1", "version: v1.33.0");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let kcp = repo.object("overlays/tenants/initech/kamajicontrolplane-initech.yaml");
    assert_eq!(kcp["spec"]["version"], "v1.33.0");
}

#[test]
fn a_new_tenant_starts_at_any_supported_version() {
    let repo = rendered();
    let initech = repo.read("tenants/initech.yaml");
    repo.write(
        "tenants/newco.yaml",
        &initech.replace("initech", "newco").replace("v1.32.9", "v1.31.2"),
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let kcp = repo.object("overlays/tenants/newco/kamajicontrolplane-newco.yaml");
    assert_eq!(kcp["spec"]["version"], "v1.31.2");
}

/// `path:line` of the first line of `path` containing `needle`.
fn line_of(repo: &Repo, path: &str, needle: &str) -> String {
    let line = repo
        .read(path)
        .lines()
        .position(|l| l.contains(needle))
        .expect("the needle");
    format!("{path}:{}", line + 1)
}

#[test]
fn validate_refuses_workers_newer_than_or_four_minors_behind_their_control_plane() {
    let crds = crds_dir();
    let repo = rendered();
    let md = "overlays/tenants/acme/machinedeployment-acme-md-0.yaml";
    let original = repo.read(md);
    for (version, message) in [
        (
            "v1.34.0",
            "workers: a kubelet at v1.34.0 would be newer than its control plane at v1.33.4",
        ),
        (
            "v1.29.0",
            "workers: a kubelet at v1.29.0 is more than 3 minors older than its control plane at v1.33.4",
        ),
    ] {
        repo.write(
            md,
            &original.replace("version: v1.33.4", &format!("version: {version}")),
        );
        let run = repo.run(&["validate", "--crds", crds.to_str().unwrap(), "--no-kustomize"]);
        assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(all.contains(message), "{all}");
        assert!(all.contains(&line_of(&repo, md, "version:")), "{all}");
    }
    // Three minors behind is within the policy.
    repo.write(md, &original.replace("version: v1.33.4", "version: v1.30.0"));
    let run = repo.run(&["validate", "--crds", crds.to_str().unwrap(), "--no-kustomize"]);
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(!all.contains("workers: a kubelet"), "{all}");
}

#[test]
fn upgrade_changes_only_the_version_scalar_renders_and_prints_the_plan() {
    let repo = rendered();
    // Comments, flow style, odd spacing and the quoting of the version all survive.
    let globex = repo.read("tenants/globex.yaml");
    let acme = format!(
        "# acme: payments, upgraded by the canary wave\n{}",
        repo.read("tenants/acme.yaml")
            .replace("version: v1.33.4", "version:   'v1.33.4'   # pinned by ops")
    );
    repo.write("tenants/acme.yaml", &acme);
    assert_eq!(repo.run(&["render"]).code, 0);
    let run = repo.run(&["upgrade", "--kubernetes", "v1.34", "acme", "globex"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // A new minor: the control plane steps, the pool that follows it is held where it runs.
    assert_eq!(
        repo.read("tenants/acme.yaml"),
        acme.replace(
            "'v1.33.4'   # pinned by ops\n",
            "'v1.34.2'   # pinned by ops\n    workersVersion: v1.33.4\n"
        ),
        "only the version changed and the hold was added"
    );
    // A patch step holds nothing.
    assert_eq!(
        repo.read("tenants/globex.yaml"),
        globex.replace("\"v1.34.1\"", "\"v1.34.2\"")
    );
    assert_eq!(
        run.stdout,
        "upgrade to v1.34:\n  acme    v1.33.4 -> v1.34.2  (control plane first; pools held at v1.33.4)\n  globex  v1.34.1 -> v1.34.2\n2 to move, 1 with further steps after this one, 0 already at v1.34\n"
    );
    let kcp = repo.object("overlays/tenants/acme/kamajicontrolplane-acme.yaml");
    assert_eq!(kcp["spec"]["version"], "v1.34.2");
    let md = repo.object("overlays/tenants/acme/machinedeployment-acme-md-0.yaml");
    assert_eq!(md["spec"]["template"]["spec"]["version"], "v1.33.4", "the workers wait");
    assert_eq!(repo.run(&["render", "--check"]).code, 0, "the overlays are rendered");
    // The pools' step needs the cluster's word that the control plane runs v1.34.2: without a
    // cluster the run stops at the hold, naming what to do, and writes nothing.
    let before = repo.snapshot();
    let blocked = repo.run(&[
        "upgrade",
        "--kubernetes",
        "v1.34",
        "acme",
        "--kubeconfig",
        "/nonexistent/kubeconfig",
    ]);
    assert_eq!(blocked.code, 1, "{}", blocked.stderr);
    assert!(
        blocked.stderr.contains("--> tenants/acme.yaml:13:21"),
        "{}",
        blocked.stderr
    );
    assert!(
        blocked.stderr.contains(
            "tenant `acme`: its pools wait at v1.33.4 for the control plane at v1.34.2, and the management cluster cannot say whether it runs it"
        ),
        "{}",
        blocked.stderr
    );
    assert!(blocked.stderr.contains("--no-cluster-check"), "{}", blocked.stderr);
    assert_eq!(before, repo.snapshot());
    // Checked by hand: the pools follow the control plane again.
    let pools = repo.run(&["upgrade", "--kubernetes", "v1.34", "acme", "--no-cluster-check"]);
    assert_eq!(pools.code, 0, "{}", pools.stderr);
    assert_eq!(
        pools.stdout,
        "upgrade to v1.34:\n  acme  pools v1.33.4 -> v1.34.2  (the control plane runs v1.34.2)\n1 to move, 0 with further steps after this one, 0 already at v1.34\n"
    );
    assert_eq!(repo.read("tenants/acme.yaml"), acme.replace("'v1.33.4'", "'v1.34.2'"));
    let md = repo.object("overlays/tenants/acme/machinedeployment-acme-md-0.yaml");
    assert_eq!(md["spec"]["template"]["spec"]["version"], "v1.34.2");
    // Run again: nothing left to do, nothing written.
    let before = repo.snapshot();
    let again = repo.run(&["upgrade", "--kubernetes", "v1.34", "acme", "globex"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again.stdout.contains("  acme    v1.34.2  already at v1.34\n"),
        "{}",
        again.stdout
    );
    assert_eq!(before, repo.snapshot());
}

#[test]
fn upgrade_takes_one_minor_per_run_and_refuses_a_step_it_cannot_name() {
    let repo = rendered();
    let run = repo.run(&[
        "upgrade",
        "--kubernetes",
        "v1.34",
        "--selector",
        "team=payments",
        "--dry-run",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("  acme  v1.33.4 -> v1.34.2  (control plane first; pools held at v1.33.4)\n"),
        "{}",
        run.stdout
    );
    let run = repo.run(&["upgrade", "--kubernetes", "v1.34", "initech"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("  initech  v1.32.9 -> v1.33.5  (control plane first; pools held at v1.32.9)  (then further steps to v1.34)\n"),
        "{}",
        run.stdout
    );
    assert!(repo.read("tenants/initech.yaml").contains("version: v1.33.5"));
    // With no v1.33 patch listed, a tenant at v1.32 has no step to take: refused at its line,
    // with the way out, and nothing is written for any tenant.
    let repo = rendered();
    repo.replace("kaas.yaml", "[v1.32.9, v1.33.5, v1.34.2]", "[v1.34.2]");
    let before = repo.snapshot();
    let run = repo.run(&["upgrade", "--kubernetes", "v1.34"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("--> tenants/initech.yaml:8:14"), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "tenant `initech` at v1.32.9 cannot move towards v1.34: no v1.33 release is known to step through"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("hint: list the v1.33 patch to use in `spec.upgrades.kubernetesReleases`"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("nothing was written"), "{}", run.stderr);
    assert_eq!(before, repo.snapshot());
}

fn upgrade(repo: &Repo, home: &Path, args: &[&str]) -> Run {
    crate::common::bin_in_home(home)
        .arg("--repo")
        .arg(repo.path())
        .arg("upgrade")
        .args(args)
        .output()
        .expect("the binary runs")
        .into()
}

#[test]
fn a_wave_waits_for_the_committed_files_of_the_waves_before_it() {
    let repo = rendered();
    let home = tempfile::tempdir().unwrap();
    let commit = |msg: &str| {
        git(home.path(), repo.path(), &["add", "-A"]);
        git(home.path(), repo.path(), &["commit", "-q", "-m", msg]);
    };
    git(home.path(), repo.path(), &["init", "-q", "-b", "main"]);
    commit("fleet");
    let before = repo.snapshot();
    let run = upgrade(&repo, home.path(), &["--kubernetes", "v1.34", "--wave", "rest"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("--> tenants/acme.yaml:11:14"), "{}", run.stderr);
    assert!(
        run.stderr.contains("wave `rest` cannot start: tenant `acme` of the earlier wave `canary` is at v1.33.4 in the last commit, not at v1.34"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("hint: finish wave `canary` first"),
        "{}",
        run.stderr
    );
    assert_eq!(before, repo.snapshot(), "a refused wave writes nothing");

    let run = upgrade(&repo, home.path(), &["--kubernetes", "v1.34", "--wave", "canary"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "upgrade to v1.34 (wave `canary`):\n  acme  v1.33.4 -> v1.34.2  (control plane first; pools held at v1.33.4)\n1 to move, 1 with further steps after this one, 0 already at v1.34\n"
    );
    // Edited but not committed: the next wave still waits.
    let run = upgrade(&repo, home.path(), &["--kubernetes", "v1.34", "--wave", "rest"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    commit("canary's control plane to v1.34");
    // Committed, but the canary's pools are still held for its control plane: not arrived.
    let run = upgrade(&repo, home.path(), &["--kubernetes", "v1.34", "--wave", "rest"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("tenant `acme` of the earlier wave `canary` has its control plane at v1.34.2 and its pools still held at v1.33.4"),
        "{}",
        run.stderr
    );
    let run = upgrade(
        &repo,
        home.path(),
        &["--kubernetes", "v1.34", "--wave", "canary", "--no-cluster-check"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    commit("canary's pools to v1.34");
    let run = upgrade(&repo, home.path(), &["--kubernetes", "v1.34", "--wave", "rest"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "upgrade to v1.34 (wave `rest`):\n  globex   v1.34.1 -> v1.34.2\n  initech  v1.32.9 -> v1.33.5  (control plane first; pools held at v1.32.9)  (then further steps to v1.34)\n2 to move, 1 with further steps after this one, 0 already at v1.34\n"
    );
}

#[test]
fn render_judges_against_the_committed_overlay_not_an_uncommitted_render() {
    let repo = rendered();
    let home = tempfile::tempdir().unwrap();
    let commit = |msg: &str| {
        git(home.path(), repo.path(), &["add", "-A"]);
        git(home.path(), repo.path(), &["commit", "-q", "-m", msg]);
    };
    git(home.path(), repo.path(), &["init", "-q", "-b", "main"]);
    commit("fleet at v1.32.9");
    repo.replace("tenants/initech.yaml", "version: v1.32.9", "version: v1.33.5");
    assert_eq!(repo.run(&["render"]).code, 0);
    // Rendered, never committed: no cluster saw v1.33.5, so v1.34 is still two minors away.
    repo.assert_edit_refused(
        "tenants/initech.yaml",
        |t| t.replace("version: v1.33.5", "version: v1.34.2"),
        "tenants/initech.yaml:8:14",
        "v1.34.2 skips a minor: tenant `initech` runs v1.32.9",
    );
    repo.replace("tenants/initech.yaml", "version: v1.34.2", "version: v1.33.5");
    commit("initech to v1.33.5");
    repo.replace("tenants/initech.yaml", "version: v1.33.5", "version: v1.34.2");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn a_pool_version_follows_the_kubelet_skew_rules() {
    let repo = rendered();
    let pool = "      machine: {cpus: 2, memoryMiB: 4096, diskGiB: 40}\n";
    let err = repo.assert_edit_refused(
        "tenants/acme.yaml",
        |t| t.replace(pool, &format!("{pool}      version: v1.34.0\n")),
        "tenants/acme.yaml:37:16",
        "pool `md-0`: a kubelet at v1.34.0 would be newer than its control plane at v1.33.4",
    );
    assert!(err.contains("hint: upgrade the control plane first"), "{err}");
    // Three minors behind is allowed.
    repo.replace("kaas.yaml", "min: v1.31.0", "min: v1.30.0");
    repo.replace(
        "tenants/acme.yaml",
        "      version: v1.34.0\n",
        "      version: v1.30.0\n",
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let md = repo.object("overlays/tenants/acme/machinedeployment-acme-md-0.yaml");
    assert_eq!(md["spec"]["template"]["spec"]["version"], "v1.30.0");
    // The control plane one minor up would leave the pool four minors behind: refused at the
    // pool, and `upgrade` writes nothing.
    let before = repo.snapshot();
    let run = repo.run(&["upgrade", "--kubernetes", "v1.34", "acme"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("--> tenants/acme.yaml:37:16"), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "pool `md-0`: a kubelet at v1.30.0 is more than 3 minors older than its control plane at v1.34.2"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("hint: move the pool to v1.31.x or newer"),
        "{}",
        run.stderr
    );
    assert_eq!(before, repo.snapshot());
}

#[test]
fn in_topology_mode_the_clusters_version_is_what_is_deployed() {
    let repo = Repo::fixture("topology");
    assert_eq!(repo.run(&["render"]).code, 0);
    repo.assert_edit_refused(
        "tenants/epsilon.yaml",
        |t| t.replace("version: v1.32.9", "version: v1.34.1"),
        "tenants/epsilon.yaml:8:14",
        "v1.34.1 skips a minor: tenant `epsilon` runs v1.32.9",
    );
}

#[test]
fn upgrade_pr_proposes_each_moved_tenant_on_its_own_branch() {
    let repo = rendered();
    let home = tempfile::tempdir().unwrap();
    git(home.path(), repo.path(), &["init", "-q", "-b", "main"]);
    git(home.path(), repo.path(), &["add", "-A"]);
    git(home.path(), repo.path(), &["commit", "-q", "-m", "fleet"]);
    let run = upgrade(&repo, home.path(), &["--kubernetes", "v1.34", "acme", "globex", "--pr"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.starts_with("upgrade to v1.34:\n"), "{}", run.stdout);
    for (tenant, line) in [
        ("acme", "    version: v1.34.2\n"),
        ("globex", "    version: \"v1.34.2\"\n"),
    ] {
        let file = git(
            home.path(),
            repo.path(),
            &["show", &format!("kaas/{tenant}:tenants/{tenant}.yaml")],
        );
        assert!(file.contains(line), "{file}");
        let kcp = git(
            home.path(),
            repo.path(),
            &[
                "show",
                &format!("kaas/{tenant}:overlays/tenants/{tenant}/kamajicontrolplane-{tenant}.yaml"),
            ],
        );
        assert!(kcp.contains("version: v1.34.2"), "{kcp}");
        // One tenant per branch: the other tenant's file is as on main.
        let other = if tenant == "acme" { "globex" } else { "acme" };
        let theirs = git(
            home.path(),
            repo.path(),
            &["diff", "--name-only", "main", &format!("kaas/{tenant}")],
        );
        assert!(!theirs.contains(&format!("tenants/{other}")), "{theirs}");
    }
    assert_eq!(git(home.path(), repo.path(), &["branch", "--show-current"]), "main\n");
}

/// acme (wave `canary`) may move on weekend nights in Berlin; the other tenants any time.
const ACME_WINDOW: &str = "  kubernetes:\n    version: v1.33.4\n  maintenanceWindows:\n    - {days: [sat, sun], start: \"02:00\", duration: 4h, timeZone: Europe/Berlin}\n";

#[test]
fn upgrade_writes_a_tenants_step_only_inside_its_maintenance_window() {
    let repo = rendered();
    repo.replace(
        "tenants/acme.yaml",
        "  kubernetes:\n    version: v1.33.4\n",
        ACME_WINDOW,
    );
    assert_eq!(repo.run(&["render"]).code, 0);
    let acme = repo.read("tenants/acme.yaml");
    // Friday 19:00 UTC (20:00 in Berlin): acme's step is planned, not written; globex moves.
    let friday = "2026-12-04T19:00:00Z";
    let run = repo.run(&["upgrade", "--kubernetes", "v1.34", "acme", "globex", "--now", friday]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "upgrade to v1.34:\n  acme    v1.33.4 -> v1.34.2  not written: outside its maintenance window, which opens next Sat 2026-12-05 02:00 Europe/Berlin (2026-12-05T01:00:00Z)\n  globex  v1.34.1 -> v1.34.2\n1 to move, 0 with further steps after this one, 0 already at v1.34, 1 outside their maintenance window\n"
    );
    assert_eq!(repo.read("tenants/acme.yaml"), acme, "nothing written for acme");
    assert!(repo.read("tenants/globex.yaml").contains("\"v1.34.2\""));
    let kcp = repo.object("overlays/tenants/acme/kamajicontrolplane-acme.yaml");
    assert_eq!(kcp["spec"]["version"], "v1.33.4");
    // The same plan as JSON says when the window opens, in UTC and in its zone.
    let json = repo.run(&[
        "upgrade",
        "--kubernetes",
        "v1.34",
        "acme",
        "--now",
        friday,
        "--dry-run",
        "-o",
        "json",
    ]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    assert_eq!(doc["kind"], "UpgradeResult");
    let line = &doc["tenants"][0];
    assert_eq!(line["tenant"], "acme");
    assert_eq!(line["outsideWindow"], true);
    assert_eq!(
        line["maintenanceWindow"],
        serde_json::json!({"open": false, "nextOpens": "2026-12-05T01:00:00Z",
            "nextOpensLocal": "2026-12-05T02:00:00+01:00[Europe/Berlin]"})
    );
    // Saturday 02:30 in Berlin, through the environment as a CI job would set it: acme moves.
    let saturday = std::ffi::OsStr::new("2026-12-05T01:30:00Z");
    let run = repo.run_with(&["upgrade", "--kubernetes", "v1.34", "acme"], &[("KAAS_NOW", saturday)]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "upgrade to v1.34:\n  acme  v1.33.4 -> v1.34.2  (control plane first; pools held at v1.33.4)\n1 to move, 1 with further steps after this one, 0 already at v1.34\n"
    );
    assert!(
        repo.read("tenants/acme.yaml")
            .contains("version: v1.34.2\n    workersVersion: v1.33.4\n")
    );
    // Releasing the held pools rolls machines: it waits for the window too, without asking
    // any cluster.
    let before = repo.snapshot();
    let run = repo.run(&[
        "upgrade",
        "--kubernetes",
        "v1.34",
        "acme",
        "--now",
        "2026-12-06T05:00:00Z",
        "--kubeconfig",
        "/nonexistent",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains(
            "  acme  pools v1.33.4 -> v1.34.2  not written: outside its maintenance window, which opens next Sat 2026-12-12 02:00 Europe/Berlin (2026-12-12T01:00:00Z)\n"
        ),
        "{}",
        run.stdout
    );
    assert_eq!(before, repo.snapshot());
}

#[test]
fn a_waves_window_governs_its_tenants_unless_they_set_their_own() {
    let repo = rendered();
    repo.replace(
        "kaas.yaml",
        "      - name: rest\n",
        "      - name: rest\n        maintenanceWindows: [{days: [mon, tue, wed, thu, fri], start: \"22:00\", duration: 90m, timeZone: America/New_York}]\n",
    );
    repo.replace(
        "tenants/acme.yaml",
        "  kubernetes:\n    version: v1.33.4\n",
        ACME_WINDOW,
    );
    assert_eq!(repo.run(&["render"]).code, 0);
    // Friday 19:00 UTC is 14:00 in New York: the wave `rest` (globex, initech) waits until
    // 22:00 there, 03:00 UTC; acme's own window replaces nothing of theirs.
    let run = repo.run(&[
        "upgrade",
        "--kubernetes",
        "v1.34",
        "--dry-run",
        "--now",
        "2026-12-04T19:00:00Z",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains(
            "  globex   v1.34.1 -> v1.34.2  not written: outside its maintenance window, which opens next Fri 2026-12-04 22:00 America/New_York (2026-12-05T03:00:00Z)\n"
        ),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("  acme     v1.33.4 -> v1.34.2  not written: outside its maintenance window, which opens next Sat 2026-12-05 02:00 Europe/Berlin"), "{}", run.stdout);
    // 22:30 in New York: the wave's window is open.
    let run = repo.run(&[
        "upgrade",
        "--kubernetes",
        "v1.34",
        "--dry-run",
        "--now",
        "2026-12-05T03:30:00Z",
    ]);
    assert!(run.stdout.contains("  globex   v1.34.1 -> v1.34.2\n"), "{}", run.stdout);
}

#[test]
fn invalid_maintenance_windows_are_all_reported_at_their_fields() {
    let repo = rendered();
    repo.replace(
        "tenants/acme.yaml",
        "  kubernetes:\n    version: v1.33.4\n",
        "  kubernetes:\n    version: v1.33.4\n  maintenanceWindows:\n    - {days: [sat, caturday], start: \"25:00\", duration: 0h, timeZone: Europe/Berln}\n",
    );
    let before = repo.snapshot();
    let run = repo.run(&["upgrade", "--kubernetes", "v1.34"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let expect = |run: &crate::common::Run, cases: &[(&str, &str, &str, &str)]| {
        for (message, location, field, hint) in cases {
            let at = run
                .stderr
                .find(message)
                .unwrap_or_else(|| panic!("{message}:\n{}", run.stderr));
            let rest = &run.stderr[at..];
            let block = &rest[..rest[1..].find("error:").map_or(rest.len(), |e| e + 1)];
            assert!(block.contains(&format!("--> {location}\n")), "{location}:\n{block}");
            assert!(block.contains(&format!("= field: `{field}`")), "{field}:\n{block}");
            assert!(block.contains(hint), "{hint}:\n{block}");
        }
    };
    expect(
        &run,
        &[
            (
                "error: `caturday` is not a day of the week",
                "tenants/acme.yaml:13:20",
                "spec.maintenanceWindows[0].days[1]",
                "hint: one of mon, tue, wed, thu, fri, sat, sun",
            ),
            (
                "error: `25:00` is not a time of day",
                "tenants/acme.yaml:13:38",
                "spec.maintenanceWindows[0].start",
                "hint: write `HH:MM` on a 24-hour clock, from `00:00` to `23:59`",
            ),
            (
                "error: `0h` is not a window length",
                "tenants/acme.yaml:13:57",
                "spec.maintenanceWindows[0].duration",
                "more than zero and at most a week",
            ),
            (
                "error: `Europe/Berln` is not a known time zone",
                "tenants/acme.yaml:13:71",
                "spec.maintenanceWindows[0].timeZone",
                "did you mean `Europe/Berlin`?",
            ),
        ],
    );
    assert!(
        run.stderr.contains("error: 4 problem(s) found; nothing was written"),
        "{}",
        run.stderr
    );
    assert_eq!(before, repo.snapshot(), "nothing written");
    // A wave's windows are checked in kaas.yaml, and `render` refuses them too.
    let repo = rendered();
    repo.replace(
        "kaas.yaml",
        "      - name: rest\n",
        "      - name: rest\n        maintenanceWindows: [{days: [], start: \"01:00\", duration: 200h, timeZone: UTC}]\n",
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    expect(
        &run,
        &[
            (
                "error: a window needs at least one day",
                "kaas.yaml:62:37",
                "spec.upgrades.waves[1].maintenanceWindows[0].days",
                "leave `days` out for every day",
            ),
            (
                "error: `200h` is not a window length",
                "kaas.yaml:62:67",
                "spec.upgrades.waves[1].maintenanceWindows[0].duration",
                "`168h`",
            ),
        ],
    );
    // `--now` that is not a time is named with what would be.
    let run = repo.run(&["upgrade", "--kubernetes", "v1.34", "--now", "saturday"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("error: `--now saturday` is not a time"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("e.g. `2026-12-05T01:30:00Z`"), "{}", run.stderr);
}

#[test]
fn upgrade_patch_moves_each_tenant_to_the_newest_patch_of_its_minor_once() {
    let repo = rendered();
    // acme's window is closed at this instant: its patch waits for it.
    repo.replace(
        "tenants/acme.yaml",
        "  kubernetes:\n    version: v1.33.4\n",
        ACME_WINDOW,
    );
    assert_eq!(repo.run(&["render"]).code, 0);
    let friday = "2026-12-04T19:00:00Z";
    let run = repo.run(&["upgrade", "--patch", "--now", friday]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "upgrade to the newest listed patch:\n  acme     v1.33.4 -> v1.33.5  not written: outside its maintenance window, which opens next Sat 2026-12-05 02:00 Europe/Berlin (2026-12-05T01:00:00Z)\n  globex   v1.34.1 -> v1.34.2\n  initech  v1.32.9  already at the newest listed patch\n1 to move, 0 with further steps after this one, 1 already at the newest listed patch, 1 outside their maintenance window\n"
    );
    assert!(repo.read("tenants/acme.yaml").contains("version: v1.33.4\n"));
    assert!(repo.read("tenants/globex.yaml").contains("\"v1.34.2\""));
    // In the window: acme's control plane and the pools that follow it take the patch
    // together (the skew policy is about minors: nothing is held).
    let run = repo.run(&["upgrade", "--patch", "--now", "2026-12-05T01:30:00Z"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("  acme     v1.33.4 -> v1.33.5\n"), "{}", run.stdout);
    let acme = repo.read("tenants/acme.yaml");
    assert!(acme.contains("    version: v1.33.5\n  maintenanceWindows:"), "{acme}");
    let kcp = repo.object("overlays/tenants/acme/kamajicontrolplane-acme.yaml");
    assert_eq!(kcp["spec"]["version"], "v1.33.5");
    let md = repo.object("overlays/tenants/acme/machinedeployment-acme-md-0.yaml");
    assert_eq!(md["spec"]["template"]["spec"]["version"], "v1.33.5");
    // Idempotent: the second run finds every tenant at its newest patch and writes nothing.
    let before = repo.snapshot();
    let run = repo.run(&["upgrade", "--patch", "--now", "2026-12-05T01:30:00Z", "-o", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(doc["target"], "patch");
    assert_eq!(doc["written"], false);
    assert!(
        doc["tenants"].as_array().unwrap().iter().all(|t| t["to"].is_null()),
        "{doc}"
    );
    assert_eq!(before, repo.snapshot());
    // One goal per run.
    let run = repo.run(&["upgrade", "--patch", "--kubernetes", "v1.34"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--kubernetes"), "{}", run.stderr);
}

#[test]
fn a_patch_wave_waits_for_the_earlier_waves_newest_patches_in_the_last_commit() {
    let repo = rendered();
    let home = tempfile::tempdir().unwrap();
    let commit = |msg: &str| {
        git(home.path(), repo.path(), &["add", "-A"]);
        git(home.path(), repo.path(), &["commit", "-q", "-m", msg]);
    };
    git(home.path(), repo.path(), &["init", "-q", "-b", "main"]);
    commit("fleet");
    let run = upgrade(&repo, home.path(), &["--patch", "--wave", "rest"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("wave `rest` cannot start: tenant `acme` of the earlier wave `canary` is at v1.33.4 in the last commit, not at the newest listed patch of its minor, v1.33.5"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("`kaas-gitops upgrade --patch --wave canary`"),
        "{}",
        run.stderr
    );
    assert_eq!(upgrade(&repo, home.path(), &["--patch", "--wave", "canary"]).code, 0);
    commit("canary to its newest patch");
    let run = upgrade(&repo, home.path(), &["--patch", "--wave", "rest"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("  globex   v1.34.1 -> v1.34.2\n"), "{}", run.stdout);
}

/// What the management cluster double (tests/it/support/fleet_api.py) reports for `tenant`: its
/// KamajiControlPlane asking for `spec` and running `runs`, and each of its `pools`' (name,
/// `replicas`) MachineDeployment asking for `pool`, `up_to_date` of its machines at that
/// version (`replicas` `None`: an autoscaled pool of one machine, without `spec.replicas`).
fn on_the_cluster(
    state: &Path,
    tenant: &str,
    spec: &str,
    runs: &str,
    pool: &str,
    pools: &[(&str, Option<u64>)],
    up_to_date: u64,
) {
    let dir = state.join(tenant);
    std::fs::create_dir_all(&dir).unwrap();
    let kcp = serde_json::json!([{"apiVersion": "controlplane.cluster.x-k8s.io/v1alpha2", "kind": "KamajiControlPlane",
        "metadata": {"name": tenant, "namespace": tenant, "generation": 2},
        "spec": {"version": spec},
        "status": {"observedGeneration": 2, "ready": true, "version": runs,
            "initialization": {"controlPlaneInitialized": true},
            "conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": ""}]}}]);
    std::fs::write(dir.join("kamajicontrolplanes.json"), kcp.to_string()).unwrap();
    let mds: Vec<serde_json::Value> = pools
        .iter()
        .map(|(name, replicas)| {
            let n = replicas.unwrap_or(1);
            let mut md = serde_json::json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
                "metadata": {"name": format!("{tenant}-{name}"), "namespace": tenant, "generation": 3},
                "spec": {"template": {"spec": {"version": pool}}},
                "status": {"observedGeneration": 3, "replicas": n, "readyReplicas": n, "availableReplicas": n,
                    "upToDateReplicas": up_to_date}});
            if let Some(r) = replicas {
                md["spec"]["replicas"] = (*r).into();
            }
            md
        })
        .collect();
    std::fs::write(
        dir.join("machinedeployments.json"),
        serde_json::Value::from(mds).to_string(),
    )
    .unwrap();
}

/// The management cluster double `upgrade` reads (tests/it/support/fleet_api.py): its state
/// folder, which [`on_the_cluster`] fills, and a kubeconfig for it; the server lives as long.
struct FleetApi {
    state: tempfile::TempDir,
    config: std::path::PathBuf,
    _server: std::process::Child,
}

fn fleet_api() -> FleetApi {
    let state = tempfile::tempdir().unwrap();
    let (server, port) = crate::common::loopback_server("fleet_api.py", &[state.path().into()]);
    let config = crate::common::management_kubeconfig(state.path(), port);
    FleetApi {
        state,
        config,
        _server: server,
    }
}

fn initech_on_the_cluster(state: &Path, spec: &str, runs: &str, pool: &str, up_to_date: u64) {
    on_the_cluster(state, "initech", spec, runs, pool, &[("md-0", None)], up_to_date);
}

#[test]
fn upgrade_to_chains_minors_one_healthy_step_per_run_and_stops_on_a_refused_step() {
    let repo = rendered();
    let api = fleet_api();
    let (state, config) = (&api.state, &api.config);
    let chain = |repo: &Repo| {
        repo.run(&[
            "upgrade",
            "--to",
            "v1.34",
            "initech",
            "--kubeconfig",
            config.to_str().unwrap(),
        ])
    };
    let version = |repo: &Repo| {
        let t = repo.read("tenants/initech.yaml");
        (t.contains("version: v1.33.5"), t.contains("workersVersion:"))
    };
    // initech runs v1.32.9, healthy: the first step, the control plane to v1.33.
    initech_on_the_cluster(state.path(), "v1.32.9", "v1.32.9", "v1.32.9", 1);
    let run = chain(&repo);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "upgrade to v1.34:\n  initech  v1.32.9 -> v1.33.5  (control plane first; pools held at v1.32.9)  (then further steps to v1.34)\n1 to move, 1 with further steps after this one, 0 arrived at v1.34\n"
    );
    assert_eq!(version(&repo), (true, true));
    // Run again before Flux applied it: nothing written, the plan says what it waits for.
    let before = repo.snapshot();
    let run = chain(&repo);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("  initech  v1.33.5  pools wait at v1.32.9: KamajiControlPlane initech/initech asks for v1.32.9, not v1.33.5: Flux has not applied the control plane step yet\n"),
        "{}",
        run.stdout
    );
    assert_eq!(before, repo.snapshot());
    // The control plane runs v1.33.5: the pools' step.
    initech_on_the_cluster(state.path(), "v1.33.5", "v1.33.5", "v1.32.9", 1);
    let run = chain(&repo);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains(
            "  initech  pools v1.32.9 -> v1.33.5  (the control plane runs v1.33.5)  (then further steps to v1.34)\n"
        ),
        "{}",
        run.stdout
    );
    assert_eq!(version(&repo), (true, false));
    // The next minor waits until the pool is rolled out at v1.33.5, as the cluster reports it.
    let before = repo.snapshot();
    let run = chain(&repo);
    assert!(
        run.stdout.contains("  initech  v1.33.5  next step waits for the cluster: MachineDeployment initech/initech-md-0 asks for v1.32.9, not v1.33.5: Flux has not applied the last step yet\n"),
        "{}",
        run.stdout
    );
    initech_on_the_cluster(state.path(), "v1.33.5", "v1.33.5", "v1.33.5", 0);
    let run = chain(&repo);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "upgrade to v1.34:\n  initech  v1.33.5  next step waits for the cluster: MachineDeployment initech/initech-md-0 is Progressing: 1/1 ready, 0/1 up to date\n0 to move, 1 with further steps after this one, 0 arrived at v1.34, 1 waiting for the cluster\n"
    );
    assert_eq!(before, repo.snapshot(), "a waiting chain writes nothing");
    let json = repo.run(&[
        "upgrade",
        "--to",
        "v1.34",
        "initech",
        "--kubeconfig",
        config.to_str().unwrap(),
        "-o",
        "json",
    ]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    assert_eq!(
        (&doc["chained"], &doc["written"]),
        (&serde_json::json!(true), &serde_json::json!(false))
    );
    assert_eq!(
        doc["tenants"][0]["waiting"],
        "MachineDeployment initech/initech-md-0 is Progressing: 1/1 ready, 0/1 up to date"
    );
    // Rolled out: the next minor's control plane step.
    initech_on_the_cluster(state.path(), "v1.33.5", "v1.33.5", "v1.33.5", 1);
    let run = chain(&repo);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("  initech  v1.33.5 -> v1.34.2  (control plane first; pools held at v1.33.5)\n"),
        "{}",
        run.stdout
    );
    // Kamaji's webhook refuses the step: the chain stops, naming the object and its message.
    let dir = state.path().join("initech");
    let refused = serde_json::json!([{"apiVersion": "controlplane.cluster.x-k8s.io/v1alpha2", "kind": "KamajiControlPlane",
        "metadata": {"name": "initech", "namespace": "initech", "generation": 3},
        "spec": {"version": "v1.34.2"},
        "status": {"observedGeneration": 3, "ready": true, "version": "v1.33.5",
            "conditions": [{"type": "TenantControlPlaneCreated", "status": "False", "reason": "TenantControlPlaneCreationFailed",
                "message": "admission webhook \"vtenantcontrolplane.kb.io\" denied the request: unable to upgrade to a version greater than the supported one"}]}}]);
    std::fs::write(dir.join("kamajicontrolplanes.json"), refused.to_string()).unwrap();
    let before = repo.snapshot();
    let run = chain(&repo);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("tenant `initech`: the step to v1.34.2 did not become healthy, so the upgrade to v1.34 stops here: KamajiControlPlane initech/initech is Failed: v1.33.5, not initialized; TenantControlPlaneCreated: admission webhook \"vtenantcontrolplane.kb.io\" denied the request"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("hint: fix what its controller reports"),
        "{}",
        run.stderr
    );
    assert_eq!(before, repo.snapshot());
}

#[test]
fn upgrade_to_stops_a_step_still_waiting_past_step_deadline_after_its_commit() {
    let repo = rendered();
    let home = tempfile::tempdir().unwrap();
    let api = fleet_api();
    let (state, config) = (&api.state, &api.config);
    let chain = |repo: &Repo, extra: &[&str]| {
        let mut args = vec![
            "upgrade",
            "--to",
            "v1.34",
            "initech",
            "--kubeconfig",
            config.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        repo.run(&args)
    };
    // The control plane step, written; Flux never applies it (the cluster keeps asking v1.32.9).
    initech_on_the_cluster(state.path(), "v1.32.9", "v1.32.9", "v1.32.9", 1);
    assert_eq!(chain(&repo, &[]).code, 0);
    // Not in git yet: there is no commit to count from, so the step waits without a deadline.
    let run = chain(&repo, &["--step-deadline", "2h"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "note: `tenants/initech.yaml` has no commit to count --step-deadline from; that step waits without a deadline"
        ),
        "{}",
        run.stderr
    );
    git(home.path(), repo.path(), &["init", "-q", "-b", "main"]);
    git(home.path(), repo.path(), &["add", "-A"]);
    git(
        home.path(),
        repo.path(),
        &["commit", "-q", "-m", "initech: control plane to v1.33.5"],
    );
    let committed: i64 = git(home.path(), repo.path(), &["log", "-1", "--format=%ct"])
        .trim()
        .parse()
        .unwrap();
    let at = |hours: i64| {
        jiff::Timestamp::from_second(committed + hours * 3600)
            .unwrap()
            .to_string()
    };
    // An hour after the commit: still waiting, within the deadline.
    let run = chain(&repo, &["--step-deadline", "2h", "--now", &at(1)]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("  initech  v1.33.5  pools wait at v1.32.9: KamajiControlPlane initech/initech asks for v1.32.9"),
        "{}",
        run.stdout
    );
    // Three hours after: the chain stops there, naming what the step still waits for.
    let before = repo.snapshot();
    let run = chain(&repo, &["--step-deadline", "2h", "--now", &at(3)]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("tenant `initech`: the step to v1.33.5 did not become healthy, so the upgrade to v1.34 stops here: KamajiControlPlane initech/initech asks for v1.32.9, not v1.33.5: Flux has not applied the control plane step yet (still not healthy 3h after commit "),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("longer than --step-deadline 2h)"), "{}", run.stderr);
    assert_eq!(before, repo.snapshot(), "a stopped chain writes nothing");
    // Without the flag, the same run keeps waiting.
    assert_eq!(chain(&repo, &["--now", &at(3)]).code, 0);
}

#[test]
fn a_chained_wave_starts_only_once_the_earlier_waves_are_healthy_on_the_cluster() {
    let repo = rendered();
    let home = tempfile::tempdir().unwrap();
    let commit = |msg: &str| {
        git(home.path(), repo.path(), &["add", "-A"]);
        git(home.path(), repo.path(), &["commit", "-q", "-m", msg]);
    };
    git(home.path(), repo.path(), &["init", "-q", "-b", "main"]);
    commit("fleet");
    // The canary (acme) is at v1.34 in git: control plane, then pools, both committed.
    for step in ["control plane", "pools"] {
        let run = upgrade(
            &repo,
            home.path(),
            &["--kubernetes", "v1.34", "--wave", "canary", "--no-cluster-check"],
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        commit(&format!("canary's {step} to v1.34"));
    }
    let api = fleet_api();
    let (state, config) = (&api.state, &api.config);
    let rest = || {
        upgrade(
            &repo,
            home.path(),
            &[
                "--to",
                "v1.34",
                "--wave",
                "rest",
                "--kubeconfig",
                config.to_str().unwrap(),
            ],
        )
    };
    // The canary itself has arrived: nothing to write, and no cluster to ask.
    let run = upgrade(
        &repo,
        home.path(),
        &["--to", "v1.34", "--wave", "canary", "--kubeconfig", "/nonexistent"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "upgrade to v1.34 (wave `canary`):\n  acme  v1.34.2  arrived at v1.34\n0 to move, 0 with further steps after this one, 1 arrived at v1.34\n"
    );
    // On the cluster its machines are still rolling: the wave `rest` does not start.
    let acme_pools = [("md-0", Some(2))];
    on_the_cluster(state.path(), "acme", "v1.34.2", "v1.34.2", "v1.34.2", &acme_pools, 1);
    let before = repo.snapshot();
    let run = rest();
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("wave `rest` cannot start: tenant `acme` of the earlier wave `canary` is at v1.34.2 in git but not healthy on the cluster: MachineDeployment acme/acme-md-0 is Progressing: 2/2 ready, 1/2 up to date"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("--> tenants/acme.yaml:11:14"), "{}", run.stderr);
    assert_eq!(before, repo.snapshot());
    // Rolled out: the wave starts; each of its tenants then waits for its own cluster state.
    on_the_cluster(state.path(), "acme", "v1.34.2", "v1.34.2", "v1.34.2", &acme_pools, 2);
    let globex_pools = [("system", Some(1)), ("batch", None)];
    on_the_cluster(
        state.path(),
        "globex",
        "v1.34.1",
        "v1.34.1",
        "v1.34.1",
        &globex_pools,
        1,
    );
    let run = rest();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("  globex   v1.34.1 -> v1.34.2\n"), "{}", run.stdout);
    assert!(
        run.stdout.contains("  initech  v1.32.9  next step waits for the cluster: KamajiControlPlane initech/initech is not on the cluster\n"),
        "{}",
        run.stdout
    );
}
