//! `upgrade --to`: whether a tenant's last step is healthy on the management cluster, read as
//! `wait` reads it (`crate::status::health`), before the next step is written.

use serde_json::Value;

use crate::cluster::{Cluster, ClusterError, KAMAJI_CONTROL_PLANE, MACHINE_DEPLOYMENT, MACHINE_SET};
use crate::git::Workspace;
use crate::model::Tenant;
use crate::status::State;
use crate::status::health::{kamaji_control_plane, machine_deployment, machine_sets_of};

/// What the cluster says about a tenant's last step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// The control plane runs the tenant's version and every pool is rolled out at its own.
    Healthy,
    /// Not there yet; what it waits for (the object and its state).
    Waiting(String),
    /// Its controller gave up on it: the object and the controller's message.
    Failed(String),
}

/// `--step-deadline`: how long a step may stay unhealthy after the commit that wrote it.
pub struct Deadline {
    limit: std::time::Duration,
    now: jiff::Timestamp,
    workspace: Option<Workspace>,
}

impl Deadline {
    /// The deadline at `now` for the tenant files of the repository at `repo` (`None` without
    /// `--step-deadline`).
    pub fn new(limit: Option<std::time::Duration>, now: jiff::Timestamp, repo: &std::path::Path) -> Option<Deadline> {
        limit.map(|limit| Deadline {
            limit,
            now,
            workspace: Workspace::open(repo).ok(),
        })
    }

    /// Why the step in tenant file `rel` (`tenants/<t>.yaml`) is overdue: the commit that last
    /// changed it is older than the deadline. `Ok(None)`: not overdue; `Err`: no commit has the
    /// file (uncommitted, or not a git repository), so there is no instant to count from.
    pub fn overdue(&self, rel: &str) -> Result<Option<String>, String> {
        let Some((at, commit)) = self.workspace.as_ref().and_then(|w| w.last_change(rel)) else {
            return Err(format!("`{rel}` has no commit to count --step-deadline from"));
        };
        let waited = std::time::Duration::from_secs(u64::try_from(self.now.as_second() - at).unwrap_or(0));
        Ok((waited > self.limit).then(|| {
            format!(
                "still not healthy {} after commit {commit} wrote the step, longer than --step-deadline {}",
                humantime::format_duration(waited),
                humantime::format_duration(self.limit)
            )
        }))
    }
}

/// Reads the tenant's KamajiControlPlane and MachineDeployments and judges them.
pub fn read(cluster: &Cluster, t: &Tenant) -> Result<Health, ClusterError> {
    let kcps = cluster.list(KAMAJI_CONTROL_PLANE, Some(&t.name), None)?;
    let (mds, sets) = if t.topology.is_some() {
        (Vec::new(), Vec::new())
    } else {
        (
            cluster.list(MACHINE_DEPLOYMENT, Some(&t.name), None)?,
            cluster.list(MACHINE_SET, Some(&t.name), None)?,
        )
    };
    Ok(judge(t, &kcps, &mds, &sets))
}

fn named<'a>(objects: &'a [Value], name: &str) -> Option<&'a Value> {
    objects.iter().find(|o| o["metadata"]["name"] == name)
}

fn same(a: &str, b: &str) -> bool {
    a.trim_start_matches('v') == b.trim_start_matches('v')
}

/// The tenant's health from the listed objects: the KamajiControlPlane at the tenant's version
/// and Ready as `wait` judges it, then each pool's MachineDeployment asking for the pool's
/// version and rolled out. In topology mode Cluster API names the MachineDeployments, and its
/// topology controller moves them only after the control plane: the control plane is judged.
pub fn judge(t: &Tenant, kcps: &[Value], mds: &[Value], sets: &[Value]) -> Health {
    let ns = &t.name;
    let Some(kcp) = named(kcps, &t.name) else {
        return Health::Waiting(format!("KamajiControlPlane {ns}/{ns} is not on the cluster"));
    };
    let want = t.version.to_string();
    let asks = kcp["spec"]["version"].as_str().unwrap_or_default();
    if !same(asks, &want) {
        return Health::Waiting(format!(
            "KamajiControlPlane {ns}/{ns} asks for {asks}, not {want}: Flux has not applied the last step yet"
        ));
    }
    let (state, summary) = kamaji_control_plane(kcp);
    match state {
        State::Ready => {}
        State::Failed => return Health::Failed(format!("KamajiControlPlane {ns}/{ns} is Failed: {summary}")),
        s => return Health::Waiting(format!("KamajiControlPlane {ns}/{ns} is {}: {summary}", s.word())),
    }
    if t.topology.is_some() {
        return Health::Healthy;
    }
    for p in &t.pools {
        let name = format!("{}-{}", t.name, p.name);
        let Some(md) = named(mds, &name) else {
            return Health::Waiting(format!("MachineDeployment {ns}/{name} is not on the cluster"));
        };
        let want = p.version.unwrap_or(t.version).to_string();
        let asks = md["spec"]["template"]["spec"]["version"].as_str().unwrap_or_default();
        if !same(asks, &want) {
            return Health::Waiting(format!(
                "MachineDeployment {ns}/{name} asks for {asks}, not {want}: Flux has not applied the last step yet"
            ));
        }
        let (state, text, _) = machine_deployment(md, &machine_sets_of(md, sets));
        if state != State::Ready {
            return Health::Waiting(format!("MachineDeployment {ns}/{name} is {}: {text}", state.word()));
        }
    }
    Health::Healthy
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Tenant `acme` of the example repository: v1.33.4, one pool `md-0` of 2 machines.
    fn acme() -> Tenant {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let inputs = crate::repo::inputs::read(repo, &[]).unwrap().unwrap();
        let resolved = crate::commands::pipeline::resolve(
            &inputs,
            &crate::render::Options::default(),
            &mut crate::spec::load::ParseCache::default(),
        )
        .unwrap();
        resolved.model.tenants.into_iter().find(|t| t.name == "acme").unwrap()
    }

    fn kcp(spec: &str, runs: &str, conditions: Value) -> Value {
        json!({"metadata": {"name": "acme", "generation": 1}, "spec": {"version": spec},
            "status": {"observedGeneration": 1, "ready": true, "version": runs, "conditions": conditions}})
    }

    fn md(version: &str, up_to_date: u64) -> Value {
        json!({"metadata": {"name": "acme-md-0", "namespace": "acme", "generation": 1,
                "annotations": {"machinedeployment.clusters.x-k8s.io/revision": "2"}},
            "spec": {"replicas": 2, "template": {"spec": {"version": version}}},
            "status": {"observedGeneration": 1, "replicas": 2, "readyReplicas": 2, "availableReplicas": 2,
                "upToDateReplicas": up_to_date}})
    }

    fn waiting_for(h: Health, needle: &str) {
        match h {
            Health::Waiting(why) => assert!(why.contains(needle), "{why}"),
            other => panic!("{other:?} is not waiting for {needle}"),
        }
    }

    #[test]
    fn the_next_step_waits_for_the_control_plane_then_every_pool() {
        let t = acme();
        let ready = json!([{"type": "Ready", "status": "True", "reason": "Ready", "message": ""}]);
        waiting_for(
            judge(&t, &[], &[], &[]),
            "KamajiControlPlane acme/acme is not on the cluster",
        );
        // Flux has not applied the tenant's version yet.
        waiting_for(
            judge(&t, &[kcp("v1.33.3", "v1.33.3", ready.clone())], &[], &[]),
            "asks for v1.33.3, not v1.33.4",
        );
        // Kamaji still upgrading: `ready` is true, the version is not there yet.
        waiting_for(
            judge(&t, &[kcp("v1.33.4", "v1.33.3", ready.clone())], &[], &[]),
            "is Progressing",
        );
        let at = [kcp("v1.33.4", "v1.33.4", ready)];
        waiting_for(
            judge(&t, &at, &[], &[]),
            "MachineDeployment acme/acme-md-0 is not on the cluster",
        );
        waiting_for(
            judge(&t, &at, &[md("v1.33.3", 2)], &[]),
            "asks for v1.33.3, not v1.33.4",
        );
        waiting_for(judge(&t, &at, &[md("v1.33.4", 1)], &[]), "1/2 up to date");
        // Cluster API made the new MachineSet; the old one still has both Machines.
        let set = |revision: &str, replicas: u64| {
            json!({"metadata": {"name": format!("acme-md-0-{revision}"), "namespace": "acme",
                "labels": {"cluster.x-k8s.io/deployment-name": "acme-md-0"},
                "annotations": {"machinedeployment.clusters.x-k8s.io/revision": revision}},
                "spec": {"replicas": replicas}, "status": {"replicas": replicas}})
        };
        waiting_for(
            judge(&t, &at, &[md("v1.33.4", 2)], &[set("1", 2), set("2", 0)]),
            "2 old Machine(s) left",
        );
        assert_eq!(
            judge(&t, &at, &[md("v1.33.4", 2)], &[set("1", 0), set("2", 2)]),
            Health::Healthy
        );
        assert_eq!(judge(&t, &at, &[md("v1.33.4", 2)], &[]), Health::Healthy);
    }

    #[test]
    fn a_step_kamajis_webhook_refused_stops_the_chain() {
        let t = acme();
        let refused = json!([{"type": "TenantControlPlaneCreated", "status": "False", "reason": "Failed",
            "message": "admission webhook \"vtenantcontrolplane.kb.io\" denied the request: unable to upgrade"}]);
        match judge(&t, &[kcp("v1.33.4", "v1.32.9", refused)], &[md("v1.33.4", 2)], &[]) {
            Health::Failed(why) => assert!(
                why.starts_with("KamajiControlPlane acme/acme is Failed:") && why.contains("denied the request"),
                "{why}"
            ),
            other => panic!("{other:?}"),
        }
    }
}
