//! `spec.workers[].version`: a pool's own kubelet version, to hold it back while the control
//! plane moves ahead. The kubelet skew rules of the Kubernetes version skew policy
//! (https://kubernetes.io/releases/version-skew-policy/, see `model::upgrade`): never newer
//! than the control plane, at most three minors older.

use crate::diagnostics::Diagnostic;
use crate::model::build::fields::version;
use crate::model::upgrade::{KUBELET_SKEW, pool_skew};
use crate::model::{KubeVersion, Platform};
use crate::spec::raw::Worker;
use crate::spec::source::Source;

/// The pool's version, if it sets one; every problem with it in `errs`. `field`: the pool's
/// path (`spec.workers[0]`); `cp`: the control plane's version, when it parsed; `topology`: the
/// tenant is built from a ClusterClass.
pub fn pool_version(
    src: &Source,
    field: &str,
    w: &Worker,
    cp: Option<KubeVersion>,
    topology: bool,
    platform: &Platform,
    errs: &mut Vec<Diagnostic>,
) -> Option<KubeVersion> {
    let f = format!("{field}.version");
    let v = version(src, &f, w.version.as_deref()?, errs)?;
    if topology {
        errs.push(
            src.error(&f, format!("pool `{}` sets its own version in topology mode", w.name))
                .with_hint("a ClusterClass's machine deployments follow the Cluster's version: remove `version`"),
        );
    }
    kubelet_rules(src, &f, &format!("pool `{}`", w.name), v, cp, platform, errs);
    Some(v)
}

/// `spec.kubernetes.workersVersion`: the version of every pool without its own, under the same
/// kubelet rules; not in topology mode, where Cluster API's topology controller already moves
/// the machine deployments only after the control plane (cluster-api v1.14.0
/// `exp/topology/desiredstate/desired_state.go`, `computeMachineDeploymentVersion`).
pub fn workers_version(
    src: &Source,
    text: Option<&str>,
    cp: Option<KubeVersion>,
    topology: bool,
    platform: &Platform,
    errs: &mut Vec<Diagnostic>,
) -> Option<KubeVersion> {
    const FIELD: &str = "spec.kubernetes.workersVersion";
    let v = version(src, FIELD, text?, errs)?;
    if topology {
        errs.push(src.error(FIELD, "a held pool version in topology mode").with_hint(
            "Cluster API's topology controller upgrades the machine deployments after the control plane by itself: remove `workersVersion`",
        ));
    }
    kubelet_rules(src, FIELD, "the pools", v, cp, platform, errs);
    Some(v)
}

/// The supported range and the kubelet skew rules for `v` at `f`.
fn kubelet_rules(
    src: &Source,
    f: &str,
    what: &str,
    v: KubeVersion,
    cp: Option<KubeVersion>,
    platform: &Platform,
    errs: &mut Vec<Diagnostic>,
) {
    if v < platform.min_kubernetes || v > platform.max_kubernetes {
        errs.push(
            src.error(f, format!("Kubernetes {v} is outside the platform's supported range"))
                .with_hint(format!(
                    "kaas.yaml supports {} to {}",
                    platform.min_kubernetes, platform.max_kubernetes
                )),
        );
    }
    if let Some(cp) = cp
        && let Some(why) = pool_skew(cp, v)
    {
        let hint = if v > cp {
            "upgrade the control plane first (`spec.kubernetes.version`), or remove `version` so the pool follows it"
                .to_string()
        } else {
            format!(
                "move the pool to v{}.{}.x or newer, or remove `version` so the pool follows the control plane",
                cp.major,
                cp.minor.saturating_sub(KUBELET_SKEW)
            )
        };
        errs.push(src.error(f, format!("{what}: {why}")).with_hint(hint));
    }
}
