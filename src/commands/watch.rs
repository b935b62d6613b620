//! `watch`: render on every save. notify's debouncer delivers events in batches, each event once
//! it is `DEBOUNCE` old, repeats on a path merged, so a save is one render; errors are printed
//! and the watcher keeps going; Ctrl-C stops it between renders, so no write is cut off.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache};

use crate::cli::Printer;
use crate::cli::WatchArgs;
use crate::commands::ExitStatus;
use crate::commands::acquire_lock;
use crate::commands::commit::Committer;
use crate::commands::pipeline;
use crate::commands::summary::{Status, summarize};
use crate::diagnostics;
use crate::render::Options;
use crate::repo::inputs;
use crate::repo::lock::LOCK_PATH;
use crate::repo::tree;
use crate::repo::watch::classify;
use crate::spec::load::ParseCache;

/// How long an event waits for more of its kind on its path before it is delivered: an editor's
/// save (truncate, write, close, rename) is one batch, not four renders.
const DEBOUNCE: Duration = Duration::from_millis(50);

/// The watcher with its debouncer.
type InputWatcher = Debouncer<notify::RecommendedWatcher, RecommendedCache>;

/// Runs `watch` until Ctrl-C (exit 0). Each render holds the repository lock (issue 9), waiting
/// up to `lock_timeout` for another run.
pub fn run(printer: &Printer, repo: &Path, args: &WatchArgs, lock_timeout: Duration) -> Result<ExitStatus> {
    let repo = fs_err::canonicalize(repo)?;
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst))
            .context("failed to install the Ctrl-C handler")?;
    }
    let (tx, rx) = mpsc::channel::<Vec<PathBuf>>();
    let mut watcher = notify_debouncer_full::new_debouncer(DEBOUNCE, None, move |events: DebounceEventResult| {
        // Opens and reads (our own render reads every input) are not changes. Errors (a queue
        // overflow) are not reported: the next event renders the whole tree's state anyway.
        if let Ok(events) = events {
            let paths: Vec<PathBuf> = events
                .into_iter()
                .filter(|e| !matches!(e.kind, notify::EventKind::Access(_)))
                .flat_map(|e| e.event.paths)
                .collect();
            if !paths.is_empty() {
                let _ = tx.send(paths);
            }
        }
    })
    .context("failed to start the file watcher")?;
    watch_inputs(&mut watcher, &repo)?;
    let mut cache = ParseCache::default();
    render_once(printer, &repo, args, lock_timeout, &mut cache);
    let mut last_lock = std::fs::read(repo.join(LOCK_PATH)).ok();
    printer.status(&format!("watching {} for changes (Ctrl-C to stop)", repo.display()));
    while !stop.load(Ordering::SeqCst) {
        // A timeout, so that Ctrl-C is seen while nothing changes.
        let mut batch = match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(paths) => paths,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        // Saves made while the last render ran are one more render, not one each.
        batch.extend(rx.try_iter().flatten());
        let change = classify(&repo, &batch);
        if change.is_empty() {
            continue;
        }
        // Our own render writes kaas.lock (VIP allocations); only someone else's edit of it
        // (e.g. `pin`) is a reason to render again.
        let lock_now = std::fs::read(repo.join(LOCK_PATH)).ok();
        if !change.platform && change.tenants.is_empty() && lock_now == last_lock {
            continue;
        }
        if change.platform {
            // `tenants/` or `base/` may have been created: watch them too.
            watch_inputs(&mut watcher, &repo)?;
        }
        render_once(printer, &repo, args, lock_timeout, &mut cache);
        last_lock = std::fs::read(repo.join(LOCK_PATH)).ok();
    }
    printer.status("stopped");
    Ok(ExitStatus::Success)
}

/// Watches only the inputs: the root (kaas.yaml, kaas.lock, new folders), `tenants/` and
/// `base/`. Not `overlays/` or `flux/`: our own writes cost no events at all.
fn watch_inputs(watcher: &mut InputWatcher, repo: &Path) -> Result<()> {
    watcher
        .watch(repo, RecursiveMode::NonRecursive)
        .with_context(|| format!("failed to watch `{}`", repo.display()))?;
    for (dir, mode) in [
        ("tenants", RecursiveMode::NonRecursive),
        ("base", RecursiveMode::Recursive),
    ] {
        let path = repo.join(dir);
        if path.is_dir() {
            watcher
                .watch(&path, mode)
                .with_context(|| format!("failed to watch `{}`", path.display()))?;
        }
    }
    Ok(())
}

/// One render; never fails the watcher: problems are printed and the next save tries again.
fn render_once(printer: &Printer, repo: &Path, args: &WatchArgs, lock_timeout: Duration, cache: &mut ParseCache) {
    let started = Instant::now();
    // Held for this render only: read, plan and write are one step for any other run.
    let waiting = |who| format!("watching: waiting for another kaas-gitops run{who} to finish");
    let Some(_lock) = acquire_lock(printer, repo, lock_timeout, waiting) else {
        printer.status("watching: this change was not rendered; it runs again on the next change");
        return;
    };
    match try_render(printer, repo, args, cache, started) {
        Ok(()) => {}
        Err(e) => {
            printer.error_chain(&e);
            printer.status("watching: the render failed; it runs again on the next change");
        }
    }
}

fn try_render(
    printer: &Printer,
    repo: &Path,
    args: &WatchArgs,
    cache: &mut ParseCache,
    started: Instant,
) -> Result<()> {
    let inputs = match inputs::read(repo, &[])? {
        Ok(i) => i,
        Err(mut d) => {
            diagnostics::sort(&mut d);
            printer.diagnostics(&d);
            printer.status("watching: fix the problem above; nothing was written");
            return Ok(());
        }
    };
    let t_read = started.elapsed().as_secs_f64() * 1e3;
    let options = Options {
        locked: args.render.locked,
        ..Options::default()
    };
    let mut rendered = match pipeline::run_cached(&inputs, &options, cache) {
        Ok(r) => r,
        Err(mut d) => {
            diagnostics::sort(&mut d);
            printer.diagnostics(&d);
            let n = d.iter().filter(|d| d.is_error()).count();
            printer.status(&format!("watching: {n} problem(s) above; nothing was written"));
            return Ok(());
        }
    };
    let t_render = started.elapsed().as_secs_f64() * 1e3;
    let plan = tree::plan(repo, rendered.tree, &rendered.owned, &rendered.keep)?;
    // The same warnings as `render` (e.g. a deleted tenant's etcd snapshots going with it).
    let deleted = plan.deleted.iter().map(|(p, _)| p.as_str());
    rendered.warnings.extend(crate::render::deletion_warnings(deleted));
    diagnostics::sort(&mut rendered.warnings);
    printer.diagnostics(&rendered.warnings);
    if printer.verbose() {
        printer.status(&format!(
            "timings: read inputs {t_read:.1} ms, load+validate+render {:.1} ms, compare {:.1} ms",
            t_render - t_read,
            started.elapsed().as_secs_f64() * 1e3 - t_render
        ));
    }
    let names: Vec<String> = rendered.model.tenants.iter().map(|t| t.name.clone()).collect();
    let summary = summarize(&plan, &names);
    let committer = if args.commit && !plan.is_empty() {
        Some(Committer::prepare(repo, &rendered.model.platform)?)
    } else {
        None
    };
    tree::apply(repo, &plan)?;
    let changed: Vec<String> = summary
        .iter()
        .filter(|(_, (s, _))| *s != Status::Unchanged)
        .map(|(name, (s, files))| format!("{name} {} ({})", s.as_str(), crate::commands::summary::files(*files)))
        .collect();
    let took = started.elapsed().as_secs_f64() * 1e3;
    if changed.is_empty() {
        printer.status(&format!("render: no changes ({took:.0} ms)"));
    } else {
        printer.status(&format!("render: {} ({took:.0} ms)", changed.join(", ")));
    }
    if let Some(c) = committer {
        c.commit(printer, &plan, &summary)?;
    }
    Ok(())
}
