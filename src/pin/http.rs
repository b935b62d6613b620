//! The two reads `pin` makes from a registry (a manifest, a page of tags), sent with reqwest
//! rather than oci-client, because oci-client turns a 429 or 503 into an error without its
//! headers, and `Retry-After` is a header. oci-client still does the token dance
//! ([`oci_client::Client::auth`]); the token is kept per repository here and fetched again once
//! when the registry answers 401 (it expired).
//! Its client is [`crate::http::client`]'s; `Retry-After` is read by [`crate::http::retry_after`].

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderMap};

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
    pub fn new(timeout: Duration, insecure: Vec<String>) -> Result<Http, reqwest::Error> {
        let client = crate::http::client(timeout).build()?;
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
