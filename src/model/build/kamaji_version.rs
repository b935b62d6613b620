//! `spec.kamaji.supportedKubernetes.max` against what the pinned Kamaji release can run
//! ([`crate::model::releases::kamaji`]).

use crate::diagnostics::Diagnostic;
use crate::model::KubeVersion;
use crate::model::releases::kamaji::{ceiling, newest_known};
use crate::spec::source::Source;

const FIELD: &str = "spec.kamaji.supportedKubernetes.max";

/// Where the Kamaji tag being checked comes from, for the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagOrigin {
    /// `spec.kamaji.image.tag` of kaas.yaml.
    Written,
    /// The pin of a tag policy in kaas.lock.
    Locked,
    /// The tag `pin` just picked with the tag policy.
    Picked,
}

/// An error at `supportedKubernetes.max` when Kamaji `tag` refuses tenants at `max`; a warning
/// when the tag is not in the table (nothing is known about it, so nothing is refused).
pub fn check(src: &Source, tag: &str, max: KubeVersion, origin: TagOrigin) -> Option<Diagnostic> {
    let from = match origin {
        TagOrigin::Written => "",
        TagOrigin::Locked => " (pinned in kaas.lock)",
        TagOrigin::Picked => " (the newest tag the `tagPolicy` allows)",
    };
    let Some(c) = ceiling(tag) else {
        return Some(
            src.warning(
                "spec.kamaji.image",
                format!(
                    "Kamaji `{tag}`{from} is not a release kaas-gitops knows: `supportedKubernetes.max` ({max}) is not checked against the Kubernetes it can run"
                ),
            )
            .with_hint(format!(
                "the releases known run up to `{newest_known}`; check `internal/upgrade/kubeadm_version.go` of your Kamaji: tenants above its `KubeadmVersion` are refused by its webhook",
                newest_known = newest_known()
            )),
        );
    };
    if c.admits(max) {
        return None;
    }
    Some(
        src.error(
            FIELD,
            format!(
                "`{max}` is newer than Kamaji `{tag}`{from} can run: its webhook refuses a TenantControlPlane above {c} (release table: `{tag}` -> `KubeadmVersion` {}, from its internal/upgrade/kubeadm_version.go)",
                c.kubeadm()
            ),
        )
        .with_hint(format!(
            "set `max` to at most `{}`, or move `spec.kamaji.image` to a Kamaji release that runs {}.{}",
            c.highest(),
            max.major,
            max.minor
        )),
    )
}
