//! The Cluster API contract each known provider release speaks, read from the providers'
//! `metadata.yaml` (`releaseSeries`), the API versions it serves, and the Cluster API core
//! the Kamaji control plane provider was built against. Pure data and look-ups: `model::build`
//! checks `kaas.yaml` against them (at the fields' lines), `validate::contracts` the rendered
//! fleet's provider objects.

use std::ops::RangeInclusive;

use crate::model::Contract;

/// A release series of one provider.
#[derive(Debug, Clone)]
pub struct Series {
    /// The operator kind installing it.
    pub kind: &'static str,
    /// The provider's name (`metadata.name` of that object).
    pub name: &'static str,
    /// Major version.
    pub major: u64,
    /// Minor versions of the series.
    pub minors: RangeInclusive<u64>,
    /// The contract it speaks.
    pub contract: Contract,
    /// The API group of the objects it serves.
    pub group: &'static str,
    /// Kinds of that group it serves start with this (`""` for all).
    pub kind_prefix: &'static str,
    /// The API versions of those kinds it serves.
    pub versions: &'static [&'static str],
}

/// The API group of Cluster API core objects.
pub const CORE: &str = "cluster.x-k8s.io";
const INFRA: &str = "infrastructure.cluster.x-k8s.io";
const CP: &str = "controlplane.cluster.x-k8s.io";
/// The API group of bootstrap objects.
pub const BOOTSTRAP: &str = "bootstrap.cluster.x-k8s.io";

/// Known releases, from each provider's `metadata.yaml` (`releaseSeries`). Cluster API moved to
/// the v1beta2 contract in v1.11; Kamaji's control plane provider in v0.20 (API `v1alpha2`);
/// CAPMOX in v0.8 (API `v1alpha2`), CAPK in v0.11, metal-stack in v0.8, CAPV in v1.16; CAPH, CAPX,
/// CAPP, CAPA and CAPO speak v1beta1 in the releases listed.
#[rustfmt::skip]
pub const RELEASES: &[Series] = &[
    series("CoreProvider", "cluster-api", 1, 0..=10, Contract::V1beta1, CORE, "", &["v1beta1"]),
    series("CoreProvider", "cluster-api", 1, 11..=14, Contract::V1beta2, CORE, "", &["v1beta1", "v1beta2"]),
    series("BootstrapProvider", "kubeadm", 1, 0..=10, Contract::V1beta1, BOOTSTRAP, "Kubeadm", &["v1beta1"]),
    series("BootstrapProvider", "kubeadm", 1, 11..=14, Contract::V1beta2, BOOTSTRAP, "Kubeadm", &["v1beta1", "v1beta2"]),
    // clastix/cluster-api-control-plane-provider-kamaji `config/metadata.yaml` at v0.20.0.
    series("ControlPlaneProvider", "kamaji", 0, 1..=19, Contract::V1beta1, CP, "Kamaji", &["v1alpha1"]),
    series("ControlPlaneProvider", "kamaji", 0, 20..=20, Contract::V1beta2, CP, "Kamaji", &["v1alpha2"]),
    series("InfrastructureProvider", "proxmox", 0, 1..=7, Contract::V1beta1, INFRA, "Proxmox", &["v1alpha1"]),
    series("InfrastructureProvider", "proxmox", 0, 8..=9, Contract::V1beta2, INFRA, "Proxmox", &["v1alpha1", "v1alpha2"]),
    series("InfrastructureProvider", "hetzner", 1, 0..=1, Contract::V1beta1, INFRA, "H", &["v1beta1"]),
    series("InfrastructureProvider", "kubevirt", 0, 1..=10, Contract::V1beta1, INFRA, "Kubevirt", &["v1alpha1"]),
    series("InfrastructureProvider", "kubevirt", 0, 11..=11, Contract::V1beta2, INFRA, "Kubevirt", &["v1alpha1"]),
    series("InfrastructureProvider", "nutanix", 1, 0..=10, Contract::V1beta1, INFRA, "Nutanix", &["v1beta1"]),
    series("InfrastructureProvider", "metal-stack", 0, 1..=7, Contract::V1beta1, INFRA, "MetalStack", &["v1alpha1"]),
    series("InfrastructureProvider", "metal-stack", 0, 8..=8, Contract::V1beta2, INFRA, "MetalStack", &["v1alpha1"]),
    series("InfrastructureProvider", "packet", 0, 5..=9, Contract::V1beta1, INFRA, "Packet", &["v1beta1"]),
    series("InfrastructureProvider", "aws", 2, 0..=11, Contract::V1beta1, INFRA, "AWS", &["v1beta2"]),
    // kubernetes-sigs/cluster-api-provider-vsphere v1.16.1 `metadata.yaml`; its CRDs serve
    // v1beta1 (deprecated) and v1beta2 from v1.16 on.
    series("InfrastructureProvider", "vsphere", 1, 0..=15, Contract::V1beta1, INFRA, "VSphere", &["v1beta1"]),
    series("InfrastructureProvider", "vsphere", 1, 16..=16, Contract::V1beta2, INFRA, "VSphere", &["v1beta1", "v1beta2"]),
    // kubernetes-sigs/cluster-api-provider-openstack v0.14.7 `metadata.yaml` (API v1beta1 since
    // v0.10).
    series("InfrastructureProvider", "openstack", 0, 10..=14, Contract::V1beta1, INFRA, "OpenStack", &["v1beta1"]),
    // metal3-io/cluster-api-provider-metal3 v1.13.2 `metadata.yaml`: v1beta2 from v1.13, whose
    // CRDs serve v1beta1 (deprecated) and v1beta2.
    series("InfrastructureProvider", "metal3", 1, 1..=12, Contract::V1beta1, INFRA, "Metal3", &["v1beta1"]),
    series("InfrastructureProvider", "metal3", 1, 13..=13, Contract::V1beta2, INFRA, "Metal3", &["v1beta1", "v1beta2"]),
    // tinkerbell/cluster-api-provider-tinkerbell v0.7.0 `metadata.yaml`: v1beta2 from v0.7,
    // still through its v1beta1 API.
    series("InfrastructureProvider", "tinkerbell", 0, 1..=6, Contract::V1beta1, INFRA, "Tinkerbell", &["v1beta1"]),
    series("InfrastructureProvider", "tinkerbell", 0, 7..=7, Contract::V1beta2, INFRA, "Tinkerbell", &["v1beta1"]),
    // ionos-cloud/cluster-api-provider-ionoscloud v0.6.3 `metadata.yaml` (API `v1alpha1`).
    series("InfrastructureProvider", "ionoscloud", 0, 1..=6, Contract::V1beta1, INFRA, "IonosCloud", &["v1alpha1"]),
    // kubernetes-sigs/cluster-api-provider-azure v1.26.0 `metadata.yaml`: v1beta1 throughout.
    series("InfrastructureProvider", "azure", 1, 0..=26, Contract::V1beta1, INFRA, "Azure", &["v1beta1"]),
];

#[expect(clippy::too_many_arguments, reason = "a table row")]
const fn series(
    kind: &'static str,
    name: &'static str,
    major: u64,
    minors: RangeInclusive<u64>,
    contract: Contract,
    group: &'static str,
    kind_prefix: &'static str,
    versions: &'static [&'static str],
) -> Series {
    Series {
        kind,
        name,
        major,
        minors,
        contract,
        group,
        kind_prefix,
        versions,
    }
}

/// The `sigs.k8s.io/cluster-api` requirement of clastix/cluster-api-control-plane-provider-kamaji's
/// `go.mod` at each release tag: the Cluster API core the provider was built against.
#[rustfmt::skip]
const KAMAJI_PROVIDER_CORE: &[(&str, &str)] = &[
    // go.mod at v0.1.0 to v0.7.1: a pseudo-version after v1.4.0-beta.2, read as v1.4.
    ("v0.1.0", "v1.4.0-beta.2.0.20230613082000-a43982d398c3"),
    ("v0.2.0", "v1.4.0-beta.2.0.20230613082000-a43982d398c3"),
    ("v0.2.1", "v1.4.0-beta.2.0.20230613082000-a43982d398c3"),
    ("v0.2.2", "v1.4.0-beta.2.0.20230613082000-a43982d398c3"),
    ("v0.3.0", "v1.4.0-beta.2.0.20230613082000-a43982d398c3"),
    ("v0.3.1", "v1.4.0-beta.2.0.20230613082000-a43982d398c3"),
    ("v0.4.0", "v1.4.0-beta.2.0.20230613082000-a43982d398c3"),
    ("v0.4.1", "v1.4.0-beta.2.0.20230613082000-a43982d398c3"),
    ("v0.4.2", "v1.4.0-beta.2.0.20230613082000-a43982d398c3"),
    ("v0.5.0", "v1.4.0-beta.2.0.20230613082000-a43982d398c3"),
    ("v0.6.0", "v1.4.0-beta.2.0.20230613082000-a43982d398c3"),
    ("v0.7.0", "v1.4.0-beta.2.0.20230613082000-a43982d398c3"),
    ("v0.7.1", "v1.4.0-beta.2.0.20230613082000-a43982d398c3"),
    // go.mod at v0.8.0 to v0.11.0.
    ("v0.8.0", "v1.6.4"),
    ("v0.9.0", "v1.6.4"),
    ("v0.10.0", "v1.6.4"),
    ("v0.10.1", "v1.6.4"),
    ("v0.10.2", "v1.6.4"),
    ("v0.11.0", "v1.6.4"),
    // go.mod at v0.12.0 to v0.14.2.
    ("v0.12.0", "v1.8.4"),
    ("v0.13.0", "v1.8.4"),
    ("v0.14.0", "v1.8.4"),
    ("v0.14.1", "v1.8.4"),
    ("v0.14.2", "v1.8.4"),
    // go.mod at v0.15.0 to v0.17.0.
    ("v0.15.0", "v1.10.1"),
    ("v0.15.1", "v1.10.1"),
    ("v0.15.2", "v1.10.1"),
    ("v0.15.3", "v1.10.3"),
    ("v0.15.4", "v1.10.4"),
    ("v0.16.0", "v1.10.4"),
    ("v0.17.0", "v1.10.4"),
    // go.mod at v0.18.0 and v0.19.0 (#311, "bump capi to 1.11.6"); the code imports only
    // `sigs.k8s.io/cluster-api/api/core/v1beta1`, and `config/metadata.yaml` says v1beta1.
    ("v0.18.0", "v1.11.6"),
    ("v0.19.0", "v1.11.6"),
    // go.mod at v0.20.0; the code imports `sigs.k8s.io/cluster-api/api/core/v1beta2`.
    ("v0.20.0", "v1.13.2"),
];

/// The oldest Cluster API core one Kamaji control plane provider release runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoreFloor {
    /// The `sigs.k8s.io/cluster-api` version in the release's `go.mod`.
    pub built_against: &'static str,
    /// The oldest core minor (of Cluster API v1) it needs.
    pub minor: u64,
}

/// The core `version` of the Kamaji control plane provider needs, or `None` for a release
/// not in the table.
///
/// The core minor its `go.mod` names, capped at the newest core of the contract the provider
/// speaks: Cluster API v1.11 still ships the v1beta1 API (`api/core/v1beta1`, frozen as v1.10
/// left it), so v0.18 and v0.19, built against v1.11.6 but speaking only v1beta1, run on
/// v1.10 (their e2e workflow installs the core with clusterctl v1.8.4, a v1beta1 release).
pub fn kamaji_provider_core(version: &str) -> Option<CoreFloor> {
    let (_, built_against) = KAMAJI_PROVIDER_CORE.iter().find(|(tag, _)| *tag == version)?;
    let (_, minor, _) = semver(built_against)?;
    let Release::Known(speaks) = lookup("ControlPlaneProvider", "kamaji", version) else {
        return None;
    };
    let newest_of_contract = RELEASES
        .iter()
        .filter(|s| s.kind == "CoreProvider" && s.contract == speaks.contract)
        .map(|s| *s.minors.end())
        .max()?;
    Some(CoreFloor {
        built_against,
        minor: minor.min(newest_of_contract),
    })
}

/// The newest Kamaji control plane provider release in the table that speaks `contract` and
/// runs on core minor `core_minor`: what to move the provider to instead.
pub fn newest_kamaji_provider_for(contract: Contract, core_minor: u64) -> Option<&'static str> {
    KAMAJI_PROVIDER_CORE.iter().rev().map(|(tag, _)| *tag).find(|tag| {
        let speaks =
            matches!(lookup("ControlPlaneProvider", "kamaji", tag), Release::Known(s) if s.contract == contract);
        speaks && kamaji_provider_core(tag).is_some_and(|f| f.minor <= core_minor)
    })
}

/// `v1.2.3` -> (1, 2, 3).
pub fn semver(text: &str) -> Option<(u64, u64, u64)> {
    let t = text.strip_prefix('v')?;
    let t = t.split(['-', '+']).next()?;
    let mut parts = t.split('.').map(|p| p.parse::<u64>().ok());
    let v = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(v)
}

/// What the table says about a provider release.
#[derive(Debug, Clone, Copy)]
pub enum Release {
    /// A known release series.
    Known(&'static Series),
    /// A known provider, but not this release (or no `vX.Y.Z` version).
    Unknown,
    /// A provider the table does not track.
    Untracked,
}

/// Looks a provider release up in the table.
pub fn lookup(kind: &str, name: &str, version: &str) -> Release {
    let mut known = RELEASES.iter().filter(|s| s.kind == kind && s.name == name).peekable();
    if known.peek().is_none() {
        return Release::Untracked;
    }
    let Some((major, minor, _)) = semver(version) else {
        return Release::Unknown;
    };
    known
        .find(|s| s.major == major && s.minors.contains(&minor))
        .map_or(Release::Unknown, Release::Known)
}

/// `v1beta1` or `v1beta2`.
pub fn contract_str(c: Contract) -> &'static str {
    match c {
        Contract::V1beta1 => "v1beta1",
        Contract::V1beta2 => "v1beta2",
    }
}

/// The table's release series of one provider, e.g. `v0.1-v0.19 (v1beta1), v0.20-v0.20 (v1beta2)`.
pub fn known_releases(kind: &str, name: &str) -> String {
    RELEASES
        .iter()
        .filter(|s| s.kind == kind && s.name == name)
        .map(|s| {
            format!(
                "v{m}.{a}-v{m}.{b} ({c})",
                m = s.major,
                a = s.minors.start(),
                b = s.minors.end(),
                c = contract_str(s.contract)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_knows_the_releases_the_platform_uses() {
        let contract = |kind, name, version| match lookup(kind, name, version) {
            Release::Known(s) => Some(s.contract),
            _ => None,
        };
        assert_eq!(
            contract("ControlPlaneProvider", "kamaji", "v0.20.0"),
            Some(Contract::V1beta2)
        );
        assert_eq!(
            contract("ControlPlaneProvider", "kamaji", "v0.19.2"),
            Some(Contract::V1beta1)
        );
        assert_eq!(
            contract("InfrastructureProvider", "proxmox", "v0.9.0"),
            Some(Contract::V1beta2)
        );
        assert_eq!(
            contract("InfrastructureProvider", "hetzner", "v1.1.8"),
            Some(Contract::V1beta1)
        );
        assert_eq!(
            contract("CoreProvider", "cluster-api", "v1.10.4"),
            Some(Contract::V1beta1)
        );
        assert_eq!(
            contract("CoreProvider", "cluster-api", "v1.11.0"),
            Some(Contract::V1beta2)
        );
        assert!(matches!(
            lookup("ControlPlaneProvider", "kamaji", "v0.99.0"),
            Release::Unknown
        ));
        assert!(matches!(
            lookup("InfrastructureProvider", "gcp", "v1.11.0"),
            Release::Untracked
        ));
        assert_eq!(
            contract("InfrastructureProvider", "vsphere", "v1.16.1"),
            Some(Contract::V1beta2)
        );
        assert_eq!(
            contract("InfrastructureProvider", "vsphere", "v1.15.3"),
            Some(Contract::V1beta1)
        );
        assert_eq!(
            contract("InfrastructureProvider", "openstack", "v0.14.7"),
            Some(Contract::V1beta1)
        );
    }

    #[test]
    fn the_kamaji_provider_needs_the_core_its_go_mod_names_within_its_contract() {
        let floor = |v| kamaji_provider_core(v).map(|f| (f.built_against, f.minor));
        assert_eq!(floor("v0.20.0"), Some(("v1.13.2", 13)));
        // Built against v1.11.6, but only its v1beta1 API: the v1beta1 core v1.10 runs it.
        assert_eq!(floor("v0.19.0"), Some(("v1.11.6", 10)));
        assert_eq!(floor("v0.15.3"), Some(("v1.10.3", 10)));
        assert_eq!(floor("v0.1.0").map(|f| f.1), Some(4));
        assert_eq!(floor("v0.21.0"), None);
        assert_eq!(newest_kamaji_provider_for(Contract::V1beta2, 12), None);
        assert_eq!(newest_kamaji_provider_for(Contract::V1beta2, 14), Some("v0.20.0"));
        assert_eq!(newest_kamaji_provider_for(Contract::V1beta1, 10), Some("v0.19.0"));
        assert_eq!(newest_kamaji_provider_for(Contract::V1beta1, 9), Some("v0.14.2"));
    }
}
