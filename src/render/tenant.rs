//! One tenant's objects: namespace, access, datastore, Cluster, KamajiControlPlane, the
//! infrastructure cluster, worker pools and the autoscaler.

use std::collections::BTreeMap;

use crate::model::exposure::Exposure;
use crate::model::{Component, DataStore, Platform, ServiceType, Tenant};
use crate::render::access::ApiServerAuthentication;
use crate::render::images::Images;
use crate::render::node::Node;
use crate::render::objects::cluster::{ApiEndpoint, Cluster, ClusterSpec, ContractRef};
use crate::render::objects::controlplane::{self as kcp, KamajiControlPlane, KamajiControlPlaneSpec};
use crate::render::objects::helm::{Action, HelmRelease, HelmReleaseSpec, Strategy};
use crate::render::objects::{ObjectMeta, to_node};
use crate::render::platform::{chart_spec, etcd_chart_images};
use crate::render::shared::{CLOUD_PROVIDER_EXTERNAL, cluster_labels, cluster_network, tenant_labels, tmeta};
use crate::render::{Object, meta, providers, topology, workers};
use crate::{map, seq};

/// Everything under `overlays/tenants/<name>/`.
pub fn objects(p: &Platform, images: &Images, t: &Tenant) -> Vec<Object> {
    let mut out = vec![namespace(t)];
    out.extend(access(p, t));
    if t.dedicated_etcd().is_some() {
        out.push(etcd_release(p, images, t));
    }
    out.extend(crate::render::backup::tenant_objects(p, images, t));
    if t.decommissioned {
        // The cluster goes first, while its datastore still serves Kamaji's cleanup; the access
        // Kustomization stays, suspended, so that deleting it later never waits on the cluster.
        out.extend(crate::render::access::kustomization(p, t));
        return out;
    }
    match &t.topology {
        // The class's templates make the control plane, infrastructure cluster and pools.
        Some(topo) => out.push(topology::cluster(p, t, topo)),
        None => {
            let authentication = crate::render::access::api_server(t);
            out.push(cluster(p, t));
            out.push(control_plane(p, t, authentication.as_ref()));
            out.extend(authentication.and_then(|a| a.config_map));
            out.push(providers::cluster_object(p, t));
            for pool in &t.pools {
                out.extend(workers::pool_objects(t, pool));
            }
        }
    }
    out.extend(providers::extra_objects(t));
    out.extend(crate::render::addons::objects(p, images, t));
    out.extend(crate::render::access::kustomization(p, t));
    if t.autoscales() {
        out.push(autoscaler(p, images, t));
    }
    out
}

fn namespace(t: &Tenant) -> Object {
    Object {
        kind: "Namespace",
        name: t.name.clone(),
        body: map! {"apiVersion" => "v1", "kind" => "Namespace", "metadata" => meta(&t.name, None, tenant_labels(t))},
    }
}

/// A Role reading only the tenant's `Cluster` (the endpoint `kaas-gitops kubeconfig` names),
/// bound to the admin groups as the management cluster names them. Not the `<name>-kubeconfig`
/// Secret: its `value` is Kamaji's kubeadm `admin.conf`, a client certificate in
/// `kubeadm:cluster-admins` that cannot be revoked (Kamaji control plane provider v0.20.0
/// `controllers/kamajicontrolplane_controller_resources.go` copies it; Kamaji 26.8.2
/// `internal/resources/kubeconfig.go` makes it); `kubeconfig` takes the CA from the tenant's
/// `cluster-info` instead (`cluster::tenant`).
fn access(p: &Platform, t: &Tenant) -> Vec<Object> {
    if t.admin_groups.is_empty() {
        return Vec::new();
    }
    let name = format!("{}-admin", t.name);
    let role = map! {
        "apiVersion" => "rbac.authorization.k8s.io/v1",
        "kind" => "Role",
        "metadata" => tmeta(t, &name),
        "rules" => seq![
            map! {
                "apiGroups" => seq!["cluster.x-k8s.io"],
                "resources" => seq!["clusters"],
                "resourceNames" => seq![&t.name],
                "verbs" => seq!["get", "watch"],
            },
        ],
    };
    let subjects: Vec<Node> = t
        .admin_groups
        .iter()
        .map(|g| map! {"apiGroup" => "rbac.authorization.k8s.io", "kind" => "Group", "name" => format!("{}{g}", p.management_groups_prefix)})
        .collect();
    let binding = map! {
        "apiVersion" => "rbac.authorization.k8s.io/v1",
        "kind" => "RoleBinding",
        "metadata" => tmeta(t, &name),
        "roleRef" => map! {"apiGroup" => "rbac.authorization.k8s.io", "kind" => "Role", "name" => &name},
        "subjects" => subjects,
    };
    vec![
        Object {
            kind: "Role",
            name: name.clone(),
            body: role,
        },
        Object {
            kind: "RoleBinding",
            name,
            body: binding,
        },
    ]
}

fn etcd_release(p: &Platform, images: &Images, t: &Tenant) -> Object {
    let Some(DataStore::Dedicated {
        replicas,
        storage,
        storage_class,
        ..
    }) = t.dedicated_etcd()
    else {
        unreachable!("called for dedicated datastores only")
    };
    let name = t.etcd_release();
    let (image, jobs) = etcd_chart_images(p, images);
    let values = map! {
        "fullnameOverride" => &name,
        "replicas" => *replicas,
        "image" => image,
        "persistentVolumeClaim" => map! {
            "size" => storage,
            "storageClassName" => storage_class.clone(),
        },
        "datastore" => map! {"enabled" => true, "name" => &name},
        "jobs" => jobs,
        "clusterDomain" => crate::render::platform::cluster_domain(p),
    };
    helm_release(p, t, name, &p.etcd_chart, values)
}

/// Retry a failed install or upgrade every few minutes, for ever, and never uninstall in
/// between. A tenant's releases start before what they need exists: the autoscaler mounts the
/// `<tenant>-kubeconfig` Secret as a required volume (cluster-autoscaler chart 9.59.0,
/// `templates/deployment.yaml`), which appears only once the control plane is up. With the
/// default strategy (`RemediateOnFailure`, `retries: 3`) helm-controller v1.6.3 gives up after
/// the retries and leaves the release Stalled until its spec changes; and its remediation
/// uninstalls, which for an etcd release would delete its volumes' claims' owner.
/// (fluxcd/helm-controller v1.6.3 `api/v2/helmrelease_types.go`: `Strategy`, `RetryOnFailure`.)
fn retry_on_failure() -> Action {
    Action {
        create_namespace: None,
        crds: None,
        remediation: None,
        strategy: Some(Strategy {
            name: "RetryOnFailure".into(),
            retry_interval: "2m".into(),
        }),
    }
}

/// A HelmRelease in the tenant's namespace; `name` is also the Helm release name.
fn helm_release(p: &Platform, t: &Tenant, name: String, chart: &crate::model::Chart, values: Node) -> Object {
    let release = HelmRelease::new(
        ObjectMeta::new(&name, Some(&t.name), tenant_labels(t)),
        HelmReleaseSpec {
            interval: p.interval.clone(),
            release_name: name.clone(),
            target_namespace: None,
            storage_namespace: None,
            kube_config: None,
            depends_on: Vec::new(),
            chart: chart_spec(p, chart),
            install: retry_on_failure(),
            upgrade: retry_on_failure(),
            uninstall: None,
            values,
            values_from: Vec::new(),
        },
    );
    Object {
        kind: "HelmRelease",
        body: to_node(&release),
        name,
    }
}

fn cluster(p: &Platform, t: &Tenant) -> Object {
    let infra_kind = providers::kinds(t.provider()).cluster.kind;
    let cluster = Cluster::new(
        ObjectMeta::new(&t.name, Some(&t.name), cluster_labels(t)),
        ClusterSpec {
            cluster_network: cluster_network(t),
            control_plane_ref: Some(ContractRef {
                api_group: "controlplane.cluster.x-k8s.io".into(),
                kind: "KamajiControlPlane".into(),
                name: t.name.clone(),
            }),
            infrastructure_ref: Some(ContractRef {
                api_group: providers::GROUP.into(),
                kind: infra_kind.into(),
                name: t.name.clone(),
            }),
            topology: None,
            // Cluster API copies the endpoint from the control plane once, while the Cluster has
            // none (cluster-api v1.14.0 `core/reconcilers/cluster/cluster_controller_phases.go`),
            // and Kamaji's provider never writes it: a hostname behind the Gateway or the Ingress
            // is rendered, so the Cluster follows a tenant moved onto it from git.
            control_plane_endpoint: t
                .exposure
                .hostname()
                .and_then(|_| t.endpoint(p))
                .map(|(host, port)| ApiEndpoint { host, port }),
        },
    );
    Object {
        kind: "Cluster",
        name: t.name.clone(),
        body: to_node(&cluster),
    }
}

/// A control plane component's block; `None` (left out) when it sets nothing.
fn component(c: &Component) -> Option<kcp::Component> {
    let quantities = |m: &BTreeMap<String, String>| (!m.is_empty()).then(|| m.clone());
    let resources = kcp::Resources {
        requests: quantities(&c.requests),
        limits: quantities(&c.limits),
    };
    let resources = (resources.requests.is_some() || resources.limits.is_some()).then_some(resources);
    let extra_args = (!c.extra_args.is_empty()).then(|| c.extra_args.clone());
    (extra_args.is_some() || resources.is_some()).then_some(kcp::Component {
        extra_args,
        resources,
        extra_volume_mounts: None,
    })
}

fn control_plane(p: &Platform, t: &Tenant, authentication: Option<&ApiServerAuthentication>) -> Object {
    let enabled = |on: bool| on.then_some(kcp::Defaults {});
    let wiring = providers::control_plane(&t.infrastructure);
    let mut service_annotations = t.service_annotations.clone();
    // The VIP reaches the load balancer only through its annotation: Kamaji declares the
    // address (certificates, kubeconfig, endpoints) but no longer asks the Service for it.
    if let (Some(vip), Some(key), ServiceType::LoadBalancer) =
        (t.vip, p.load_balancer.address_annotation(), t.service_type)
    {
        service_annotations.insert(key.to_string(), vip.to_string());
    }
    for (k, v) in &wiring.service_annotations {
        service_annotations.insert((*k).to_string(), v.clone());
    }
    let mut controller_manager = t.controller_manager.clone();
    if wiring.external_cloud
        && !controller_manager
            .extra_args
            .iter()
            .any(|a| a.starts_with("--cloud-provider="))
    {
        controller_manager.extra_args.push(CLOUD_PROVIDER_EXTERNAL.to_string());
    }
    let mut api_server = t.api_server.clone();
    if let Some(a) = authentication {
        api_server.extra_args.extend(a.args.iter().cloned());
    }
    let mut api_server = component(&api_server);
    if let Some(mount) = authentication.and_then(|a| a.mount.clone()) {
        let c = api_server.get_or_insert(kcp::Component {
            extra_args: None,
            resources: None,
            extra_volume_mounts: None,
        });
        c.extra_volume_mounts = Some(vec![mount]);
    }
    let deployment = authentication
        .and_then(|a| a.volume.clone())
        .map(|v| kcp::Deployment { extra_volumes: vec![v] });
    // The kubelets' `clusterDNS`, written because Kamaji derives it on create only (see
    // `kcp::CoreDns`); the same address in topology mode comes through a class variable.
    let dns_service_ips: Vec<String> = t.dns_service_ip().iter().map(ToString::to_string).collect();
    // Behind a Gateway or an Ingress: `host:port`, the port always written (`model::exposure`).
    let routed = t
        .exposure
        .hostname()
        .and_then(|_| t.endpoint(p))
        .map(|(host, port)| format!("{host}:{port}"));
    let control_plane = KamajiControlPlane::new(
        ObjectMeta::new(&t.name, Some(&t.name), tenant_labels(t)),
        KamajiControlPlaneSpec {
            version: t.version.to_string(),
            replicas: t.cp_replicas,
            data_store_name: t.datastore_name(),
            // Named in git, so a control plane re-created from it finds its data (issue 41).
            data_store_schema: t.datastore_names.named().map(|n| n.schema.clone()),
            data_store_username: t.datastore_names.named().map(|n| n.username.clone()),
            data_store_overrides: t
                .datastore_overrides
                .iter()
                .map(|o| kcp::DataStoreOverride {
                    resource: o.resource.clone(),
                    data_store: o.data_store.clone(),
                })
                .collect(),
            addons: kcp::Addons {
                core_dns: t.core_dns.then(|| kcp::CoreDns {
                    dns_service_ips: dns_service_ips.clone(),
                }),
                kube_proxy: enabled(t.kube_proxy),
                konnectivity: enabled(t.konnectivity),
            },
            api_server,
            controller_manager: component(&controller_manager),
            scheduler: component(&t.scheduler),
            kubelet: kcp::Kubelet {
                cgroupfs: match t.cgroup_driver {
                    crate::model::CgroupDriver::Systemd => "systemd",
                    crate::model::CgroupDriver::Cgroupfs => "cgroupfs",
                }
                .into(),
                preferred_address_types: t
                    .preferred_address_types
                    .iter()
                    .map(|a| a.as_str().to_string())
                    .collect(),
            },
            network: kcp::Network {
                service_type: t.service_type.as_str().into(),
                service_address: t.vip.map(|ip| ip.to_string()),
                service_annotations: (!service_annotations.is_empty()).then_some(service_annotations),
                dns_service_ips: if t.core_dns { Vec::new() } else { dns_service_ips },
                gateway: match (&t.exposure, &p.exposures.gateway, &routed) {
                    (Exposure::Gateway { .. }, Some(g), Some(hostname)) => Some(kcp::GatewayRoute {
                        name: g.name.clone(),
                        namespace: g.namespace.clone(),
                        hostname: hostname.clone(),
                        section_name: g.listener.clone(),
                    }),
                    _ => None,
                },
                ingress: match (&t.exposure, &p.exposures.ingress, &routed) {
                    (Exposure::Ingress { .. }, Some(i), Some(hostname)) => Some(kcp::IngressRoute {
                        class_name: i.class_name.clone(),
                        hostname: hostname.clone(),
                        extra_annotations: i.annotations.clone(),
                    }),
                    _ => None,
                },
                cert_sans: match &t.exposure {
                    Exposure::Service { extra_name } => extra_name.iter().cloned().collect(),
                    _ => Vec::new(),
                },
            },
            deployment,
        },
    );
    Object {
        kind: "KamajiControlPlane",
        name: t.name.clone(),
        body: to_node(&control_plane),
    }
}

/// Names the Secret whose change should restart a Deployment, for Stakater Reloader
/// (stakater/Reloader README, "Secret": the Deployment's own annotation, comma-separated names).
const RELOAD_ON_SECRET: &str = "secret.reloader.stakater.com/reload";

/// The tenant's cluster-autoscaler on the management cluster, talking to the tenant through its
/// admin kubeconfig. Kamaji renews that certificate in place (`internal/resources/kubeconfig.go`,
/// re-created when no longer valid within its threshold) and the Kamaji provider copies it into
/// `<tenant>-kubeconfig`; the autoscaler's clusterapi provider never re-reads it
/// (kubernetes/autoscaler#8456), so the Deployment is annotated for Reloader to restart it when
/// the Secret changes (docs/addons.md says what to run).
fn autoscaler(p: &Platform, images: &Images, t: &Tenant) -> Object {
    let name = format!("{}-autoscaler", t.name);
    let image = images.get(p.autoscaler_image_for(t.version));
    let kubeconfig = format!("{}-kubeconfig", t.name);
    let values = map! {
        "fullnameOverride" => &name,
        "cloudProvider" => "clusterapi",
        "clusterAPIMode" => "kubeconfig-incluster",
        "clusterAPIKubeconfigSecret" => &kubeconfig,
        // cluster-autoscaler chart 9.59.0 `templates/deployment.yaml`: the Deployment's own
        // annotations, where Reloader looks.
        "deployment" => map! {"annotations" => map! {RELOAD_ON_SECRET => &kubeconfig}},
        "autoDiscovery" => map! {"clusterName" => &t.name, "namespace" => &t.name},
        "rbac" => map! {"clusterScoped" => false},
        "image" => map! {"repository" => &image.repository, "tag" => image.chart_tag()},
    };
    helm_release(p, t, name, &p.autoscaler_chart, values)
}
