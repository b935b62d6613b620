//! `status` and `wait`'s engine: the rendered fleet (what Flux should apply, read from
//! `flux/` and `overlays/`) against the objects the management cluster holds, in the tenant's
//! terms. Pure: the caller reads the files and the cluster.

pub(crate) mod health;
pub(crate) mod reconcile;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

pub use health::{Condition, Replicas, State, Want};

use crate::validate::Manifest;

/// The label rendered objects carry with their tenant's name.
const TENANT_LABEL: &str = "kaas-gitops.dev/tenant";
/// cluster-autoscaler's Cluster API node group bounds (autoscaler
/// `cluster-autoscaler/cloudprovider/clusterapi/clusterapi_utils.go`).
const MIN_SIZE: &str = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size";
const MAX_SIZE: &str = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size";

/// The kinds `status` reports, in the order a row shows them.
pub const KINDS: [&str; 6] = [
    "Kustomization",
    "HelmRelease",
    "Cluster",
    "KamajiControlPlane",
    "MachineDeployment",
    "DataStore",
];

/// An object the repository renders.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ObjectRef {
    /// Its kind.
    pub kind: String,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl ObjectRef {
    /// Its key in [`Live`].
    pub fn key(&self) -> (String, String, String) {
        (self.kind.clone(), self.namespace.clone(), self.name.clone())
    }
}

/// One Flux entry point and what it applies.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The tenant, or `None` for the platform layer.
    pub tenant: Option<String>,
    /// The Flux Kustomization under `flux/`.
    pub kustomization: ObjectRef,
    /// Its source (`spec.sourceRef`), e.g. the GitRepository `flux-system/flux-system`.
    pub source: Option<ObjectRef>,
    /// The objects of the kinds `status` reports that its folder renders.
    pub objects: Vec<ObjectRef>,
    /// Autoscaler bounds of pools, by MachineDeployment name.
    pub bounds: BTreeMap<String, (u64, u64)>,
}

/// The platform layer's row.
pub const PLATFORM: &str = "platform";

impl Entry {
    /// The row's name: the tenant, or `platform`.
    pub fn name(&self) -> &str {
        self.tenant.as_deref().unwrap_or(PLATFORM)
    }
}

/// The folder `path` itself, or a folder below it (`a/b` but not `a/bc`).
fn is_under(folder: &str, path: &str) -> bool {
    folder.starts_with(path) && (folder.len() == path.len() || folder.as_bytes()[path.len()] == b'/')
}

/// The folder a Flux Kustomization applies (`spec.path` without `./` and a trailing `/`).
fn path_of(k: &Manifest) -> &str {
    k.pointer_str("/spec/path")
        .unwrap_or_default()
        .trim_start_matches("./")
        .trim_end_matches('/')
}

/// The entry points of the rendered fleet in the Flux folder `flux_dir` (one management
/// cluster's, `layout::flux_dir`): the platform's (`kaas-kamaji`, then `kaas-platform`, the
/// order Flux applies them), then tenants by name.
pub fn entries(manifests: &[Manifest], flux_dir: &str) -> Vec<Entry> {
    // Rendered manifests by folder, so that each entry point finds the objects under its path
    // with one range lookup instead of a pass over the whole fleet (quadratic at 1,000 tenants).
    let mut by_folder: BTreeMap<&str, Vec<&Manifest>> = BTreeMap::new();
    for m in manifests.iter().filter(|m| m.rendered) {
        by_folder.entry(m.folder.as_str()).or_default().push(m);
    }
    let kustomizations: Vec<&Manifest> = manifests
        .iter()
        .filter(|m| m.rendered && m.kind == "Kustomization" && m.group() == "kustomize.toolkit.fluxcd.io")
        .filter(|m| crate::layout::entry_point_of(&m.file) == Some(flux_dir))
        .collect();
    let paths: BTreeSet<&str> = kustomizations.iter().map(|k| path_of(k)).collect();
    let mut out: Vec<Entry> = kustomizations
        .iter()
        .map(|k| {
            let path = path_of(k);
            // A folder below this one that another entry point applies is that one's
            // (`overlays/platform/kamaji` is `kaas-kamaji`'s, not `kaas-platform`'s).
            let nested: Vec<&str> = paths
                .range(path..)
                .take_while(|p| p.starts_with(path))
                .filter(|p| p.len() > path.len() && is_under(p, path))
                .copied()
                .collect();
            let inside: Vec<&Manifest> = by_folder
                .range(path..)
                .take_while(|(folder, _)| folder.starts_with(path))
                .filter(|(folder, _)| is_under(folder, path) && !nested.iter().any(|n| is_under(folder, n)))
                .flat_map(|(_, ms)| ms.iter().copied())
                .collect();
            let objects = inside
                .iter()
                .filter(|m| KINDS[1..].contains(&m.kind.as_str()))
                .map(|m| object_ref(m))
                .collect();
            let bounds = inside
                .iter()
                .filter(|m| m.kind == "MachineDeployment")
                .filter_map(|m| {
                    let annotation = |k: &str| m.value["metadata"]["annotations"][k].as_str()?.parse::<u64>().ok();
                    Some((m.name.clone(), (annotation(MIN_SIZE)?, annotation(MAX_SIZE)?)))
                })
                .collect();
            let source = k.pointer_str("/spec/sourceRef/kind").map(|kind| ObjectRef {
                kind: kind.to_string(),
                namespace: k
                    .pointer_str("/spec/sourceRef/namespace")
                    .or(k.namespace.as_deref())
                    .unwrap_or("flux-system")
                    .to_string(),
                name: k.pointer_str("/spec/sourceRef/name").unwrap_or_default().to_string(),
            });
            Entry {
                tenant: k.value["metadata"]["labels"][TENANT_LABEL].as_str().map(str::to_string),
                kustomization: object_ref(k),
                source,
                objects,
                bounds,
            }
        })
        .collect();
    let order = |e: &Entry| {
        crate::layout::platform_kustomization_names()
            .iter()
            .position(|n| *n == e.kustomization.name)
    };
    out.sort_by(|a, b| (a.tenant.is_some(), a.name(), order(a)).cmp(&(b.tenant.is_some(), b.name(), order(b))));
    out
}

fn object_ref(m: &Manifest) -> ObjectRef {
    ObjectRef {
        kind: m.kind.clone(),
        namespace: m.namespace.clone().unwrap_or_default(),
        name: m.name.clone(),
    }
}

/// The cluster's objects by (kind, namespace, name).
pub type Live = BTreeMap<(String, String, String), Value>;

/// Indexes listed objects.
pub fn live(objects: impl IntoIterator<Item = Value>) -> Live {
    objects
        .into_iter()
        .filter_map(|o| {
            let text = |p: &str| o.pointer(p).and_then(Value::as_str).map(str::to_string);
            let key = (
                text("/kind")?,
                text("/metadata/namespace").unwrap_or_default(),
                text("/metadata/name")?,
            );
            Some((key, o))
        })
        .collect()
}

/// One object's status.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectStatus {
    /// Which object.
    #[serde(flatten)]
    pub object: ObjectRef,
    /// What its status says.
    pub state: State,
    /// One line: the Ready reason and message, the phase, the version, the replicas.
    pub summary: String,
    /// The revision a Flux Kustomization last applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied_revision: Option<String>,
    /// A pool's replicas.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<Replicas>,
    /// A pool's autoscaler bounds (min, max).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<(u64, u64)>,
    /// Every condition.
    pub conditions: Vec<Condition>,
}

impl ObjectStatus {
    /// Flux reconciles it: `wait` waits for it.
    pub fn is_flux(&self) -> bool {
        matches!(self.object.kind.as_str(), "Kustomization" | "HelmRelease")
    }
}

/// One row: the platform or a tenant.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    /// `platform` or the tenant's name.
    pub name: String,
    /// The worst state of its objects.
    pub state: State,
    /// Its Flux Kustomizations first (the platform's in the order Flux applies them), then the
    /// rest in [`KINDS`] order.
    pub objects: Vec<ObjectStatus>,
}

/// The source Flux reads the repository from.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    /// Which object.
    #[serde(flatten)]
    pub object: ObjectRef,
    /// The revision of its artifact.
    pub revision: Option<String>,
    /// Its state.
    pub state: State,
    /// Its Ready reason and message.
    pub summary: String,
}

/// Everything `status` says.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The revision asked for (HEAD, or `--revision`).
    pub revision: Option<String>,
    /// The sources the Kustomizations read.
    pub sources: Vec<Source>,
    /// Per tenant delivered as an OCI artifact: the revision its OCIRepository has once it holds
    /// what the commit renders (`<tag>@sha256:<manifest digest>`), which its Kustomization must
    /// have applied. A commit that did not change a tenant leaves its revision as it was, so that
    /// tenant is done at once.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub artifacts: BTreeMap<String, String>,
    /// The platform and each tenant.
    pub rows: Vec<Row>,
}

/// The kind of a per-tenant OCI source.
const OCI_REPOSITORY: &str = "OCIRepository";
/// The kind of a per-tenant source cut out by source-watcher (`delivery.mode: artifact`).
const EXTERNAL_ARTIFACT: &str = "ExternalArtifact";
/// The artifact metadata key source-watcher writes the source's revision to, for an artifact with
/// `originRevision` (fluxcd/source-watcher api/v2 v2.2.4 `v1beta1/artifactgenerator_types.go`,
/// `ArtifactOriginRevisionAnnotation`; set by `setArtifactRevisions` in
/// `internal/controller/artifactgenerator_controller.go` @ v2.2.1 to the GitRepository's
/// `<branch>@sha1:<commit>`).
pub const ORIGIN_REVISION: &str = "org.opencontainers.image.revision";

/// What a tenant on an ExternalArtifact must have applied for `want`: its artifact's revision
/// (`latest@sha256:<content>`), once the artifact says it was generated from `want` or a later
/// commit. Its content hash cannot be computed here (it is source-watcher's tarball digest), so
/// until then nothing is accepted: the row stays Stale, naming what it applied.
fn external_artifact_want(source: Option<&Value>, want: Option<&Want>) -> Want {
    const NOT_YET: &str = "(the ExternalArtifact of the revision asked for)";
    let Some(artifact) = source.map(|o| &o["status"]["artifact"]) else {
        return Want::new(NOT_YET);
    };
    let revision = artifact["revision"].as_str();
    let origin = artifact["metadata"][ORIGIN_REVISION].as_str();
    match (revision, want) {
        (Some(r), None) => Want::new(r),
        (Some(r), Some(w)) if origin.is_some_and(|o| w.accepts(o)) => Want::new(r),
        _ => Want::new(NOT_YET),
    }
}

/// What a tenant on a source of its own must have applied for `want`: on an OCIRepository the
/// artifact revision the commit renders (`<tag>@sha256:…`, from `artifacts`), on an
/// ExternalArtifact its revision once generated from `want`. `None` for an entry that reads the
/// repository's source and so applies the commit itself.
fn own_want(e: &Entry, live: &Live, want: Option<&Want>, artifacts: &BTreeMap<String, String>) -> Option<Want> {
    let source = e.source.as_ref()?;
    match (source.kind.as_str(), e.tenant.as_ref()) {
        // An artifact revision is content, not history: exactly that one counts.
        (OCI_REPOSITORY, Some(t)) if want.is_some() => artifacts.get(t).map(|a| Want::new(a.clone())),
        (EXTERNAL_ARTIFACT, _) => Some(external_artifact_want(live.get(&source.key()), want)),
        _ => None,
    }
}

/// `entries` against `live`, with `want` the revision asked for, and `artifacts` the revision
/// each OCI-delivered tenant's source has at that commit (see [`Report::artifacts`]).
pub fn assess(entries: &[Entry], live: &Live, want: Option<&Want>, artifacts: &BTreeMap<String, String>) -> Report {
    let get = |r: &ObjectRef| live.get(&r.key());
    // One row per name: the platform's two entry points share the `platform` row.
    let mut rows: Vec<Row> = Vec::new();
    for e in entries {
        let artifact = own_want(e, live, want, artifacts);
        let want = artifact.as_ref().or(want);
        let status_of = |r: &ObjectRef, bounds| status_of(r, get(r), live, want, bounds);
        let rest = e.objects.iter().map(|r| status_of(r, e.bounds.get(&r.name).copied()));
        let row = match rows.last_mut() {
            Some(row) if row.name == e.name() => row,
            _ => {
                rows.push(Row {
                    name: e.name().to_string(),
                    state: State::Ready,
                    objects: Vec::new(),
                });
                rows.last_mut().expect("a row was just pushed")
            }
        };
        let kustomizations = row
            .objects
            .iter()
            .take_while(|o| o.object.kind == "Kustomization")
            .count();
        row.objects.insert(kustomizations, status_of(&e.kustomization, None));
        row.objects.extend(rest);
    }
    for row in &mut rows {
        let kustomizations = row
            .objects
            .iter()
            .take_while(|o| o.object.kind == "Kustomization")
            .count();
        row.objects[kustomizations..].sort_by_key(|o| {
            let kind = KINDS.iter().position(|k| *k == o.object.kind);
            (kind, o.object.name.clone())
        });
        row.state = row.objects.iter().map(|o| o.state).max().unwrap_or(State::Ready);
    }
    let mut sources: Vec<&ObjectRef> = entries.iter().filter_map(|e| e.source.as_ref()).collect();
    sources.sort();
    sources.dedup();
    let sources = sources
        .into_iter()
        .map(|s| {
            let (state, summary, revision) = match get(s) {
                None => (State::Missing, "not on the cluster".to_string(), None),
                Some(o) => {
                    let (state, summary) = health::flux(o, None);
                    let revision = o["status"]["artifact"]["revision"].as_str().map(str::to_string);
                    (state, summary, revision)
                }
            };
            Source {
                object: s.clone(),
                revision,
                state,
                summary,
            }
        })
        .collect();
    Report {
        revision: want.map(|w| w.revision.clone()),
        sources,
        artifacts: artifacts.clone(),
        rows,
    }
}

fn status_of(
    r: &ObjectRef,
    object: Option<&Value>,
    live: &Live,
    want: Option<&Want>,
    bounds: Option<(u64, u64)>,
) -> ObjectStatus {
    let mut out = ObjectStatus {
        object: r.clone(),
        state: State::Missing,
        summary: "not on the cluster".into(),
        applied_revision: None,
        replicas: None,
        autoscaling: bounds,
        conditions: Vec::new(),
    };
    let Some(o) = object else { return out };
    out.conditions = health::conditions(o);
    (out.state, out.summary) = match r.kind.as_str() {
        "Kustomization" => {
            out.applied_revision = o["status"]["lastAppliedRevision"].as_str().map(str::to_string);
            health::flux(o, want)
        }
        "HelmRelease" => health::flux(o, None),
        "Cluster" => health::cluster(o),
        "KamajiControlPlane" => health::kamaji_control_plane(o),
        "DataStore" => health::datastore(o),
        "MachineDeployment" => {
            let sets = live
                .iter()
                .filter(|((kind, ns, _), _)| kind == "MachineSet" && *ns == r.namespace)
                .map(|(_, s)| s);
            let (state, text, replicas) = health::machine_deployment(o, &health::machine_sets_of(o, sets));
            out.replicas = Some(replicas);
            (state, text)
        }
        _ => (State::NoStatus, String::new()),
    };
    out
}

/// The commits the fleet's Kustomizations last applied or attempted (40 hex digits each), for
/// the shell to ask git which of them descend from the revision asked for.
pub fn applied_commits(live: &Live) -> BTreeSet<String> {
    // An ExternalArtifact's origin revision is the commit it was generated from.
    let origins = live
        .iter()
        .filter(|((kind, _, _), _)| kind == EXTERNAL_ARTIFACT)
        .map(|(_, o)| o["status"]["artifact"]["metadata"][ORIGIN_REVISION].as_str());
    live.iter()
        .filter(|((kind, _, _), _)| kind == "Kustomization")
        .flat_map(|(_, o)| ["lastAppliedRevision", "lastAttemptedRevision"].map(|k| o["status"][k].as_str()))
        .chain(origins)
        .flatten()
        .map(|r| health::commit_of(r).to_string())
        .filter(|c| c.len() == 40 && c.bytes().all(|b| b.is_ascii_hexdigit()))
        .collect()
}

/// What `wait` concludes from one look.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Every object waited for is Ready at the revision.
    Done,
    /// The first object not there yet.
    Waiting(String),
    /// The first object that failed, with its message.
    Failed(String),
}

/// What `wait` waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Flux applied the revision: the Kustomizations and the tenants' HelmReleases are Ready.
    Flux,
    /// That, and each tenant's cluster caught up with it: the Cluster `Available`, the
    /// KamajiControlPlane at its spec's version, every MachineDeployment rolled out. The gate
    /// between the steps of an upgrade.
    Cluster,
}

/// Whether the objects of `rows` that `gate` covers are done: the platform's Kustomization (its
/// health checks are what the platform promises its tenants), each tenant's Kustomization and
/// HelmReleases, and with [`Gate::Cluster`] the tenant's Cluster API objects.
pub fn verdict(report: &Report, gate: Gate) -> Verdict {
    let waited = |r: &Row, o: &ObjectStatus| {
        if r.name == PLATFORM {
            o.object.kind == "Kustomization"
        } else {
            o.is_flux() || gate == Gate::Cluster
        }
    };
    let flux = || {
        report
            .rows
            .iter()
            .flat_map(move |r| r.objects.iter().filter(move |o| waited(r, o)))
    };
    let describe = |o: &ObjectStatus| {
        format!(
            "{} {}/{} is {}: {}",
            o.object.kind,
            o.object.namespace,
            o.object.name,
            o.state.word(),
            o.summary
        )
    };
    if let Some(o) = flux().find(|o| o.state == State::Failed) {
        return Verdict::Failed(describe(o));
    }
    match flux().find(|o| o.state != State::Ready) {
        Some(o) => Verdict::Waiting(describe(o)),
        None => Verdict::Done,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(kind: &str, name: &str, state: State) -> ObjectStatus {
        ObjectStatus {
            object: ObjectRef {
                kind: kind.into(),
                namespace: "ns".into(),
                name: name.into(),
            },
            state,
            summary: "why".into(),
            applied_revision: None,
            replicas: None,
            autoscaling: None,
            conditions: Vec::new(),
        }
    }

    fn report(platform_hr: State, tenant_hr: State, cluster: State) -> Report {
        let row = |name: &str, objects| Row {
            name: name.into(),
            state: State::Ready,
            objects,
        };
        Report {
            revision: None,
            sources: Vec::new(),
            artifacts: BTreeMap::new(),
            rows: vec![
                row(
                    PLATFORM,
                    vec![
                        object("Kustomization", "kaas-platform", State::Ready),
                        object("HelmRelease", "kamaji", platform_hr),
                    ],
                ),
                row(
                    "acme",
                    vec![
                        object("Kustomization", "kaas-tenant-acme", State::Ready),
                        object("HelmRelease", "acme-etcd", tenant_hr),
                        object("Cluster", "acme", cluster),
                    ],
                ),
            ],
        }
    }

    #[test]
    fn each_entry_point_owns_the_objects_under_its_path_and_no_other() {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let fleet = crate::validate::Fleet::load(repo).expect("the example repository reads");
        let all = entries(&fleet.objects, crate::layout::FLUX_DIR);
        let names: Vec<(&str, &str)> = all.iter().map(|e| (e.name(), e.kustomization.name.as_str())).collect();
        assert_eq!(
            names,
            [
                ("platform", "kaas-kamaji"),
                ("platform", "kaas-platform"),
                ("acme", "kaas-tenant-acme"),
                ("globex", "kaas-tenant-globex"),
                ("initech", "kaas-tenant-initech")
            ]
        );
        let of = |e: &Entry| -> Vec<String> { e.objects.iter().map(|o| format!("{}/{}", o.kind, o.name)).collect() };
        let objects = |name: &str| of(all.iter().find(|e| e.name() == name).unwrap());
        // The release is in `overlays/platform/kamaji`, `kaas-kamaji`'s folder below
        // `kaas-platform`'s: only `kaas-kamaji` reports it.
        assert_eq!(of(&all[0]), ["HelmRelease/kamaji"]);
        assert!(of(&all[1]).is_empty(), "{:?}", of(&all[1]));
        let mut acme = objects("acme");
        acme.sort();
        assert_eq!(
            acme,
            [
                "Cluster/acme",
                "HelmRelease/acme-cilium",
                "HelmRelease/acme-etcd",
                "KamajiControlPlane/acme",
                "MachineDeployment/acme-md-0"
            ]
        );
        let globex = all.iter().find(|e| e.name() == "globex").unwrap();
        assert_eq!(globex.bounds.get("globex-batch"), Some(&(0, 5)));
    }

    #[test]
    fn the_platform_row_shows_both_platform_kustomizations_and_wait_waits_for_each() {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let fleet = crate::validate::Fleet::load(repo).expect("the example repository reads");
        let all = entries(&fleet.objects, crate::layout::FLUX_DIR);
        let commit = "0123456789abcdef0123456789abcdef01234567";
        let ks = |name: &str, ready: &str| {
            serde_json::json!({"kind": "Kustomization", "metadata": {"name": name, "namespace": "flux-system", "generation": 1},
                "status": {"observedGeneration": 1, "lastAppliedRevision": format!("main@sha1:{commit}"),
                           "conditions": [{"type": "Ready", "status": ready, "reason": "HealthCheckFailed", "message": "kamaji"}]}})
        };
        let live = live([ks("kaas-kamaji", "False"), ks("kaas-platform", "True")]);
        let report = assess(&all[..2], &live, Some(&Want::new(commit)), &BTreeMap::new());
        assert_eq!(report.rows.len(), 1, "one platform row");
        let row = &report.rows[0];
        let objects: Vec<String> = row
            .objects
            .iter()
            .map(|o| format!("{}/{}", o.object.kind, o.object.name))
            .collect();
        assert_eq!(
            objects,
            [
                "Kustomization/kaas-kamaji",
                "Kustomization/kaas-platform",
                "HelmRelease/kamaji"
            ]
        );
        assert_eq!(row.state, State::Missing, "the release is not on the cluster");
        assert_eq!(
            verdict(&report, Gate::Flux),
            Verdict::Waiting("Kustomization flux-system/kaas-kamaji is Progressing: HealthCheckFailed: kamaji".into())
        );
    }

    #[test]
    fn a_tenant_on_its_own_oci_source_is_judged_by_its_artifact_revision_not_the_commit() {
        let r = |kind: &str, name: &str| ObjectRef {
            kind: kind.into(),
            namespace: "flux-system".into(),
            name: name.into(),
        };
        let entry = |tenant: &str, source: ObjectRef| Entry {
            tenant: Some(tenant.into()),
            kustomization: r("Kustomization", &format!("kaas-tenant-{tenant}")),
            source: Some(source),
            objects: Vec::new(),
            bounds: BTreeMap::new(),
        };
        let entries = [
            entry("acme", r("OCIRepository", "kaas-tenant-acme")),
            entry("globex", r("OCIRepository", "kaas-tenant-globex")),
            entry("initech", r("GitRepository", "flux-system")),
        ];
        let ks = |name: &str, applied: &str| {
            serde_json::json!({"kind": "Kustomization", "metadata": {"name": name, "namespace": "flux-system", "generation": 1},
                "status": {"observedGeneration": 1, "lastAppliedRevision": applied, "lastAttemptedRevision": applied,
                           "conditions": [{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded", "message": ""}]}})
        };
        let commit = "0123456789abcdef0123456789abcdef01234567";
        let live = live([
            ks("kaas-tenant-acme", "latest@sha256:aaa"),
            ks("kaas-tenant-globex", "latest@sha256:old"),
            ks("kaas-tenant-initech", &format!("main@sha1:{commit}")),
        ]);
        let artifacts = BTreeMap::from([
            ("acme".to_string(), "latest@sha256:aaa".to_string()),
            ("globex".to_string(), "latest@sha256:new".to_string()),
        ]);
        let report = assess(&entries, &live, Some(&Want::new(commit)), &artifacts);
        let state = |n: usize| report.rows[n].objects[0].state;
        assert_eq!(state(0), State::Ready, "acme has the artifact its commit renders");
        assert_eq!(state(1), State::Stale, "globex still applies the old artifact");
        assert_eq!(state(2), State::Ready, "a git-delivered tenant is judged by the commit");
        assert_eq!(
            verdict(&report, Gate::Flux),
            Verdict::Waiting(
                "Kustomization flux-system/kaas-tenant-globex is Stale: applied latest@sha256:old; ReconciliationSucceeded: ".into()
            )
        );
    }

    #[test]
    fn a_tenant_on_an_external_artifact_is_done_once_it_applied_the_artifact_generated_from_the_commit() {
        let r = |kind: &str, name: &str| ObjectRef {
            kind: kind.into(),
            namespace: "flux-system".into(),
            name: name.into(),
        };
        let entries: Vec<Entry> = ["acme", "globex", "initech", "umbrella"]
            .into_iter()
            .map(|t| Entry {
                tenant: Some(t.into()),
                kustomization: r("Kustomization", &format!("kaas-tenant-{t}")),
                source: Some(r("ExternalArtifact", &format!("kaas-tenant-{t}"))),
                objects: Vec::new(),
                bounds: BTreeMap::new(),
            })
            .collect();
        let ks = |name: &str, applied: &str| {
            serde_json::json!({"kind": "Kustomization", "metadata": {"name": name, "namespace": "flux-system", "generation": 1},
                "status": {"observedGeneration": 1, "lastAppliedRevision": applied, "lastAttemptedRevision": applied,
                           "conditions": [{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded", "message": ""}]}})
        };
        // As source-watcher writes them: `latest@<digest>`, the source's revision in the metadata.
        let ea = |name: &str, digest: &str, origin: &str| {
            serde_json::json!({"kind": "ExternalArtifact", "metadata": {"name": name, "namespace": "flux-system", "generation": 1},
                "status": {"artifact": {"revision": format!("latest@{digest}"), "digest": digest,
                                        "metadata": {ORIGIN_REVISION: format!("main@sha1:{origin}")}},
                           "conditions": [{"type": "Ready", "status": "True", "reason": "Succeeded", "message": ""}]}})
        };
        let old = "1111111111111111111111111111111111111111";
        let new = "2222222222222222222222222222222222222222";
        let live = live([
            // Generated from the commit; applied.
            ea("kaas-tenant-acme", "sha256:aaa", new),
            ks("kaas-tenant-acme", "latest@sha256:aaa"),
            // The commit changed it; not applied yet.
            ea("kaas-tenant-globex", "sha256:g2", new),
            ks("kaas-tenant-globex", "latest@sha256:g1"),
            // The generator has not seen the commit yet: what was applied may be out of date.
            ea("kaas-tenant-initech", "sha256:iii", old),
            ks("kaas-tenant-initech", "latest@sha256:iii"),
            // No ExternalArtifact at all.
            ks("kaas-tenant-umbrella", "latest@sha256:uuu"),
        ]);
        let report = assess(&entries, &live, Some(&Want::new(new)), &BTreeMap::new());
        let state = |n: usize| report.rows[n].objects[0].state;
        assert_eq!(state(0), State::Ready);
        assert_eq!(state(1), State::Stale);
        assert_eq!(state(2), State::Stale);
        assert_eq!(state(3), State::Stale);
        assert_eq!(
            verdict(&report, Gate::Flux),
            Verdict::Waiting(
                "Kustomization flux-system/kaas-tenant-globex is Stale: applied latest@sha256:g1; ReconciliationSucceeded: ".into()
            )
        );
        // The sources are reported with their revisions.
        let sources: Vec<_> = report
            .sources
            .iter()
            .map(|s| (s.object.name.as_str(), s.revision.as_deref()))
            .collect();
        assert_eq!(sources[0], ("kaas-tenant-acme", Some("latest@sha256:aaa")));
        assert_eq!(sources[3], ("kaas-tenant-umbrella", None));
        // A later commit the generator went on to counts as the one asked for.
        let mut later = Want::new(old);
        later.later = applied_commits(&live);
        assert!(later.later.contains(new), "{:?}", later.later);
        let report = assess(&entries, &live, Some(&later), &BTreeMap::new());
        assert_eq!(report.rows[0].objects[0].state, State::Ready);
        assert_eq!(report.rows[2].objects[0].state, State::Ready);
    }

    #[test]
    fn wait_waits_for_tenant_helm_releases_and_the_platform_kustomization_only() {
        // The platform's own releases are what its Kustomization's health checks decide.
        assert_eq!(
            verdict(&report(State::Failed, State::Ready, State::NoStatus), Gate::Flux),
            Verdict::Done
        );
        assert_eq!(
            verdict(&report(State::Ready, State::Progressing, State::Ready), Gate::Flux),
            Verdict::Waiting("HelmRelease ns/acme-etcd is Progressing: why".into())
        );
        assert_eq!(
            verdict(&report(State::Ready, State::Failed, State::Ready), Gate::Flux),
            Verdict::Failed("HelmRelease ns/acme-etcd is Failed: why".into())
        );
    }

    #[test]
    fn the_cluster_gate_also_waits_for_the_tenants_cluster_api_objects() {
        assert_eq!(
            verdict(&report(State::Failed, State::Ready, State::NoStatus), Gate::Cluster),
            Verdict::Waiting("Cluster ns/acme is NoStatus: why".into())
        );
        assert_eq!(
            verdict(&report(State::Ready, State::Ready, State::Failed), Gate::Cluster),
            Verdict::Failed("Cluster ns/acme is Failed: why".into())
        );
        assert_eq!(
            verdict(&report(State::Failed, State::Ready, State::Ready), Gate::Cluster),
            Verdict::Done
        );
    }
}
