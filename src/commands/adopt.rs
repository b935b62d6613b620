//! `adopt [TENANT...]`: records in `kaas.lock` the schema and user each tenant's control plane
//! has in its DataStore, as the management cluster runs them (issue 41, item 2). For a tenant
//! deployed before kaas-gitops named them these are Kamaji's defaults, the TenantControlPlane's
//! UID (`model::datastore_names`); once recorded, `render` writes them into the
//! KamajiControlPlane, so a control plane re-created from git finds its data again.
//!
//! The live names are the TenantControlPlane's `status.storage.setup.schema` and `.user`, which
//! Kamaji writes once its datastore is set up and keeps in preference to the spec
//! (clastix/kamaji 26.8.2-edge `api/v1alpha1/tenantcontrolplane_status.go` `DataStoreSetupStatus`,
//! `internal/resources/datastore/datastore_storage_config.go:158-185`), else its
//! `spec.dataStoreSchema`/`dataStoreUsername` (defaulted at creation, `tcp_defaults.go:88-94`).

use std::path::Path;

use anyhow::Result;
use serde_json::Value;

use crate::cli::{AdoptArgs, Format, Printer};
use crate::cluster::{Cluster, TENANT_CONTROL_PLANE};
use crate::commands::ExitStatus;
use crate::commands::pin::write_lock;
use crate::commands::report_invalid;
use crate::commands::status::report_cluster_error;
use crate::model::datastore_names::{self, DataStoreNames, Names};
use crate::repo::inputs;
use crate::repo::lock::{LOCK_PATH, Lock};

/// What was found for one tenant.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// No TenantControlPlane (a new tenant, or one not applied yet).
    Missing,
    /// A TenantControlPlane whose names Kamaji has not set yet.
    Unset,
    /// Its names.
    Live(Names),
}

/// The names of a TenantControlPlane read from the API: its status, else its spec.
pub fn live_names(tcp: &Value) -> Found {
    let at = |path: &[&str]| {
        path.iter()
            .try_fold(tcp, |v, k| v.get(k))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let schema = at(&["status", "storage", "setup", "schema"]).or_else(|| at(&["spec", "dataStoreSchema"]));
    let username = at(&["status", "storage", "setup", "user"]).or_else(|| at(&["spec", "dataStoreUsername"]));
    match (schema, username) {
        (Some(schema), Some(username)) => Found::Live(Names { schema, username }),
        _ => Found::Unset,
    }
}

/// Runs `adopt`.
pub fn run(printer: &Printer, repo: &Path, args: &AdoptArgs) -> Result<ExitStatus> {
    let inputs = match inputs::read(repo, &[])? {
        Err(d) => return Ok(report_invalid(printer, Format::Human, d)),
        Ok(i) => i,
    };
    let mut lock = match inputs.lock.as_deref().map(Lock::parse) {
        None => Lock::default(),
        Some(Ok(l)) => l,
        Some(Err(d)) => return Ok(report_invalid(printer, Format::Human, d)),
    };
    let stems: Vec<&str> = inputs.tenants.iter().map(|(_, stem, _)| stem.as_str()).collect();
    if let Some(unknown) = args.tenants.iter().find(|t| !stems.contains(&t.as_str())) {
        printer.error(
            &format!("no tenant `{unknown}` in tenants/"),
            Some(&format!("tenants: {}", stems.join(", "))),
        );
        return Ok(ExitStatus::Failure);
    }
    let selected: Vec<&str> = if args.tenants.is_empty() {
        stems
    } else {
        args.tenants.iter().map(String::as_str).collect()
    };
    let target = crate::commands::cluster_target(&args.cluster);
    let cluster = match Cluster::connect(&target) {
        Ok(c) => c,
        Err(e) => return Ok(report_cluster_error(printer, Format::Human, &e)),
    };
    let mut refused = false;
    let mut recorded = 0;
    for tenant in selected {
        let found = match cluster.get(TENANT_CONTROL_PLANE, tenant, tenant) {
            Ok(None) => Found::Missing,
            Ok(Some(tcp)) => live_names(&tcp),
            Err(e) => return Ok(report_cluster_error(printer, Format::Human, &e)),
        };
        match decide(tenant, lock.datastores.get(tenant), &found) {
            Decision::Record(names, line) => {
                lock.datastores.insert(tenant.to_string(), DataStoreNames::Named(names));
                recorded += 1;
                printer.data(&format!("{line}\n"));
            }
            Decision::Keep(line) => printer.data(&format!("{line}\n")),
            Decision::Refuse(message, hint) => {
                printer.error(&message, Some(&hint));
                refused = true;
            }
        }
    }
    if refused {
        printer.status(&format!("`{LOCK_PATH}` left as it was"));
        return Ok(ExitStatus::Failure);
    }
    let bytes = lock.to_bytes();
    if recorded == 0 || args.dry_run || inputs.lock.as_deref() == Some(&bytes[..]) {
        if args.dry_run && recorded > 0 {
            printer.status(&format!("--dry-run: `{LOCK_PATH}` not written"));
        }
        return Ok(ExitStatus::Success);
    }
    write_lock(repo, bytes)?;
    printer.status(&format!(
        "wrote `{LOCK_PATH}`: run `kaas-gitops render` and commit both, so the KamajiControlPlanes name what Kamaji runs"
    ));
    Ok(ExitStatus::Success)
}

/// What `adopt` does with one tenant.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// Record these names; the line says so.
    Record(Names, String),
    /// Leave the lock; the line says why.
    Keep(String),
    /// The cluster runs other names than the lock records: message and hint.
    Refuse(String, String),
}

/// Decides for `tenant`, whose lock entry is `recorded`, from what the cluster runs.
pub fn decide(tenant: &str, recorded: Option<&DataStoreNames>, found: &Found) -> Decision {
    let live = match found {
        Found::Missing => {
            let new = datastore_names::derived(tenant);
            return Decision::Keep(format!(
                "{tenant}: no TenantControlPlane in the management cluster; a new control plane gets schema `{}` and user `{}`",
                new.schema, new.username
            ));
        }
        Found::Unset => {
            return Decision::Keep(format!(
                "{tenant}: its TenantControlPlane has no datastore schema and user yet (Kamaji has not set up its datastore); run `adopt` again once it has"
            ));
        }
        Found::Live(n) => n,
    };
    if let Some(problem) = [&live.schema, &live.username]
        .into_iter()
        .find_map(|v| datastore_names::problem(v).map(|p| format!("`{v}`: {p}")))
    {
        return Decision::Refuse(
            format!("tenant `{tenant}`'s TenantControlPlane runs a datastore name kaas-gitops cannot render, {problem}"),
            "set it in the KamajiControlPlane by hand; kaas-gitops keeps names of lower-case letters, digits, `_` and `-`, at most 63 characters".into(),
        );
    }
    match recorded {
        Some(DataStoreNames::Named(n)) if n == live => Decision::Keep(format!(
            "{tenant}: unchanged, schema `{}` and user `{}`",
            n.schema, n.username
        )),
        Some(DataStoreNames::Named(n)) => Decision::Refuse(
            format!(
                "kaas.lock records schema `{}` and user `{}` for tenant `{tenant}`, but its TenantControlPlane runs schema `{}` and user `{}`; Kamaji never changes either",
                n.schema, n.username, live.schema, live.username
            ),
            format!(
                "its data is under `/{}/`: if this is the right management cluster, delete tenant `{tenant}`'s entry from kaas.lock `datastores:` and run `kaas-gitops adopt {tenant}` again",
                live.schema
            ),
        ),
        _ => Decision::Record(
            live.clone(),
            format!(
                "{tenant}: recorded schema `{}` and user `{}`",
                live.schema, live.username
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const UID: &str = "3f0e6b5c-1d2a-4c7e-9b1f-0a2b3c4d5e6f";

    fn uid() -> Names {
        Names {
            schema: UID.into(),
            username: UID.into(),
        }
    }

    #[test]
    fn the_status_wins_over_the_spec() {
        let tcp = json!({
            "spec": {"dataStoreSchema": "spec-s", "dataStoreUsername": "spec-u"},
            "status": {"storage": {"setup": {"schema": UID, "user": UID}}},
        });
        assert_eq!(live_names(&tcp), Found::Live(uid()));
        let fresh = json!({"spec": {"dataStoreSchema": UID, "dataStoreUsername": UID}, "status": {}});
        assert_eq!(live_names(&fresh), Found::Live(uid()));
        assert_eq!(live_names(&json!({"spec": {}})), Found::Unset);
    }

    #[test]
    fn records_kamajis_uid_keeps_equal_names_and_refuses_others() {
        let found = Found::Live(uid());
        assert!(matches!(
            decide("acme", Some(&DataStoreNames::KamajiDefault), &found),
            Decision::Record(n, _) if n == uid()
        ));
        assert!(matches!(decide("acme", None, &found), Decision::Record(..)));
        assert!(matches!(
            decide("acme", Some(&DataStoreNames::Named(uid())), &found),
            Decision::Keep(_)
        ));
        let Decision::Refuse(message, _) = decide(
            "acme",
            Some(&DataStoreNames::Named(datastore_names::derived("acme"))),
            &found,
        ) else {
            panic!("a different live name must be refused");
        };
        assert_eq!(
            message,
            format!(
                "kaas.lock records schema `kaas_acme` and user `kaas_acme` for tenant `acme`, but its TenantControlPlane runs schema `{UID}` and user `{UID}`; Kamaji never changes either"
            )
        );
        assert!(matches!(decide("acme", None, &Found::Missing), Decision::Keep(_)));
    }
}
