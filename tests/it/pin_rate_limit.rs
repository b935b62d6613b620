//! `pin` against a registry that rate-limits (429, or 503 with `Retry-After`): it waits as long
//! as the registry asks when that fits in `--timeout`, says so clearly when it does not, and
//! retries a bare 429 a bounded number of times. The registry is a loopback test double
//! (tests/it/support/rate_limited_registry.py): the real registry the suite runs never says 429.

use std::collections::BTreeMap;

use crate::common::loopback_server;
use crate::pin::{no_credentials, pin, repo_on};

/// The double in `mode`, and the log of the manifest GETs it answered.
struct Limited {
    child: std::process::Child,
    host: String,
    log: tempfile::NamedTempFile,
}

impl Limited {
    fn start(mode: &str) -> Limited {
        let log = tempfile::NamedTempFile::new().unwrap();
        let (child, port) = loopback_server(
            "rate_limited_registry.py",
            &[mode.into(), log.path().as_os_str().to_owned()],
        );
        Limited {
            child,
            host: format!("127.0.0.1:{port}"),
            log,
        }
    }

    /// `(time, path, status)` per manifest GET, in order.
    fn requests(&self) -> Vec<(f64, String, u16)> {
        std::fs::read_to_string(self.log.path())
            .unwrap()
            .lines()
            .map(|l| {
                let mut p = l.split(' ');
                (
                    p.next().unwrap().parse().unwrap(),
                    p.next().unwrap().to_string(),
                    p.next().unwrap().parse().unwrap(),
                )
            })
            .collect()
    }

    /// Requests per path.
    fn per_path(&self) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        for (_, path, _) in self.requests() {
            *out.entry(path).or_default() += 1;
        }
        out
    }
}

impl Drop for Limited {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The first request was refused with `status`; the same path asked again no sooner than
/// `at_least` seconds later, and then got its manifest.
#[track_caller]
fn assert_waited(limited: &Limited, status: u16, at_least: f64) {
    let requests = limited.requests();
    let (t0, path, first) = requests.first().cloned().expect("a manifest request");
    assert_eq!(first, status, "{requests:?}");
    let (t1, _, then) = requests
        .iter()
        .skip(1)
        .find(|(_, p, _)| *p == path)
        .cloned()
        .unwrap_or_else(|| panic!("`{path}` was not asked again: {requests:?}"));
    assert_eq!(then, 200, "{requests:?}");
    assert!(t1 - t0 >= at_least, "asked again after {:.3} s: {requests:?}", t1 - t0);
}

#[test]
fn a_429_with_retry_after_seconds_is_waited_out() {
    let limited = Limited::start("once-seconds");
    let repo = repo_on(&limited.host, "tag: 26.8.2-edge");
    let run = pin(&repo, &[], &no_credentials());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_waited(&limited, 429, 2.0);
    assert!(
        repo.read("kaas.lock").contains(&format!(
            "- image: {}/clastix/kamaji\n  tag: 26.8.2-edge\n",
            limited.host
        )),
        "{}",
        repo.read("kaas.lock")
    );
}

#[test]
fn a_503_with_retry_after_as_an_http_date_is_waited_out() {
    let limited = Limited::start("once-date");
    let repo = repo_on(&limited.host, "tag: 26.8.2-edge");
    let run = pin(&repo, &[], &no_credentials());
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The date has whole seconds: 2 s ahead when sent is at least 1 s ahead.
    assert_waited(&limited, 503, 1.0);
}

#[test]
fn a_retry_after_beyond_the_timeout_fails_at_once_and_says_so() {
    let limited = Limited::start("always-long");
    let repo = repo_on(&limited.host, "tag: 26.8.2-edge");
    let before = repo.read("kaas.lock");
    let started = std::time::Instant::now();
    let run = pin(&repo, &[], &no_credentials());
    assert_eq!(run.code, 2, "{}", run.stderr);
    let host = &limited.host;
    assert!(
        run.stderr.contains(&format!(
            "error: registry `{host}` answered HTTP 429 to resolve `{host}/clastix/kamaji:26.8.2-edge` and asks to retry in 120 s (`Retry-After`), later than the 5 s `--timeout` allows"
        )),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("hint: run `kaas-gitops pin` again in 120 s, or allow the wait with `--timeout 125`"),
        "{}",
        run.stderr
    );
    // Not waited, not retried: one request per image.
    assert!(limited.per_path().values().all(|n| *n == 1), "{:?}", limited.requests());
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    assert_eq!(repo.read("kaas.lock"), before);
}

#[test]
fn a_429_without_retry_after_is_retried_a_bounded_number_of_times() {
    let limited = Limited::start("always-bare");
    let repo = repo_on(&limited.host, "tag: 26.8.2-edge");
    let before = repo.read("kaas.lock");
    let run = pin(&repo, &[], &no_credentials());
    assert_eq!(run.code, 2, "{}", run.stderr);
    let host = &limited.host;
    assert!(
        run.stderr.contains(&format!(
            "error: registry `{host}` is rate-limiting requests for `{host}/clastix/kamaji:26.8.2-edge` (HTTP 429)"
        )),
        "{}",
        run.stderr
    );
    // Three attempts per image, then it gives up.
    let per_path = limited.per_path();
    assert!(
        !per_path.is_empty() && per_path.values().all(|n| *n == 3),
        "{per_path:?}"
    );
    assert_eq!(repo.read("kaas.lock"), before);
}
