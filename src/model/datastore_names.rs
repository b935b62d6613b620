//! The names a tenant's control plane has inside its DataStore: Kamaji's `dataStoreSchema` (the
//! etcd key prefix `/<schema>/`, the SQL database, or the NATS bucket) and `dataStoreUsername`
//! (the etcd user and client certificate CN, or the SQL role). See issue 41, item 2.
//!
//! Left unset, Kamaji's defaulting webhook names both after the TenantControlPlane's UID
//! (clastix/kamaji 26.8.2-edge `internal/webhook/handlers/tcp_defaults.go:88-94`,
//! `api/v1alpha1/tenantcontrolplane_funcs.go` `GetDefaultDatastoreSchema`/`Username`), which a
//! control plane re-created from git never gets back: it would start on an empty prefix with the
//! old data orphaned. So kaas-gitops renders both (the provider copies them to the
//! TenantControlPlane: cluster-api-control-plane-provider-kamaji v0.20.0
//! `controllers/kamajicontrolplane_controller_tcp.go:106-110`) and keeps them in `kaas.lock`.
//! Both are immutable once set (`api/v1alpha1/tenantcontrolplane_types.go:519,525`, CEL
//! `self == oldSelf`, and `:493` refuses unsetting them; the provider's own `dataStoreUsername`
//! has the same rule, `api/v1alpha2/kamajicontrolplane_types.go:205`); neither the CRDs nor
//! Kamaji's webhooks restrict their characters or length, so the rules here are the datastores'. So a tenant deployed before kaas-gitops set
//! them keeps Kamaji's UID until `kaas-gitops adopt` records the live values.

use std::collections::BTreeMap;

use sha2::{Digest as _, Sha256};

/// What every derived name starts with.
pub const PREFIX: &str = "kaas_";

/// The longest derived name: MySQL's user names (`CREATE USER`, 32 characters since 5.7.8) are the
/// tightest limit of Kamaji's drivers (PostgreSQL identifiers 63 bytes, MySQL databases 64).
pub const MAX_DERIVED: usize = 32;

/// The longest name accepted from `kaas.lock` (a PostgreSQL identifier; Kamaji's UID is 36).
pub const MAX_RECORDED: usize = 63;

/// A control plane's schema and user.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Names {
    /// `dataStoreSchema`.
    pub schema: String,
    /// `dataStoreUsername`.
    pub username: String,
}

/// How a tenant's control plane is named in its DataStore.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum DataStoreNames {
    /// Rendered into the KamajiControlPlane.
    Named(Names),
    /// Not rendered: Kamaji named them after the TenantControlPlane's UID when the tenant was
    /// deployed, before kaas-gitops set them, and `kaas-gitops adopt` has not recorded them yet.
    KamajiDefault,
}

impl DataStoreNames {
    /// The names, when rendered.
    pub fn named(&self) -> Option<&Names> {
        match self {
            DataStoreNames::Named(n) => Some(n),
            DataStoreNames::KamajiDefault => None,
        }
    }
}

/// Each tenant's names, as `kaas.lock` records them (`datastores:`).
pub type DataStoreNamesByTenant = BTreeMap<String, DataStoreNames>;

/// The names of a new tenant: `kaas_` and the tenant's name with `-` as `_`, e.g. `kaas_acme-eu`
/// is `kaas_acme_eu`; both the same.
///
/// Why this form: Kamaji quotes both names in SQL (`internal/datastore/postgresql.go`
/// `quotePostgreSQLIdentifier`, `mysql.go` `quoteMySQLIdentifier`), but kine and people's own
/// tools may not, and an unquoted `-` is no SQL identifier; `[a-z0-9_]` starting with a letter is
/// a valid unquoted identifier in PostgreSQL and MySQL, a NATS bucket name (`[A-Za-z0-9_-]+`) and
/// an etcd key prefix and user. The prefix keeps a tenant named `postgres`, `mysql` or `root`
/// from naming a system database or the datastore's superuser. A tenant name is a DNS-1035 label
/// (no `_`), so replacing `-` loses nothing: two tenants never get the same name. A name
/// longer than [`MAX_DERIVED`] keeps its first 18 characters and adds `_` and 8 hex digits of
/// the sha256 of the tenant's name.
pub fn derived(tenant: &str) -> Names {
    let full = format!("{PREFIX}{}", tenant.replace('-', "_"));
    let name = if full.len() <= MAX_DERIVED {
        full
    } else {
        let hash = hex::encode(Sha256::digest(tenant.as_bytes()));
        format!("{}_{}", &full[..MAX_DERIVED - 9], &hash[..8])
    };
    Names {
        schema: name.clone(),
        username: name,
    }
}

/// Why `value` cannot be a recorded schema or user, if it cannot: Kamaji's UID (`[0-9a-f-]`, 36)
/// and every derived name pass.
pub fn problem(value: &str) -> Option<String> {
    if value.is_empty() {
        return Some("it is empty".into());
    }
    if value.len() > MAX_RECORDED {
        return Some(format!(
            "it is {} characters long; the limit is {MAX_RECORDED} (a PostgreSQL identifier)",
            value.len()
        ));
    }
    if !value
        .bytes()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'-')
    {
        return Some("only lower-case letters, digits, `_` and `-` are allowed".into());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_names_are_sql_identifiers_within_mysql_user_names() {
        assert_eq!(derived("acme").schema, "kaas_acme");
        assert_eq!(derived("acme-eu-1").username, "kaas_acme_eu_1");
        let long = "a".repeat(27);
        assert_eq!(derived(&long).schema, format!("kaas_{long}"));
        let longer = format!("{long}-b");
        let n = derived(&longer);
        assert_eq!(n.schema.len(), MAX_DERIVED);
        assert!(n.schema.starts_with("kaas_aaaaaaaaaaaaaaaaaa_"), "{}", n.schema);
        assert_ne!(derived(&format!("{long}-c")).schema, n.schema);
        for t in ["acme", "a-b-c", &longer, &"x".repeat(40)] {
            let s = derived(t).schema;
            assert!(s.len() <= MAX_DERIVED);
            assert!(s.as_bytes()[0].is_ascii_lowercase());
            assert!(
                s.bytes()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
            );
            assert_eq!(problem(&s), None);
        }
    }

    #[test]
    fn recorded_names_take_kamajis_uid_and_refuse_the_rest() {
        assert_eq!(problem("3f0e6b5c-1d2a-4c7e-9b1f-0a2b3c4d5e6f"), None);
        assert!(problem("").is_some());
        assert!(problem("Acme").is_some());
        assert!(problem("a/b").is_some());
        assert!(problem(&"a".repeat(64)).is_some());
    }
}
