//! The CRD release assets `validate` and `pin` share: settings from the flags and environment,
//! and how their problems are printed.

use std::time::Duration;

use anyhow::{Result, anyhow};
use serde_json::json;

use crate::cli::{CrdFetchArgs, Format, Printer};
use crate::commands::ExitStatus;
use crate::crd_fetch::{self, Problem, Settings};
use crate::diagnostics::Diagnostic;
use crate::repo::inputs::PLATFORM_PATH;

/// The settings `args` ask for; the cache defaults to the user's cache folder.
pub fn settings(args: &CrdFetchArgs, timeout: Duration) -> Result<Settings> {
    let cache = match &args.crd_cache {
        Some(dir) => dir.clone(),
        None => crd_fetch::default_cache_dir().ok_or_else(|| {
            anyhow!("no cache folder for CRD release assets: set `KAAS_CRD_CACHE` (or `--crd-cache DIR`), or pass `--crds DIR`")
        })?,
    };
    let mirror = args.crd_mirror.clone().filter(|m| !m.is_empty());
    Ok(Settings { cache, mirror, timeout })
}

/// Prints every problem, each naming the `kaas.yaml` field that picks the release; exit 2:
/// the environment (network, mirror, cache), not the repository, must change.
pub fn report(printer: &Printer, format: Format, problems: &[Problem]) -> ExitStatus {
    let diags: Vec<Diagnostic> = problems
        .iter()
        .map(|p| {
            Diagnostic::error(p.to_string())
                .in_file(PLATFORM_PATH)
                .field(p.asset().field.clone())
                .with_hint(p.hint())
        })
        .collect();
    match format {
        Format::Json => printer.envelope(false, json!({"written": false, "diagnostics": diags})),
        Format::Github => {
            for d in &diags {
                printer.data(&format!("{}\n", d.github_annotation()));
            }
        }
        Format::Human => {
            printer.diagnostics(&diags);
            printer.failed(&format!(
                "{} CRD release asset(s) could not be used; nothing was checked or written",
                problems.len()
            ));
        }
    }
    ExitStatus::Error
}
