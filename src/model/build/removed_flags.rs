//! Control plane flags that the tenant's Kubernetes version no longer has.
//!
//! A removed flag is fatal: the component exits with "unknown flag" and the tenant's control
//! plane never starts, while Flux reports the objects it applied as applied. So a flag listed
//! here is refused at its line in the tenant file, naming the version that removed it.

use crate::diagnostics::Diagnostic;
use crate::model::{Component, KubeVersion};
use crate::spec::source::Source;

/// One removed flag: the component, the flag (without `=value`), the first minor (of 1.x) that
/// no longer accepts it, what to do instead, and where upstream says so.
struct Removed {
    component: &'static str,
    flag: &'static str,
    minor: u32,
    instead: &'static str,
    source: &'static str,
}

/// The table, kept with its sources (kubernetes/kubernetes; CHANGELOG-1.x.md names each PR).
/// Only removals inside the range kaas-gitops can render (Kubernetes 1.29 and newer) are listed.
const REMOVED: &[Removed] = &[
    // kubernetes PR #130162 (v1.33.0): "Removed the deprecated `--cloud-provider` and
    // `--cloud-config` flags from kube-apiserver" (cmd/kube-apiserver/app/options/options.go
    // no longer registers them; the Kamaji provider hit "unknown flag: --cloud-provider",
    // clastix/cluster-api-control-plane-provider-kamaji issue #199, PR #200).
    Removed {
        component: "apiServer",
        flag: "--cloud-provider",
        minor: 33,
        instead: "the API server has no cloud provider since Kubernetes 1.33; kaas-gitops already gives the controller manager `--cloud-provider=external` where the provider runs a cloud controller manager",
        source: "kubernetes/kubernetes PR #130162",
    },
    Removed {
        component: "apiServer",
        flag: "--cloud-config",
        minor: 33,
        instead: "the API server reads no cloud configuration since Kubernetes 1.33; give it to the cloud controller manager",
        source: "kubernetes/kubernetes PR #130162",
    },
];

/// Reports every flag of `component` (`apiServer`, `controllerManager`, `scheduler`) that
/// `version` no longer has, at `spec.controlPlane.<component>.extraArgs[i]`.
pub fn check(src: &Source, version: KubeVersion, component: &str, c: &Component, errs: &mut Vec<Diagnostic>) {
    for (i, arg) in c.extra_args.iter().enumerate() {
        let flag = arg.split_once('=').map_or(arg.as_str(), |(flag, _)| flag);
        let Some(removed) = REMOVED
            .iter()
            .find(|r| r.component == component && r.flag == flag && version.major == 1 && version.minor >= r.minor)
        else {
            continue;
        };
        errs.push(
            src.error(
                &format!("spec.controlPlane.{component}.extraArgs[{i}]"),
                format!(
                    "`{flag}` was removed in Kubernetes v1.{}: the tenant's {version} would refuse to start with it",
                    removed.minor
                ),
            )
            .with_hint(format!("drop the flag: {} ({})", removed.instead, removed.source)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_removal_names_its_upstream_source() {
        for r in REMOVED {
            assert!(r.flag.starts_with("--") && !r.flag.contains('='), "{}", r.flag);
            assert!(["apiServer", "controllerManager", "scheduler"].contains(&r.component));
            assert!(r.source.contains("kubernetes"), "{} has no source", r.flag);
        }
    }
}
