//! The registry side of `publish`, through oci-client (the client `pin` uses), with the
//! credentials `pin` reads: the Docker config file and its credential helpers.

use std::collections::BTreeMap;
use std::time::Duration;

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::OciDistributionError;
use oci_client::secrets::RegistryAuth;
use oci_client::{Reference, RegistryOperation};

use crate::delivery::{MANIFEST_MEDIA_TYPE, TenantSource};
use crate::pin::auth::DockerConfig;
use crate::pin::http::{Credential, Http};
use crate::pin::reference::ImageRef;
use crate::publish::Target;

/// A registry client for pushes.
pub struct OciTarget {
    client: oci_client::Client,
    http: Http,
    runtime: tokio::runtime::Runtime,
    timeout: Duration,
    docker_config: DockerConfig,
    /// Credentials per registry, read once.
    auth: BTreeMap<String, RegistryAuth>,
    /// Per registry host: whether `/v2/` answers 200 without credentials (then no request
    /// carries any, and oci-client is never given credentials: with credentials stored it asks
    /// `/v2/` again before every request whose answer has no token to cache).
    open: BTreeMap<String, bool>,
    /// What each repository's requests carry, once its push token is fetched.
    granted: BTreeMap<String, Credential>,
}

impl OciTarget {
    /// A client; `insecure` are the `host:port`s reached over plain HTTP.
    pub fn new(timeout: Duration, insecure: Vec<String>, docker_config: DockerConfig) -> std::io::Result<OciTarget> {
        let runtime = crate::http::runtime()?;
        let config = ClientConfig {
            protocol: ClientProtocol::HttpsExcept(insecure.clone()),
            connect_timeout: Some(timeout),
            read_timeout: Some(timeout),
            // One POST and one PUT per blob: the blobs are a few KiB.
            use_monolithic_push: true,
            user_agent: crate::http::USER_AGENT,
            ..ClientConfig::default()
        };
        let client = oci_client::Client::try_from(config).map_err(std::io::Error::other)?;
        let http = Http::new(timeout, insecure).map_err(std::io::Error::other)?;
        Ok(OciTarget {
            client,
            http,
            runtime,
            timeout,
            docker_config,
            auth: BTreeMap::new(),
            open: BTreeMap::new(),
            granted: BTreeMap::new(),
        })
    }

    /// The reference of `source` (its tag, or `latest` for blob requests, which ignore it) and
    /// what its requests carry: nothing on an open registry; else the push token (or basic
    /// auth) from the registry's challenge, fetched once per repository through oci-client.
    fn prepare(&mut self, source: &TenantSource) -> Result<(Reference, Credential), String> {
        let image = ImageRef::parse(&source.repository).map_err(|e| e.to_string())?;
        let reference = Reference::with_tag(image.api_host().into(), image.api_path().into(), source.tag.clone());
        let host = image.api_host().to_string();
        if !self.open.contains_key(&host) {
            let url = self.http.url(&host, "", "").replace("/v2//", "/v2/");
            let answer = self.block(self.http.get(&url, "", &Credential::None))?;
            let open = answer.map_err(|e| format!("GET {url}: {}", chain(&e)))?.status == reqwest::StatusCode::OK;
            self.open.insert(host.clone(), open);
        }
        if self.open[&host] {
            return Ok((reference, Credential::None));
        }
        if let Some(c) = self.granted.get(&source.repository) {
            return Ok((reference, c.clone()));
        }
        let auth = match self.auth.get(image.registry()) {
            Some(a) => a.clone(),
            None => {
                let a = self
                    .docker_config
                    .credentials(&image, self.timeout)
                    .map_err(|e| format!("credentials for {}: {e}", image.registry()))?;
                self.auth.insert(image.registry().to_string(), a.clone());
                a
            }
        };
        let token = self
            .block(self.client.auth(&reference, &auth, RegistryOperation::Push))?
            .map_err(|e| describe(&e))?;
        let credential = match (token, &auth) {
            (Some(t), _) => Credential::Bearer(t),
            (None, RegistryAuth::Basic(u, p)) => Credential::Basic(u.clone(), p.clone()),
            (None, _) => Credential::None,
        };
        self.granted.insert(source.repository.clone(), credential.clone());
        Ok((reference, credential))
    }

    fn block<T>(&self, f: impl std::future::Future<Output = T>) -> Result<T, String> {
        self.runtime
            .block_on(async { tokio::time::timeout(self.timeout, f).await })
            .map_err(|_| format!("no answer within {} s", self.timeout.as_secs()))
    }
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s.push_str(&format!(": {c}"));
        cause = c.source();
    }
    s
}

fn describe(e: &OciDistributionError) -> String {
    chain(e)
}

impl Target for OciTarget {
    /// One HEAD of the manifest: its `Docker-Content-Digest`, or `None` on 404 (the
    /// distribution spec's answer for an unknown tag or repository).
    fn current(&mut self, source: &TenantSource) -> Result<Option<String>, String> {
        let (reference, credential) = self.prepare(source)?;
        let url = self.http.url(
            reference.resolve_registry(),
            reference.repository(),
            &format!("manifests/{}", source.tag),
        );
        let what = format!("HEAD {}:{}", source.repository, source.tag);
        let answer = self
            .block(self.http.head(&url, MANIFEST_MEDIA_TYPE, &credential))?
            .map_err(|e| format!("{what}: {}", chain(&e)))?;
        match answer.status.as_u16() {
            200 => answer
                .headers
                .get("docker-content-digest")
                .and_then(|v| v.to_str().ok())
                .map(|d| Some(d.to_string()))
                .ok_or_else(|| format!("{what}: the registry states no Docker-Content-Digest")),
            404 => Ok(None),
            code => Err(format!("{what}: the registry answered {code}")),
        }
    }

    fn push_blob(&mut self, source: &TenantSource, digest: &str, bytes: &[u8]) -> Result<(), String> {
        let (reference, _) = self.prepare(source)?;
        self.block(self.client.push_blob(&reference, bytes.to_vec(), digest))?
            .map(|_| ())
            .map_err(|e| format!("upload of blob {digest} to {}: {}", source.repository, describe(&e)))
    }

    fn push_manifest(&mut self, source: &TenantSource) -> Result<(), String> {
        let (reference, _) = self.prepare(source)?;
        let content_type = reqwest::header::HeaderValue::from_static(MANIFEST_MEDIA_TYPE);
        self.block(
            self.client
                .push_manifest_raw(&reference, source.artifact.manifest.clone(), content_type),
        )?
        .map(|_| ())
        .map_err(|e| format!("PUT of manifest {}:{}: {}", source.repository, source.tag, describe(&e)))
    }
}
