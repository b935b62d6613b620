//! `render` and `render --check`.

use std::path::Path;

use anyhow::Result;
use serde_json::json;

use crate::cli::Printer;
use crate::cli::{Format, RenderArgs};
use crate::commands::commit::Committer;
use crate::commands::summary::{Status, summarize};
use crate::commands::{ExitStatus, pipeline};
use crate::diagnostics::Diagnostic;
use crate::render::Options;
use crate::repo::inputs;
use crate::repo::tenant_cache::TenantCache;
use crate::repo::{stat_cache, tree};
use crate::spec::load::ParseCache;

/// Runs `render`.
pub fn run(printer: &Printer, repo: &Path, args: &RenderArgs) -> Result<ExitStatus> {
    let started = std::time::Instant::now();
    // A render or check of an unchanged repository is proved from file stats alone. Options
    // that ask for more (`--full`), for less (`--tenant`) or for a commit take the full pipeline.
    let cacheable = !args.commit && args.select.tenants.is_empty() && (args.check || !args.select.full);
    let mode = if args.check {
        stat_cache::Mode::Check
    } else {
        stat_cache::Mode::Render
    };
    let cache_key = stat_cache::key(args.select.render.locked);
    if cacheable && let Some(outcome) = stat_cache::lookup(repo, mode, &cache_key) {
        if printer.verbose() {
            printer.status("stat cache: no input or output changed since the last run that compared them");
        }
        let plan = tree::Plan {
            unchanged: outcome.unchanged,
            ..tree::Plan::default()
        };
        if args.check {
            return Ok(report_check(printer, args.output.format, &plan, &outcome.warnings));
        }
        let summary = summarize(&plan, &outcome.tenants);
        report_written(
            printer,
            args.output.format,
            &plan,
            &summary,
            &outcome.tenants,
            &outcome.warnings,
            started,
        );
        return Ok(ExitStatus::Success);
    }
    // Before anything is read: what changes from here on is newer than this (see Stamp).
    let stamp = cacheable.then(|| stat_cache::Stamp::take(repo, mode)).flatten();
    // `--check` is a CI gate: it compares every file, so hand edits inside overlays are caught.
    let mut select = Options::from(&args.select);
    select.full |= args.check;
    // Tenant files parsed by an earlier run are not parsed again (see tenant_cache); the cache
    // is read while the inputs are.
    let (inputs, known) = rayon::join(|| inputs::read(repo, &args.select.tenants), || TenantCache::load(repo));
    let inputs = match inputs? {
        Err(d) => return Ok(crate::commands::report_invalid(printer, args.output.format, d)),
        Ok(inputs) => inputs,
    };
    let read_ms = started.elapsed().as_secs_f64() * 1e3;
    let mut parsed = ParseCache::default();
    let (hits, digests) = known.seed(&inputs, &mut parsed);
    let mut rendered = match pipeline::run_cached(&inputs, &select, &mut parsed) {
        Err(d) => return Ok(crate::commands::report_invalid(printer, args.output.format, d)),
        Ok(r) => r,
    };
    let render_ms = started.elapsed().as_secs_f64() * 1e3;
    let plan = tree::plan(repo, rendered.tree, &rendered.owned, &rendered.keep)?;
    let deleted = plan.deleted.iter().map(|(p, _)| p.as_str());
    rendered.warnings.extend(crate::render::deletion_warnings(deleted));
    let compare_ms = started.elapsed().as_secs_f64() * 1e3;
    if printer.verbose() {
        printer.status(&format!(
            "timings: read inputs {read_ms:.1} ms, load+validate+render {:.1} ms ({hits} of {} tenant files from the parse cache), compare with disk {:.1} ms",
            render_ms - read_ms,
            inputs.tenants.len(),
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
    // A run that found nothing to do is recorded, so the next one is proved from stats alone.
    // Only such a run is recorded, so what the next one prints is exactly what this one printed.
    let record = |stamp: stat_cache::Stamp| {
        let kept = rendered.keep.iter().map(|k| {
            if k.ends_with('/') {
                format!("{k}kustomization.yaml")
            } else {
                k.clone()
            }
        });
        let files: Vec<String> = plan.unchanged_paths.iter().cloned().chain(kept).collect();
        let outcome = stat_cache::Outcome {
            tenants: tenants.clone(),
            unchanged: plan.unchanged,
            warnings: rendered.warnings.clone(),
        };
        let outputs = stat_cache::output_paths(files.iter().map(String::as_str), &plan.listed_dirs);
        stat_cache::store(repo, stamp, &cache_key, outputs, outcome);
    };
    if args.check {
        if plan.is_empty()
            && let Some(stamp) = stamp
        {
            record(stamp);
        }
        return Ok(report_check(printer, args.output.format, &plan, &rendered.warnings));
    }
    // Git is checked before anything is written, so a failure leaves the repository as it was.
    let committer = args
        .commit
        .then(|| Committer::prepare(repo, &rendered.model.platform))
        .transpose()?;
    if plan.is_empty() {
        if let Some(stamp) = stamp {
            record(stamp);
        }
    } else {
        stat_cache::forget(repo);
        tree::apply(repo, &plan)?;
    }
    report_written(
        printer,
        args.output.format,
        &plan,
        &summary,
        &tenants,
        &rendered.warnings,
        started,
    );
    known.save(repo, &inputs, &digests, &parsed);
    if let Some(committer) = committer {
        committer.commit(printer, &plan, &summary)?;
    }
    Ok(ExitStatus::Success)
}

/// Prints the outcome of `render --check` and returns its exit status.
fn report_check(printer: &Printer, format: Format, plan: &tree::Plan, warnings: &[Diagnostic]) -> ExitStatus {
    let drift = !plan.is_empty();
    match format {
        Format::Json => {
            let mut diagnostics = warnings.to_vec();
            diagnostics.extend(plan.paths().into_iter().map(|p| {
                Diagnostic::error(format!("`{p}` differs from what `kaas-gitops render` writes"))
                    .in_file(p)
                    .with_hint("run `kaas-gitops render` and commit the result")
            }));
            printer.envelope(
                !drift,
                json!({
                    "drift": plan.paths(),
                    "diagnostics": diagnostics,
                }),
            );
        }
        Format::Github => {
            for d in warnings {
                printer.data(&format!("{}\n", d.github_annotation()));
            }
            for p in plan.paths() {
                printer.data(&format!(
                    "::error file={p}::`{p}` differs from what `kaas-gitops render` writes; run it and commit\n"
                ));
            }
        }
        Format::Human => {
            printer.diagnostics(warnings);
            if drift {
                printer.data(&plan.unified_diff());
                printer.error(
                    &format!(
                        "{} file(s) differ from the rendered output",
                        plan.paths().len() + plan.leftovers.len()
                    ),
                    Some("run `kaas-gitops render` and commit the result"),
                );
            } else {
                printer.status("up to date: the files on disk are what kaas-gitops renders");
            }
        }
    }
    if drift {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    }
}

/// Prints what a render wrote, per tenant and in total.
fn report_written(
    printer: &Printer,
    format: Format,
    plan: &tree::Plan,
    summary: &std::collections::BTreeMap<String, (Status, usize)>,
    tenants: &[String],
    warnings: &[Diagnostic],
    started: std::time::Instant,
) {
    match format {
        Format::Json => {
            let units: Vec<_> = summary
                .iter()
                .map(|(name, (status, files))| json!({"name": name, "status": status, "files": files}))
                .collect();
            printer.envelope(true, json!({
                "units": units,
                "written": plan.created.iter().map(|(p, _)| p).chain(plan.changed.iter().map(|(p, _, _)| p)).collect::<Vec<_>>(),
                "deleted": plan.deleted.iter().map(|(p, _)| p).collect::<Vec<_>>(),
                "diagnostics": warnings,
            }));
        }
        Format::Github => {
            for d in warnings {
                printer.data(&format!("{}\n", d.github_annotation()));
            }
        }
        Format::Human => {
            printer.diagnostics(warnings);
            let width = summary.keys().map(String::len).max().unwrap_or(8);
            for (name, (status, files)) in summary {
                let detail = if *status == Status::Unchanged {
                    String::new()
                } else {
                    format!(" ({})", crate::commands::summary::files(*files))
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
}
