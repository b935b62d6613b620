//! `schema`: the JSON Schema of both spec files, generated from the types `render` reads.

use anyhow::Result;

use crate::commands::ExitStatus;
use crate::spec::raw::{PlatformFile, TenantFile};

/// The schema document: `{"tenant": <schema>, "platform": <schema>}`.
pub fn document() -> serde_json::Value {
    serde_json::json!({
        "tenant": schemars::schema_for!(TenantFile),
        "platform": schemars::schema_for!(PlatformFile),
    })
}

/// Runs `schema`.
#[allow(clippy::print_stdout)]
pub fn run() -> Result<ExitStatus> {
    let text = serde_json::to_string_pretty(&document())?;
    println!("{text}");
    Ok(ExitStatus::Success)
}
