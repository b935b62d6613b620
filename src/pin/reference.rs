//! Image names and digests, parsed once at the edge so the rest of `pin` cannot hold an invalid
//! one. An [`ImageRef`] knows both the name people write (`docker.io/clastix/kamaji`, the key in
//! `kaas.lock`) and where the OCI distribution API for it lives (`registry-1.docker.io`,
//! `clastix/kamaji`).

use std::fmt;

use sha2::{Digest as _, Sha256};

/// Docker Hub as people write it.
const DOCKER_HUB: &str = "docker.io";
/// Docker Hub's legacy name, still found in image references.
const DOCKER_HUB_LEGACY: &str = "index.docker.io";
/// Where Docker Hub serves the distribution API (`docker.io` itself only redirects browsers).
const DOCKER_HUB_API: &str = "registry-1.docker.io";
/// The key Docker's own tools use for Docker Hub in `config.json` and credential helpers.
const DOCKER_HUB_CREDENTIALS: &str = "https://index.docker.io/v1/";

/// A `sha256:<64 lower-case hex>` content digest.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest(String);

/// Why a string is not a [`Digest`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a `sha256:` digest of 64 lower-case hex digits")]
pub struct DigestParseError(pub String);

impl Digest {
    /// Parses `sha256:<64 lower-case hex>`; other algorithms are refused because the lock and
    /// every consumer of it (Kubernetes, Flux) compare sha256 digests.
    pub fn parse(text: &str) -> Result<Digest, DigestParseError> {
        if crate::model::pins::is_digest(text) {
            Ok(Digest(text.to_string()))
        } else {
            Err(DigestParseError(text.to_string()))
        }
    }

    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(format!("sha256:{}", hex::encode(Sha256::digest(bytes))))
    }

    /// `sha256:<hex>`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An image repository (no tag, no digest), e.g. `docker.io/clastix/kamaji`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    /// The name as written in `kaas.yaml`; the key in `kaas.lock`.
    name: String,
    /// The registry as written (`docker.io`, `127.0.0.1:5000`).
    registry: String,
    /// The repository path inside the registry, with Docker Hub's `library/` added.
    path: String,
}

/// Why a string is not an image repository.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an image repository")]
pub struct ImageParseError(pub String);

impl ImageRef {
    /// Parses a repository the way Docker does: the first component is a registry when it has a
    /// `.` or a `:` or is `localhost`; otherwise the image lives on Docker Hub. A single-name
    /// Docker Hub image lives under `library/`.
    pub fn parse(name: &str) -> Result<ImageRef, ImageParseError> {
        let bad = || ImageParseError(name.to_string());
        if name.is_empty() || name.contains('@') || name.split('/').any(str::is_empty) {
            return Err(bad());
        }
        let (registry, path) = match name.split_once('/') {
            Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => (first, rest),
            _ if name.contains(['.', ':']) && !name.contains('/') => return Err(bad()),
            _ => (DOCKER_HUB, name),
        };
        if path.rsplit('/').next().is_some_and(|last| last.contains(':')) {
            return Err(bad());
        }
        let registry = if registry == DOCKER_HUB_LEGACY {
            DOCKER_HUB
        } else {
            registry
        };
        let path = if registry == DOCKER_HUB && !path.contains('/') {
            format!("library/{path}")
        } else {
            path.to_string()
        };
        Ok(ImageRef {
            name: name.to_string(),
            registry: registry.to_string(),
            path,
        })
    }

    /// The name as written in `kaas.yaml`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The registry as people name it (`docker.io`, `127.0.0.1:5000`).
    pub fn registry(&self) -> &str {
        &self.registry
    }

    /// `registry/path`, the same for every spelling of one image (`clastix/kamaji`,
    /// `docker.io/clastix/kamaji`, `index.docker.io/clastix/kamaji`).
    pub fn canonical(&self) -> String {
        format!("{}/{}", self.registry, self.path)
    }

    /// The host (and port) that serves the distribution API.
    pub fn api_host(&self) -> &str {
        api_host(&self.registry)
    }

    /// The repository path for the distribution API.
    pub fn api_path(&self) -> &str {
        &self.path
    }

    /// The server name to look up in the Docker config file and credential helpers.
    pub fn credential_server(&self) -> &str {
        if self.registry == DOCKER_HUB {
            DOCKER_HUB_CREDENTIALS
        } else {
            &self.registry
        }
    }

    /// `name:tag`, for messages.
    pub fn with_tag(&self, tag: &str) -> String {
        format!("{}:{tag}", self.name)
    }
}

/// The host serving the distribution API for a registry as people name it.
pub fn api_host(registry: &str) -> &str {
    if registry == DOCKER_HUB || registry == DOCKER_HUB_LEGACY {
        DOCKER_HUB_API
    } else {
        registry
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_hub_names_map_to_the_api_host_and_library() {
        let r = ImageRef::parse("docker.io/clastix/kamaji").unwrap();
        assert_eq!(
            (r.registry(), r.api_host(), r.api_path()),
            ("docker.io", "registry-1.docker.io", "clastix/kamaji")
        );
        assert_eq!(r.credential_server(), "https://index.docker.io/v1/");
        let r = ImageRef::parse("busybox").unwrap();
        assert_eq!((r.registry(), r.api_path()), ("docker.io", "library/busybox"));
        let r = ImageRef::parse("index.docker.io/library/busybox").unwrap();
        assert_eq!(r.canonical(), ImageRef::parse("docker.io/busybox").unwrap().canonical());
        assert_eq!(r.name(), "index.docker.io/library/busybox");
    }

    #[test]
    fn other_registries_are_taken_as_written() {
        let r = ImageRef::parse("127.0.0.1:5000/clastix/kamaji").unwrap();
        assert_eq!(
            (r.registry(), r.api_host(), r.api_path()),
            ("127.0.0.1:5000", "127.0.0.1:5000", "clastix/kamaji")
        );
        assert_eq!(r.credential_server(), "127.0.0.1:5000");
        let r = ImageRef::parse("localhost/etcd").unwrap();
        assert_eq!((r.registry(), r.api_path()), ("localhost", "etcd"));
        let r = ImageRef::parse("registry.k8s.io/autoscaling/cluster-autoscaler").unwrap();
        assert_eq!(r.api_host(), "registry.k8s.io");
    }

    #[test]
    fn refuses_tags_digests_and_empty_parts() {
        for bad in [
            "",
            "a//b",
            "quay.io/coreos/etcd:v3",
            "a@sha256:00",
            "quay.io",
            "/a",
            "a/",
        ] {
            assert!(ImageRef::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn digests_are_sha256_hex_only() {
        let d = Digest::of(b"");
        assert_eq!(
            d.as_str(),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(Digest::parse(d.as_str()), Ok(d.clone()));
        assert!(Digest::parse("sha512:00").is_err());
        assert!(Digest::parse(&d.as_str().to_uppercase()).is_err());
    }
}
