//! The fleet's provider objects (cluster-api-operator `*Provider`), the API versions of its
//! objects and the platform's `clusterApi.contract` must agree with the table of known releases
//! ([`crate::model::releases::providers`]: the contract each release speaks, from the providers'
//! `metadata.yaml`, and the API versions it serves).

use std::collections::BTreeMap;

use crate::model::releases::providers::{
    Release, Series, contract_str, kamaji_provider_core, known_releases, lookup, semver,
};
use crate::model::{Contract, Platform};
use crate::validate::{Check, Finding, Fleet, Manifest, error, warning};

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
    out.extend(served_versions(fleet, &installed));
    out.extend(kubeadm_reads_control_plane(fleet, &installed, platform));
    out.extend(core_older_than_kamaji_needs(&installed, platform));
    out
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

/// Objects whose API version the installed release does not serve. Reported once per apiVersion
/// and kind, at the first object.
fn served_versions(fleet: &Fleet, installed: &[Installed<'_>]) -> Vec<Finding> {
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
            // Without a provider object of the fleet, nothing is known to serve or not serve it
            // (kaas.yaml's contract is always v1beta2: `model::build::compatibility`).
            None => continue,
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

/// The fleet's Kamaji provider release on a core older than the one it was built against
/// ([`kamaji_provider_core`], from its `go.mod`): `model::build` refuses that in kaas.yaml, this
/// catches a fleet edited by hand or rendered from another kaas.yaml. The core is the fleet's
/// `CoreProvider` when there is one, else kaas.yaml's `coreVersion`; a contract mismatch is
/// reported by [`against_platform`] instead.
fn core_older_than_kamaji_needs(installed: &[Installed<'_>], platform: Option<&Platform>) -> Option<Finding> {
    let kamaji = installed
        .iter()
        .find(|i| i.series.kind == "ControlPlaneProvider" && i.series.name == "kamaji")?;
    let (core, from) = match installed.iter().find(|i| i.series.kind == "CoreProvider") {
        Some(c) if c.series.contract != kamaji.series.contract => return None,
        Some(c) => (c.version.clone(), "the fleet's CoreProvider"),
        None => {
            let p = platform?;
            if p.contract != kamaji.series.contract {
                return None;
            }
            (
                p.management.cluster_api.clone(),
                "kaas.yaml `spec.clusterApi.coreVersion`",
            )
        }
    };
    let floor = kamaji_provider_core(&kamaji.version)?;
    let (1, minor, _) = semver(&core)? else {
        return None;
    };
    (minor < floor.minor).then(|| {
        error(
            Check::Contract,
            kamaji.object,
            "spec.version",
            format!(
                "`kamaji` {} needs Cluster API v1.{} or newer, but the core is {core} ({from}) (release table: provider {} was built against `sigs.k8s.io/cluster-api` {} in its go.mod)",
                kamaji.version, floor.minor, kamaji.version, floor.built_against
            ),
        )
        .with_hint(format!(
            "move the core to v1.{} or newer, or install a Kamaji provider release built for {core}",
            floor.minor
        ))
    })
}
