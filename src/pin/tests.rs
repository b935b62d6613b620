//! `plan` against an in-memory registry: which images are asked for, what the lock becomes.

use std::collections::BTreeMap;

use super::registry::{ErrorKind, Registry, RegistryError, Resolved};
use super::*;
use crate::pin::reference::Digest;
use crate::spec::load;
use crate::spec::raw::PlatformFile;

/// Tags by repository name; counts every call so tests can assert what was asked.
#[derive(Default)]
struct Memory {
    tags: BTreeMap<String, Vec<(String, Digest)>>,
    calls: Vec<String>,
}

impl Memory {
    fn with(mut self, image: &str, tag: &str, content: &str) -> Memory {
        self.tags
            .entry(image.to_string())
            .or_default()
            .push((tag.to_string(), Digest::of(content.as_bytes())));
        self
    }
}

impl Registry for Memory {
    fn resolve(&mut self, image: &ImageRef, tag: &str) -> Result<Resolved, RegistryError> {
        self.calls.push(format!("resolve {}", image.with_tag(tag)));
        let found = self
            .tags
            .get(image.name())
            .and_then(|ts| ts.iter().find(|(t, _)| t == tag));
        match found {
            Some((_, d)) => Ok(Resolved {
                digest: d.clone(),
                index: false,
            }),
            None => Err(not_found(image, tag)),
        }
    }

    fn tags(&mut self, image: &ImageRef) -> Result<Vec<String>, RegistryError> {
        self.calls.push(format!("tags {image}"));
        Ok(self
            .tags
            .get(image.name())
            .map(|ts| ts.iter().map(|(t, _)| t.clone()).collect())
            .unwrap_or_default())
    }
}

fn not_found(image: &ImageRef, tag: &str) -> RegistryError {
    RegistryError::for_test(image, tag, ErrorKind::NotFound)
}

const PLATFORM: &str = include_str!("../../kaas.yaml");

fn platform(kamaji_image: &str) -> crate::model::Platform {
    let text = PLATFORM.replace(
        "    image:\n      repository: docker.io/clastix/kamaji\n      tag: 26.8.2-edge\n",
        kamaji_image,
    );
    assert!(
        PLATFORM.contains(TAGGED),
        "the example kaas.yaml still has the kamaji image block"
    );
    let loaded = load::parse::<PlatformFile>("kaas.yaml", text.as_bytes()).expect("the example parses");
    crate::model::build::platform(&loaded).expect("the example is valid")
}

const TAGGED: &str = "    image:\n      repository: docker.io/clastix/kamaji\n      tag: 26.8.2-edge\n";
const POLICY: &str = "    image:\n      repository: docker.io/clastix/kamaji\n      tagPolicy: {pattern: edge, exclude: [26.8.3-edge]}\n";

/// Every default image of the example, each with one tag.
fn registry() -> Memory {
    Memory::default()
        .with("docker.io/clastix/kamaji", "26.8.2-edge", "kamaji 26.8.2")
        .with("docker.io/clastix/kamaji", "26.8.3-edge", "kamaji 26.8.3")
        .with("docker.io/clastix/kamaji", "edge-26.2.5", "kamaji old")
        .with("docker.io/clastix/kamaji", "latest", "kamaji latest")
        .with("quay.io/coreos/etcd", "v3.6.12", "etcd")
        .with("quay.io/coreos/etcd", "v3.5.6", "etcd job")
        .with("docker.io/cfssl/cfssl", "v1.6.5", "cfssl")
        .with("docker.io/clastix/kubectl", "v1.33", "kubectl")
        .with(
            "docker.io/clastix/cluster-api-control-plane-provider-kamaji",
            "v0.20.0",
            "cpp",
        )
        .with(
            "registry.k8s.io/autoscaling/cluster-autoscaler",
            "v1.35.0",
            "autoscaler",
        )
        .with(
            "registry.k8s.io/autoscaling/cluster-autoscaler",
            "v1.31.5",
            "autoscaler 1.31",
        )
        .with(
            "registry.k8s.io/autoscaling/cluster-autoscaler",
            "v1.32.7",
            "autoscaler 1.32",
        )
        .with(
            "registry.k8s.io/autoscaling/cluster-autoscaler",
            "v1.33.5",
            "autoscaler 1.33",
        )
        .with(
            "registry.k8s.io/autoscaling/cluster-autoscaler",
            "v1.34.4",
            "autoscaler 1.34",
        )
}

fn all() -> Request {
    Request::default()
}

#[test]
fn pins_every_image_once_and_keeps_vips() {
    let p = platform(TAGGED);
    let mut lock = Lock::default();
    lock.vips.insert("acme".into(), "10.0.0.1".parse().unwrap());
    let mut reg = registry();
    let out = plan(&p, &lock, &all(), &mut reg).unwrap();
    // Seven images, and the autoscaler once per Kubernetes minor of `tagsByMinor`.
    assert_eq!(out.lock.images.len(), 11);
    assert_eq!(out.lock.vips, lock.vips);
    assert_eq!(
        out.lock.images.digest("docker.io/clastix/kamaji", "26.8.2-edge"),
        Some(Digest::of(b"kamaji 26.8.2").as_str())
    );
    assert!(out.entries.iter().all(|e| e.change == Change::New));
    assert_eq!(reg.calls.len(), 11, "{:?}", reg.calls);
    assert!(reg.calls.iter().all(|c| c.starts_with("resolve")));
}

#[test]
fn a_second_pin_asks_nothing_and_changes_nothing() {
    let p = platform(TAGGED);
    let first = plan(&p, &Lock::default(), &all(), &mut registry()).unwrap();
    let mut reg = registry();
    let second = plan(&p, &first.lock, &all(), &mut reg).unwrap();
    assert_eq!(second.lock, first.lock);
    assert!(reg.calls.is_empty(), "{:?}", reg.calls);
    assert!(second.entries.iter().all(|e| e.change == Change::Unchanged));
}

#[test]
fn update_re_resolves_and_reports_a_moved_digest() {
    let p = platform(TAGGED);
    let first = plan(&p, &Lock::default(), &all(), &mut registry()).unwrap();
    let mut reg = registry();
    reg.tags.get_mut("docker.io/clastix/kamaji").unwrap()[0].1 = Digest::of(b"rebuilt");
    let update = Request {
        update: true,
        images: vec![],
    };
    let out = plan(&p, &first.lock, &update, &mut reg).unwrap();
    assert_eq!(reg.calls.len(), 11);
    let moved: Vec<_> = out.entries.iter().filter(|e| e.change == Change::Moved).collect();
    assert_eq!(moved.len(), 1);
    assert_eq!(moved[0].digest, Digest::of(b"rebuilt").as_str());
    assert_eq!(
        moved[0].previous,
        Some(Previous {
            tag: "26.8.2-edge".into(),
            digest: Digest::of(b"kamaji 26.8.2").as_str().into()
        })
    );
}

#[test]
fn a_policy_picks_the_newest_allowed_edge_tag_and_sticks_until_update() {
    let p = platform(POLICY);
    let mut reg = registry();
    let out = plan(&p, &Lock::default(), &all(), &mut reg).unwrap();
    // 26.8.3-edge is excluded; latest is never picked.
    assert_eq!(out.lock.images.tags_of("docker.io/clastix/kamaji"), vec!["26.8.2-edge"]);
    assert!(reg.calls.contains(&"tags docker.io/clastix/kamaji".to_string()));

    let mut reg = registry().with("docker.io/clastix/kamaji", "26.9.1-edge", "kamaji 26.9.1");
    let again = plan(&p, &out.lock, &all(), &mut reg).unwrap();
    assert_eq!(again.lock, out.lock, "plain pin keeps the pinned tag");
    assert!(reg.calls.is_empty());

    let update = Request {
        update: true,
        images: vec!["clastix/kamaji".into()],
    };
    let moved = plan(&p, &out.lock, &update, &mut reg).unwrap();
    assert_eq!(
        moved.lock.images.tags_of("docker.io/clastix/kamaji"),
        vec!["26.9.1-edge"]
    );
    assert_eq!(moved.entries.len(), 1);
    assert_eq!(moved.entries[0].change, Change::Moved);
    assert_eq!(moved.entries[0].previous.as_ref().unwrap().tag, "26.8.2-edge");
    // Only the selected image was asked for; the others keep their pins.
    assert_eq!(
        reg.calls,
        vec![
            "tags docker.io/clastix/kamaji".to_string(),
            "resolve docker.io/clastix/kamaji:26.9.1-edge".to_string()
        ]
    );
    assert_eq!(moved.lock.images.len(), 11);
}

#[test]
fn a_policy_with_nothing_to_pick_is_a_user_error() {
    let p = platform(
        "    image:\n      repository: docker.io/clastix/kamaji\n      tagPolicy: {pattern: edge, exclude: [26.8.2-edge, 26.8.3-edge, edge-26.2.5]}\n",
    );
    let err = plan(&p, &Lock::default(), &all(), &mut registry()).unwrap_err();
    assert!(err.is_user_error());
    assert_eq!(
        err.to_string(),
        "no tag of `docker.io/clastix/kamaji` matches the `edge` tag policy (4 tag(s) listed, 3 excluded)"
    );
}

#[test]
fn image_arguments_select_by_repository_in_any_spelling_and_tag() {
    let p = platform(TAGGED);
    let mut reg = registry();
    let req = Request {
        update: false,
        images: vec!["quay.io/coreos/etcd:v3.5.6".into()],
    };
    let out = plan(&p, &Lock::default(), &req, &mut reg).unwrap();
    assert_eq!(reg.calls, vec!["resolve quay.io/coreos/etcd:v3.5.6".to_string()]);
    // The example's backups use the chart's etcd job image too: one pin serves both fields.
    assert_eq!(
        out.entries[0].fields,
        vec![
            "spec.kamajiEtcd.jobs.etcd".to_string(),
            "spec.backups.image".to_string()
        ]
    );

    let req = Request {
        update: false,
        images: vec!["nginx".into()],
    };
    let err = plan(&p, &Lock::default(), &req, &mut registry()).unwrap_err();
    assert_eq!(err.to_string(), "`nginx` is not an image of this platform");
    assert!(err.hint().contains("`quay.io/coreos/etcd`"));
}

#[test]
fn a_failure_part_way_returns_the_error_and_no_lock() {
    let p = platform(TAGGED);
    let mut reg = registry();
    reg.tags.remove("registry.k8s.io/autoscaling/cluster-autoscaler");
    let err = plan(&p, &Lock::default(), &all(), &mut reg).unwrap_err();
    assert!(err.is_user_error());
    assert_eq!(
        err.to_string(),
        "`registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.0` does not exist in registry `registry.k8s.io`"
    );
}
