//! `validate` without `--crds` (issue 18): the CRDs of exactly the releases `kaas.yaml` pins,
//! downloaded from their release assets (here: a mirror on loopback serving the upstream CRD
//! files in the release layout), cached, then used offline; every failure names the component,
//! the version, the URL and what to do. `pin` recording the assets' sha256 is in `pin.rs`.

use std::ffi::OsStr;
use std::path::Path;

use crate::common::{ReleaseMirror, Repo, Run, crds_dir};

/// The release assets the example platform pins, as paths under https://github.com.
pub const EXAMPLE_ASSETS: [&str; 10] = [
    "/kubernetes-sigs/cluster-api/releases/download/v1.14.0/core-components.yaml",
    "/kubernetes-sigs/cluster-api/releases/download/v1.14.0/bootstrap-components.yaml",
    "/kubernetes-sigs/cluster-api-operator/releases/download/v0.28.0/operator-components.yaml",
    "/clastix/cluster-api-control-plane-provider-kamaji/releases/download/v0.20.0/control-plane-components.yaml",
    "/ionos-cloud/cluster-api-provider-proxmox/releases/download/v0.9.0/infrastructure-components.yaml",
    "/fluxcd/source-controller/releases/download/v1.9.1/source-controller.crds.yaml",
    "/fluxcd/kustomize-controller/releases/download/v1.9.4/kustomize-controller.crds.yaml",
    "/fluxcd/helm-controller/releases/download/v1.6.3/helm-controller.crds.yaml",
    "/clastix/kamaji/raw/26.8.2-edge/charts/kamaji/crds/kamaji.clastix.io_tenantcontrolplanes.yaml",
    "/clastix/kamaji/raw/26.8.2-edge/charts/kamaji/crds/kamaji.clastix.io_datastores.yaml",
];

/// `validate` with no CRD folder, the mirror at `mirror` and the cache at `cache`.
pub fn validate(repo: &Repo, mirror: &str, cache: &Path) -> Run {
    repo.run_with(
        &["validate"],
        &[
            ("KAAS_CRDS", OsStr::new("")),
            ("KAAS_CRD_MIRROR", OsStr::new(mirror)),
            ("KAAS_CRD_CACHE", cache.as_os_str()),
        ],
    )
}

/// A mirror address nothing listens on: the network is down.
pub const NO_NETWORK: &str = "http://127.0.0.1:9";

/// The example repository, rendered.
fn rendered_example() -> Repo {
    let repo = Repo::example();
    let render = repo.run(&["render"]);
    assert_eq!(render.code, 0, "{}", render.stderr);
    repo
}

/// The paths the mirror was asked for, sorted.
pub fn requests(log: &Path) -> Vec<String> {
    let mut lines: Vec<String> = std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

#[test]
fn validate_downloads_the_pinned_releases_once_then_works_offline() {
    let repo = rendered_example();
    let dir = tempfile::tempdir().unwrap();
    let (log, cache) = (dir.path().join("requests"), dir.path().join("cache"));
    let mirror = ReleaseMirror::serve(&crds_dir(), Some(&log));

    let first = validate(&repo, &mirror.url(), &cache);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let mut expected: Vec<String> = EXAMPLE_ASSETS.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(requests(&log), expected, "one download per pinned release asset");
    // The CRDs of those releases, nothing else: 22 kinds the example's objects use, not the 41
    // of the whole CRD folder.
    assert!(
        first.stderr.contains("69 objects in 77 files against 22 CRDs"),
        "{}",
        first.stderr
    );
    // Nothing pinned yet: said, with what to run.
    assert!(
        first
            .stderr
            .contains("warning: 10 CRD release asset(s) have no sha256 in `kaas.lock`"),
        "{}",
        first.stderr
    );
    assert!(
        first.stderr.contains("run `kaas-gitops pin` to record them"),
        "{}",
        first.stderr
    );

    // Offline: the same result from the cache, and no request.
    let second = validate(&repo, NO_NETWORK, &cache);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(second.stderr.contains("against 22 CRDs"), "{}", second.stderr);
    assert_eq!(
        requests(&log).len(),
        EXAMPLE_ASSETS.len(),
        "the second run asked nothing"
    );

    // A release the fleet is checked against is what kaas.yaml pins: move the provider and the
    // old cache no longer answers.
    repo.replace(
        "kaas.yaml",
        "infrastructureProviders: {proxmox: v0.9.0}",
        "infrastructureProviders: {proxmox: v0.9.1}",
    );
    let moved = validate(&repo, NO_NETWORK, &cache);
    assert_eq!(moved.code, 2, "{}", moved.stderr);
    assert!(
        moved.stderr.contains(
            "error: cannot get the CRDs of infrastructure-proxmox v0.9.1: http://127.0.0.1:9/ionos-cloud/cluster-api-provider-proxmox/releases/download/v0.9.1/infrastructure-components.yaml: "
        ),
        "{}",
        moved.stderr
    );
}

#[test]
fn no_network_and_no_cache_names_every_missing_release_and_how_to_provide_it() {
    let repo = rendered_example();
    let cache = tempfile::tempdir().unwrap();
    let run = validate(&repo, NO_NETWORK, cache.path());
    assert_eq!(run.code, 2, "{}", run.stderr);
    // Every asset, each with the component, the version, the URL, the kaas.yaml field that picks
    // the release and the ways to provide it.
    assert_eq!(
        run.stderr.matches("error: cannot get the CRDs of ").count(),
        10,
        "{}",
        run.stderr
    );
    let core = "error: cannot get the CRDs of cluster-api v1.14.0: http://127.0.0.1:9/kubernetes-sigs/cluster-api/releases/download/v1.14.0/core-components.yaml: ";
    assert!(run.stderr.contains(core), "{}", run.stderr);
    assert!(
        run.stderr.contains("= field: `spec.clusterApi.coreVersion`"),
        "{}",
        run.stderr
    );
    let by_hand = cache.path().join("cluster-api/v1.14.0/core-components.yaml");
    assert!(
        run.stderr.contains(&format!(
            "set `KAAS_CRD_MIRROR` (or `--crd-mirror`) to a mirror that serves the same paths as https://github.com, or save the file as `{}`, or pass `--crds DIR`",
            by_hand.display()
        )),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .ends_with("error: 10 CRD release asset(s) could not be used; nothing was checked or written\n"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_release_the_mirror_does_not_have_is_named_with_its_http_status() {
    let repo = rendered_example();
    repo.replace("kaas.yaml", "version: v0.20.0", "version: v0.20.7");
    let mirror = ReleaseMirror::serve(&crds_dir(), None);
    let cache = tempfile::tempdir().unwrap();
    let run = validate(&repo, &mirror.url(), cache.path());
    assert_eq!(run.code, 2, "{}", run.stderr);
    let want = format!(
        "error: cannot get the CRDs of control-plane-kamaji v0.20.7: {}/clastix/cluster-api-control-plane-provider-kamaji/releases/download/v0.20.7/control-plane-components.yaml: HTTP 404 Not Found\n",
        mirror.url()
    );
    assert!(run.stderr.contains(&want), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("= field: `spec.clusterApi.controlPlaneProvider.version`"),
        "{}",
        run.stderr
    );
    // Only that one is missing.
    assert_eq!(run.stderr.matches("error: cannot get").count(), 1, "{}", run.stderr);
}

#[test]
fn an_explicit_crd_folder_needs_no_download() {
    let repo = rendered_example();
    let cache = tempfile::tempdir().unwrap();
    let run = repo.run_with(
        &["validate", "--crds", &crds_dir().to_string_lossy()],
        &[
            ("KAAS_CRD_MIRROR", OsStr::new(NO_NETWORK)),
            ("KAAS_CRD_CACHE", cache.path().as_os_str()),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0, "nothing cached");
}

#[test]
fn each_installed_provider_brings_the_crds_of_its_own_release() {
    let dir = tempfile::tempdir().unwrap();
    let (log, cache) = (dir.path().join("requests"), dir.path().join("cache"));
    let mirror = ReleaseMirror::serve(&crds_dir(), Some(&log));
    for (fixture, asset) in [
        (
            "hetzner",
            "/syself/cluster-api-provider-hetzner/releases/download/v1.1.8/infrastructure-components.yaml",
        ),
        (
            "kubevirt",
            "/kubernetes-sigs/cluster-api-provider-kubevirt/releases/download/v0.11.2/infrastructure-components.yaml",
        ),
        (
            "nutanix",
            "/nutanix-cloud-native/cluster-api-provider-nutanix/releases/download/v1.10.3/infrastructure-components.yaml",
        ),
        (
            "metal-stack",
            "/metal-stack/cluster-api-provider-metal-stack/releases/download/v0.8.0/infrastructure-components.yaml",
        ),
        (
            "packet",
            "/kubernetes-sigs/cluster-api-provider-packet/releases/download/v0.9.0/infrastructure-components.yaml",
        ),
        (
            "aws",
            "/kubernetes-sigs/cluster-api-provider-aws/releases/download/v2.11.1/infrastructure-components.yaml",
        ),
        (
            "vsphere",
            "/kubernetes-sigs/cluster-api-provider-vsphere/releases/download/v1.16.1/infrastructure-components.yaml",
        ),
        (
            "openstack",
            "/kubernetes-sigs/cluster-api-provider-openstack/releases/download/v0.14.7/infrastructure-components.yaml",
        ),
        (
            "metal3",
            "/metal3-io/cluster-api-provider-metal3/releases/download/v1.13.2/infrastructure-components.yaml",
        ),
        (
            "tinkerbell",
            "/tinkerbell/cluster-api-provider-tinkerbell/releases/download/v0.7.0/infrastructure-components.yaml",
        ),
        (
            "ionoscloud",
            "/ionos-cloud/cluster-api-provider-ionoscloud/releases/download/v0.6.3/infrastructure-components.yaml",
        ),
        (
            "azure",
            "/kubernetes-sigs/cluster-api-provider-azure/releases/download/v1.26.0/infrastructure-components.yaml",
        ),
    ] {
        let repo = Repo::fixture(&format!("providers/{fixture}"));
        let render = repo.run(&["render"]);
        assert_eq!(render.code, 0, "{fixture}: {}", render.stderr);
        let run = validate(&repo, &mirror.url(), &cache);
        assert_eq!(run.code, 0, "{fixture}: {}", run.stderr);
        assert!(
            requests(&log).iter().any(|a| a == asset),
            "{fixture}: {asset} not fetched"
        );
    }
    // Nutanix needs the Helm addon provider, whose release brings HelmChartProxy.
    let asked = requests(&log);
    let caaph = "/kubernetes-sigs/cluster-api-addon-provider-helm/releases/download/v0.6.4/addon-components.yaml";
    assert!(asked.iter().any(|a| a == caaph), "{asked:#?}");
    // Each asset once, however many repositories use it: the rest came from the cache.
    let mut unique = asked.clone();
    unique.dedup();
    assert_eq!(unique, asked, "an asset was downloaded twice");
}
