//! HTTP, in one place: the async runtime each blocking command drives its requests on, the
//! client every request leaves through (connect and read timeouts, the user agent, the TLS roots
//! of reqwest's rustls set-up), and the one retry policy: a few attempts with a doubling pause
//! for faults that may pass, and `Retry-After` honoured. `pin` and `publish` (registries),
//! `pr` (forges), `crds` (release downloads) and the cluster client use it.

use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, RETRY_AFTER};

/// How kaas-gitops introduces itself to every server.
pub const USER_AGENT: &str = concat!("kaas-gitops/", env!("CARGO_PKG_VERSION"));

/// Attempts per request for faults that may pass (no connection, no answer in time, a 5xx).
pub const ATTEMPTS: u32 = 3;

/// The first pause between attempts; it doubles after each.
pub const BACKOFF: Duration = Duration::from_millis(250);

/// The runtime a blocking command drives its requests on: one thread, the caller's.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build()
}

/// A client builder with the user agent and `timeout` for connecting and for each read (a slow
/// but steady download is not cut off); callers add what their servers need.
pub fn client(timeout: Duration) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .connect_timeout(timeout)
        .read_timeout(timeout)
        .user_agent(USER_AGENT)
}

/// The pauses between attempts: [`BACKOFF`], then twice as long each time.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff { next: BACKOFF }
    }
}

impl Backoff {
    /// The pause before the next attempt.
    pub fn pause(&mut self) -> Duration {
        let pause = self.next;
        self.next *= 2;
        pause
    }
}

/// How long `Retry-After` asks to wait, from `now`; `None` when absent or unreadable. A date in
/// the past is no wait. Read as RFC 9110 §10.2.3 defines it: a number of seconds, or an HTTP
/// date (IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`, which jiff's RFC 2822 parser reads).
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = SystemTime::from(http_date(value)?);
    Some(at.duration_since(now).unwrap_or_default())
}

/// An HTTP date: RFC 2822's form, which IMF-fixdate is a case of.
fn http_date(value: &str) -> Option<jiff::Timestamp> {
    jiff::fmt::rfc2822::parse(value).ok().map(|z| z.timestamp())
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use reqwest::header::HeaderValue;

    use super::*;

    fn after(value: &str, now: u64) -> Option<Duration> {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_str(value).unwrap());
        retry_after(&headers, UNIX_EPOCH + Duration::from_secs(now))
    }

    fn seconds(value: &str) -> Option<i64> {
        http_date(value).map(|t| t.as_second())
    }

    #[test]
    fn retry_after_is_seconds_or_an_http_date() {
        assert_eq!(after("7", 0), Some(Duration::from_secs(7)));
        // RFC 9110's example date is 784111777 seconds after 1970.
        assert_eq!(seconds("Sun, 06 Nov 1994 08:49:37 GMT"), Some(784_111_777));
        assert_eq!(
            after("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_770),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            after("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_800),
            Some(Duration::ZERO)
        );
        assert_eq!(seconds("Tue, 29 Feb 2028 23:59:59 GMT"), Some(1_835_481_599));
        assert_eq!(after("soon", 0), None);
        assert_eq!(after("-3", 0), None);
        assert_eq!(seconds("Sun, 06 Foo 1994 08:49:37 GMT"), None);
    }

    #[test]
    fn the_backoff_doubles() {
        let mut b = Backoff::default();
        assert_eq!([b.pause(), b.pause(), b.pause()], [BACKOFF, BACKOFF * 2, BACKOFF * 4]);
    }
}
