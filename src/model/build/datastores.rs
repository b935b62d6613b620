//! kaas.yaml's DataStores ([`crate::model::datastores`]): `spec.dataStores`, checked against
//! Kamaji 26.8.2-edge's rules (`api/v1alpha1/datastore_types.go`: the CEL rules on
//! `DataStoreSpec`), `spec.tenantDataStores`, and the kine image the SQL and NATS stores need.
//! A tenant's own choice is checked by [`tenant_overrides`] and [`nats_shared`].

use std::collections::BTreeMap;

use crate::diagnostics::Diagnostic;
use crate::model::build::fields::image_or_default;
use crate::model::build::names::is_dns1123_subdomain;
use crate::model::datastores::{
    Connection, DEFAULT_DATASTORE, DataStoreOverride, Driver, SecretKey, SharedDataStore, Tls,
};
use crate::model::{DataStore, ImageSpec, Tenant};
use crate::spec::raw;
use crate::spec::source::Source;

/// Kamaji's own `--kine-image` default (26.8.2-edge `cmd/manager/cmd.go`): a mutable tag, and
/// an amd64-only image (`pin` says so).
pub(crate) const KINE_IMAGE: (&str, &str) = ("docker.io/rancher/kine", "v0.11.10-amd64");

/// The API groups whose resources kube-apiserver itself serves: `--etcd-servers-overrides`
/// applies "only to resources compiled into this server binary" (its flag help,
/// k8s.io/apiserver `pkg/server/options/etcd.go`). `""` is the core group (`/events`).
const BUILT_IN_GROUPS: [&str; 21] = [
    "",
    "admissionregistration.k8s.io",
    "apps",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "flowcontrol.apiserver.k8s.io",
    "internal.apiserver.k8s.io",
    "networking.k8s.io",
    "node.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "resource.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
    "storagemigration.k8s.io",
];

/// What kaas.yaml says of DataStores.
pub(crate) struct PlatformDataStores {
    /// `spec.dataStores`, by name.
    pub stores: BTreeMap<String, SharedDataStore>,
    /// `spec.tenantDataStores.default`.
    pub default: Option<String>,
    /// `spec.tenantDataStores.overrides`.
    pub overrides: Vec<DataStoreOverride>,
    /// The kine image, when a store needs it.
    pub kine_image: Option<ImageSpec>,
}

/// Builds and checks `spec.dataStores`, `spec.tenantDataStores` and `spec.kamaji.kineImage`.
pub(crate) fn platform(
    src: &Source,
    spec: &raw::PlatformSpec,
    kamaji_namespace: &str,
    errs: &mut Vec<Diagnostic>,
) -> PlatformDataStores {
    let mut stores: BTreeMap<String, SharedDataStore> = BTreeMap::new();
    for (i, entry) in spec.data_stores.iter().enumerate() {
        let field = format!("spec.dataStores[{i}]");
        let (name, name_field) = match entry {
            raw::DataStoreEntry::Name(n) => (n, field.clone()),
            raw::DataStoreEntry::Declared(d) => (&d.name, format!("{field}.name")),
        };
        if !is_dns1123_subdomain(name) {
            errs.push(
                src.error(&name_field, format!("`{name}` is not a valid DataStore name"))
                    .with_hint("lower-case letters, digits, `-` and `.`"),
            );
        }
        if let Some(first) = stores.get(name) {
            errs.push(
                src.error(&name_field, format!("DataStore `{name}` is declared twice"))
                    .with_hint(format!(
                        "it is also {}; DataStores are cluster-wide: keep one",
                        first.field
                    )),
            );
            continue;
        }
        let store = match entry {
            raw::DataStoreEntry::Name(n) => SharedDataStore {
                name: n.clone(),
                // The kamaji release's bundled datastore is its kamaji-etcd.
                driver: (n == DEFAULT_DATASTORE).then_some(Driver::Etcd),
                connection: None,
                field: field.clone(),
            },
            raw::DataStoreEntry::Declared(d) => declared(src, &field, d, kamaji_namespace, errs),
        };
        stores.insert(name.clone(), store);
    }

    let td = spec.tenant_data_stores.clone().unwrap_or_default();
    if let Some(name) = &td.default {
        let field = "spec.tenantDataStores.default";
        match stores.get(name) {
            None => errs.push(unknown(src, field, name, &stores)),
            Some(s) if s.driver == Some(Driver::Nats) => errs.push(
                src.error(field, format!("`{name}` is a NATS DataStore, which serves one tenant only"))
                    .with_hint("Kamaji blocks every further TenantControlPlane on a NATS DataStore (docs: alternative datastores); name a SQL or etcd DataStore, or give one tenant `shared: {name}`"),
            ),
            Some(_) => {}
        }
    }
    let overrides = overrides(
        src,
        "spec.tenantDataStores.overrides",
        td.overrides.as_deref().unwrap_or_default(),
        &stores,
        errs,
    );
    // They apply to the tenants on the default DataStore: it must carry them.
    if !overrides.is_empty() {
        let main = td.default.as_deref().and_then(|d| stores.get(d));
        if let Some(why) = overrides_problem(main, &overrides, &stores) {
            errs.push(
                src.error("spec.tenantDataStores.overrides", why)
                    .with_hint(OVERRIDES_HINT),
            );
        }
    }

    let kine_image = stores
        .values()
        .any(|s| s.driver.is_some_and(Driver::uses_kine))
        .then(|| {
            image_or_default(
                src,
                "spec.kamaji.kineImage",
                spec.kamaji.kine_image.as_ref(),
                KINE_IMAGE,
                errs,
            )
        });
    if let Some(image) = &kine_image
        && stores.values().any(|s| s.driver == Some(Driver::Nats))
        && let Some(tag) = image.tag.as_deref().filter(|t| kine_makes_its_own_bucket(t))
    {
        errs.push(
            src.error("spec.kamaji.kineImage", format!("kine `{tag}` cannot serve a NATS DataStore made by Kamaji"))
                .with_hint("Kamaji 26.8.2-edge creates each tenant's JetStream key-value bucket itself (internal/datastore/nats.go CreateDB), and kine from v0.16.5 on creates it again with a configuration of its own and stops at \"bucket name already in use\" (kine pkg/drivers/nats/new.go; v0.14.5 and older open the existing bucket): pin kine v0.14.5 or older while the fleet has a NATS DataStore"),
        );
    }
    PlatformDataStores {
        stores,
        default: td.default,
        overrides,
        kine_image,
    }
}

/// `spec.dataStores[i]` written as a mapping.
fn declared(
    src: &Source,
    field: &str,
    d: &raw::DeclaredDataStore,
    kamaji_namespace: &str,
    errs: &mut Vec<Diagnostic>,
) -> SharedDataStore {
    let mut store = SharedDataStore {
        name: d.name.clone(),
        driver: Some(d.driver),
        connection: None,
        field: field.to_string(),
    };
    if d.endpoints.is_empty() {
        if d.basic_auth.is_some() || d.tls.is_some() || d.secrets_namespace.is_some() {
            errs.push(
                src.error(field, format!("DataStore `{}` has credentials but no `endpoints`", d.name))
                    .with_hint("give `endpoints` for kaas-gitops to render the DataStore; without them it is created elsewhere and only `name` and `driver` are declared"),
            );
        }
        return store;
    }
    for (i, e) in d.endpoints.iter().enumerate() {
        if let Some(problem) = endpoint_problem(e) {
            errs.push(
                src.error(&format!("{field}.endpoints[{i}]"), format!("`{e}` {problem}"))
                    .with_hint("write `host:port` without a scheme, e.g. `pg-rw.postgres.svc:5432`: Kamaji adds the scheme itself"),
            );
        }
    }
    let ns = d.secrets_namespace.as_deref().unwrap_or(kamaji_namespace).to_string();
    let key = |name: &str, key: Option<&String>, default: &str| SecretKey {
        name: name.to_string(),
        namespace: ns.clone(),
        key: key.cloned().unwrap_or_else(|| default.to_string()),
    };
    let basic_auth = d.basic_auth.as_ref().map(|b| {
        (
            key(&b.secret_name, b.username_key.as_ref(), "username"),
            key(&b.secret_name, b.password_key.as_ref(), "password"),
        )
    });
    let tls = d.tls.as_ref().map(|t| {
        let ca = &t.certificate_authority;
        Tls {
            ca_certificate: key(&ca.secret_name, ca.certificate_key.as_ref(), "ca.crt"),
            // Only etcd uses it; Kamaji reads a given one for no other driver.
            ca_private_key: (d.driver == Driver::Etcd)
                .then(|| key(&ca.secret_name, ca.private_key_key.as_ref(), "ca.key")),
            client: t.client_certificate.as_ref().map(|c| {
                (
                    key(&c.secret_name, c.certificate_key.as_ref(), "tls.crt"),
                    key(&c.secret_name, c.private_key_key.as_ref(), "tls.key"),
                )
            }),
        }
    });
    match d.driver {
        // The CEL rules of `DataStoreSpec`: etcd needs the CA's key and a client certificate.
        Driver::Etcd if tls.as_ref().is_none_or(|t| t.client.is_none()) => errs.push(
            src.error(field, format!("the etcd DataStore `{}` needs `tls` with `clientCertificate`", d.name))
                .with_hint("Kamaji logs in with the client certificate and signs each tenant's own with the CA's key: `tls: {certificateAuthority: {secretName: <ca>}, clientCertificate: {secretName: <client>}}` (keys `ca.crt`, `ca.key`, `tls.crt`, `tls.key`)"),
        ),
        Driver::MySQL | Driver::PostgreSQL | Driver::Nats if basic_auth.is_none() && tls.is_none() => errs.push(
            src.error(field, format!("the {} DataStore `{}` needs `basicAuth` or `tls`", d.driver.as_str(), d.name))
                .with_hint("name the Secret Kamaji logs in with: `basicAuth: {secretName: <secret>}` (keys `username` and `password`), or a client certificate under `tls`"),
        ),
        _ => {}
    }
    store.connection = Some(Connection {
        endpoints: d.endpoints.clone(),
        basic_auth,
        tls,
    });
    store
}

/// Whether kine `tag` creates the NATS key-value bucket instead of opening the one Kamaji made:
/// v0.16.5 and later (read in kine's `pkg/drivers/nats/new.go` at v0.16.5, v0.17.0 and v0.17.5,
/// and met in the test bed with v0.17.5; v0.14.5 and older look the bucket up first; the module
/// proxy serves no v0.15 or v0.16.0-v0.16.4 to read).
fn kine_makes_its_own_bucket(tag: &str) -> bool {
    let core = tag.trim_start_matches('v').split(['-', '+']).next().unwrap_or_default();
    let parts: Vec<u64> = core.split('.').map_while(|p| p.parse().ok()).collect();
    match parts.as_slice() {
        [major, minor, patch] => (*major, *minor, *patch) >= (0, 16, 5),
        _ => false,
    }
}

/// DataStores kaas.yaml declares under a driver other than the one they were rendered with:
/// Kamaji refuses the change (`api/v1alpha1/datastore_types.go`: "Datastore driver is immutable"),
/// so Flux's apply of the platform layer would fail. `rendered`: name -> driver of the last render.
pub fn datastore_driver_changes(
    src: &Source,
    platform: &crate::model::Platform,
    rendered: &BTreeMap<String, String>,
) -> Vec<Diagnostic> {
    platform
        .data_stores
        .values()
        .filter(|s| s.connection.is_some())
        .filter_map(|s| {
            let before = rendered.get(&s.name)?;
            let now = s.driver?.as_str();
            (before != now).then(|| {
                src.error(
                    &format!("{}.driver", s.field),
                    format!("DataStore `{}` was rendered with driver {before}: Kamaji never changes a DataStore's driver", s.name),
                )
                .with_hint(format!(
                    "declare a new DataStore under another name with driver {now}; tenants move only between DataStores of one driver, so a tenant on `{}` moves by a new tenant and a workload move (docs/datastores.md, \"Changing driver\")",
                    s.name
                ))
            })
        })
        .collect()
}

/// What is wrong with a `host:port` endpoint, if anything.
fn endpoint_problem(e: &str) -> Option<&'static str> {
    if e.contains("://") {
        return Some("has a scheme");
    }
    let Some((host, port)) = e.rsplit_once(':') else {
        return Some("has no port");
    };
    if host.is_empty() {
        return Some("has no host");
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => None,
        _ => Some("has no valid port"),
    }
}

fn unknown(src: &Source, field: &str, name: &str, stores: &BTreeMap<String, SharedDataStore>) -> Diagnostic {
    let known: Vec<_> = stores.keys().map(|s| format!("`{s}`")).collect();
    src.error(field, format!("the platform declares no DataStore `{name}`"))
        .with_hint(if known.is_empty() {
            "kaas.yaml `spec.dataStores` is empty; declare it there".to_string()
        } else {
            format!("declared in kaas.yaml `spec.dataStores`: {}", known.join(", "))
        })
}

/// A list of `dataStoreOverrides` at `field`, checked: built-in resources only, each once, on a
/// declared etcd DataStore (Kamaji 26.8.2-edge `controllers/tenantcontrolplane_controller.go`
/// `dataStoreOverride`: "DataStoreOverrides can only use ETCD driver").
pub(crate) fn overrides(
    src: &Source,
    field: &str,
    given: &[raw::DataStoreOverride],
    stores: &BTreeMap<String, SharedDataStore>,
    errs: &mut Vec<Diagnostic>,
) -> Vec<DataStoreOverride> {
    let mut out: Vec<DataStoreOverride> = Vec::new();
    for (i, o) in given.iter().enumerate() {
        let f = format!("{field}[{i}]");
        match o.resource.split_once('/') {
            Some((group, resource))
                if BUILT_IN_GROUPS.contains(&group) && !resource.is_empty() && !resource.contains('/') => {}
            _ => errs.push(
                src.error(&format!("{f}.resource"), format!("`{}` is not a resource kube-apiserver serves itself", o.resource))
                    .with_hint("write `<group>/<resource>` of a built-in resource: `/events` (core group), `events.k8s.io/events`, `coordination.k8s.io/leases`; custom resources cannot move"),
            ),
        }
        if out.iter().any(|p| p.resource == o.resource) {
            errs.push(
                src.error(
                    &format!("{f}.resource"),
                    format!("`{}` is overridden twice", o.resource),
                )
                .with_hint("a resource lives on one DataStore; keep one entry"),
            );
        }
        match stores.get(&o.data_store) {
            None => errs.push(unknown(src, &format!("{f}.dataStore"), &o.data_store, stores)),
            Some(s) if s.driver.is_some_and(|d| d != Driver::Etcd) => errs.push(
                src.error(
                    &format!("{f}.dataStore"),
                    format!("`{}` is a {} DataStore; Kamaji moves resources only to etcd ones", o.data_store, s.driver.map_or("", Driver::as_str)),
                )
                .with_hint("name an etcd DataStore (Kamaji refuses the control plane otherwise: \"DataStoreOverrides can only use ETCD driver\")"),
            ),
            Some(_) => {}
        }
        out.push(DataStoreOverride {
            resource: o.resource.clone(),
            data_store: o.data_store.clone(),
        });
    }
    out
}

/// How to make `dataStoreOverrides` work.
pub(crate) const OVERRIDES_HINT: &str = "put the tenants on a declared etcd DataStore and the overridden resources on another etcd DataStore whose `tls.certificateAuthority` names the same Secret (docs/datastores.md, \"Events on a store of their own\"); or leave `overrides` out";

/// Why `overrides` cannot serve a control plane whose own DataStore is `main` (`None`: its
/// dedicated kamaji-etcd), if they cannot. Kamaji 26.8.2-edge gives the API server the etcd TLS
/// files of its own DataStore only, and none for a kine one (`internal/builders/controlplane/
/// deployment.go`: `--etcd-cafile`, `--etcd-certfile` for an etcd DataStore; the overrides reuse
/// them), and it writes the client certificate of every DataStore of a control plane, its own
/// and each override's, into the one Secret `<tenant>-datastore-certificate`
/// (`internal/resources/datastore/datastore_certificate.go`, `controllers/resources.go`
/// `getKubernetesAdditionalStorageResources`): every one of them must be etcd, and trust one CA.
pub(crate) fn overrides_problem(
    main: Option<&SharedDataStore>,
    overrides: &[DataStoreOverride],
    stores: &BTreeMap<String, SharedDataStore>,
) -> Option<String> {
    let ca = |s: &SharedDataStore| s.connection.as_ref()?.tls.as_ref().map(|t| t.ca_certificate.clone());
    let Some(main) = main else {
        return Some("a tenant with its own kamaji-etcd cannot keep resources elsewhere: that etcd's CA is its own, and Kamaji gives the API server one client certificate for all its DataStores".into());
    };
    if main.driver != Some(Driver::Etcd) {
        return Some(format!(
            "the control plane's own DataStore `{}` is {}: Kamaji gives an API server on kine no etcd client certificate, so it cannot reach an etcd for the overridden resources",
            main.name,
            main.driver
                .map_or("of a driver kaas-gitops is not told", Driver::as_str)
        ));
    }
    let Some(main_ca) = ca(main) else {
        return Some(format!(
            "the CA of the control plane's own DataStore `{}` is not declared here, so kaas-gitops cannot tell that the override DataStores trust it: Kamaji gives the API server one client certificate for all of them",
            main.name
        ));
    };
    overrides.iter().find_map(|o| {
        let other = stores.get(&o.data_store)?;
        (ca(other).as_ref() != Some(&main_ca)).then(|| {
            format!(
                "`{}` and the control plane's own DataStore `{}` do not name one CA Secret: Kamaji gives the API server one client certificate for both, signed by one CA",
                o.data_store, main.name
            )
        })
    })
}

/// The second and later tenants on one NATS DataStore: Kamaji serves one TenantControlPlane per
/// NATS DataStore and blocks the others' reconciliation (its guide "alternative datastores").
pub(crate) fn nats_shared(platform: &crate::model::Platform, tenants: &[(Tenant, &Source)]) -> Vec<Diagnostic> {
    let mut first: BTreeMap<&str, &str> = BTreeMap::new();
    let mut errs = Vec::new();
    for (t, src) in tenants {
        let DataStore::Shared(name) = &t.datastore else {
            continue;
        };
        if platform.datastore_driver(name) != Some(Driver::Nats) {
            continue;
        }
        match first.get(name.as_str()) {
            None => {
                first.insert(name, &t.name);
            }
            Some(owner) => errs.push(
                src.error(
                    "spec.controlPlane.dataStore.shared",
                    format!("the NATS DataStore `{name}` already serves tenant `{owner}`"),
                )
                .with_hint("a NATS DataStore holds one tenant's control plane (Kamaji blocks the others): declare a NATS DataStore per tenant, or use a SQL or etcd one"),
            ),
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::kine_makes_its_own_bucket;

    #[test]
    fn kine_from_v0_16_5_on_makes_its_own_nats_bucket() {
        assert!(kine_makes_its_own_bucket("v0.17.5"));
        assert!(kine_makes_its_own_bucket("v0.16.5-amd64"));
        assert!(kine_makes_its_own_bucket("v1.0.0"));
        assert!(!kine_makes_its_own_bucket("v0.11.10-amd64"));
        assert!(!kine_makes_its_own_bucket("v0.14.5"));
        assert!(!kine_makes_its_own_bucket("latest"));
    }
}
