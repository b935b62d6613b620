//! The Cluster API contract each known provider release speaks, read from the providers'
//! `metadata.yaml` (`releaseSeries`), and the API versions it serves. The fleet's provider
//! objects (cluster-api-operator `*Provider`), the API versions of its objects and the
//! platform's `clusterApi.contract` must agree.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

use crate::model::{Contract, Platform};
use crate::validate::{Check, Finding, Fleet, Manifest, error, warning};

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

const CORE: &str = "cluster.x-k8s.io";
const INFRA: &str = "infrastructure.cluster.x-k8s.io";
const CP: &str = "controlplane.cluster.x-k8s.io";
const BOOTSTRAP: &str = "bootstrap.cluster.x-k8s.io";

/// Known releases, from each provider's `metadata.yaml` (`releaseSeries`). Cluster API moved to
/// the v1beta2 contract in v1.11; Kamaji's control plane provider in v0.20 (API `v1alpha2`);
/// CAPMOX in v0.8 (API `v1alpha2`), CAPK in v0.11, metal-stack in v0.8; CAPH, CAPX, CAPP and
/// CAPA speak v1beta1 in the releases listed.
#[rustfmt::skip]
pub const RELEASES: &[Series] = &[
    series("CoreProvider", "cluster-api", 1, 0..=10, Contract::V1beta1, CORE, "", &["v1beta1"]),
    series("CoreProvider", "cluster-api", 1, 11..=14, Contract::V1beta2, CORE, "", &["v1beta1", "v1beta2"]),
    series("BootstrapProvider", "kubeadm", 1, 0..=10, Contract::V1beta1, BOOTSTRAP, "Kubeadm", &["v1beta1"]),
    series("BootstrapProvider", "kubeadm", 1, 11..=14, Contract::V1beta2, BOOTSTRAP, "Kubeadm", &["v1beta1", "v1beta2"]),
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

/// `v1.2.3` -> (1, 2, 3).
fn semver(text: &str) -> Option<(u64, u64, u64)> {
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

fn contract_str(c: Contract) -> &'static str {
    match c {
        Contract::V1beta1 => "v1beta1",
        Contract::V1beta2 => "v1beta2",
    }
}

/// A provider object of the fleet and its release.
struct Installed<'a> {
    object: &'a Manifest,
    version: String,
    series: &'static Series,
}

/// Every contract rule.
pub fn check(fleet: &Fleet, platform: Option<&Platform>) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut installed: Vec<Installed<'_>> = Vec::new();
    for o in &fleet.objects {
        if o.group() != "operator.cluster.x-k8s.io" || !o.kind.ends_with("Provider") {
            continue;
        }
        let Some(version) = o.pointer_str("/spec/version") else {
            continue;
        };
        match lookup(&o.kind, &o.name, version) {
            // Core, bootstrap and control plane providers other than the ones kaas-gitops renders
            // are the platform team's own business; an infrastructure provider is a tenant's.
            Release::Untracked if o.kind != "InfrastructureProvider" => {}
            Release::Untracked => out.push(
                warning(
                    Check::Contract,
                    o,
                    "metadata.name",
                    format!("infrastructure provider `{}` is not in the table of known releases; its Cluster API contract was not checked", o.name),
                )
                .with_hint("check the provider's metadata.yaml (`releaseSeries`) against `spec.clusterApi.contract`"),
            ),
            Release::Unknown => out.push(
                warning(
                    Check::Contract,
                    o,
                    "spec.version",
                    format!("`{}` {version} is not in the table of known releases; its Cluster API contract was not checked", o.name),
                )
                .with_hint(format!("known: {}", known_releases(&o.kind, &o.name))),
            ),
            Release::Known(series) => installed.push(Installed {
                object: o,
                version: version.to_string(),
                series,
            }),
        }
    }
    if let Some(p) = platform {
        for i in &installed {
            out.extend(against_platform(i, p.contract));
        }
    }
    out.extend(served_versions(fleet, &installed, platform));
    out.extend(kubeadm_reads_control_plane(fleet, &installed, platform));
    out
}

fn known_releases(kind: &str, name: &str) -> String {
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

/// A provider's contract against the management cluster's.
fn against_platform(i: &Installed<'_>, platform: Contract) -> Option<Finding> {
    let speaks = i.series.contract;
    if speaks == platform {
        return None;
    }
    let name = &i.object.name;
    let message = format!(
        "`{name}` {} speaks Cluster API contract {}, but kaas.yaml `spec.clusterApi.contract` is {}",
        i.version,
        contract_str(speaks),
        contract_str(platform)
    );
    Some(match (speaks, i.series.kind) {
        // The core provider *is* the management cluster's contract; a newer provider cannot
        // run on an older core.
        (_, "CoreProvider") | (Contract::V1beta2, _) => error(Check::Contract, i.object, "spec.version", message).with_hint(
            "use a release that speaks the platform's contract, or change `clusterApi.contract` together with the Cluster API version",
        ),
        (Contract::V1beta1, _) => warning(Check::Contract, i.object, "spec.version", message)
            .with_hint("Cluster API v1.11+ still runs v1beta1-contract providers, but that support is deprecated; upgrade the provider"),
    })
}

/// Objects whose API version the installed (or, without one, the platform's) release does not
/// serve. Reported once per apiVersion and kind, at the first object.
fn served_versions(fleet: &Fleet, installed: &[Installed<'_>], platform: Option<&Platform>) -> Vec<Finding> {
    let mut first: BTreeMap<(&str, &str), (&Manifest, usize)> = BTreeMap::new();
    let mut reasons: BTreeMap<(&str, &str), String> = BTreeMap::new();
    for o in fleet.rendered() {
        let owner = installed
            .iter()
            .find(|i| i.series.group == o.group() && o.kind.starts_with(i.series.kind_prefix));
        let why = match owner {
            Some(i) if !i.series.versions.contains(&o.version()) => format!(
                "`{}` {} serves {} of `{}`, not `{}`",
                i.object.name,
                i.version,
                i.series.versions.join(", "),
                o.group(),
                o.version()
            ),
            Some(_) => continue,
            None => match platform {
                // Without a core provider object, kaas.yaml's contract says what Cluster API serves.
                Some(p)
                    if p.contract == Contract::V1beta1
                        && [CORE, BOOTSTRAP].contains(&o.group())
                        && o.version() == "v1beta2" =>
                {
                    format!(
                        "`{}/v1beta2` needs Cluster API v1.11+, but kaas.yaml `spec.clusterApi.contract` is v1beta1",
                        o.group()
                    )
                }
                _ => continue,
            },
        };
        let key = (o.api_version.as_str(), o.kind.as_str());
        first.entry(key).or_insert((o, 0)).1 += 1;
        reasons.entry(key).or_insert(why);
    }
    first
        .into_iter()
        .map(|(key, (o, count))| {
            let more = if count > 1 {
                format!(" (and {} more)", count - 1)
            } else {
                String::new()
            };
            error(Check::Contract, o, "apiVersion", format!("{}{more}", reasons[&key]))
                .with_hint("render with the apiVersion the installed provider serves, or upgrade the provider")
        })
        .collect()
}

/// Since Cluster API v1.14 the kubeadm bootstrap controller reads the control plane object
/// (cluster-api v1.14.0 `bootstrap/kubeadm/reconcilers/kubeadmconfig/kubeadmconfig_controller.go`,
/// `getControlPlaneVersion` from `joinWorker`); Kamaji's provider up to v0.20.0 ships no RBAC for
/// that (see `model::bootstrap_rbac`), so workers never join unless the fleet grants it. The
/// core release is the `CoreProvider` object's when the fleet has one, else kaas.yaml's
/// `spec.clusterApi.coreVersion` (the core is usually installed outside the fleet).
fn kubeadm_reads_control_plane(
    fleet: &Fleet,
    installed: &[Installed<'_>],
    platform: Option<&Platform>,
) -> Option<Finding> {
    use crate::model::bootstrap_rbac::{BOOTSTRAP_NAMESPACE, BOOTSTRAP_SERVICE_ACCOUNT, READER_NAME, needs_reader};
    let kamaji = installed
        .iter()
        .find(|i| i.series.kind == "ControlPlaneProvider" && i.series.name == "kamaji")?;
    let (core, from) = match installed.iter().find(|i| i.series.kind == "CoreProvider") {
        Some(c) => (c.version.clone(), "the fleet's CoreProvider"),
        None => (
            platform?.management.cluster_api.clone(),
            "kaas.yaml `spec.clusterApi.coreVersion`",
        ),
    };
    if !needs_reader(&core, &kamaji.version) {
        return None;
    }
    let subject = |s: &serde_json::Value| {
        s["kind"] == "ServiceAccount" && s["name"] == BOOTSTRAP_SERVICE_ACCOUNT && s["namespace"] == BOOTSTRAP_NAMESPACE
    };
    let bound = fleet.objects.iter().any(|o| {
        o.kind == "ClusterRoleBinding"
            && o.pointer("/subjects")
                .and_then(|s| s.as_array())
                .is_some_and(|s| s.iter().any(subject))
    });
    (!bound).then(|| {
        error(
            Check::Contract,
            kamaji.object,
            "spec.version",
            format!(
                "Cluster API {core} ({from}) has the kubeadm bootstrap controller read KamajiControlPlane, and `kamaji` {} ships no RBAC for it: workers never join",
                kamaji.version
            ),
        )
        .with_hint(format!("render again (kaas-gitops renders the ClusterRoleBinding `{READER_NAME}`, which base/platform must not remove), or bind ServiceAccount `{BOOTSTRAP_NAMESPACE}/{BOOTSTRAP_SERVICE_ACCOUNT}` to ClusterRole `capi-kamaji-capi-kamaji-control-plane-role` (the provider's own role)"))
    })
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
            lookup("InfrastructureProvider", "vsphere", "v1.0.0"),
            Release::Untracked
        ));
    }
}
