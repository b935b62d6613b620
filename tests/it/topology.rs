//! Topology mode, from `tests/fixtures/topology/`: ClusterClasses in the platform layer (shared
//! Kamaji and kubeadm templates, provider templates, variables, patches), tenants rendered as a
//! `Cluster` with `spec.topology`, and variables checked against the class's schemas with the
//! tenant file's line in the error.

use serde_json::{Value, json};

use crate::common::{Repo, crds_dir, kustomize, kustomize_dirs, rendered_parts};
use crate::crd_schema::Crds;

/// The topology fixture, rendered.
#[track_caller]
fn render() -> Repo {
    let repo = Repo::fixture("topology");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    repo
}

#[test]
fn topology_renders_as_snapshotted() {
    let repo = render();
    let parts = rendered_parts(&repo);
    // The platform, the flux entry points, the lock, one part per class and one per tenant.
    let count = |dir: &str| std::fs::read_dir(repo.path().join(dir)).unwrap().count();
    let classes = std::fs::read_dir(repo.path().join("overlays/platform"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("clusterclass-")
        })
        .count();
    assert_eq!(classes, 9);
    assert_eq!(parts.len(), 3 + classes + count("tenants"), "{:?}", parts.keys());
    for (part, text) in parts {
        insta::assert_snapshot!(format!("topology__{part}"), text);
    }
    let again = repo.run(&["render"]);
    assert!(again.stderr.contains("0 written, 0 deleted"), "{}", again.stderr);
}

#[test]
fn every_class_object_is_valid_against_its_crd_and_builds() {
    let repo = render();
    let report = Crds::load(&crds_dir()).check_dir(&repo.path().join("overlays"));
    assert!(report.errors.is_empty(), "{}", report.errors.join("\n"));
    // `../shared/crds` has no CRD for these two upstream kinds; every other object is checked.
    let unchecked: Vec<&str> = report.without_crd.iter().map(|(_, k)| k.as_str()).collect();
    assert_eq!(unchecked, vec!["KubevirtClusterTemplate", "NutanixClusterTemplate"]);
    assert!(report.validated >= 30, "{}", report.validated);
    for dir in kustomize_dirs(&repo) {
        let built = kustomize(&dir);
        assert_eq!(built.code, 0, "kustomize {}: {}", dir.display(), built.stderr);
    }
}

#[test]
fn classes_share_one_control_plane_and_one_bootstrap_template() {
    let repo = render();
    let classes = [
        "proxmox-standard",
        "hetzner-small",
        "kubevirt-tiny",
        "nutanix-ahv",
        "aws-general",
    ];
    let kcp = repo.file_starting("overlays/platform", "kamajicontrolplanetemplate-kamaji-");
    let kct = repo.file_starting("overlays/platform", "kubeadmconfigtemplate-kamaji-worker-");
    let kcp = repo.object(&kcp);
    let kct = repo.object(&kct);
    assert_eq!(kcp["metadata"]["namespace"], "kaas-classes");
    assert_eq!(kct["metadata"]["namespace"], "kaas-classes");
    for name in classes {
        let cc = repo.object(&format!("overlays/platform/clusterclass-{name}.yaml"));
        assert_eq!(cc["apiVersion"], "cluster.x-k8s.io/v1beta2");
        assert_eq!(cc["metadata"]["namespace"], "kaas-classes");
        let spec = &cc["spec"];
        assert_eq!(spec["controlPlane"]["templateRef"]["name"], kcp["metadata"]["name"]);
        assert_eq!(
            spec["controlPlane"]["templateRef"]["kind"],
            "KamajiControlPlaneTemplate"
        );
        let md = &spec["workers"]["machineDeployments"][0];
        assert_eq!(md["class"], "default-worker");
        assert_eq!(md["bootstrap"]["templateRef"]["name"], kct["metadata"]["name"]);
        // The provider's own templates exist next to the class.
        for r in [
            &spec["infrastructure"]["templateRef"],
            &md["infrastructure"]["templateRef"],
        ] {
            let file = format!(
                "overlays/platform/{}-{}.yaml",
                r["kind"].as_str().unwrap().to_lowercase(),
                r["name"].as_str().unwrap()
            );
            let t = repo.object(&file);
            assert_eq!(t["apiVersion"], r["apiVersion"], "{file}");
            assert_eq!(t["metadata"]["namespace"], "kaas-classes");
        }
    }
}

/// The patches of class `class`.
fn cc_patches(repo: &Repo, class: &str) -> Vec<Value> {
    let cc = repo.object(&format!("overlays/platform/clusterclass-{class}.yaml"));
    cc["spec"]["patches"].as_array().unwrap().clone()
}

/// The patch named `name` of class `class`.
fn patch(repo: &Repo, class: &str, name: &str) -> Value {
    let cc = repo.object(&format!("overlays/platform/clusterclass-{class}.yaml"));
    cc["spec"]["patches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no patch `{name}` in {class}"))
        .clone()
}

#[test]
fn variables_and_patches_as_kaas_yaml_declares_them() {
    let repo = render();
    let cc = repo.object("overlays/platform/clusterclass-hetzner-small.yaml");
    let lb = cc["spec"]["variables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "lbType")
        .unwrap()
        .clone();
    assert_eq!(
        lb,
        json!({
            "name": "lbType",
            "required": true,
            "schema": {"openAPIV3Schema": {"type": "string", "enum": ["lb11", "lb21", "lb31"], "default": "lb11"}},
        })
    );
    let kubevirt = repo.object("overlays/platform/clusterclass-kubevirt-tiny.yaml");
    let cores = &kubevirt["spec"]["variables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "workerCores")
        .unwrap()["schema"]["openAPIV3Schema"];
    assert_eq!(
        cores,
        &json!({"type": "integer", "minimum": 1, "maximum": 16, "default": 2})
    );
    // `enabledIf`, and a key with a `/` escaped as `~1` in the path, kept as written.
    let worker_type = patch(&repo, "hetzner-small", "worker-type");
    assert_eq!(worker_type["enabledIf"], "{{ if .workerType }}true{{ end }}");
    assert_eq!(
        worker_type["definitions"][0]["selector"]["kind"],
        "HCloudMachineTemplate"
    );
    assert_eq!(
        worker_type["definitions"][0]["selector"]["matchResources"],
        json!({"machineDeploymentClass": {"names": ["default-worker"]}})
    );
    let lb_patch = patch(&repo, "hetzner-small", "load-balancer-type");
    assert_eq!(
        lb_patch["definitions"][0]["jsonPatches"][0],
        json!({
            "op": "add",
            "path": "/spec/template/spec/network/serviceAnnotations/load-balancer.hetzner.cloud~1type",
            "valueFrom": {"variable": "lbType"},
        })
    );
    // Built-in patches come first, so a class's patch can add to the map the Hetzner one makes.
    let names: Vec<String> = cc["spec"]["patches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "kaas-datastore",
            "kaas-datastore-names",
            "kaas-endpoint",
            "kaas-dns",
            "kaas-ssh-keys",
            "kaas-hetzner",
            "kaas-node-labels",
            "kaas-node-taints",
            "worker-type",
            "load-balancer-type"
        ]
    );
    let hetzner = patch(&repo, "hetzner-small", "kaas-hetzner");
    assert_eq!(
        hetzner["definitions"][0]["jsonPatches"][0]["value"],
        json!({"load-balancer.hetzner.cloud/location": "fsn1"})
    );
}

#[test]
fn provider_guarantees_hold_in_class_templates() {
    let repo = render();
    let hct = repo.object(&repo.file_starting("overlays/platform", "hetznerclustertemplate-hetzner-small-"));
    let t = &hct["spec"]["template"];
    assert_eq!(
        t["metadata"]["annotations"]["capi.syself.com/allow-empty-control-plane-address"],
        "true"
    );
    assert_eq!(t["spec"]["controlPlaneLoadBalancer"]["enabled"], false);
    assert_eq!(t["spec"]["controlPlaneRegions"], json!([]));
    let kct = repo.object(&repo.file_starting("overlays/platform", "kubevirtclustertemplate-kubevirt-tiny-"));
    assert_eq!(
        kct["spec"]["template"]["metadata"]["annotations"]["cluster.x-k8s.io/managed-by"],
        "kamaji"
    );
    let act = repo.object(&repo.file_starting("overlays/platform", "awsclustertemplate-aws-general-"));
    assert_eq!(
        act["spec"]["template"]["spec"]["controlPlaneLoadBalancer"]["loadBalancerType"],
        "disabled"
    );
    let pct = repo.object(&repo.file_starting("overlays/platform", "proxmoxclustertemplate-proxmox-standard-"));
    assert_eq!(pct["spec"]["template"]["spec"]["externalManagedControlPlane"], true);
    // Nutanix: no endpoint in the template (the topology controller ignores an empty one and
    // Kamaji patches it); the VIP, when known, comes in through the `kaas-endpoint` patch.
    let nct = repo.object(&repo.file_starting("overlays/platform", "nutanixclustertemplate-nutanix-ahv-"));
    assert_eq!(nct["spec"]["template"]["spec"]["controlPlaneEndpoint"], Value::Null);
    let endpoint = patch(&repo, "nutanix-ahv", "kaas-endpoint");
    assert_eq!(endpoint["definitions"][1]["selector"]["kind"], "NutanixClusterTemplate");
    assert_eq!(
        endpoint["definitions"][1]["jsonPatches"][0],
        json!({"op": "add", "path": "/spec/template/spec/controlPlaneEndpoint", "valueFrom": {"variable": "kaasEndpoint"}})
    );
}

#[test]
fn a_tenant_renders_a_cluster_with_topology() {
    let repo = render();
    let dir = "overlays/tenants/alpha";
    let files: Vec<String> = std::fs::read_dir(repo.path().join(dir))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // No control plane, infrastructure cluster or pools of its own: the class makes them.
    for kind in [
        "kamajicontrolplane-",
        "hetznercluster-",
        "machinedeployment-",
        "hcloudmachinetemplate-",
    ] {
        assert!(!files.iter().any(|f| f.starts_with(kind)), "{kind} in {files:?}");
    }
    let cluster = repo.object(&format!("{dir}/cluster-alpha.yaml"));
    let topology = &cluster["spec"]["topology"];
    assert_eq!(
        topology["classRef"],
        json!({"name": "hetzner-small", "namespace": "kaas-classes"})
    );
    assert_eq!(topology["version"], "v1.33.4");
    assert_eq!(topology["controlPlane"]["replicas"], 2);
    assert_eq!(cluster["spec"]["controlPlaneRef"], Value::Null);
    let mds = topology["workers"]["machineDeployments"].as_array().unwrap();
    assert_eq!(
        mds[0],
        json!({"class": "default-worker", "name": "md-0", "replicas": 2, "deletion": {"nodeDrainTimeoutSeconds": 600}})
    );
    // The autoscaled pool: no replicas, the autoscaler's bounds and the class's machine size.
    let burst = &mds[1];
    assert_eq!(burst["replicas"], Value::Null);
    let a = &burst["metadata"]["annotations"];
    assert_eq!(a["cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"], "0");
    assert_eq!(a["cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"], "5");
    assert_eq!(a["capacity.cluster-autoscaler.kubernetes.io/cpu"], "4");
    assert_eq!(a["capacity.cluster-autoscaler.kubernetes.io/memory"], "8192Mi");
    assert!(
        repo.path()
            .join(format!("{dir}/helmrelease-alpha-autoscaler.yaml"))
            .exists()
    );
    let variables: Vec<(String, Value)> = topology["variables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["name"].as_str().unwrap().to_string(), v["value"].clone()))
        .collect();
    let get = |n: &str| variables.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    assert_eq!(get("kaasDataStore"), Some(json!("alpha-etcd")));
    // A Hetzner tenant's API server address is its hcloud load balancer's, not a pool VIP: the
    // Kamaji provider fills the endpoint in (no `kaasEndpoint`, so no `serviceAddress` patch).
    assert_eq!(get("kaasEndpoint"), None);
    assert_eq!(get("workerType"), Some(json!("cpx41")));
    assert_eq!(get("lbType"), Some(json!("lb21")));
    // Its own etcd is still the tenant's, and so is the Nutanix CCM for a Nutanix class.
    assert!(repo.path().join(format!("{dir}/helmrelease-alpha-etcd.yaml")).exists());
    assert!(
        repo.path()
            .join("overlays/tenants/gamma/helmrelease-gamma-nutanix-ccm.yaml")
            .exists()
    );
    let delta = repo.object("overlays/tenants/delta/cluster-delta.yaml");
    let vars = delta["spec"]["topology"]["variables"].as_array().unwrap();
    assert!(vars.contains(&json!({"name": "kaasDataStore", "value": "default"})));
    assert!(vars.contains(&json!({"name": "rootVolumeGiB", "value": 100})));
}

// ---------------------------------------------------------------------------------------------
// Bad input.
// ---------------------------------------------------------------------------------------------

/// Renders the fixture, edits `rel`, and checks the next render fails as expected.
#[track_caller]
fn refused(rel: &str, edit: impl Fn(&str) -> String, location: &str, message: &str) -> String {
    render().assert_edit_refused(rel, edit, location, message)
}

#[test]
fn a_variable_out_of_range_names_the_tenant_line() {
    let err = refused(
        "tenants/beta.yaml",
        |t| t.replace("workerCores: 4", "workerCores: 64"),
        "tenants/beta.yaml:15:20",
        "`workerCores` does not fit class `kubevirt-tiny`: 64 is greater than the maximum of 16",
    );
    assert!(
        err.contains("`workerCores` is an integer from 1 to 16, default 2"),
        "{err}"
    );
}

#[test]
fn a_variable_of_the_wrong_type_names_the_tenant_line() {
    refused(
        "tenants/beta.yaml",
        |t| t.replace("workerCores: 4", "workerCores: \"4\""),
        "tenants/beta.yaml:15:20",
        "`workerCores` does not fit class `kubevirt-tiny`: \"4\" is not of type \"integer\"",
    );
    refused(
        "tenants/alpha.yaml",
        |t| t.replace("workerType: cpx41", "workerType: cx22"),
        "tenants/alpha.yaml:13:19",
        "`workerType` does not fit class `hetzner-small`",
    );
}

#[test]
fn unknown_and_missing_variables_and_classes() {
    refused(
        "tenants/alpha.yaml",
        |t| t.replace("workerType: cpx41", "workerTpye: cpx41"),
        "tenants/alpha.yaml:13:7",
        "class `hetzner-small` has no variable `workerTpye`",
    );
    let err = refused(
        "kaas.yaml",
        |t| {
            t.replace(
                "        machine: {cpus: 4, memoryMiB: 8192, diskGiB: 80}\n",
                "        machine: {cpus: 4, memoryMiB: 8192, diskGiB: 80}\n        variables:\n          - {name: project, required: true, schema: {type: string, minLength: 1}}\n",
            )
        },
        "tenants/gamma.yaml:9:3",
        "class `nutanix-ahv` requires the variable `project`",
    );
    assert!(err.contains("set `project` (a string)"), "{err}");
    refused(
        "tenants/epsilon.yaml",
        |t| t.replace("class: proxmox-standard", "class: proxmox-large"),
        "tenants/epsilon.yaml:10:12",
        "the platform defines no ClusterClass `proxmox-large`",
    );
}

#[test]
fn topology_and_infrastructure_are_exclusive_and_the_class_decides_machines() {
    refused(
        "tenants/epsilon.yaml",
        |t| t.replace("      replicas: 1\n", "      replicas: 1\n      machine: {cpus: 8}\n"),
        "tenants/epsilon.yaml:14:7",
        "`machine` is decided by the class in topology mode",
    );
    refused(
        "tenants/epsilon.yaml",
        |t| {
            t.replace(
                "  topology:",
                "  infrastructure:\n    provider: kubevirt\n    kubevirt: {image: quay.io/capk/ubuntu-2404-container-disk:v1.33.4}\n  topology:",
            )
        },
        "tenants/epsilon.yaml:12:3",
        "`infrastructure` and `topology` are exclusive",
    );
}

#[test]
fn bad_class_definitions_in_kaas_yaml() {
    let err = refused(
        "kaas.yaml",
        |t| {
            t.replace(
                "serviceAnnotations/load-balancer.hetzner.cloud~1type",
                "serviceAnnotations/load-balancer.hetzner.cloud/type",
            )
        },
        "kaas.yaml:86:23",
        "splits the key `load-balancer.hetzner.cloud/type` in two",
    );
    assert!(
        err.contains("serviceAnnotations/load-balancer.hetzner.cloud~1type"),
        "{err}"
    );
    refused(
        "kaas.yaml",
        |t| t.replace("enabledIf: \"{{ if .workerType }}", "enabledIf: \"{{ if .workerKind }}"),
        "kaas.yaml:77:24",
        "the class declares no variable `workerKind`",
    );
    refused(
        "kaas.yaml",
        |t| t.replace("maximum: 32, default: 2", "maximum: 32, default: 64"),
        "kaas.yaml:57:71",
        "`default` does not match the variable's own schema: 64 is greater than the maximum of 32",
    );
    refused(
        "kaas.yaml",
        |t| t.replace("          provider: aws\n", "          provider: packet\n"),
        "kaas.yaml:",
        "`packet` cannot back a ClusterClass",
    );
}

// ---------------------------------------------------------------------------------------------
// Pool labels and taints reach the Node (issue 31 items 15 and 16).
// ---------------------------------------------------------------------------------------------

/// The built-in (`kaas-*`) patches of `class` that target the worker bootstrap template, applied
/// in order to the shared `KubeadmConfigTemplate` with `vars` as a MachineDeployment's
/// variable values: see [`after_patches`].
fn worker_bootstrap_after_patches(repo: &Repo, class: &str, vars: &serde_json::Map<String, Value>) -> Value {
    after_patches(
        repo,
        class,
        ("kubeadmconfigtemplate-kamaji-worker-", "KubeadmConfigTemplate"),
        vars,
    )
}

/// The built-in (`kaas-*`) patches of `class` that target the shared template of `kind` (whose
/// file name starts with `file`), applied in order to it with `vars` as the variable values, the way Cluster API's topology controller applies inline patches
/// (`internal/topology/patches/inline`): `enabledIf` decides, each op is an RFC 6902 `add` (whose
/// parent must exist), a `valueFrom.template` is rendered and read as YAML. Only the template
/// forms the built-in patches use are understood (`toJson .x`, `if .x`, `if or .x .y`); anything
/// else fails the test.
fn after_patches(repo: &Repo, class: &str, (file, kind): (&str, &str), vars: &serde_json::Map<String, Value>) -> Value {
    let template_file = repo.file_starting("overlays/platform", file);
    let mut spec = repo.object(&template_file);
    let cc = repo.object(&format!("overlays/platform/clusterclass-{class}.yaml"));
    let set = |name: &str| vars.get(name).is_some_and(|v| !v.is_null());
    let render = |template: &str| -> String {
        let mut out = template.to_string();
        for (name, value) in vars {
            out = out.replace(&format!("{{{{ toJson .{name} }}}}"), &value.to_string());
        }
        assert!(
            !out.contains("{{"),
            "a template form the test does not know: {template}"
        );
        out
    };
    for p in cc["spec"]["patches"].as_array().unwrap() {
        if !p["name"].as_str().unwrap().starts_with("kaas-") {
            continue;
        }
        if let Some(cond) = p["enabledIf"].as_str() {
            let inner = cond
                .strip_prefix("{{ if ")
                .and_then(|c| c.strip_suffix(" }}true{{ end }}"))
                .unwrap_or_else(|| panic!("enabledIf form: {cond}"));
            let on = match inner.strip_prefix("or ") {
                Some(names) => names.split(' ').any(|n| set(n.trim_start_matches('.'))),
                None => set(inner.trim_start_matches('.')),
            };
            if !on {
                continue;
            }
        }
        for d in p["definitions"].as_array().unwrap() {
            if d["selector"]["kind"] != kind {
                continue;
            }
            for op in d["jsonPatches"].as_array().unwrap() {
                assert_eq!(op["op"], "add", "{op}");
                let value = if let Some(v) = op.get("value") {
                    v.clone()
                } else if let Some(var) = op["valueFrom"]["variable"].as_str() {
                    vars[var].clone()
                } else {
                    let text = render(op["valueFrom"]["template"].as_str().unwrap());
                    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"))
                };
                let path = op["path"].as_str().unwrap();
                let (parent, last) = path.rsplit_once('/').unwrap();
                let target = spec.pointer_mut(parent).unwrap_or_else(|| {
                    panic!(
                        "{class}: patch {}: `{parent}` does not exist for `add {path}`",
                        p["name"]
                    )
                });
                match (target, last) {
                    (Value::Array(a), "-") => a.push(value),
                    (Value::Object(m), key) => {
                        m.insert(key.replace("~1", "/").replace("~0", "~"), value);
                    }
                    (other, _) => panic!("{class}: `add {path}` into {other}"),
                }
            }
        }
    }
    spec
}

#[test]
fn topology_pool_labels_and_taints_reach_the_node_through_kubeadm_not_gated_fields() {
    let repo = render();
    let cluster = repo.object("overlays/tenants/alpha/cluster-alpha.yaml");
    let mds = cluster["spec"]["topology"]["workers"]["machineDeployments"]
        .as_array()
        .unwrap();
    // No `taints` on the topology (refused by Cluster API v1.14's webhook unless the alpha gate
    // MachineTaintPropagation is on); the pool's values as variable overrides instead.
    for md in mds {
        assert_eq!(md.get("taints"), None, "{md}");
    }
    assert_eq!(
        mds[0].get("variables"),
        None,
        "a pool without labels or taints: {}",
        mds[0]
    );
    let burst = &mds[1];
    assert_eq!(
        burst["variables"]["overrides"],
        json!([
            {"name": "kaasNodeLabels", "value": "workload=burst"},
            {"name": "kaasNodeTaints", "value": [{"key": "workload", "value": "burst", "effect": "NoSchedule"}]},
        ])
    );
    // What the autoscaler is told a new node will carry.
    assert_eq!(
        burst["metadata"]["annotations"]["capacity.cluster-autoscaler.kubernetes.io/labels"],
        "workload=burst"
    );
    assert_eq!(
        burst["metadata"]["annotations"]["capacity.cluster-autoscaler.kubernetes.io/taints"],
        "workload=burst:NoSchedule"
    );

    // Every class, whatever its provider writes into joinConfiguration first, ends with the
    // pool's labels as --node-labels and its taints registered, and keeps the provider's args.
    let overrides: serde_json::Map<String, Value> = burst["variables"]["overrides"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["name"].as_str().unwrap().to_string(), v["value"].clone()))
        .collect();
    let classes = [
        "proxmox-standard",
        "hetzner-small",
        "kubevirt-tiny",
        "nutanix-ahv",
        "aws-general",
    ];
    for class in classes {
        if !repo
            .path()
            .join(format!("overlays/platform/clusterclass-{class}.yaml"))
            .exists()
        {
            panic!("no class {class}");
        }
        let bare = worker_bootstrap_after_patches(&repo, class, &serde_json::Map::new());
        let provider_args =
            bare["spec"]["template"]["spec"]["joinConfiguration"]["nodeRegistration"]["kubeletExtraArgs"]
                .as_array()
                .cloned()
                .unwrap_or_default();
        let spec = worker_bootstrap_after_patches(&repo, class, &overrides);
        let registration = &spec["spec"]["template"]["spec"]["joinConfiguration"]["nodeRegistration"];
        let args = registration["kubeletExtraArgs"].as_array().unwrap();
        assert!(
            args.contains(&json!({"name": "node-labels", "value": "workload=burst"})),
            "{class}: {registration}"
        );
        for a in &provider_args {
            assert!(args.contains(a), "{class}: the provider's {a} kept: {registration}");
        }
        assert_eq!(
            registration["taints"],
            json!([{"key": "workload", "value": "burst", "effect": "NoSchedule"}]),
            "{class}"
        );
        // Only a pool with labels or taints is patched: the others' templates (and so their
        // machines) stay as they were.
        for p in cc_patches(&repo, class) {
            if p["name"].as_str().unwrap().starts_with("kaas-node-") {
                assert!(p["enabledIf"].is_string(), "{class}: {p}");
            }
        }
    }
}

/// ClusterClasses need Cluster API's alpha gate `ClusterTopology` (v1.14.0 `feature/feature.go`,
/// refused by `core/webhooks/admission/clusterclass.go` without it): a warning at `spec.topology`
/// while the platform declares no gates, an error there once it declares gates without it.
#[test]
fn classes_need_the_cluster_topology_gate_declared_or_are_warned_about() {
    let repo = render();
    let run = repo.run(&["render", "--full"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("warning: ClusterClasses and tenants in topology mode need Cluster API's feature gate `ClusterTopology`, off by default"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("--> kaas.yaml:43:5"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("`spec.manager.featureGates: {ClusterTopology: true}`"),
        "{}",
        run.stderr
    );

    let declare = |gates: &str| {
        let gates = gates.to_string();
        move |t: &str| {
            t.replace(
                "  clusterApi:\n",
                &format!("  clusterApi:\n    featureGates: {gates}\n"),
            )
        }
    };
    repo.assert_edit_refused(
        "kaas.yaml",
        declare("{MachinePool: true}"),
        "kaas.yaml:44:5",
        "ClusterClasses and tenants in topology mode need Cluster API's feature gate `ClusterTopology` (off by default; its webhook refuses them), and `spec.clusterApi.featureGates` does not turn it on",
    );
    let original = repo.read("kaas.yaml");
    let fixed = original.replace("{MachinePool: true}", "{ClusterTopology: true, ClusterTopolgy: true}");
    repo.write("kaas.yaml", &fixed);
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        !run.stderr.contains("need Cluster API's feature gate"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("warning: `ClusterTopolgy` is not a feature gate of Cluster API v1.14"),
        "{}",
        run.stderr
    );
}

/// A class variable that a `workerMachine` patch writes into the worker machine template can
/// change the machines' size, while an autoscaled pool's scale-from-zero capacity annotations
/// come from the class's `machine` (found with Cluster API's topology controller in the e2e bed).
/// alpha sets `workerType` (patched into the Hetzner machine template) and scales `md-0` from
/// zero: a warning at its variable's line. beta sets `workerCores` but no pool scales from zero,
/// and `lbType` patches the control plane: no warning for those.
#[test]
fn a_machine_variable_on_a_pool_from_zero_is_warned_about() {
    let repo = render();
    let run = repo.run(&["render", "--full"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let warning = "warning: `workerType` changes the worker machines (patch `worker-type` of class `hetzner-small`), but cluster-autoscaler sizes an empty pool (burst) from the class's `machine`: 4 vCPUs, 8192 MiB of memory";
    assert!(run.stderr.contains(warning), "{}", run.stderr);
    assert!(run.stderr.contains("--> tenants/alpha.yaml:13:"), "{}", run.stderr);
    for quiet in [
        "`workerCores` changes",
        "`lbType` changes",
        "`evictionStrategy` changes",
    ] {
        assert!(!run.stderr.contains(quiet), "{quiet}: {}", run.stderr);
    }
}

// ---------------------------------------------------------------------------------------------
// The cluster DNS address (issue 41 item 1).
// ---------------------------------------------------------------------------------------------

/// Kamaji derives the tenant's cluster DNS address only when the TenantControlPlane is created
/// (kamaji 26.8.2 `internal/webhook/handlers/tcp_defaults.go`), and the provider's every
/// reconcile copies the control plane's `addons.coreDNS.dnsServiceIPs` over it (provider v0.20.0
/// `controllers/kamajicontrolplane_controller_tcp.go:93-94`): the class's shared template has
/// none, so each tenant's comes through `kaasDNSServiceIPs` and the class's `kaas-dns` patch.
#[test]
fn a_topology_tenants_control_plane_gets_its_cluster_dns_address() {
    let repo = Repo::fixture("topology");
    repo.replace(
        "tenants/alpha.yaml",
        "  workers:\n",
        "  network:\n    services: [10.100.16.0/20]\n  workers:\n",
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let cluster = repo.object("overlays/tenants/alpha/cluster-alpha.yaml");
    assert_eq!(
        cluster["spec"]["clusterNetwork"]["services"]["cidrBlocks"],
        json!(["10.100.16.0/20"])
    );
    let vars: serde_json::Map<String, Value> = cluster["spec"]["topology"]["variables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["name"].as_str().unwrap().to_string(), v["value"].clone()))
        .collect();
    assert_eq!(vars.get("kaasDNSServiceIPs"), Some(&json!(["10.100.16.10"])));
    // What Cluster API makes of the class's template for this Cluster.
    for class in [
        "proxmox-standard",
        "hetzner-small",
        "kubevirt-tiny",
        "nutanix-ahv",
        "aws-general",
    ] {
        let kcp = after_patches(
            &repo,
            class,
            ("kamajicontrolplanetemplate-kamaji-", "KamajiControlPlaneTemplate"),
            &vars,
        );
        assert_eq!(
            kcp["spec"]["template"]["spec"]["addons"]["coreDNS"],
            json!({"dnsServiceIPs": ["10.100.16.10"]}),
            "{class}"
        );
    }
    // A tenant on the default service range.
    let beta = repo.object("overlays/tenants/beta/cluster-beta.yaml");
    assert!(
        beta["spec"]["topology"]["variables"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "kaasDNSServiceIPs", "value": ["10.96.0.10"]})),
        "{beta:#}"
    );
}
