//! The floor of a `render --check` that looks at every file: how long this machine takes just to
//! `stat` every path of a rendered repository, on one thread and on all cores, with no reading,
//! no comparing and no process start. `bench/scale.py` prints it beside the cached check.
//!
//!     cargo run --release --example stat_floor -- REPO
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rayon::prelude::*;

/// Every file and folder under the repository's inputs and outputs, as a check records them.
fn paths(repo: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo: Vec<PathBuf> = ["kaas.yaml", "kaas.lock", "base", "tenants", "overlays", "flux"]
        .iter()
        .map(|p| repo.join(p))
        .filter(|p| p.exists())
        .collect();
    while let Some(p) = todo.pop() {
        if p.is_dir() {
            for e in std::fs::read_dir(&p).expect("list a folder") {
                todo.push(e.expect("read a folder entry").path());
            }
        }
        out.push(p);
    }
    out
}

fn best_of(runs: usize, f: impl Fn()) -> Duration {
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn main() {
    let repo = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| ".".into()));
    let paths = paths(&repo);
    let stat = |p: &PathBuf| {
        std::hint::black_box(std::fs::symlink_metadata(p).ok());
    };
    let one = best_of(5, || paths.iter().for_each(stat));
    let all = best_of(5, || paths.par_iter().for_each(stat));
    let per_call = one.as_secs_f64() * 1e6 / paths.len().max(1) as f64;
    println!(
        "{} paths: one thread {:.1} ms ({per_call:.2} us a stat), {} threads {:.1} ms",
        paths.len(),
        one.as_secs_f64() * 1e3,
        rayon::current_num_threads(),
        all.as_secs_f64() * 1e3,
    );
}
