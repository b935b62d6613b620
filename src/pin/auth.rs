//! Registry credentials from the Docker config file, as `docker login` leaves them:
//! `auths` entries (`auth` or `username`/`password`), `credHelpers` per registry and a global
//! `credsStore`. The lookup itself is `docker_credential`'s; this module finds the file, bounds
//! the time a credential helper may take, and turns "no credentials" into anonymous access.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use docker_credential::{CredentialRetrievalError, DockerCredential};
use oci_client::secrets::RegistryAuth;

use crate::pin::reference::ImageRef;

/// Where the Docker config file is, if anywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DockerConfig {
    path: Option<PathBuf>,
}

/// Why credentials could not be read.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The config file exists but cannot be read.
    #[error("failed to read the Docker config file `{}`", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The config file is not the JSON Docker writes, or an entry's `auth` does not decode.
    #[error("the Docker config file `{}` has an unreadable entry for `{server}`", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The server looked up.
        server: String,
        /// What `docker_credential` said.
        #[source]
        source: CredentialRetrievalError,
    },
    /// A credential helper failed or could not be run.
    #[error("the credential helper for `{server}` failed")]
    Helper {
        /// The server looked up.
        server: String,
        /// What `docker_credential` said.
        #[source]
        source: CredentialRetrievalError,
    },
    /// A credential helper did not answer in time (it may be waiting for a keychain prompt).
    #[error("the credential helper for `{server}` did not answer within {seconds} s")]
    HelperTimeout {
        /// The server looked up.
        server: String,
        /// The limit.
        seconds: u64,
    },
    /// The entry holds an identity (OAuth refresh) token, which `oci-client` cannot exchange.
    #[error("the Docker config file has an identity token for `{server}`, which kaas-gitops cannot use")]
    IdentityToken {
        /// The server looked up.
        server: String,
    },
}

impl DockerConfig {
    /// `$DOCKER_CONFIG/config.json`, else `$HOME/.docker/config.json`, as Docker looks for it.
    /// The caller reads the environment (see `commands::pin`), so tests can point it anywhere.
    pub fn locate(docker_config: Option<PathBuf>, home: Option<PathBuf>) -> DockerConfig {
        let dir = docker_config.or_else(|| home.map(|h| h.join(".docker")));
        DockerConfig {
            path: dir.map(|d| d.join("config.json")),
        }
    }

    /// The config file's path, if one was located (it may not exist).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The credentials for `image`'s registry; anonymous when there is no config file or it
    /// has nothing for this registry. A credential helper gets at most `timeout`.
    pub fn credentials(&self, image: &ImageRef, timeout: Duration) -> Result<RegistryAuth, AuthError> {
        let Some(path) = &self.path else {
            return Ok(RegistryAuth::Anonymous);
        };
        let bytes = match fs_err::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(RegistryAuth::Anonymous),
            Err(source) => {
                return Err(AuthError::Read {
                    path: path.clone(),
                    source,
                });
            }
        };
        let server = image.credential_server().to_string();
        // A helper is a separate program that may wait forever (a locked keychain); run the
        // lookup on its own thread so `pin` can give up. The thread ends with the process.
        let (tx, rx) = mpsc::channel();
        let lookup_server = server.clone();
        std::thread::spawn(move || {
            let _ = tx.send(docker_credential::get_credential_from_reader(
                &bytes[..],
                &lookup_server,
            ));
        });
        let result = rx.recv_timeout(timeout).map_err(|_| AuthError::HelperTimeout {
            server: server.clone(),
            seconds: timeout.as_secs(),
        })?;
        match result {
            Ok(DockerCredential::UsernamePassword(user, password)) => Ok(RegistryAuth::Basic(user, password)),
            Ok(DockerCredential::IdentityToken(_)) => Err(AuthError::IdentityToken { server }),
            Err(CredentialRetrievalError::NoCredentialConfigured) => Ok(RegistryAuth::Anonymous),
            // Docker's helpers answer "credentials not found" for a registry they hold nothing
            // for; with a global `credsStore` that is every public registry, so it means anonymous.
            Err(CredentialRetrievalError::HelperFailure { stdout, stderr, .. })
                if is_not_found(&stdout) || is_not_found(&stderr) =>
            {
                Ok(RegistryAuth::Anonymous)
            }
            Err(
                source @ (CredentialRetrievalError::HelperFailure { .. }
                | CredentialRetrievalError::HelperCommunicationError
                | CredentialRetrievalError::MalformedHelperResponse),
            ) => Err(AuthError::Helper { server, source }),
            Err(source) => Err(AuthError::Malformed {
                path: path.clone(),
                server,
                source,
            }),
        }
    }
}

fn is_not_found(text: &str) -> bool {
    text.to_ascii_lowercase().contains("credentials not found")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(json: &str) -> (tempfile::TempDir, DockerConfig) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.json"), json).unwrap();
        let cfg = DockerConfig::locate(Some(dir.path().to_path_buf()), None);
        (dir, cfg)
    }

    fn creds(cfg: &DockerConfig, image: &str) -> Result<RegistryAuth, AuthError> {
        cfg.credentials(&ImageRef::parse(image).unwrap(), Duration::from_secs(5))
    }

    #[test]
    fn reads_auths_by_registry_and_docker_hub_key() {
        // "alice:s3cret" and "bob:hunter2"
        let (_d, cfg) = config(
            r#"{"auths": {"127.0.0.1:5000": {"auth": "YWxpY2U6czNjcmV0"},
                          "https://index.docker.io/v1/": {"auth": "Ym9iOmh1bnRlcjI="}}}"#,
        );
        assert_eq!(
            creds(&cfg, "127.0.0.1:5000/clastix/kamaji").unwrap(),
            RegistryAuth::Basic("alice".into(), "s3cret".into())
        );
        assert_eq!(
            creds(&cfg, "docker.io/clastix/kamaji").unwrap(),
            RegistryAuth::Basic("bob".into(), "hunter2".into())
        );
        assert_eq!(creds(&cfg, "quay.io/coreos/etcd").unwrap(), RegistryAuth::Anonymous);
    }

    #[test]
    fn no_file_is_anonymous_and_a_broken_file_is_an_error() {
        let cfg = DockerConfig::locate(Some(PathBuf::from("/nonexistent/kaas")), None);
        assert_eq!(creds(&cfg, "quay.io/coreos/etcd").unwrap(), RegistryAuth::Anonymous);
        let cfg = DockerConfig::locate(None, None);
        assert_eq!(creds(&cfg, "quay.io/coreos/etcd").unwrap(), RegistryAuth::Anonymous);
        let (_d, cfg) = config("{not json");
        assert!(matches!(
            creds(&cfg, "quay.io/coreos/etcd"),
            Err(AuthError::Malformed { .. })
        ));
    }

    #[test]
    fn a_missing_helper_is_an_error_naming_the_registry() {
        let (_d, cfg) = config(r#"{"credHelpers": {"quay.io": "kaas-test-no-such-helper"}}"#);
        let err = creds(&cfg, "quay.io/coreos/etcd").unwrap_err();
        assert_eq!(err.to_string(), "the credential helper for `quay.io` failed");
    }

    #[test]
    fn home_is_the_fallback() {
        let cfg = DockerConfig::locate(None, Some(PathBuf::from("/home/me")));
        assert_eq!(cfg.path(), Some(Path::new("/home/me/.docker/config.json")));
        let cfg = DockerConfig::locate(Some(PathBuf::from("/etc/d")), Some(PathBuf::from("/home/me")));
        assert_eq!(cfg.path(), Some(Path::new("/etc/d/config.json")));
    }
}
