//! `validate`: runs every check on the files on disk and prints the findings.

use std::path::Path;
use std::time::Instant;

use anyhow::{Result, bail};
use serde_json::json;

use crate::cli::Printer;
use crate::cli::{Format, ValidateArgs};
use crate::commands::ExitStatus;
use crate::validate::{self, Options, Report};

/// Runs `validate`.
pub fn run(printer: &Printer, repo: &Path, args: &ValidateArgs) -> Result<ExitStatus> {
    let ValidateArgs {
        crds,
        format,
        no_kustomize,
    } = args;
    let Some(crds) = crds else {
        bail!("no CRD folder: pass `--crds DIR` or set `KAAS_CRDS` (a folder of CustomResourceDefinition YAML)");
    };
    let started = Instant::now();
    let options = Options {
        crds: crds.clone(),
        kustomize: !no_kustomize,
    };
    let report = validate::run(repo, &options)?;
    print(printer, *format, &report, started);
    Ok(if report.errors() > 0 {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

fn print(printer: &Printer, format: Format, report: &Report, started: Instant) {
    match format {
        Format::Json => printer.data(&format!(
            "{}\n",
            json!({
                "ok": report.errors() == 0,
                "objects": report.objects,
                "files": report.files,
                "folders": report.folders,
                "crds": report.crds,
                "errors": report.errors(),
                "warnings": report.warnings(),
                "findings": report.findings,
                "notes": report.notes,
            })
        )),
        Format::Github => {
            for f in &report.findings {
                printer.data(&format!("{}\n", f.display_diagnostic().github_annotation()));
            }
        }
        Format::Human => {
            let diagnostics: Vec<_> = report
                .findings
                .iter()
                .map(validate::Finding::display_diagnostic)
                .collect();
            printer.diagnostics(&diagnostics);
        }
    }
    if printer.verbose() {
        for note in &report.notes {
            printer.status(&format!("note: {note}"));
        }
        for (step, took) in &report.timings {
            printer.status(&format!("  {step}: {} ms", took.as_millis()));
        }
    }
    let kustomize = if report.folders > 0 {
        format!(", {} folders built with kustomize", report.folders)
    } else {
        String::new()
    };
    let scope = format!(
        "{} objects in {} files against {} CRDs{kustomize}, in {} ms",
        report.objects,
        report.files,
        report.crds,
        started.elapsed().as_millis()
    );
    if report.errors() > 0 {
        printer.status(&format!(
            "error: {} error(s), {} warning(s) in {scope}",
            report.errors(),
            report.warnings()
        ));
    } else {
        printer.status(&format!("ok: {} warning(s) in {scope}", report.warnings()));
    }
}
