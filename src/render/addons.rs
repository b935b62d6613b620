//! A tenant's add-ons: one Flux `HelmRelease` per add-on in the tenant's namespace on the
//! management cluster, installing its chart into the tenant cluster through the tenant's
//! kubeconfig Secret, in order (the CNI, then cloud controller managers, then the rest).
//!
//! helm-controller v1.6.3 (fluxcd/helm-controller, `internal/controller/helmrelease_controller.go`):
//! - `buildRESTClientGetter` reads `spec.kubeConfig.secretRef` from the HelmRelease's own
//!   namespace (`kube.ConfigFromSecret`: key `value`, else `value.yaml`, when `key` is empty).
//!   While the Secret is missing, a reconcile ends in a `RESTClientError` and is requeued with
//!   backoff: nothing is installed, no install attempt or retry is spent.
//! - `targetNamespace` and `storageNamespace` default to the HelmRelease's namespace, which
//!   exists in the management cluster, not in the tenant's: both are set to the add-on's
//!   namespace in the tenant cluster.
//! - `dependsOn` (`checkDependencies`): a release waits until each listed HelmRelease is Ready
//!   for its current generation.
//! - Deletion (`reconcileReleaseDeletion`): with no release installed yet, or when the
//!   kubeconfig Secret is gone (`apierrors.IsNotFound`), the uninstall is skipped and the
//!   finalizer removed; any other error (a Secret still there, an API server already gone)
//!   fails the uninstall and is retried. The Kamaji provider writes `<cluster>-kubeconfig` (key
//!   `value`) with the KamajiControlPlane as its controller owner
//!   (cluster-api-control-plane-provider-kamaji v0.20.0,
//!   `controllers/kamajicontrolplane_controller_resources.go` `createOrUpdateKubeconfig`), so
//!   deleting a tenant deletes the Secret with the control plane and the releases let go; short
//!   uninstall attempts without waiting keep each retry until then brief.

use serde_json::{Map, Value};

use crate::model::{
    AddonChart, AddonKind, AddonWiring, DigestFormat, Infrastructure, Platform, PoolSize, TaintEffect, Tenant,
    TenantAddon,
};
use crate::render::Object;
use crate::render::images::Images;
use crate::render::node::Node;
use crate::render::objects::helm::{
    Action, Dependency, HelmRelease, HelmReleaseSpec, KubeConfig, SecretKeyRef, Strategy, Uninstall, ValuesReference,
};
use crate::render::objects::{ObjectMeta, to_node};
use crate::render::platform::chart_spec;
use crate::render::shared::tenant_labels;

/// The key of CAPI's kubeconfig Secret (cluster-api v1.14.0 `util/secret/consts.go`
/// `KubeconfigDataName`), which the Kamaji provider writes.
pub const KUBECONFIG_KEY: &str = "value";

/// The `HelmRelease` name of add-on `name` of tenant `t`.
pub fn release_name(t: &Tenant, name: &str) -> String {
    format!("{}-{name}", t.name)
}

/// Every add-on's `HelmRelease`, in install order.
pub fn objects(p: &Platform, images: &Images, t: &Tenant) -> Vec<Object> {
    let mut out = Vec::new();
    let mut before: Vec<(AddonKind, String)> = Vec::new();
    for addon in &t.addons {
        let Some(chart) = p.addons.get(&addon.name) else {
            continue;
        };
        // The CNI first; a CCM after the CNI; anything else after both.
        let depends_on = before
            .iter()
            .filter(|(kind, _)| *kind < chart.kind)
            .map(|(_, name)| Dependency { name: name.clone() })
            .collect();
        let name = release_name(t, &addon.name);
        out.push(release(
            p,
            t,
            chart,
            values(images, t, chart, addon),
            name.clone(),
            depends_on,
        ));
        before.push((chart.kind, name));
    }
    out
}

/// Retry every two minutes for ever, never uninstalling in between: a tenant's first
/// provisioning (control plane, then workers, then a CNI that becomes Ready) takes longer than
/// any fixed number of retries (see `render::tenant::retry_on_failure`).
fn retry(create_namespace: bool) -> Action {
    Action {
        create_namespace: create_namespace.then_some(true),
        crds: None,
        remediation: None,
        strategy: Some(Strategy {
            name: "RetryOnFailure".into(),
            retry_interval: "2m".into(),
        }),
    }
}

fn release(
    p: &Platform,
    t: &Tenant,
    chart: &AddonChart,
    values: Node,
    name: String,
    depends_on: Vec<Dependency>,
) -> Object {
    let release = HelmRelease::new(
        ObjectMeta::new(&name, Some(&t.name), tenant_labels(t)),
        HelmReleaseSpec {
            interval: p.interval.clone(),
            release_name: chart.name.clone(),
            target_namespace: Some(chart.namespace.clone()),
            storage_namespace: Some(chart.namespace.clone()),
            kube_config: Some(KubeConfig {
                secret_ref: SecretKeyRef {
                    name: format!("{}-kubeconfig", t.name),
                    key: KUBECONFIG_KEY.into(),
                },
            }),
            depends_on,
            chart: chart_spec(p, &chart.chart),
            install: retry(chart.namespace != "kube-system"),
            upgrade: retry(false),
            uninstall: Some(Uninstall {
                timeout: "2m".into(),
                disable_wait: true,
            }),
            values,
            values_from: values_from(t, chart),
        },
    );
    Object {
        kind: "HelmRelease",
        body: to_node(&release),
        name,
    }
}

/// The catalog's values, the tenant's over them, then the pinned images and the wiring only a
/// renderer knows (which win: they follow from the tenant's own spec).
fn values(images: &Images, t: &Tenant, chart: &AddonChart, addon: &TenantAddon) -> Node {
    let mut v = Value::Object(chart.values.clone().into_iter().collect());
    merge(&mut v, Value::Object(addon.values.clone().into_iter().collect()));
    for img in &chart.images {
        let r = images.get(&img.image);
        let block = match (img.format, &r.digest) {
            (DigestFormat::Tag, _) => serde_json::json!({"repository": r.repository, "tag": r.chart_tag()}),
            (DigestFormat::ImageTag, _) => serde_json::json!({"image": r.repository, "tag": r.chart_tag()}),
            (DigestFormat::RepositoryNameTag, _) => {
                let (path, name) = r.repository.rsplit_once('/').unwrap_or(("", r.repository.as_str()));
                serde_json::json!({"imageRepository": path, "imageName": name, "imageTag": r.chart_tag()})
            }
            (DigestFormat::Digest, Some(d)) => {
                serde_json::json!({"repository": r.repository, "tag": r.tag, "digest": d, "useDigest": true})
            }
            // Never the chart's own digest, which belongs to its default tag.
            (DigestFormat::Digest, None) => {
                serde_json::json!({"repository": r.repository, "tag": r.tag, "useDigest": false})
            }
        };
        merge(&mut v, nested(&img.path, block));
    }
    if let Some(w) = wiring(t, chart) {
        merge(&mut v, w);
    }
    Node::from(&v)
}

/// `{a: {b: value}}` for the path `[a, b]`.
fn nested(path: &[String], value: Value) -> Value {
    path.iter().rev().fold(value, |inner, key| {
        let mut m = Map::new();
        m.insert(key.clone(), inner);
        Value::Object(m)
    })
}

/// Merges `over` into `base`: maps key by key, anything else replaced.
pub fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(existing) => merge(existing, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, o) => *b = o,
    }
}

fn wiring(t: &Tenant, chart: &AddonChart) -> Option<Value> {
    match chart.wiring? {
        AddonWiring::Cilium => Some(cilium(t, chart.replaces_kube_proxy)),
        AddonWiring::NutanixCcm => nutanix_ccm(t),
        AddonWiring::VsphereCpi => vsphere_cpi(t),
        AddonWiring::OpenstackCcm => Some(openstack_ccm(t)),
        AddonWiring::OpenstackCinderCsi => Some(openstack_cinder_csi(t)),
        AddonWiring::AzureCcm => Some(azure_ccm(t)),
        AddonWiring::AzureDiskCsi => Some(azure_disk_csi(t)),
    }
}

/// Cilium 1.19.6 (`values.yaml`): pods get addresses from the tenant's pod CIDRs in
/// `cluster-pool` mode; the agent reaches the API server at the tenant's endpoint (a Kamaji
/// control plane runs outside the tenant, so there is no in-cluster API server to find before
/// kube-proxy works), or, when the address is chosen by a load balancer and unknown here, by
/// `auto`: the `cluster-info` ConfigMap of `kube-public`, which Kamaji writes.
fn cilium(t: &Tenant, replaces_kube_proxy: bool) -> Value {
    let (v4, v6): (Vec<&String>, Vec<&String>) = t.pods.iter().partition(|c| !c.contains(':'));
    let mut operator = Map::new();
    if !v4.is_empty() {
        operator.insert("clusterPoolIPv4PodCIDRList".into(), serde_json::json!(v4));
    }
    if !v6.is_empty() {
        operator.insert("clusterPoolIPv6PodCIDRList".into(), serde_json::json!(v6));
    }
    let mut v = serde_json::json!({
        "ipam": {"mode": "cluster-pool", "operator": operator},
        "kubeProxyReplacement": replaces_kube_proxy,
    });
    // The chart's defaults are `ipv4.enabled: true`, `ipv6.enabled: false` (values.yaml), and
    // its IPv4 pool defaults to 10.0.0.0/8: an IPv6 pod CIDR is ignored unless IPv6 is on, and
    // an IPv6-only tenant would hand out 10.0.0.0/8 unless IPv4 is off.
    if !v6.is_empty() {
        v["ipv6"] = serde_json::json!({"enabled": true});
    }
    if v4.is_empty() {
        v["ipv4"] = serde_json::json!({"enabled": false});
    }
    match t.vip {
        Some(vip) => {
            v["k8sServiceHost"] = vip.to_string().into();
            v["k8sServicePort"] = t.port.into();
        }
        None => v["k8sServiceHost"] = "auto".into(),
    }
    v
}

/// The Nutanix cloud controller manager chart (nutanix/helm `nutanix-cloud-provider` 0.6.2):
/// Prism Central's address, and its credentials. The chart writes its Secret in the tenant
/// cluster from the values `username` and `password` (`templates/secret.yaml`, `createSecret`),
/// which come from the tenant's Prism Central Secret on the management cluster through
/// `valuesFrom` ([`values_from`]): nothing secret is in git, and the CCM's Secret inside the
/// tenant needs no hand. The chart's defaults pin it to control-plane nodes, which Kamaji
/// clusters lack: the node selector is cleared so it runs on workers.
fn nutanix_ccm(t: &Tenant) -> Option<Value> {
    let Infrastructure::Nutanix(n) = &t.infrastructure else {
        return None;
    };
    Some(serde_json::json!({
        "prismCentralEndPoint": n.address,
        "prismCentralPort": n.port,
        "prismCentralInsecure": n.insecure,
        "createSecret": true,
        "secretName": NUTANIX_CCM_SECRET,
        "nodeSelector": "",
    }))
}

/// The Secret the Nutanix CCM chart writes into the tenant's `kube-system` (its default name).
const NUTANIX_CCM_SECRET: &str = "nutanix-creds";

/// The vSphere cloud provider chart (kubernetes/cloud-provider-vsphere `vsphere-cpi` 1.36.0):
/// the chart writes the cloud config (`templates/configmap.yaml`) and the credentials Secret
/// (`templates/secret.yaml`, keys `<vcenter>.username`/`.password`) into the tenant from these
/// values, the credentials coming from the management cluster's Secret through `valuesFrom`.
/// Its DaemonSet requires `node-role.kubernetes.io/control-plane` nodes by default
/// (`daemonset.affinity`), which Kamaji tenants lack: the affinity is removed (helm drops a key
/// set to null). Region and zone tag categories are left empty: the chart's placeholders
/// (`k8s-region`, `k8s-zone`) make the CPI look up tags that do not exist, and a node whose
/// zone cannot be read is never initialised.
fn vsphere_cpi(t: &Tenant) -> Option<Value> {
    let Infrastructure::Vsphere(v) = &t.infrastructure else {
        return None;
    };
    Some(serde_json::json!({
        "config": {
            "enabled": true,
            "vcenter": v.server,
            "datacenter": v.datacenter,
            "thumbprint": v.thumbprint.clone().unwrap_or_default(),
            "region": "",
            "zone": "",
            "secret": {"create": true, "name": VSPHERE_CPI_SECRET},
        },
        "daemonset": {"affinity": null},
    }))
}

/// The Secret the vSphere CPI chart writes into the tenant (its default name).
const VSPHERE_CPI_SECRET: &str = "vsphere-cloud-secret";

/// The Secret the OpenStack CCM chart writes into the tenant's `kube-system` (its default
/// name), which the Cinder CSI chart reads too.
const OPENSTACK_CLOUD_CONFIG: &str = "cloud-config";

/// The OpenStack cloud controller manager chart (kubernetes/cloud-provider-openstack
/// `openstack-cloud-controller-manager` 2.36.0): the chart writes `cloud.conf` into the tenant's
/// Secret `cloud-config` from `cloudConfigContents` (`templates/secret.yaml`), which comes from
/// the `cloud.conf` key of the tenant's credentials Secret through `valuesFrom`. `cluster.name`
/// names the load balancers it makes, so it is the tenant's; its default node selector is
/// `node-role.kubernetes.io/control-plane`, which Kamaji tenants lack, and is removed.
fn openstack_ccm(t: &Tenant) -> Value {
    serde_json::json!({
        "secret": {"enabled": true, "create": true, "name": OPENSTACK_CLOUD_CONFIG},
        "cluster": {"name": t.name},
        "nodeSelector": null,
    })
}

/// The Azure cloud provider (kubernetes-sigs/cloud-provider-azure `cloud-provider-azure`, chart
/// 1.35.3 at v1.36.5): `infra.clusterName` names the load balancers and routes it makes, and
/// `clusterCIDR` is the tenant's pods (CAPZ's own add-on sets both,
/// `templates/addons/cluster-api-helm/cloud-provider-azure.yaml`). Its controller manager is
/// pinned to control-plane nodes by default, which a Kamaji tenant lacks: the selector is
/// removed, and, since a list in values replaces the chart's, its tolerations are the chart's
/// with the `uninitialized` taint every new node carries until the CCM itself has run.
fn azure_ccm(t: &Tenant) -> Value {
    serde_json::json!({
        "infra": {"clusterName": t.name},
        "cloudControllerManager": {
            "clusterCIDR": t.pods.join(","),
            "nodeSelector": null,
            "tolerations": [
                {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true", "effect": "NoSchedule"},
                {"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"},
                {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"},
                {"key": "node-role.kubernetes.io/etcd", "effect": "NoExecute"},
            ],
        },
    })
}

/// OpenStack Cinder CSI (chart `openstack-cinder-csi` 2.36.0): the controller and node plugins
/// read the Secret the CCM chart wrote (`secret.enabled` with `create: false`; the default
/// reads `/etc/config/cloud.conf` from the node's disk), and `clusterID` tags the volumes with
/// the tenant's name.
fn openstack_cinder_csi(t: &Tenant) -> Value {
    serde_json::json!({
        "secret": {"enabled": true, "create": false, "name": OPENSTACK_CLOUD_CONFIG, "hostMount": false},
        "clusterID": t.name,
    })
}

/// The Azure Disk CSI driver (kubernetes-sigs/azuredisk-csi-driver `azuredisk-csi-driver`, chart
/// 1.34.5). Its cloud config is the node's `/etc/kubernetes/azure.json`, which the chart mounts by
/// default (`templates/csi-azuredisk-controller.yaml`, `csi-azuredisk-node.yaml`: hostPath
/// `/etc/kubernetes/`) and the driver reads when the tenant has no `kube-system/azure-cloud-provider`
/// Secret (`pkg/azureutils` `GetCloudProviderFromClient`); CAPZ writes that file on every worker
/// from `<AzureMachineTemplate>-azure-json`, which each pool's bootstrap names. So nothing of the
/// cloud is written here. What is: no Windows DaemonSet (kaas-gitops pools are Linux), and a
/// controller that fits the workers: it runs with `hostNetwork` and fixed ports, so two replicas
/// need two schedulable nodes, and a second replica Pending forever keeps helm's wait (and the
/// HelmRelease) from ever finishing on a one-worker tenant.
fn azure_disk_csi(t: &Tenant) -> Value {
    serde_json::json!({
        "windows": {"enabled": false},
        "controller": {"replicas": schedulable_workers(t).clamp(1, 2)},
    })
}

/// The workers the tenant always has that take pods without tolerations: fixed pools and
/// autoscaled pools' minimum, leaving out pools with a `NoSchedule` or `NoExecute` taint.
fn schedulable_workers(t: &Tenant) -> u32 {
    t.pools
        .iter()
        .filter(|p| p.taints.iter().all(|(_, _, e)| *e == TaintEffect::PreferNoSchedule))
        .map(|p| match p.size {
            PoolSize::Fixed(n) => n,
            PoolSize::Autoscaled { min, .. } => min,
        })
        .sum()
}

/// What an add-on reads from the management cluster at each reconcile: for the Nutanix CCM, the
/// `username` and `password` keys of the tenant's `prismCentral.credentialsSecret` (beside the
/// `credentials` key Cluster API's Nutanix provider reads). helm-controller reads them in the
/// HelmRelease's namespace, the tenant's (helm-controller v1.6.3
/// `internal/controller/helmrelease_controller.go` -> fluxcd/pkg `chartutil/values.go`,
/// `ChartValuesFromReferences`: a missing Secret or key fails the release, naming it).
fn values_from(t: &Tenant, chart: &AddonChart) -> Vec<ValuesReference> {
    // Literal: a password with a comma, or a config file, is taken as written (helm-controller
    // v1.6.3, fluxcd/pkg chartutil v1.27.1 `ReplacePathLiteralValue`), not parsed as `--set`.
    let secret = |name: &str, key: &str, target: &str| ValuesReference {
        kind: "Secret".into(),
        name: name.to_string(),
        values_key: key.into(),
        target_path: target.into(),
        literal: true,
    };
    match (chart.wiring, &t.infrastructure) {
        (Some(AddonWiring::NutanixCcm), Infrastructure::Nutanix(n)) => ["username", "password"]
            .into_iter()
            .map(|key| secret(&n.credentials_secret, key, key))
            .collect(),
        (Some(AddonWiring::VsphereCpi), Infrastructure::Vsphere(v)) => v
            .cloud_provider_secret
            .iter()
            .flat_map(|s| {
                ["username", "password"]
                    .into_iter()
                    .map(|key| secret(s, key, &format!("config.{key}")))
            })
            .collect(),
        (Some(AddonWiring::OpenstackCcm), Infrastructure::Openstack(o)) => {
            vec![secret(&o.credentials_secret, "cloud.conf", "cloudConfigContents")]
        }
        _ => Vec::new(),
    }
}
