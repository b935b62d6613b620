//! `upgrade --to`: whether a tenant's last step is healthy on the management cluster, read as
//! `wait` reads it (`crate::status::health`), before the next step is written.

use serde_json::Value;

use crate::cluster::{Cluster, ClusterError, KAMAJI_CONTROL_PLANE, MACHINE_DEPLOYMENT};
use crate::model::Tenant;
use crate::status::State;
use crate::status::health::{kamaji_control_plane, machine_deployment};

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

/// Reads the tenant's KamajiControlPlane and MachineDeployments and judges them.
pub fn read(cluster: &Cluster, t: &Tenant) -> Result<Health, ClusterError> {
    let kcps = cluster.list(KAMAJI_CONTROL_PLANE, Some(&t.name), None)?;
    let mds = if t.topology.is_some() {
        Vec::new()
    } else {
        cluster.list(MACHINE_DEPLOYMENT, Some(&t.name), None)?
    };
    Ok(judge(t, &kcps, &mds))
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
pub fn judge(t: &Tenant, kcps: &[Value], mds: &[Value]) -> Health {
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
        let (state, text, _) = machine_deployment(md);
        if state != State::Ready {
            return Health::Waiting(format!("MachineDeployment {ns}/{name} is {}: {text}", state.word()));
        }
    }
    Health::Healthy
}
