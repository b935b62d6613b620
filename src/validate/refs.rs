//! Rules across the fleet: every reference resolves to an object in it, names that must be
//! unique are (objects, DataStores, VIPs), names and labels fit their limits, and Kubernetes
//! versions stay inside what the platform supports.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::model::upgrade;
use crate::model::{KubeVersion, Platform};
use crate::spec::source::child_path;
use crate::validate::fleet::{is_cluster_scoped, place, pointer_to};
use crate::validate::{Check, Finding, Fleet, Manifest, error, warning};
use crate::validate::{datastores, labels};

/// Helm's limit on release names.
const MAX_RELEASE: usize = 53;

/// Every object by `(group, kind, namespace, name)`; cluster-scoped kinds without namespace.
struct Index<'a>(BTreeMap<(&'a str, &'a str, Option<&'a str>, &'a str), &'a Manifest>);

impl<'a> Index<'a> {
    fn new(fleet: &'a Fleet) -> Index<'a> {
        let mut map = BTreeMap::new();
        for o in &fleet.objects {
            map.entry(key(o)).or_insert(o);
        }
        Index(map)
    }

    fn get(&self, group: &str, kind: &str, namespace: Option<&str>, name: &str) -> Option<&'a Manifest> {
        let namespace = if is_cluster_scoped(kind) { None } else { namespace };
        self.0.get(&(group, kind, namespace, name)).copied()
    }
}

fn key(o: &Manifest) -> (&str, &str, Option<&str>, &str) {
    let ns = if is_cluster_scoped(&o.kind) {
        None
    } else {
        o.namespace.as_deref()
    };
    (o.group(), o.kind.as_str(), ns, o.name.as_str())
}

/// Runs every rule.
pub fn check(fleet: &Fleet, platform: Option<&Platform>) -> Vec<Finding> {
    let index = Index::new(fleet);
    let mut out = duplicates(fleet);
    for o in fleet.rendered() {
        match (o.group(), o.kind.as_str()) {
            ("cluster.x-k8s.io", "Cluster") => {
                for (pointer, field) in [
                    ("/spec/controlPlaneRef", "spec.controlPlaneRef"),
                    ("/spec/infrastructureRef", "spec.infrastructureRef"),
                ] {
                    out.extend(object_ref(&index, o, pointer, field));
                }
                out.extend(class_ref(&index, o));
            }
            ("cluster.x-k8s.io", "ClusterClass") => {
                let mut refs = Vec::new();
                template_refs(&o.value, "", "", &mut refs);
                for (pointer, field) in refs {
                    out.extend(object_ref(&index, o, &pointer, &field));
                }
            }
            ("cluster.x-k8s.io", "MachineDeployment") => {
                out.extend(cluster_name(&index, o));
                for (pointer, field) in [
                    (
                        "/spec/template/spec/bootstrap/configRef",
                        "spec.template.spec.bootstrap.configRef",
                    ),
                    (
                        "/spec/template/spec/infrastructureRef",
                        "spec.template.spec.infrastructureRef",
                    ),
                ] {
                    out.extend(object_ref(&index, o, pointer, field));
                }
                out.extend(selector_matches_template(o));
            }
            ("helm.toolkit.fluxcd.io", "HelmRelease") => {
                out.extend(source_ref(
                    &index,
                    o,
                    "/spec/chart/spec/sourceRef",
                    "spec.chart.spec.sourceRef",
                ));
                out.extend(source_ref(&index, o, "/spec/chartRef", "spec.chartRef"));
                out.extend(release_name(o));
            }
            ("kustomize.toolkit.fluxcd.io", "Kustomization") => out.extend(flux_kustomization(&index, fleet, o)),
            _ => {}
        }
        out.extend(labels::check(o));
    }
    out.extend(datastores::check(fleet, platform));
    out.extend(crate::validate::addons::check(fleet));
    out.extend(vips(fleet));
    out.extend(versions(&index, fleet, platform));
    out
}

/// The same object twice: Flux would apply one over the other. Each management cluster's entry
/// point (`flux/`, `flux/<mc>/`) is applied on its own cluster, so the same Flux Kustomization
/// in two of them is two objects; the overlays are one set.
fn duplicates(fleet: &Fleet) -> Vec<Finding> {
    let mut seen: BTreeMap<_, &Manifest> = BTreeMap::new();
    let mut out = Vec::new();
    for o in fleet.rendered() {
        let at = (crate::layout::entry_point_of(&o.file), key(o));
        if let Some(first) = seen.insert(at, o) {
            seen.insert(at, first);
            out.push(
                error(
                    Check::Fleet,
                    o,
                    "metadata.name",
                    format!("{} is also defined at {}", o.id(), place(first, "metadata.name")),
                )
                .with_hint("every object must exist once in the fleet; remove one of them"),
            );
        }
    }
    out
}

/// A Cluster API reference: `{apiGroup, kind, name}` (v1beta2) or `{apiVersion, kind, name,
/// namespace}` (v1beta1), to an object in the referrer's namespace.
/// `pointer` reads it, `field` is the same place as users see it.
fn object_ref(index: &Index<'_>, o: &Manifest, pointer: &str, field: &str) -> Option<Finding> {
    let r = o.pointer(pointer)?;
    let kind = r["kind"].as_str()?;
    let name = r["name"].as_str()?;
    let group = match (r["apiGroup"].as_str(), r["apiVersion"].as_str()) {
        (Some(g), _) => g,
        (None, Some(v)) => v.rsplit_once('/').map_or("", |(g, _)| g),
        (None, None) => return None,
    };
    let namespace = r["namespace"].as_str().or(o.namespace.as_deref());
    if index.get(group, kind, namespace, name).is_some() {
        return None;
    }
    let target = match namespace {
        Some(ns) => format!("{kind} `{ns}/{name}`"),
        None => format!("{kind} `{name}`"),
    };
    Some(
        error(
            Check::Fleet,
            o,
            &format!("{field}.name"),
            format!("`{field}` names {target} ({group}), which is not in the fleet"),
        )
        .with_hint("add that object or fix the reference; Cluster API waits forever on a missing one"),
    )
}

/// A managed topology's `spec.topology.classRef` names a ClusterClass (v1beta2; v1beta1 names it
/// in `spec.topology.class`, in the Cluster's namespace).
fn class_ref(index: &Index<'_>, o: &Manifest) -> Option<Finding> {
    let (field, name, namespace) = match (
        o.pointer_str("/spec/topology/classRef/name"),
        o.pointer_str("/spec/topology/class"),
    ) {
        (Some(n), _) => (
            "spec.topology.classRef.name",
            n,
            o.pointer_str("/spec/topology/classRef/namespace"),
        ),
        (None, Some(n)) => ("spec.topology.class", n, o.pointer_str("/spec/topology/classNamespace")),
        (None, None) => return None,
    };
    let namespace = namespace.or(o.namespace.as_deref());
    if index.get("cluster.x-k8s.io", "ClusterClass", namespace, name).is_some() {
        return None;
    }
    Some(
        error(
            Check::Fleet,
            o,
            field,
            format!(
                "the topology names ClusterClass `{}/{name}`, which is not in the fleet",
                namespace.unwrap_or("default")
            ),
        )
        .with_hint("the platform layer renders the ClusterClasses kaas.yaml defines; check the class name"),
    )
}

/// Paths of every `templateRef` in a ClusterClass.
fn template_refs(v: &Value, pointer: &str, path: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                // The pointer reaches a key with dots or slashes (a label, an annotation) as is.
                let ptr = format!("{pointer}{}", pointer_to([k.as_str()]));
                let p = child_path(path, k);
                if k == "templateRef" {
                    out.push((ptr, p));
                } else {
                    template_refs(child, &ptr, &p, out);
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                template_refs(item, &format!("{pointer}/{i}"), &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// `spec.clusterName` names a Cluster in the namespace.
fn cluster_name(index: &Index<'_>, o: &Manifest) -> Option<Finding> {
    let name = o.pointer_str("/spec/clusterName")?;
    if index
        .get("cluster.x-k8s.io", "Cluster", o.namespace.as_deref(), name)
        .is_some()
    {
        return None;
    }
    Some(
        error(
            Check::Fleet,
            o,
            "spec.clusterName",
            format!("`spec.clusterName` names Cluster `{name}`, which is not in this namespace"),
        )
        .with_hint("a MachineDeployment belongs to a Cluster of its own namespace"),
    )
}

/// Cluster API refuses a MachineDeployment whose selector does not match its template's labels.
fn selector_matches_template(o: &Manifest) -> Option<Finding> {
    let selector = o.pointer("/spec/selector/matchLabels")?.as_object()?;
    let labels = o.pointer("/spec/template/metadata/labels").and_then(Value::as_object);
    let missing: Vec<String> = selector
        .iter()
        .filter(|(k, v)| labels.and_then(|l| l.get(*k)) != Some(*v))
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    (!missing.is_empty()).then(|| {
        error(
            Check::Fleet,
            o,
            "spec.selector.matchLabels",
            format!(
                "the selector matches no machine of the template: its labels lack {}",
                missing.join(", ")
            ),
        )
        .with_hint("`spec.template.metadata.labels` must carry every label of `spec.selector.matchLabels`")
    })
}

/// A Flux source reference (`{kind, name, namespace}`, namespace defaulting to the referrer's).
/// `pointer` reads it, `field` is the same place as users see it.
fn source_ref(index: &Index<'_>, o: &Manifest, pointer: &str, field: &str) -> Option<Finding> {
    let r = o.pointer(pointer)?;
    let kind = r["kind"].as_str()?;
    let name = r["name"].as_str()?;
    let namespace = r["namespace"].as_str().or(o.namespace.as_deref());
    if index.get("source.toolkit.fluxcd.io", kind, namespace, name).is_some() {
        return None;
    }
    Some(
        error(
            Check::Fleet,
            o,
            &format!("{field}.name"),
            format!(
                "`{field}` names {kind} `{}/{name}`, which is not in the fleet",
                namespace.unwrap_or("default")
            ),
        )
        .with_hint("Flux cannot fetch the chart; check the name and namespace (the platform layer renders one HelmRepository per chart repository)"),
    )
}

/// The Helm release name Flux uses: `spec.releaseName`, else `[targetNamespace-]name`.
pub fn release_name(o: &Manifest) -> Option<Finding> {
    if o.pointer_str("/spec/releaseName").is_some() {
        // The CRD's maxLength already reports an explicit name that is too long.
        return None;
    }
    let name = datastores::helm_release_name(o);
    (name.len() > MAX_RELEASE).then(|| {
        warning(
            Check::Fleet,
            o,
            "metadata.name",
            format!("the Helm release name `{name}` is {} characters long; Helm allows {MAX_RELEASE}", name.len()),
        )
        .with_hint("Flux shortens it with a hash suffix, which renames every resource of the chart; set a short `spec.releaseName`")
    })
}

/// A Flux Kustomization's `path` is a folder with a kustomization and its `dependsOn` exist.
fn flux_kustomization(index: &Index<'_>, fleet: &Fleet, o: &Manifest) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(path) = o.pointer_str("/spec/path") {
        let rel = path.trim_start_matches("./").trim_end_matches('/');
        let managed = ["overlays/", "flux/", "base/"].iter().any(|p| rel.starts_with(p)) || rel == "flux";
        if managed && fleet.folders.binary_search_by(|f| f.path.as_str().cmp(rel)).is_err() {
            out.push(
                error(
                    Check::Fleet,
                    o,
                    "spec.path",
                    format!("`spec.path` is `{path}`, which has no kustomization.yaml"),
                )
                .with_hint("run `kaas-gitops render`; Flux fails a Kustomization whose path does not build"),
            );
        }
    }
    for (i, dep) in o
        .pointer("/spec/dependsOn")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let Some(name) = dep["name"].as_str() else { continue };
        let ns = dep["namespace"].as_str().or(o.namespace.as_deref());
        if index
            .get("kustomize.toolkit.fluxcd.io", "Kustomization", ns, name)
            .is_none()
        {
            out.push(
                error(
                    Check::Fleet,
                    o,
                    &format!("spec.dependsOn[{i}].name"),
                    format!("`dependsOn` names Kustomization `{name}`, which is not in the fleet"),
                )
                .with_hint("Flux never applies a Kustomization that waits on a missing one"),
            );
        }
    }
    out
}

/// Two control planes on one address: the second never becomes reachable.
fn vips(fleet: &Fleet) -> Vec<Finding> {
    let mut seen: BTreeMap<&str, (&Manifest, &str)> = BTreeMap::new();
    let mut out = Vec::new();
    for o in fleet.rendered() {
        let (pointer, field) = match (o.group(), o.kind.as_str()) {
            ("controlplane.cluster.x-k8s.io", "KamajiControlPlane") => {
                ("/spec/network/serviceAddress", "spec.network.serviceAddress")
            }
            ("kamaji.clastix.io", "TenantControlPlane") => {
                ("/spec/networkProfile/address", "spec.networkProfile.address")
            }
            _ => continue,
        };
        let Some(vip) = o.pointer_str(pointer).filter(|v| !v.is_empty()) else {
            continue;
        };
        if let Some((first, first_field)) = seen.get(vip) {
            out.push(
                error(
                    Check::Fleet,
                    o,
                    field,
                    format!(
                        "the VIP {vip} is also the address of {} at {}",
                        first.id(),
                        place(first, first_field)
                    ),
                )
                .with_hint("every tenant control plane needs its own address"),
            );
        } else {
            seen.insert(vip, (o, field));
        }
    }
    out
}

/// Control plane and worker versions inside the platform's range; workers not newer than, and
/// at most three minors older than, their control plane (errors: Kubernetes does not support
/// either skew).
fn versions(index: &Index<'_>, fleet: &Fleet, platform: Option<&Platform>) -> Vec<Finding> {
    let mut out = Vec::new();
    for o in fleet.rendered() {
        let (pointer, field) = match (o.group(), o.kind.as_str()) {
            ("controlplane.cluster.x-k8s.io", "KamajiControlPlane") => ("/spec/version", "spec.version"),
            ("cluster.x-k8s.io", "MachineDeployment") => ("/spec/template/spec/version", "spec.template.spec.version"),
            ("cluster.x-k8s.io", "Cluster") => ("/spec/topology/version", "spec.topology.version"),
            _ => continue,
        };
        let Some(text) = o.pointer_str(pointer) else { continue };
        let Some(v) = KubeVersion::parse(text) else {
            out.push(
                error(Check::Fleet, o, field, format!("`{text}` is no Kubernetes version"))
                    .with_hint("write `vMAJOR.MINOR.PATCH`, e.g. `v1.33.4`"),
            );
            continue;
        };
        if let Some(p) = platform
            && (v < p.min_kubernetes || v > p.max_kubernetes)
        {
            out.push(
                error(
                    Check::Fleet,
                    o,
                    field,
                    format!(
                        "Kubernetes {v} is outside the platform's supported range {} to {}",
                        p.min_kubernetes, p.max_kubernetes
                    ),
                )
                .with_hint(
                    "change the tenant's `spec.kubernetes.version`, or `spec.kamaji.supportedKubernetes` in kaas.yaml",
                ),
            );
        }
        // The kubelet skew rule (model::upgrade, from the Kubernetes version skew policy): a
        // pool newer than its control plane, or more than three minors older, is unsupported.
        if o.kind == "MachineDeployment"
            && let Some(cp) = control_plane_version(index, o)
            && let Some(why) = upgrade::pool_skew(cp, v)
        {
            let next = if v > cp {
                "upgrade the control plane first (the kubelet must never be newer than the API server)"
            } else {
                "upgrade the workers with the control plane: a kubelet may be at most three minors older than the API server"
            };
            out.push(error(Check::Fleet, o, field, format!("workers: {why}")).with_hint(next));
        }
    }
    out
}

fn control_plane_version(index: &Index<'_>, md: &Manifest) -> Option<KubeVersion> {
    let cluster = index.get(
        "cluster.x-k8s.io",
        "Cluster",
        md.namespace.as_deref(),
        md.pointer_str("/spec/clusterName")?,
    )?;
    let r = cluster.pointer("/spec/controlPlaneRef")?;
    let cp = index.get(
        "controlplane.cluster.x-k8s.io",
        r["kind"].as_str()?,
        cluster.namespace.as_deref(),
        r["name"].as_str()?,
    )?;
    KubeVersion::parse(cp.pointer_str("/spec/version")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `templateRef` under a key holding dots, a slash and a tilde (as labels and annotations
    /// do) is found and its pointer reads it back: keys are escaped, never split.
    #[test]
    fn template_refs_reach_keys_with_dots_and_slashes() {
        let class = serde_json::json!({"spec": {
            "example.com/a~b": {"templateRef": {"kind": "K", "name": "odd"}},
            "workers": [{"templateRef": {"kind": "K", "name": "plain"}}],
        }});
        let mut refs = Vec::new();
        template_refs(&class, "", "", &mut refs);
        let mut read: Vec<(&str, &str)> = refs
            .iter()
            .map(|(pointer, field)| {
                let r = class
                    .pointer(pointer)
                    .unwrap_or_else(|| panic!("{pointer} reads nothing"));
                (r["name"].as_str().unwrap(), field.as_str())
            })
            .collect();
        read.sort();
        assert_eq!(
            read,
            [
                ("odd", "spec.example.com/a~b.templateRef"),
                ("plain", "spec.workers[0].templateRef")
            ]
        );
    }
}
