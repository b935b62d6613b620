//! What one live object's status says, kind by kind, read the way its controller writes it.
//! An object without a status is "no status yet", never healthy.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::Value;

/// One object's state, worst last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum State {
    /// Ready (and, for a Kustomization, at the revision asked for).
    Ready,
    /// Its controller has not written a status yet.
    NoStatus,
    /// Being reconciled, or waiting for something else.
    Progressing,
    /// A Kustomization that is Ready at another revision than the one asked for.
    Stale,
    /// On the cluster in the repository, not on the cluster.
    Missing,
    /// Its controller gave up on it, or it failed at the revision asked for.
    Failed,
}

impl State {
    /// The word a table shows.
    pub fn word(self) -> &'static str {
        match self {
            State::Ready => "Ready",
            State::NoStatus => "NoStatus",
            State::Progressing => "Progressing",
            State::Stale => "Stale",
            State::Missing => "Missing",
            State::Failed => "Failed",
        }
    }
}

/// A status condition, as the API server holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Condition {
    /// `type`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// `reason`.
    pub reason: String,
    /// `message`.
    pub message: String,
    /// `observedGeneration`: the generation of the spec this condition speaks of, where the
    /// controller stamps one (not shown: the JSON output keeps the four fields above).
    #[serde(skip)]
    pub observed_generation: Option<i64>,
}

/// The conditions of `object`.
pub fn conditions(object: &Value) -> Vec<Condition> {
    let text = |c: &Value, k: &str| c[k].as_str().unwrap_or_default().to_string();
    object["status"]["conditions"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| Condition {
                    kind: text(c, "type"),
                    status: text(c, "status"),
                    reason: text(c, "reason"),
                    message: text(c, "message"),
                    observed_generation: c["observedGeneration"].as_i64(),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn condition<'a>(conditions: &'a [Condition], kind: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.kind == kind)
}

/// Whether the controller has seen the current spec (`status.observedGeneration`).
fn observed(object: &Value) -> bool {
    match (
        object["metadata"]["generation"].as_i64(),
        object["status"]["observedGeneration"].as_i64(),
    ) {
        (Some(g), Some(o)) => o >= g,
        _ => true,
    }
}

/// A Flux object (Kustomization, HelmRelease, GitRepository): its `Ready` condition, `Stalled`
/// when the controller gave up, `Reconciling` while it works (fluxcd/pkg `runtime/conditions`,
/// the kstatus conventions Flux's controllers follow). `applied` is the revision it last
/// applied; `attempted` the one it last tried; with `want`, a Kustomization that applied
/// another revision is stale, and one that failed at `want` has failed.
pub fn flux(object: &Value, want: Option<&Want>) -> (State, String) {
    let cs = conditions(object);
    let Some(ready) = condition(&cs, "Ready") else {
        return (State::NoStatus, "no Ready condition yet".into());
    };
    let message = format!("{}: {}", ready.reason, ready.message);
    let attempted = object["status"]["lastAttemptedRevision"].as_str();
    let applied = object["status"]["lastAppliedRevision"].as_str();
    let at_want = |r: Option<&str>| match (want, r) {
        (Some(w), Some(r)) => w.accepts(r),
        (Some(_), None) => false,
        (None, _) => true,
    };
    let stalled = condition(&cs, "Stalled").is_some_and(|c| c.status == "True");
    // A failed attempt leaves `Reconciling=True` with the reason `ProgressingWithRetry` while the
    // controller retries, and both controllers retry such failures for ever: helm-controller
    // v1.6.3 under the `RetryOnFailure` strategy the rendered releases use
    // (`internal/reconcile/atomic_release.go`, `ErrRetryAfterInterval`), kustomize-controller
    // v1.9.4 after any failed apply (`internal/controller/kustomization_controller.go`,
    // `finalizeStatus`). kstatus reads `Reconciling=True` as InProgress and only `Stalled=True`
    // as Failed (fluxcd/cli-utils `pkg/kstatus/status/generic.go`), and so does this: a
    // release or an apply that is being retried is on its way, not failed. The one exception is
    // a Kustomization that failed at the revision asked for in a way the same revision can never
    // fix (its build, or an apply the API server refused as invalid): retrying cannot heal it.
    let state = match ready.status.as_str() {
        "True" if !observed(object) => State::Progressing,
        "True" if is_kustomization(object) && !at_want(applied) => State::Stale,
        "True" => State::Ready,
        _ if stalled => State::Failed,
        "False" if ready.reason == "DependencyNotReady" => State::Progressing,
        "False"
            if is_kustomization(object)
                && want.is_some()
                && at_want(attempted)
                && permanent(&ready.reason, &ready.message) =>
        {
            State::Failed
        }
        _ => State::Progressing,
    };
    let message = match (state, applied) {
        (State::Stale, Some(a)) => format!("applied {a}; {message}"),
        _ => message,
    };
    (state, message)
}

fn is_kustomization(object: &Value) -> bool {
    object["kind"] == "Kustomization"
}

/// Whether a Kustomization's failure at one revision stays a failure however often
/// kustomize-controller retries it: its kustomize build failed (`BuildFailed`), or the API
/// server refused an object as invalid or an admission webhook denied it (the dry-run of the
/// apply, `Invalid` in kustomize-controller v1.9.4's message). Everything else it reports
/// ("no matches for kind" while a provider installs its CRDs, a webhook not yet serving, a
/// health check still waiting) heals on a later attempt at the same revision.
fn permanent(reason: &str, message: &str) -> bool {
    // The apply's dry-run reports the API server's reason in parentheses (fluxcd/pkg `ssa`);
    // a field of the wrong type fails before that, building the typed patch.
    const REFUSED: [&str; 6] = [
        "(Invalid)",
        "(BadRequest)",
        " is invalid",
        "denied the request",
        "field is immutable",
        "failed to create typed patch object",
    ];
    reason == "BuildFailed" || REFUSED.iter().any(|r| message.contains(r))
}

/// The revision `status` and `wait` compare with, and the later commits known to descend from
/// it. kustomize-controller reports only the newest revision it applied
/// (`status.lastAppliedRevision`, fluxcd/kustomize-controller v1.9.4), so after two merges in
/// quick succession the first one is applied once the second is: a descendant counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Want {
    /// A full or abbreviated commit, or a whole Flux revision (`main@sha1:<hex>`).
    pub revision: String,
    /// Commits (40 hex digits) that descend from it.
    pub later: BTreeSet<String>,
}

impl Want {
    /// Exactly `revision`.
    pub fn new(revision: impl Into<String>) -> Self {
        Want {
            revision: revision.into(),
            later: BTreeSet::new(),
        }
    }

    /// Whether Flux's `revision` is the one asked for or descends from it.
    pub fn accepts(&self, revision: &str) -> bool {
        revision_matches(revision, &self.revision) || self.later.contains(commit_of(revision))
    }
}

/// The commit of a Flux revision: `main@sha1:<hex>` or a bare `<hex>` gives `<hex>`.
pub fn commit_of(revision: &str) -> &str {
    revision.rsplit_once(':').map_or(revision, |(_, s)| s)
}

/// Whether Flux's revision (`main@sha1:<hex>`, or a bare `<hex>`) is `want` (a full or
/// abbreviated commit, or a whole Flux revision).
pub fn revision_matches(revision: &str, want: &str) -> bool {
    if want.contains('@') || want.contains(':') {
        return revision == want;
    }
    want.len() >= 7 && commit_of(revision).starts_with(want)
}

/// A Cluster API Cluster (v1beta2): `status.phase` and the `Available` condition
/// (cluster-api v1.14.0 `api/core/v1beta2/cluster_types.go`).
pub fn cluster(object: &Value) -> (State, String) {
    let phase = object["status"]["phase"].as_str().unwrap_or_default();
    let cs = conditions(object);
    if phase.is_empty() && cs.is_empty() {
        return (State::NoStatus, "no status yet".into());
    }
    let available = condition(&cs, "Available");
    let state = match (phase, available.map(|c| c.status.as_str())) {
        ("Failed", _) => State::Failed,
        (_, Some("True")) => State::Ready,
        ("Provisioned", None) => State::Ready,
        _ => State::Progressing,
    };
    let why = available
        .filter(|c| c.status != "True")
        .map(|c| format!(": {}", if c.message.is_empty() { &c.reason } else { &c.message }))
        .unwrap_or_default();
    (
        state,
        format!("{}{why}", if phase.is_empty() { "no phase" } else { phase }),
    )
}

/// A KamajiControlPlane (v1alpha2), as a gate for the next step of an upgrade: Ready only when
/// the provider reports the control plane at the version its spec asks for, with none of its
/// conditions false. `status.ready` alone is not that: cluster-api-control-plane-provider-kamaji
/// v0.20.0 (`controllers/kamajicontrolplane_controller.go`) sets it true while the
/// TenantControlPlane is `Ready` *or* `Upgrading`, copies `status.version` from the
/// TenantControlPlane (which Kamaji moves only once the new API servers are ready,
/// `internal/resources/k8s_deployment_resource.go`), and when Kamaji's webhook refuses an update
/// it returns early with `TenantControlPlaneCreated=False` and leaves `ready` as it was.
pub fn kamaji_control_plane(object: &Value) -> (State, String) {
    let status = &object["status"];
    if status.is_null() || status.as_object().is_some_and(|s| s.is_empty()) {
        return (State::NoStatus, "no status yet".into());
    }
    let version = status["version"].as_str().unwrap_or("no version");
    let initialized = if status["initialization"]["controlPlaneInitialized"] == true {
        "initialized"
    } else {
        "not initialized"
    };
    let summary = format!("{version}, {initialized}");
    let cs = conditions(object);
    // `Paused` is true while the Cluster is paused: not a failure of the control plane.
    if let Some(c) = cs.iter().find(|c| c.status == "False" && c.kind != "Paused") {
        let why = if c.message.is_empty() { &c.reason } else { &c.message };
        // A refusal by Kamaji's admission webhook (a version step it does not allow) is the
        // provider's answer for this spec on every retry; anything else may heal. The status has
        // no `observedGeneration` of its own: the provider stamps one on each condition instead
        // (v0.20.0 `controllers/conditions.go`, `TrackConditionType`), so a refusal counts only
        // when it was written for the spec's current generation, not a stale one of the last.
        let for_this_spec = match (c.observed_generation, object["metadata"]["generation"].as_i64()) {
            (Some(seen), Some(generation)) => seen == generation,
            _ => observed(object),
        };
        // One refusal is no answer to the spec but a wait: Kamaji refuses a TenantControlPlane
        // whose DataStore does not exist yet (`internal/webhook/handlers/tcp_datastore.go`), and
        // a dedicated etcd's DataStore comes with the tenant's own etcd chart, installed beside
        // the control plane; the provider retries until it is there.
        let waits_for_datastore = c.message.contains("DataStore does not exist");
        let state = if for_this_spec && c.message.contains("denied the request") && !waits_for_datastore {
            State::Failed
        } else {
            State::Progressing
        };
        return (state, format!("{summary}; {}: {why}", c.kind));
    }
    let wanted = object["spec"]["version"].as_str();
    let at_version = match wanted {
        Some(w) => same_version(w, version),
        None => true,
    };
    let state = if status["ready"] == true && at_version && observed(object) {
        State::Ready
    } else {
        State::Progressing
    };
    let summary = match wanted {
        Some(w) if !at_version => format!("{summary}; upgrading to {w}"),
        _ => summary,
    };
    (state, summary)
}

/// `v1.33.4` and `1.33.4` are the same version.
fn same_version(a: &str, b: &str) -> bool {
    a.trim_start_matches('v') == b.trim_start_matches('v')
}

/// A Kamaji DataStore. `ready` is its `kamaji.clastix.io/DataStoreValidation` condition: Kamaji
/// 26.8.2-edge (`controllers/datastore_controller.go`) reads the Secrets it names and sets the
/// condition false, with the reason, when one is missing or wrong; it lists the control planes
/// on it in `usedBy`.
pub fn datastore(object: &Value) -> (State, String) {
    let status = &object["status"];
    if status.is_null() || status.as_object().is_some_and(|s| s.is_empty()) {
        return (State::NoStatus, String::new());
    }
    let used = status["usedBy"].as_array().map_or(0, Vec::len);
    if status["ready"].as_bool() == Some(true) {
        return (State::Ready, format!("used by {used} control plane(s)"));
    }
    match conditions(object)
        .into_iter()
        .find(|c| c.kind == "kamaji.clastix.io/DataStoreValidation" && c.status == "False")
    {
        Some(c) => (State::Failed, format!("{}: {}", c.reason, c.message)),
        None => (State::Progressing, "not validated yet".into()),
    }
}

/// A MachineDeployment (v1beta2), as a gate for the next step of an upgrade: Ready when Cluster
/// API has seen its spec (`status.observedGeneration`) and rolled it out: every replica it
/// wants is up to date and available and no old Machine is left (cluster-api v1.14.0
/// `api/core/v1beta2/machinedeployment_types.go`: `upToDateReplicas`, the Machines whose
/// `UpToDate` condition is true). The desired count is `spec.replicas`, or, for an autoscaled
/// pool without it, `status.replicas`.
///
/// `sets` are the MachineSets Cluster API made for it ([`machine_sets_of`]). Its replica counts
/// alone do not show the first moments of a rollout: cluster-api v1.14.0
/// (`core/reconcilers/machinedeployment/machinedeployment_controller.go`) records
/// `observedGeneration` once the reconcile that created the new MachineSet succeeded and
/// moves the Deployment's revision annotation to that set's, but `upToDateReplicas` sums the
/// sets' own counts (`machinedeployment_status.go` `setReplicas`), which still call the old
/// Machines up to date until the MachineSet controller looked at them again. So a Machine in a
/// set of an older revision is an old Machine left, whatever the counts say.
pub fn machine_deployment(object: &Value, sets: &[&Value]) -> (State, String, Replicas) {
    let status = &object["status"];
    let n = |v: &Value| v.as_u64();
    let replicas = Replicas {
        desired: n(&object["spec"]["replicas"]).or_else(|| n(&status["replicas"])),
        ready: n(&status["readyReplicas"]),
        available: n(&status["availableReplicas"]),
        up_to_date: n(&status["upToDateReplicas"]),
    };
    if status.is_null() {
        return (State::NoStatus, "no status yet".into(), replicas);
    }
    let current = n(&status["replicas"]).unwrap_or(0);
    let old = old_machines(object, sets);
    let rolled_out = |d: u64| {
        replicas.up_to_date.unwrap_or(0) == d
            && replicas.available.or(replicas.ready).unwrap_or(0) >= d
            && current <= d
            && old == 0
    };
    let state = match replicas.desired {
        Some(d) if observed(object) && rolled_out(d) => State::Ready,
        _ => State::Progressing,
    };
    let mut text = format!(
        "{}/{} ready",
        replicas.ready.unwrap_or(0),
        replicas.desired.map_or("?".into(), |d| d.to_string())
    );
    if let (Some(d), State::Progressing) = (replicas.desired, state)
        && (replicas.up_to_date.unwrap_or(0) < d || current > d)
    {
        text.push_str(&format!(", {}/{d} up to date", replicas.up_to_date.unwrap_or(0)));
    }
    if state == State::Progressing && old > 0 {
        text.push_str(&format!(", {old} old Machine(s) left"));
    }
    (state, text, replicas)
}

/// The label Cluster API puts on each MachineSet of a MachineDeployment (cluster-api v1.14.0
/// `api/core/v1beta2/common_types.go` `MachineDeploymentNameLabel`).
pub const DEPLOYMENT_NAME_LABEL: &str = "cluster.x-k8s.io/deployment-name";
/// The rollout revision of a MachineDeployment and of each of its MachineSets (ditto,
/// `RevisionAnnotation`).
const REVISION: &str = "machinedeployment.clusters.x-k8s.io/revision";

/// The MachineSets among `objects` that belong to the MachineDeployment `md`.
pub fn machine_sets_of<'a>(md: &Value, objects: impl IntoIterator<Item = &'a Value>) -> Vec<&'a Value> {
    let meta = &md["metadata"];
    objects
        .into_iter()
        .filter(|s| {
            s["metadata"]["namespace"] == meta["namespace"]
                && s["metadata"]["labels"][DEPLOYMENT_NAME_LABEL] == meta["name"]
        })
        .collect()
}

/// Machines still in MachineSets of an older revision than the MachineDeployment's.
fn old_machines(md: &Value, sets: &[&Value]) -> u64 {
    let Some(revision) = md["metadata"]["annotations"][REVISION].as_str() else {
        return 0;
    };
    sets.iter()
        .filter(|s| s["metadata"]["annotations"][REVISION].as_str() != Some(revision))
        .map(|s| {
            s["status"]["replicas"]
                .as_u64()
                .unwrap_or(0)
                .max(s["spec"]["replicas"].as_u64().unwrap_or(0))
        })
        .sum()
}

/// A pool's replicas.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Replicas {
    /// Wanted.
    pub desired: Option<u64>,
    /// Ready.
    pub ready: Option<u64>,
    /// Available.
    pub available: Option<u64>,
    /// At the MachineDeployment's current spec (`status.upToDateReplicas`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub up_to_date: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ks(ready: &str, reason: &str, applied: &str, attempted: &str) -> Value {
        json!({"kind": "Kustomization", "metadata": {"generation": 1}, "status": {
            "observedGeneration": 1, "lastAppliedRevision": applied, "lastAttemptedRevision": attempted,
            "conditions": [{"type": "Ready", "status": ready, "reason": reason, "message": "m"}]}})
    }

    fn with_condition(mut o: Value, kind: &str, status: &str, reason: &str) -> Value {
        o["status"]["conditions"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": kind, "status": status, "reason": reason, "message": "m"}));
        o
    }

    #[test]
    fn a_kustomization_is_ready_only_at_the_revision_asked_for() {
        let want = Want::new("abcdef1");
        let state = |o: &Value| flux(o, Some(&want)).0;
        let at = "main@sha1:abcdef123";
        let old = "main@sha1:0000000";
        assert_eq!(state(&ks("True", "ReconciliationSucceeded", at, at)), State::Ready);
        assert_eq!(state(&ks("True", "ReconciliationSucceeded", old, old)), State::Stale);
        // Its build failed at the revision asked for: no retry of that revision can fix it.
        assert_eq!(state(&ks("False", "BuildFailed", old, at)), State::Failed);
        // It failed on an older one: still on its way.
        assert_eq!(state(&ks("False", "BuildFailed", old, old)), State::Progressing);
        assert_eq!(state(&ks("False", "DependencyNotReady", "", at)), State::Progressing);
        assert_eq!(flux(&json!({"kind": "Kustomization"}), Some(&want)).0, State::NoStatus);
    }

    #[test]
    fn a_failure_flux_retries_is_progressing_and_only_stalled_or_refused_is_failed() {
        let want = Want::new("abcdef1");
        let state = |o: &Value| flux(o, Some(&want)).0;
        let at = "main@sha1:abcdef123";
        let old = "main@sha1:0000000";
        // kustomize-controller after a failed apply it will retry ("no matches for kind" while a
        // provider installs its CRDs): Reconciling=True/ProgressingWithRetry, kstatus InProgress.
        let retrying = with_condition(
            ks("False", "ReconciliationFailed", old, at),
            "Reconciling",
            "True",
            "ProgressingWithRetry",
        );
        assert_eq!(state(&retrying), State::Progressing);
        // The API server refused an object of that revision as invalid: final.
        let mut invalid = retrying.clone();
        invalid["status"]["conditions"][0]["message"] =
            json!("MachineDeployment/u/u-md-0 dry-run failed (Invalid): spec.replicas: Invalid value");
        assert_eq!(state(&invalid), State::Failed);
        // helm-controller under RetryOnFailure: Ready=False and retrying for ever: progressing.
        let release = |conditions: Value| json!({"kind": "HelmRelease", "status": {"conditions": conditions}});
        let failed_install = json!([
            {"type": "Ready", "status": "False", "reason": "InstallFailed", "message": "timed out"},
            {"type": "Reconciling", "status": "True", "reason": "ProgressingWithRetry", "message": "m"}]);
        assert_eq!(flux(&release(failed_install), None).0, State::Progressing);
        // Stalled (RetriesExceeded): helm-controller gave up.
        let stalled = json!([
            {"type": "Ready", "status": "False", "reason": "InstallFailed", "message": "timed out"},
            {"type": "Stalled", "status": "True", "reason": "RetriesExceeded", "message": "m"}]);
        assert_eq!(flux(&release(stalled), None).0, State::Failed);
    }

    #[test]
    fn a_later_commit_counts_as_the_one_asked_for() {
        let mut want = Want::new("abcdef1");
        let later = "main@sha1:1234567890123456789012345678901234567890";
        let o = ks("True", "ReconciliationSucceeded", later, later);
        assert_eq!(flux(&o, Some(&want)).0, State::Stale);
        want.later.insert(commit_of(later).to_string());
        assert_eq!(flux(&o, Some(&want)).0, State::Ready);
    }

    #[test]
    fn a_control_plane_is_ready_only_at_its_spec_version_with_no_condition_false() {
        let kcp = |spec: &str, status: Value| json!({"metadata": {"generation": 2}, "spec": {"version": spec}, "status": status});
        let ready = json!({"ready": true, "version": "v1.33.4", "observedGeneration": 2,
            "initialization": {"controlPlaneInitialized": true},
            "conditions": [{"type": "TenantControlPlaneCreated", "status": "True", "reason": "Succeeded", "message": ""}]});
        assert_eq!(
            kamaji_control_plane(&kcp("v1.33.4", ready.clone())),
            (State::Ready, "v1.33.4, initialized".to_string())
        );
        // The spec moved on; the provider keeps `ready: true` while Kamaji upgrades.
        let (state, text) = kamaji_control_plane(&kcp("v1.34.2", ready.clone()));
        assert_eq!(state, State::Progressing);
        assert!(text.contains("upgrading to v1.34.2"), "{text}");
        // Kamaji's webhook refused the step: the provider's condition says so, `ready` stays true.
        let mut refused = ready.clone();
        refused["conditions"][0] = json!({"type": "TenantControlPlaneCreated", "status": "False", "reason": "Pending",
            "message": "admission webhook \"tcp.kamaji.clastix.io\" denied the request: unable to upgrade"});
        let (state, text) = kamaji_control_plane(&kcp("v1.35.0", refused.clone()));
        assert_eq!(state, State::Failed);
        assert!(text.contains("denied the request"), "{text}");
        // As the provider writes it, with the generation it refused stamped on the condition:
        // a refusal of this spec fails; one left from the spec before (generation 1, the spec
        // is at 2 now and the provider has not answered it yet) is on its way.
        refused["conditions"][0]["observedGeneration"] = json!(2);
        assert_eq!(kamaji_control_plane(&kcp("v1.35.0", refused.clone())).0, State::Failed);
        refused["conditions"][0]["observedGeneration"] = json!(1);
        let (state, text) = kamaji_control_plane(&kcp("v1.34.2", refused.clone()));
        assert_eq!(state, State::Progressing, "{text}");
        // A new tenant whose etcd chart has not made its DataStore yet: refused, as the real
        // webhook words it, until the chart is in; a wait, not a failure.
        refused["conditions"][0]["observedGeneration"] = json!(2);
        refused["conditions"][0]["message"] = json!(
            "admission webhook \"vtenantcontrolplane.kb.io\" denied the request: acme-etcd DataStore does not exist"
        );
        let (state, text) = kamaji_control_plane(&kcp("v1.34.2", refused));
        assert_eq!(state, State::Progressing, "{text}");
        // Any other false condition: on its way.
        let mut pending = ready;
        pending["conditions"][0]["status"] = json!("False");
        assert_eq!(kamaji_control_plane(&kcp("v1.33.4", pending)).0, State::Progressing);
    }

    #[test]
    fn a_machine_deployment_is_ready_once_rolled_out() {
        let md = |status: Value| json!({"metadata": {"generation": 3}, "spec": {"replicas": 2}, "status": status});
        let done = json!({"observedGeneration": 3, "replicas": 2, "readyReplicas": 2, "availableReplicas": 2, "upToDateReplicas": 2});
        assert_eq!(machine_deployment(&md(done.clone()), &[]).0, State::Ready);
        // Available but not yet at the new version: the old Machines still count as available.
        let mut rolling = done.clone();
        rolling["upToDateReplicas"] = json!(1);
        rolling["replicas"] = json!(3);
        let (state, text, _) = machine_deployment(&md(rolling), &[]);
        assert_eq!(state, State::Progressing);
        assert!(text.contains("1/2 up to date"), "{text}");
        // Cluster API has not seen the new spec yet.
        let mut unseen = done;
        unseen["observedGeneration"] = json!(2);
        assert_eq!(machine_deployment(&md(unseen), &[]).0, State::Progressing);
    }

    #[test]
    fn a_machine_deployment_with_machines_in_an_older_set_is_not_rolled_out() {
        // The moment after Cluster API saw a new version: the new set exists, the revision moved,
        // and the counts still say every replica is up to date (seen on the real controllers).
        let md = json!({"metadata": {"name": "acme-md-0", "namespace": "acme", "generation": 4,
                                     "annotations": {REVISION: "2"}},
                        "spec": {"replicas": 2},
                        "status": {"observedGeneration": 4, "replicas": 2, "readyReplicas": 2,
                                   "availableReplicas": 2, "upToDateReplicas": 2}});
        let set = |name: &str, revision: &str, replicas: u64| {
            json!({"metadata": {"name": name, "namespace": "acme", "labels": {DEPLOYMENT_NAME_LABEL: "acme-md-0"},
                                "annotations": {REVISION: revision}},
                   "spec": {"replicas": replicas}, "status": {"replicas": replicas}})
        };
        let other = json!({"metadata": {"name": "x", "namespace": "acme", "labels": {DEPLOYMENT_NAME_LABEL: "acme-md-1"},
                                        "annotations": {REVISION: "1"}}, "status": {"replicas": 5}});
        let (old, new) = (set("acme-md-0-a", "1", 2), set("acme-md-0-b", "2", 0));
        let all = [old, new.clone(), other];
        let sets = machine_sets_of(&md, &all);
        assert_eq!(sets.len(), 2, "only acme-md-0's sets");
        let (state, text, _) = machine_deployment(&md, &sets);
        assert_eq!(state, State::Progressing);
        assert!(text.contains("2 old Machine(s) left"), "{text}");
        // Rolled out: the old set scaled to zero.
        let done = [set("acme-md-0-a", "1", 0), set("acme-md-0-b", "2", 2)];
        assert_eq!(machine_deployment(&md, &machine_sets_of(&md, &done)).0, State::Ready);
    }

    #[test]
    fn revisions_match_by_commit() {
        assert!(revision_matches("main@sha1:abcdef0123", "abcdef0"));
        assert!(!revision_matches("main@sha1:abcdef0123", "abc"));
        assert!(revision_matches("main@sha1:abcdef0123", "main@sha1:abcdef0123"));
        assert!(!revision_matches("dev@sha1:abcdef0123", "main@sha1:abcdef0123"));
    }

    #[test]
    fn a_datastore_is_ready_once_kamaji_validated_it_and_failed_with_its_reason() {
        let ready = json!({"status": {"ready": true, "usedBy": ["acme/acme", "globex/globex"]}});
        assert_eq!(datastore(&ready), (State::Ready, "used by 2 control plane(s)".into()));
        let refused = json!({"status": {"ready": false, "conditions": [{
            "type": "kamaji.clastix.io/DataStoreValidation", "status": "False",
            "reason": "BasicAuthValidationFailed", "message": "secrets \"pg-gold-superuser\" not found"}]}});
        assert_eq!(
            datastore(&refused),
            (
                State::Failed,
                "BasicAuthValidationFailed: secrets \"pg-gold-superuser\" not found".into()
            )
        );
        assert_eq!(datastore(&json!({"status": {"ready": false}})).0, State::Progressing);
        assert_eq!(datastore(&json!({})).0, State::NoStatus);
    }
}
