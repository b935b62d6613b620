//! The management-cluster layer: Helm repositories, the Kamaji release (in a folder of its own,
//! applied first), the Kamaji control plane provider and the infrastructure providers in use.

use std::collections::BTreeMap;

use crate::diagnostics::Diagnostic;
use crate::model::{Chart, Model, Platform, Provider, repository_name};
use crate::render::images::Images;
use crate::render::node::Node;
use crate::render::objects::helm::{
    Action, HelmChartSpec, HelmChartTemplate, HelmRelease, HelmReleaseSpec, SourceRef, Strategy,
};
use crate::render::objects::{ObjectMeta, to_node};
use crate::render::shared::{DEFAULT_DATASTORE, DEFAULT_RELEASE, platform_labels};
use crate::render::{Object, meta, topology};
use crate::{map, seq};

/// The kamaji chart's HelmRelease (and Helm release) name.
pub const KAMAJI_RELEASE: &str = "kamaji";
/// The chart block of a HelmRelease, referencing the platform's HelmRepository.
pub fn chart_spec(platform: &Platform, chart: &Chart) -> HelmChartTemplate {
    HelmChartTemplate {
        spec: HelmChartSpec {
            chart: chart.name.to_string(),
            version: chart.version.clone(),
            source_ref: SourceRef {
                kind: "HelmRepository".into(),
                name: repository_name(chart),
                namespace: platform.kamaji_namespace.clone(),
            },
            interval: "1h".into(),
        },
    }
}

/// Everything under `overlays/platform/kamaji/`, which Flux applies first (`kaas-kamaji`, see
/// `render::flux`): the kamaji release and what it needs to install, its Namespace and the
/// HelmRepositories.
///
/// Why first: the Kamaji control plane provider v0.20.0 watches TenantControlPlanes only if
/// Kamaji's API group is served when it starts (clastix/cluster-api-control-plane-provider-kamaji
/// `controllers/kamajicontrolplane_controller.go`, `SetupWithManager`: `Owns(&TenantControlPlane{})`
/// behind a discovery of `kamaji.clastix.io/v1alpha1`); a provider started beside the release
/// that brings that CRD misses every TenantControlPlane change until its resync (10 hours), and
/// the KamajiControlPlane's `status.version` stays behind after each upgrade.
///
/// Nothing here needs a CRD that only `kaas-platform` installs (Namespace, HelmRepository and
/// HelmRelease are core and Flux kinds), so the order cannot deadlock. The Namespace is here
/// because the release and the repositories live in it; `kaas-platform`'s objects in it (the
/// ControlPlaneProvider, the backup CronJob) are applied after this one is Ready. Every
/// HelmRepository is here, not only the kamaji chart's: nothing in `overlays/platform` references
/// one (the kamaji release is the platform's only HelmRelease; the tenants' releases reference
/// them and run after both), and one home keeps a repository from moving between the two
/// Kustomizations when `kaas.yaml` gives the kamaji chart another URL (a move from here to
/// `kaas-platform` would be pruned here before `kaas-platform` applied it again).
pub fn kamaji_objects(model: &Model, images: &Images) -> Vec<Object> {
    let p = &model.platform;
    let mut out = vec![namespace(&p.kamaji_namespace)];
    out.extend(helm_repositories(p));
    out.push(kamaji_release(p, images));
    out
}

fn namespace(ns: &str) -> Object {
    Object {
        kind: "Namespace",
        name: ns.to_string(),
        body: map! {"apiVersion" => "v1", "kind" => "Namespace", "metadata" => meta_labels(ns, None)},
    }
}

/// One HelmRepository per chart repository URL the platform and its tenants install from.
fn helm_repositories(p: &Platform) -> Vec<Object> {
    let mut repos: BTreeMap<String, &Chart> = BTreeMap::new();
    for c in [&p.kamaji_chart, &p.etcd_chart, &p.autoscaler_chart] {
        repos.entry(c.repository.clone()).or_insert(c);
    }
    for a in p.addons.values() {
        repos.entry(a.chart.repository.clone()).or_insert(&a.chart);
    }
    repos
        .values()
        .map(|chart| {
            let name = repository_name(chart);
            let oci = chart.repository.starts_with("oci://");
            Object {
                kind: "HelmRepository",
                name: name.clone(),
                body: map! {
                    "apiVersion" => "source.toolkit.fluxcd.io/v1",
                    "kind" => "HelmRepository",
                    "metadata" => meta_labels(&name, Some(&p.kamaji_namespace)),
                    "spec" => map! {
                        "type" => oci.then_some("oci"),
                        "interval" => "1h",
                        "url" => &chart.repository,
                    },
                },
            }
        })
        .collect()
}

/// Everything else under `overlays/platform/` (`kaas-platform`, applied once `kaas-kamaji` is
/// Ready).
pub fn objects(model: &Model, images: &Images) -> Vec<Object> {
    let p = &model.platform;
    let mut out = Vec::new();
    let mut namespaces: Vec<String> = p
        .infrastructure_providers
        .keys()
        .map(|prov| Platform::provider_namespace(*prov).to_string())
        .collect();
    namespaces.extend(p.addon_providers.keys().map(|a| Platform::addon_namespace(a)));
    namespaces.extend(p.ipam_providers.keys().map(|a| Platform::ipam_namespace(a)));
    namespaces.extend(p.topology.as_ref().map(|t| t.namespace.clone()));
    namespaces.extend(crate::render::exposure::rendered_namespace(p).map(str::to_string));
    namespaces.sort();
    namespaces.dedup();
    // The kamaji namespace is `kaas-kamaji`'s, even where another role shares its name.
    namespaces.retain(|ns| *ns != p.kamaji_namespace);
    out.extend(namespaces.iter().map(|ns| namespace(ns)));
    out.extend(crate::render::backup::platform_objects(p, images));
    out.extend(crate::render::datastores::objects(p));
    out.push(control_plane_provider(p, images));
    if p.needs_bootstrap_reader() {
        out.extend(bootstrap_reader());
    }
    for (provider, version) in &p.infrastructure_providers {
        out.push(Object {
            kind: "InfrastructureProvider",
            name: provider.as_str().to_string(),
            body: map! {
                "apiVersion" => "operator.cluster.x-k8s.io/v1alpha2",
                "kind" => "InfrastructureProvider",
                "metadata" => meta_labels(provider.as_str(), Some(Platform::provider_namespace(*provider))),
                "spec" => map! {
                    "version" => version,
                    "configSecret" => p.provider_config_secrets.get(provider).map(|s| map! {"name" => s}),
                    "fetchConfig" => fetch_url(*provider).map(|url| map! {"url" => url}),
                },
            },
        });
    }
    for (name, version) in &p.addon_providers {
        out.push(Object {
            kind: "AddonProvider",
            name: name.clone(),
            body: map! {
                "apiVersion" => "operator.cluster.x-k8s.io/v1alpha2",
                "kind" => "AddonProvider",
                "metadata" => meta_labels(name, Some(&Platform::addon_namespace(name))),
                "spec" => map! {"version" => version},
            },
        });
    }
    for (name, version) in &p.ipam_providers {
        out.push(Object {
            kind: "IPAMProvider",
            name: name.clone(),
            body: map! {
                "apiVersion" => "operator.cluster.x-k8s.io/v1alpha2",
                "kind" => "IPAMProvider",
                "metadata" => meta_labels(name, Some(&Platform::ipam_namespace(name))),
                "spec" => map! {"version" => version},
            },
        });
    }
    out.extend(topology::platform_objects(p));
    out.extend(crate::render::exposure::platform_objects(p));
    out
}

/// A warning when a plan deletes the kamaji release from `overlays/platform/` (where kaas-gitops
/// before `kaas-kamaji` rendered it): the first rollout of the move needs one step by hand.
/// Until `kaas-platform` has its new spec (`dependsOn: kaas-kamaji`), kustomize-controller may
/// apply the new commit with the old one, as the commit also moves the source revision
/// (`internal/controller/kustomization_indexers.go`, `requestsForRevisionChangeOf`), and its
/// garbage collection then deletes the Namespace and the release, still labelled as its own,
/// before `kaas-kamaji` takes them over.
pub fn move_warnings<'a>(deleted: impl Iterator<Item = &'a str>) -> Vec<Diagnostic> {
    let old = format!("{}/helmrelease-{KAMAJI_RELEASE}.yaml", crate::layout::PLATFORM_DIR);
    deleted
        .filter(|path| *path == old)
        .map(|path| {
            Diagnostic::warning(format!(
                "deleting `{path}`: the kamaji release, its Namespace and the HelmRepositories move from the Flux Kustomization `{}` to `{}`; a cluster that still runs `{}` without `dependsOn` may prune them (and with the Namespace everything in it) before `{}` takes them over",
                crate::layout::platform_kustomization_name(),
                crate::layout::kamaji_kustomization_name(),
                crate::layout::platform_kustomization_name(),
                crate::layout::kamaji_kustomization_name(),
            ))
            .with_hint(format!(
                "before this commit reaches such a cluster, `flux suspend kustomization {}`; once `{}` is Ready at it, `flux resume kustomization {}` (docs/lifecycle.md, \"Moving to kaas-kamaji\")",
                crate::layout::platform_kustomization_name(),
                crate::layout::kamaji_kustomization_name(),
                crate::layout::platform_kustomization_name(),
            ))
        })
        .collect()
}

/// Where cluster-api-operator fetches a provider that clusterctl no longer lists: the operator
/// finds the others by name.
fn fetch_url(provider: Provider) -> Option<&'static str> {
    match provider {
        // Dropped from clusterctl's provider list when Equinix Metal was deprecated.
        Provider::Packet => Some("https://github.com/kubernetes-sigs/cluster-api-provider-packet/releases"),
        _ => None,
    }
}

fn meta_labels(name: &str, namespace: Option<&str>) -> Node {
    meta(name, namespace, platform_labels())
}

/// The kamaji-etcd chart's pinned `image` and `jobs` values, the same wherever the chart is
/// installed (the kamaji release's bundled datastore and every dedicated tenant datastore).
pub(crate) fn etcd_chart_images(p: &Platform, images: &Images) -> (Node, Node) {
    let etcd = images.get(&p.etcd_image);
    let image = |spec| {
        let i = images.get(spec);
        map! {"image" => &i.repository, "tag" => i.chart_tag()}
    };
    let etcd_job = images.get(&p.etcd_job_image);
    (
        map! {"repository" => &etcd.repository, "tag" => etcd.chart_tag()},
        map! {
            "cfssl" => image(&p.etcd_cfssl_image),
            "kubectl" => image(&p.etcd_kubectl_image),
            "etcd" => map! {"image" => &etcd_job.repository, "tag" => etcd_job.chart_tag()},
        },
    )
}

/// The kamaji-etcd chart's `clusterDomain`, written only when the management cluster's differs
/// from the chart's default: the chart builds its members' peer and client URLs, and so the
/// DataStore's endpoints, from it (clastix/kamaji-etcd `templates/_helpers.tpl`), and the
/// kamaji chart warns that its init jobs fail when it does not match (`values.yaml`).
pub(crate) fn cluster_domain(p: &Platform) -> Option<&str> {
    (p.cluster_domain != crate::model::DEFAULT_CLUSTER_DOMAIN).then_some(p.cluster_domain.as_str())
}

fn kamaji_release(p: &Platform, images: &Images) -> Object {
    let kamaji = images.get(&p.kamaji_image);
    let (etcd_image, etcd_jobs) = etcd_chart_images(p, images);
    let values = map! {
        "image" => map! {"repository" => &kamaji.repository, "tag" => kamaji.chart_tag(), "pullPolicy" => "IfNotPresent"},
        "defaultDatastoreName" => DEFAULT_DATASTORE,
        "kamaji-etcd" => map! {
            "deploy" => true,
            "fullnameOverride" => DEFAULT_RELEASE,
            "replicas" => p.default_datastore_replicas,
            "image" => etcd_image,
            "datastore" => map! {"enabled" => true, "name" => DEFAULT_DATASTORE},
            "jobs" => etcd_jobs,
            "clusterDomain" => cluster_domain(p),
        },
        // Only for a fleet with a MySQL, PostgreSQL or NATS DataStore: the chart passes other
        // manager flags through `extraArgs` only (kamaji chart `templates/controller.yaml`), and
        // `--kine-image` (26.8.2-edge `cmd/manager/cmd.go`) is the one place the sidecar's image
        // is chosen for every tenant.
        "extraArgs" => p.kine_image.as_ref().map(|i| seq![format!("--kine-image={}", images.get(i).full())]),
    };
    // Retry a failed install or upgrade for ever, as the tenant releases do. With the default
    // strategy and `remediation.retries`, helm-controller v1.6.3 marks the release Stalled
    // (`RetriesExceeded`) once the retries are spent (`internal/reconcile/atomic_release.go`)
    // and never tries again until its spec changes; `kaas-platform` is then never Ready at a
    // new revision, and every tenant Kustomization depends on it. `RetryOnFailure` takes the
    // retry path before any remediation (`GetActiveRetry`; `api/v2/helmrelease_types.go`
    // `InstallStrategy`/`UpgradeStrategy`, `retryInterval`). A first install that fails for
    // want of cert-manager's CRDs thus recovers on its own once they exist.
    let action = || Action {
        create_namespace: None,
        crds: Some("CreateReplace".into()),
        remediation: None,
        strategy: Some(Strategy {
            name: "RetryOnFailure".into(),
            retry_interval: "2m".into(),
        }),
    };
    let release = HelmRelease::new(
        ObjectMeta::new(KAMAJI_RELEASE, Some(&p.kamaji_namespace), platform_labels()),
        HelmReleaseSpec {
            interval: p.interval.clone(),
            release_name: KAMAJI_RELEASE.into(),
            target_namespace: None,
            storage_namespace: None,
            kube_config: None,
            depends_on: Vec::new(),
            chart: chart_spec(p, &p.kamaji_chart),
            install: action(),
            upgrade: action(),
            uninstall: None,
            values,
            values_from: Vec::new(),
        },
    );
    Object {
        kind: "HelmRelease",
        name: KAMAJI_RELEASE.into(),
        body: to_node(&release),
    }
}

/// The labels of the Kamaji control plane provider's pods. clastix/cluster-api-control-plane-
/// provider-kamaji v0.20.0: `config/default/kustomization.yaml` adds `cluster.x-k8s.io/provider:
/// kamaji` as a common label (selectors and pod templates included) and
/// `config/manager/manager.yaml` labels the pod template `control-plane: controller-manager`.
/// clusterctl's `control-plane-kamaji` label (cluster-api v1.14.0,
/// `cmd/clusterctl/client/repository/components.go` `addCommonLabels`) goes on top-level objects
/// only, never on pods, and cluster-api-operator adds no pod labels: a selector on it matches
/// nothing.
pub(crate) fn provider_pod_labels() -> Node {
    map! {"cluster.x-k8s.io/provider" => "kamaji", "control-plane" => "controller-manager"}
}

fn control_plane_provider(p: &Platform, images: &Images) -> Object {
    let image = images.get(&p.cp_provider_image);
    let selector = map! {"matchLabels" => provider_pod_labels()};
    Object {
        kind: "ControlPlaneProvider",
        name: KAMAJI_RELEASE.into(),
        body: map! {
            "apiVersion" => "operator.cluster.x-k8s.io/v1alpha2",
            "kind" => "ControlPlaneProvider",
            "metadata" => meta_labels(KAMAJI_RELEASE, Some(&p.kamaji_namespace)),
            "spec" => map! {
                "version" => &p.cp_provider_version,
                "deployment" => map! {
                    "replicas" => p.cp_provider_replicas,
                    "affinity" => map! {
                        "podAntiAffinity" => map! {
                            // Spread over zones first, then at least over nodes.
                            "preferredDuringSchedulingIgnoredDuringExecution" => seq![
                                map! {
                                    "weight" => 100u32,
                                    "podAffinityTerm" => map! {
                                        "topologyKey" => "topology.kubernetes.io/zone",
                                        "labelSelector" => selector.clone(),
                                    },
                                },
                                map! {
                                    "weight" => 50u32,
                                    "podAffinityTerm" => map! {
                                        "topologyKey" => "kubernetes.io/hostname",
                                        "labelSelector" => selector,
                                    },
                                },
                            ],
                        },
                    },
                    "containers" => seq![map! {
                        "name" => "controller",
                        "imageUrl" => image.full(),
                        "args" => map! {"--zap-encoder" => "json"},
                    }],
                },
            },
        },
    }
}

/// The least grant that lets Cluster API v1.14's kubeadm bootstrap controller read the Cluster's
/// control plane object, which the Kamaji control plane provider up to v0.20.0 does not give
/// (see `model::bootstrap_rbac` for the upstream files). Read only: `getControlPlaneVersion`
/// (cluster-api v1.14.0 `bootstrap/kubeadm/reconcilers/kubeadmconfig/kubeadmconfig_controller.go`)
/// gets the object; `get, list, watch` is what its marker grants on `kubeadmcontrolplanes`.
fn bootstrap_reader() -> [Object; 2] {
    use crate::model::bootstrap_rbac::{BOOTSTRAP_NAMESPACE, BOOTSTRAP_SERVICE_ACCOUNT, READER_NAME};
    let rbac = "rbac.authorization.k8s.io/v1";
    [
        Object {
            kind: "ClusterRole",
            name: READER_NAME.into(),
            body: map! {
                "apiVersion" => rbac,
                "kind" => "ClusterRole",
                "metadata" => meta_labels(READER_NAME, None),
                "rules" => seq![map! {
                    "apiGroups" => seq!["controlplane.cluster.x-k8s.io"],
                    "resources" => seq!["kamajicontrolplanes"],
                    "verbs" => seq!["get", "list", "watch"],
                }],
            },
        },
        Object {
            kind: "ClusterRoleBinding",
            name: READER_NAME.into(),
            body: map! {
                "apiVersion" => rbac,
                "kind" => "ClusterRoleBinding",
                "metadata" => meta_labels(READER_NAME, None),
                "roleRef" => map! {
                    "apiGroup" => "rbac.authorization.k8s.io",
                    "kind" => "ClusterRole",
                    "name" => READER_NAME,
                },
                "subjects" => seq![map! {
                    "kind" => "ServiceAccount",
                    "name" => BOOTSTRAP_SERVICE_ACCOUNT,
                    "namespace" => BOOTSTRAP_NAMESPACE,
                }],
            },
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(url: &str) -> Chart {
        Chart {
            name: "x".into(),
            repository: url.into(),
            version: "1".into(),
        }
    }

    #[test]
    fn repository_names_are_stable_dns_labels() {
        assert_eq!(
            repository_name(&chart("https://clastix.github.io/charts")),
            "clastix-charts"
        );
        assert_eq!(
            repository_name(&chart("https://kubernetes.github.io/autoscaler")),
            "kubernetes-autoscaler"
        );
        assert_eq!(repository_name(&chart("oci://ghcr.io/clastix/charts")), "ghcr-charts");
        assert_eq!(repository_name(&chart("http://127.0.0.1:8080")), "127");
    }
}
