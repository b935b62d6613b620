//! `diff`: what `render` would change, as a unified diff on stdout.

use std::path::Path;

use anyhow::Result;

use crate::cli::Printer;
use crate::cli::{DiffArgs, Format};
use crate::commands::report_invalid;
use crate::commands::{ExitStatus, pipeline};
use crate::render::Options;
use crate::repo::inputs;
use crate::repo::tree;

/// Runs `diff`.
pub fn run(printer: &Printer, repo: &Path, args: &DiffArgs) -> Result<ExitStatus> {
    let select = &args.select;
    let rendered = match inputs::read(repo, &select.tenants)? {
        Err(d) => return Ok(report_invalid(printer, Format::Human, d)),
        Ok(inputs) => match pipeline::run(
            &inputs,
            &Options {
                full: true,
                ..select.into()
            },
        ) {
            Err(d) => return Ok(report_invalid(printer, Format::Human, d)),
            Ok(r) => r,
        },
    };
    printer.diagnostics(&rendered.warnings);
    let plan = tree::plan(repo, rendered.tree, &rendered.owned, &rendered.keep)?;
    let deleted = plan.deleted.iter().map(|(p, _)| p.as_str());
    printer.diagnostics(&crate::render::deletion_warnings(deleted));
    if args.output.get() == Format::Json {
        printer.envelope(
            true,
            serde_json::json!({"changed": plan.paths(), "diff": plan.unified_diff()}),
        );
    } else {
        printer.data(&plan.unified_diff());
    }
    if plan.is_empty() {
        printer.status("no changes");
    }
    Ok(ExitStatus::Success)
}
