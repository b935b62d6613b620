//! The forges' REST APIs over HTTP: JSON in and out, a connect and read timeout on every
//! request, the same bounded retries as `pin` ([`crate::http`]: a few attempts with a doubling
//! pause, only for faults that may pass: no connection, no answer in time, 5xx), and
//! rate limits honoured: a 429, or a 403 that says it is one (`Retry-After`, or GitHub's
//! `x-ratelimit-remaining: 0`), is waited out when the forge asks for no more than
//! [`MAX_RATE_WAIT`], else reported with the time to wait.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::forge::{ForgeError, Kind};
use crate::http::{ATTEMPTS, Backoff, retry_after};

/// The longest `Retry-After` waited out; a longer one is reported instead.
pub const MAX_RATE_WAIT: Duration = Duration::from_secs(60);
/// Rate-limit waits per request at most, so a forge that keeps asking cannot hold us forever.
const MAX_RATE_WAITS: u32 = 3;

/// A forge's API: its base URL, the headers every request carries (the token among them).
pub struct Client {
    runtime: tokio::runtime::Runtime,
    http: reqwest::Client,
    base: String,
    headers: HeaderMap,
    kind: Kind,
    timeout: Duration,
}

/// An answer: the status and the body (JSON or the forge's error text).
pub struct Answer {
    /// The HTTP status.
    pub status: StatusCode,
    /// The body.
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as `T`, or what is wrong with it.
    pub fn json<T: DeserializeOwned>(&self, what: &str) -> Result<T, String> {
        serde_json::from_slice(&self.body).map_err(|e| format!("{what}: the answer is not the documented JSON ({e})"))
    }

    /// The forge's own words: `message` (GitHub, Gitea), `message`/`error` (GitLab), and
    /// GitHub's `errors[].message`, else the start of the body.
    pub fn message(&self) -> String {
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&self.body) else {
            let text = String::from_utf8_lossy(&self.body);
            return text.chars().take(200).collect::<String>().trim().to_string();
        };
        let mut parts = Vec::new();
        for key in ["message", "error"] {
            match v.get(key) {
                Some(serde_json::Value::String(s)) => parts.push(s.clone()),
                Some(other @ (serde_json::Value::Array(_) | serde_json::Value::Object(_))) => {
                    parts.push(other.to_string())
                }
                _ => {}
            }
        }
        if let Some(errors) = v.get("errors").and_then(|e| e.as_array()) {
            for e in errors {
                let text = |k: &str| e.get(k).and_then(|v| v.as_str());
                match (text("message"), text("field"), text("code")) {
                    (Some(m), _, _) => parts.push(m.to_string()),
                    (None, Some(field), Some(code)) => parts.push(format!("`{field}` {code}")),
                    (None, None, Some(code)) => parts.push(code.to_string()),
                    _ => {}
                }
            }
        }
        parts.join("; ")
    }
}

impl Client {
    /// A client for `base` (no trailing slash) sending `headers` with every request.
    pub fn new(
        kind: Kind,
        base: &str,
        headers: &[(&'static str, String)],
        timeout: Duration,
    ) -> Result<Client, ForgeError> {
        let fail = |detail: String| ForgeError::Unreachable {
            forge: kind,
            url: base.to_string(),
            detail,
        };
        let runtime = crate::http::runtime().map_err(|e| fail(format!("cannot start the async runtime: {e}")))?;
        let http = crate::http::client(timeout)
            .timeout(timeout)
            // A redirect could carry the token's header to another host: not followed.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| fail(format!("cannot start the HTTP client: {e}")))?;
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let mut value = HeaderValue::from_str(value).map_err(|_| ForgeError::BadToken { forge: kind })?;
            value.set_sensitive(true);
            map.insert(HeaderName::from_static(name), value);
        }
        Ok(Client {
            runtime,
            http,
            base: base.trim_end_matches('/').to_string(),
            headers: map,
            kind,
            timeout,
        })
    }

    /// The forge this client speaks to.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// `method path` with a JSON body, which must succeed (2xx): any other answer is the
    /// forge's refusal to do `action` (said as "GitHub refused to <action>: HTTP 403: ...").
    pub fn call<B: Serialize>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
        action: impl FnOnce() -> String,
    ) -> Result<Answer, ForgeError> {
        let answer = self.send(method, path, body)?;
        if answer.status.is_success() {
            Ok(answer)
        } else {
            Err(self.refused(action(), &answer))
        }
    }

    /// `GET path`, which must succeed, read as `T` (`what` names the document in an error).
    pub fn get_json<T: DeserializeOwned>(
        &self,
        path: &str,
        action: impl FnOnce() -> String,
        what: &str,
    ) -> Result<T, ForgeError> {
        let answer = self.call(Method::GET, path, None::<&()>, action)?;
        self.parse(&answer, what)
    }

    /// The body of `answer` as `T`, or the forge's answer is not what its API documents.
    pub fn parse<T: DeserializeOwned>(&self, answer: &Answer, what: &str) -> Result<T, ForgeError> {
        answer.json(what).map_err(|detail| self.invalid(detail))
    }

    /// A refusal of `answer` while doing `action`.
    pub fn refused(&self, action: impl Into<String>, answer: &Answer) -> ForgeError {
        ForgeError::Refused {
            forge: self.kind,
            action: action.into(),
            status: answer.status.as_u16(),
            message: answer.message(),
        }
    }

    /// An answer of this API that is not as documented.
    pub fn invalid(&self, detail: String) -> ForgeError {
        ForgeError::Invalid {
            forge: self.kind,
            url: self.base.clone(),
            detail,
        }
    }

    /// `method path` with a JSON body.
    pub fn send<B: Serialize>(&self, method: Method, path: &str, body: Option<&B>) -> Result<Answer, ForgeError> {
        let url = format!("{}{path}", self.base);
        let body = match body {
            Some(b) => Some(serde_json::to_vec(b).map_err(|e| ForgeError::Unreachable {
                forge: self.kind,
                url: url.clone(),
                detail: e.to_string(),
            })?),
            None => None,
        };
        self.runtime.block_on(async {
            let mut backoff = Backoff::default();
            let mut attempt = 1;
            let mut rate_waits = 0;
            loop {
                let mut request = self
                    .http
                    .request(method.clone(), &url)
                    .headers(self.headers.clone())
                    .header("accept", "application/json");
                if let Some(body) = &body {
                    request = request.header("content-type", "application/json").body(body.clone());
                }
                let failure = match request.send().await {
                    Ok(response) => {
                        let status = response.status();
                        let wait = rate_limit_wait(status, response.headers());
                        match response.bytes().await {
                            Ok(bytes) => {
                                let answer = Answer {
                                    status,
                                    body: bytes.to_vec(),
                                };
                                match wait {
                                    Some(wait) if wait <= MAX_RATE_WAIT && rate_waits < MAX_RATE_WAITS => {
                                        rate_waits += 1;
                                        tokio::time::sleep(wait).await;
                                        continue;
                                    }
                                    Some(wait) => {
                                        return Err(ForgeError::RateLimited {
                                            forge: self.kind,
                                            url: url.clone(),
                                            seconds: wait.as_secs(),
                                        });
                                    }
                                    None if status.is_server_error() => format!("HTTP {status}: {}", answer.message()),
                                    None => return Ok(answer),
                                }
                            }
                            Err(e) => describe(e),
                        }
                    }
                    Err(e) if e.is_timeout() => format!("no answer within {} s", self.timeout.as_secs()),
                    Err(e) => describe(e),
                };
                if attempt >= ATTEMPTS {
                    return Err(ForgeError::Unreachable {
                        forge: self.kind,
                        url: url.clone(),
                        detail: format!("{failure} (after {ATTEMPTS} attempts)"),
                    });
                }
                tokio::time::sleep(backoff.pause()).await;
                attempt += 1;
            }
        })
    }
}

/// How long a rate-limited answer asks us to wait, or `None` when it is not rate-limited.
///
/// 429 always is one. A 403 is one when it carries `Retry-After` (GitHub's secondary limits,
/// docs.github.com "Rate limits for the REST API") or `x-ratelimit-remaining: 0` (the primary
/// limit; the wait is until `x-ratelimit-reset`, in epoch seconds).
fn rate_limit_wait(status: StatusCode, headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    let now = std::time::SystemTime::now();
    // Seconds or an HTTP date, read as `pin` reads a registry's (RFC 9110 §10.2.3).
    let retry_after = retry_after(headers, now);
    let exhausted = header("x-ratelimit-remaining") == Some("0");
    let until_reset = || {
        let reset = header("x-ratelimit-reset")?.parse::<u64>().ok()?;
        let now = now.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
        Some(Duration::from_secs(reset.saturating_sub(now).max(1)))
    };
    match status {
        StatusCode::TOO_MANY_REQUESTS => Some(retry_after.or_else(until_reset).unwrap_or(Duration::from_secs(60))),
        StatusCode::FORBIDDEN if retry_after.is_some() => retry_after,
        StatusCode::FORBIDDEN if exhausted => Some(until_reset().unwrap_or(Duration::from_secs(60))),
        _ => None,
    }
}

/// The error and its causes on one line, without the URL (the caller names it once).
fn describe(e: reqwest::Error) -> String {
    crate::diagnostics::error_chain(&e.without_url())
}

/// `s` with every byte outside RFC 3986's unreserved set percent-encoded (GitLab's project ids
/// are the URL-encoded path, `group%2Fproject`; branch names go into query strings).
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_rate_limits_from_other_refusals() {
        let mut h = HeaderMap::new();
        assert_eq!(rate_limit_wait(StatusCode::FORBIDDEN, &h), None);
        assert_eq!(
            rate_limit_wait(StatusCode::TOO_MANY_REQUESTS, &h),
            Some(Duration::from_secs(60))
        );
        h.insert("retry-after", HeaderValue::from_static("7"));
        assert_eq!(rate_limit_wait(StatusCode::FORBIDDEN, &h), Some(Duration::from_secs(7)));
        let mut h = HeaderMap::new();
        h.insert("x-ratelimit-remaining", HeaderValue::from_static("0"));
        h.insert("x-ratelimit-reset", HeaderValue::from_static("1"));
        assert_eq!(rate_limit_wait(StatusCode::FORBIDDEN, &h), Some(Duration::from_secs(1)));
    }

    #[test]
    fn encodes_paths_for_gitlab() {
        assert_eq!(encode("group/sub/fleet"), "group%2Fsub%2Ffleet");
        assert_eq!(encode("kaas/acme"), "kaas%2Facme");
    }
}
