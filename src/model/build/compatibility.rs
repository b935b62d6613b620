//! `spec.clusterApi` against the table of known releases ([`crate::model::provider_releases`]):
//! the core, the Kamaji control plane provider and every infrastructure provider must speak
//! `spec.clusterApi.contract`, and the core must be at least the one the Kamaji provider was
//! built against. Each refusal is at the field that breaks the table and names the row.
//!
//! Only what cannot run is refused here. A v1beta1-contract provider on a v1beta2 core runs
//! (Cluster API v1.11+ still serves it, deprecated): `validate` warns about it at the rendered
//! provider object.

use crate::diagnostics::Diagnostic;
use crate::model::Contract;
use crate::model::provider_releases::{
    Release, Series, contract_str, kamaji_provider_core, known_releases, lookup, newest_kamaji_provider_for, semver,
};
use crate::spec::raw::PlatformSpec;
use crate::spec::source::Source;

const CORE_FIELD: &str = "spec.clusterApi.coreVersion";
const CP_FIELD: &str = "spec.clusterApi.controlPlaneProvider.version";

/// Every incompatibility of `spec.clusterApi` with `contract` and the core release `core`
/// (`coreVersion`, defaults applied).
pub(crate) fn errors(src: &Source, spec: &PlatformSpec, contract: Contract, core: &str) -> Vec<Diagnostic> {
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
                "set `coreVersion` to a release of the {} contract, or `contract: {}`; known core releases: {}",
                contract_str(contract),
                contract_str(s.contract),
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

/// A provider release against the platform's contract: an error when it speaks v1beta2 on a
/// v1beta1 core (it needs APIs that core does not serve). Returns whether it speaks `contract`
/// (`true` for a release the table does not know: nothing is known against it).
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
    if s.contract == Contract::V1beta2 && contract == Contract::V1beta1 {
        out.push(
            src.error(
                field,
                format!(
                    "`{name}` {version} speaks Cluster API contract v1beta2, but `spec.clusterApi.contract` is v1beta1 (release table: {})",
                    row(s)
                ),
            )
            .with_hint(format!(
                "use a `{name}` release of the v1beta1 contract, or move the management cluster to `contract: v1beta2` with a v1.11+ `coreVersion`; known `{name}` releases: {}",
                known_releases(kind, name)
            )),
        );
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
