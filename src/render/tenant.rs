//! One tenant's objects: namespace, access, datastore, Cluster, KamajiControlPlane, the
//! infrastructure cluster, worker pools and the autoscaler.

use crate::model::{Component, DataStore, Infrastructure, Platform, Tenant};
use crate::render::images::Images;
use crate::render::node::Node;
use crate::render::platform::chart_spec;
use crate::render::{Object, meta, workers};
use crate::{map, seq};

/// The labels every object of `t` carries.
pub fn labels(t: &Tenant) -> Node {
    map! {
        "app.kubernetes.io/managed-by" => "kaas-gitops",
        "kaas-gitops.dev/tenant" => &t.name,
    }
}

/// `metadata` of a namespaced object of `t`.
pub fn tmeta(t: &Tenant, name: &str) -> Node {
    meta(name, Some(&t.name), labels(t))
}

/// Everything under `overlays/tenants/<name>/`.
pub fn objects(p: &Platform, images: &Images, t: &Tenant) -> Vec<Object> {
    let mut out = vec![namespace(t)];
    out.extend(access(t));
    if let DataStore::Dedicated { .. } = t.datastore {
        out.push(etcd_release(p, images, t));
    }
    out.push(cluster(t));
    out.push(control_plane(t));
    out.push(infrastructure_cluster(t));
    for pool in &t.pools {
        out.extend(workers::pool_objects(t, pool));
    }
    if t.autoscales() {
        out.push(autoscaler(p, images, t));
    }
    out
}

fn namespace(t: &Tenant) -> Object {
    Object {
        kind: "Namespace",
        name: t.name.clone(),
        body: map! {"apiVersion" => "v1", "kind" => "Namespace", "metadata" => meta(&t.name, None, labels(t))},
    }
}

/// A Role reading only the tenant's `Cluster` and `<name>-kubeconfig` Secret, bound to the
/// admin groups.
fn access(t: &Tenant) -> Vec<Object> {
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
            map! {
                "apiGroups" => seq![""],
                "resources" => seq!["secrets"],
                "resourceNames" => seq![format!("{}-kubeconfig", t.name)],
                "verbs" => seq!["get"],
            },
        ],
    };
    let subjects: Vec<Node> = t
        .admin_groups
        .iter()
        .map(|g| map! {"apiGroup" => "rbac.authorization.k8s.io", "kind" => "Group", "name" => g})
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
    let DataStore::Dedicated {
        replicas,
        storage,
        storage_class,
    } = &t.datastore
    else {
        unreachable!("called for dedicated datastores only")
    };
    let name = format!("{}-etcd", t.name);
    let etcd = images.get(&p.etcd_image);
    let job = |spec| {
        let i = images.get(spec);
        map! {"image" => &i.repository, "tag" => i.chart_tag()}
    };
    let etcd_job = images.get(&p.etcd_job_image);
    Object {
        kind: "HelmRelease",
        name: name.clone(),
        body: map! {
            "apiVersion" => "helm.toolkit.fluxcd.io/v2",
            "kind" => "HelmRelease",
            "metadata" => tmeta(t, &name),
            "spec" => map! {
                "interval" => &p.interval,
                "releaseName" => &name,
                "chart" => chart_spec(p, &p.etcd_chart),
                "install" => map! {"remediation" => map! {"retries" => 3u32}},
                "upgrade" => map! {"remediation" => map! {"retries" => 3u32}},
                "values" => map! {
                    "fullnameOverride" => &name,
                    "replicas" => *replicas,
                    "image" => map! {"repository" => &etcd.repository, "tag" => etcd.chart_tag()},
                    "persistentVolumeClaim" => map! {
                        "size" => storage,
                        "storageClassName" => storage_class.clone(),
                    },
                    "datastore" => map! {"enabled" => true, "name" => &name},
                    "jobs" => map! {
                        "cfssl" => job(&p.etcd_cfssl_image),
                        "kubectl" => job(&p.etcd_kubectl_image),
                        "etcd" => map! {"image" => &etcd_job.repository, "tag" => etcd_job.chart_tag()},
                    },
                },
            },
        },
    }
}

fn cluster(t: &Tenant) -> Object {
    let mut labels = vec![
        ("app.kubernetes.io/managed-by".to_string(), Node::from("kaas-gitops")),
        ("kaas-gitops.dev/tenant".to_string(), Node::from(&t.name)),
    ];
    for (k, v) in &t.labels {
        labels.retain(|(existing, _)| existing != k);
        labels.push((k.clone(), Node::from(v)));
    }
    let (infra_kind, _) = infra_kind(t);
    Object {
        kind: "Cluster",
        name: t.name.clone(),
        body: map! {
            "apiVersion" => "cluster.x-k8s.io/v1beta2",
            "kind" => "Cluster",
            "metadata" => map! {"name" => &t.name, "namespace" => &t.name, "labels" => Node::Map(labels)},
            "spec" => map! {
                "clusterNetwork" => map! {
                    "apiServerPort" => t.port,
                    "pods" => map! {"cidrBlocks" => &t.pods},
                    "services" => map! {"cidrBlocks" => &t.services},
                },
                "controlPlaneRef" => map! {
                    "apiGroup" => "controlplane.cluster.x-k8s.io",
                    "kind" => "KamajiControlPlane",
                    "name" => &t.name,
                },
                "infrastructureRef" => map! {
                    "apiGroup" => "infrastructure.cluster.x-k8s.io",
                    "kind" => infra_kind,
                    "name" => &t.name,
                },
            },
        },
    }
}

/// The infrastructure cluster kind and its apiVersion.
fn infra_kind(t: &Tenant) -> (&'static str, &'static str) {
    match t.infrastructure {
        Infrastructure::Proxmox(_) => ("ProxmoxCluster", "infrastructure.cluster.x-k8s.io/v1alpha2"),
    }
}

fn component(c: &Component) -> Node {
    let quantities = |m: &std::collections::BTreeMap<String, String>| Node::from(m).or_absent();
    map! {
        "extraArgs" => Node::from(&c.extra_args).or_absent(),
        "resources" => map! {
            "requests" => quantities(&c.requests),
            "limits" => quantities(&c.limits),
        }.or_absent(),
    }
    .or_absent()
}

fn control_plane(t: &Tenant) -> Object {
    let enabled = |on: bool| if on { Node::Map(Vec::new()) } else { Node::Absent };
    Object {
        kind: "KamajiControlPlane",
        name: t.name.clone(),
        body: map! {
            "apiVersion" => "controlplane.cluster.x-k8s.io/v1alpha2",
            "kind" => "KamajiControlPlane",
            "metadata" => tmeta(t, &t.name),
            "spec" => map! {
                "version" => t.version.to_string(),
                "replicas" => t.cp_replicas,
                "dataStoreName" => t.datastore_name(),
                "addons" => map! {
                    "coreDNS" => enabled(t.core_dns),
                    "kubeProxy" => enabled(t.kube_proxy),
                    "konnectivity" => enabled(t.konnectivity),
                },
                "apiServer" => component(&t.api_server),
                "controllerManager" => component(&t.controller_manager),
                "scheduler" => component(&t.scheduler),
                "kubelet" => map! {
                    "cgroupfs" => match t.cgroup_driver {
                        crate::model::CgroupDriver::Systemd => "systemd",
                        crate::model::CgroupDriver::Cgroupfs => "cgroupfs",
                    },
                    "preferredAddressTypes" => t.preferred_address_types.iter().map(|a| a.as_str()).collect::<Vec<_>>(),
                },
                "network" => map! {
                    "serviceType" => t.service_type.as_str(),
                    "serviceAddress" => t.vip.map(|ip| ip.to_string()),
                    "serviceAnnotations" => Node::from(&t.service_annotations).or_absent(),
                },
            },
        },
    }
}

fn infrastructure_cluster(t: &Tenant) -> Object {
    let (kind, api_version) = infra_kind(t);
    let spec = match &t.infrastructure {
        Infrastructure::Proxmox(px) => map! {
            "externalManagedControlPlane" => true,
            "allowedNodes" => &px.allowed_nodes,
            "dnsServers" => &px.dns_servers,
            "ipv4Config" => px.ipv4.as_ref().map(|(addresses, gateway, prefix)| map! {
                "addresses" => addresses,
                "gateway" => gateway,
                "prefix" => *prefix,
            }),
            "credentialsRef" => px.credentials_secret.as_ref().map(|s| map! {"name" => s, "namespace" => &t.name}),
        },
    };
    Object {
        kind,
        name: t.name.clone(),
        body: map! {
            "apiVersion" => api_version,
            "kind" => kind,
            "metadata" => tmeta(t, &t.name),
            "spec" => spec,
        },
    }
}

fn autoscaler(p: &Platform, images: &Images, t: &Tenant) -> Object {
    let name = format!("{}-autoscaler", t.name);
    let image = images.get(&p.autoscaler_image);
    Object {
        kind: "HelmRelease",
        name: name.clone(),
        body: map! {
            "apiVersion" => "helm.toolkit.fluxcd.io/v2",
            "kind" => "HelmRelease",
            "metadata" => tmeta(t, &name),
            "spec" => map! {
                "interval" => &p.interval,
                "releaseName" => &name,
                "chart" => chart_spec(p, &p.autoscaler_chart),
                "install" => map! {"remediation" => map! {"retries" => 3u32}},
                "upgrade" => map! {"remediation" => map! {"retries" => 3u32}},
                "values" => map! {
                    "fullnameOverride" => &name,
                    "cloudProvider" => "clusterapi",
                    "clusterAPIMode" => "kubeconfig-incluster",
                    "clusterAPIKubeconfigSecret" => format!("{}-kubeconfig", t.name),
                    "autoDiscovery" => map! {"clusterName" => &t.name, "namespace" => &t.name},
                    "rbac" => map! {"clusterScoped" => false},
                    "image" => map! {"repository" => &image.repository, "tag" => image.chart_tag()},
                },
            },
        },
    }
}
