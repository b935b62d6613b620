//! Where the rendered tree puts things: the one home of the paths `render` writes and every
//! command reads (`commit`, `pr`, `publish`, `status`, `wait`, the caches), of the names of the
//! Flux entry points, and of the OCI artifact contract (which file names a tenant's artifact,
//! which files go into it). Pure: strings in, strings out.
//!
//! ```text
//! overlays/platform/              the platform layer            (kaas.yaml)
//! overlays/platform/kamaji/       the Kamaji release, applied before the rest of the platform
//! overlays/tenants/<t>/           one overlay per tenant        (tenants/<t>.yaml)
//! overlays/tenants/<t>/access/    applied inside the tenant cluster
//! flux/kustomization.yaml         Flux's entry point, listing the files below
//! flux/kustomization-kaas-kamaji.yaml, flux/kustomization-kaas-platform.yaml,
//! flux/kustomization-kaas-tenant-<t>.yaml
//! flux/ocirepository-kaas-tenant-<t>.yaml     (delivery.mode: oci) names <t>'s artifact
//! base/platform/, base/tenant/    people's own resources, referenced by every overlay
//! ```
//!
//! With several management clusters (kaas.yaml `spec.managementClusters`) the default one keeps
//! `flux/` and every other one `<mc>` gets the same files for its own tenants in `flux/<mc>/`;
//! the overlays stay where they are (tenant names are unique fleet-wide, and every management
//! cluster applies the one platform layer).

/// The folder of every overlay.
pub const OVERLAYS: &str = "overlays";
/// The platform layer's overlay.
pub const PLATFORM_DIR: &str = "overlays/platform";
/// The part of the platform layer Flux applies first: the Kamaji release and what it needs to
/// install. A folder of its own with its own `kustomization.yaml`, which the platform overlay's
/// does not list (its own Flux Kustomization applies it).
pub const KAMAJI_DIR: &str = "overlays/platform/kamaji";
/// The folder of the tenant overlays.
pub const TENANTS_DIR: &str = "overlays/tenants";
/// Flux's entry points.
pub const FLUX_DIR: &str = "flux";
/// People's resources added to every tenant overlay (and to every tenant artifact).
pub const BASE_TENANT_DIR: &str = "base/tenant";
/// Every overlay folder's index.
pub const KUSTOMIZATION: &str = "kustomization.yaml";
/// The second header line of a tenant overlay's `kustomization.yaml`: the hash of the inputs it
/// was rendered from (a later run skips the tenant when it is unchanged).
pub const INPUT_HASH_PREFIX: &str = "# kaas-gitops-input: ";

/// `overlays/tenants/<tenant>`.
pub fn tenant_dir(tenant: &str) -> String {
    format!("{TENANTS_DIR}/{tenant}")
}

/// `overlays/tenants/<tenant>/`: the prefix of every file of the tenant's overlay.
pub fn tenant_prefix(tenant: &str) -> String {
    format!("{TENANTS_DIR}/{tenant}/")
}

/// `overlays/tenants/<tenant>/kustomization.yaml`, or the platform layer's for `None`.
pub fn overlay_index(tenant: Option<&str>) -> String {
    match tenant {
        Some(t) => format!("{TENANTS_DIR}/{t}/{KUSTOMIZATION}"),
        None => format!("{PLATFORM_DIR}/{KUSTOMIZATION}"),
    }
}

/// The tenant whose overlay holds `path`.
pub fn tenant_of(path: &str) -> Option<&str> {
    let rest = path.strip_prefix(TENANTS_DIR)?.strip_prefix('/')?;
    rest.split_once('/').map(|(t, _)| t).filter(|t| !t.is_empty())
}

/// A file of the platform layer's overlay.
pub fn in_platform(path: &str) -> bool {
    path.strip_prefix(PLATFORM_DIR).is_some_and(|r| r.starts_with('/'))
}

/// The Flux Kustomization file of the platform layer (`kaas-kamaji`, `kaas-platform`), in any
/// management cluster's entry point.
pub fn is_platform_flux_file(path: &str) -> bool {
    flux_entry_name(path).is_some_and(|n| {
        platform_kustomization_names()
            .iter()
            .any(|k| n.strip_suffix(".yaml") == Some(kustomization_file(k).as_str()))
    })
}

/// A DataStore the platform layer renders (`overlays/platform/datastore-<name>.yaml`, the file
/// name of every rendered object: `<kind>-<name>.yaml`), whose driver a later render must keep.
pub fn is_platform_datastore(path: &str) -> bool {
    path.strip_prefix(PLATFORM_DIR)
        .and_then(|f| f.strip_prefix("/datastore-"))
        .is_some_and(|f| f.ends_with(".yaml") && !f.contains('/'))
}

/// A file under `flux/`.
pub fn in_flux(path: &str) -> bool {
    path.strip_prefix(FLUX_DIR).is_some_and(|r| r.starts_with('/'))
}

/// A file `render` owns: under `overlays/` or `flux/`.
pub fn is_rendered(path: &str) -> bool {
    path.strip_prefix(OVERLAYS).is_some_and(|r| r.starts_with('/')) || in_flux(path)
}

/// The folder of a management cluster's Flux entry point: `flux/` for the default one
/// (`None`), `flux/<mc>/` for the others.
pub fn flux_dir(mc: Option<&str>) -> String {
    match mc {
        None => FLUX_DIR.to_string(),
        Some(m) => format!("{FLUX_DIR}/{m}"),
    }
}

/// The folder of the entry point holding `path` (`flux` or `flux/<mc>`), for a file of one.
pub fn entry_point_of(path: &str) -> Option<&str> {
    let name = flux_entry_name(path)?;
    Some(&path[..path.len() - name.len() - 1])
}

/// The file name of a Flux entry point file, whichever management cluster's folder holds it:
/// `flux/x.yaml` and `flux/<mc>/x.yaml` give `x.yaml`.
fn flux_entry_name(path: &str) -> Option<&str> {
    let rest = path.strip_prefix(FLUX_DIR)?.strip_prefix('/')?;
    match rest.split_once('/') {
        None => Some(rest),
        Some((mc, name)) if !mc.is_empty() && !name.contains('/') => Some(name),
        Some(_) => None,
    }
}

/// The Flux Kustomization of the platform layer (everything but [`KAMAJI_DIR`]).
pub fn platform_kustomization_name() -> &'static str {
    "kaas-platform"
}

/// The Flux Kustomization of [`KAMAJI_DIR`], which the platform's depends on.
pub fn kamaji_kustomization_name() -> &'static str {
    "kaas-kamaji"
}

/// The Flux Kustomizations of the platform layer, in the order Flux applies them.
pub fn platform_kustomization_names() -> [&'static str; 2] {
    [kamaji_kustomization_name(), platform_kustomization_name()]
}

/// The Flux Kustomization of a tenant.
pub fn tenant_kustomization_name(tenant: &str) -> String {
    format!("kaas-tenant-{tenant}")
}

/// The file name (without `.yaml`) of a Flux Kustomization named `name`.
pub fn kustomization_file(name: &str) -> String {
    format!("kustomization-{name}")
}

/// The file name (without `.yaml`) of a tenant's Flux Kustomization.
pub fn tenant_kustomization_file(tenant: &str) -> String {
    kustomization_file(&tenant_kustomization_name(tenant))
}

/// The tenant whose Flux Kustomization `path` is, given the fleet's tenants.
pub fn tenant_of_flux_entry<'a>(path: &str, tenants: impl IntoIterator<Item = &'a String>) -> Option<&'a String> {
    let stem = flux_entry_name(path)?.strip_suffix(".yaml")?;
    tenants.into_iter().find(|t| tenant_kustomization_file(t) == stem)
}

/// The tenant named by a Flux Kustomization's file, read from the name alone.
pub fn tenant_of_flux_file(path: &str) -> Option<&str> {
    flux_entry_name(path)?
        .strip_prefix("kustomization-")?
        .strip_suffix(".yaml")?
        .strip_prefix("kaas-tenant-")
}

/// The files of a tenant `render` owns: its overlay, its Flux Kustomization and (with
/// `delivery.mode: oci`) its OCIRepository, in `flux_dir` ([`flux_dir`]).
pub fn tenant_owned(tenant: &str, flux_dir: &str) -> [String; 3] {
    [
        tenant_prefix(tenant),
        format!("{flux_dir}/{}.yaml", tenant_kustomization_file(tenant)),
        format!("{flux_dir}/{}.yaml", tenant_oci_repository_file(tenant)),
    ]
}

/// The OCI artifact contract (`spec.flux.delivery.mode: oci`): a tenant's artifact is named by
/// its OCIRepository in `flux/` and holds its overlay and `base/tenant/`.
pub mod artifact {
    use super::{BASE_TENANT_DIR, tenant_kustomization_name, tenant_prefix};

    /// Flux's artifact content media type (fluxcd/pkg `oci/globals.go`,
    /// `CanonicalContentMediaType`); the rendered OCIRepository selects the layer by it.
    pub const CONTENT_MEDIA_TYPE: &str = "application/vnd.cncf.flux.content.v1.tar+gzip";

    /// How the file name of every tenant's OCIRepository starts.
    pub const REPOSITORY_FILE_PREFIX: &str = "ocirepository-";

    /// The file name (without `.yaml`) of a tenant's OCIRepository.
    pub fn repository_file(tenant: &str) -> String {
        format!("ocirepository-{}", tenant_kustomization_name(tenant))
    }

    /// A file that names a tenant's artifact: an OCIRepository in a management cluster's Flux
    /// entry point (`flux/` or `flux/<mc>/`).
    pub fn names_one(path: &str) -> bool {
        super::flux_entry_name(path).is_some_and(|n| n.starts_with(REPOSITORY_FILE_PREFIX))
    }

    /// A file that goes into `tenant`'s artifact.
    pub fn holds(tenant: &str, path: &str) -> bool {
        path.starts_with(&tenant_prefix(tenant)) || in_base(path)
    }

    /// A file of `base/tenant/`, which every tenant's artifact holds.
    fn in_base(path: &str) -> bool {
        path.strip_prefix(BASE_TENANT_DIR).is_some_and(|r| r.starts_with('/'))
    }

    /// A file some artifact may need: those that name artifacts and those they hold.
    pub fn wanted(path: &str) -> bool {
        names_one(path) || super::tenant_of(path).is_some() || in_base(path)
    }
}

/// The file name (without `.yaml`) of a tenant's OCIRepository (`delivery.mode: oci`).
pub fn tenant_oci_repository_file(tenant: &str) -> String {
    artifact::repository_file(tenant)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_their_owners() {
        assert_eq!(tenant_dir("acme"), "overlays/tenants/acme");
        assert_eq!(tenant_of("overlays/tenants/acme/cluster-acme.yaml"), Some("acme"));
        assert_eq!(tenant_of("overlays/tenants/acme/access/x.yaml"), Some("acme"));
        assert_eq!(tenant_of("overlays/tenants/acme"), None);
        assert_eq!(tenant_of("overlays/tenantsx/acme/a.yaml"), None);
        assert_eq!(tenant_of("overlays/platform/a.yaml"), None);
        assert!(in_platform("overlays/platform/kustomization.yaml"));
        assert!(!in_platform("overlays/platformx/a.yaml"));
        assert!(in_platform(&format!("{KAMAJI_DIR}/{KUSTOMIZATION}")));
        assert!(is_rendered("flux/kustomization.yaml") && is_rendered("overlays/tenants/a/b.yaml"));
        assert!(!is_rendered("fluxy/a.yaml") && !is_rendered("tenants/a.yaml"));
        assert_eq!(overlay_index(Some("a")), "overlays/tenants/a/kustomization.yaml");
        assert_eq!(overlay_index(None), "overlays/platform/kustomization.yaml");
        assert_eq!(
            tenant_owned("acme", &flux_dir(Some("us-1")))[1],
            "flux/us-1/kustomization-kaas-tenant-acme.yaml"
        );
        assert_eq!(
            tenant_of_flux_file("flux/kustomization-kaas-tenant-acme.yaml"),
            Some("acme")
        );
        assert_eq!(tenant_of_flux_file("flux/kustomization-kaas-platform.yaml"), None);
        assert_eq!(
            tenant_of_flux_file("flux/us-east/kustomization-kaas-tenant-acme.yaml"),
            Some("acme")
        );
        assert_eq!(
            tenant_of_flux_file("flux/a/b/kustomization-kaas-tenant-acme.yaml"),
            None
        );
        assert!(is_platform_datastore("overlays/platform/datastore-pg-gold.yaml"));
        assert!(!is_platform_datastore("overlays/platform/kamaji/datastore-x.yaml"));
        assert!(!is_platform_datastore("overlays/tenants/a/datastore-x.yaml"));
        assert_eq!(flux_dir(None), "flux");
        assert_eq!(entry_point_of("flux/kustomization.yaml"), Some("flux"));
        assert_eq!(entry_point_of("flux/eu/kustomization.yaml"), Some("flux/eu"));
        assert_eq!(entry_point_of("overlays/platform/kustomization.yaml"), None);
        assert_eq!(flux_dir(Some("us-east")), "flux/us-east");
        assert_eq!(tenant_of_flux_file("flux/kustomization-kaas-kamaji.yaml"), None);
        let tenants = ["acme".to_string(), "globex".to_string()];
        assert_eq!(
            tenant_of_flux_entry("flux/kustomization-kaas-tenant-globex.yaml", &tenants),
            Some(&tenants[1])
        );
    }

    #[test]
    fn the_artifact_contract() {
        assert!(artifact::names_one("flux/ocirepository-kaas-tenant-acme.yaml"));
        assert!(artifact::names_one("flux/eu-west/ocirepository-kaas-tenant-acme.yaml"));
        assert!(!artifact::names_one("flux/x/y/ocirepository-kaas-tenant-acme.yaml"));
        assert!(!artifact::names_one("flux/kustomization-kaas-tenant-acme.yaml"));
        assert!(artifact::holds("acme", "overlays/tenants/acme/kustomization.yaml"));
        assert!(artifact::holds("acme", "base/tenant/extra.yaml"));
        assert!(!artifact::holds("acme", "overlays/tenants/acmex/kustomization.yaml"));
        assert!(!artifact::holds("acme", "base/platform/extra.yaml"));
        assert!(artifact::wanted("flux/ocirepository-kaas-tenant-acme.yaml"));
        assert!(!artifact::wanted("flux/kustomization-kaas-tenant-acme.yaml"));
        assert!(!artifact::wanted("overlays/platform/a.yaml"));
    }
}
