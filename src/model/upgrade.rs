//! Which Kubernetes version changes a tenant may make, and the one step `upgrade` takes.
//!
//! Upstream rules encoded here:
//! - Kamaji's admission webhook refuses a `TenantControlPlane` whose minor goes down ("unable
//!   to downgrade a TenantControlPlane") or up by more than one ("unable to upgrade to a minor
//!   version in a non-sequential mode"): clastix/kamaji 26.8.2-edge,
//!   `internal/webhook/handlers/tcp_version.go` sets both patches to 0 before it compares, and
//!   `internal/resources/kubeadm_upgrade.go` refuses only a lower minor ("Patch upgrades are
//!   allowed"). So a patch may go down within its minor, which is how a bad patch release is
//!   rolled back. A refused update leaves the provider retrying forever.
//! - The Kubernetes version skew policy (https://kubernetes.io/releases/version-skew-policy/):
//!   control planes are upgraded one minor at a time; a kubelet must never be newer than its
//!   API server and may be up to three minors older.

use std::collections::BTreeMap;
use std::fmt;

use crate::model::KubeVersion;

/// How many minors a kubelet may lag behind its API server (the skew policy's `kubelet`).
pub const KUBELET_SKEW: u32 = 3;

/// Why a control plane may not go from one version to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A lower minor (or major): Kamaji compares versions with their patches zeroed.
    Downgrade,
    /// More than one minor up, or another major.
    SkipsMinor,
}

/// Why `from -> to` is refused, if it is.
pub fn refusal(from: KubeVersion, to: KubeVersion) -> Option<Refusal> {
    if (to.major, to.minor) < (from.major, from.minor) {
        Some(Refusal::Downgrade)
    } else if to.major != from.major || to.minor > from.minor + 1 {
        Some(Refusal::SkipsMinor)
    } else {
        None
    }
}

/// Why a pool's kubelet version does not fit its control plane, if it does not.
pub fn pool_skew(control_plane: KubeVersion, pool: KubeVersion) -> Option<String> {
    if pool > control_plane {
        Some(format!(
            "a kubelet at {pool} would be newer than its control plane at {control_plane}"
        ))
    } else if pool.major != control_plane.major || control_plane.minor > pool.minor + KUBELET_SKEW {
        Some(format!(
            "a kubelet at {pool} is more than {KUBELET_SKEW} minors older than its control plane at {control_plane}"
        ))
    } else {
        None
    }
}

/// What `upgrade --kubernetes` asks for: a minor (`v1.34`, its newest known patch) or an exact
/// version (`v1.34.2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// `vMAJOR.MINOR`.
    Minor(u32, u32),
    /// `vMAJOR.MINOR.PATCH`.
    Exact(KubeVersion),
}

impl Target {
    /// Parses `v1.34` or `v1.34.2` (the `v` is optional).
    pub fn parse(text: &str) -> Option<Target> {
        if let Some(v) = KubeVersion::parse(text) {
            return Some(Target::Exact(v));
        }
        let t = text.strip_prefix('v').unwrap_or(text);
        let (major, minor) = t.split_once('.')?;
        let num = |s: &str| {
            (!s.is_empty() && s.len() < 10 && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok())?
        };
        Some(Target::Minor(num(major)?, num(minor)?))
    }

    fn minor(self) -> (u32, u32) {
        match self {
            Target::Minor(a, b) => (a, b),
            Target::Exact(v) => (v.major, v.minor),
        }
    }

    /// Whether a tenant at `v` has arrived: at the exact version or newer, or at the minor.
    pub fn reached_by(self, v: KubeVersion) -> bool {
        match self {
            Target::Exact(t) => v >= t,
            Target::Minor(..) => (v.major, v.minor) >= self.minor(),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Minor(a, b) => write!(f, "v{a}.{b}"),
            Target::Exact(v) => write!(f, "{v}"),
        }
    }
}

/// What the platform allows a step to land on.
#[derive(Debug, Clone, Copy)]
pub struct Allowed<'a> {
    /// `spec.kamaji.supportedKubernetes.min`.
    pub min: KubeVersion,
    /// `spec.kamaji.supportedKubernetes.max`.
    pub max: KubeVersion,
    /// `spec.upgrades.kubernetesReleases`.
    pub releases: &'a [KubeVersion],
}

impl Allowed<'_> {
    /// The newest listed patch of `major.minor` inside the supported range.
    pub fn newest_patch(&self, major: u32, minor: u32) -> Option<KubeVersion> {
        self.releases
            .iter()
            .filter(|r| r.major == major && r.minor == minor && **r >= self.min && **r <= self.max)
            .max()
            .copied()
    }

    /// The next step from `from` as people read it: a listed patch, else `v1.34.x`.
    pub fn next_step_text(&self, from: KubeVersion) -> String {
        match self.newest_patch(from.major, from.minor + 1) {
            Some(v) => v.to_string(),
            None => format!("v{}.{}.x", from.major, from.minor + 1),
        }
    }
}

/// The one step `upgrade` takes for a tenant at `from`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Already at (or past) the target: nothing to do.
    AtTarget,
    /// Move to `to`; `further`: the target needs more steps after this one.
    Move {
        /// The version written.
        to: KubeVersion,
        /// More steps follow.
        further: bool,
    },
    /// No step can be taken; why, and what would make one possible.
    Blocked {
        /// What is wrong.
        reason: String,
        /// What to do.
        hint: String,
    },
}

/// The next allowed step from `from` towards `target`: one minor at a time, to the newest listed
/// patch of the next minor (or the exact target when the step reaches its minor).
pub fn step(from: KubeVersion, target: Target, allowed: &Allowed<'_>) -> Step {
    let (major, minor) = target.minor();
    if let Target::Exact(t) = target
        && (t.major, t.minor) < (from.major, from.minor)
    {
        return Step::Blocked {
            reason: format!("{t} would downgrade it from {from}"),
            hint: format!(
                "Kamaji never takes a control plane down a minor: pick a version of v{}.{} or above",
                from.major, from.minor
            ),
        };
    }
    // An exact lower patch of the same minor: a rollback, which Kamaji allows (render warns).
    if let Target::Exact(t) = target
        && (t.major, t.minor) == (from.major, from.minor)
        && t < from
    {
        return Step::Move { to: t, further: false };
    }
    if major != from.major || (major, minor) < (from.major, from.minor) {
        return if (major, minor) < (from.major, from.minor) {
            Step::AtTarget
        } else {
            Step::Blocked {
                reason: format!("{target} is another major version than {from}"),
                hint: "upgrade within one major version".into(),
            }
        };
    }
    let next = if minor > from.minor { from.minor + 1 } else { from.minor };
    let to = match target {
        Target::Exact(t) if t.minor == next => Some(t),
        _ => allowed.newest_patch(major, next),
    };
    let Some(to) = to.filter(|v| *v > from) else {
        if next == from.minor {
            return Step::AtTarget;
        }
        return Step::Blocked {
            reason: format!("no v{major}.{next} release is known to step through"),
            hint: format!(
                "list the v{major}.{next} patch to use in `spec.upgrades.kubernetesReleases` of kaas.yaml, or run `upgrade --kubernetes v{major}.{next}.<patch>` first"
            ),
        };
    };
    if to < allowed.min || to > allowed.max {
        return Step::Blocked {
            reason: format!(
                "{to} is outside the platform's supported range {} to {}",
                allowed.min, allowed.max
            ),
            hint: "widen `spec.kamaji.supportedKubernetes` in kaas.yaml first (with a Kamaji release that supports it)"
                .into(),
        };
    }
    Step::Move {
        to,
        further: !target.reached_by(to),
    }
}

/// The step `upgrade --patch` takes for a tenant at `from`: to the newest listed patch of its
/// own minor (inside the supported range), never down, never to another minor. A patch step
/// within a minor is what Kamaji's webhook always lets through (`tcp_version.go` zeroes the
/// patches before it compares).
pub fn patch_step(from: KubeVersion, allowed: &Allowed<'_>) -> Step {
    match allowed.newest_patch(from.major, from.minor) {
        Some(p) if p > from => Step::Move { to: p, further: false },
        _ => Step::AtTarget,
    }
}

/// A named wave of `spec.upgrades.waves`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wave {
    /// Its name.
    pub name: String,
    /// Labels a tenant must all carry; `None` (and no `management_cluster_selector`): every
    /// tenant no earlier wave took.
    pub selector: Option<BTreeMap<String, String>>,
    /// Labels the tenant's management cluster must all carry (`managementClusterSelector`).
    pub management_cluster_selector: Option<BTreeMap<String, String>>,
    /// When `upgrade` may write its tenants' steps (`maintenanceWindows`; empty: any time).
    pub maintenance_windows: Vec<crate::model::window::MaintenanceWindow>,
}

/// The index of the wave that takes a tenant with `labels` on a management cluster with
/// `cluster_labels`: the first whose selectors both match.
pub fn wave_of(
    waves: &[Wave],
    labels: &BTreeMap<String, String>,
    cluster_labels: &BTreeMap<String, String>,
) -> Option<usize> {
    let matches = |sel: &Option<BTreeMap<String, String>>, labels: &BTreeMap<String, String>| {
        sel.as_ref()
            .is_none_or(|sel| sel.iter().all(|(k, v)| labels.get(k) == Some(v)))
    };
    waves
        .iter()
        .position(|w| matches(&w.selector, labels) && matches(&w.management_cluster_selector, cluster_labels))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> KubeVersion {
        KubeVersion::parse(s).unwrap()
    }

    fn allowed(releases: &[KubeVersion]) -> Allowed<'_> {
        Allowed {
            min: v("v1.31.0"),
            max: v("v1.34.99"),
            releases,
        }
    }

    #[test]
    fn refusals_follow_kamaji_and_the_skew_policy() {
        assert_eq!(refusal(v("v1.33.4"), v("v1.31.2")), Some(Refusal::Downgrade));
        // A patch goes down within its minor: Kamaji zeroes the patches before it compares.
        assert_eq!(refusal(v("v1.33.4"), v("v1.33.3")), None);
        assert_eq!(refusal(v("v1.32.9"), v("v1.34.0")), Some(Refusal::SkipsMinor));
        assert_eq!(refusal(v("v1.32.9"), v("v1.33.0")), None);
        assert_eq!(refusal(v("v1.32.9"), v("v1.32.10")), None);
        assert!(pool_skew(v("v1.33.0"), v("v1.34.0")).is_some());
        assert!(pool_skew(v("v1.34.0"), v("v1.30.0")).is_some());
        assert!(pool_skew(v("v1.34.0"), v("v1.31.0")).is_none());
    }

    #[test]
    fn a_step_is_one_minor_to_its_newest_listed_patch() {
        let releases = [v("v1.33.1"), v("v1.33.5"), v("v1.34.2"), v("v1.35.0")];
        let a = allowed(&releases);
        let t = Target::parse("v1.34").unwrap();
        assert_eq!(
            step(v("v1.32.9"), t, &a),
            Step::Move {
                to: v("v1.33.5"),
                further: true
            }
        );
        assert_eq!(
            step(v("v1.33.5"), t, &a),
            Step::Move {
                to: v("v1.34.2"),
                further: false
            }
        );
        assert_eq!(step(v("v1.34.2"), t, &a), Step::AtTarget);
        // v1.35.0 is listed but outside the supported range.
        assert!(matches!(
            step(v("v1.34.2"), Target::parse("v1.35").unwrap(), &a),
            Step::Blocked { .. }
        ));
        let exact = Target::parse("v1.34.1").unwrap();
        assert_eq!(
            step(v("v1.33.5"), exact, &a),
            Step::Move {
                to: v("v1.34.1"),
                further: false
            }
        );
        // A lower patch of the same minor asked for exactly: the rollback is the step.
        assert_eq!(
            step(v("v1.34.2"), exact, &a),
            Step::Move {
                to: v("v1.34.1"),
                further: false
            }
        );
        // A lower minor asked for exactly: refused.
        assert!(matches!(step(v("v1.35.0"), exact, &a), Step::Blocked { .. }));
        assert!(matches!(step(v("v1.31.2"), t, &allowed(&[])), Step::Blocked { .. }));
    }

    #[test]
    fn a_patch_step_stays_in_its_minor_and_never_goes_down() {
        let releases = [v("v1.33.1"), v("v1.33.5"), v("v1.34.2"), v("v1.35.0")];
        let a = allowed(&releases);
        assert_eq!(
            patch_step(v("v1.33.4"), &a),
            Step::Move {
                to: v("v1.33.5"),
                further: false
            }
        );
        assert_eq!(patch_step(v("v1.33.5"), &a), Step::AtTarget);
        // Newer than every listed patch: nothing to do, never a rollback.
        assert_eq!(patch_step(v("v1.33.9"), &a), Step::AtTarget);
        // No listed patch of its minor, and v1.35.0 is outside the supported range.
        assert_eq!(patch_step(v("v1.32.9"), &a), Step::AtTarget);
        assert_eq!(patch_step(v("v1.35.0"), &a), Step::AtTarget);
    }

    #[test]
    fn the_first_matching_wave_takes_a_tenant() {
        let waves = [
            Wave {
                name: "canary".into(),
                selector: Some([("ring".to_string(), "canary".to_string())].into()),
                management_cluster_selector: None,
                maintenance_windows: Vec::new(),
            },
            Wave {
                name: "canary-region".into(),
                selector: None,
                management_cluster_selector: Some([("region".to_string(), "eu".to_string())].into()),
                maintenance_windows: Vec::new(),
            },
            Wave {
                name: "rest".into(),
                selector: None,
                management_cluster_selector: None,
                maintenance_windows: Vec::new(),
            },
        ];
        let none = BTreeMap::new();
        let eu: BTreeMap<String, String> = [("region".to_string(), "eu".to_string())].into();
        let canary: BTreeMap<String, String> = [("ring".to_string(), "canary".to_string())].into();
        assert_eq!(wave_of(&waves, &canary, &none), Some(0));
        assert_eq!(wave_of(&waves, &canary, &eu), Some(0));
        assert_eq!(wave_of(&waves, &none, &eu), Some(1));
        assert_eq!(wave_of(&waves, &none, &none), Some(2));
        assert_eq!(wave_of(&waves[..1], &none, &none), None);
    }
}
