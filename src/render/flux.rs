//! `flux/`: two Flux Kustomizations for the platform layer (`kaas-kamaji`, then `kaas-platform`)
//! and one per tenant (pruning, so a deleted tenant file deletes the tenant), and a
//! `kustomization.yaml` listing them.

use std::collections::BTreeSet;

use crate::layout::artifact::CONTENT_MEDIA_TYPE;
use crate::map;
use crate::model::{Delivery, Model, OciDelivery, Tenant, artifact_generator};
use crate::render::node::Node;
use crate::render::objects::artifact::{
    ArtifactGenerator, ArtifactGeneratorSpec, CopyOperation, GeneratorSource, OutputArtifact, SOURCE_ALIAS,
};
use crate::render::objects::helm::SourceRef;
use crate::render::objects::kustomize::{Dependency, HealthCheck, HealthCheckExpr, Kustomization, KustomizationSpec};
use crate::render::objects::oci::{LayerSelector, LocalRef, OciRef, OciRepository, OciRepositorySpec};
use crate::render::objects::{ObjectMeta, to_node};
use crate::render::{Object, Tree, yaml};

use crate::layout::{self, platform_kustomization_name, tenant_kustomization_name};

pub use crate::model::shard;

/// How soon Flux retries a Kustomization whose apply failed.
const RETRY_INTERVAL: &str = "2m";

/// What `kaas-kamaji` promises before `kaas-platform` applies: the kamaji release Ready, so
/// Kamaji's CRDs (TenantControlPlane, DataStore) are served before cluster-api-operator starts
/// the Kamaji control plane provider from `kaas-platform`'s ControlPlaneProvider. The provider
/// v0.20.0 watches TenantControlPlanes only if `kamaji.clastix.io/v1alpha1` is served when it
/// starts (clastix/cluster-api-control-plane-provider-kamaji
/// `controllers/kamajicontrolplane_controller.go:420-422`, `SetupWithManager`); started first, it
/// never sees a TenantControlPlane change until controller-runtime's 10-hour resync, and
/// `wait` and `upgrade --to` wait that long for `status.version`.
fn kamaji_gate(model: &Model) -> Vec<HealthCheck> {
    vec![health_check(
        model,
        crate::render::objects::helm::API_VERSION,
        "HelmRelease",
    )]
}

/// The objects every tenant needs before its own objects can be applied: the Kamaji release
/// (the TenantControlPlane and DataStore CRDs and Kamaji's webhooks), which `kaas-kamaji` checks
/// and `kaas-platform` depends on, and the Kamaji control plane provider (the KamajiControlPlane
/// CRD and its webhook), which `kaas-platform` checks. The platform Kustomization is Ready, and
/// the tenants (which depend on it) proceed, once these are Ready; nothing else of the platform
/// gates them.
///
/// Not `wait: true`: kustomize-controller v1.9.4 then waits for every applied object to be
/// Current (kstatus), and the backup PersistentVolumeClaim stays InProgress until it is Bound,
/// which with a WaitForFirstConsumer storage class is the first backup run, hours later; an
/// infrastructure provider that never gets Ready would block every tenant of every provider.
/// A tenant's infrastructure objects instead wait for their own provider through the apply's
/// retries (`retryInterval`): until the provider installed its CRDs, Flux reports
/// "no matches for kind" on that tenant only. (fluxcd/kustomize-controller v1.9.4,
/// `internal/controller/kustomization_controller.go`: `checkDependencies` also requires the
/// dependency to have applied the same source revision, so every commit waits for this gate.)
fn platform_gate(model: &Model) -> Vec<HealthCheck> {
    vec![health_check(
        model,
        "operator.cluster.x-k8s.io/v1alpha2",
        "ControlPlaneProvider",
    )]
}

/// A health check of the `kamaji` object of `kind` (the release and the provider share the name).
fn health_check(model: &Model, api_version: &str, kind: &str) -> HealthCheck {
    HealthCheck {
        api_version: api_version.into(),
        kind: kind.into(),
        name: crate::render::platform::KAMAJI_RELEASE.into(),
        namespace: model.platform.kamaji_namespace.clone(),
    }
}

/// The OCIRepository of a tenant delivered as an OCI artifact: `<repository>/<tenant>:<tag>`,
/// its one layer of Flux's content media type extracted (source-controller v1.9.1,
/// `docs/spec/v1/ocirepositories.md`, "Layer selector"). Named like the tenant's Kustomization.
fn tenant_oci_repository(model: &Model, oci: &OciDelivery, tenant: &str, labels: Node) -> Object {
    let name = tenant_kustomization_name(tenant);
    let repo = OciRepository::new(
        ObjectMeta::new(&name, Some(&model.platform.source_namespace), labels),
        OciRepositorySpec {
            interval: oci.interval.clone(),
            url: format!("oci://{}/{tenant}", oci.repository),
            reference: OciRef { tag: oci.tag.clone() },
            layer_selector: LayerSelector {
                media_type: CONTENT_MEDIA_TYPE.into(),
                operation: "extract".into(),
            },
            insecure: oci.insecure,
            secret_ref: oci.secret_ref.clone().map(|name| LocalRef { name }),
        },
    );
    Object {
        kind: "OCIRepository",
        name,
        body: to_node(&repo),
    }
}

/// The ArtifactGenerators of `delivery.mode: artifact`: one per [`artifact_generator`] group
/// (at most 1,000 tenants, checked with the model), each reading the platform's source as
/// `@repo` and listing one artifact per tenant, named like the tenant's Kustomization, that holds
/// `overlays/tenants/<tenant>/` and `base/tenant/` at the paths the overlay's
/// `../../../base/tenant` expects, so the Kustomization keeps `path: ./overlays/tenants/<tenant>`.
/// The overlay's input-hash comment is copied too (source-watcher copies files as they are), so
/// a kaas.yaml edit that re-renders a tenant moves its artifact revision even when its objects
/// stay the same.
fn artifact_generators(model: &Model, tenants: &[&Tenant]) -> Vec<Object> {
    let p = &model.platform;
    let mut groups: std::collections::BTreeMap<String, Vec<&str>> = std::collections::BTreeMap::new();
    for t in tenants {
        groups
            .entry(artifact_generator(&t.name, p.flux_shards))
            .or_default()
            .push(&t.name);
    }
    groups
        .into_iter()
        .map(|(name, mut tenants)| {
            tenants.sort_unstable();
            let artifacts = tenants
                .into_iter()
                .map(|t| OutputArtifact {
                    name: tenant_kustomization_name(t),
                    origin_revision: format!("@{SOURCE_ALIAS}"),
                    copy: vec![
                        CopyOperation {
                            from: format!("@{SOURCE_ALIAS}/overlays/tenants/{t}"),
                            to: "@artifact/overlays/tenants/".into(),
                        },
                        CopyOperation {
                            from: format!("@{SOURCE_ALIAS}/base/tenant"),
                            to: "@artifact/base/".into(),
                        },
                    ],
                })
                .collect();
            let generator = ArtifactGenerator::new(
                ObjectMeta::new(
                    &name,
                    Some(&p.source_namespace),
                    map! {"app.kubernetes.io/managed-by" => "kaas-gitops"},
                ),
                ArtifactGeneratorSpec {
                    sources: vec![GeneratorSource {
                        alias: SOURCE_ALIAS.into(),
                        kind: p.source_kind.clone(),
                        name: p.source_name.clone(),
                        namespace: p.source_namespace.clone(),
                    }],
                    artifacts,
                },
            );
            Object {
                kind: "ArtifactGenerator",
                name,
                body: to_node(&generator),
            }
        })
        .collect()
}

/// kstatus calls an object without `status.observedGeneration` and without conditions Current
/// (fluxcd/cli-utils `pkg/kstatus/status/generic.go`), so a `ControlPlaneProvider` the operator
/// has not looked at yet would pass the gate before the Kamaji provider's CRDs exist.
/// cluster-api-operator writes a `Ready` condition once the provider's deployment is available:
/// the gate waits for it (kustomize-controller v1.9.4 `spec.healthCheckExprs`).
fn provider_ready() -> Vec<HealthCheckExpr> {
    vec![HealthCheckExpr {
        api_version: "operator.cluster.x-k8s.io/v1alpha2".into(),
        kind: "ControlPlaneProvider".into(),
        current: "has(status.conditions) && status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')"
            .into(),
    }]
}

/// What a Flux Kustomization waits for before it applies, and what it checks after.
struct Gate {
    /// The Kustomization it depends on.
    depends_on: Option<&'static str>,
    health_checks: Option<Vec<HealthCheck>>,
    health_check_exprs: Option<Vec<HealthCheckExpr>>,
}

/// Every file under `flux/`, except the entries of tenants in `skip` (current on disk): one
/// entry point, or with several management clusters one per cluster, each listing the platform
/// layer and that cluster's tenants only (`layout::flux_dir`).
pub fn files(model: &Model, skip: &BTreeSet<String>) -> Tree {
    let mut by_dir: std::collections::BTreeMap<String, Vec<&Tenant>> = std::collections::BTreeMap::new();
    if model.platform.management_clusters.is_empty() {
        by_dir.insert(layout::FLUX_DIR.to_string(), model.tenants.iter().collect());
    } else {
        for mc in &model.platform.management_clusters {
            // Every listed cluster gets its entry point, with no tenant yet too: its Flux can be
            // bootstrapped before the first tenant is placed there.
            by_dir.insert(model.platform.flux_dir(Some(&mc.name)), Vec::new());
        }
        for t in &model.tenants {
            by_dir
                .entry(model.platform.flux_dir(t.management_cluster.as_deref()))
                .or_default()
                .push(t);
        }
    }
    let mut tree = Tree::new();
    for (dir, tenants) in by_dir {
        tree.extend(entry_point(model, &dir, &tenants, skip));
    }
    tree
}

/// One management cluster's entry point in `dir`: the platform's Kustomizations and those of
/// `tenants`, and the `kustomization.yaml` listing them.
fn entry_point(model: &Model, dir: &str, tenants: &[&Tenant], skip: &BTreeSet<String>) -> Tree {
    let p = &model.platform;
    let oci = match &p.delivery {
        Delivery::Oci(o) => Some(o),
        _ => None,
    };
    let artifact = match &p.delivery {
        Delivery::Artifact(a) => Some(a),
        _ => None,
    };
    let kustomization = |name: &str, path: String, tenant: bool, gate: Gate, labels: Node| {
        let (interval, source_ref) = if tenant {
            crate::render::shared::tenant_source(p, name)
        } else {
            (
                p.interval.clone(),
                SourceRef {
                    kind: p.source_kind.clone(),
                    name: p.source_name.clone(),
                    namespace: p.source_namespace.clone(),
                },
            )
        };
        let kustomization = Kustomization::new(
            ObjectMeta::new(name, Some(&p.source_namespace), labels),
            KustomizationSpec {
                interval,
                path,
                prune: true,
                suspend: None,
                health_checks: gate.health_checks,
                health_check_exprs: gate.health_check_exprs,
                timeout: "10m".into(),
                // A failed apply (a provider's CRDs not there yet) is retried soon, not after
                // the whole interval.
                retry_interval: RETRY_INTERVAL.into(),
                depends_on: gate.depends_on.map(|name| vec![Dependency { name: name.into() }]),
                source_ref,
                kube_config: None,
            },
        );
        Object {
            kind: "Kustomization",
            name: name.to_string(),
            body: to_node(&kustomization),
        }
    };
    let platform_labels = || map! {"app.kubernetes.io/managed-by" => "kaas-gitops"};
    // The kamaji release's Namespace, HelmRepositories and HelmRelease were `kaas-platform`'s
    // before `kaas-kamaji` existed. On a cluster that ran that layout, `kaas-kamaji` applies them
    // first, which relabels them `kustomize.toolkit.fluxcd.io/name: kaas-kamaji`, and
    // `kaas-platform`'s garbage collection then leaves them alone: it deletes a stale object only
    // when the object's labels on the cluster name it (fluxcd/kustomize-controller v1.9.4
    // `internal/controller/kustomization_controller.go:1401-1417`, `deleteObjects`:
    // `Inclusions: manager.GetOwnerLabels(obj.Name, obj.Namespace)`; fluxcd/pkg ssa v0.76.1
    // `manager_delete.go:77-85`, `SkippedAction` when they do not match). `dependsOn` orders
    // that only once `kaas-platform` has this spec: the first rollout needs `kaas-platform`
    // suspended until `kaas-kamaji` is Ready (docs/lifecycle.md, "Moving to kaas-kamaji"), and
    // `render` warns when it makes that move (`platform::move_warnings`).
    let mut objects = vec![
        (
            "kaas.yaml".to_string(),
            kustomization(
                layout::kamaji_kustomization_name(),
                format!("./{}", layout::KAMAJI_DIR),
                false,
                Gate {
                    depends_on: None,
                    health_checks: Some(kamaji_gate(model)),
                    health_check_exprs: None,
                },
                platform_labels(),
            ),
        ),
        (
            "kaas.yaml".to_string(),
            kustomization(
                platform_kustomization_name(),
                format!("./{}", layout::PLATFORM_DIR),
                false,
                Gate {
                    depends_on: Some(layout::kamaji_kustomization_name()),
                    health_checks: Some(platform_gate(model)),
                    health_check_exprs: Some(provider_ready()),
                },
                platform_labels(),
            ),
        ),
    ];
    for t in tenants {
        objects.push((
            t.source_path.clone(),
            kustomization(
                &tenant_kustomization_name(&t.name),
                format!("./{}", layout::tenant_dir(&t.name)),
                true,
                Gate {
                    depends_on: Some(platform_kustomization_name()),
                    health_checks: None,
                    health_check_exprs: None,
                },
                map! {
                    "app.kubernetes.io/managed-by" => "kaas-gitops",
                    "kaas-gitops.dev/tenant" => &t.name,
                    "sharding.fluxcd.io/key" => shard(&t.name, p.flux_shards),
                },
            ),
        ));
        if let Some(o) = oci {
            // No shard label: Flux's sharding guide shards source-controller by the same label,
            // and one HEAD per interval needs no shard; the main source-controller takes them.
            let labels = map! {
                "app.kubernetes.io/managed-by" => "kaas-gitops",
                "kaas-gitops.dev/tenant" => &t.name,
            };
            objects.push((t.source_path.clone(), tenant_oci_repository(model, o, &t.name, labels)));
        }
    }
    if artifact.is_some() {
        objects.extend(
            artifact_generators(model, tenants)
                .into_iter()
                .map(|o| ("kaas.yaml".to_string(), o)),
        );
    }
    let mut tree = Tree::new();
    let mut resources = Vec::new();
    for (input, obj) in objects {
        let file = obj.file_name();
        let skipped = obj.name.strip_prefix("kaas-tenant-").is_some_and(|t| skip.contains(t));
        if !skipped {
            tree.insert(format!("{dir}/{file}"), yaml::document(&input, &obj.body));
        }
        resources.push(file);
    }
    resources.sort();
    let list = map! {
        "apiVersion" => "kustomize.config.k8s.io/v1beta1",
        "kind" => "Kustomization",
        "resources" => resources,
    };
    tree.insert(
        format!("{dir}/{}", layout::KUSTOMIZATION),
        yaml::document("kaas.yaml and tenants/", &list),
    );
    tree
}

#[cfg(test)]
mod tests {
    use super::shard;

    #[test]
    fn shards_are_stable_and_spread() {
        assert_eq!(shard("acme", 0), None);
        assert_eq!(shard("acme", 1), None);
        // Pinned values (sha256's first four bytes, big-endian, mod N, plus 1, worked out with
        // Python's hashlib): a new version must not move a tenant to another controller.
        assert_eq!(shard("acme", 4).as_deref(), Some("shard2"));
        assert_eq!(shard("initech", 4).as_deref(), Some("shard3"));
        let used: std::collections::BTreeSet<_> = (0..200).filter_map(|i| shard(&format!("t{i}"), 4)).collect();
        assert_eq!(used.len(), 4, "{used:?}");
        assert!(
            used.iter()
                .all(|s| ["shard1", "shard2", "shard3", "shard4"].contains(&s.as_str()))
        );
    }
}
