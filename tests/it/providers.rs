//! Every infrastructure provider of the Kamaji docs, each from its fixture in
//! `tests/fixtures/providers/<provider>/`: the rendered tree as snapshotted, every object valid
//! against its upstream CRD, every overlay built by kustomize, each provider's guarantee read
//! back from the objects a user would apply, and each provider's bad input refused with its line.

use serde_json::{Value, json};

use crate::common::{Repo, crds_dir, kustomize, kustomize_dirs, rendered};
use crate::crd_schema::Crds;

const PROVIDERS: [&str; 12] = [
    "hetzner",
    "kubevirt",
    "nutanix",
    "metal-stack",
    "packet",
    "aws",
    "vsphere",
    "openstack",
    "metal3",
    "tinkerbell",
    "ionoscloud",
    "azure",
];

/// The fixture of `provider`, rendered.
#[track_caller]
fn render(provider: &str) -> Repo {
    let repo = Repo::fixture(&format!("providers/{provider}"));
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{provider}: {}", run.stderr);
    repo
}

/// Renders the fixture, snapshots it, and checks a second render writes nothing.
#[track_caller]
fn snapshot(provider: &str) {
    let repo = render(provider);
    insta::assert_snapshot!(provider, rendered(&repo));
    let before = repo.snapshot();
    let again = repo.run(&["render"]);
    assert!(again.stderr.contains("0 written, 0 deleted"), "{}", again.stderr);
    assert_eq!(before, repo.snapshot());
}

#[test]
fn hetzner_renders_as_snapshotted() {
    snapshot("hetzner");
}

#[test]
fn kubevirt_renders_as_snapshotted() {
    snapshot("kubevirt");
}

#[test]
fn nutanix_renders_as_snapshotted() {
    snapshot("nutanix");
}

#[test]
fn metal_stack_renders_as_snapshotted() {
    snapshot("metal-stack");
}

#[test]
fn packet_renders_as_snapshotted() {
    snapshot("packet");
}

#[test]
fn aws_renders_as_snapshotted() {
    snapshot("aws");
}

#[test]
fn every_object_of_every_provider_is_valid_against_its_crd() {
    let dir = crds_dir();
    let crds = Crds::load(&dir);
    for provider in PROVIDERS {
        let repo = render(provider);
        let report = crds.check_dir(&repo.path().join("overlays"));
        assert!(report.errors.is_empty(), "{provider}:\n{}", report.errors.join("\n"));
        assert!(
            report.without_crd.is_empty(),
            "{provider}: no CRD for {:?}",
            report.without_crd
        );
        assert!(
            report.validated >= 10,
            "{provider}: only {} objects validated",
            report.validated
        );
    }
    // The render core's example (Proxmox) too.
    let repo = Repo::example();
    assert_eq!(repo.run(&["render"]).code, 0);
    let report = crds.check_dir(&repo.path().join("overlays"));
    assert!(report.errors.is_empty(), "example:\n{}", report.errors.join("\n"));
    assert!(report.without_crd.is_empty(), "{:?}", report.without_crd);
}

#[test]
fn every_overlay_of_every_provider_builds_with_kustomize() {
    for provider in PROVIDERS {
        let repo = render(provider);
        for dir in kustomize_dirs(&repo) {
            let built = kustomize(&dir);
            assert_eq!(
                built.code,
                0,
                "{provider}: kustomize {}: {}",
                dir.display(),
                built.stderr
            );
            let objects = built.stdout.lines().filter(|l| l.starts_with("kind: ")).count();
            // Files only: `overlays/platform/kamaji` is a folder of its own (kaas-kamaji's).
            let files = std::fs::read_dir(&dir)
                .unwrap()
                .filter(|e| e.as_ref().unwrap().path().is_file())
                .count()
                - 1;
            assert_eq!(objects, files, "{provider}: {}", dir.display());
        }
    }
}

/// The `name: value` kubelet flags of a KubeadmConfigTemplate.
pub(crate) fn template_kubelet_args(kct: &Value) -> Vec<(String, String)> {
    kct["spec"]["template"]["spec"]["joinConfiguration"]["nodeRegistration"]["kubeletExtraArgs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            (
                a["name"].as_str().unwrap().to_string(),
                a["value"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The `name: value` kubelet flags of every KubeadmConfigTemplate of `tenant`.
fn kubelet_args(repo: &Repo, tenant: &str) -> Vec<Vec<(String, String)>> {
    let dir = format!("overlays/tenants/{tenant}");
    let mut out = Vec::new();
    for e in std::fs::read_dir(repo.path().join(&dir)).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if name.starts_with("kubeadmconfigtemplate-") {
            out.push(template_kubelet_args(&repo.object(&format!("{dir}/{name}"))));
        }
    }
    assert!(!out.is_empty(), "no KubeadmConfigTemplate for {tenant}");
    out
}

fn arg<'a>(args: &'a [(String, String)], name: &str) -> Option<&'a str> {
    args.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

#[test]
fn each_provider_has_its_provider_id_pattern_and_cloud_provider() {
    // (provider, tenant, kubelet provider-id, cloud-provider external)
    let cases = [
        ("hetzner", "fsn", Some("hcloud://{{ ds.meta_data.instance_id }}"), true),
        // CAPK patches `kubevirt://<machine>` onto the node itself.
        ("kubevirt", "vm", None, false),
        // The Nutanix CCM sets `nutanix://<VM UUID>`, which cloud-init cannot know.
        ("nutanix", "ahv", None, true),
        // Ignition cannot template it; the metal-stack CCM sets `metal://<partition>/<machine>`.
        ("metal-stack", "metal", None, true),
        (
            "packet",
            "metro",
            Some("equinixmetal://{{ `{{ v1.instance_id }}` }}"),
            true,
        ),
        (
            "aws",
            "ec2",
            Some("aws:///{{ v1.availability_zone }}/{{ v1.instance_id }}"),
            true,
        ),
    ];
    for (provider, tenant, provider_id, external) in cases {
        let repo = render(provider);
        for args in kubelet_args(&repo, tenant) {
            assert_eq!(arg(&args, "provider-id"), provider_id, "{provider}");
            assert_eq!(arg(&args, "cloud-provider") == Some("external"), external, "{provider}");
        }
        let kcp = repo.object(&format!("overlays/tenants/{tenant}/kamajicontrolplane-{tenant}.yaml"));
        let cm_args = kcp["spec"]["controllerManager"]["extraArgs"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let external_cm = cm_args.contains(&json!("--cloud-provider=external"));
        // Upstream's Packet example leaves the controller manager alone; every other provider
        // with a CCM turns its cloud loops off.
        assert_eq!(external_cm, external && provider != "packet", "{provider}: {kcp}");
    }
}

#[test]
fn each_provider_gets_its_infrastructure_provider() {
    let cases = [
        ("hetzner", "caph-system", "v1.1.8"),
        ("kubevirt", "capk-system", "v0.11.2"),
        ("nutanix", "capx-system", "v1.10.3"),
        ("metal-stack", "capms-system", "v0.8.0"),
        ("packet", "capp-system", "v0.9.0"),
        ("aws", "capa-system", "v2.11.1"),
    ];
    for (provider, namespace, version) in cases {
        let repo = render(provider);
        let ip = repo.object(&format!("overlays/platform/infrastructureprovider-{provider}.yaml"));
        assert_eq!(ip["apiVersion"], "operator.cluster.x-k8s.io/v1alpha2");
        assert_eq!(ip["metadata"]["name"], provider);
        assert_eq!(ip["metadata"]["namespace"], namespace);
        assert_eq!(ip["spec"]["version"], version);
        assert!(
            repo.path()
                .join(format!("overlays/platform/namespace-{namespace}.yaml"))
                .exists()
        );
    }
}

#[test]
fn hetzner_guarantees() {
    let repo = render("hetzner");
    let hc = repo.object("overlays/tenants/fsn/hetznercluster-fsn.yaml");
    assert_eq!(hc["apiVersion"], "infrastructure.cluster.x-k8s.io/v1beta1");
    assert_eq!(
        hc["metadata"]["annotations"]["capi.syself.com/allow-empty-control-plane-address"],
        "true"
    );
    assert_eq!(hc["spec"]["controlPlaneLoadBalancer"]["enabled"], false);
    assert_eq!(hc["spec"]["controlPlaneRegions"], json!([]));
    assert_eq!(
        hc["spec"]["hetznerSecretRef"],
        json!({"name": "hetzner", "key": {"hcloudToken": "hcloud"}})
    );
    assert_eq!(hc["spec"]["sshKeys"], json!({"hcloud": [{"name": "ops@example"}]}));
    assert_eq!(
        hc["spec"]["hcloudNetwork"],
        json!({"enabled": true, "networkZone": "eu-central"})
    );
    for (tenant, region) in [("fsn", "fsn1"), ("hel", "hel1")] {
        let kcp = repo.object(&format!("overlays/tenants/{tenant}/kamajicontrolplane-{tenant}.yaml"));
        assert_eq!(
            kcp["spec"]["network"]["serviceAnnotations"]["load-balancer.hetzner.cloud/location"],
            region
        );
    }
    // One HCloudMachineTemplate per pool.
    for pool in ["md-0", "burst"] {
        let t = repo.object(&repo.file_starting("overlays/tenants/fsn", &format!("hcloudmachinetemplate-fsn-{pool}-")));
        assert_eq!(
            t["spec"]["template"]["spec"],
            json!({"type": "cpx41", "imageName": "ubuntu-24.04"})
        );
    }
    // The resolv.conf file and flag when the tenant names its name servers, and not otherwise.
    let kct = repo.object(&repo.file_starting("overlays/tenants/fsn", "kubeadmconfigtemplate-fsn-md-0-"));
    let spec = &kct["spec"]["template"]["spec"];
    assert_eq!(
        spec["files"],
        json!([{
            "path": "/etc/kubernetes/resolv.conf",
            "owner": "root:root",
            "permissions": "0644",
            "content": "nameserver 1.1.1.1\nnameserver 2606:4700:4700::1111\n",
        }])
    );
    for args in kubelet_args(&repo, "fsn") {
        assert_eq!(arg(&args, "resolv-conf"), Some("/etc/kubernetes/resolv.conf"));
    }
    let hel = repo.object(&repo.file_starting("overlays/tenants/hel", "kubeadmconfigtemplate-hel-md-0-"));
    assert_eq!(hel["spec"]["template"]["spec"]["files"], Value::Null);
    for args in kubelet_args(&repo, "hel") {
        assert_eq!(arg(&args, "resolv-conf"), None);
    }
}

#[test]
fn kubevirt_guarantees() {
    let repo = render("kubevirt");
    let kc = repo.object("overlays/tenants/vm/kubevirtcluster-vm.yaml");
    assert_eq!(kc["apiVersion"], "infrastructure.cluster.x-k8s.io/v1alpha1");
    assert_eq!(kc["metadata"]["annotations"]["cluster.x-k8s.io/managed-by"], "kamaji");
    let t = repo.object(&repo.file_starting("overlays/tenants/vm", "kubevirtmachinetemplate-vm-md-0-"));
    let vm = &t["spec"]["template"]["spec"]["virtualMachineTemplate"]["spec"];
    let domain = &vm["template"]["spec"]["domain"];
    assert_eq!(domain["cpu"]["cores"], 2);
    assert_eq!(domain["memory"]["guest"], "4096Mi");
    assert_eq!(
        vm["template"]["spec"]["volumes"][0]["containerDisk"]["image"],
        "quay.io/capk/ubuntu-2404-container-disk:v1.33.4"
    );
    // With a storage class: a persistent root disk of `diskGiB`, imported from the image.
    let t = repo.object(&repo.file_starting("overlays/tenants/pvc", "kubevirtmachinetemplate-pvc-md-0-"));
    let vm = &t["spec"]["template"]["spec"]["virtualMachineTemplate"]["spec"];
    assert_eq!(vm["template"]["spec"]["domain"]["cpu"]["cores"], 4);
    assert_eq!(vm["template"]["spec"]["domain"]["memory"]["guest"], "8192Mi");
    assert_eq!(vm["template"]["spec"]["volumes"][0]["dataVolume"]["name"], "rootdisk");
    let dv = &vm["dataVolumeTemplates"][0]["spec"];
    assert_eq!(dv["storage"]["storageClassName"], "ceph-block");
    assert_eq!(dv["storage"]["resources"]["requests"]["storage"], "60Gi");
    assert_eq!(
        dv["source"]["registry"]["url"],
        "docker://quay.io/capk/ubuntu-2404-container-disk:v1.33.4"
    );
}

#[test]
fn nutanix_guarantees() {
    let repo = render("nutanix");
    // A known VIP: the NutanixCluster's endpoint is the KamajiControlPlane's address and the
    // Cluster's port.
    let nc = repo.object("overlays/tenants/ahv/nutanixcluster-ahv.yaml");
    let kcp = repo.object("overlays/tenants/ahv/kamajicontrolplane-ahv.yaml");
    let cluster = repo.object("overlays/tenants/ahv/cluster-ahv.yaml");
    assert_eq!(
        nc["spec"]["controlPlaneEndpoint"],
        json!({"host": "10.0.8.10", "port": 6443})
    );
    assert_eq!(
        nc["spec"]["controlPlaneEndpoint"]["host"],
        kcp["spec"]["network"]["serviceAddress"]
    );
    assert_eq!(
        nc["spec"]["controlPlaneEndpoint"]["port"],
        cluster["spec"]["clusterNetwork"]["apiServerPort"]
    );
    assert_eq!(
        nc["spec"]["prismCentral"],
        json!({
            "address": "pc.example.com",
            "port": 9440,
            "credentialRef": {"kind": "Secret", "name": "nutanix-credentials", "namespace": "ahv"},
        })
    );
    // No VIP at render time: the placeholder Kamaji patches.
    let later = repo.object("overlays/tenants/later/nutanixcluster-later.yaml");
    assert_eq!(
        later["spec"]["controlPlaneEndpoint"],
        json!({"host": "0.0.0.0", "port": 0})
    );
    let later_kcp = repo.object("overlays/tenants/later/kamajicontrolplane-later.yaml");
    assert_eq!(later_kcp["spec"]["network"]["serviceAddress"], Value::Null);
    let t = repo.object(&repo.file_starting("overlays/tenants/later", "nutanixmachinetemplate-later-md-0-"));
    assert_eq!(
        t["spec"]["template"]["spec"]["cluster"],
        json!({"type": "uuid", "uuid": "00000000-1111-2222-3333-444444444444"})
    );
    // The CCM like every add-on: a HelmRelease installing into the tenant cluster through its
    // kubeconfig Secret, off control-plane nodes (there are none), its Secret by name.
    let hr = repo.object("overlays/tenants/ahv/helmrelease-ahv-nutanix-ccm.yaml");
    assert_eq!(hr["apiVersion"], "helm.toolkit.fluxcd.io/v2");
    assert_eq!(
        hr["spec"]["kubeConfig"]["secretRef"],
        json!({"name": "ahv-kubeconfig", "key": "value"})
    );
    assert_eq!(hr["spec"]["chart"]["spec"]["chart"], "nutanix-cloud-provider");
    assert_eq!(hr["spec"]["chart"]["spec"]["version"], "0.6.2");
    assert_eq!(hr["spec"]["targetNamespace"], "kube-system");
    assert!(
        std::fs::read_dir(repo.path().join("overlays/tenants/ahv"))
            .unwrap()
            .all(|e| !e.unwrap().file_name().to_string_lossy().starts_with("helmchartproxy-")),
        "no HelmChartProxy is rendered any more"
    );
    let values = &hr["spec"]["values"];
    assert_eq!(values["nodeSelector"], "");
    // The chart writes its Secret in the tenant (nutanix/helm nutanix-cloud-provider 0.6.2
    // `templates/secret.yaml`, from `username` and `password`), and those two values come from the
    // tenant's Prism Central Secret on the management cluster, never from git.
    assert_eq!(values["createSecret"], true);
    assert_eq!(values["secretName"], "nutanix-creds");
    assert_eq!(values.get("username"), None);
    assert_eq!(values.get("password"), None);
    let secret =
        repo.object("overlays/tenants/ahv/nutanixcluster-ahv.yaml")["spec"]["prismCentral"]["credentialRef"]["name"]
            .clone();
    assert_eq!(
        hr["spec"]["valuesFrom"],
        json!([
            {"kind": "Secret", "name": secret, "valuesKey": "username", "targetPath": "username", "literal": true},
            {"kind": "Secret", "name": secret, "valuesKey": "password", "targetPath": "password", "literal": true},
        ])
    );
    let caaph = repo.object("overlays/platform/addonprovider-helm.yaml");
    assert_eq!(caaph["metadata"]["namespace"], "caaph-system");
    assert_eq!(caaph["spec"]["version"], "v0.6.4");
}

#[test]
fn metal_stack_guarantees() {
    let repo = render("metal-stack");
    for (tenant, vip, port) in [("metal", "10.0.4.20", 6443), ("pooled", "10.0.4.100", 443)] {
        let dir = format!("overlays/tenants/{tenant}");
        let msc = repo.object(&format!("{dir}/metalstackcluster-{tenant}.yaml"));
        let kcp = repo.object(&format!("{dir}/kamajicontrolplane-{tenant}.yaml"));
        let cluster = repo.object(&format!("{dir}/cluster-{tenant}.yaml"));
        assert_eq!(kcp["spec"]["network"]["serviceAddress"], vip);
        assert_eq!(
            msc["spec"]["controlPlaneEndpoint"]["host"],
            kcp["spec"]["network"]["serviceAddress"]
        );
        assert_eq!(cluster["spec"]["clusterNetwork"]["apiServerPort"], port);
        assert_eq!(
            msc["spec"]["controlPlaneEndpoint"]["port"],
            cluster["spec"]["clusterNetwork"]["apiServerPort"]
        );
        assert_eq!(msc["spec"]["firewallDeploymentRef"]["name"], tenant);
        // The firewall lets the nodes reach the API server and Konnectivity at the VIP.
        let fw = repo.object(&format!("{dir}/metalstackfirewalltemplate-{tenant}.yaml"));
        let egress = fw["spec"]["initialRuleSet"]["egress"].as_array().unwrap();
        let to_vip = |p: u16| {
            egress
                .iter()
                .any(|r| r["ports"] == json!([p]) && r["protocol"] == "TCP" && r["to"] == json!([format!("{vip}/32")]))
        };
        assert!(to_vip(port), "{tenant}: no egress to {vip}:{port}: {fw}");
        assert!(to_vip(8132), "{tenant}: no egress to {vip}:8132: {fw}");
        let fwd = repo.object(&format!("{dir}/metalstackfirewalldeployment-{tenant}.yaml"));
        assert_eq!(fwd["spec"]["firewallTemplateRef"]["name"], tenant);
        let kct = repo.object(&repo.file_starting(&dir, &format!("kubeadmconfigtemplate-{tenant}-md-0-")));
        assert_eq!(kct["spec"]["template"]["spec"]["format"], "ignition");
    }
}

#[test]
fn packet_guarantees_and_deprecation_warning() {
    let repo = Repo::fixture("providers/packet");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("warning: the `packet` provider (Equinix Metal) is deprecated upstream"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("--> kaas.yaml:28:39"), "{}", run.stderr);
    let pc = repo.object("overlays/tenants/metro/packetcluster-metro.yaml");
    assert_eq!(pc["metadata"]["annotations"]["cluster.x-k8s.io/managed-by"], "kamaji");
    assert_eq!(pc["spec"]["vipManager"], "CPEM");
    assert_eq!(pc["spec"]["metro"], "da");
    let ip = repo.object("overlays/platform/infrastructureprovider-packet.yaml");
    assert_eq!(
        ip["spec"]["fetchConfig"],
        json!({"url": "https://github.com/kubernetes-sigs/cluster-api-provider-packet/releases"})
    );
    assert_eq!(ip["spec"]["configSecret"], json!({"name": "capp-variables"}));
    let t = repo.object(&repo.file_starting("overlays/tenants/metro", "packetmachinetemplate-metro-md-0-"));
    assert_eq!(t["spec"]["template"]["spec"]["machineType"], "c3.medium.x86");
    assert_eq!(t["spec"]["template"]["spec"]["os"], "ubuntu_24_04");
}

#[test]
fn aws_guarantees() {
    let repo = render("aws");
    let ac = repo.object("overlays/tenants/ec2/awscluster-ec2.yaml");
    assert_eq!(ac["apiVersion"], "infrastructure.cluster.x-k8s.io/v1beta2");
    assert_eq!(ac["spec"]["controlPlaneLoadBalancer"]["loadBalancerType"], "disabled");
    assert_eq!(ac["spec"]["region"], "eu-central-1");
    let t = repo.object(&repo.file_starting("overlays/tenants/ec2", "awsmachinetemplate-ec2-md-0-"));
    let spec = &t["spec"]["template"]["spec"];
    assert_eq!(spec["ami"]["id"], "ami-0123456789abcdef0");
    assert_eq!(spec["instanceType"], "t3.xlarge");
    assert_eq!(spec["rootVolume"]["size"], 80);
    let kct = repo.object(&repo.file_starting("overlays/tenants/ec2", "kubeadmconfigtemplate-ec2-md-0-"));
    assert_eq!(
        kct["spec"]["template"]["spec"]["joinConfiguration"]["nodeRegistration"]["name"],
        "{{ ds.meta_data.local_hostname }}"
    );
    let ip = repo.object("overlays/platform/infrastructureprovider-aws.yaml");
    assert_eq!(ip["spec"]["configSecret"], json!({"name": "capa-variables"}));
    assert_eq!(ip["spec"]["fetchConfig"], Value::Null);
}

// ---------------------------------------------------------------------------------------------
// Bad input: exit 1, `--> file:line:col`, the message, nothing written.
// ---------------------------------------------------------------------------------------------

/// Renders `provider`'s fixture, then edits `rel` and checks the next render fails as expected.
#[track_caller]
fn refused(provider: &str, rel: &str, edit: impl Fn(&str) -> String, location: &str, message: &str) -> String {
    render(provider).assert_edit_refused(rel, edit, location, message)
}

#[test]
fn hetzner_bad_input() {
    let err = refused(
        "hetzner",
        "tenants/hel.yaml",
        |t| t.replace("      hetznerSecret: hetzner\n", ""),
        "tenants/hel.yaml:",
        "missing field `hetznerSecret`",
    );
    assert!(err.contains("hint:"), "{err}");
    refused(
        "hetzner",
        "tenants/hel.yaml",
        |t| t.replace("region: hel1", "region: fra1"),
        "tenants/hel.yaml:12:15",
        "`fra1` is not a Hetzner Cloud location",
    );
    refused(
        "hetzner",
        "tenants/hel.yaml",
        |t| {
            t.replace(
                "  infrastructure:",
                "  controlPlane:\n    service:\n      annotations: {load-balancer.hetzner.cloud/location: nbg1}\n  infrastructure:",
            )
        },
        "tenants/hel.yaml:11:59",
        "the load balancer location `nbg1` differs from the region `hel1`",
    );
    refused(
        "hetzner",
        "tenants/hel.yaml",
        |t| t.replace("hetznerSecret: hetzner", "hetznerSecret: Hetzner_Token"),
        "tenants/hel.yaml:14:22",
        "`Hetzner_Token` is not a Secret name",
    );
}

#[test]
fn kubevirt_bad_input() {
    refused(
        "kubevirt",
        "tenants/vm.yaml",
        |t| {
            t.replace(
                "      image: quay.io/capk/ubuntu-2404-container-disk:v1.33.4\n",
                "      storageClass: fast\n",
            )
        },
        "tenants/vm.yaml:",
        "missing field `image`",
    );
    refused(
        "kubevirt",
        "tenants/vm.yaml",
        |t| t.replace("image: quay.io", "image: docker://quay.io"),
        "tenants/vm.yaml:15:14",
        "is a URL, not an image reference",
    );
}

#[test]
fn nutanix_bad_input() {
    refused(
        "nutanix",
        "tenants/ahv.yaml",
        |t| t.replace(", credentialsSecret: nutanix-credentials}", "}"),
        "tenants/ahv.yaml:",
        "missing field `credentialsSecret`",
    );
    refused(
        "nutanix",
        "kaas.yaml",
        |t| {
            t.replace(
                "  cloudControllerManagers:\n    nutanix: {repository: https://nutanix.github.io/helm/, version: 0.6.2}\n",
                "",
            )
        },
        "kaas.yaml:29:",
        "the `nutanix` provider needs its cloud controller manager in every tenant",
    );
    // Without CAAPH the CCM still installs: it is a HelmRelease like every add-on.
    let repo = Repo::fixture("providers/nutanix");
    repo.replace("kaas.yaml", "    addonProviders: {helm: v0.6.4}\n", "");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        repo.path()
            .join("overlays/tenants/ahv/helmrelease-ahv-nutanix-ccm.yaml")
            .is_file()
    );
}

#[test]
fn metal_stack_needs_a_vip() {
    // Without a pool, a tenant without `endpoint.host` has no VIP at render time.
    let err = refused(
        "metal-stack",
        "kaas.yaml",
        |t| t.replace("    pools: [\"10.0.4.100-10.0.4.199\"]\n", "    pools: []\n"),
        "tenants/pooled.yaml:10:15",
        "a metal-stack tenant needs a VIP known at render time",
    );
    assert!(err.contains("Kamaji checks, but never sets"), "{err}");
    assert!(
        !err.contains("tenants/metal.yaml"),
        "the tenant with a VIP is fine: {err}"
    );
}

#[test]
fn metal_stack_vip_and_port_mismatches() {
    refused(
        "metal-stack",
        "tenants/metal.yaml",
        |t| {
            t.replace(
                "metallb.io/loadBalancerIPs: 10.0.4.20",
                "metallb.io/loadBalancerIPs: 10.0.4.21",
            )
        },
        "tenants/metal.yaml:12:49",
        "`metallb.io/loadBalancerIPs: 10.0.4.21` asks for another address than the VIP 10.0.4.20",
    );
    refused(
        "metal-stack",
        "tenants/pooled.yaml",
        |t| {
            t.replace(
                "    endpoint: {port: 443}\n",
                "    endpoint: {port: 443}\n    apiServer:\n      extraArgs: [\"--secure-port=6443\"]\n",
            )
        },
        "tenants/pooled.yaml:12:19",
        "`--secure-port=6443` differs from the endpoint port 443",
    );
    refused(
        "metal-stack",
        "tenants/metal.yaml",
        |t| t.replace("        networks: [internet]\n", "        networks: []\n"),
        "tenants/metal.yaml:24:19",
        "a firewall needs at least one external network",
    );
}

#[test]
fn packet_bad_input() {
    refused(
        "packet",
        "tenants/metro.yaml",
        |t| t.replace("      metro: da\n", ""),
        "tenants/metro.yaml:",
        "missing field `metro`",
    );
}

#[test]
fn aws_bad_input() {
    refused(
        "aws",
        "tenants/ec2.yaml",
        |t| t.replace("      region: eu-central-1\n", ""),
        "tenants/ec2.yaml:",
        "missing field `region`",
    );
    refused(
        "aws",
        "tenants/ec2.yaml",
        |t| t.replace("ami: ami-0123456789abcdef0", "ami: ubuntu-24.04"),
        "tenants/ec2.yaml:13:12",
        "`ubuntu-24.04` is not an AMI ID",
    );
}

#[test]
fn the_block_must_be_the_one_provider_names() {
    refused(
        "aws",
        "tenants/ec2.yaml",
        |t| {
            t.replace(
                "    aws:\n",
                "    hetzner: {region: fsn1, sshKeys: [ops], hetznerSecret: hetzner}\n    aws:\n",
            )
        },
        "tenants/ec2.yaml:11:5",
        "a `hetzner` block with `provider: aws`",
    );
    refused(
        "hetzner",
        "tenants/hel.yaml",
        |t| t.replace("    hetzner:\n", "    hetzner-cloud:\n"),
        "tenants/hel.yaml:11:5",
        "unknown field `hetzner-cloud`",
    );
    let err = refused(
        "hetzner",
        "tenants/hel.yaml",
        |t| t.replace("provider: hetzner", "provider: aws"),
        "tenants/hel.yaml:11:5",
        "a `hetzner` block with `provider: aws`",
    );
    assert!(err.contains("`provider: aws` needs the `aws:` block"), "{err}");
    refused(
        "aws",
        "tenants/ec2.yaml",
        |t| t.replace("provider: aws", "provider: kubevirt"),
        "tenants/ec2.yaml:10:15",
        "the platform does not install the `kubevirt` provider",
    );
}

#[test]
fn the_crd_check_catches_a_misspelt_field_and_a_wrong_type() {
    let dir = crds_dir();
    let repo = render("hetzner");
    let path = "overlays/tenants/hel/hetznercluster-hel.yaml";
    let edited = repo
        .read(path)
        .replacen("    enabled: false", "    enable: false", 1)
        .replace("  controlPlaneRegions: []", "  controlPlaneRegions: fsn1");
    repo.write(path, &edited);
    let report = Crds::load(&dir).check_dir(&repo.path().join("overlays/tenants/hel"));
    let errors = report.errors.join("\n");
    assert_eq!(report.errors.len(), 2, "{errors}");
    assert!(
        errors.contains("/spec/controlPlaneLoadBalancer: Additional properties are not allowed ('enable'"),
        "{errors}"
    );
    assert!(
        errors.contains("/spec/controlPlaneRegions: \"fsn1\" is not of type \"array\""),
        "{errors}"
    );
}

/// metal-stack nodes boot with Ignition, which Cluster API v1.14's kubeadm bootstrap webhook
/// refuses unless its alpha gate `KubeadmBootstrapFormatIgnition` is on
/// (`bootstrap/kubeadm/webhooks/admission/kubeadmconfig.go`, `validateIgnition`): a warning while
/// the platform declares no gates, an error at the provider once it declares gates without it.
#[test]
fn metal_stack_needs_the_ignition_gate_declared_or_is_warned_about() {
    let repo = Repo::fixture("providers/metal-stack");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("warning: Metal-stack nodes, which boot with Ignition (`format: ignition`) need Cluster API's feature gate `KubeadmBootstrapFormatIgnition`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("EXP_KUBEADM_BOOTSTRAP_FORMAT_IGNITION=true"),
        "{}",
        run.stderr
    );
    let declare = |gates: &str| {
        let text = repo.read("kaas.yaml");
        text.replace(
            "  clusterApi:\n",
            &format!("  clusterApi:\n    featureGates: {gates}\n"),
        )
    };
    repo.write("kaas.yaml", &declare("{KubeadmBootstrapFormatIgnition: false}"));
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("error: Metal-stack nodes, which boot with Ignition (`format: ignition`) need Cluster API's feature gate `KubeadmBootstrapFormatIgnition` (off by default; its webhook refuses them)"),
        "{}",
        run.stderr
    );
    let text = repo.read("kaas.yaml").replace(
        "KubeadmBootstrapFormatIgnition: false",
        "KubeadmBootstrapFormatIgnition: true",
    );
    repo.write("kaas.yaml", &text);
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains("KubeadmBootstrapFormatIgnition"), "{}", run.stderr);
}
