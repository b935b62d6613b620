//! The registry side of `publish`, through oci-client (the client `pin` uses), with the
//! credentials `pin` reads: the Docker config file and its credential helpers.

use std::collections::BTreeMap;
use std::time::Duration;

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::secrets::RegistryAuth;
use oci_client::{Reference, RegistryOperation};

use crate::delivery::{MANIFEST_MEDIA_TYPE, TenantSource};
use crate::pin::auth::DockerConfig;
use crate::pin::reference::ImageRef;
use crate::publish::Target;

const USER_AGENT: &str = concat!("kaas-gitops/", env!("CARGO_PKG_VERSION"));

/// A registry client for pushes.
pub struct OciTarget {
    client: oci_client::Client,
    runtime: tokio::runtime::Runtime,
    timeout: Duration,
    docker_config: DockerConfig,
    /// Credentials per registry, read once.
    auth: BTreeMap<String, RegistryAuth>,
    /// Repositories whose push token was fetched.
    authed: std::collections::BTreeSet<String>,
}

impl OciTarget {
    /// A client; `insecure` are the `host:port`s reached over plain HTTP.
    pub fn new(timeout: Duration, insecure: Vec<String>, docker_config: DockerConfig) -> std::io::Result<OciTarget> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let config = ClientConfig {
            protocol: ClientProtocol::HttpsExcept(insecure),
            connect_timeout: Some(timeout),
            read_timeout: Some(timeout),
            // One POST and one PUT per blob: the blobs are a few KiB.
            use_monolithic_push: true,
            user_agent: USER_AGENT,
            ..ClientConfig::default()
        };
        let client = oci_client::Client::try_from(config).map_err(std::io::Error::other)?;
        Ok(OciTarget {
            client,
            runtime,
            timeout,
            docker_config,
            auth: BTreeMap::new(),
            authed: Default::default(),
        })
    }

    /// The reference and the credentials of `source`'s repository, after the token dance for
    /// pushing (once per repository).
    fn prepare(&mut self, source: &TenantSource, tag: bool) -> Result<(Reference, RegistryAuth), String> {
        let image = ImageRef::parse(&source.repository).map_err(|e| e.to_string())?;
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
        let reference = if tag {
            Reference::with_tag(image.api_host().into(), image.api_path().into(), source.tag.clone())
        } else {
            Reference::with_tag(image.api_host().into(), image.api_path().into(), "latest".into())
        };
        if !self.authed.contains(&source.repository) {
            let answer = self.block(self.client.auth(&reference, &auth, RegistryOperation::Push))?;
            answer.map_err(|e| describe(&e))?;
            self.authed.insert(source.repository.clone());
        }
        Ok((reference, auth))
    }

    fn block<T>(&self, f: impl std::future::Future<Output = T>) -> Result<T, String> {
        self.runtime
            .block_on(async { tokio::time::timeout(self.timeout, f).await })
            .map_err(|_| format!("no answer within {} s", self.timeout.as_secs()))
    }
}

fn describe(e: &OciDistributionError) -> String {
    let mut s = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        s.push_str(&format!(": {c}"));
        cause = c.source();
    }
    s
}

fn not_found(e: &OciDistributionError) -> bool {
    match e {
        OciDistributionError::ImageManifestNotFoundError(_) => true,
        OciDistributionError::ServerError { code: 404, .. } => true,
        OciDistributionError::RegistryError { envelope, .. } => envelope
            .errors
            .iter()
            .any(|x| matches!(x.code, OciErrorCode::ManifestUnknown | OciErrorCode::NameUnknown)),
        _ => false,
    }
}

impl Target for OciTarget {
    fn current(&mut self, source: &TenantSource) -> Result<Option<String>, String> {
        let (reference, auth) = self.prepare(source, true)?;
        match self.block(self.client.fetch_manifest_digest(&reference, &auth))? {
            Ok(d) => Ok(Some(d)),
            Err(e) if not_found(&e) => Ok(None),
            Err(e) => Err(format!("HEAD {}:{}: {}", source.repository, source.tag, describe(&e))),
        }
    }

    fn push_blob(&mut self, source: &TenantSource, digest: &str, bytes: &[u8]) -> Result<(), String> {
        let (reference, _) = self.prepare(source, false)?;
        self.block(self.client.push_blob(&reference, bytes.to_vec(), digest))?
            .map(|_| ())
            .map_err(|e| format!("upload of blob {digest} to {}: {}", source.repository, describe(&e)))
    }

    fn push_manifest(&mut self, source: &TenantSource) -> Result<(), String> {
        let (reference, _) = self.prepare(source, true)?;
        let content_type = reqwest::header::HeaderValue::from_static(MANIFEST_MEDIA_TYPE);
        self.block(
            self.client
                .push_manifest_raw(&reference, source.artifact.manifest.clone(), content_type),
        )?
        .map(|_| ())
        .map_err(|e| format!("PUT of manifest {}:{}: {}", source.repository, source.tag, describe(&e)))
    }
}
