//! DataStores across the fleet: who creates each (DataStore objects, kamaji-etcd releases, the
//! kamaji release's bundled kamaji-etcd, kaas.yaml `spec.dataStores`), that each is created once,
//! and that every control plane names one that exists.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::model::Platform;
use crate::validate::fleet::place;
use crate::validate::{Check, Finding, Fleet, Manifest, error};

/// Who creates a DataStore, and at which field.
struct Creator<'a> {
    name: String,
    object: &'a Manifest,
    field: String,
}

/// The DataStores the fleet creates: DataStore objects, kamaji-etcd releases, and the kamaji
/// release's bundled kamaji-etcd (clastix/kamaji-etcd chart 0.17.0 `values.yaml` and `templates/_helpers.tpl` for the values these read).
fn creators(fleet: &Fleet) -> Vec<Creator<'_>> {
    let mut out = Vec::new();
    for o in &fleet.objects {
        match (o.group(), o.kind.as_str()) {
            ("kamaji.clastix.io", "DataStore") => out.push(Creator {
                name: o.name.clone(),
                object: o,
                field: "metadata.name".into(),
            }),
            ("helm.toolkit.fluxcd.io", "HelmRelease") => match o.pointer_str("/spec/chart/spec/chart") {
                Some("kamaji-etcd") => {
                    let values = o.pointer("/spec/values").cloned().unwrap_or(Value::Null);
                    if let Some(name) = etcd_datastore(&values, &helm_release_name(o)) {
                        out.push(Creator {
                            name,
                            object: o,
                            field: "spec.values.datastore.name".into(),
                        });
                    }
                }
                Some("kamaji") => {
                    let sub = o
                        .pointer("/spec/values")
                        .map_or(Value::Null, |v| v["kamaji-etcd"].clone());
                    if sub["deploy"].as_bool() != Some(false) && sub["datastore"]["enabled"].as_bool() != Some(false) {
                        let name = sub["datastore"]["name"]
                            .as_str()
                            .filter(|n| !n.is_empty())
                            .unwrap_or("default");
                        out.push(Creator {
                            name: name.to_string(),
                            object: o,
                            field: "spec.values.kamaji-etcd.datastore.name".into(),
                        });
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
    out
}

/// The Helm release a HelmRelease makes: `spec.releaseName`, else `[targetNamespace-]name`.
pub(crate) fn helm_release_name(o: &Manifest) -> String {
    o.pointer_str("/spec/releaseName").map_or_else(
        || match o.pointer_str("/spec/targetNamespace") {
            Some(ns) => format!("{ns}-{}", o.name),
            None => o.name.clone(),
        },
        str::to_string,
    )
}

/// The DataStore a kamaji-etcd release creates: `datastore.name`, else the chart's full name.
fn etcd_datastore(values: &Value, release: &str) -> Option<String> {
    if values["datastore"]["enabled"].as_bool() == Some(false) {
        return None;
    }
    if let Some(n) = values["datastore"]["name"].as_str().filter(|n| !n.is_empty()) {
        return Some(n.to_string());
    }
    if let Some(n) = values["fullnameOverride"].as_str().filter(|n| !n.is_empty()) {
        return Some(n.to_string());
    }
    Some(if release.contains("kamaji-etcd") {
        release.to_string()
    } else {
        format!("{release}-kamaji-etcd")
    })
}

/// DataStore names are cluster-wide: created once, and every control plane names one that exists.
pub fn check(fleet: &Fleet, platform: Option<&Platform>) -> Vec<Finding> {
    let mut out = Vec::new();
    let created = creators(fleet);
    let mut first: BTreeMap<&str, &Creator<'_>> = BTreeMap::new();
    for c in &created {
        match first.get(c.name.as_str()) {
            Some(f) if c.object.rendered => out.push(
                error(
                    Check::Fleet,
                    c.object,
                    &c.field,
                    format!(
                        "DataStore `{}` is also created by {} at {}",
                        c.name,
                        f.object.id(),
                        place(f.object, &f.field)
                    ),
                )
                .with_hint(
                    "DataStores are cluster-scoped: two creators fight over one object; give each a unique name",
                ),
            ),
            Some(_) => {}
            None => {
                first.insert(&c.name, c);
            }
        }
    }
    let declared: Vec<&str> = platform
        .map(|p| p.data_stores.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let exists = |name: &str| first.contains_key(name) || declared.contains(&name);
    let known = || {
        let mut all: Vec<&str> = first.keys().copied().chain(declared.iter().copied()).collect();
        all.sort_unstable();
        all.dedup();
        all.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
    };
    let default = fleet
        .rendered()
        .find(|o| o.kind == "HelmRelease" && o.pointer_str("/spec/chart/spec/chart") == Some("kamaji"));
    if let Some(k) = default {
        let name = k.pointer_str("/spec/values/defaultDatastoreName").unwrap_or("default");
        if !exists(name) {
            out.push(
                error(
                    Check::Fleet,
                    k,
                    "spec.values.defaultDatastoreName",
                    format!("the default DataStore `{name}` is created by nothing in the fleet"),
                )
                .with_hint(format!(
                    "known DataStores: {}; or declare it in kaas.yaml `spec.dataStores`",
                    known()
                )),
            );
        }
    }
    for o in fleet.rendered() {
        let (pointer, field) = match (o.group(), o.kind.as_str()) {
            ("controlplane.cluster.x-k8s.io", "KamajiControlPlane") => ("/spec/dataStoreName", "spec.dataStoreName"),
            ("kamaji.clastix.io", "TenantControlPlane") => ("/spec/dataStore", "spec.dataStore"),
            _ => continue,
        };
        let name = match o.pointer_str(pointer).filter(|n| !n.is_empty()) {
            Some(n) => n,
            // Without a name Kamaji uses its default DataStore, checked above.
            None => continue,
        };
        if !exists(name) {
            out.push(
                error(Check::Fleet, o, field, format!("`{field}` names DataStore `{name}`, which nothing in the fleet creates"))
                    .with_hint(format!(
                        "known DataStores: {}; a dedicated datastore comes from a kamaji-etcd HelmRelease, a shared one must be declared in kaas.yaml `spec.dataStores`",
                        known()
                    )),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kamaji_etcd_names_its_datastore_like_the_chart() {
        let v = serde_json::json!({"datastore": {"enabled": true, "name": "x"}});
        assert_eq!(etcd_datastore(&v, "r").as_deref(), Some("x"));
        let v = serde_json::json!({"fullnameOverride": "acme-etcd"});
        assert_eq!(etcd_datastore(&v, "r").as_deref(), Some("acme-etcd"));
        assert_eq!(
            etcd_datastore(&Value::Null, "acme").as_deref(),
            Some("acme-kamaji-etcd")
        );
        let v = serde_json::json!({"datastore": {"enabled": false}});
        assert_eq!(etcd_datastore(&v, "r"), None);
    }
}
