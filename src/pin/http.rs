//! The two reads `pin` makes from a registry (a manifest, a page of tags), sent with reqwest
//! rather than oci-client, because oci-client turns a 429 or 503 into an error without its
//! headers, and `Retry-After` is a header. oci-client still does the token dance
//! ([`oci_client::Client::auth`]); the token is kept per repository here and fetched again once
//! when the registry answers 401 (it expired).
//!
//! `Retry-After` is read as RFC 9110 §10.2.3 defines it: a number of seconds, or an HTTP date
//! (the IMF-fixdate form of §5.6.7, `Sun, 06 Nov 1994 08:49:37 GMT`, the one senders must use).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::StatusCode;
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderMap, RETRY_AFTER};

/// How a request proves who is asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Credential {
    /// Nothing.
    None,
    /// A bearer token from the registry's token service.
    Bearer(String),
    /// HTTP basic (a registry that does not use tokens).
    Basic(String, String),
}

/// An answer, whatever its status.
pub(crate) struct Answer {
    /// The HTTP status.
    pub status: StatusCode,
    /// Its headers.
    pub headers: HeaderMap,
    /// Its body.
    pub body: Vec<u8>,
}

/// A plain HTTP client with the registry timeouts.
pub(crate) struct Http {
    client: reqwest::Client,
    /// Hosts (`host:port`) served over plain HTTP.
    insecure: Vec<String>,
}

impl Http {
    /// A client; `timeout` bounds connecting and each read.
    pub fn new(timeout: Duration, insecure: Vec<String>, user_agent: &str) -> Result<Http, reqwest::Error> {
        let client = reqwest::Client::builder()
            .connect_timeout(timeout)
            .read_timeout(timeout)
            .user_agent(user_agent)
            .build()?;
        Ok(Http { client, insecure })
    }

    /// `https://<host>/v2/<path>/<rest>` (`http` for an insecure registry).
    pub fn url(&self, host: &str, path: &str, rest: &str) -> String {
        let scheme = if self.insecure.iter().any(|h| h == host) {
            "http"
        } else {
            "https"
        };
        format!("{scheme}://{host}/v2/{path}/{rest}")
    }

    /// GET `url`.
    pub async fn get(&self, url: &str, accept: &str, credential: &Credential) -> Result<Answer, reqwest::Error> {
        self.send(self.client.get(url), accept, credential).await
    }

    /// HEAD `url` (`publish` asks what a tag names without downloading the manifest).
    pub async fn head(&self, url: &str, accept: &str, credential: &Credential) -> Result<Answer, reqwest::Error> {
        self.send(self.client.head(url), accept, credential).await
    }

    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        accept: &str,
        credential: &Credential,
    ) -> Result<Answer, reqwest::Error> {
        let mut request = request;
        if !accept.is_empty() {
            request = request.header(ACCEPT, accept);
        }
        request = match credential {
            Credential::None => request,
            Credential::Bearer(token) => request.header(AUTHORIZATION, format!("Bearer {token}")),
            Credential::Basic(user, password) => request.basic_auth(user, Some(password)),
        };
        let response = request.send().await?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.bytes().await?.to_vec();
        Ok(Answer { status, headers, body })
    }
}

/// How long `Retry-After` asks to wait, from `now`; `None` when absent or unreadable. A date in
/// the past is no wait.
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = UNIX_EPOCH + Duration::from_secs(http_date(value)?);
    Some(at.duration_since(now).unwrap_or_default())
}

/// Seconds since 1970 of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
fn http_date(value: &str) -> Option<u64> {
    let (_, rest) = value.split_once(", ")?;
    let parts: Vec<&str> = rest.split(' ').collect();
    let [day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| m == month)? as i64 + 1;
    let day: i64 = day.parse().ok().filter(|d| (1..=31).contains(d))?;
    let year: i64 = year.parse().ok().filter(|y| *y >= 1970)?;
    let hms: Vec<i64> = time.split(':').map(|p| p.parse().ok()).collect::<Option<_>>()?;
    let [h, m, s] = hms.as_slice() else { return None };
    if *h > 23 || *m > 59 || *s > 60 {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm, proleptic Gregorian calendar).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + h * 3600 + m * 60 + s).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn after(value: &str, now: u64) -> Option<Duration> {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_str(value).unwrap());
        retry_after(&headers, UNIX_EPOCH + Duration::from_secs(now))
    }

    #[test]
    fn retry_after_is_seconds_or_an_http_date() {
        assert_eq!(after("7", 0), Some(Duration::from_secs(7)));
        // RFC 9110's example date is 784111777 seconds after 1970.
        assert_eq!(http_date("Sun, 06 Nov 1994 08:49:37 GMT"), Some(784_111_777));
        assert_eq!(
            after("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_770),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            after("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_800),
            Some(Duration::ZERO)
        );
        assert_eq!(http_date("Tue, 29 Feb 2028 23:59:59 GMT"), Some(1_835_481_599));
        assert_eq!(after("soon", 0), None);
        assert_eq!(after("-3", 0), None);
        assert_eq!(http_date("Sun, 06 Foo 1994 08:49:37 GMT"), None);
    }
}
