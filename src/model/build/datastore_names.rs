//! Which schema and user each tenant's control plane gets in its DataStore
//! ([`crate::model::datastore_names`]): what `kaas.lock` records, else what the last render
//! deployed, else the derived names of a new tenant. A change of either against what is
//! deployed is refused: Kamaji never changes them (`self == oldSelf` on the TenantControlPlane,
//! clastix/kamaji 26.8.2-edge `api/v1alpha1/tenantcontrolplane_types.go:519,525`), so the
//! provider's every later update of the TenantControlPlane would be refused and the tenant stuck.

use std::collections::{BTreeMap, BTreeSet};

use crate::diagnostics::Diagnostic;
use crate::model::Tenant;
use crate::model::build::transitions::Deployed;
use crate::model::datastore_names::{DataStoreNames, DataStoreNamesByTenant, Names, derived};
use crate::spec::source::Source;

/// Before the last render is read: the lock's names, else a new tenant's. A decommissioned
/// tenant has no control plane, and Kamaji deleted its data with it (`internal/datastore/etcd.go`
/// `DeleteDB`): brought back, it starts afresh, so only names recorded in full are kept for it.
pub(super) fn from_lock(tenants: &mut [(Tenant, &Source)], recorded: &DataStoreNamesByTenant) {
    for (t, _) in tenants.iter_mut() {
        t.datastore_names = match recorded.get(&t.name) {
            Some(DataStoreNames::KamajiDefault) if t.decommissioned => DataStoreNames::Named(derived(&t.name)),
            Some(n) => n.clone(),
            None => DataStoreNames::Named(derived(&t.name)),
        };
    }
}

/// What the checks decided.
#[derive(Debug, Default)]
pub(super) struct Resolution {
    /// Every tenant's names, for `kaas.lock`.
    pub names: DataStoreNamesByTenant,
    /// The tenants whose names differ from [`from_lock`]'s (their input hash changes).
    pub changed: BTreeSet<String>,
    /// Refused changes.
    pub errors: Vec<Diagnostic>,
    /// Tenants left on Kamaji's UID.
    pub warnings: Vec<Diagnostic>,
}

/// Judges each tenant's names against what its last render deployed (`deployed` holds the
/// tenants whose inputs changed; the others render as before).
pub(super) fn resolve(
    tenants: &mut [(Tenant, &Source)],
    recorded: &DataStoreNamesByTenant,
    deployed: &BTreeMap<String, Deployed>,
) -> Resolution {
    let mut out = Resolution::default();
    for (t, src) in tenants.iter_mut() {
        let live = deployed
            .get(&t.name)
            .and_then(|d| d.datastore_names.clone())
            .filter(|_| !t.decommissioned);
        let lock = recorded.get(&t.name);
        let names = match (live, lock) {
            // New, decommissioned, or rendered as before.
            (None, _) => t.datastore_names.clone(),
            // Deployed before kaas-gitops named them: Kamaji used the UID. The lock's names are
            // the live ones `adopt` read; rendering them changes nothing in the datastore.
            (Some((None, None)), Some(n @ DataStoreNames::Named(_))) => n.clone(),
            (Some((None, None)), _) => DataStoreNames::KamajiDefault,
            (Some((Some(schema), Some(username))), lock) => {
                let was = Names { schema, username };
                match lock {
                    Some(DataStoreNames::Named(n)) if *n == was => DataStoreNames::Named(was),
                    // The lock lost its entry: the deployed names stand, and are recorded again.
                    None => DataStoreNames::Named(was),
                    Some(other) => {
                        out.errors.push(refused(src, &t.name, &was, other));
                        continue;
                    }
                }
            }
            (Some((schema, username)), _) => {
                out.errors.push(
                    src.error(
                        "metadata.name",
                        format!(
                            "tenant `{}`'s control plane is deployed with only one of `dataStoreSchema` ({}) and `dataStoreUsername` ({})",
                            t.name,
                            shown(schema.as_deref()),
                            shown(username.as_deref())
                        ),
                    )
                    .with_hint(format!(
                        "record both live values in kaas.lock: `kaas-gitops adopt {}`",
                        t.name
                    )),
                );
                continue;
            }
        };
        if names == DataStoreNames::KamajiDefault {
            out.warnings.push(kamaji_default_warning(src, &t.name));
        }
        if names != t.datastore_names {
            out.changed.insert(t.name.clone());
        }
        t.datastore_names = names.clone();
        out.names.insert(t.name.clone(), names);
    }
    out
}

fn shown(v: Option<&str>) -> String {
    v.map_or_else(|| "unset".into(), |v| format!("`{v}`"))
}

fn refused(src: &Source, tenant: &str, was: &Names, now: &DataStoreNames) -> Diagnostic {
    let now = match now {
        DataStoreNames::Named(n) => format!("schema `{}` and user `{}`", n.schema, n.username),
        DataStoreNames::KamajiDefault => "Kamaji's default (the TenantControlPlane's UID)".into(),
    };
    src.error(
        "metadata.name",
        format!(
            "kaas.lock gives tenant `{tenant}`'s control plane {now} in its DataStore, but it is deployed with schema `{}` and user `{}`; Kamaji refuses to change either",
            was.schema, was.username
        ),
    )
    .with_hint(format!(
        "its data lives under the deployed schema (etcd key prefix `/{}/`): put those names back in kaas.lock `datastores:`, or run `kaas-gitops adopt {tenant}` to record what the management cluster runs",
        was.schema
    ))
}

fn kamaji_default_warning(src: &Source, tenant: &str) -> Diagnostic {
    src.warning(
        "metadata.name",
        format!(
            "tenant `{tenant}`'s datastore schema and user are Kamaji's default, its TenantControlPlane's UID, which git does not know: a control plane re-created from git (a rebuilt management cluster) would start on an empty datastore"
        ),
    )
    .with_hint(format!(
        "record the live names in kaas.lock with `kaas-gitops adopt {tenant}` (it reads the management cluster), then render"
    ))
}
