//! One tenant's OCI artifact, byte for byte: a tar.gz layer of its files, a config blob and an
//! image manifest with Flux's media types. Same files, same bytes, on every machine: entries
//! sorted by path, owner 0, mode 0644 (0755 for folders), mtime 0, a gzip header without name
//! or time, and no annotation that depends on the commit or the clock (`flux push artifact`
//! writes `org.opencontainers.image.created` and the commit, which would move the digest on
//! every push: fluxcd/pkg `oci/client/push.go`).

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::io::Write;

use flate2::{Compression, GzBuilder};
use serde_json::json;
use sha2::{Digest, Sha256};

/// The OCI image manifest media type.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// Flux's artifact config media type (fluxcd/pkg `oci/globals.go`, `CanonicalConfigMediaType`).
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.cncf.flux.config.v1+json";
pub use crate::layout::artifact::CONTENT_MEDIA_TYPE;
/// The annotation naming the tenant (content-derived: the artifact's own name).
pub const TENANT_ANNOTATION: &str = "dev.kaas-gitops.tenant";

/// A built artifact: three blobs and the manifest's digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    /// The gzip-compressed tar.
    pub layer: Vec<u8>,
    /// The config blob.
    pub config: Vec<u8>,
    /// The manifest (JSON, fixed key order).
    pub manifest: Vec<u8>,
}

/// `sha256:<hex>` of some bytes.
pub fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

impl Artifact {
    /// The artifact of `tenant` holding `files` (repository-relative paths with `/`).
    pub fn build(tenant: &str, files: &BTreeMap<String, Vec<u8>>) -> Artifact {
        let tar = tarball(files);
        let mut gz = GzBuilder::new().mtime(0).write(Vec::new(), Compression::default());
        gz.write_all(&tar).expect("writing to a Vec cannot fail");
        let layer = gz.finish().expect("writing to a Vec cannot fail");
        // An empty JSON object: source-controller reads only the layers (v1.9.1,
        // `ocirepository_controller.go`, `reconcileSource`: it selects a layer by media type).
        let config = b"{}".to_vec();
        let manifest = json!({
            "schemaVersion": 2,
            "mediaType": MANIFEST_MEDIA_TYPE,
            "config": {"mediaType": CONFIG_MEDIA_TYPE, "digest": digest(&config), "size": config.len()},
            "layers": [{"mediaType": CONTENT_MEDIA_TYPE, "digest": digest(&layer), "size": layer.len()}],
            "annotations": {TENANT_ANNOTATION: tenant},
        });
        // serde_json's map is a BTreeMap here (no preserve_order): keys come out sorted.
        let manifest = serde_json::to_vec(&manifest).expect("a JSON value always serialises");
        Artifact {
            layer,
            config,
            manifest,
        }
    }

    /// The manifest's digest: what a tag names in the registry.
    pub fn digest(&self) -> String {
        digest(&self.manifest)
    }

    /// The OCIRepository revision Flux reports for this artifact behind `tag`.
    pub fn revision(&self, tag: &str) -> String {
        format!("{tag}@{}", self.digest())
    }

    /// The bytes of all three blobs.
    pub fn size(&self) -> usize {
        self.layer.len() + self.config.len() + self.manifest.len()
    }
}

/// A ustar archive of `files` and the folders above them, sorted by path.
fn tarball(files: &BTreeMap<String, Vec<u8>>) -> Vec<u8> {
    let mut dirs = BTreeSet::new();
    for path in files.keys() {
        let mut p = path.as_str();
        while let Some((parent, _)) = p.rsplit_once('/') {
            dirs.insert(format!("{parent}/"));
            p = parent;
        }
    }
    let mut entries: Vec<(&str, Option<&[u8]>)> = dirs.iter().map(|d| (d.as_str(), None)).collect();
    entries.extend(files.iter().map(|(p, b)| (p.as_str(), Some(b.as_slice()))));
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let mut builder = tar::Builder::new(Vec::new());
    for (path, bytes) in entries {
        let mut header = tar::Header::new_ustar();
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        match bytes {
            None => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
                builder
                    .append_data(&mut header, path, std::io::empty())
                    .expect("writing to a Vec cannot fail");
            }
            Some(b) => {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(0o644);
                header.set_size(b.len() as u64);
                builder
                    .append_data(&mut header, path, b)
                    .expect("writing to a Vec cannot fail");
            }
        }
    }
    builder.into_inner().expect("writing to a Vec cannot fail")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(extra: &str) -> BTreeMap<String, Vec<u8>> {
        BTreeMap::from([
            (
                "overlays/tenants/acme/kustomization.yaml".into(),
                b"resources: []\n".to_vec(),
            ),
            (
                "base/tenant/kustomization.yaml".into(),
                format!("# {extra}\n").into_bytes(),
            ),
        ])
    }

    #[test]
    fn same_files_same_digest_and_content_moves_it() {
        let a = Artifact::build("acme", &files("x"));
        assert_eq!(a, Artifact::build("acme", &files("x")));
        assert_ne!(a.digest(), Artifact::build("acme", &files("y")).digest());
        assert_ne!(a.digest(), Artifact::build("globex", &files("x")).digest());
        assert!(a.revision("latest").starts_with("latest@sha256:"));
    }

    #[test]
    fn the_layer_is_a_sorted_tar_gz_with_zero_times() {
        let a = Artifact::build("acme", &files("x"));
        // gzip header: magic, deflate, no flags (so no file name), mtime 0.
        assert_eq!(&a.layer[..8], &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0]);
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&a.layer[..]));
        let names: Vec<(String, u64)> = archive
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.path().unwrap().to_string_lossy().into_owned(),
                    e.header().mtime().unwrap(),
                )
            })
            .collect();
        let paths: Vec<&str> = names.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "base/",
                "base/tenant/",
                "base/tenant/kustomization.yaml",
                "overlays/",
                "overlays/tenants/",
                "overlays/tenants/acme/",
                "overlays/tenants/acme/kustomization.yaml"
            ]
        );
        assert!(names.iter().all(|(_, m)| *m == 0));
        let m: serde_json::Value = serde_json::from_slice(&a.manifest).unwrap();
        assert_eq!(m["layers"][0]["mediaType"], CONTENT_MEDIA_TYPE);
        assert_eq!(m["layers"][0]["digest"], digest(&a.layer));
        assert_eq!(m["config"]["mediaType"], CONFIG_MEDIA_TYPE);
    }
}
