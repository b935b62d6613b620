//! Several management clusters from one repository (kaas.yaml `spec.managementClusters`, a
//! tenant's `spec.placement`): one Flux entry point per cluster reaching only its own tenants,
//! placements decided once and recorded in `kaas.lock`, capacity, and every refusal at its line.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::common::Repo;

/// Three management clusters: `eu-1` (the default, listed first), `us-1` with its own VIP pool
/// and room for two tenants, `us-2` with room for one.
const CLUSTERS: &str = r#"  managementClusters:
  - name: eu-1
    labels: {region: eu}
  - name: us-1
    labels: {region: us}
    pools: ["10.1.4.100-10.1.4.199"]
    capacity: {tenants: 2}
  - name: us-2
    labels: {region: us}
    capacity: {tenants: 1}
"#;

fn with_clusters(repo: &Repo) {
    let text = repo.read("kaas.yaml");
    repo.write("kaas.yaml", &format!("{}\n{CLUSTERS}", text.trim_end()));
}

fn place(repo: &Repo, tenant: &str, placement: &str) {
    repo.replace(
        &format!("tenants/{tenant}.yaml"),
        "\nspec:\n",
        &format!("\nspec:\n  placement: {placement}\n"),
    );
}

/// A new tenant `name`, a copy of globex (VIP from the pool) placed by `placement`.
fn new_tenant(repo: &Repo, name: &str, placement: &str) {
    let globex = repo.read("tenants/globex.yaml");
    let text = globex
        .replace("name: globex", &format!("name: {name}"))
        .replace("globex-platform", &format!("{name}-platform"));
    let text = match text.find("\n  placement:") {
        // Drop globex's own placement.
        Some(i) => {
            let end = text[i + 1..].find('\n').map_or(text.len(), |j| i + 1 + j);
            format!("{}{}", &text[..i], &text[end..])
        }
        None => text,
    };
    repo.write(&format!("tenants/{name}.yaml"), &text);
    place(repo, name, placement);
}

/// The tenants each entry point's Kustomizations reach (by `spec.path`), checked to be the
/// platform layer plus those tenants.
fn reached(repo: &Repo, dir: &str) -> BTreeSet<String> {
    let index = repo.object(&format!("{dir}/kustomization.yaml"));
    let mut tenants = BTreeSet::new();
    let mut platform = BTreeSet::new();
    for file in index["resources"].as_array().unwrap() {
        let k = repo.object(&format!("{dir}/{}", file.as_str().unwrap()));
        let path = k["spec"]["path"].as_str().unwrap().to_string();
        match path.strip_prefix("./overlays/tenants/") {
            Some(t) => {
                tenants.insert(t.to_string());
            }
            None => {
                platform.insert(path);
            }
        }
    }
    assert_eq!(
        platform,
        BTreeSet::from([
            "./overlays/platform".to_string(),
            "./overlays/platform/kamaji".to_string()
        ]),
        "{dir} applies the platform layer"
    );
    tenants
}

fn lock(repo: &Repo) -> Value {
    repo.object("kaas.lock")
}

fn placements(repo: &Repo) -> BTreeMap<String, String> {
    lock(repo)["placements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["tenant"].as_str().unwrap().to_string(),
                p["managementCluster"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn set<const N: usize>(names: [&str; N]) -> BTreeSet<String> {
    names.into_iter().map(str::to_string).collect()
}

/// The fleet of the example on three clusters: acme on the default, globex on `us-1` by name,
/// initech by labels.
fn three_clusters() -> Repo {
    let repo = Repo::example();
    with_clusters(&repo);
    place(&repo, "globex", "{managementCluster: us-1}");
    place(&repo, "initech", "{selector: {region: us}}");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    repo
}

#[test]
fn each_management_cluster_gets_an_entry_point_reaching_only_its_tenants() {
    let repo = three_clusters();
    // The default keeps `flux/` (a Flux already reading it goes on as before); the others get
    // their own folder, an empty one (platform only) too.
    assert_eq!(reached(&repo, "flux"), set(["acme"]));
    // initech selects `region: us`: us-1 and us-2 both have room for one more, the first
    // listed wins the tie.
    assert_eq!(reached(&repo, "flux/us-1"), set(["globex", "initech"]));
    assert_eq!(reached(&repo, "flux/us-2"), set([]));
    let files: Vec<String> = repo.snapshot().into_keys().filter(|p| p.starts_with("flux/")).collect();
    assert!(
        !files.iter().any(|f| f.starts_with("flux/eu-1/")),
        "the default has no folder of its own: {files:?}"
    );

    // Recorded, with the default.
    assert_eq!(lock(&repo)["defaultManagementCluster"], "eu-1");
    assert_eq!(
        placements(&repo),
        BTreeMap::from([
            ("acme".into(), "eu-1".into()),
            ("globex".into(), "us-1".into()),
            ("initech".into(), "us-1".into()),
        ])
    );
    // us-1's tenants get their VIPs from us-1's own pool.
    let vips: BTreeMap<String, String> = lock(&repo)["vips"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["tenant"].as_str().unwrap().into(),
                v["address"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(vips["globex"], "10.1.4.100");
    assert_eq!(vips["initech"], "10.1.4.101");

    // `validate` takes each entry point as its own cluster: the platform's Kustomizations in
    // every folder are not the same object twice.
    let crds = crate::common::crds_dir();
    let run = repo.run(&["validate", "--crds", crds.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);

    // Deterministic: a second render writes nothing.
    let before = repo.snapshot();
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(before, repo.snapshot());
}

#[test]
fn a_placement_is_kept_and_new_tenants_go_where_there_is_room() {
    let repo = three_clusters();
    // Given the choice again, initech would now pick us-2 (us-1 is full): it stays.
    new_tenant(&repo, "hooli", "{selector: {region: us}}");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(placements(&repo)["initech"], "us-1");
    assert_eq!(placements(&repo)["hooli"], "us-2", "us-1 holds 2/2");
    assert_eq!(reached(&repo, "flux/us-2"), set(["hooli"]));

    // One more asks for a full region: an error at its selector, naming what each cluster holds.
    new_tenant(&repo, "pied", "{selector: {region: us}}");
    let err = repo.assert_render_refused("tenants/pied.yaml:", "no room for tenant `pied`");
    assert!(
        err.contains("`us-1` holds 2/2 tenants; `us-2` holds 1/1 tenants"),
        "{err}"
    );
    assert!(err.contains("field: `spec.placement.selector`"), "{err}");
    std::fs::remove_file(repo.path().join("tenants/pied.yaml")).unwrap();

    // A capacity lowered under what runs there: an error at that line of kaas.yaml.
    repo.replace("kaas.yaml", "capacity: {tenants: 2}", "capacity: {tenants: 1}");
    repo.assert_render_refused(
        "kaas.yaml:",
        "management cluster `us-1` already runs 2 (tenants), more than 1",
    );
}

#[test]
fn moving_a_running_tenant_is_refused_unless_acknowledged() {
    let repo = three_clusters();
    repo.replace(
        "tenants/globex.yaml",
        "{managementCluster: us-1}",
        "{managementCluster: us-2}",
    );
    let err = repo.assert_render_refused(
        "tenants/globex.yaml:",
        "tenant `globex` runs on management cluster `us-1` (kaas.lock); `us-2` would move it",
    );
    assert!(err.contains("clusterctl move"), "the steps are named: {err}");
    // Dropping `placement` does not move it to the default either: a placement never moves by
    // itself.
    repo.replace("tenants/globex.yaml", "  placement: {managementCluster: us-2}\n", "");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(placements(&repo)["globex"], "us-1");

    // Acknowledged: but us-2 has no pool of its own, so the VIP changes with it (us-1's pool
    // is not us-2's network), which is an endpoint move of its own.
    place(&repo, "globex", "{managementCluster: us-2, acknowledge: [move]}");
    repo.assert_render_refused(
        "tenants/globex.yaml:",
        "tenant `globex` would move from the endpoint `10.1.4.100` to `10.0.4.100`",
    );
    // Both acknowledged: its Flux entry moves from us-1's folder to us-2's.
    repo.replace(
        "tenants/globex.yaml",
        "acknowledge: [move]}\n",
        "acknowledge: [move]}\n  controlPlane: {acknowledge: [endpointMove]}\n",
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(placements(&repo)["globex"], "us-2");
    assert_eq!(reached(&repo, "flux/us-1"), set(["initech"]));
    assert_eq!(reached(&repo, "flux/us-2"), set(["globex"]));
    assert!(
        !repo
            .path()
            .join("flux/us-1/kustomization-kaas-tenant-globex.yaml")
            .exists()
    );
}

#[test]
fn a_fleet_rendered_on_one_cluster_stays_on_it_when_clusters_are_listed() {
    let repo = Repo::example();
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let single = repo.snapshot();
    assert!(
        lock(&repo).get("placements").is_none(),
        "no placements without clusters"
    );

    // Listing clusters puts every running tenant on the default, where it runs, and leaves
    // `flux/` as it was (only the lock and the new clusters' folders are added).
    with_clusters(&repo);
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let after = repo.snapshot();
    // The files directly in `flux/`: the same names and the same bytes.
    let top = |files: &BTreeMap<String, Vec<u8>>| -> BTreeMap<String, Vec<u8>> {
        files
            .iter()
            .filter(|(p, _)| p.strip_prefix("flux/").is_some_and(|r| !r.contains('/')))
            .map(|(p, b)| (p.clone(), b.clone()))
            .collect()
    };
    assert_eq!(top(&single), top(&after), "flux/ changed");
    assert_eq!(reached(&repo, "flux"), set(["acme", "globex", "initech"]));
    assert!(placements(&repo).values().all(|m| m == "eu-1"));
    // And back: with every tenant on the default, the list may go; the rendered tree is the
    // single cluster's again, byte for byte, and the lock keeps which cluster reads `flux/`.
    let listed = repo.read("kaas.yaml");
    repo.write("kaas.yaml", &listed.replace(CLUSTERS, ""));
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(lock(&repo).get("placements").is_none(), "{}", repo.read("kaas.lock"));
    assert_eq!(lock(&repo)["defaultManagementCluster"], "eu-1");
    let rendered = |files: BTreeMap<String, Vec<u8>>| -> BTreeMap<String, Vec<u8>> {
        files.into_iter().filter(|(p, _)| p != "kaas.lock").collect()
    };
    assert_eq!(
        rendered(repo.snapshot()),
        rendered(single),
        "the single cluster's tree again"
    );
    // Listed again with another first: that one would take `flux/` from eu-1's Flux.
    let us_first =
        listed.replace("  - name: eu-1\n    labels: {region: eu}\n", "") + "  - name: eu-1\n    labels: {region: eu}\n";
    repo.write("kaas.yaml", &us_first);
    repo.assert_render_refused("kaas.yaml:", "the default management cluster is `eu-1` (kaas.lock)");
    repo.write("kaas.yaml", &listed);
    assert_eq!(repo.run(&["render"]).code, 0);

    // Asking for another cluster for a running tenant is a move, also before any was recorded.
    let repo = Repo::example();
    assert_eq!(repo.run(&["render"]).code, 0);
    with_clusters(&repo);
    place(&repo, "globex", "{managementCluster: us-1}");
    repo.assert_render_refused(
        "tenants/globex.yaml:",
        "tenant `globex` runs on the default management cluster `eu-1` (it was rendered before kaas.yaml listed management clusters)",
    );
}

#[test]
fn what_cannot_be_placed_is_refused_at_its_line() {
    // A placement without clusters to choose from.
    let repo = Repo::example();
    place(&repo, "globex", "{managementCluster: us-1}");
    repo.assert_render_refused(
        "tenants/globex.yaml:",
        "kaas.yaml lists no management clusters to choose from",
    );

    // A cluster that is not listed, labels none carries, both ways at once.
    let repo = Repo::example();
    with_clusters(&repo);
    place(&repo, "globex", "{managementCluster: ap-1}");
    let err = repo.assert_render_refused("tenants/globex.yaml:", "kaas.yaml lists no management cluster `ap-1`");
    assert!(err.contains("listed: eu-1, us-1, us-2"), "{err}");
    repo.replace(
        "tenants/globex.yaml",
        "{managementCluster: ap-1}",
        "{selector: {region: ap}}",
    );
    let err = repo.assert_render_refused(
        "tenants/globex.yaml:",
        "kaas.yaml lists no management cluster labelled {region: ap}",
    );
    assert!(err.contains("`us-1` {region: us}"), "{err}");
    repo.replace(
        "tenants/globex.yaml",
        "{selector: {region: ap}}",
        "{managementCluster: us-1, selector: {region: us}}",
    );
    repo.assert_render_refused("tenants/globex.yaml:", "`managementCluster` and `selector` both set");

    // kaas.yaml: a name twice, two defaults, a name that cannot be a folder, a zero capacity.
    let repo = Repo::example();
    with_clusters(&repo);
    repo.replace("kaas.yaml", "name: us-2", "name: us-1");
    repo.assert_render_refused("kaas.yaml:", "management cluster `us-1` is listed twice");
    repo.replace(
        "kaas.yaml",
        "  - name: us-1\n    labels: {region: us}\n    capacity: {tenants: 1}",
        "  - name: US_2\n    capacity: {tenants: 0}",
    );
    let err = repo.assert_render_refused("kaas.yaml:", "`US_2` is not a DNS-1123 label");
    assert!(
        err.contains("a capacity of 0 takes no tenant"),
        "all errors together: {err}"
    );
    let repo = Repo::example();
    with_clusters(&repo);
    repo.replace(
        "kaas.yaml",
        "labels: {region: eu}",
        "labels: {region: eu}\n    default: true",
    );
    repo.replace(
        "kaas.yaml",
        "capacity: {tenants: 1}",
        "capacity: {tenants: 1}\n    default: true",
    );
    repo.assert_render_refused("kaas.yaml:", "`us-2` is the second default management cluster");
}

#[test]
fn the_recorded_default_and_clusters_with_tenants_stay() {
    let repo = three_clusters();
    // Another default would hand the Flux reading `flux/` another cluster's tenants.
    repo.replace(
        "kaas.yaml",
        "capacity: {tenants: 1}",
        "capacity: {tenants: 1}\n    default: true",
    );
    repo.assert_render_refused(
        "kaas.yaml:",
        "the default management cluster is `eu-1` (kaas.lock): its Flux reads `flux/`",
    );
    repo.replace(
        "kaas.yaml",
        "capacity: {tenants: 1}\n    default: true",
        "capacity: {tenants: 1}",
    );

    // The default leaving the list with no tenant left there: the next one listed would take
    // `flux/` from the Flux that reads it.
    let repo = Repo::example();
    with_clusters(&repo);
    repo.replace("kaas.yaml", "capacity: {tenants: 1}", "capacity: {tenants: 2}");
    place(&repo, "acme", "{managementCluster: us-2}");
    place(&repo, "globex", "{managementCluster: us-1}");
    place(&repo, "initech", "{managementCluster: us-2}");
    assert_eq!(repo.run(&["render"]).code, 0);
    assert!(!placements(&repo).values().any(|m| m == "eu-1"));
    repo.replace("kaas.yaml", "  - name: eu-1\n    labels: {region: eu}\n", "");
    repo.assert_render_refused(
        "kaas.yaml:",
        "the default management cluster is `eu-1` (kaas.lock), which kaas.yaml no longer lists",
    );
    let repo = three_clusters();

    // A cluster that still runs tenants cannot leave the list (globex asks for none: it stays
    // where it was placed, like initech, which asked by labels).
    repo.replace("tenants/globex.yaml", "  placement: {managementCluster: us-1}\n", "");
    repo.replace("kaas.yaml", "  - name: us-1\n    labels: {region: us}\n    pools: [\"10.1.4.100-10.1.4.199\"]\n    capacity: {tenants: 2}\n", "");
    let err = repo.assert_render_refused(
        "tenants/globex.yaml:",
        "tenant `globex` runs on management cluster `us-1` (kaas.lock), which kaas.yaml does not list",
    );
    assert!(
        err.contains("tenants/initech.yaml"),
        "every tenant on it is named: {err}"
    );
}

#[test]
fn an_upgrade_wave_may_take_the_tenants_of_a_region() {
    let repo = Repo::example();
    let waves = "      - name: canary\n        selector: {team: payments}\n      - name: rest\n";
    repo.replace(
        "kaas.yaml",
        waves,
        "      - name: canary\n        selector: {team: payments}\n      - name: us\n        managementClusterSelector: {region: us}\n      - name: rest\n",
    );
    // Without management clusters to select: at the line.
    repo.assert_render_refused("kaas.yaml:", "kaas.yaml lists no management clusters to select");
    with_clusters(&repo);
    place(&repo, "initech", "{managementCluster: us-1}");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let home = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| crate::common::git(home.path(), repo.path(), args);
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "fleet"]);
    let run = repo.run(&["upgrade", "--kubernetes", "v1.33", "--wave", "us", "--dry-run"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "upgrade to v1.33 (wave `us`):\n  initech  v1.32.9 -> v1.33.5  (control plane first; pools held at v1.32.9)\n1 to move, 1 with further steps after this one, 0 already at v1.33\n"
    );
    // A region no cluster is in: the wave would take no one.
    repo.replace(
        "kaas.yaml",
        "managementClusterSelector: {region: us}",
        "managementClusterSelector: {region: ap}",
    );
    let err = repo.assert_render_refused("kaas.yaml:", "no management cluster carries these labels");
    assert!(
        err.contains("field: `spec.upgrades.waves[1].managementClusterSelector`"),
        "{err}"
    );
}

#[test]
fn status_of_every_management_cluster_needs_a_context_for_each() {
    let repo = Repo::example();
    assert_eq!(repo.run(&["render"]).code, 0);
    for command in ["status", "wait"] {
        let r = repo.run(&[command, "--all-management-clusters"]);
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert!(
            r.stderr.contains("kaas.yaml lists no management clusters"),
            "{}",
            r.stderr
        );
    }
    let repo = three_clusters();
    repo.replace(
        "kaas.yaml",
        "    labels: {region: eu}\n",
        "    labels: {region: eu}\n    context: prod-eu-1\n",
    );
    assert_eq!(repo.run(&["render"]).code, 0);
    // us-1 and us-2 have none: both named, nothing read.
    let r = repo.run(&["status", "--all-management-clusters", "--context-of", "us-1=prod-us-1"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("management cluster `us-2` has no kubeconfig context"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("`us-1` has no"), "{}", r.stderr);
    assert!(!r.stderr.contains("`eu-1` has no"), "{}", r.stderr);
    let r = repo.run(&["status", "--all-management-clusters", "--context-of", "ap-1=x"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("`--context-of ap-1=...` names no management cluster of kaas.yaml"),
        "{}",
        r.stderr
    );
    // Every context given, none reachable: each cluster is reported, exit 2.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("kubeconfig");
    let mut text = String::from(
        "apiVersion: v1\nkind: Config\ncurrent-context: prod-eu-1\nusers:\n- name: me\n  user: {token: not-a-secret}\nclusters:\n",
    );
    let contexts = ["prod-eu-1", "prod-us-1", "prod-us-2"];
    for c in contexts {
        text.push_str(&format!(
            "- name: {c}\n  cluster: {{server: \"https://127.0.0.1:9\"}}\n"
        ));
    }
    text.push_str("contexts:\n");
    for c in contexts {
        text.push_str(&format!("- name: {c}\n  context: {{cluster: {c}, user: me}}\n"));
    }
    std::fs::write(&config, text).unwrap();
    let config = config.to_string_lossy();
    let r = repo.run(&[
        "status",
        "--all-management-clusters",
        "--kubeconfig",
        &config,
        "--context-of",
        "us-1=prod-us-1",
        "--context-of",
        "us-2=prod-us-2",
        "--revision",
        "0123456",
        "--format",
        "json",
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let doc: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout));
    let names: Vec<&str> = doc["managementClusters"]
        .as_array()
        .unwrap_or_else(|| panic!("{doc}"))
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["eu-1", "us-1", "us-2"], "every cluster is tried: {doc}");
}

#[test]
fn a_selector_takes_the_cluster_with_the_most_room_not_the_first() {
    let repo = Repo::example();
    with_clusters(&repo);
    // us-1 (listed first) has room for 2, us-2 for 5: the most room wins.
    repo.replace("kaas.yaml", "capacity: {tenants: 1}", "capacity: {tenants: 5}");
    place(&repo, "initech", "{selector: {region: us}}");
    assert_eq!(repo.run(&["render"]).code, 0);
    assert_eq!(placements(&repo)["initech"], "us-2");
}

#[test]
fn waiting_on_every_cluster_for_a_tenant_no_cluster_renders_is_an_error() {
    let repo = three_clusters();
    let r = repo.run(&[
        "wait",
        "ghost",
        "--all-management-clusters",
        "--context-of",
        "eu-1=a",
        "--context-of",
        "us-1=b",
        "--context-of",
        "us-2=c",
    ]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("no tenant `ghost` is rendered for any management cluster"),
        "{}",
        r.stderr
    );
}

#[test]
fn one_bucket_for_the_backups_of_several_clusters_is_warned_about() {
    let repo = three_clusters();
    repo.replace(
        "kaas.yaml",
        "      pvc: {size: 10Gi}",
        "      s3: {credentialsSecret: etcd-backups}",
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("every management cluster backs up Kamaji's bundled etcd as `kamaji-etcd/`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("give the Secret `etcd-backups` of each management cluster its own bucket"),
        "{}",
        run.stderr
    );
}
