//! The Kamaji API each Kamaji control plane provider release is compiled against, and what that
//! means next to a newer Kamaji (issue 41 item 9).
//!
//! The provider writes each TenantControlPlane whole with `controllerutil.CreateOrUpdate`
//! (v0.20.0 `controllers/kamajicontrolplane_controller_tcp.go:46`, a full Update) from the Go
//! types of the Kamaji module its go.mod requires. A field the running Kamaji added after that
//! commit is not in those types, so every provider reconcile removes it from the stored spec:
//! seen on the real pair (Kamaji 26.8.2-edge, provider v0.20.0), Kamaji's webhook defaults
//! `networkProfile.serviceCidrs`/`podCidrs` on create and the provider's next update drops them;
//! Kamaji falls back to the deprecated singular fields (`internal/utilities/utilities.go`) and
//! logs the deprecation. Survivable, because kaas-gitops renders only KamajiControlPlane fields,
//! which the provider's own API carries and copies; a field only a newer Kamaji knows can never
//! be set through the provider.

/// A provider release and the Kamaji API it was built against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltAgainst {
    /// The provider release.
    pub provider: &'static str,
    /// The Kamaji commit in its go.mod (`github.com/clastix/kamaji v1.0.1-0.<date>-<commit>`).
    pub commit: &'static str,
    /// That commit's date.
    pub date: &'static str,
    /// (year, month) of the date, to compare with a Kamaji tag's.
    month: (u32, u32),
}

/// Provider releases with the Kamaji API they were built against (their go.mod at the tag).
const BUILT_AGAINST: &[BuiltAgainst] = &[BuiltAgainst {
    provider: "v0.20.0",
    commit: "e51909fae3f5",
    date: "2026-03-30",
    month: (2026, 3),
}];

/// TenantControlPlane fields of Kamaji 26.8.2-edge that the Kamaji API of e51909fae3f5 lacks
/// (`api/v1alpha1/tenantcontrolplane_types.go` of both, compared field by field).
pub const NEWER_FIELDS: &[&str] = &[
    "spec.networkProfile.serviceCidrs",
    "spec.networkProfile.podCidrs",
    "spec.controlPlane.deployment.automountServiceAccountToken",
    "spec.controlPlane.deployment.containerSecurityContexts",
    "spec.controlPlane.deployment.podSecurityContext",
    "spec.controlPlane.service.allocateLoadBalancerNodePorts",
    "spec.addons.konnectivity.server.securityContext",
];

/// (year, month) of a Kamaji release tag: `26.8.2-edge`, `edge-26.8.2`.
fn tag_month(tag: &str) -> Option<(u32, u32)> {
    let t = tag.strip_prefix("edge-").or_else(|| tag.strip_suffix("-edge"))?;
    let mut parts = t.split('.');
    let year: u32 = parts.next()?.parse().ok()?;
    let month: u32 = parts.next()?.parse().ok()?;
    (1..=12).contains(&month).then_some((2000 + year, month))
}

/// The provider's Kamaji API, when `kamaji_tag` is a Kamaji release of a later month: the pair
/// has the skew. `None` for a pair without it, or one not known.
pub fn skew(provider: &str, kamaji_tag: &str) -> Option<BuiltAgainst> {
    let built = BUILT_AGAINST.iter().find(|b| b.provider == provider)?;
    (tag_month(kamaji_tag)? > built.month).then_some(*built)
}

/// What `validate` notes for such a pair.
pub fn note(provider: &str, kamaji_tag: &str) -> Option<String> {
    let b = skew(provider, kamaji_tag)?;
    Some(format!(
        "the Kamaji control plane provider {provider} is built against the Kamaji API of {} (commit {}) and writes each TenantControlPlane whole: fields Kamaji `{kamaji_tag}` has that API lacks ({}, where that release has them) are removed at the provider's next reconcile (Kamaji falls back to `serviceCidr`/`podCidr`). kaas-gitops renders none of them; never set them on a TenantControlPlane by hand (docs/upgrades.md, \"The provider and Kamaji's API\")",
        b.date,
        b.commit,
        NEWER_FIELDS.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::{note, skew, tag_month};

    #[test]
    fn the_pair_of_the_example_has_the_skew_and_an_older_kamaji_has_not() {
        assert_eq!(tag_month("26.8.2-edge"), Some((2026, 8)));
        assert_eq!(tag_month("edge-25.9.5"), Some((2025, 9)));
        assert_eq!(tag_month("v1.0.0"), None);
        assert_eq!(skew("v0.20.0", "26.8.2-edge").map(|b| b.commit), Some("e51909fae3f5"));
        assert_eq!(skew("v0.20.0", "edge-26.3.1"), None);
        assert_eq!(skew("v0.20.0", "edge-25.9.5"), None);
        assert_eq!(skew("v0.19.0", "26.8.2-edge"), None, "not in the table: nothing said");
        assert!(
            note("v0.20.0", "26.8.2-edge")
                .unwrap()
                .contains("spec.networkProfile.serviceCidrs")
        );
    }
}
