//! `spec.clusterApi` against the table of known releases ([`crate::model::releases::providers`]):
//! the core, the Kamaji control plane provider and every infrastructure provider must speak
//! `spec.clusterApi.contract`, and the core must be at least the one the Kamaji provider was
//! built against. Each refusal is at the field that breaks the table and names the row.
//!
//! Only what cannot run is refused here. A v1beta1-contract infrastructure provider on a v1beta2
//! core runs (Cluster API v1.11+ still serves it, deprecated): `validate` warns about it at the
//! rendered provider object. What can never run is `contract: v1beta1` itself and a Kamaji
//! provider before v0.20: kaas-gitops renders `cluster.x-k8s.io/v1beta2` objects and
//! `controlplane.cluster.x-k8s.io/v1alpha2` KamajiControlPlanes (`render::objects`), which
//! Cluster API serves from v1.11 and the Kamaji provider from v0.20.0 (its `config/metadata.yaml`
//! and `api/v1alpha2/` at v0.20.0); v0.20.0 was built against Cluster API v1.13 (its go.mod), so
//! a working fleet needs `contract: v1beta2` with a v1.13 or newer core.

use crate::diagnostics::Diagnostic;
use crate::model::Contract;
use crate::model::releases::providers::{
    Release, Series, contract_str, kamaji_provider_core, known_releases, lookup, newest_kamaji_provider_for, semver,
};
use crate::spec::raw::PlatformSpec;
use crate::spec::source::Source;

const CONTRACT_FIELD: &str = "spec.clusterApi.contract";
const CORE_FIELD: &str = "spec.clusterApi.coreVersion";
const CP_FIELD: &str = "spec.clusterApi.controlPlaneProvider.version";
/// The KamajiControlPlane API version kaas-gitops renders (`render::objects::controlplane`).
const KCP_VERSION: &str = "v1alpha2";

/// Every incompatibility of `spec.clusterApi` with `contract` and the core release `core`
/// (`coreVersion`, defaults applied).
pub(crate) fn errors(src: &Source, spec: &PlatformSpec, contract: Contract, core: &str) -> Vec<Diagnostic> {
    if contract == Contract::V1beta1 {
        // The one cause worth reading: every row below would fail against it too.
        return vec![
            src.error(
                CONTRACT_FIELD,
                "a v1beta1 management cluster cannot run a kaas-gitops fleet: kaas-gitops renders `cluster.x-k8s.io/v1beta2` Clusters and MachineDeployments, which Cluster API serves from v1.11 (the v1beta2 contract), and `controlplane.cluster.x-k8s.io/v1alpha2` KamajiControlPlanes, which the Kamaji control plane provider serves from v0.20.0, a v1beta2-contract release",
            )
            .with_hint(format!(
                "write `contract: v1beta2` (the default) with a `coreVersion` of v1.13 or newer (the release the Kamaji provider v0.20.0 was built against); known core releases: {}",
                known_releases("CoreProvider", "cluster-api")
            )),
        ];
    }
    let mut out = Vec::new();
    let core_speaks = match lookup("CoreProvider", "cluster-api", core) {
        Release::Known(s) => Some(s),
        _ => None,
    };
    if let Some(s) = core_speaks
        && s.contract != contract
    {
        out.push(
            src.error(
                CORE_FIELD,
                format!(
                    "Cluster API {core} speaks contract {}, but `spec.clusterApi.contract` is {} (release table: {})",
                    contract_str(s.contract),
                    contract_str(contract),
                    row(s)
                ),
            )
            .with_hint(format!(
                "set `coreVersion` to a release of the {} contract; known core releases: {}",
                contract_str(contract),
                known_releases("CoreProvider", "cluster-api")
            )),
        );
    }

    let cp = &spec.cluster_api.control_plane_provider.version;
    let cp_agrees = provider(src, CP_FIELD, "ControlPlaneProvider", "kamaji", cp, contract, &mut out);
    for (name, version) in &spec.cluster_api.infrastructure_providers {
        let field = format!("spec.clusterApi.infrastructureProviders.{name}");
        provider(src, &field, "InfrastructureProvider", name, version, contract, &mut out);
    }

    // The core the Kamaji provider was built against, once both speak the platform's contract
    // (a contract mismatch is the one cause worth reading).
    if cp_agrees
        && core_speaks.is_some_and(|s| s.contract == contract)
        && let (Some(floor), Some((1, core_minor, _))) = (kamaji_provider_core(cp), semver(core))
        && core_minor < floor.minor
    {
        let instead = match newest_kamaji_provider_for(contract, core_minor) {
            Some(tag) => format!(
                ", or `controlPlaneProvider.version` to {tag} (the newest release that runs on v1.{core_minor})"
            ),
            None => format!(
                "; no Kamaji provider release of the {} contract runs on v1.{core_minor}",
                contract_str(contract)
            ),
        };
        // v0.18 and v0.19 were built against v1.11 but use only its v1beta1 API.
        let only = match semver(floor.built_against) {
            Some((_, built, _)) if built > floor.minor => format!(
                ", of which it uses only the {} API, served from v1.{}",
                contract_str(contract),
                floor.minor
            ),
            _ => String::new(),
        };
        out.push(
            src.error(
                CORE_FIELD,
                format!(
                    "Cluster API {core} is older than the Kamaji control plane provider {cp} needs: v1.{} or newer (release table: provider {cp} was built against `sigs.k8s.io/cluster-api` {} in its go.mod{only})",
                    floor.minor, floor.built_against
                ),
            )
            .with_hint(format!(
                "set `coreVersion` to a v1.{} or newer release of the {} contract{instead}",
                floor.minor,
                contract_str(contract)
            )),
        );
    }
    out
}

/// A provider release against the platform's contract (always v1beta2 here): a Kamaji provider
/// that does not serve the KamajiControlPlane version kaas-gitops renders is an error. Returns
/// whether it speaks `contract` (`true` for a release the table does not know: nothing is known
/// against it).
fn provider(
    src: &Source,
    field: &str,
    kind: &str,
    name: &str,
    version: &str,
    contract: Contract,
    out: &mut Vec<Diagnostic>,
) -> bool {
    let Release::Known(s) = lookup(kind, name, version) else {
        return true;
    };
    if kind == "ControlPlaneProvider" && !s.versions.contains(&KCP_VERSION) {
        out.push(
            src.error(
                field,
                format!(
                    "the Kamaji control plane provider {version} serves {} of `controlplane.cluster.x-k8s.io`, but kaas-gitops renders KamajiControlPlane {KCP_VERSION} (release table: {})",
                    s.versions.join(", "),
                    row(s)
                ),
            )
            .with_hint(format!(
                "use v0.20.0 or newer; known `{name}` releases: {}",
                known_releases(kind, name)
            )),
        );
        return false;
    }
    s.contract == contract
}

/// One row of the table, as a user reads it: `kamaji v0.20-v0.20 speaks v1beta2`.
fn row(s: &Series) -> String {
    format!(
        "{name} v{m}.{a}-v{m}.{b} speaks {c}, from its metadata.yaml",
        name = s.name,
        m = s.major,
        a = s.minors.start(),
        b = s.minors.end(),
        c = contract_str(s.contract)
    )
}
