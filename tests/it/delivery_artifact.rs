//! `spec.flux.delivery.mode: artifact`: source-watcher's ArtifactGenerator cuts one
//! ExternalArtifact per tenant out of the platform's GitRepository. source-watcher's controller
//! module is not on this machine's Go proxy, so nothing here runs it: the rendered wiring is
//! checked as data (one generator per shard, one artifact per tenant, every copy source in the
//! rendered tree, the tenant Kustomization's path inside the artifact those copies make), against
//! the ArtifactGenerator CRD generated from the served api/v2 module
//! (tests/upstream/artifactgenerator.sh, added to KAAS_CRDS by crds.sh), and for its errors.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::common::{Repo, crds_dir};

const TENANTS: [&str; 3] = ["acme", "globex", "initech"];

/// The example repository with `delivery` (YAML under `spec.flux`) added.
fn with_delivery(delivery: &str) -> Repo {
    let repo = Repo::example();
    repo.replace(
        "kaas.yaml",
        "    interval: 10m\n",
        &format!("    interval: 10m\n{delivery}"),
    );
    repo
}

#[track_caller]
fn rendered(delivery: &str) -> Repo {
    let repo = with_delivery(delivery);
    let r = repo.run(&["render"]);
    assert_eq!(r.code, 0, "render: {}", r.stderr);
    repo
}

const ARTIFACT: &str = "    delivery:\n      mode: artifact\n";

/// The ArtifactGenerators under `flux/`, by name.
fn generators(repo: &Repo) -> BTreeMap<String, serde_json::Value> {
    std::fs::read_dir(repo.path().join("flux"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("artifactgenerator-"))
        .map(|n| {
            let g = repo.object(&format!("flux/{n}"));
            (g["metadata"]["name"].as_str().unwrap().to_string(), g)
        })
        .collect()
}

/// What source-watcher's copy of a directory without glob characters does (`cp -r dir to/`:
/// `applySingleDirectoryCopy`, internal/builder/builder.go @ v2.2.1): every file under `from`
/// lands under `to/<basename of from>/`. Returns the artifact's files, relative to its root.
fn artifact_files(repo: &Repo, copies: &serde_json::Value) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for c in copies.as_array().unwrap() {
        let from = c["from"]
            .as_str()
            .unwrap()
            .strip_prefix("@repo/")
            .expect("from the `repo` source");
        let to = c["to"]
            .as_str()
            .unwrap()
            .strip_prefix("@artifact/")
            .expect("into the artifact");
        assert!(!from.contains(['*', '?', '[', '{']), "a plain path: {from}");
        let src = repo.path().join(from);
        assert!(
            src.is_dir(),
            "the copy source `{from}` is a folder of the rendered tree"
        );
        let dest = Path::new(to).join(Path::new(from).file_name().unwrap());
        for f in walk(&src) {
            out.insert(dest.join(f.strip_prefix(&src).unwrap()));
        }
    }
    out
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// `a/b/../c` -> `a/c`.
fn normal(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => assert!(out.pop(), "{} leaves the artifact", p.display()),
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

#[test]
fn artifact_delivery_renders_one_generator_and_one_artifact_per_tenant_holding_what_its_kustomization_builds() {
    let repo = rendered(ARTIFACT);
    let all = generators(&repo);
    assert_eq!(all.keys().collect::<Vec<_>>(), ["kaas-tenants"]);
    let g = &all["kaas-tenants"];
    assert_eq!(g["apiVersion"], "source.extensions.fluxcd.io/v1beta1");
    assert_eq!(g["metadata"]["namespace"], "flux-system");
    assert_eq!(
        g["spec"]["sources"],
        serde_json::json!([{"alias": "repo", "kind": "GitRepository", "name": "flux-system", "namespace": "flux-system"}])
    );
    let artifacts = g["spec"]["artifacts"].as_array().unwrap();
    let names: Vec<&str> = artifacts.iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["kaas-tenant-acme", "kaas-tenant-globex", "kaas-tenant-initech"]);
    for (t, a) in TENANTS.iter().zip(artifacts) {
        // No `revision`: the ExternalArtifact's revision is its content's digest.
        assert!(a.get("revision").is_none(), "{a}");
        assert_eq!(a["originRevision"], "@repo");
        let ks = repo.object(&format!("flux/kustomization-kaas-tenant-{t}.yaml"));
        assert_eq!(
            ks["spec"]["sourceRef"],
            serde_json::json!({"kind": "ExternalArtifact", "name": a["name"], "namespace": "flux-system"})
        );
        assert_eq!(ks["spec"]["interval"], "1h");
        assert_eq!(ks["spec"]["dependsOn"][0]["name"], "kaas-platform");
        // The Kustomization's path is a folder of the artifact, and everything its
        // kustomization.yaml lists (its objects and ../../../base/tenant) is in the artifact.
        let files = artifact_files(&repo, &a["copy"]);
        let path = Path::new(ks["spec"]["path"].as_str().unwrap().trim_start_matches("./")).to_path_buf();
        assert!(
            files.contains(&path.join("kustomization.yaml")),
            "{path:?} in {files:?}"
        );
        let index = repo.object(&format!("{}/kustomization.yaml", path.display()));
        let resources = index["resources"].as_array().unwrap();
        assert!(resources.iter().any(|r| r == "../../../base/tenant"), "{resources:?}");
        for r in resources {
            let r = normal(&path.join(r.as_str().unwrap()));
            assert!(
                files.contains(&r) || files.contains(&r.join("kustomization.yaml")),
                "{t}: `{}` is not in its artifact: {files:?}",
                r.display()
            );
        }
        // The in-tenant access bindings read the same artifact, which holds their folder.
        let access = format!("overlays/tenants/{t}/kustomization-{t}-access.yaml");
        assert!(
            *t != "acme" || repo.path().join(&access).exists(),
            "acme has admin groups"
        );
        if repo.path().join(&access).exists() {
            let k = repo.object(&access);
            assert_eq!(k["spec"]["sourceRef"], ks["spec"]["sourceRef"], "{access}");
            assert_eq!(k["spec"]["interval"], ks["spec"]["interval"], "{access}");
            let folder =
                Path::new(k["spec"]["path"].as_str().unwrap().trim_start_matches("./")).join("kustomization.yaml");
            assert!(files.contains(&folder), "{folder:?} in {files:?}");
        }
        // And nothing of another tenant.
        assert!(
            files
                .iter()
                .all(|f| f.starts_with(&path) || f.starts_with("base/tenant")),
            "{files:?}"
        );
    }
    // The platform stays on git; the root Kustomization lists the generator.
    for entry in ["kaas-kamaji", "kaas-platform"] {
        let platform = repo.object(&format!("flux/kustomization-{entry}.yaml"));
        assert_eq!(platform["spec"]["sourceRef"]["kind"], "GitRepository", "{entry}");
    }
    assert!(
        repo.read("flux/kustomization.yaml")
            .contains("- artifactgenerator-kaas-tenants.yaml")
    );
    // A deleted tenant leaves the generator (source-watcher then deletes its ExternalArtifact).
    std::fs::remove_file(repo.path().join("tenants/initech.yaml")).unwrap();
    let r = repo.run(&["render"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let g = &generators(&repo)["kaas-tenants"];
    assert!(!g.to_string().contains("initech"), "{g}");
}

#[test]
fn artifact_delivery_with_shards_has_one_generator_per_kustomize_controller_shard() {
    let repo = rendered(&format!("    shards: 4\n{ARTIFACT}"));
    let generators = generators(&repo);
    let mut seen = BTreeSet::new();
    for (name, g) in &generators {
        for a in g["spec"]["artifacts"].as_array().unwrap() {
            let artifact = a["name"].as_str().unwrap();
            let tenant = artifact.strip_prefix("kaas-tenant-").unwrap();
            let ks = repo.object(&format!("flux/kustomization-{artifact}.yaml"));
            let shard = ks["metadata"]["labels"]["sharding.fluxcd.io/key"].as_str().unwrap();
            assert_eq!(
                name,
                &format!("kaas-tenants-{shard}"),
                "{tenant}'s generator is its shard's"
            );
            assert!(seen.insert(tenant.to_string()), "{tenant} in two generators");
        }
    }
    assert_eq!(seen, TENANTS.map(String::from).into());
    // acme is in shard2 and initech in shard3 (pinned in src/model), globex elsewhere.
    assert!(
        generators.contains_key("kaas-tenants-shard2"),
        "{:?}",
        generators.keys()
    );
    assert!(
        generators.contains_key("kaas-tenants-shard3"),
        "{:?}",
        generators.keys()
    );
}

#[test]
fn artifact_delivery_renders_the_same_bytes_every_time() {
    let a = rendered(ARTIFACT);
    let b = rendered(ARTIFACT);
    let flux = |r: &Repo| -> BTreeMap<String, Vec<u8>> {
        r.snapshot()
            .into_iter()
            .filter(|(p, _)| p.starts_with("flux/"))
            .collect()
    };
    assert!(flux(&a).contains_key("flux/artifactgenerator-kaas-tenants.yaml"));
    assert_eq!(flux(&a), flux(&b));
    // A second render of the same input changes nothing.
    let before = a.snapshot();
    let r = a.run(&["render"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(before, a.snapshot());
}

#[test]
fn the_rendered_generator_passes_validation_against_its_crd_and_a_broken_one_is_named() {
    let crds = crds_dir();
    assert!(
        crds.join("source.extensions.fluxcd.io/artifactgenerators.yaml")
            .is_file(),
        "{} has no ArtifactGenerator CRD: make the folder with tests/upstream/crds.sh (it runs \
         tests/upstream/artifactgenerator.sh)",
        crds.display()
    );
    let crds = crds.to_str().unwrap();
    let repo = rendered(ARTIFACT);
    let r = repo.run(&["validate", "--crds", crds]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    // A revision that is no `@<alias>` and an artifact name that is no object name: the CRD's
    // pattern and its CEL rule.
    let path = "flux/artifactgenerator-kaas-tenants.yaml";
    let text = repo.read(path);
    let broken = text
        .replacen("  - name: kaas-tenant-acme\n", "  - name: Kaas_Tenant_Acme\n", 1)
        .replacen("    originRevision: \"@repo\"\n", "    originRevision: repo\n", 1);
    assert_ne!(broken, text);
    repo.write(path, &broken);
    let r = repo.run(&["validate", "--crds", crds, "--format", "json"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let findings: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["file"] == path)
        .map(|f| {
            format!(
                "{}:{} {}",
                f["line"],
                f["check"].as_str().unwrap(),
                f["message"].as_str().unwrap()
            )
        })
        .collect();
    let line = |needle: &str| broken.lines().position(|l| l.contains(needle)).unwrap() + 1;
    assert!(
        findings
            .iter()
            .any(|f| f.starts_with(&format!("{}:", line("originRevision: repo"))) && f.contains("originRevision")),
        "{findings:#?}"
    );
    assert!(
        findings
            .iter()
            .any(|f| f.contains("cel") && f.contains("artifact names must be valid Kubernetes object names")),
        "{findings:#?}"
    );
}

/// The 1-based line of kaas.yaml's line holding `line`, and the column of `value` on it.
#[track_caller]
fn at(repo: &Repo, line: &str, value: &str) -> (usize, usize) {
    let text = repo.read("kaas.yaml");
    let (n, l) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains(line))
        .expect("the line");
    (n + 1, l.find(value).expect("the value") + 1)
}

#[test]
fn artifact_delivery_refuses_what_cannot_work_at_the_field() {
    let repo =
        with_delivery("    delivery:\n      mode: artifact\n      oci: {repository: registry.example.com/kaas}\n");
    let (line, col) = at(&repo, "oci: {repository", "{");
    repo.assert_render_refused(
        &format!("kaas.yaml:{line}:{col}"),
        "`oci` settings with `mode: artifact`",
    );

    let repo = with_delivery("    delivery:\n      mode: git\n      artifact: {tenantInterval: 1h}\n");
    let (line, col) = at(&repo, "artifact: {", "{");
    repo.assert_render_refused(
        &format!("kaas.yaml:{line}:{col}"),
        "`artifact` settings without `mode: artifact`",
    );

    let repo = with_delivery("    delivery:\n      mode: artifact\n      artifact: {tenantInterval: hourly}\n");
    let (line, col) = at(&repo, "tenantInterval: hourly", "hourly");
    let stderr = repo.assert_render_refused(&format!("kaas.yaml:{line}:{col}"), "`hourly` is not a duration");
    assert!(
        stderr.contains("spec.flux.delivery.artifact.tenantInterval"),
        "{stderr}"
    );

    // source-watcher takes no dots in a source's name.
    let repo = with_delivery(ARTIFACT);
    let text = repo.read("kaas.yaml");
    let (line, col) = at(&repo, "sourceRef:", "sourceRef");
    assert!(text.contains("name: flux-system"), "{text}");
    repo.write("kaas.yaml", &text.replacen("name: flux-system", "name: flux.system", 1));
    let (line2, col2) = at(&repo, "flux.system", "flux.system");
    assert!(line2 >= line && col2 > col, "the name is in sourceRef");
    repo.assert_render_refused(
        &format!("kaas.yaml:{line2}:{col2}"),
        "`flux.system` cannot be an ArtifactGenerator source",
    );

    let repo = with_delivery("    delivery:\n      mode: artefact\n");
    let line = repo
        .read("kaas.yaml")
        .lines()
        .position(|l| l.contains("mode: artefact"))
        .unwrap()
        + 1;
    let stderr = repo.assert_render_refused(&format!("kaas.yaml:{line}:"), "artefact");
    assert!(stderr.contains("artifact"), "the valid modes are named: {stderr}");
}

#[test]
fn artifact_delivery_needs_controllers_that_serve_external_artifacts() {
    let repo = with_delivery(ARTIFACT);
    let text = repo.read("kaas.yaml");
    let text = if text.contains("    controllers:\n") {
        text.replacen("    controllers:\n", "    controllers:\n      kustomize: v1.6.1\n", 1)
    } else {
        text.replacen(
            "    delivery:\n",
            "    controllers:\n      kustomize: v1.6.1\n    delivery:\n",
            1,
        )
    };
    repo.write("kaas.yaml", &text);
    let line = text.lines().position(|l| l.contains("kustomize: v1.6.1")).unwrap() + 1;
    let stderr = repo.assert_render_refused(
        &format!("kaas.yaml:{line}:"),
        "`v1.6.1` does not serve ExternalArtifact",
    );
    assert!(stderr.contains("v1.7.0"), "{stderr}");
}

#[test]
fn a_generator_over_a_thousand_tenants_is_refused_at_the_mode_with_the_shards_that_fit() {
    let repo = with_delivery(ARTIFACT);
    for t in TENANTS {
        std::fs::remove_file(repo.path().join(format!("tenants/{t}.yaml"))).unwrap();
    }
    // 1,001 tenants in the shape of bench/gen.py's.
    for i in 0..1001 {
        let (a, b) = (i / 250, i % 250);
        repo.write(
            &format!("tenants/t{i:05}.yaml"),
            &format!(
                "apiVersion: kaas-gitops.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: t{i:05}\nspec:\n  kubernetes:\n    version: v1.33.4\n  controlPlane:\n    replicas: 2\n    dataStore: {{shared: default}}\n  infrastructure:\n    provider: proxmox\n    proxmox:\n      sourceNode: pve\n      templateID: 100\n      dnsServers: [10.0.0.53]\n      ipv4: {{addresses: [\"10.{a}.{b}.10-10.{a}.{b}.250\"], gateway: 10.{a}.{b}.1, prefix: 24}}\n      credentialsSecret: proxmox-credentials\n  workers:\n    - name: md-0\n      replicas: 1\n      machine: {{cpus: 2, memoryMiB: 4096, diskGiB: 40}}\n"
            ),
        );
    }
    let (line, col) = at(&repo, "mode: artifact", "artifact");
    let stderr = repo.assert_render_refused(
        &format!("kaas.yaml:{line}:{col}"),
        "`mode: artifact` would give the ArtifactGenerator `kaas-tenants` 1001 tenants; one lists at most 1000 artifacts",
    );
    assert!(stderr.contains("`spec.flux.shards: 2`"), "{stderr}");
}

#[test]
fn without_a_crd_folder_validate_downloads_source_watchers_crds_for_artifact_delivery() {
    let repo = rendered(ARTIFACT);
    let dir = tempfile::tempdir().unwrap();
    let (log, cache) = (dir.path().join("requests"), dir.path().join("cache"));
    let mirror = crate::common::ReleaseMirror::serve(&crds_dir(), Some(&log));
    let run = crate::crd_fetch::validate(&repo, &mirror.url(), &cache);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let requests = std::fs::read_to_string(&log).unwrap();
    assert!(
        requests
            .lines()
            .any(|l| l == "/fluxcd/source-watcher/releases/download/v2.2.4/source-watcher.crds.yaml"),
        "{requests}"
    );
    // The example's 22 kinds and the ArtifactGenerator.
    assert!(run.stderr.contains("against 23 CRDs"), "{}", run.stderr);

    // A source-watcher release is refused without the mode, at its line.
    let repo = Repo::example();
    repo.replace(
        "kaas.yaml",
        "    interval: 10m\n",
        "    interval: 10m\n    controllers: {sourceWatcher: v2.2.4}\n",
    );
    let (line, col) = at(&repo, "sourceWatcher: v2.2.4", "v2.2.4");
    repo.assert_render_refused(
        &format!("kaas.yaml:{line}:{col}"),
        "a source-watcher release without `delivery.mode: artifact`",
    );
}
