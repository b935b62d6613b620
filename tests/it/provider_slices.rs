//! vSphere (CAPV), OpenStack (CAPO), Metal³ (CAPM3), Tinkerbell (CAPT), IONOS Cloud (CAPIC) and Azure
//! (CAPZ), from
//! `tests/fixtures/providers/<provider>/`: what each provider's objects must say around a Kamaji
//! control plane, read back as data; their cloud controller managers and CSI rendered by the real
//! upstream charts with the values kaas-gitops writes; and their bad input refused at its line.
//! (CRD validity and kustomize builds are in `providers.rs`, with every provider.)

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::addons::{find, helm, helm_template};
use crate::common::{Repo, git, project_root, run_ok};
use crate::providers::template_kubelet_args as kubelet_args;

#[track_caller]
fn render(provider: &str) -> Repo {
    let repo = Repo::fixture(&format!("providers/{provider}"));
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{provider}: {}", run.stderr);
    repo
}

/// What helm-controller does with `spec.valuesFrom` (helm-controller v1.6.3: each key of the named
/// Secret, taken literally, at its target path): a stand-in with the Secret's data given here,
/// since no helm-controller runs in this test.
fn with_values_from(hr: &Value, secrets: &[(&str, &str, &str)]) -> Value {
    let mut values = hr["spec"]["values"].clone();
    for r in hr["spec"]["valuesFrom"].as_array().into_iter().flatten() {
        assert_eq!(r["literal"], true, "{r}");
        let (_, _, data) = secrets
            .iter()
            .find(|(name, key, _)| r["name"] == *name && r["valuesKey"] == *key)
            .unwrap_or_else(|| panic!("the test has no data for {r}"));
        let mut at = &mut values;
        let path: Vec<&str> = r["targetPath"].as_str().unwrap().split('.').collect();
        for key in &path[..path.len() - 1] {
            at = at.as_object_mut().unwrap().entry(key.to_string()).or_insert(json!({}));
        }
        at[path[path.len() - 1]] = json!(data);
    }
    values
}

/// An upstream chart of `KAAS_CHARTS` (else `../shared/charts`), copied into `into` so its
/// dependencies can be added.
fn chart(name: &str, into: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::env::var_os("KAAS_CHARTS")
        .map(PathBuf::from)
        .into_iter()
        .chain([project_root().join("../shared/charts")])
        .collect();
    let from = dirs
        .iter()
        .map(|d| d.join(name))
        .find(|d| d.join("Chart.yaml").is_file())
        .unwrap_or_else(|| {
            panic!("no `{name}` chart in {dirs:?}: run the tests with `tests/run` (it sets KAAS_CHARTS)")
        });
    let to = into.join(name);
    run_ok(Command::new("cp").arg("-r").arg(&from).arg(&to));
    to
}

/// The pod spec of a workload.
fn pod(w: &Value) -> &Value {
    &w["spec"]["template"]["spec"]
}

/// No scheduling constraint that needs a control-plane node, which a Kamaji tenant lacks.
#[track_caller]
fn schedules_without_control_plane_nodes(w: &Value) {
    let spec = pod(w);
    let text = format!("{}{}", spec["nodeSelector"], spec["affinity"]);
    assert!(
        !text.contains("node-role.kubernetes.io/control-plane") && !text.contains("node-role.kubernetes.io/master"),
        "{} {} needs a control-plane node: {text}",
        w["kind"],
        w["metadata"]["name"]
    );
}

// ---- vSphere ------------------------------------------------------------------------------

#[test]
fn vsphere_carries_the_endpoint_kamaji_checks_and_nodes_wait_for_the_cpi() {
    let repo = render("vsphere");
    let vc = repo.object("overlays/tenants/vcenter/vspherecluster-vcenter.yaml");
    assert_eq!(vc["apiVersion"], "infrastructure.cluster.x-k8s.io/v1beta2");
    // Kamaji's provider checks this endpoint once set (checkOrPatchGenericCluster): it must be
    // the VIP and the Cluster's API server port.
    let cluster = repo.object("overlays/tenants/vcenter/cluster-vcenter.yaml");
    assert_eq!(
        vc["spec"]["controlPlaneEndpoint"],
        json!({"host": "10.0.4.40", "port": cluster["spec"]["clusterNetwork"]["apiServerPort"]})
    );
    assert_eq!(
        vc["spec"]["identityRef"],
        json!({"kind": "Secret", "name": "vsphere-credentials"})
    );
    assert_eq!(vc["spec"]["server"], "vcenter.example.com");
    // A pool VIP, and a VSphereClusterIdentity.
    let zoned = repo.object("overlays/tenants/zoned/vspherecluster-zoned.yaml");
    assert_eq!(zoned["spec"]["controlPlaneEndpoint"]["host"], "10.0.4.100");
    assert_eq!(
        zoned["spec"]["identityRef"],
        json!({"kind": "VSphereClusterIdentity", "name": "platform-vcenter"})
    );

    let mt = repo.object(&repo.file_starting("overlays/tenants/vcenter", "vspheremachinetemplate-vcenter-md-0-"));
    let spec = &mt["spec"]["template"]["spec"];
    assert_eq!(
        (&spec["numCPUs"], &spec["memoryMiB"], &spec["diskGiB"]),
        (&json!(4), &json!(8192), &json!(40))
    );
    assert_eq!(
        spec["network"]["devices"],
        json!([{"networkName": "VM Network", "dhcp4": true}])
    );
    assert_eq!(
        (&spec["template"], &spec["datacenter"], &spec["cloneMode"]),
        (&json!("ubuntu-2404-kube-v1.33.4"), &json!("dc1"), &json!("fullClone"))
    );
    let zmt = repo.object(&repo.file_starting("overlays/tenants/zoned", "vspheremachinetemplate-zoned-md-0-"));
    assert_eq!(zmt["spec"]["template"]["spec"]["cloneMode"], "linkedClone");
    // CAPV places a machine by the VSphereDeploymentZone its Machine names.
    let md = repo.object("overlays/tenants/zoned/machinedeployment-zoned-md-0.yaml");
    assert_eq!(md["spec"]["template"]["spec"]["failureDomain"], "zone-a");

    // The CPI alone sets provider IDs: the kubelet sets none, registers under the guest's name.
    let kct = repo.object(&repo.file_starting("overlays/tenants/vcenter", "kubeadmconfigtemplate-vcenter-md-0-"));
    assert_eq!(
        kubelet_args(&kct),
        vec![("cloud-provider".to_string(), "external".to_string())]
    );
    assert_eq!(
        kct["spec"]["template"]["spec"]["joinConfiguration"]["nodeRegistration"]["name"],
        "{{ local_hostname }}"
    );
    let kcp = repo.object("overlays/tenants/vcenter/kamajicontrolplane-vcenter.yaml");
    assert!(
        kcp["spec"]["controllerManager"]["extraArgs"]
            .as_array()
            .unwrap()
            .contains(&json!("--cloud-provider=external")),
        "{kcp}"
    );
    let ip = repo.object("overlays/platform/infrastructureprovider-vsphere.yaml");
    assert_eq!(ip["metadata"]["namespace"], "capv-system");
    assert_eq!(ip["spec"]["version"], "v1.16.1");
    assert_eq!(ip["spec"]["configSecret"], json!({"name": "capv-variables"}));

    // The CPI's credentials come from the tenant's Secret, never from git.
    let hr = repo.object("overlays/tenants/zoned/helmrelease-zoned-vsphere-cpi.yaml");
    let from: Vec<(&Value, &Value, &Value)> = hr["spec"]["valuesFrom"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (&r["name"], &r["valuesKey"], &r["targetPath"]))
        .collect();
    assert_eq!(
        from,
        vec![
            (
                &json!("vsphere-cpi-credentials"),
                &json!("username"),
                &json!("config.username")
            ),
            (
                &json!("vsphere-cpi-credentials"),
                &json!("password"),
                &json!("config.password")
            ),
        ]
    );
    assert!(!hr.to_string().contains("\"password\":\""), "{hr}");
}

#[test]
fn the_real_vsphere_cpi_chart_runs_on_workers_with_the_tenants_vcenter_and_secret() {
    let repo = render("vsphere");
    let hr = repo.object("overlays/tenants/vcenter/helmrelease-vcenter-vsphere-cpi.yaml");
    assert_eq!(hr["spec"]["chart"]["spec"]["chart"], "vsphere-cpi");
    let values = with_values_from(
        &hr,
        &[
            ("vsphere-credentials", "username", "capv@vsphere.local"),
            ("vsphere-credentials", "password", "p,a=s{s}"),
        ],
    );
    let tmp = tempfile::tempdir().unwrap();
    let docs = helm_template(&chart("vsphere-cpi", tmp.path()), "vsphere-cpi", "kube-system", &values);
    let ds = find(&docs, "DaemonSet", "vsphere-cpi");
    schedules_without_control_plane_nodes(ds);
    assert!(
        pod(ds)["tolerations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["key"] == "node.cloudprovider.kubernetes.io/uninitialized"),
        "{ds}"
    );
    let image = pod(ds)["containers"][0]["image"].as_str().unwrap();
    assert!(
        image.starts_with("registry.k8s.io/cloud-pv-vsphere/cloud-provider-vsphere:v1.36.0"),
        "{image}"
    );
    // The cloud config names the tenant's vCenter and datacenter, no tag categories, and the
    // Secret the chart wrote from the tenant's credentials.
    let cm = find(&docs, "ConfigMap", "vsphere-cloud-config");
    let conf: Value = serde_saphyr::from_str(cm["data"]["vsphere.conf"].as_str().unwrap()).unwrap();
    assert_eq!(conf["global"]["secretName"], "vsphere-cloud-secret");
    assert_eq!(conf["global"]["secretNamespace"], "kube-system");
    assert_eq!(
        conf["global"]["thumbprint"],
        "AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01"
    );
    assert_eq!(
        conf["vcenter"]["vcenter.example.com"],
        json!({"server": "vcenter.example.com", "datacenters": ["dc1"]})
    );
    assert_eq!(conf["labels"], json!({"region": null, "zone": null}));
    let secret = find(&docs, "Secret", "vsphere-cloud-secret");
    assert_eq!(
        secret["stringData"]["vcenter.example.com.username"],
        "capv@vsphere.local"
    );
    assert_eq!(secret["stringData"]["vcenter.example.com.password"], "p,a=s{s}");
}

#[test]
fn vsphere_bad_input() {
    render("vsphere").assert_edit_refused(
        "tenants/vcenter.yaml",
        |t| {
            t.replace(
                "      credentialsSecret: vsphere-credentials\n",
                "      credentialsSecret: vsphere-credentials\n      identity: platform\n",
            )
        },
        "tenants/vcenter.yaml:18:17",
        "both `credentialsSecret` and `identity`",
    );
    render("vsphere").assert_edit_refused(
        "tenants/vcenter.yaml",
        |t| t.replace("      credentialsSecret: vsphere-credentials\n", ""),
        "tenants/vcenter.yaml:15:7",
        "the vSphere block needs vCenter credentials",
    );
    render("vsphere").assert_edit_refused(
        "tenants/zoned.yaml",
        |t| t.replace("cloneMode: linkedClone", "cloneMode: instantClone"),
        "tenants/zoned.yaml:19:18",
        "`instantClone` is not a clone mode",
    );
    render("vsphere").assert_edit_refused(
        "tenants/zoned.yaml",
        |t| t.replace("failureDomain: zone-a", "failureDomain: zone a"),
        "tenants/zoned.yaml:23:22",
        "`zone a` is not a failure domain name",
    );
    render("vsphere").assert_edit_refused(
        "tenants/vcenter.yaml",
        |t| t.replace("cpus: 4", "cpus: 1"),
        "tenants/vcenter.yaml:27:23",
        "1 vCPU is below vSphere's minimum of 2 (`numCPUs`)",
    );
    // The CPI runs in the tenant and cannot use CAPV's cluster-scoped identity.
    let err = render("vsphere").assert_edit_refused(
        "tenants/zoned.yaml",
        |t| t.replace("      cloudProviderSecret: vsphere-cpi-credentials\n", ""),
        "tenants/zoned.yaml:14:17",
        "the `vsphere-cpi` add-on needs vCenter credentials in the tenant namespace, and CAPV uses the VSphereClusterIdentity `platform-vcenter`",
    );
    assert!(err.contains("add `cloudProviderSecret:"), "{err}");
}

// ---- OpenStack ------------------------------------------------------------------------------

#[test]
fn openstack_makes_no_endpoint_of_its_own_and_takes_kamajis() {
    let repo = render("openstack");
    let nova = repo.object("overlays/tenants/nova/openstackcluster-nova.yaml");
    assert_eq!(nova["apiVersion"], "infrastructure.cluster.x-k8s.io/v1beta1");
    let spec = &nova["spec"];
    assert_eq!(spec["apiServerLoadBalancer"], json!({"enabled": false}));
    assert_eq!(spec["disableAPIServerFloatingIP"], true);
    // The fields Kamaji's provider patches (patchOpenStackCluster), with the same values.
    assert_eq!(
        (&spec["apiServerFixedIP"], &spec["apiServerPort"]),
        (&json!("10.0.4.41"), &json!(6443))
    );
    assert_eq!(spec["controlPlaneEndpoint"], Value::Null);
    assert_eq!(
        spec["identityRef"],
        json!({"type": "Secret", "name": "openstack-credentials", "cloudName": "openstack"})
    );
    assert_eq!(spec["network"], json!({"filter": {"name": "tenant-net"}}));
    assert_eq!(spec["disableExternalNetwork"], true);
    assert_eq!(spec["managedSubnets"], Value::Null);

    let managed = repo.object("overlays/tenants/managed/openstackcluster-managed.yaml");
    let spec = &managed["spec"];
    assert_eq!(spec["apiServerFixedIP"], "10.0.4.100");
    assert_eq!(
        spec["managedSubnets"],
        json!([{"cidr": "10.7.0.0/24", "dnsNameservers": ["10.0.0.53"]}])
    );
    assert_eq!(spec["externalNetwork"], json!({"filter": {"name": "public"}}));
    assert_eq!(spec["disableExternalNetwork"], Value::Null);
    assert_eq!(spec["identityRef"]["region"], "RegionOne");
    let mt = repo.object(&repo.file_starting("overlays/tenants/managed", "openstackmachinetemplate-managed-md-0-"));
    assert_eq!(
        mt["spec"]["template"]["spec"],
        json!({
            "flavor": "m1.large",
            "image": {"id": "2c6f5b7e-2a31-4a4c-9d5e-0b1f0a3e7c11"},
            "rootVolume": {"sizeGiB": 60, "type": "ssd"},
        })
    );
    let kct = repo.object(&repo.file_starting("overlays/tenants/nova", "kubeadmconfigtemplate-nova-md-0-"));
    assert_eq!(
        kubelet_args(&kct),
        vec![
            (
                "provider-id".to_string(),
                "openstack:///'{{ instance_id }}'".to_string()
            ),
            ("cloud-provider".to_string(), "external".to_string()),
        ]
    );
    let ip = repo.object("overlays/platform/infrastructureprovider-openstack.yaml");
    assert_eq!(ip["metadata"]["namespace"], "capo-system");
    assert_eq!(ip["spec"]["configSecret"], Value::Null);

    let ccm = repo.object("overlays/tenants/nova/helmrelease-nova-openstack-ccm.yaml");
    assert_eq!(
        ccm["spec"]["valuesFrom"],
        json!([{"kind": "Secret", "name": "openstack-credentials", "valuesKey": "cloud.conf", "targetPath": "cloudConfigContents", "literal": true}])
    );
    // The CSI is installed after the CCM, whose Secret it reads.
    let csi = repo.object("overlays/tenants/nova/helmrelease-nova-cinder-csi.yaml");
    assert!(
        csi["spec"]["dependsOn"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["name"] == "nova-openstack-ccm"),
        "{csi}"
    );
}

#[test]
fn the_real_openstack_ccm_and_cinder_csi_charts_run_on_workers_from_the_tenants_cloud_config() {
    let repo = render("openstack");
    let tmp = tempfile::tempdir().unwrap();
    // The CCM chart needs bitnami's `common` in its charts/ (its Chart.yaml dependency).
    let occm = chart("openstack-cloud-controller-manager", tmp.path());
    let common = chart("common", tmp.path());
    run_ok(
        Command::new(helm())
            .arg("package")
            .arg(&common)
            .arg("-d")
            .arg(occm.join("charts")),
    );
    let conf = "[Global]\nauth-url=https://keystone.example.com:5000/v3\napplication-credential-id=a,b\napplication-credential-secret=s=cr{e}t\n";
    let hr = repo.object("overlays/tenants/nova/helmrelease-nova-openstack-ccm.yaml");
    let values = with_values_from(&hr, &[("openstack-credentials", "cloud.conf", conf)]);
    let docs = helm_template(&occm, "openstack-ccm", "kube-system", &values);
    let ds = find(&docs, "DaemonSet", "openstack-cloud-controller-manager");
    schedules_without_control_plane_nodes(ds);
    let container = &pod(ds)["containers"][0];
    assert!(
        container["args"].to_string().contains("--cluster-name=$(CLUSTER_NAME)"),
        "{container}"
    );
    assert!(
        container["env"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "CLUSTER_NAME" && e["value"] == "nova"),
        "{container}"
    );
    let secret = find(&docs, "Secret", "cloud-config");
    use base64::Engine as _;
    let written = base64::engine::general_purpose::STANDARD
        .decode(secret["data"]["cloud.conf"].as_str().unwrap().trim())
        .unwrap();
    assert_eq!(String::from_utf8(written).unwrap(), conf);

    let csi = repo.object("overlays/tenants/nova/helmrelease-nova-cinder-csi.yaml");
    let docs = helm_template(
        &chart("openstack-cinder-csi", tmp.path()),
        "cinder-csi",
        "kube-system",
        &csi["spec"]["values"],
    );
    for (kind, name) in [
        ("Deployment", "openstack-cinder-csi-controllerplugin"),
        ("DaemonSet", "openstack-cinder-csi-nodeplugin"),
    ] {
        let w = find(&docs, kind, name);
        schedules_without_control_plane_nodes(w);
        let volumes = pod(w)["volumes"].as_array().unwrap();
        assert!(
            volumes.iter().any(|v| v["secret"]["secretName"] == "cloud-config"),
            "{name} does not read the Secret the CCM wrote: {volumes:?}"
        );
        assert!(
            !volumes.iter().any(|v| v["hostPath"]["path"] == "/etc/config"),
            "{name} reads the node's disk: {volumes:?}"
        );
    }
    let controller = find(&docs, "Deployment", "openstack-cinder-csi-controllerplugin");
    assert!(controller.to_string().contains("\"value\":\"nova\""), "{controller}");
}

#[test]
fn an_openstack_tenants_endpoint_never_moves() {
    let home = tempfile::tempdir().unwrap();
    let repo = render("openstack");
    git(home.path(), repo.path(), &["init", "-q", "-b", "main"]);
    git(home.path(), repo.path(), &["add", "-A"]);
    git(home.path(), repo.path(), &["commit", "-q", "-m", "deployed"]);
    repo.replace(
        "tenants/nova.yaml",
        "    endpoint: {host: 10.0.4.41, port: 6443}\n",
        "    endpoint: {host: 10.0.4.42, port: 6443}\n    acknowledge: [endpointMove]\n",
    );
    let err = repo.assert_render_refused(
        "tenants/nova.yaml:",
        "`openstack` tenant `nova` cannot move from the endpoint `10.0.4.41` to `10.0.4.42`: CAPO refuses a change of `apiServerFixedIP` once it is set",
    );
    assert!(err.contains("create a new tenant at the new endpoint"), "{err}");
}

#[test]
fn openstack_bad_input() {
    render("openstack").assert_edit_refused(
        "tenants/nova.yaml",
        |t| {
            t.replace(
                "      network: tenant-net\n",
                "      network: tenant-net\n      nodeCIDR: 10.8.0.0/24\n",
            )
        },
        "tenants/nova.yaml:19:17",
        "`nodeCIDR` with an existing `network`",
    );
    render("openstack").assert_edit_refused(
        "tenants/managed.yaml",
        |t| t.replace("nodeCIDR: 10.7.0.0/24", "nodeCIDR: 10.7.0.0"),
        "tenants/managed.yaml:18:17",
        "`10.7.0.0` is not an IPv4 CIDR",
    );
    render("openstack").assert_edit_refused(
        "tenants/nova.yaml",
        |t| {
            t.replace(
                "      credentialsSecret: openstack-credentials\n",
                "      credentialsSecret: Openstack_Credentials\n",
            )
        },
        "tenants/nova.yaml:15:26",
        "`Openstack_Credentials` is not a Secret name",
    );
    // A provider's wiring is for that provider's tenants only.
    render("openstack").assert_edit_refused(
        "kaas.yaml",
        |t| {
            t.replace(
                "providers: {openstack: [openstack-ccm, cinder-csi]}",
                "providers: {openstack: [cinder-csi], aws: [openstack-ccm]}",
            )
        },
        "kaas.yaml:",
        "`openstack-ccm` has the `openstack-ccm` wiring, which is for `openstack` tenants",
    );
}

// ---- Metal³ -------------------------------------------------------------------------------

#[test]
fn metal3_carries_the_vip_kamaji_checks_and_each_tenant_its_data_template() {
    let repo = render("metal3");
    let mc = repo.object("overlays/tenants/ironic/metal3cluster-ironic.yaml");
    assert_eq!(mc["apiVersion"], "infrastructure.cluster.x-k8s.io/v1beta2");
    // Kamaji only checks it (checkGenericCluster): it must be there, and be the VIP and port.
    assert_eq!(
        mc["spec"],
        json!({"controlPlaneEndpoint": {"host": "10.0.4.50", "port": 6443}, "cloudProviderEnabled": false})
    );
    let mt = repo.object(&repo.file_starting("overlays/tenants/ironic", "metal3machinetemplate-ironic-md-0-"));
    assert_eq!(
        mt["spec"]["template"]["spec"],
        json!({
            "image": {
                "url": "http://172.22.0.1/images/ubuntu-2404-kube-v1.33.4.raw",
                "checksum": "http://172.22.0.1/images/ubuntu-2404-kube-v1.33.4.raw.sha256sum",
                "checksumType": "sha256",
                "diskFormat": "raw",
            },
            "hostSelector": {"matchLabels": {"tenant": "ironic"}},
            "dataTemplate": {"name": "ironic"},
        })
    );
    // The data template the machine template names, whose metadata gives the provider ID.
    let dt = repo.object("overlays/tenants/ironic/metal3datatemplate-ironic.yaml");
    assert_eq!(dt["spec"], json!({"clusterName": "ironic"}));
    let kct = repo.object(&repo.file_starting("overlays/tenants/ironic", "kubeadmconfigtemplate-ironic-md-0-"));
    assert_eq!(
        kubelet_args(&kct),
        vec![(
            "provider-id".to_string(),
            "metal3://{{ ds.meta_data.providerid }}".to_string()
        )]
    );
    // No `status.capacity` on Metal³ templates: scale from zero reads the pool's stated size.
    let md = repo.object("overlays/tenants/ironic/machinedeployment-ironic-burst.yaml");
    let a = &md["metadata"]["annotations"];
    assert_eq!(a["capacity.cluster-autoscaler.kubernetes.io/cpu"], "32");
    assert_eq!(a["capacity.cluster-autoscaler.kubernetes.io/memory"], "131072Mi");
    let ip = repo.object("overlays/platform/infrastructureprovider-metal3.yaml");
    assert_eq!(ip["metadata"]["namespace"], "capm3-system");
}

#[test]
fn metal3_bad_input() {
    // Kamaji never writes the Metal3Cluster's endpoint and CAPM3 refuses one without it.
    let err = render("metal3").assert_edit_refused(
        "tenants/ironic.yaml",
        |t| {
            t.replace(
                "    endpoint: {host: 10.0.4.50, port: 6443}\n",
                "    service: {type: ClusterIP}\n",
            )
        },
        "tenants/ironic.yaml:",
        "a Metal³ tenant needs a VIP known at render time",
    );
    assert!(err.contains("Kamaji checks, but never sets"), "{err}");
    let err = render("metal3").assert_edit_refused(
        "tenants/ironic.yaml",
        |t| t.replace("      machine: {cpus: 32, memoryMiB: 131072, diskGiB: 480}\n", ""),
        "tenants/ironic.yaml:23:26",
        "a pool that scales from zero needs `machine.cpus` and `machine.memoryMiB`",
    );
    assert!(err.contains("`metal3` machine templates report no capacity"), "{err}");
    render("metal3").assert_edit_refused(
        "tenants/ironic.yaml",
        |t| {
            t.replace(
                "url: http://172.22.0.1/images/ubuntu-2404-kube-v1.33.4.raw\n",
                "url: /images/ubuntu.raw\n",
            )
        },
        "tenants/ironic.yaml:16:14",
        "`/images/ubuntu.raw` is not an http(s) URL",
    );
}

// ---- Tinkerbell ---------------------------------------------------------------------------

#[test]
fn tinkerbell_machines_take_only_the_tenants_hardware_and_capts_provider_id() {
    let repo = render("tinkerbell");
    let tc = repo.object("overlays/tenants/tink/tinkerbellcluster-tink.yaml");
    assert_eq!(tc["apiVersion"], "infrastructure.cluster.x-k8s.io/v1beta1");
    assert_eq!(
        tc["spec"],
        json!({
            "controlPlaneEndpoint": {"host": "10.0.4.100", "port": 6443},
            "imageLookupOSDistro": "ubuntu",
            "imageLookupOSVersion": "24.04",
        })
    );
    let mt = repo.object(&repo.file_starting("overlays/tenants/tink", "tinkerbellmachinetemplate-tink-md-0-"));
    assert_eq!(
        mt["spec"]["template"]["spec"],
        json!({
            "hardwareAffinity": {"required": [{"labelSelector": {"matchLabels": {"tenant": "tink"}}}]},
            "bootOptions": {"bootMode": "netboot"},
        })
    );
    // CAPT replaces the placeholder in the user data it hands the machine.
    let kct = repo.object(&repo.file_starting("overlays/tenants/tink", "kubeadmconfigtemplate-tink-md-0-"));
    assert_eq!(
        kubelet_args(&kct),
        vec![("provider-id".to_string(), "PROVIDER_ID".to_string())]
    );
    let ip = repo.object("overlays/platform/infrastructureprovider-tinkerbell.yaml");
    assert_eq!(ip["metadata"]["namespace"], "capt-system");
}

#[test]
fn tinkerbell_bad_input() {
    let err = render("tinkerbell").assert_edit_refused(
        "tenants/tink.yaml",
        |t| t.replace("hardwareSelector: {tenant: tink}", "hardwareSelector: {}"),
        "tenants/tink.yaml:12:25",
        "no hardware selector: the tenant would take any free Hardware of the management cluster",
    );
    assert!(err.contains("hardwareSelector: {tenant: acme}"), "{err}");
    render("tinkerbell").assert_edit_refused(
        "tenants/tink.yaml",
        |t| t.replace("bootMode: netboot", "bootMode: pxe"),
        "tenants/tink.yaml:15:17",
        "`pxe` is not a boot mode",
    );
    // CAPT ships no cluster template: no ClusterClass.
    let err = render("tinkerbell").assert_edit_refused(
        "kaas.yaml",
        |t| {
            t.replace(
                "  dataStores: [default]\n",
                "  dataStores: [default]\n  topology:\n    classes:\n      - name: tink\n        infrastructure:\n          provider: tinkerbell\n          tinkerbell: {hardwareSelector: {rack: r1}}\n",
            )
        },
        "kaas.yaml:",
        "`tinkerbell` cannot back a ClusterClass",
    );
    assert!(err.contains("ships no infrastructure cluster template kind"), "{err}");
}

// ---- IONOS Cloud --------------------------------------------------------------------------

#[test]
fn ionoscloud_names_only_the_credentials_and_nodes_write_their_provider_id() {
    let repo = render("ionoscloud");
    let ic = repo.object("overlays/tenants/ionos/ionoscloudcluster-ionos.yaml");
    assert_eq!(ic["apiVersion"], "infrastructure.cluster.x-k8s.io/v1alpha1");
    // Kamaji's provider writes the endpoint (patchGenericCluster); no load balancer is asked of
    // CAPIC, which is then ready at once.
    assert_eq!(ic["spec"], json!({"credentialsRef": {"name": "ionos-credentials"}}));
    let mt = repo.object(&repo.file_starting("overlays/tenants/ionos", "ionoscloudmachinetemplate-ionos-md-0-"));
    assert_eq!(
        mt["spec"]["template"]["spec"],
        json!({
            "datacenterID": "3f2a8c1e-5b7d-4e9a-8c2f-1a6b0d4e7f93",
            "type": "VCPU",
            "numCores": 2,
            "memoryMB": 4096,
            "disk": {"sizeGB": 40, "diskType": "SSD Standard", "image": {"selector": {"matchLabels": {"os": "ubuntu"}}}},
        })
    );
    // As CAPIC's templates: the node writes `ionos://<system UUID>` onto itself after joining.
    let kct = repo.object(&repo.file_starting("overlays/tenants/ionos", "kubeadmconfigtemplate-ionos-md-0-"));
    let post = kct["spec"]["template"]["spec"]["postKubeadmCommands"].to_string();
    assert!(post.contains("ionos://'${system_uuid}'"), "{post}");
    assert_eq!(kubelet_args(&kct), Vec::<(String, String)>::new());
    let ip = repo.object("overlays/platform/infrastructureprovider-ionoscloud.yaml");
    assert_eq!(ip["metadata"]["namespace"], "capic-system");
}

#[test]
fn ionoscloud_bad_input() {
    render("ionoscloud").assert_edit_refused(
        "tenants/ionos.yaml",
        |t| t.replace("memoryMiB: 4096", "memoryMiB: 3000"),
        "tenants/ionos.yaml:19:37",
        "3000 MiB is not a size IONOS Cloud offers",
    );
    render("ionoscloud").assert_edit_refused(
        "tenants/ionos.yaml",
        |t| {
            t.replace(
                "datacenterID: 3f2a8c1e-5b7d-4e9a-8c2f-1a6b0d4e7f93",
                "datacenterID: fra-1",
            )
        },
        "tenants/ionos.yaml:13:21",
        "`fra-1` is not a UUID",
    );
    render("ionoscloud").assert_edit_refused(
        "tenants/ionos.yaml",
        |t| {
            t.replace(
                "      imageSelector: {os: ubuntu}\n",
                "      imageSelector: {os: ubuntu}\n      image: 9b1c2d3e-4f50-4a6b-8c7d-0e1f2a3b4c5d\n",
            )
        },
        "tenants/ionos.yaml:14:22",
        "both `image` and `imageSelector`",
    );
    render("ionoscloud").assert_edit_refused(
        "tenants/ionos.yaml",
        |t| t.replace("diskType: SSD Standard", "diskType: NVMe"),
        "tenants/ionos.yaml:15:17",
        "`NVMe` is not a disk type",
    );
}

// ---- Azure --------------------------------------------------------------------------------

#[test]
fn azure_makes_no_api_server_of_its_own_and_each_pool_reads_its_templates_azure_json() {
    let repo = render("azure");
    let ac = repo.object("overlays/tenants/azvm/azurecluster-azvm.yaml");
    assert_eq!(ac["apiVersion"], "infrastructure.cluster.x-k8s.io/v1beta1");
    // The CRD defaults it to true: CAPZ would make an API server load balancer of its own.
    assert_eq!(ac["spec"]["controlPlaneEnabled"], false);
    // Kamaji's provider writes it (patchGenericCluster); once set CAPZ keeps it.
    assert_eq!(ac["spec"]["controlPlaneEndpoint"], Value::Null);
    assert_eq!(
        ac["spec"]["identityRef"],
        json!({"kind": "AzureClusterIdentity", "name": "platform-identity", "namespace": "capz-system"})
    );
    let mt_file = repo.file_starting("overlays/tenants/azvm", "azuremachinetemplate-azvm-md-0-");
    let mt = repo.object(&mt_file);
    let spec = &mt["spec"]["template"]["spec"];
    assert_eq!(spec["osDisk"], json!({"osType": "Linux", "diskSizeGB": 64}));
    use base64::Engine as _;
    let key = base64::engine::general_purpose::STANDARD
        .decode(spec["sshPublicKey"].as_str().unwrap())
        .unwrap();
    assert!(String::from_utf8(key).unwrap().starts_with("ssh-ed25519 AAAA"));
    // CAPZ writes azure.json into `<AzureMachineTemplate>-azure-json`: the pool's bootstrap
    // template names its own machine template's Secret.
    let template = mt["metadata"]["name"].as_str().unwrap();
    let kct = repo.object(&repo.file_starting("overlays/tenants/azvm", "kubeadmconfigtemplate-azvm-md-0-"));
    assert_eq!(
        kct["spec"]["template"]["spec"]["files"],
        json!([{
            "contentFrom": {"secret": {"name": format!("{template}-azure-json"), "key": "worker-node-azure.json"}},
            "owner": "root:root",
            "path": "/etc/kubernetes/azure.json",
            "permissions": "0644",
        }])
    );
    assert_eq!(
        kubelet_args(&kct),
        vec![("cloud-provider".to_string(), "external".to_string())]
    );
    let ip = repo.object("overlays/platform/infrastructureprovider-azure.yaml");
    assert_eq!(ip["metadata"]["namespace"], "capz-system");
}

#[test]
fn the_real_azure_cloud_provider_chart_runs_on_workers_for_the_tenant() {
    let repo = render("azure");
    let hr = repo.object("overlays/tenants/azvm/helmrelease-azvm-azure-ccm.yaml");
    let tmp = tempfile::tempdir().unwrap();
    let docs = helm_template(
        &chart("cloud-provider-azure", tmp.path()),
        "azure-ccm",
        "kube-system",
        &hr["spec"]["values"],
    );
    let ccm = find(&docs, "Deployment", "cloud-controller-manager");
    schedules_without_control_plane_nodes(ccm);
    assert!(
        pod(ccm)["tolerations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["key"] == "node.cloudprovider.kubernetes.io/uninitialized"),
        "{ccm}"
    );
    let container = &pod(ccm)["containers"][0];
    let args = container["args"].to_string();
    assert!(args.contains("--cluster-name=azvm"), "{args}");
    assert!(args.contains("--cluster-cidr=192.168.0.0/16"), "{args}");
    // The pinned image (its digest once `pin` ran) under the chart's three keys.
    assert_eq!(
        container["image"],
        "mcr.microsoft.com/oss/v2/kubernetes/azure-cloud-controller-manager:v1.35.3"
    );
    let cnm = find(&docs, "DaemonSet", "cloud-node-manager");
    assert_eq!(
        pod(cnm)["containers"][0]["image"],
        "mcr.microsoft.com/oss/v2/kubernetes/azure-cloud-node-manager:v1.35.3"
    );
}

#[test]
fn the_real_azure_disk_csi_chart_runs_on_linux_workers_from_the_nodes_azure_json() {
    let repo = render("azure");
    // The digest `pin` would record for the driver's image.
    let digest = format!("sha256:{}", "cd".repeat(32));
    let lock = repo.read("kaas.lock").replace(
        "images: []",
        &format!("images:\n- image: mcr.microsoft.com/oss/v2/kubernetes-csi/azuredisk-csi\n  tag: v1.34.5\n  digest: {digest}"),
    );
    repo.write("kaas.lock", &lock);
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let hr = repo.object("overlays/tenants/azvm/helmrelease-azvm-azure-disk-csi.yaml");
    // After the CCM, which gives the nodes the provider IDs the driver attaches disks by.
    let after: Vec<&Value> = hr["spec"]["dependsOn"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| &d["name"])
        .collect();
    assert!(after.contains(&&json!("azvm-azure-ccm")), "{after:?}");
    let tmp = tempfile::tempdir().unwrap();
    let docs = helm_template(
        &chart("azuredisk-csi-driver", tmp.path()),
        "azure-disk-csi",
        "kube-system",
        &hr["spec"]["values"],
    );
    let controller = find(&docs, "Deployment", "csi-azuredisk-controller");
    schedules_without_control_plane_nodes(controller);
    // Two workers hold the two hostNetwork replicas.
    assert_eq!(controller["spec"]["replicas"], 2);
    let driver = pod(controller)["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "azuredisk")
        .unwrap();
    assert_eq!(
        driver["image"],
        format!("mcr.microsoft.com/oss/v2/kubernetes-csi/azuredisk-csi:v1.34.5@{digest}")
    );
    // The cloud config: no Secret is written, so the driver reads the node's azure.json (CAPZ's).
    let mounted = |w: &Value| {
        pod(w)["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["hostPath"]["path"] == "/etc/kubernetes/")
    };
    assert!(mounted(controller), "{controller}");
    assert!(
        !docs.iter().any(|d| d["kind"] == "Secret"),
        "a Secret in the chart's output"
    );
    let node = find(&docs, "DaemonSet", "csi-azuredisk-node");
    assert!(mounted(node), "{node}");
    assert!(
        !docs.iter().any(|d| d["metadata"]["name"] == "csi-azuredisk-node-win"),
        "a Windows DaemonSet on a Linux-only tenant"
    );
    // A tenant with one worker gets one controller: a second one could never schedule.
    repo.replace("tenants/azvm.yaml", "replicas: 2", "replicas: 1");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let hr = repo.object("overlays/tenants/azvm/helmrelease-azvm-azure-disk-csi.yaml");
    assert_eq!(hr["spec"]["values"]["controller"]["replicas"], 1);
}

#[test]
fn azure_bad_input_and_no_class_and_no_endpoint_move() {
    render("azure").assert_edit_refused(
        "tenants/azvm.yaml",
        |t| t.replace("sshPublicKey: ssh-ed25519 AAAA", "sshPublicKey: AAAA"),
        "tenants/azvm.yaml:19:21",
        "not an OpenSSH public key",
    );
    render("azure").assert_edit_refused(
        "tenants/azvm.yaml",
        |t| t.replace("identity: platform-identity", "identity: Platform_Identity"),
        "tenants/azvm.yaml:15:17",
        "`Platform_Identity` is not an AzureClusterIdentity name",
    );
    let err = render("azure").assert_edit_refused(
        "kaas.yaml",
        |t| {
            t.replace(
                "  dataStores: [default]\n",
                "  dataStores: [default]\n  topology:\n    classes:\n      - name: az\n        infrastructure:\n          provider: azure\n          azure: {location: westeurope, identity: platform-identity, sshPublicKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG2b3Y7qQ8nD3Yh1Jd1Wq0mJ0v1n5p0w0Yk8H3i5m7a6}\n",
            )
        },
        "kaas.yaml:",
        "`azure` cannot back a ClusterClass for Kamaji tenants",
    );
    assert!(err.contains("controlPlaneEnabled: false"), "{err}");
    // Once Kamaji wrote the endpoint, CAPZ keeps it.
    let home = tempfile::tempdir().unwrap();
    let repo = render("azure");
    git(home.path(), repo.path(), &["init", "-q", "-b", "main"]);
    git(home.path(), repo.path(), &["add", "-A"]);
    git(home.path(), repo.path(), &["commit", "-q", "-m", "deployed"]);
    repo.replace(
        "tenants/azvm.yaml",
        "    endpoint: {host: 10.0.4.60, port: 6443}\n",
        "    endpoint: {host: 10.0.4.61, port: 6443}\n    acknowledge: [endpointMove]\n",
    );
    repo.assert_render_refused(
        "tenants/azvm.yaml:",
        "`azure` tenant `azvm` cannot move from the endpoint `10.0.4.60` to `10.0.4.61`: CAPZ refuses a change of the AzureCluster's `controlPlaneEndpoint` once it is set",
    );
}
