//! A test-only pause between the steps of writing the tree, so the crash test kills a render
//! mid-write by construction instead of by timing (issue 47, item 9: timed kills all landed
//! after the render on a machine whose load changed).
//!
//! With `KAAS_GITOPS_TEST_PAUSE_AT=<n>` the run stops for good once exactly `n` steps of
//! [`super::tree::apply`] are done (a step is one temp file written, one rename or one
//! deletion; they run on several threads): step `n + 1` waits until steps 1 to `n` have
//! finished, prints `kaas-gitops: paused after write step <n>` on stderr and sleeps until
//! killed, and no later step starts. Unset (every real run), a step costs one read of a value
//! read once.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The variable the crash test sets.
pub const VARIABLE: &str = "KAAS_GITOPS_TEST_PAUSE_AT";

static PAUSE_AT: OnceLock<Option<u64>> = OnceLock::new();
static STARTED: AtomicU64 = AtomicU64::new(0);
static FINISHED: AtomicU64 = AtomicU64::new(0);

/// Runs one write step, unless the pause comes first.
pub fn step<T>(op: impl FnOnce() -> T) -> T {
    let Some(at) = *PAUSE_AT.get_or_init(|| std::env::var(VARIABLE).ok().and_then(|v| v.parse().ok())) else {
        return op();
    };
    let number = STARTED.fetch_add(1, Ordering::SeqCst) + 1;
    if number > at {
        if number == at + 1 {
            while FINISHED.load(Ordering::SeqCst) < at {
                std::thread::yield_now();
            }
            eprintln!("kaas-gitops: paused after write step {at} ({VARIABLE})");
        }
        loop {
            std::thread::park();
        }
    }
    let out = op();
    FINISHED.fetch_add(1, Ordering::SeqCst);
    out
}
