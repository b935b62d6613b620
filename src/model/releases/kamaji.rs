//! What each Kamaji release can run: the newest Kubernetes its admission webhook lets a
//! TenantControlPlane be created with or upgraded to.
//!
//! Upstream: clastix/kamaji `internal/upgrade/kubeadm_version.go` (`KubeadmVersion`, the
//! kubeadm the release builds on; read at every tag below), enforced by
//! `internal/webhook/handlers/tcp_version.go` (`OnCreate` and `OnUpdate`: `ver.GT(supportedVer)`
//! is refused). From `edge-25.11.5` on (commit 4956790, #1014) the webhook zeroes the patch of
//! the tenant's version before comparing, so a release admits every patch of its minor; before,
//! it compared full versions, so `v1.33.5` was refused by a release on kubeadm `v1.33.4`.
//!
//! A refused TenantControlPlane is invisible to Flux: Flux applies the KamajiControlPlane, and
//! the control plane provider's update of the TenantControlPlane is what the webhook refuses.

use crate::model::KubeVersion;

/// Every Kamaji edge release tag, in release order, with its `KubeadmVersion`.
const RELEASES: &[(&str, &str)] = &[
    ("edge-24.7.1", "v1.30.2"),
    ("edge-24.8.1", "v1.30.2"),
    ("edge-24.8.2", "v1.30.2"),
    ("edge-24.9.1", "v1.31.1"),
    ("edge-24.9.2", "v1.31.1"),
    ("edge-24.10.1", "v1.31.1"),
    ("edge-24.12.1", "v1.31.4"),
    ("edge-25.03.1", "v1.32.3"),
    ("edge-25.3.2", "v1.32.3"),
    ("edge-25.4.1", "v1.33.0"),
    ("edge-25.7.1", "v1.33.2"),
    ("edge-25.7.2", "v1.33.2"),
    ("edge-25.7.3", "v1.33.2"),
    ("edge-25.7.5", "v1.33.2"),
    ("edge-25.8.2", "v1.33.2"),
    ("edge-25.8.3", "v1.33.2"),
    ("edge-25.8.4", "v1.33.4"),
    ("edge-25.8.5", "v1.33.4"),
    ("edge-25.9.1", "v1.33.4"),
    ("edge-25.9.2", "v1.34.0"),
    ("edge-25.9.3", "v1.34.0"),
    ("edge-25.9.4", "v1.34.0"),
    ("edge-25.9.5", "v1.34.0"),
    ("edge-25.10.2", "v1.34.0"),
    ("edge-25.10.3", "v1.34.0"),
    ("edge-25.10.4", "v1.34.0"),
    ("edge-25.10.5", "v1.34.0"),
    ("edge-25.11.2", "v1.34.0"),
    ("edge-25.11.3", "v1.34.0"),
    ("edge-25.11.4", "v1.34.0"),
    // From here on the webhook ignores the patch (see the module comment).
    ("edge-25.11.5", "v1.34.0"),
    ("edge-25.12.1", "v1.34.0"),
    ("edge-25.12.2", "v1.34.0"),
    ("edge-25.12.3", "v1.34.0"),
    ("edge-25.12.4", "v1.35.0"),
    ("edge-25.12.5", "v1.35.0"),
    ("edge-26.1.2", "v1.35.0"),
    ("edge-26.1.3", "v1.35.0"),
    ("edge-26.1.4", "v1.35.0"),
    ("edge-26.1.5", "v1.35.0"),
    ("edge-26.2.2", "v1.35.0"),
    ("edge-26.2.3", "v1.35.0"),
    ("edge-26.2.4", "v1.35.0"),
    ("edge-26.2.5", "v1.35.0"),
    ("26.3.2-edge", "v1.35.0"),
    ("26.3.3-edge", "v1.35.0"),
    ("26.3.4-edge", "v1.35.0"),
    ("26.3.5-edge", "v1.35.0"),
    ("26.3.6-edge", "v1.35.0"),
    ("26.4.2-edge", "v1.35.0"),
    ("26.4.3-edge", "v1.35.0"),
    ("26.4.4-edge", "v1.35.0"),
    ("26.4.5-edge", "v1.35.0"),
    ("26.5.2-edge", "v1.35.0"),
    ("26.5.3-edge", "v1.36.0"),
    ("26.5.4-edge", "v1.36.0"),
    ("26.5.5-edge", "v1.36.0"),
    ("26.6.1-edge", "v1.36.0"),
    ("26.6.2-edge", "v1.36.0"),
    ("26.6.3-edge", "v1.36.0"),
    ("26.6.4-edge", "v1.36.0"),
    ("26.6.5-edge", "v1.36.0"),
    ("26.7.2-edge", "v1.36.0"),
    ("26.7.3-edge", "v1.36.0"),
    ("26.7.4-edge", "v1.36.0"),
    ("26.7.5-edge", "v1.36.0"),
    ("26.8.2-edge", "v1.36.0"),
];

/// The first release whose webhook ignores the patch of the tenant's version.
const PATCH_IGNORED_FROM: &str = "edge-25.11.5";

/// The newest Kubernetes one Kamaji release admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ceiling {
    /// Every patch of this minor (`v1.36`), nothing of a later one.
    Minor(KubeVersion),
    /// Up to this exact version (`v1.33.4`): older releases compared full versions.
    Exact(KubeVersion),
}

impl Ceiling {
    /// Whether the release admits `v`.
    pub fn admits(self, v: KubeVersion) -> bool {
        match self {
            Ceiling::Minor(c) => (v.major, v.minor) <= (c.major, c.minor),
            Ceiling::Exact(c) => v <= c,
        }
    }

    /// The release's `KubeadmVersion`, the row of the table.
    pub fn kubeadm(self) -> KubeVersion {
        match self {
            Ceiling::Minor(c) | Ceiling::Exact(c) => c,
        }
    }

    /// The highest version to write as `supportedKubernetes.max` (`v1.36.99`, or `v1.33.4`).
    pub fn highest(self) -> String {
        match self {
            Ceiling::Minor(c) => format!("v{}.{}.99", c.major, c.minor),
            Ceiling::Exact(c) => c.to_string(),
        }
    }
}

impl std::fmt::Display for Ceiling {
    /// `v1.36` for a minor, `v1.33.4` for an exact version.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ceiling::Minor(c) => write!(f, "v{}.{}", c.major, c.minor),
            Ceiling::Exact(c) => c.fmt(f),
        }
    }
}

/// What Kamaji `tag` admits, or `None` for a tag not in the table (a newer release, or a
/// build of its own).
pub fn ceiling(tag: &str) -> Option<Ceiling> {
    let at = RELEASES.iter().position(|(t, _)| *t == tag)?;
    let version = KubeVersion::parse(RELEASES[at].1).expect("the table holds versions");
    let ignored_from = RELEASES
        .iter()
        .position(|(t, _)| *t == PATCH_IGNORED_FROM)
        .expect("the table holds the release");
    Some(if at >= ignored_from {
        Ceiling::Minor(version)
    } else {
        Ceiling::Exact(version)
    })
}

/// The newest release in the table, for the hint of an unknown tag.
pub fn newest_known() -> &'static str {
    RELEASES.last().expect("the table is not empty").0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> KubeVersion {
        KubeVersion::parse(s).unwrap()
    }

    #[test]
    fn releases_admit_what_their_webhook_admits() {
        let c = ceiling("26.8.2-edge").unwrap();
        assert_eq!(c.to_string(), "v1.36");
        assert!(c.admits(v("v1.36.7")));
        assert!(!c.admits(v("v1.37.0")));
        let old = ceiling("edge-25.9.1").unwrap();
        assert_eq!(old.to_string(), "v1.33.4");
        assert!(old.admits(v("v1.33.4")));
        assert!(!old.admits(v("v1.33.5")));
        assert_eq!(ceiling("edge-25.11.5").unwrap().to_string(), "v1.34");
        assert_eq!(ceiling("edge-25.11.4").unwrap().to_string(), "v1.34.0");
        assert_eq!(ceiling("26.9.1-edge"), None);
        assert_eq!(ceiling("latest"), None);
    }
}
