//! `spec.workers[].version`: a pool's own kubelet version, to hold it back while the control
//! plane moves ahead. The kubelet skew rules of the Kubernetes version skew policy
//! (https://kubernetes.io/releases/version-skew-policy/, see `model::upgrade`): never newer
//! than the control plane, at most three minors older.

use crate::diagnostics::Diagnostic;
use crate::model::build::platform::version;
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
    if v < platform.min_kubernetes || v > platform.max_kubernetes {
        errs.push(
            src.error(&f, format!("Kubernetes {v} is outside the platform's supported range"))
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
        errs.push(src.error(&f, format!("pool `{}`: {why}", w.name)).with_hint(hint));
    }
    Some(v)
}
