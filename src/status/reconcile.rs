//! What `wait --reconcile` asks Flux to reconcile at once: only what is behind the revision.
//!
//! A request on a Kustomization makes kustomize-controller fetch, unpack, build and apply it
//! again whether or not anything changed (fluxcd/kustomize-controller v1.9.4
//! `internal/controller/kustomization_controller.go`, `Reconcile` -> `reconcile`). A request on
//! a source makes source-controller fetch it, and a new artifact revision reconciles every
//! Kustomization of that source by itself (`internal/controller/source_predicate.go`,
//! `SourceRevisionChangePredicate`, on the watch of the source kinds). So a source is asked when
//! its artifact is not yet what the revision needs, and a Kustomization only when its source
//! already has that but it has not applied it (a failed attempt waiting out its
//! `retryInterval`, a dependency checked again only every `--requeue-dependency`). A tenant the
//! commit did not change is left alone: at a thousand tenants on sources of their own, asking
//! every Kustomization would re-apply the whole fleet, the very cost those sources save.

use std::collections::{BTreeMap, BTreeSet};

use super::{Entry, Live, OCI_REPOSITORY, ObjectRef, State, Want, health, own_want};

/// The kind of the repository's own source.
const GIT_REPOSITORY: &str = "GitRepository";

/// The objects to ask, sources first (sorted, each once), then Kustomizations in `entries`
/// order.
pub fn requests(entries: &[Entry], live: &Live, want: &Want, artifacts: &BTreeMap<String, String>) -> Vec<ObjectRef> {
    let mut sources = BTreeSet::new();
    let mut kustomizations = Vec::new();
    for e in entries {
        let own = own_want(e, live, Some(want), artifacts);
        let want = own.as_ref().unwrap_or(want);
        let kustomization = live.get(&e.kustomization.key());
        if kustomization.is_some_and(|k| health::flux(k, Some(want)).0 == State::Ready) {
            continue;
        }
        let fetchable = e
            .source
            .as_ref()
            .filter(|s| s.kind == GIT_REPOSITORY || s.kind == OCI_REPOSITORY);
        let source_has_it = |s: &ObjectRef| {
            live.get(&s.key())
                .and_then(|o| o["status"]["artifact"]["revision"].as_str())
                .is_some_and(|r| want.accepts(r))
        };
        match fetchable {
            Some(s) if !source_has_it(s) => {
                sources.insert(s.clone());
            }
            // Not there yet (a tenant just added): its parent Kustomization creates it.
            _ if kustomization.is_none() => {}
            _ => kustomizations.push(e.kustomization.clone()),
        }
    }
    sources.into_iter().chain(kustomizations).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::status::live;

    const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
    const OLD: &str = "fedcba9876543210fedcba9876543210fedcba98";

    fn object(kind: &str, name: &str) -> ObjectRef {
        ObjectRef {
            kind: kind.into(),
            namespace: "flux-system".into(),
            name: name.into(),
        }
    }

    fn entry(tenant: Option<&str>, source: ObjectRef) -> Entry {
        let name = tenant.map_or("kaas-platform".to_string(), |t| format!("kaas-tenant-{t}"));
        Entry {
            tenant: tenant.map(str::to_string),
            kustomization: object("Kustomization", &name),
            source: Some(source),
            objects: vec![],
            bounds: BTreeMap::new(),
        }
    }

    fn kustomization(name: &str, applied: &str) -> Value {
        json!({"kind": "Kustomization", "metadata": {"namespace": "flux-system", "name": name, "generation": 1},
               "status": {"observedGeneration": 1, "lastAppliedRevision": applied, "lastAttemptedRevision": applied,
                          "conditions": [{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded", "message": ""}]}})
    }

    fn source(kind: &str, name: &str, revision: &str) -> Value {
        json!({"kind": kind, "metadata": {"namespace": "flux-system", "name": name},
               "status": {"artifact": {"revision": revision}}})
    }

    fn names(r: &[ObjectRef]) -> Vec<String> {
        r.iter().map(|o| format!("{}/{}", o.kind, o.name)).collect()
    }

    /// A one-tenant commit on per-tenant OCI sources: the repository's source (behind) and the
    /// changed tenant's OCIRepository (behind) are asked; the other tenant, whose artifact the
    /// commit did not move, is left alone, and so is every Kustomization (their sources' new
    /// revisions reconcile them).
    #[test]
    fn asks_only_the_sources_that_are_behind() {
        let git = object("GitRepository", "flux-system");
        let entries = [
            entry(None, git.clone()),
            entry(Some("acme"), object("OCIRepository", "kaas-tenant-acme")),
            entry(Some("globex"), object("OCIRepository", "kaas-tenant-globex")),
        ];
        let artifacts = BTreeMap::from([
            ("acme".to_string(), "latest@sha256:new".to_string()),
            ("globex".to_string(), "latest@sha256:same".to_string()),
        ]);
        let live = live([
            source("GitRepository", "flux-system", &format!("main@sha1:{OLD}")),
            source("OCIRepository", "kaas-tenant-acme", "latest@sha256:old"),
            source("OCIRepository", "kaas-tenant-globex", "latest@sha256:same"),
            kustomization("kaas-platform", &format!("main@sha1:{OLD}")),
            kustomization("kaas-tenant-acme", "latest@sha256:old"),
            kustomization("kaas-tenant-globex", "latest@sha256:same"),
        ]);
        let asked = requests(&entries, &live, &Want::new(COMMIT), &artifacts);
        assert_eq!(
            names(&asked),
            ["GitRepository/flux-system", "OCIRepository/kaas-tenant-acme"]
        );
    }

    /// A Kustomization whose source already has the revision but which has not applied it (a
    /// failed attempt waiting out its retryInterval) is asked; one already at it is not.
    #[test]
    fn asks_a_kustomization_only_when_its_source_is_ahead_of_it() {
        let git = object("GitRepository", "flux-system");
        let entries = [entry(Some("acme"), git.clone()), entry(Some("globex"), git)];
        let mut failed = kustomization("kaas-tenant-acme", &format!("main@sha1:{OLD}"));
        failed["status"]["lastAttemptedRevision"] = json!(format!("main@sha1:{COMMIT}"));
        failed["status"]["conditions"][0] =
            json!({"type": "Ready", "status": "False", "reason": "HealthCheckFailed", "message": "timeout"});
        let live = live([
            source("GitRepository", "flux-system", &format!("main@sha1:{COMMIT}")),
            failed,
            kustomization("kaas-tenant-globex", &format!("main@sha1:{COMMIT}")),
        ]);
        let asked = requests(&entries, &live, &Want::new(COMMIT), &BTreeMap::new());
        assert_eq!(names(&asked), ["Kustomization/kaas-tenant-acme"]);
    }

    /// A later commit that descends from the one asked for counts: nothing is behind.
    #[test]
    fn a_descendant_applied_asks_nothing() {
        let git = object("GitRepository", "flux-system");
        let entries = [entry(None, git)];
        let live = live([
            source("GitRepository", "flux-system", &format!("main@sha1:{OLD}")),
            kustomization("kaas-platform", &format!("main@sha1:{OLD}")),
        ]);
        let mut want = Want::new(COMMIT);
        want.later.insert(OLD.to_string());
        assert!(requests(&entries, &live, &want, &BTreeMap::new()).is_empty());
    }

    /// A tenant just added has no Kustomization yet: its source is asked, the missing
    /// Kustomization is not (its parent creates it).
    #[test]
    fn a_new_tenant_asks_its_source_only() {
        let entries = [entry(Some("acme"), object("OCIRepository", "kaas-tenant-acme"))];
        let artifacts = BTreeMap::from([("acme".to_string(), "latest@sha256:new".to_string())]);
        let asked = requests(&entries, &live([]), &Want::new(COMMIT), &artifacts);
        assert_eq!(names(&asked), ["OCIRepository/kaas-tenant-acme"]);
    }
}
