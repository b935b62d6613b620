//! What one live object's status says, kind by kind, read the way its controller writes it.
//! An object without a status is "no status yet", never healthy.

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
pub fn flux(object: &Value, want: Option<&str>) -> (State, String) {
    let cs = conditions(object);
    let Some(ready) = condition(&cs, "Ready") else {
        return (State::NoStatus, "no Ready condition yet".into());
    };
    let message = format!("{}: {}", ready.reason, ready.message);
    let attempted = object["status"]["lastAttemptedRevision"].as_str();
    let applied = object["status"]["lastAppliedRevision"].as_str();
    let at_want = |r: Option<&str>| match (want, r) {
        (Some(w), Some(r)) => revision_matches(r, w),
        (Some(_), None) => false,
        (None, _) => true,
    };
    let stalled = condition(&cs, "Stalled").is_some_and(|c| c.status == "True");
    // A failed reconciliation keeps `Reconciling` with the reason `ProgressingWithRetry` while
    // the controller retries (fluxcd/kustomize-controller v1.9.4 and helm-controller v1.6.3,
    // `finalizeStatus`): failed, not in progress.
    let reconciling =
        condition(&cs, "Reconciling").is_some_and(|c| c.status == "True" && c.reason != "ProgressingWithRetry");
    let state = match ready.status.as_str() {
        "True" if !observed(object) => State::Progressing,
        "True" if is_kustomization(object) && !at_want(applied) => State::Stale,
        "True" => State::Ready,
        _ if stalled => State::Failed,
        "False" if ready.reason == "DependencyNotReady" => State::Progressing,
        "False" if is_kustomization(object) && want.is_some() && at_want(attempted) && !reconciling => State::Failed,
        "False" if !is_kustomization(object) && !reconciling => State::Failed,
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

/// Whether Flux's revision (`main@sha1:<hex>`, or a bare `<hex>`) is `want` (a full or
/// abbreviated commit, or a whole Flux revision).
pub fn revision_matches(revision: &str, want: &str) -> bool {
    if want.contains('@') || want.contains(':') {
        return revision == want;
    }
    let sha = revision.rsplit_once(':').map_or(revision, |(_, s)| s);
    want.len() >= 7 && sha.starts_with(want)
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

/// A KamajiControlPlane (v1alpha2): `status.ready`, `status.initialization.controlPlaneInitialized`
/// (the Cluster API v1beta2 contract's field), `status.version`
/// (cluster-api-control-plane-provider-kamaji v0.20.0 `api/v1alpha2/kamajicontrolplane_types.go`).
pub fn kamaji_control_plane(object: &Value) -> (State, String) {
    let status = &object["status"];
    if status.is_null() || status.as_object().is_some_and(|s| s.is_empty()) {
        return (State::NoStatus, "no status yet".into());
    }
    let version = status["version"].as_str().unwrap_or("no version");
    let state = if status["ready"] == true {
        State::Ready
    } else {
        State::Progressing
    };
    let initialized = if status["initialization"]["controlPlaneInitialized"] == true {
        "initialized"
    } else {
        "not initialized"
    };
    (state, format!("{version}, {initialized}"))
}

/// A MachineDeployment (v1beta2): ready and available replicas against the desired ones
/// (`spec.replicas`, or, for an autoscaled pool without it, `status.replicas`).
pub fn machine_deployment(object: &Value) -> (State, String, Replicas) {
    let status = &object["status"];
    let n = |v: &Value| v.as_u64();
    let replicas = Replicas {
        desired: n(&object["spec"]["replicas"]).or_else(|| n(&status["replicas"])),
        ready: n(&status["readyReplicas"]),
        available: n(&status["availableReplicas"]),
    };
    if status.is_null() {
        return (State::NoStatus, "no status yet".into(), replicas);
    }
    let state = match (replicas.desired, replicas.available.or(replicas.ready)) {
        (Some(d), Some(a)) if a >= d => State::Ready,
        (Some(0), None) => State::Ready,
        _ => State::Progressing,
    };
    let text = format!(
        "{}/{} ready",
        replicas.ready.unwrap_or(0),
        replicas.desired.map_or("?".into(), |d| d.to_string())
    );
    (state, text, replicas)
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

    #[test]
    fn a_kustomization_is_ready_only_at_the_revision_asked_for() {
        let want = Some("abcdef1");
        assert_eq!(
            flux(
                &ks(
                    "True",
                    "ReconciliationSucceeded",
                    "main@sha1:abcdef123",
                    "main@sha1:abcdef123"
                ),
                want
            )
            .0,
            State::Ready
        );
        assert_eq!(
            flux(
                &ks(
                    "True",
                    "ReconciliationSucceeded",
                    "main@sha1:0000000",
                    "main@sha1:0000000"
                ),
                want
            )
            .0,
            State::Stale
        );
        // It tried the revision and failed: failed. It failed on an older one: still on its way.
        assert_eq!(
            flux(
                &ks("False", "BuildFailed", "main@sha1:0000000", "main@sha1:abcdef123"),
                want
            )
            .0,
            State::Failed
        );
        assert_eq!(
            flux(
                &ks("False", "BuildFailed", "main@sha1:0000000", "main@sha1:0000000"),
                want
            )
            .0,
            State::Progressing
        );
        assert_eq!(
            flux(&ks("False", "DependencyNotReady", "", "main@sha1:abcdef123"), want).0,
            State::Progressing
        );
        assert_eq!(flux(&json!({"kind": "Kustomization"}), want).0, State::NoStatus);
        // Failed and retrying (what kustomize-controller writes after a failed apply): failed.
        let mut retrying = ks(
            "False",
            "ReconciliationFailed",
            "main@sha1:0000000",
            "main@sha1:abcdef123",
        );
        retrying["status"]["conditions"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "Reconciling", "status": "True", "reason": "ProgressingWithRetry", "message": "m"}));
        assert_eq!(flux(&retrying, want).0, State::Failed);
        retrying["status"]["conditions"][1]["reason"] = json!("Progressing");
        assert_eq!(flux(&retrying, want).0, State::Progressing);
    }

    #[test]
    fn objects_without_status_are_never_healthy() {
        assert_eq!(cluster(&json!({})).0, State::NoStatus);
        assert_eq!(kamaji_control_plane(&json!({"status": {}})).0, State::NoStatus);
        let kcp = json!({"status": {"ready": true, "version": "v1.32.9", "initialization": {"controlPlaneInitialized": true}}});
        assert_eq!(
            kamaji_control_plane(&kcp),
            (State::Ready, "v1.32.9, initialized".to_string())
        );
        assert_eq!(machine_deployment(&json!({"spec": {"replicas": 2}})).0, State::NoStatus);
        assert_eq!(
            machine_deployment(
                &json!({"spec": {"replicas": 2}, "status": {"readyReplicas": 1, "availableReplicas": 1}})
            )
            .0,
            State::Progressing
        );
        assert_eq!(
            machine_deployment(
                &json!({"spec": {"replicas": 2}, "status": {"readyReplicas": 2, "availableReplicas": 2}})
            )
            .0,
            State::Ready
        );
    }

    #[test]
    fn revisions_match_by_commit() {
        assert!(revision_matches("main@sha1:abcdef0123", "abcdef0"));
        assert!(!revision_matches("main@sha1:abcdef0123", "abc"));
        assert!(revision_matches("main@sha1:abcdef0123", "main@sha1:abcdef0123"));
        assert!(!revision_matches("dev@sha1:abcdef0123", "main@sha1:abcdef0123"));
    }
}
