//! `render` and `render --check`.

use std::path::Path;

use anyhow::Result;
use serde_json::json;

use crate::cli::{Format, RenderArgs};
use crate::commands::commit::Committer;
use crate::commands::summary::{Status, summarize};
use crate::commands::{ExitStatus, Printer, inputs, pipeline};
use crate::diagnostics::{self, Diagnostic};
use crate::tree;

/// Runs `render`.
pub fn run(printer: &Printer, repo: &Path, args: &RenderArgs) -> Result<ExitStatus> {
    let started = std::time::Instant::now();
    // `--check` is a CI gate: it compares every file, so hand edits inside overlays are caught.
    let mut select = args.select.clone();
    select.full |= args.check;
    let inputs = match inputs::read(repo)? {
        Err(d) => return Ok(report_invalid(printer, args.format, d)),
        Ok(inputs) => inputs,
    };
    let read_ms = started.elapsed().as_secs_f64() * 1e3;
    let rendered = match pipeline::run(&inputs, &select) {
        Err(d) => return Ok(report_invalid(printer, args.format, d)),
        Ok(r) => r,
    };
    let render_ms = started.elapsed().as_secs_f64() * 1e3;
    let plan = tree::plan(repo, &rendered.tree, &rendered.owned, &rendered.keep)?;
    let compare_ms = started.elapsed().as_secs_f64() * 1e3;
    if printer.verbose() {
        printer.status(&format!(
            "timings: read inputs {read_ms:.1} ms, load+validate+render {:.1} ms, compare with disk {:.1} ms",
            render_ms - read_ms,
            compare_ms - render_ms
        ));
    }
    let tenants: Vec<String> = rendered
        .model
        .tenants
        .iter()
        .filter(|t| args.select.tenants.is_empty() || args.select.tenants.contains(&t.name))
        .map(|t| t.name.clone())
        .collect();
    let summary = summarize(&plan, &tenants);
    if args.check {
        let drift = !plan.is_empty();
        match args.format {
            Format::Json => printer.data(&format!(
                "{}\n",
                json!({
                    "ok": !drift,
                    "drift": plan.paths(),
                    "diagnostics": rendered.warnings,
                })
            )),
            Format::Github => {
                for d in &rendered.warnings {
                    printer.data(&format!("{}\n", d.github_annotation()));
                }
                for p in plan.paths() {
                    printer.data(&format!(
                        "::error file={p}::`{p}` differs from what `kaas-gitops render` writes; run it and commit\n"
                    ));
                }
            }
            Format::Human => {
                printer.diagnostics(&rendered.warnings);
                if drift {
                    printer.data(&plan.unified_diff());
                    printer.status(&format!(
                        "error: {} file(s) differ from the rendered output\n\nhint: run `kaas-gitops render` and commit the result",
                        plan.paths().len() + plan.leftovers.len()
                    ));
                } else {
                    printer.status("up to date: the files on disk are what kaas-gitops renders");
                }
            }
        }
        return Ok(if drift {
            ExitStatus::Failure
        } else {
            ExitStatus::Success
        });
    }
    // Git is checked before anything is written, so a failure leaves the repository as it was.
    let committer = args
        .commit
        .then(|| Committer::prepare(repo, &rendered.model.platform))
        .transpose()?;
    tree::apply(repo, &plan)?;
    match args.format {
        Format::Json => {
            let tenants: Vec<_> = summary
                .iter()
                .map(|(name, (status, files))| json!({"name": name, "status": status, "files": files}))
                .collect();
            printer.data(&format!("{}\n", json!({
                "ok": true,
                "units": tenants,
                "written": plan.created.iter().map(|(p, _)| p).chain(plan.changed.iter().map(|(p, _, _)| p)).collect::<Vec<_>>(),
                "deleted": plan.deleted.iter().map(|(p, _)| p).collect::<Vec<_>>(),
                "diagnostics": rendered.warnings,
            })));
        }
        Format::Github => {
            for d in &rendered.warnings {
                printer.data(&format!("{}\n", d.github_annotation()));
            }
        }
        Format::Human => {
            printer.diagnostics(&rendered.warnings);
            let width = summary.keys().map(String::len).max().unwrap_or(8);
            for (name, (status, files)) in &summary {
                let detail = if *status == Status::Unchanged {
                    String::new()
                } else {
                    format!(" ({files} files)")
                };
                printer.status(&format!("{name:width$}  {}{detail}", status.as_str()));
            }
            if printer.verbose() {
                for p in plan.paths() {
                    printer.status(&format!("  {p}"));
                }
            }
            printer.status(&format!(
                "rendered {} tenant(s): {} written, {} deleted, {} unchanged in {} ms",
                tenants.len(),
                plan.created.len() + plan.changed.len(),
                plan.deleted.len(),
                plan.unchanged,
                started.elapsed().as_millis()
            ));
        }
    }
    if let Some(committer) = committer {
        committer.commit(printer, &plan, &summary)?;
    }
    Ok(ExitStatus::Success)
}

/// Prints every problem and returns exit 1.
pub fn report_invalid(printer: &Printer, format: Format, mut diags: Vec<Diagnostic>) -> ExitStatus {
    diagnostics::sort(&mut diags);
    let errors = diags.iter().filter(|d| d.is_error()).count();
    match format {
        Format::Json => printer.data(&format!("{}\n", json!({"ok": false, "diagnostics": diags}))),
        Format::Github => {
            for d in &diags {
                printer.data(&format!("{}\n", d.github_annotation()));
            }
        }
        Format::Human => {
            printer.diagnostics(&diags);
            printer.status(&format!("error: {errors} problem(s) found; nothing was written"));
        }
    }
    ExitStatus::Failure
}
