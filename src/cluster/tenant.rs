//! A tenant API server's CA, read from the tenant itself: the `kube-public/cluster-info`
//! ConfigMap, which Kamaji writes with kubeadm's bootstrap-token phase and makes readable to
//! anonymous clients with kubeadm's RBAC (Kamaji 26.8.2 `internal/kubeadm/bootstraptoken.go`:
//! `clusterinfo.CreateClusterInfoRBACRules`). `kaas-gitops kubeconfig` needs the CA and nothing
//! else, so people need no right on the management cluster's `<tenant>-kubeconfig` Secret (the
//! tenant's admin certificate).
//!
//! The first read cannot verify the server (the CA is what it is fetching); the second request
//! trusts only that CA and checks the certificate for the name people will use, so a wrong
//! endpoint or a server that is not the tenant's fails here rather than at `kubectl`. Against
//! someone who answers for the tenant with a CA of their own, only a pin helps: `--ca-sha256`,
//! the fingerprint of the CA certificate, which the platform team reads from Kamaji's `<tenant>-ca`
//! Secret (see [`fingerprint`]).

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kube::config::Kubeconfig;
use sha2::{Digest, Sha256};

use crate::diagnostics::error_chain;

/// The ConfigMap and its key (kubeadm `bootstrapapi.ConfigMapClusterInfo`, `KubeConfigKey`).
const NAMESPACE: &str = "kube-public";
const NAME: &str = "cluster-info";
const KEY: &str = "kubeconfig";

/// Why the tenant's CA could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TenantError {
    /// No answer at all.
    #[error("cannot reach the tenant API server at {server}: {cause}")]
    Unreachable {
        /// The URL dialled.
        server: String,
        /// Why.
        cause: String,
    },
    /// It answered, without the ConfigMap.
    #[error("the tenant API server at {server} gave no `kube-public/cluster-info` ({code}: {message})")]
    NoClusterInfo {
        /// The URL dialled.
        server: String,
        /// HTTP status.
        code: u16,
        /// Its message.
        message: String,
    },
    /// The ConfigMap holds no usable CA.
    #[error("`kube-public/cluster-info` of the tenant API server at {server} holds no CA: {why}")]
    BadClusterInfo {
        /// The URL dialled.
        server: String,
        /// What is wrong with it.
        why: String,
    },
    /// The server's certificate is not the CA's, or not for `name`.
    #[error(
        "the tenant API server at {server} does not prove itself with the CA its cluster-info names, for the name `{name}`: {cause}"
    )]
    NotProven {
        /// The URL dialled.
        server: String,
        /// The name its certificate was checked for.
        name: String,
        /// The TLS error.
        cause: String,
    },
    /// `--ca-sha256` names another CA.
    #[error("the tenant API server's CA has the fingerprint {found}, not {pinned}")]
    PinMismatch {
        /// `--ca-sha256`.
        pinned: String,
        /// The CA's.
        found: String,
    },
}

/// The tenant's CA: PEM, as kubeconfigs hold it (base64 of it in `certificate-authority-data`).
#[derive(Debug, Clone)]
pub struct TenantCa {
    /// The PEM text.
    pub pem: Vec<u8>,
    /// `sha256:<hex>` of the first certificate's DER ([`fingerprint`]).
    pub fingerprint: String,
}

/// `sha256:<64 hex>` of a certificate's DER: what `openssl x509 -noout -fingerprint -sha256`
/// prints (without the colons, lower case).
pub fn fingerprint(der: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(der)))
}

/// A fingerprint as people paste it: `sha256:` optional, colons and case ignored. `None` when it
/// is not 64 hex digits.
pub fn parse_fingerprint(text: &str) -> Option<String> {
    let t = text.trim();
    let t = t
        .strip_prefix("sha256:")
        .or_else(|| t.strip_prefix("SHA256:"))
        .unwrap_or(t);
    let hexits: String = t.chars().filter(|c| *c != ':').collect::<String>().to_ascii_lowercase();
    (hexits.len() == 64 && hexits.chars().all(|c| c.is_ascii_hexdigit())).then(|| format!("sha256:{hexits}"))
}

/// Reads the CA of the tenant API server at `server` (`https://host:port`), checking its
/// certificate for `name` (the host people use, when `server` is a tunnel), against `pin`.
pub fn ca(server: &str, name: &str, pin: Option<&str>, timeout: Duration) -> Result<TenantCa, TenantError> {
    let unreachable = |cause: String| TenantError::Unreachable {
        server: server.to_string(),
        cause,
    };
    let runtime = crate::http::runtime().map_err(|e| unreachable(format!("cannot start the async runtime: {e}")))?;
    let url: http::Uri = server
        .parse()
        .map_err(|e: http::uri::InvalidUri| unreachable(format!("not a URL: {e}")))?;
    let client = |roots: Option<Vec<Vec<u8>>>| {
        let mut config = kube::Config::new(url.clone());
        config.accept_invalid_certs = roots.is_none();
        config.root_cert = roots;
        config.tls_server_name = Some(name.to_string());
        config.connect_timeout = Some(timeout);
        config.read_timeout = Some(timeout);
        let _entered = runtime.enter();
        kube::Client::try_from(config).map_err(|e| unreachable(error_chain(&e)))
    };

    // 1. Anonymous, unverified: the CA is what is being fetched.
    let api: Api<ConfigMap> = Api::namespaced(client(None)?, NAMESPACE);
    let map = runtime.block_on(api.get(NAME)).map_err(|e| match e {
        kube::Error::Api(s) => TenantError::NoClusterInfo {
            server: server.to_string(),
            code: s.code,
            message: s.message.clone(),
        },
        other => unreachable(error_chain(&other)),
    })?;
    let bad = |why: String| TenantError::BadClusterInfo {
        server: server.to_string(),
        why,
    };
    let text = map
        .data
        .as_ref()
        .and_then(|d| d.get(KEY))
        .ok_or_else(|| bad(format!("no key `{KEY}`")))?;
    let data = Kubeconfig::from_yaml(text)
        .map_err(|e| bad(format!("`{KEY}` is not a kubeconfig: {e}")))?
        .clusters
        .into_iter()
        .find_map(|c| c.cluster.and_then(|c| c.certificate_authority_data))
        .ok_or_else(|| bad("its kubeconfig names no `certificate-authority-data`".into()))?;
    use base64::Engine as _;
    let pem_text = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| bad(format!("`certificate-authority-data` is not base64: {e}")))?;
    let ders: Vec<Vec<u8>> = pem::parse_many(&pem_text)
        .map_err(|e| bad(format!("`certificate-authority-data` is not PEM: {e}")))?
        .into_iter()
        .filter(|p| p.tag() == "CERTIFICATE")
        .map(|p| p.contents().to_vec())
        .collect();
    let Some(first) = ders.first() else {
        return Err(bad("`certificate-authority-data` holds no certificate".into()));
    };
    let found = fingerprint(first);
    if let Some(pinned) = pin
        && pinned != found
    {
        return Err(TenantError::PinMismatch {
            pinned: pinned.to_string(),
            found,
        });
    }

    // 2. Verified: only that CA, for `name`.
    let verified = client(Some(ders))?;
    match runtime.block_on(verified.apiserver_version()) {
        // An HTTP answer means TLS held: `/version` is public by default, but a server that
        // refuses it anonymously has still proved its certificate.
        Ok(_) | Err(kube::Error::Api(_)) => {}
        Err(other) => {
            return Err(TenantError::NotProven {
                server: server.to_string(),
                name: name.to_string(),
                cause: error_chain(&other),
            });
        }
    }
    Ok(TenantCa {
        pem: pem_text,
        fingerprint: found,
    })
}

#[cfg(test)]
mod tests {
    use super::{fingerprint, parse_fingerprint};

    #[test]
    fn fingerprints_read_as_openssl_prints_them() {
        let hex64 = "AB:".repeat(31) + "AB";
        assert_eq!(
            parse_fingerprint(&format!("SHA256:{hex64}")),
            Some(format!("sha256:{}", "ab".repeat(32)))
        );
        assert_eq!(
            parse_fingerprint(&"ab".repeat(32)),
            Some(format!("sha256:{}", "ab".repeat(32)))
        );
        assert_eq!(parse_fingerprint("sha256:abc"), None);
        assert_eq!(parse_fingerprint(&"zz".repeat(32)), None);
        // sha256 of the empty input.
        assert_eq!(
            fingerprint(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
