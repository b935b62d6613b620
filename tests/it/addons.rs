//! Tenant add-ons (issue 23): the catalog in `kaas.yaml` and each tenant's choice rendered as
//! Flux HelmReleases that install into the tenant cluster through its kubeconfig Secret, in
//! order, wired to the tenant; the real Cilium chart accepts what kaas-gitops writes.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{Repo, project_root, run_ok};

fn rendered_example() -> Repo {
    let repo = Repo::example();
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    repo
}

fn files(repo: &Repo, dir: &str) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(repo.path().join(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

/// A catalog with a CNI, a CCM-kind and an `other` add-on, the CNI the default.
const CATALOG: &str = "  addons:
    catalog:
      cilium:
        kind: cni
        repository: https://helm.cilium.io
        chart: cilium
        version: 1.19.6
        wiring: cilium
        replacesKubeProxy: true
        values:
          operator: {replicas: 1}
        images:
          image: {repository: quay.io/cilium/cilium, tag: v1.19.6, digestFormat: digest}
      calico:
        kind: cni
        repository: https://docs.tigera.io/calico/charts
        chart: tigera-operator
        version: v3.30.0
        namespace: tigera-operator
      vsphere-ccm:
        kind: ccm
        repository: https://kubernetes.github.io/cloud-provider-vsphere
        chart: vsphere-cpi
        version: 1.31.0
      metrics:
        kind: other
        repository: oci://registry-1.docker.io/bitnamicharts
        chart: metrics-server
        version: 7.2.0
    defaults:
      cni: cilium
      extra: [metrics]
";

fn with_catalog() -> Repo {
    let repo = Repo::example();
    let text = repo.read("kaas.yaml");
    let start = text
        .find("  # Charts installed into every tenant cluster")
        .expect("the example's add-ons, last in kaas.yaml");
    repo.write("kaas.yaml", &format!("{}{CATALOG}", &text[..start]));
    repo
}

#[test]
fn every_example_tenant_gets_cilium_through_its_kubeconfig_wired_to_its_cidr_and_endpoint() {
    let repo = rendered_example();
    for (tenant, pods, host) in [
        ("acme", "10.243.0.0/16", "10.0.4.10"),
        ("globex", "192.168.0.0/16", "10.0.4.100"),
        ("initech", "192.168.0.0/16", "10.0.4.101"),
    ] {
        let hr = repo.object(&format!("overlays/tenants/{tenant}/helmrelease-{tenant}-cilium.yaml"));
        let spec = &hr["spec"];
        assert_eq!(hr["metadata"]["namespace"], tenant);
        assert_eq!(
            spec["kubeConfig"]["secretRef"],
            json!({"name": format!("{tenant}-kubeconfig"), "key": "value"}),
            "{tenant}: CAPI's kubeconfig Secret, key `value`"
        );
        assert_eq!(spec["releaseName"], "cilium");
        assert_eq!(spec["targetNamespace"], "kube-system");
        assert_eq!(spec["storageNamespace"], "kube-system");
        assert_eq!(spec["chart"]["spec"]["chart"], "cilium");
        assert_eq!(spec["chart"]["spec"]["version"], "1.19.6");
        let source = &spec["chart"]["spec"]["sourceRef"];
        let repo_file = format!(
            "overlays/platform/kamaji/helmrepository-{}.yaml",
            source["name"].as_str().unwrap()
        );
        let helm_repo = repo.object(&repo_file);
        assert_eq!(helm_repo["spec"]["url"], "https://helm.cilium.io");
        assert_eq!(helm_repo["metadata"]["namespace"], source["namespace"]);
        assert_eq!(spec["install"]["strategy"]["name"], "RetryOnFailure");
        assert_eq!(spec["uninstall"], json!({"timeout": "2m", "disableWait": true}));
        let v = &spec["values"];
        assert_eq!(
            v["ipam"]["operator"]["clusterPoolIPv4PodCIDRList"],
            json!([pods]),
            "{tenant}"
        );
        assert_eq!(v["k8sServiceHost"], host, "{tenant}");
        assert_eq!(v["k8sServicePort"], 6443);
        assert_eq!(v["kubeProxyReplacement"], true);
        assert_eq!(v["operator"]["replicas"], 1, "the catalog's values");
        // No image listed in the example's catalog: the chart's own digests stay.
        assert!(v.get("image").is_none(), "{v}");
        // Kamaji's kube-proxy is off: Cilium replaces it.
        let kcp = repo.object(&format!("overlays/tenants/{tenant}/kamajicontrolplane-{tenant}.yaml"));
        assert!(
            kcp["spec"]["addons"].get("kubeProxy").is_none(),
            "{tenant}: {}",
            kcp["spec"]["addons"]
        );
        assert!(kcp["spec"]["addons"].get("coreDNS").is_some());
    }
}

#[test]
fn add_ons_install_in_order_cni_then_ccm_then_the_rest() {
    let repo = with_catalog();
    repo.replace(
        "tenants/acme.yaml",
        "  access:\n",
        "  addons:\n    extra: [vsphere-ccm]\n    values:\n      metrics: {replicas: 2}\n  access:\n",
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let dir = "overlays/tenants/acme";
    let cni = repo.object(&format!("{dir}/helmrelease-acme-cilium.yaml"));
    let ccm = repo.object(&format!("{dir}/helmrelease-acme-vsphere-ccm.yaml"));
    let other = repo.object(&format!("{dir}/helmrelease-acme-metrics.yaml"));
    assert!(cni["spec"].get("dependsOn").is_none(), "the CNI waits for nothing");
    assert_eq!(ccm["spec"]["dependsOn"], json!([{"name": "acme-cilium"}]));
    assert_eq!(
        other["spec"]["dependsOn"],
        json!([{"name": "acme-cilium"}, {"name": "acme-vsphere-ccm"}])
    );
    assert_eq!(other["spec"]["values"], json!({"replicas": 2}), "the tenant's values");
    // An OCI repository becomes an OCI HelmRepository of the platform overlay.
    let src = &other["spec"]["chart"]["spec"]["sourceRef"];
    let hr = repo.object(&format!(
        "overlays/platform/kamaji/helmrepository-{}.yaml",
        src["name"].as_str().unwrap()
    ));
    assert_eq!(hr["spec"]["type"], "oci");
    // A tenant without the extra gets the CNI and the default `other`, no CCM.
    let globex = files(&repo, "overlays/tenants/globex");
    let addons: Vec<&String> = globex
        .iter()
        .filter(|f| f.starts_with("helmrelease-globex-") && !f.contains("autoscaler") && !f.contains("etcd"))
        .collect();
    assert_eq!(
        addons,
        ["helmrelease-globex-cilium.yaml", "helmrelease-globex-metrics.yaml"]
    );
}

#[test]
fn removing_an_add_on_from_a_tenant_removes_its_helm_release() {
    let repo = with_catalog();
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        repo.path()
            .join("overlays/tenants/acme/helmrelease-acme-metrics.yaml")
            .is_file()
    );
    repo.replace(
        "tenants/acme.yaml",
        "  access:\n",
        "  addons: {disable: [metrics]}\n  access:\n",
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        !repo
            .path()
            .join("overlays/tenants/acme/helmrelease-acme-metrics.yaml")
            .exists()
    );
    let kustomization = repo.read("overlays/tenants/acme/kustomization.yaml");
    assert!(
        !kustomization.contains("helmrelease-acme-metrics.yaml"),
        "{kustomization}"
    );
    // A CNI of its own: the CNI release goes, and Kamaji's kube-proxy comes back.
    repo.replace(
        "tenants/acme.yaml",
        "addons: {disable: [metrics]}",
        "addons: {cni: calico}",
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        !repo
            .path()
            .join("overlays/tenants/acme/helmrelease-acme-cilium.yaml")
            .exists()
    );
    let calico = repo.object("overlays/tenants/acme/helmrelease-acme-calico.yaml");
    assert_eq!(calico["spec"]["targetNamespace"], "tigera-operator");
    assert_eq!(calico["spec"]["install"]["createNamespace"], true);
    let kcp = repo.object("overlays/tenants/acme/kamajicontrolplane-acme.yaml");
    assert!(kcp["spec"]["addons"].get("kubeProxy").is_some());
}

#[test]
fn kube_proxy_forced_on_with_a_cni_that_replaces_it_is_refused() {
    let repo = with_catalog();
    repo.replace(
        "tenants/acme.yaml",
        "    replicas: 2\n    dataStore:",
        "    replicas: 2\n    addons: {kubeProxy: true}\n    dataStore:",
    );
    let err = repo.assert_render_refused(
        "tenants/acme.yaml:14:25",
        "kube-proxy is on, and the CNI `cilium` replaces it",
    );
    assert!(err.contains("spec.controlPlane.addons.kubeProxy"), "{err}");
}

#[test]
fn two_catalog_repositories_with_one_helm_repository_name_are_refused_at_the_second() {
    let repo = rendered_example();
    // `https://helm.cilium.io` and `https://helm.releases.hashicorp.com` both derive `helm`.
    let vault = "      vault:\n        kind: other\n        repository: https://helm.releases.hashicorp.com\n        chart: vault\n        version: 0.30.0\n";
    let text = repo.read("kaas.yaml");
    repo.write(
        "kaas.yaml",
        &text.replacen("    catalog:\n", &format!("    catalog:\n{vault}"), 1),
    );
    let line = repo
        .read("kaas.yaml")
        .lines()
        .position(|l| l.contains("helm.releases.hashicorp.com"))
        .unwrap()
        + 1;
    let err = repo.assert_render_refused(
        &format!("kaas.yaml:{line}:21"),
        "`https://helm.releases.hashicorp.com` and `https://helm.cilium.io` (`spec.addons.catalog.cilium.repository`) would both be the HelmRepository `helm`",
    );
    assert!(err.contains("= field: `spec.addons.catalog.vault.repository`"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn unknown_add_ons_are_refused_naming_the_valid_ones() {
    let repo = with_catalog();
    repo.replace(
        "tenants/acme.yaml",
        "  access:\n",
        "  addons:\n    cni: flannel\n    extra: [cilium, nope]\n  access:\n",
    );
    let err = repo.assert_render_refused("tenants/acme.yaml:39:10", "unknown add-on `flannel`");
    assert!(err.contains("the catalog has `calico`, `cilium`"), "{err}");
    assert!(err.contains("--> tenants/acme.yaml:40:13"), "a CNI under extra: {err}");
    assert!(err.contains("`cilium` is a `cni` add-on"), "{err}");
    assert!(err.contains("--> tenants/acme.yaml:40:21"), "{err}");
    assert!(err.contains("unknown add-on `nope`"), "{err}");
    assert!(err.contains("`metrics`, `vsphere-ccm`"), "{err}");
}

#[test]
fn literal_secrets_in_add_on_values_are_refused() {
    let repo = with_catalog();
    repo.replace(
        "tenants/acme.yaml",
        "  access:\n",
        "  addons:\n    values:\n      metrics: {auth: {password: hunter2}}\n  access:\n",
    );
    repo.assert_render_refused("tenants/acme.yaml:40:34", "`password` holds a literal secret");
}

// ---- the real Cilium chart -----------------------------------------------------------------

/// The `helm` binary: `KAAS_HELM`, else `helm` on the PATH.
pub(crate) fn helm() -> PathBuf {
    std::env::var_os("KAAS_HELM").map(PathBuf::from).unwrap_or_else(|| {
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|d| d.join("helm"))
            .find(|p| p.is_file())
            .unwrap_or_else(|| panic!("helm is not installed: set KAAS_HELM or run `.ci/run`"))
    })
}

/// Cilium 1.19.6 whole: `KAAS_CHARTS/cilium`, else `../shared/charts/cilium`. It is not among
/// the charts `tests/upstream/charts.sh` assembles into `KAAS_CHARTS` (cilium/charts publishes a
/// tarball, not a Go module, so `sources.tsv` cannot name it): without a maintainer's copy
/// this test fails, it never skips.
fn cilium_chart() -> PathBuf {
    let candidates: Vec<PathBuf> = std::env::var_os("KAAS_CHARTS")
        .map(|d| PathBuf::from(d).join("cilium"))
        .into_iter()
        .chain([project_root().join("../shared/charts/cilium")])
        .collect();
    candidates
        .iter()
        .find(|d| d.join("Chart.yaml").is_file() && d.join("values.schema.json").is_file())
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "no Cilium 1.19.6 chart in {candidates:?}: put the upstream chart (cilium/charts \
                 cilium-1.19.6.tgz, unpacked) in `KAAS_CHARTS/cilium` or `../shared/charts/cilium`"
            )
        })
}

pub(crate) fn helm_template(chart: &Path, release: &str, namespace: &str, values: &Value) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("values.json");
    std::fs::write(&file, values.to_string()).unwrap();
    let out = run_ok(
        Command::new(helm())
            .args(["template", release])
            .arg(chart)
            .args(["--namespace", namespace, "--values"])
            .arg(&file),
    );
    out.split("\n---")
        .filter(|d| d.lines().any(|l| l.starts_with("kind:")))
        .map(|d| serde_saphyr::from_str::<Value>(d).unwrap_or_else(|e| panic!("{e}:\n{d}")))
        .collect()
}

pub(crate) fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind}/{name} rendered"))
}

fn env_of<'a>(container: &'a Value, name: &str) -> Option<&'a Value> {
    container["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .map(|e| &e["value"])
}

#[test]
fn the_real_cilium_chart_takes_the_tenant_cidr_and_endpoint_from_the_values_kaas_gitops_writes() {
    let chart = cilium_chart();
    let repo = rendered_example();
    let hr = repo.object("overlays/tenants/acme/helmrelease-acme-cilium.yaml");
    let values = &hr["spec"]["values"];
    let docs = helm_template(&chart, "cilium", "kube-system", values);
    let config = find(&docs, "ConfigMap", "cilium-config");
    assert_eq!(config["data"]["cluster-pool-ipv4-cidr"], "10.243.0.0/16");
    assert_eq!(config["data"]["ipam"], "cluster-pool");
    assert_eq!(config["data"]["kube-proxy-replacement"], "true");
    let ds = find(&docs, "DaemonSet", "cilium");
    let agent = ds["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "cilium-agent")
        .expect("the cilium-agent container");
    assert_eq!(env_of(agent, "KUBERNETES_SERVICE_HOST"), Some(&json!("10.0.4.10")));
    assert_eq!(env_of(agent, "KUBERNETES_SERVICE_PORT"), Some(&json!("6443")));
    // The chart's own pin of its default image (cilium 1.19.6 `values.yaml` `image.digest`).
    assert_eq!(
        agent["image"],
        "quay.io/cilium/cilium:v1.19.6@sha256:0df5b2750b64c49843aba1d649e9eaf61467cb0645ad3171db6f6962c095ac92"
    );
    let operator = find(&docs, "Deployment", "cilium-operator");
    assert_eq!(operator["spec"]["replicas"], 1);

    // Helm enforces values.schema.json: a value of the wrong type is refused, so the values
    // above passed it.
    let mut wrong = values.clone();
    wrong["k8sServicePort"] = json!({"not": "a port"});
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), wrong.to_string()).unwrap();
    let out = Command::new(helm())
        .args(["template", "cilium"])
        .arg(&chart)
        .arg("--values")
        .arg(file.path())
        .output()
        .unwrap();
    assert!(!out.status.success(), "helm accepted a schema violation");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("k8sServicePort"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_pinned_cilium_image_renders_with_its_digest_and_the_chart_uses_it() {
    let chart = cilium_chart();
    let repo = with_catalog();
    let digest = format!("sha256:{}", "ab".repeat(32));
    let lock = std::fs::read_to_string(project_root().join("kaas.lock"))
        .unwrap()
        .replace(
            "images: []",
            &format!("images:\n- image: quay.io/cilium/cilium\n  tag: v1.19.6\n  digest: {digest}"),
        );
    repo.write("kaas.lock", &lock);
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let hr = repo.object("overlays/tenants/globex/helmrelease-globex-cilium.yaml");
    let image = &hr["spec"]["values"]["image"];
    assert_eq!(
        image,
        &json!({"repository": "quay.io/cilium/cilium", "tag": "v1.19.6", "digest": digest, "useDigest": true})
    );
    let docs = helm_template(&chart, "cilium", "kube-system", &hr["spec"]["values"]);
    let ds = find(&docs, "DaemonSet", "cilium");
    let agent = &ds["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(agent["image"], format!("quay.io/cilium/cilium:v1.19.6@{digest}"));
}

#[test]
fn validate_refuses_a_control_plane_keeping_kube_proxy_beside_a_cni_that_replaces_it() {
    let repo = rendered_example();
    let crds = crate::common::crds_dir();
    let crds = crds.to_str().unwrap();
    let ok = repo.run(&["validate", "--crds", crds]);
    assert_eq!(ok.code, 0, "the example validates:\n{}", ok.stderr);
    // A hand edit turns Kamaji's kube-proxy back on next to Cilium's kube-proxy replacement.
    repo.replace(
        "overlays/tenants/acme/kamajicontrolplane-acme.yaml",
        "    konnectivity: {}\n",
        "    konnectivity: {}\n    kubeProxy: {}\n",
    );
    let run = repo.run(&["validate", "--crds", crds]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("--> overlays/tenants/acme/kamajicontrolplane-acme.yaml:21:"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("Kamaji's kube-proxy is on, and the HelmRelease `acme-cilium`"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_unpinned_image_of_a_digest_chart_never_keeps_the_charts_digest() {
    let repo = with_catalog();
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("quay.io/cilium/cilium:v1.19.6"),
        "named as unpinned: {}",
        run.stderr
    );
    let hr = repo.object("overlays/tenants/acme/helmrelease-acme-cilium.yaml");
    assert_eq!(
        hr["spec"]["values"]["image"],
        json!({"repository": "quay.io/cilium/cilium", "tag": "v1.19.6", "useDigest": false})
    );
    let locked = repo.run(&["render", "--locked"]);
    assert_eq!(locked.code, 1, "{}", locked.stderr);
    assert!(
        locked
            .stderr
            .contains("`quay.io/cilium/cilium:v1.19.6` has no digest in kaas.lock"),
        "{}",
        locked.stderr
    );
}

#[test]
fn the_real_cilium_chart_gets_ipv6_on_for_ipv6_pod_cidrs_and_ipv4_off_without_ipv4_ones() {
    let chart = cilium_chart();
    let repo = rendered_example();
    let config = |from: &str, pods: &str| {
        repo.replace(
            "tenants/acme.yaml",
            &format!("pods: [{from}]"),
            &format!("pods: [{pods}]"),
        );
        let run = repo.run(&["render"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let hr = repo.object("overlays/tenants/acme/helmrelease-acme-cilium.yaml");
        let docs = helm_template(&chart, "cilium", "kube-system", &hr["spec"]["values"]);
        find(&docs, "ConfigMap", "cilium-config")["data"].clone()
    };
    // Dual stack: both families on, each with the tenant's own pool.
    let dual = config("10.243.0.0/16", "10.243.0.0/16, \"fd00:10:243::/104\"");
    assert_eq!(dual["enable-ipv4"], "true");
    assert_eq!(dual["enable-ipv6"], "true");
    assert_eq!(dual["cluster-pool-ipv4-cidr"], "10.243.0.0/16");
    assert_eq!(dual["cluster-pool-ipv6-cidr"], "fd00:10:243::/104");
    // IPv6 only: no IPv4 pool, so not the chart's default 10.0.0.0/8 either.
    let v6 = config("10.243.0.0/16, \"fd00:10:243::/104\"", "\"fd00:10:243::/104\"");
    assert_eq!(v6["enable-ipv4"], "false", "{v6}");
    assert_eq!(v6["enable-ipv6"], "true");
}
