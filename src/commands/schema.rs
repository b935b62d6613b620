//! `schema`: the JSON Schema of both spec files, generated from the types `render` reads.

use anyhow::Result;

use crate::commands::{ExitStatus, Printer};
use crate::spec::raw::{PlatformFile, TenantFile};

/// The schema document: `{"tenant": <schema>, "platform": <schema>}`.
pub fn document() -> serde_json::Value {
    let mut doc = serde_json::json!({
        "tenant": schemars::schema_for!(TenantFile),
        "platform": schemars::schema_for!(PlatformFile),
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
