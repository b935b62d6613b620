//! `validate`: runs every check on the files on disk and prints the findings.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::json;

use crate::cli::Printer;
use crate::cli::{CrdFetchArgs, Format, ValidateArgs};
use crate::commands::report_invalid;
use crate::commands::{ExitStatus, crds, pin};
use crate::crd_fetch::{self, Mode};
use crate::validate::{self, CrdSource, Options, Report};

/// How long one release asset download may take.
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `validate`.
pub fn run(printer: &Printer, repo: &Path, args: &ValidateArgs) -> Result<ExitStatus> {
    let ValidateArgs {
        crds,
        fetch,
        output,
        no_kustomize,
    } = args;
    let format = &output.format;
    let started = Instant::now();
    let crds = match crds {
        Some(dir) => CrdSource::Folder(dir.clone()),
        None => match pinned_crds(printer, repo, fetch, *format)? {
            Ok(texts) => CrdSource::Texts(texts),
            Err(status) => return Ok(status),
        },
    };
    let options = Options {
        crds,
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

/// The CRDs of the releases `kaas.yaml` pins, from the cache or downloaded, verified against
/// `kaas.lock`; or the exit status after printing why not.
fn pinned_crds(
    printer: &Printer,
    repo: &Path,
    args: &CrdFetchArgs,
    format: Format,
) -> Result<Result<Vec<(String, String)>, ExitStatus>> {
    let loaded = match pin::load(repo)? {
        Ok(loaded) => loaded,
        Err(diags) => {
            let status = report_invalid(printer, format, diags);
            printer.note(
                "the CRDs to check against follow from the releases `kaas.yaml` pins: fix it, or pass `--crds DIR`",
            );
            return Ok(Err(status));
        }
    };
    let settings = crds::settings(args, DOWNLOAD_TIMEOUT)?;
    let lock = &loaded.lock;
    let assets = loaded.crd_assets(&lock.images);
    let fetched = match crd_fetch::fetch_all(&settings, &assets, &lock.crds, Mode::Verify) {
        Ok(f) => f,
        Err(problems) => return Ok(Err(crds::report(printer, format, &problems))),
    };
    let unlocked: Vec<String> = fetched
        .iter()
        .filter(|f| !lock.crds.contains_key(&f.url))
        .map(|f| f.asset.to_string())
        .collect();
    if !unlocked.is_empty() && format != Format::Github {
        printer.warning(
            &format!(
                "{} CRD release asset(s) have no sha256 in `kaas.lock`, so a changed asset would go unnoticed: {}",
                unlocked.len(),
                unlocked.join(", ")
            ),
            Some("run `kaas-gitops pin` to record them"),
        );
    }
    if printer.verbose() {
        for f in &fetched {
            let from = if f.cached { "cache" } else { "downloaded" };
            printer.status(&format!("crds: {} {} ({from}, {})", f.asset, f.url, f.sha256));
        }
    }
    Ok(Ok(fetched.into_iter().map(|f| (f.asset.to_string(), f.text)).collect()))
}

fn print(printer: &Printer, format: Format, report: &Report, started: Instant) {
    match format {
        Format::Json => printer.envelope(
            report.errors() == 0,
            json!({
                "diagnostics": report.findings.iter().map(validate::Finding::display_diagnostic).collect::<Vec<_>>(),
                "objects": report.objects,
                "files": report.files,
                "folders": report.folders,
                "crds": report.crds,
                "errors": report.errors(),
                "warnings": report.warnings(),
                "findings": report.findings,
                "notes": report.notes,
            }),
        ),
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
    }
    if printer.very_verbose() {
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
        printer.failed(&format!(
            "{} error(s), {} warning(s) in {scope}",
            report.errors(),
            report.warnings()
        ));
    } else {
        printer.status(&format!("ok: {} warning(s) in {scope}", report.warnings()));
    }
}
