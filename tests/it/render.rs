//! `render`, `render --check`, `diff`, `init` and `schema` as a user runs them.

use std::time::SystemTime;

use crate::common::{Repo, kustomize, rendered_parts};

fn mtimes(repo: &Repo) -> Vec<(String, SystemTime)> {
    repo.snapshot()
        .keys()
        .map(|p| {
            (
                p.clone(),
                std::fs::metadata(repo.path().join(p)).unwrap().modified().unwrap(),
            )
        })
        .collect()
}

#[test]
fn example_repository_renders_as_snapshotted() {
    let repo = Repo::example();
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let parts = rendered_parts(&repo);
    assert_eq!(
        parts.len(),
        3 + 3,
        "platform, flux, lock and three tenants: {:?}",
        parts.keys()
    );
    for (part, text) in parts {
        insta::assert_snapshot!(format!("example__{part}"), text);
    }
}

#[test]
fn second_render_writes_nothing_and_every_overlay_builds() {
    let repo = Repo::example();
    let first = repo.run(&["render"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(first.stderr.contains("acme      created"), "{}", first.stderr);
    let before = repo.snapshot();
    let times = mtimes(&repo);
    // A rewrite must show as a new mtime: let the file system's clock move past the last write.
    crate::common::wait_until_timestamps_advance(repo.path());
    let second = repo.run(&["render"]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(second.stderr.contains("0 written, 0 deleted"), "{}", second.stderr);
    assert!(second.stderr.contains("acme      unchanged"), "{}", second.stderr);
    assert_eq!(before, repo.snapshot(), "bytes changed");
    assert_eq!(times, mtimes(&repo), "a file was rewritten");
    for dir in [
        "overlays/platform",
        "overlays/platform/kamaji",
        "overlays/tenants/acme",
        "overlays/tenants/globex",
        "overlays/tenants/initech",
        "overlays/tenants/acme/access",
        "flux",
    ] {
        let built = kustomize(&repo.path().join(dir));
        assert_eq!(built.code, 0, "kustomize {dir}: {}", built.stderr);
    }
}

#[test]
fn a_fresh_render_elsewhere_gives_identical_bytes() {
    let a = Repo::example();
    let b = Repo::example();
    assert_eq!(a.run(&["render"]).code, 0);
    assert_eq!(b.run(&["render"]).code, 0);
    assert_eq!(a.snapshot(), b.snapshot());
}

#[test]
fn the_tenant_overlay_builds_to_exactly_the_rendered_objects_plus_base() {
    let repo = Repo::example();
    assert_eq!(repo.run(&["render"]).code, 0);
    let built = kustomize(&repo.path().join("overlays/tenants/acme"));
    assert_eq!(built.code, 0, "{}", built.stderr);
    let kinds: Vec<&str> = built.stdout.lines().filter_map(|l| l.strip_prefix("kind: ")).collect();
    // The files, not the `access/` folder of objects applied inside the tenant cluster.
    let files = std::fs::read_dir(repo.path().join("overlays/tenants/acme"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_type().unwrap().is_file())
        .count()
        - 1;
    // One object per file, plus the ResourceQuota from base/tenant.
    assert_eq!(kinds.len(), files + 1, "{kinds:?}");
    assert!(!kinds.contains(&"ClusterRoleBinding"), "{kinds:?}");
    // `access/` builds to its bindings alone, with no namespace (they are cluster-scoped).
    let inside = kustomize(&repo.path().join("overlays/tenants/acme/access"));
    assert_eq!(inside.code, 0, "{}", inside.stderr);
    let bound: Vec<&str> = inside.stdout.lines().filter_map(|l| l.strip_prefix("kind: ")).collect();
    assert_eq!(bound, ["ClusterRoleBinding", "ClusterRoleBinding"], "{}", inside.stdout);
    assert!(!inside.stdout.contains("namespace:"), "{}", inside.stdout);
    assert!(kinds.contains(&"ResourceQuota"));
    // kustomize put base/tenant's quota into the tenant's namespace.
    let quota = built
        .stdout
        .split("---")
        .find(|d| d.contains("kind: ResourceQuota"))
        .unwrap();
    assert!(quota.contains("namespace: acme"), "{quota}");
}

#[test]
fn yaml_1_1_words_stay_strings_for_kubectl() {
    let repo = Repo::example();
    assert_eq!(repo.run(&["render"]).code, 0);
    let cluster = repo.read("overlays/tenants/acme/cluster-acme.yaml");
    assert!(cluster.contains("tier: \"on\""), "{cluster}");
    // kubectl (Go YAML 1.1) reads it back as the string "on".
    let built = kustomize(&repo.path().join("overlays/tenants/acme"));
    assert!(built.stdout.contains("tier: \"on\""), "{}", built.stdout);
}

#[test]
fn check_reports_drift_as_a_diff_and_exit_1() {
    let repo = Repo::example();
    assert_eq!(repo.run(&["render"]).code, 0);
    let clean = repo.run(&["render", "--check"]);
    assert_eq!(clean.code, 0, "{}", clean.stderr);
    let path = "overlays/tenants/acme/kamajicontrolplane-acme.yaml";
    let edited = repo.read(path).replace("replicas: 2", "replicas: 5");
    repo.write(path, &edited);
    let before = repo.snapshot();
    let drift = repo.run(&["render", "--check"]);
    assert_eq!(drift.code, 1, "{}", drift.stderr);
    assert!(drift.stdout.contains(&format!("--- a/{path}")), "{}", drift.stdout);
    assert!(
        drift.stdout.contains("-  replicas: 5\n+  replicas: 2"),
        "{}",
        drift.stdout
    );
    assert_eq!(before, repo.snapshot(), "--check wrote files");
    let diff = repo.run(&["diff"]);
    assert_eq!(diff.code, 0);
    assert_eq!(diff.stdout, drift.stdout);
}

#[test]
fn deleting_a_tenant_file_deletes_its_overlay_and_flux_entry() {
    let repo = Repo::example();
    assert_eq!(repo.run(&["render"]).code, 0);
    let vips_before = repo.read("kaas.lock");
    assert!(vips_before.contains("tenant: globex"));
    // globex has its own etcd: its cluster goes first, while the etcd still serves Kamaji.
    repo.decommission("globex");
    let first = repo.run(&["render"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(!repo.path().join("overlays/tenants/globex/cluster-globex.yaml").exists());
    assert!(
        !repo
            .path()
            .join("overlays/tenants/globex/kamajicontrolplane-globex.yaml")
            .exists()
    );
    assert!(
        repo.path()
            .join("overlays/tenants/globex/helmrelease-globex-etcd.yaml")
            .exists()
    );
    assert!(
        repo.path()
            .join("overlays/tenants/globex/namespace-globex.yaml")
            .exists()
    );
    // Its access Kustomization stays, suspended: deleted with the file later, its finalizer then
    // deletes nothing in the cluster that is gone (it would retry that for ever).
    let access = repo.object("overlays/tenants/globex/kustomization-globex-access.yaml");
    assert_eq!(access["spec"]["suspend"], true, "{access}");
    assert_eq!(access["spec"]["kubeConfig"]["secretRef"]["name"], "globex-kubeconfig");
    assert!(
        repo.read("overlays/tenants/globex/kustomization.yaml")
            .contains("kustomization-globex-access.yaml")
    );
    std::fs::remove_file(repo.path().join("tenants/globex.yaml")).unwrap();
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("globex    deleted"), "{}", run.stderr);
    assert!(!repo.path().join("overlays/tenants/globex").exists());
    assert!(!repo.path().join("flux/kustomization-kaas-tenant-globex.yaml").exists());
    assert!(!repo.read("flux/kustomization.yaml").contains("globex"));
    // initech keeps the VIP it had; globex's allocation is released.
    let lock = repo.read("kaas.lock");
    assert!(!lock.contains("globex"), "{lock}");
    assert!(lock.contains("tenant: initech\n  address: \"10.0.4.101\""), "{lock}");
}

#[test]
fn allocated_vips_never_move_when_other_tenants_come_and_go() {
    let repo = Repo::example();
    assert_eq!(repo.run(&["render"]).code, 0);
    let initech = repo.read("overlays/tenants/initech/kamajicontrolplane-initech.yaml");
    assert!(initech.contains("serviceAddress: \"10.0.4.101\""), "{initech}");
    // A new tenant sorting before initech gets a new address, not initech's.
    let aaa = repo.read("tenants/globex.yaml").replace("name: globex", "name: aaa");
    repo.write("tenants/aaa.yaml", &aaa);
    assert_eq!(repo.run(&["render"]).code, 0);
    assert_eq!(
        initech,
        repo.read("overlays/tenants/initech/kamajicontrolplane-initech.yaml")
    );
    let new = repo.read("overlays/tenants/aaa/kamajicontrolplane-aaa.yaml");
    assert!(new.contains("serviceAddress: \"10.0.4.102\""), "{new}");
}

#[test]
fn a_changed_pool_spec_renames_its_template_and_drops_the_old_one() {
    let repo = Repo::example();
    assert_eq!(repo.run(&["render"]).code, 0);
    let dir = repo.path().join("overlays/tenants/acme");
    let templates = |prefix: &str| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(prefix))
            .collect();
        v.sort();
        v
    };
    let old = templates("proxmoxmachinetemplate-");
    assert_eq!(old.len(), 1);
    let spec = repo
        .read("tenants/acme.yaml")
        .replace("cpus: 2, memoryMiB: 4096", "cpus: 4, memoryMiB: 4096");
    repo.write("tenants/acme.yaml", &spec);
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let new = templates("proxmoxmachinetemplate-");
    assert_eq!(new.len(), 1);
    assert_ne!(old, new, "the template kept its name after its spec changed");
    let name = new[0]
        .trim_start_matches("proxmoxmachinetemplate-")
        .trim_end_matches(".yaml");
    let md = repo.read("overlays/tenants/acme/machinedeployment-acme-md-0.yaml");
    assert!(md.contains(&format!("name: {name}")), "{md}");
    // The bootstrap template did not change, so it kept its name.
    assert_eq!(templates("kubeadmconfigtemplate-").len(), 1);
}

#[test]
fn render_one_tenant_leaves_the_others_alone() {
    let repo = Repo::example();
    assert_eq!(repo.run(&["render"]).code, 0);
    let globex = repo.read("overlays/tenants/globex/kamajicontrolplane-globex.yaml");
    repo.write("overlays/tenants/globex/kamajicontrolplane-globex.yaml", "hand edit\n");
    let spec = repo
        .read("tenants/acme.yaml")
        .replace("replicas: 2\n    dataStore", "replicas: 3\n    dataStore");
    repo.write("tenants/acme.yaml", &spec);
    let run = repo.run(&["render", "--tenant", "acme"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        repo.read("overlays/tenants/acme/kamajicontrolplane-acme.yaml")
            .contains("replicas: 3")
    );
    assert_eq!(
        repo.read("overlays/tenants/globex/kamajicontrolplane-globex.yaml"),
        "hand edit\n"
    );
    // A plain render skips globex: its inputs are unchanged (the hash in its kustomization.yaml).
    let fast = repo.run(&["render"]);
    assert!(fast.stderr.contains("globex    unchanged"), "{}", fast.stderr);
    assert_eq!(
        repo.read("overlays/tenants/globex/kamajicontrolplane-globex.yaml"),
        "hand edit\n"
    );
    // --check compares every file and finds the hand edit; --full repairs it.
    let check = repo.run(&["render", "--check"]);
    assert_eq!(check.code, 1, "{}", check.stderr);
    assert!(
        check
            .stdout
            .contains("+++ b/overlays/tenants/globex/kamajicontrolplane-globex.yaml"),
        "{}",
        check.stdout
    );
    assert_eq!(repo.run(&["render", "--full"]).code, 0);
    assert_eq!(
        repo.read("overlays/tenants/globex/kamajicontrolplane-globex.yaml"),
        globex
    );
}

#[test]
fn autoscaled_pools_have_no_replicas_and_carry_capacity() {
    let repo = Repo::example();
    assert_eq!(repo.run(&["render"]).code, 0);
    let md = repo.read("overlays/tenants/globex/machinedeployment-globex-batch.yaml");
    let spec = md.split("\nspec:\n").nth(1).unwrap();
    assert!(!spec.contains("\n  replicas:"), "{md}");
    assert!(
        md.contains("cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size: \"0\""),
        "{md}"
    );
    assert!(
        md.contains("cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size: \"5\""),
        "{md}"
    );
    assert!(
        md.contains("capacity.cluster-autoscaler.kubernetes.io/cpu: \"8\""),
        "{md}"
    );
    assert!(
        md.contains("capacity.cluster-autoscaler.kubernetes.io/memory: 32768Mi"),
        "{md}"
    );
    let ca = repo.read("overlays/tenants/globex/helmrelease-globex-autoscaler.yaml");
    for want in [
        "cloudProvider: clusterapi",
        "clusterAPIMode: kubeconfig-incluster",
        "clusterAPIKubeconfigSecret: globex-kubeconfig",
        "clusterName: globex",
        "clusterScoped: false",
    ] {
        assert!(ca.contains(want), "{want} missing in {ca}");
    }
    // acme has no autoscaled pool and gets no autoscaler.
    assert!(
        !repo
            .path()
            .join("overlays/tenants/acme/helmrelease-acme-autoscaler.yaml")
            .exists()
    );
    // The Proxmox provider ID is kept byte for byte for cloud-init to expand.
    let kct = std::fs::read_dir(repo.path().join("overlays/tenants/globex"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("kubeadmconfigtemplate-globex-batch")
        })
        .unwrap();
    let kct = std::fs::read_to_string(kct).unwrap();
    assert!(
        kct.contains("value: proxmox://'{{ ds.meta_data.instance_id }}'"),
        "{kct}"
    );
}

#[test]
fn init_creates_a_repository_that_renders_and_refuses_to_overwrite() {
    let repo = Repo::empty();
    let run = repo.run(&["init"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let render = repo.run(&["render"]);
    assert_eq!(render.code, 0, "{}", render.stderr);
    assert!(
        repo.path()
            .join("overlays/tenants/example/cluster-example.yaml")
            .exists()
    );
    let before = repo.snapshot();
    let again = repo.run(&["init"]);
    assert_eq!(again.code, 1);
    assert!(again.stderr.contains("init never overwrites"), "{}", again.stderr);
    assert_eq!(before, repo.snapshot());
}

#[test]
fn schema_describes_both_files() {
    let run = Repo::empty().run(&["schema"]);
    assert_eq!(run.code, 0);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["$defs"]["TenantFile"]["title"], "TenantFile");
    assert_eq!(doc["$defs"]["PlatformFile"]["title"], "PlatformFile");
    // One schema for every file, as an editor uses it: the example's files pass, mistakes fail.
    let validator = jsonschema::validator_for(&doc).expect("a valid JSON Schema");
    let example = crate::common::project_root();
    let file = |rel: &str| -> serde_json::Value {
        serde_saphyr::from_str(&std::fs::read_to_string(example.join(rel)).unwrap()).unwrap()
    };
    for rel in [
        "kaas.yaml",
        "tenants/acme.yaml",
        "tenants/globex.yaml",
        "tenants/initech.yaml",
    ] {
        let errors: Vec<String> = validator.iter_errors(&file(rel)).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{rel}: {errors:?}");
    }
    let mut typo = file("tenants/acme.yaml");
    typo["spec"]["controlPlane"]["replcas"] = serde_json::json!(2);
    assert!(!validator.is_valid(&typo), "an unknown tenant field passes");
    let mut kind = file("tenants/acme.yaml");
    kind["kind"] = serde_json::json!("Tenat");
    assert!(!validator.is_valid(&kind), "a misspelt kind passes");
    let mut platform = file("kaas.yaml");
    platform["spec"]["bogus"] = serde_json::json!(1);
    assert!(!validator.is_valid(&platform), "an unknown platform field passes");
    assert!(!validator.is_valid(&serde_json::json!({"bogus": 1})));
    let committed = std::fs::read_to_string(crate::common::project_root().join("kaas.schema.json")).unwrap();
    assert_eq!(
        run.stdout, committed,
        "kaas.schema.json is stale: run `kaas-gitops schema > kaas.schema.json`"
    );
}

#[test]
fn flux_shards_label_each_tenant_kustomization() {
    let repo = Repo::example();
    repo.replace("kaas.yaml", "    interval: 10m\n", "    interval: 10m\n    shards: 3\n");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // sha256(name)'s first four bytes, big-endian, mod 3, plus 1 (worked out with Python's
    // hashlib, not with this code).
    for (t, shard) in [("acme", "shard2"), ("globex", "shard1"), ("initech", "shard2")] {
        let k = repo.read(&format!("flux/kustomization-kaas-tenant-{t}.yaml"));
        let line = k
            .lines()
            .find(|l| l.contains("sharding.fluxcd.io/key"))
            .unwrap_or_else(|| panic!("{k}"));
        assert!(
            line.ends_with(&format!("sharding.fluxcd.io/key: {shard}")),
            "{t}: {line}"
        );
    }
    // The platform Kustomization stays on the main controller.
    assert!(!repo.read("flux/kustomization-kaas-platform.yaml").contains("sharding"));
}

#[test]
fn a_reader_that_goes_away_or_a_full_disk_is_not_a_crash() {
    // `schema | head`: the reader has gone before the first byte is written.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = crate::common::bin().arg("schema").stdout(writer).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr, "", "a closed pipe ends the output quietly");
    // `schema > /dev/full`: the data cannot be written, which is an error, said once.
    if std::path::Path::new("/dev/full").exists() {
        let out = crate::common::bin()
            .arg("schema")
            .stdout(std::fs::File::create("/dev/full").unwrap())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(
            stderr.trim(),
            "error: cannot write to stdout: No space left on device (os error 28)"
        );
    }
}

#[test]
fn a_tenant_argument_names_a_tenant_file_or_a_rendered_overlay() {
    let repo = Repo::example();
    assert_eq!(repo.run(&["render"]).code, 0);
    let before = repo.snapshot();
    let run = repo.run(&["render", "--tenant", "acmee"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "error: `--tenant acmee` names no tenant: there is no `tenants/acmee.yaml`, and no rendered overlay of that name to delete"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("tenants here: acme, globex, initech"),
        "{}",
        run.stderr
    );
    let file = repo.run(&["render", "--tenant", "acme.yaml"]);
    assert_eq!(file.code, 1, "{}", file.stderr);
    assert!(
        file.stderr
            .contains("hint: pass the tenant's name, not its file: `--tenant acme`"),
        "{}",
        file.stderr
    );
    assert_eq!(before, repo.snapshot(), "a refused run writes nothing");
    // A tenant whose file is gone may still be named: its overlay and Flux entry are deleted.
    // initech is on the shared DataStore, so its file may go in one step.
    std::fs::remove_file(repo.path().join("tenants/initech.yaml")).unwrap();
    let run = repo.run(&["render", "--tenant", "initech"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!repo.path().join("overlays/tenants/initech").exists());
    assert!(repo.path().join("overlays/tenants/acme").exists());
}

#[test]
fn tenant_files_in_a_folder_of_tenants_are_an_error_not_silently_skipped() {
    let repo = Repo::example();
    std::fs::create_dir(repo.path().join("tenants/team-a")).unwrap();
    std::fs::rename(
        repo.path().join("tenants/globex.yaml"),
        repo.path().join("tenants/team-a/globex.yaml"),
    )
    .unwrap();
    // Two folders deep too.
    repo.write("tenants/teams/b/hooli.yaml", "kind: Tenant\n");
    // A folder of something else is left alone.
    repo.write("tenants/notes/README.md", "not a tenant\n");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "error: `tenants/team-a/` holds YAML files (`globex.yaml`), and tenant files are read from `tenants/` only, not from folders in it"
        ),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("--> tenants/team-a/globex.yaml"), "{}", run.stderr);
    assert!(run.stderr.contains("--> tenants/teams/b/hooli.yaml"), "{}", run.stderr);
    assert!(!run.stderr.contains("notes"), "{}", run.stderr);
    assert!(!repo.path().join("overlays").exists(), "nothing is written");
}

#[test]
fn a_repository_folder_that_does_not_exist_is_named_as_such() {
    let parent = Repo::empty();
    let missing = parent.path().join("missing");
    let out = crate::common::bin()
        .arg("--repo")
        .arg(&missing)
        .arg("render")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("error: `{}` is not a folder", missing.display())),
        "{stderr}"
    );
    assert!(!missing.exists(), "nothing is created");
}
