//! `schema`: the JSON Schema of both spec files, generated from the types `render` reads.

use anyhow::Result;

use crate::cli::Printer;
use crate::commands::ExitStatus;
use crate::spec::raw::{PlatformFile, TenantFile};

/// The schema document: one JSON Schema for both files, so an editor can use it for
/// `kaas.yaml` and every tenant file alike. `kind: Platform` selects the platform file's
/// schema, anything else the tenant file's; both are in `$defs` (as `PlatformFile` and
/// `TenantFile`), next to the types they share.
pub fn document() -> serde_json::Value {
    use serde_json::{Value, json};
    let mut defs = serde_json::Map::new();
    for (name, kind, schema) in [
        ("PlatformFile", "Platform", schemars::schema_for!(PlatformFile)),
        ("TenantFile", "Tenant", schemars::schema_for!(TenantFile)),
    ] {
        let Value::Object(mut root) = schema.to_value() else {
            unreachable!("schemars writes an object")
        };
        if let Some(Value::Object(own)) = root.remove("$defs") {
            for (k, v) in own {
                // Both files use some types (metadata, providers); a name means one type.
                let known = defs.insert(k.clone(), v.clone());
                assert!(known.is_none_or(|k| k == v), "two types named {k} in the schema");
            }
        }
        root.remove("$schema");
        // Offered by an editor, and a misspelt kind is refused instead of read as a tenant.
        root["properties"]["kind"]["const"] = json!(kind);
        defs.insert(name.to_string(), Value::Object(root));
    }
    let mut doc = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "kaas-gitops files",
        "description": "kaas.yaml (kind: Platform) and tenants/<name>.yaml (kind: Tenant), as `kaas-gitops render` reads them.",
        "if": {"properties": {"kind": {"const": "Platform"}}, "required": ["kind"]},
        "then": {"$ref": "#/$defs/PlatformFile"},
        "else": {"$ref": "#/$defs/TenantFile"},
        "$defs": defs,
    });
    drop_null_defaults(&mut doc);
    doc
}

/// A block left out defaults to "each field at its own default", which serde writes as
/// `{"cpus": null, ...}`; an editor would offer those nulls as values, so such defaults are
/// dropped. Defaults without nulls (`[]`, `{}`) stay.
fn drop_null_defaults(v: &mut serde_json::Value) {
    fn has_null(v: &serde_json::Value) -> bool {
        match v {
            serde_json::Value::Null => true,
            serde_json::Value::Array(a) => a.iter().any(has_null),
            serde_json::Value::Object(o) => o.values().any(has_null),
            _ => false,
        }
    }
    match v {
        serde_json::Value::Object(o) => {
            if o.get("default").is_some_and(has_null) {
                o.remove("default");
            }
            for (key, child) in o.iter_mut() {
                // Names, not keywords: a property may itself be called `default`.
                if matches!(
                    key.as_str(),
                    "properties" | "$defs" | "definitions" | "patternProperties"
                ) && let serde_json::Value::Object(named) = child
                {
                    named.values_mut().for_each(drop_null_defaults);
                } else {
                    drop_null_defaults(child);
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(drop_null_defaults),
        _ => {}
    }
}

/// Runs `schema`.
pub fn run(printer: &Printer) -> Result<ExitStatus> {
    let text = serde_json::to_string_pretty(&document())?;
    printer.data(&format!("{text}\n"));
    Ok(ExitStatus::Success)
}
