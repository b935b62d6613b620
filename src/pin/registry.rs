//! Talking to registries: the [`Registry`] trait `pin` plans against, and [`OciRegistry`], its
//! implementation over the OCI distribution API with `oci-client`.
//!
//! Every call is bounded: a connect and read timeout on the HTTP client, an overall deadline
//! per attempt, and a few attempts with a short backoff for faults that may pass (connection
//! refused, timeouts, 5xx). Nothing here retries what cannot change (401, 403, 404, a digest
//! mismatch). The render core stays synchronous: a current-thread tokio runtime lives inside
//! [`OciRegistry`] only.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use std::time::SystemTime;

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciEnvelope, OciErrorCode};
use oci_client::manifest::{
    IMAGE_MANIFEST_LIST_MEDIA_TYPE, IMAGE_MANIFEST_MEDIA_TYPE, OCI_IMAGE_INDEX_MEDIA_TYPE, OCI_IMAGE_MEDIA_TYPE,
};
use oci_client::secrets::RegistryAuth;
use oci_client::{Reference, RegistryOperation};
use reqwest::StatusCode;

use crate::http::{ATTEMPTS, Backoff, USER_AGENT, retry_after};
use crate::pin::auth::{AuthError, DockerConfig};
use crate::pin::http::{Answer, Credential, Http};
use crate::pin::reference::{Digest, ImageRef, api_host};

/// Attempts per request while the registry answers 429 or 503 with `Retry-After`; each wait
/// must also end within `--timeout` of the first attempt.
const RATE_LIMITED_ATTEMPTS: u32 = 5;
/// Tags asked for per page of a tag list.
const TAG_PAGE: usize = 1000;
/// Pages of a tag list read at most, so a registry that ignores `last` cannot loop us.
const MAX_TAG_PAGES: usize = 100;

/// The manifest types `pin` accepts, index types first so a multi-arch tag resolves to its index
/// (the digest a node pulls by), never to one platform's manifest.
const ACCEPTED: &[&str] = &[
    OCI_IMAGE_INDEX_MEDIA_TYPE,
    IMAGE_MANIFEST_LIST_MEDIA_TYPE,
    OCI_IMAGE_MEDIA_TYPE,
    IMAGE_MANIFEST_MEDIA_TYPE,
];

/// A tag resolved to the digest of its manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The digest, verified against the bytes received.
    pub digest: Digest,
    /// Whether the manifest is an image index (a multi-arch tag).
    pub index: bool,
}

/// What `pin` needs from registries. [`OciRegistry`] is the real one; tests of the planning
/// logic use an in-memory one.
pub trait Registry {
    /// Resolves `image:tag` to the digest of its manifest, verified.
    fn resolve(&mut self, image: &ImageRef, tag: &str) -> Result<Resolved, RegistryError>;
    /// Every tag of `image`.
    fn tags(&mut self, image: &ImageRef) -> Result<Vec<String>, RegistryError>;
}

/// What went wrong, in the terms a user acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// No connection: DNS, refused, reset, TLS.
    Unreachable,
    /// No answer within the limit.
    Timeout {
        /// The limit.
        seconds: u64,
    },
    /// 401 or 403.
    Denied {
        /// The HTTP status.
        status: u16,
    },
    /// 404: the tag or repository does not exist.
    NotFound,
    /// 429 (or 503 with `Retry-After`) after the allowed retries, or asking to wait longer
    /// than `--timeout` allows.
    RateLimited {
        /// The HTTP status.
        status: u16,
        /// The wait `Retry-After` asked for, in seconds, when it was too long.
        asked: Option<u64>,
        /// `--timeout`, in seconds.
        timeout: u64,
    },
    /// 5xx or another unexpected status.
    Server {
        /// The HTTP status.
        status: u16,
    },
    /// The manifest's bytes do not hash to the digest the registry states.
    DigestMismatch {
        /// What the registry states.
        stated: String,
        /// What the bytes hash to.
        actual: Digest,
    },
    /// An answer that is not what the distribution API promises.
    Invalid {
        /// What is wrong with it.
        detail: String,
    },
    /// The credentials could not be read.
    Credentials,
}

/// A failed registry operation: which registry, which image (and tag), what went wrong. Boxed,
/// so the `Result`s that carry it stay small.
#[derive(Debug)]
pub struct RegistryError(Box<Details>);

#[derive(Debug)]
struct Details {
    /// The registry as people name it.
    registry: String,
    /// `image:tag`, or `image` for a tag list.
    reference: String,
    /// What was being done: `resolve` or `list the tags of`.
    action: &'static str,
    /// What went wrong.
    kind: ErrorKind,
    /// The `kaas.yaml` field that names the image, when known.
    field: Option<String>,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl RegistryError {
    fn new(image: &ImageRef, reference: String, action: &'static str, kind: ErrorKind) -> RegistryError {
        RegistryError(Box::new(Details {
            registry: image.registry().to_string(),
            reference,
            action,
            kind,
            field: None,
            source: None,
        }))
    }

    /// The registry as people name it.
    pub fn registry(&self) -> &str {
        &self.0.registry
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.0.kind
    }

    /// Names the `kaas.yaml` field the image comes from, for the hint.
    #[must_use]
    pub fn in_field(mut self, field: &str) -> RegistryError {
        self.0.field = Some(field.to_string());
        self
    }

    /// An error about `image:tag`, for tests of code that handles registry errors.
    #[cfg(test)]
    pub(crate) fn for_test(image: &ImageRef, tag: &str, kind: ErrorKind) -> RegistryError {
        RegistryError::new(image, image.with_tag(tag), "resolve", kind)
    }

    fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> RegistryError {
        self.0.source = Some(Box::new(source));
        self
    }

    /// Whether the user must fix the input (exit 1) rather than the environment (exit 2).
    pub fn is_user_error(&self) -> bool {
        self.0.kind == ErrorKind::NotFound
    }

    /// What to do about it.
    pub fn hint(&self) -> String {
        let r = &self.0.registry;
        match &self.0.kind {
            ErrorKind::Unreachable => format!(
                "check that `{r}` is up and reachable from here (DNS, proxy, firewall), then run `kaas-gitops pin` again; a registry served over plain HTTP must be listed in `spec.registries.insecure`"
            ),
            ErrorKind::Timeout { .. } => "the registry may be overloaded or unreachable: retry later, or allow more time with `--timeout SECONDS` (or `KAAS_REGISTRY_TIMEOUT`)".to_string(),
            ErrorKind::Denied { .. } => format!(
                "log in with `docker login {r}` (kaas-gitops reads `$DOCKER_CONFIG/config.json` or `~/.docker/config.json`); some registries also answer this way for a repository that does not exist"
            ),
            ErrorKind::NotFound => match &self.0.field {
                Some(field) => format!("check `{field}` in `kaas.yaml`: the repository and tag must exist in `{r}`"),
                None => "check the repository and tag in `kaas.yaml`".to_string(),
            },
            ErrorKind::RateLimited { asked: Some(asked), .. } => format!(
                "run `kaas-gitops pin` again in {asked} s, or allow the wait with `--timeout {}`; `docker login {r}` may give a higher limit",
                asked + 5
            ),
            ErrorKind::RateLimited { asked: None, .. } => {
                format!("wait and retry, or log in with `docker login {r}` for a higher limit")
            }
            ErrorKind::Server { .. } => "the registry failed; retry later".to_string(),
            ErrorKind::DigestMismatch { .. } => "do not trust this answer: a proxy or mirror may be altering content; retry later or pull through another registry".to_string(),
            ErrorKind::Invalid { .. } => format!("`{r}` does not answer like an OCI registry; check the repository in `kaas.yaml`"),
            ErrorKind::Credentials => "fix the Docker config file or its credential helper, or remove the registry's entry to pull anonymously".to_string(),
        }
    }
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = &self.0;
        let (r, what, action) = (&d.registry, &d.reference, d.action);
        match &d.kind {
            ErrorKind::Unreachable => write!(f, "cannot connect to registry `{r}` to {action} `{what}`"),
            ErrorKind::Timeout { seconds } => {
                write!(
                    f,
                    "registry `{r}` did not answer within {seconds} s to {action} `{what}`"
                )
            }
            ErrorKind::Denied { status } => {
                write!(f, "registry `{r}` denied access to `{what}` (HTTP {status})")
            }
            ErrorKind::NotFound => write!(f, "`{what}` does not exist in registry `{r}`"),
            ErrorKind::RateLimited {
                status,
                asked: Some(asked),
                timeout,
            } => write!(
                f,
                "registry `{r}` answered HTTP {status} to {action} `{what}` and asks to retry in {asked} s (`Retry-After`), later than the {timeout} s `--timeout` allows"
            ),
            ErrorKind::RateLimited {
                status, asked: None, ..
            } => {
                write!(
                    f,
                    "registry `{r}` is rate-limiting requests for `{what}` (HTTP {status})"
                )
            }
            ErrorKind::Server { status } => write!(f, "registry `{r}` failed with HTTP {status} to {action} `{what}`"),
            ErrorKind::DigestMismatch { stated, actual } => write!(
                f,
                "the manifest of `{what}` from registry `{r}` does not match its digest: the registry states `{stated}`, the bytes received hash to `{actual}`"
            ),
            ErrorKind::Invalid { detail } => {
                write!(
                    f,
                    "registry `{r}` sent an unusable answer to {action} `{what}`: {detail}"
                )
            }
            ErrorKind::Credentials => write!(f, "cannot get credentials for registry `{r}` to {action} `{what}`"),
        }
    }
}

impl std::error::Error for RegistryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0
            .source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// How the real registry client is set up.
#[derive(Debug, Clone)]
pub struct Options {
    /// Connect and read timeout, and the deadline of one attempt.
    pub timeout: Duration,
    /// Registries (`host:port`) served over plain HTTP.
    pub insecure: Vec<String>,
    /// Where credentials come from.
    pub docker_config: DockerConfig,
}

/// A registry client over the OCI distribution API.
pub struct OciRegistry {
    client: oci_client::Client,
    http: Http,
    runtime: tokio::runtime::Runtime,
    options: Options,
    /// Credentials per registry, read once.
    auth: BTreeMap<String, RegistryAuth>,
    /// What each repository (`host/path`) accepted last: a token, basic auth, or nothing.
    granted: BTreeMap<String, Credential>,
}

/// One failed attempt, before it is classified.
enum Attempt {
    Oci(OciDistributionError),
    Deadline,
    /// 429 or 503 whose `Retry-After` ends after the request's time is up.
    WaitTooLong {
        status: u16,
        asked: Duration,
    },
}

impl OciRegistry {
    /// A client; fails only when the async runtime or the HTTP client cannot be created.
    pub fn new(options: Options) -> std::io::Result<OciRegistry> {
        let runtime = crate::http::runtime()?;
        let insecure: Vec<String> = options.insecure.iter().map(|r| api_host(r).to_string()).collect();
        let config = ClientConfig {
            protocol: ClientProtocol::HttpsExcept(insecure.clone()),
            connect_timeout: Some(options.timeout),
            read_timeout: Some(options.timeout),
            // Never pick a platform out of an index: `pin` records the index itself.
            platform_resolver: None,
            user_agent: USER_AGENT,
            ..ClientConfig::default()
        };
        let client = oci_client::Client::try_from(config).map_err(std::io::Error::other)?;
        let http = Http::new(options.timeout, insecure).map_err(std::io::Error::other)?;
        Ok(OciRegistry {
            client,
            http,
            runtime,
            options,
            auth: BTreeMap::new(),
            granted: BTreeMap::new(),
        })
    }

    fn credentials(
        &mut self,
        image: &ImageRef,
        reference: &str,
        action: &'static str,
    ) -> Result<RegistryAuth, RegistryError> {
        if let Some(a) = self.auth.get(image.registry()) {
            return Ok(a.clone());
        }
        let auth = self
            .options
            .docker_config
            .credentials(image, self.options.timeout)
            .map_err(|e: AuthError| {
                RegistryError::new(image, reference.to_string(), action, ErrorKind::Credentials).with_source(e)
            })?;
        self.auth.insert(image.registry().to_string(), auth.clone());
        Ok(auth)
    }

    /// GETs `rest` under the image's repository: with what the repository accepted before (or
    /// nothing), and after a 401 once more with what the registry's challenge asks for (a token
    /// from its token service, or basic auth), as oci-client's own requests would.
    fn get(&mut self, image: &ImageRef, rest: &str, accept: &str, auth: &RegistryAuth) -> Result<Answer, Attempt> {
        let key = format!("{}/{}", image.api_host(), image.api_path());
        let url = self.http.url(image.api_host(), image.api_path(), rest);
        let known = self.granted.get(&key).cloned().unwrap_or(Credential::None);
        match self.retrying(&url, accept, &known) {
            Err(Attempt::Oci(OciDistributionError::UnauthorizedError { url })) => {
                let fresh = self.challenge(image, auth)?;
                if fresh == known {
                    return Err(Attempt::Oci(OciDistributionError::UnauthorizedError { url }));
                }
                self.granted.insert(key, fresh.clone());
                self.retrying(&url, accept, &fresh)
            }
            other => other,
        }
    }

    /// What the registry's `WWW-Authenticate` challenge asks for, through oci-client.
    fn challenge(&self, image: &ImageRef, auth: &RegistryAuth) -> Result<Credential, Attempt> {
        let oci = Reference::with_tag(
            image.api_host().to_string(),
            image.api_path().to_string(),
            "latest".into(),
        );
        let token = self.runtime.block_on(async {
            tokio::time::timeout(
                self.options.timeout,
                self.client.auth(&oci, auth, RegistryOperation::Pull),
            )
            .await
        });
        Ok(match (token, auth) {
            (Err(_), _) => return Err(Attempt::Deadline),
            (Ok(Err(e)), _) => return Err(Attempt::Oci(e)),
            (Ok(Ok(Some(token))), _) => Credential::Bearer(token),
            (Ok(Ok(None)), RegistryAuth::Basic(user, password)) => Credential::Basic(user.clone(), password.clone()),
            (Ok(Ok(None)), _) => Credential::None,
        })
    }

    /// GETs `url` with a deadline per attempt. Retries what may pass (at most [`ATTEMPTS`],
    /// with a doubling backoff); a 429 or 503 with `Retry-After` waits as long as it asks, when
    /// that ends within `--timeout` of the first attempt, at most [`RATE_LIMITED_ATTEMPTS`].
    fn retrying(&self, url: &str, accept: &str, credential: &Credential) -> Result<Answer, Attempt> {
        let timeout = self.options.timeout;
        self.runtime.block_on(async {
            let started = tokio::time::Instant::now();
            let mut backoff = Backoff::default();
            let mut attempt = 1;
            loop {
                let (failure, asked) = match tokio::time::timeout(timeout, self.http.get(url, accept, credential)).await
                {
                    Ok(Ok(answer)) if answer.status == StatusCode::OK => return Ok(answer),
                    Ok(Ok(answer)) => {
                        let asked = matches!(answer.status.as_u16(), 429 | 503)
                            .then(|| retry_after(&answer.headers, SystemTime::now()))
                            .flatten();
                        let status = answer.status.as_u16();
                        (Attempt::Oci(registry_response(answer, url)), asked.map(|a| (status, a)))
                    }
                    Ok(Err(e)) => (Attempt::Oci(OciDistributionError::RequestError(e)), None),
                    Err(_) => (Attempt::Deadline, None),
                };
                let wait = match asked {
                    Some((status, asked)) => {
                        if started.elapsed() + asked > timeout {
                            return Err(Attempt::WaitTooLong { status, asked });
                        }
                        if attempt >= RATE_LIMITED_ATTEMPTS {
                            return Err(failure);
                        }
                        asked
                    }
                    None if attempt >= ATTEMPTS || !transient(&failure) => return Err(failure),
                    None => backoff.pause(),
                };
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
        })
    }

    fn classify(&self, image: &ImageRef, reference: String, action: &'static str, failure: Attempt) -> RegistryError {
        let err = |kind| RegistryError::new(image, reference.clone(), action, kind);
        let e = match failure {
            Attempt::Deadline => {
                return err(ErrorKind::Timeout {
                    seconds: self.options.timeout.as_secs(),
                });
            }
            Attempt::WaitTooLong { status, asked } => {
                return err(ErrorKind::RateLimited {
                    status,
                    asked: Some(asked.as_secs()),
                    timeout: self.options.timeout.as_secs(),
                });
            }
            Attempt::Oci(e) => e,
        };
        let rate_limited = |status| ErrorKind::RateLimited {
            status,
            asked: None,
            timeout: self.options.timeout.as_secs(),
        };
        let kind = match &e {
            OciDistributionError::RequestError(r) if r.is_timeout() => ErrorKind::Timeout {
                seconds: self.options.timeout.as_secs(),
            },
            OciDistributionError::RequestError(_) => ErrorKind::Unreachable,
            OciDistributionError::UnauthorizedError { .. } | OciDistributionError::AuthenticationFailure(_) => {
                ErrorKind::Denied { status: 401 }
            }
            OciDistributionError::RegistryError { envelope, .. } => match envelope.errors.first().map(|e| &e.code) {
                Some(OciErrorCode::ManifestUnknown | OciErrorCode::NameUnknown | OciErrorCode::NotFound) => {
                    ErrorKind::NotFound
                }
                Some(OciErrorCode::Unauthorized) => ErrorKind::Denied { status: 401 },
                Some(OciErrorCode::Denied) => ErrorKind::Denied { status: 403 },
                Some(OciErrorCode::Toomanyrequests) => rate_limited(429),
                _ => ErrorKind::Invalid {
                    detail: "an error the OCI distribution API does not define here".into(),
                },
            },
            OciDistributionError::ServerError { code, .. } => match code {
                404 => ErrorKind::NotFound,
                401 | 403 => ErrorKind::Denied { status: *code },
                429 => rate_limited(429),
                c => ErrorKind::Server { status: *c },
            },
            _ => ErrorKind::Invalid {
                detail: "not a valid distribution API response".into(),
            },
        };
        err(kind).with_source(e)
    }
}

/// The error oci-client makes of a registry answer other than 200 (`validate_registry_response`
/// in oci-client's `client.rs`), so both paths read the same.
fn registry_response(answer: Answer, url: &str) -> OciDistributionError {
    let status = answer.status;
    if status == StatusCode::UNAUTHORIZED {
        return OciDistributionError::UnauthorizedError { url: url.to_string() };
    }
    if status.is_success() {
        return OciDistributionError::SpecViolationError(format!(
            "Expected HTTP Status {}, got {status} instead",
            StatusCode::OK
        ));
    }
    if status.is_client_error()
        && let Ok(envelope) = serde_json::from_slice::<OciEnvelope>(&answer.body)
    {
        return OciDistributionError::RegistryError {
            envelope,
            url: url.to_string(),
        };
    }
    OciDistributionError::ServerError {
        code: status.as_u16(),
        url: url.to_string(),
        message: String::from_utf8_lossy(&answer.body).to_string(),
    }
}

/// Faults worth another attempt: the network, the deadline, a server error, a 429 that did not
/// say how long to wait.
fn transient(attempt: &Attempt) -> bool {
    match attempt {
        Attempt::Deadline => true,
        Attempt::Oci(OciDistributionError::RequestError(_)) => true,
        Attempt::Oci(OciDistributionError::ServerError { code, .. }) => *code >= 500 || *code == 429,
        Attempt::Oci(OciDistributionError::RegistryError { envelope, .. }) => envelope
            .errors
            .first()
            .is_some_and(|e| e.code == OciErrorCode::Toomanyrequests),
        Attempt::Oci(_) | Attempt::WaitTooLong { .. } => false,
    }
}

/// A page of `GET /v2/<name>/tags/list` (distribution spec, "Listing Tags").
#[derive(serde::Deserialize)]
struct TagPage {
    #[serde(default)]
    tags: Option<Vec<String>>,
}

impl Registry for OciRegistry {
    fn resolve(&mut self, image: &ImageRef, tag: &str) -> Result<Resolved, RegistryError> {
        const ACTION: &str = "resolve";
        let reference = image.with_tag(tag);
        let auth = self.credentials(image, &reference, ACTION)?;
        // The exact bytes received, and the digest the registry states in
        // `Docker-Content-Digest`: the lock must never hold a digest that the bytes do not hash
        // to, so the check below is ours.
        let answer = self
            .get(image, &format!("manifests/{tag}"), &ACCEPTED.join(", "), &auth)
            .map_err(|f| self.classify(image, reference.clone(), ACTION, f))?;
        let actual = Digest::of(&answer.body);
        let stated = answer
            .headers
            .get("docker-content-digest")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        if stated.starts_with("sha256:") && stated != actual.as_str() {
            return Err(RegistryError::new(
                image,
                reference,
                ACTION,
                ErrorKind::DigestMismatch { stated, actual },
            ));
        }
        let index = manifest_kind(&answer.body)
            .map_err(|detail| RegistryError::new(image, reference.clone(), ACTION, ErrorKind::Invalid { detail }))?;
        Ok(Resolved { digest: actual, index })
    }

    fn tags(&mut self, image: &ImageRef) -> Result<Vec<String>, RegistryError> {
        const ACTION: &str = "list the tags of";
        let reference = image.name().to_string();
        let auth = self.credentials(image, &reference, ACTION)?;
        let mut all: Vec<String> = Vec::new();
        // Page with `last` ourselves; stop on an empty page or one that brings nothing new.
        for _ in 0..MAX_TAG_PAGES {
            let rest = match all.last() {
                Some(last) => format!("tags/list?n={TAG_PAGE}&last={last}"),
                None => format!("tags/list?n={TAG_PAGE}"),
            };
            let answer = self
                .get(image, &rest, "application/json", &auth)
                .map_err(|f| self.classify(image, reference.clone(), ACTION, f))?;
            let page: TagPage = serde_json::from_slice(&answer.body).map_err(|e| {
                RegistryError::new(
                    image,
                    reference.clone(),
                    ACTION,
                    ErrorKind::Invalid {
                        detail: format!("the tag list is not JSON of the distribution API: {e}"),
                    },
                )
            })?;
            let before = all.len();
            for t in page.tags.unwrap_or_default() {
                if !all.contains(&t) {
                    all.push(t);
                }
            }
            if all.len() == before {
                break;
            }
        }
        Ok(all)
    }
}

/// Whether the manifest is an index; `Err` when it is not a schema 2 manifest of an accepted
/// type (a schema 1 manifest's digest is not the digest of its bytes).
fn manifest_kind(bytes: &[u8]) -> Result<bool, String> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Versioned {
        schema_version: u32,
        media_type: Option<String>,
        manifests: Option<serde_json::Value>,
    }
    let v: Versioned = serde_json::from_slice(bytes).map_err(|_| "the manifest is not JSON".to_string())?;
    if v.schema_version != 2 {
        return Err(format!(
            "manifest schema version {} (only 2 is supported)",
            v.schema_version
        ));
    }
    match v.media_type.as_deref() {
        Some(t) if !ACCEPTED.contains(&t) => Err(format!("manifest media type `{t}`")),
        Some(OCI_IMAGE_INDEX_MEDIA_TYPE | IMAGE_MANIFEST_LIST_MEDIA_TYPE) => Ok(true),
        Some(_) => Ok(false),
        None => Ok(v.manifests.is_some()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_an_index_from_a_manifest() {
        let index = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}"#;
        assert_eq!(manifest_kind(index), Ok(true));
        let unlabelled = br#"{"schemaVersion":2,"manifests":[]}"#;
        assert_eq!(manifest_kind(unlabelled), Ok(true));
        let image = br#"{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json","config":{},"layers":[]}"#;
        assert_eq!(manifest_kind(image), Ok(false));
        assert!(manifest_kind(br#"{"schemaVersion":1}"#).is_err());
        assert!(manifest_kind(br#"{"schemaVersion":2,"mediaType":"text/plain"}"#).is_err());
        assert!(manifest_kind(b"<html>").is_err());
    }
}
