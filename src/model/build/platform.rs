//! `kaas.yaml` -> `model::Platform`, collecting every problem.

use std::collections::BTreeMap;
use std::net::IpAddr;

use crate::diagnostics::Diagnostic;
use crate::model::DEFAULT_CLUSTER_DOMAIN;
use crate::model::build::fields::{ETCD_JOB_IMAGE, chart, header, image, image_or_default, release, version};
use crate::model::build::names::{is_dns1123_label, is_dns1123_subdomain};
use crate::model::build::{addons, providers, topology, upgrades};
use crate::model::{
    ArtifactDelivery, Chart, Delivery, ImageSpec, KubeVersion, LoadBalancer, ManagementReleases, OciDelivery, Platform,
    Provider, repository_name,
};
use crate::spec::load::Loaded;
use crate::spec::raw::{self, Contract, LoadBalancerImplementation, PlatformFile};
use crate::spec::source::Source;

/// Default job images of the kamaji-etcd chart, pinned to explicit tags (the chart's own
/// defaults float: an empty tag, or the management cluster's minor version).
const CFSSL_IMAGE: (&str, &str) = ("docker.io/cfssl/cfssl", "v1.6.5");
const KUBECTL_IMAGE: (&str, &str) = ("docker.io/clastix/kubectl", "v1.33");
/// Builds the platform model; `Err` carries every problem found.
pub fn platform(loaded: &Loaded<PlatformFile>) -> Result<Platform, Vec<Diagnostic>> {
    let src = &loaded.source;
    let file = &loaded.value;
    let spec = &file.spec;
    let mut errs = Vec::new();

    header(src, &file.api_version, &file.kind, "Platform", &mut errs);

    let interval = spec.flux.interval.clone().unwrap_or_else(|| "10m".into());
    if !is_duration(&interval) {
        errs.push(
            src.error("spec.flux.interval", format!("`{interval}` is not a duration"))
                .with_hint("write a Go duration such as `10m`, `1h` or `30s`"),
        );
    }
    let delivery = delivery(src, &spec.flux, &mut errs);
    let kamaji_namespace = spec.kamaji.namespace.clone().unwrap_or_else(|| "kamaji-system".into());
    if kamaji_namespace != "kamaji-system" {
        errs.push(
            src.error("spec.kamaji.namespace", format!("Kamaji must run in `kamaji-system`, not `{kamaji_namespace}`"))
                .with_hint("the kamaji chart's CRDs hard-code the webhook service `kamaji-webhook-service.kamaji-system`; remove the field or set `kamaji-system`"),
        );
    }

    let cluster_domain = spec
        .management
        .as_ref()
        .and_then(|m| m.cluster_domain.clone())
        .unwrap_or_else(|| DEFAULT_CLUSTER_DOMAIN.into());
    if !is_dns1123_subdomain(&cluster_domain) {
        errs.push(
            src.error(
                "spec.management.clusterDomain",
                format!("`{cluster_domain}` is not a DNS domain"),
            )
            .with_hint("write the management cluster's kubelet `clusterDomain`, e.g. `cluster.local`"),
        );
    }

    let (min, max) = kubernetes_range(src, spec, &mut errs);

    let kamaji_chart = chart(src, "spec.kamaji.chart", "kamaji", &spec.kamaji.chart, &mut errs);
    let etcd_chart = chart(
        src,
        "spec.kamajiEtcd.chart",
        "kamaji-etcd",
        &spec.kamaji_etcd.chart,
        &mut errs,
    );
    let autoscaler_chart = chart(
        src,
        "spec.clusterAutoscaler.chart",
        "cluster-autoscaler",
        &spec.cluster_autoscaler.chart,
        &mut errs,
    );

    let kamaji_image = image(src, "spec.kamaji.image", &spec.kamaji.image, None, true, &mut errs);
    let etcd_image = image(
        src,
        "spec.kamajiEtcd.image",
        &spec.kamaji_etcd.image,
        None,
        false,
        &mut errs,
    );
    let (etcd_cfssl_image, etcd_kubectl_image, etcd_job_image) = etcd_job_images(src, spec, &mut errs);

    let cpp = &spec.cluster_api.control_plane_provider;
    if !cpp.version.starts_with('v') || KubeVersion::parse(&cpp.version).is_none() {
        errs.push(
            src.error(
                "spec.clusterApi.controlPlaneProvider.version",
                format!("`{}` is not a release version", cpp.version),
            )
            .with_hint("write the provider release as `vMAJOR.MINOR.PATCH`, e.g. `v0.20.0`"),
        );
    }
    let cp_provider_image = image(
        src,
        "spec.clusterApi.controlPlaneProvider.image",
        &cpp.image,
        Some(&cpp.version),
        false,
        &mut errs,
    );
    let autoscaler_image = image(
        src,
        "spec.clusterAutoscaler.image",
        &spec.cluster_autoscaler.image,
        None,
        false,
        &mut errs,
    );

    let autoscaler_images_by_minor = autoscaler_images_by_minor(src, spec, &mut errs);

    let installed = providers::installed(src, spec, &mut errs);
    let (addons, addon_defaults) = addons::platform(src, spec, &installed, &mut errs);
    // Every chart's repository is one HelmRepository in the platform layer, named from its URL:
    // the platform's charts and the add-on catalog's together.
    let mut charts: Vec<(&str, &Chart)> = vec![
        ("spec.kamaji.chart", &kamaji_chart),
        ("spec.kamajiEtcd.chart", &etcd_chart),
        ("spec.clusterAutoscaler.chart", &autoscaler_chart),
    ];
    charts.extend(addons.values().map(|a| (a.field.as_str(), &a.chart)));
    repository_names(src, &charts, &mut errs);
    let topology = spec
        .topology
        .as_ref()
        .map(|t| topology::classes(src, t, &installed.infrastructure, &mut errs));

    let (load_balancer, vip_pools) = load_balancer(src, spec, &mut errs);
    let management_clusters = super::management_clusters::platform(src, spec, load_balancer, &mut errs);
    let exposures = super::exposure::platform(src, spec.api_server_exposure.as_ref(), &mut errs);

    let datastores = super::datastores::platform(src, spec, &kamaji_namespace, &mut errs);

    let branch_prefix = spec
        .git
        .as_ref()
        .and_then(|g| g.branch_prefix.clone())
        .unwrap_or_else(|| "kaas/".into());
    let author = spec
        .git
        .as_ref()
        .and_then(|g| g.author.as_ref())
        .map(|a| (a.name.clone(), a.email.clone()));

    let source_namespace = spec
        .flux
        .source_ref
        .namespace
        .clone()
        .unwrap_or_else(|| "flux-system".into());
    if !is_dns1123_label(&source_namespace) {
        errs.push(src.error("spec.flux.sourceRef.namespace", "not a valid namespace name"));
    }

    let backups = crate::model::build::backup::platform(src, spec.backups.as_ref(), &mut errs);
    let contract = spec.cluster_api.contract.unwrap_or(Contract::V1beta2);
    let management = management_releases(src, spec, contract, &mut errs);
    errs.extend(super::compatibility::errors(
        src,
        spec,
        contract,
        &management.cluster_api,
    ));
    let waves = upgrades::waves(src, spec.upgrades.as_ref(), &management_clusters, &mut errs);
    let kubernetes_releases = kubernetes_releases(src, spec, &mut errs);
    let oidc_issuers = crate::model::build::access::platform(src, spec.access.as_ref(), &mut errs);
    let management_groups_prefix =
        crate::model::build::access::management_groups_prefix(src, spec.access.as_ref(), &mut errs);

    if !errs.is_empty() {
        return Err(errs);
    }
    let platform = Platform {
        name: file.metadata.name.clone(),
        source_kind: spec.flux.source_ref.kind.clone(),
        source_name: spec.flux.source_ref.name.clone(),
        source_namespace,
        interval,
        flux_shards: spec.flux.shards.unwrap_or(0),
        delivery,
        kamaji_namespace,
        cluster_domain,
        kamaji_chart,
        kamaji_image,
        default_datastore_replicas: spec
            .kamaji
            .default_data_store
            .as_ref()
            .and_then(|d| d.replicas)
            .unwrap_or(3),
        min_kubernetes: min.expect("checked above"),
        max_kubernetes: max.expect("checked above"),
        kubernetes_releases,
        waves,
        etcd_chart,
        etcd_image,
        etcd_cfssl_image,
        etcd_kubectl_image,
        etcd_job_image,
        contract,
        cp_provider_version: cpp.version.clone(),
        cp_provider_replicas: cpp.replicas.unwrap_or(2),
        cp_provider_image,
        infrastructure_providers: installed.infrastructure,
        provider_config_secrets: installed.config_secrets,
        addon_providers: installed.addons,
        ipam_providers: installed.ipam,
        addons,
        addon_defaults,
        topology,
        autoscaler_chart,
        autoscaler_image,
        autoscaler_images_by_minor,
        vip_pools,
        management_clusters,
        load_balancer,
        exposures,
        data_stores: datastores.stores,
        tenant_datastore_default: datastores.default,
        datastore_overrides: datastores.overrides,
        kine_image: datastores.kine_image,
        insecure_registries: spec.registries.as_ref().map(|r| r.insecure.clone()).unwrap_or_default(),
        branch_prefix,
        author,
        backups,
        management,
        oidc_issuers,
        management_groups_prefix,
        feature_gates: spec.cluster_api.feature_gates.clone(),
    };
    let gates = super::feature_gates::errors(src, spec.cluster_api.feature_gates.as_ref(), &platform);
    if !gates.is_empty() {
        return Err(gates);
    }
    Ok(platform)
}

/// `spec.kamaji.supportedKubernetes`: both ends, in order, and a written Kamaji tag that can run
/// `max`.
fn kubernetes_range(
    src: &Source,
    spec: &raw::PlatformSpec,
    errs: &mut Vec<Diagnostic>,
) -> (Option<KubeVersion>, Option<KubeVersion>) {
    let min = version(
        src,
        "spec.kamaji.supportedKubernetes.min",
        &spec.kamaji.supported_kubernetes.min,
        errs,
    );
    let max = version(
        src,
        "spec.kamaji.supportedKubernetes.max",
        &spec.kamaji.supported_kubernetes.max,
        errs,
    );
    if let (Some(a), Some(b)) = (min, max)
        && a > b
    {
        errs.push(
            src.error(
                "spec.kamaji.supportedKubernetes.min",
                format!("`min` ({a}) is newer than `max` ({b})"),
            )
            .with_hint("min must be at most max"),
        );
    }

    // A fixed tag is checked here; a tag a policy picks is checked once kaas.lock is read
    // (`commands::pipeline`).
    if let (Some(tag), Some(max)) = (&spec.kamaji.image.tag, max)
        && let Some(d) = super::kamaji_version::check(src, tag, max, super::TagOrigin::Written)
        && d.is_error()
    {
        errs.push(d);
    }
    (min, max)
}

/// The kamaji-etcd chart's job images (`spec.kamajiEtcd.jobs`), pinned defaults applied: cfssl,
/// kubectl and etcd.
fn etcd_job_images(
    src: &Source,
    spec: &raw::PlatformSpec,
    errs: &mut Vec<Diagnostic>,
) -> (ImageSpec, ImageSpec, ImageSpec) {
    let jobs = spec.kamaji_etcd.jobs.as_ref();
    let job = |field: &str, img: Option<&raw::Image>, default: (&str, &str), errs: &mut Vec<Diagnostic>| {
        image_or_default(src, field, img, default, errs)
    };
    let etcd_cfssl_image = job(
        "spec.kamajiEtcd.jobs.cfssl",
        jobs.and_then(|j| j.cfssl.as_ref()),
        CFSSL_IMAGE,
        errs,
    );
    let etcd_kubectl_image = job(
        "spec.kamajiEtcd.jobs.kubectl",
        jobs.and_then(|j| j.kubectl.as_ref()),
        KUBECTL_IMAGE,
        errs,
    );
    let etcd_job_image = job(
        "spec.kamajiEtcd.jobs.etcd",
        jobs.and_then(|j| j.etcd.as_ref()),
        ETCD_JOB_IMAGE,
        errs,
    );
    (etcd_cfssl_image, etcd_kubectl_image, etcd_job_image)
}

/// `spec.clusterAutoscaler.tagsByMinor`: one image per Kubernetes minor, each of that minor.
fn autoscaler_images_by_minor(
    src: &Source,
    spec: &raw::PlatformSpec,
    errs: &mut Vec<Diagnostic>,
) -> BTreeMap<u32, ImageSpec> {
    let mut autoscaler_images_by_minor = BTreeMap::new();
    for (minor, tag) in &spec.cluster_autoscaler.tags_by_minor {
        let field = format!("spec.clusterAutoscaler.tagsByMinor.{minor}");
        let parsed = minor
            .strip_prefix("1.")
            .filter(|m| !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()) && m.len() < 4)
            .and_then(|m| m.parse::<u32>().ok());
        let Some(m) = parsed else {
            errs.push(
                src.key_error(&field, format!("`{minor}` is not a Kubernetes minor"))
                    .with_hint("write the minor as `\"1.33\"`: the tag serves tenants of Kubernetes v1.33.x"),
            );
            continue;
        };
        let raw = raw::Image {
            repository: spec.cluster_autoscaler.image.repository.clone(),
            tag: Some(tag.clone()),
            tag_policy: None,
        };
        let spec = image(src, &field, &raw, None, false, errs);
        if let Some(t) = KubeVersion::parse(tag)
            && t.minor != m
        {
            errs.push(
                src.error(
                    &field,
                    format!("`{tag}` is not a cluster-autoscaler of Kubernetes 1.{m}"),
                )
                .with_hint(format!("use the newest `v1.{m}.x` release")),
            );
        }
        autoscaler_images_by_minor.insert(
            m,
            ImageSpec {
                field: field.clone(),
                ..spec
            },
        );
    }
    autoscaler_images_by_minor
}

/// `spec.loadBalancer`: what serves the tenants' `LoadBalancer` Services, and the address pools
/// their VIPs come from.
fn load_balancer(
    src: &Source,
    spec: &raw::PlatformSpec,
    errs: &mut Vec<Diagnostic>,
) -> (LoadBalancer, Vec<(IpAddr, IpAddr)>) {
    let mut vip_pools = Vec::new();
    let load_balancer =
        spec.load_balancer
            .as_ref()
            .and_then(|lb| lb.implementation)
            .map_or(LoadBalancer::Metallb, |i| match i {
                LoadBalancerImplementation::Metallb => LoadBalancer::Metallb,
                LoadBalancerImplementation::KubeVip => LoadBalancer::KubeVip,
                LoadBalancerImplementation::Cilium => LoadBalancer::Cilium,
                LoadBalancerImplementation::Cloud => LoadBalancer::Cloud,
            });
    if let Some(lb) = &spec.load_balancer
        && load_balancer == LoadBalancer::Cloud
        && !lb.pools.is_empty()
    {
        errs.push(
            src.error(
                "spec.loadBalancer.pools",
                "a cloud load balancer chooses its addresses: pools cannot be used",
            )
            .with_hint("drop `pools`, or name the implementation that serves them (`metallb`, `kube-vip`, `cilium`)"),
        );
    }
    if let Some(lb) = &spec.load_balancer {
        vip_pools = super::fields::pools(src, "spec.loadBalancer.pools", &lb.pools, errs);
    }
    (load_balancer, vip_pools)
}

/// `spec.upgrades.kubernetesReleases`, sorted, each once.
fn kubernetes_releases(src: &Source, spec: &raw::PlatformSpec, errs: &mut Vec<Diagnostic>) -> Vec<KubeVersion> {
    let mut kubernetes_releases: Vec<KubeVersion> = spec
        .upgrades
        .iter()
        .flat_map(|u| u.kubernetes_releases.iter().enumerate())
        .filter_map(|(i, r)| version(src, &format!("spec.upgrades.kubernetesReleases[{i}]"), r, errs))
        .collect();
    kubernetes_releases.sort_unstable();
    kubernetes_releases.dedup();
    kubernetes_releases
}

/// What the platform file does that works but should change: installing a provider its
/// maintainers deprecated.
pub fn warnings(loaded: &Loaded<PlatformFile>, p: &Platform) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    out.extend(super::management_clusters::warnings(
        &loaded.source,
        &loaded.value.spec,
        p,
    ));
    if let Some(tag) = &loaded.value.spec.kamaji.image.tag {
        out.extend(super::kamaji_version::check(
            &loaded.source,
            tag,
            p.max_kubernetes,
            super::TagOrigin::Written,
        ));
    }
    // Both providers' MachineTemplate CRDs claim the short name `pmt` in one group
    // (cluster-api-provider-proxmox v0.9.0 and cluster-api-provider-packet v0.9.0,
    // config/crd/bases/infrastructure.cluster.x-k8s.io_*machinetemplates.yaml): the API server
    // accepts the names of the first and never establishes the second (seen on kube-apiserver
    // v1.34 in the end-to-end tests), so its machines cannot be created.
    if p.infrastructure_providers.contains_key(&Provider::Proxmox)
        && p.infrastructure_providers.contains_key(&Provider::Packet)
    {
        out.push(
            loaded
                .source
                .warning(
                    "spec.clusterApi.infrastructureProviders",
                    "the proxmox and packet providers' MachineTemplate CRDs both claim the short name `pmt`: the API server establishes only the one installed first",
                )
                .with_hint("run them on separate management clusters (`kaas-gitops validate`, which reads both releases' CRDs, refuses the pair)"),
        );
    }
    out.extend(super::feature_gates::warnings(&loaded.source, &loaded.value.spec, p));
    if p.infrastructure_providers.contains_key(&Provider::Packet) {
        out.push(
            loaded
                .source
                .warning(
                    "spec.clusterApi.infrastructureProviders.packet",
                    "the `packet` provider (Equinix Metal) is deprecated upstream and no longer maintained",
                )
                .with_hint("Equinix Metal sunsets in June 2026; plan to move its tenants to another provider"),
        );
    }
    out
}

/// The management cluster's own releases, defaults applied: the newest Cluster API release of
/// the contract (v1.14 speaks v1beta2; v1.10 is the last that speaks only v1beta1, see
/// `validate::contracts`), and the Flux v2.9 line (flux2 v2.9.x ships helm-controller v1.6.x,
/// kustomize-controller v1.9.x and source-controller v1.9.x).
fn management_releases(
    src: &Source,
    spec: &raw::PlatformSpec,
    contract: Contract,
    errs: &mut Vec<Diagnostic>,
) -> ManagementReleases {
    let mut pick = |field: &str, set: Option<&String>, default: &str| {
        let v = set.cloned().unwrap_or_else(|| default.to_string());
        release(src, field, &v, errs);
        v
    };
    let capi_default = match contract {
        Contract::V1beta2 => "v1.14.0",
        Contract::V1beta1 => "v1.10.4",
    };
    let flux = spec.flux.controllers.clone().unwrap_or_default();
    let artifact = spec
        .flux
        .delivery
        .as_ref()
        .is_some_and(|d| d.mode == raw::DeliveryMode::Artifact);
    ManagementReleases {
        cluster_api: pick(
            "spec.clusterApi.coreVersion",
            spec.cluster_api.core_version.as_ref(),
            capi_default,
        ),
        operator: pick(
            "spec.clusterApi.operatorVersion",
            spec.cluster_api.operator_version.as_ref(),
            "v0.28.0",
        ),
        flux_source: pick("spec.flux.controllers.source", flux.source.as_ref(), "v1.9.1"),
        flux_kustomize: pick("spec.flux.controllers.kustomize", flux.kustomize.as_ref(), "v1.9.4"),
        flux_helm: pick("spec.flux.controllers.helm", flux.helm.as_ref(), "v1.6.3"),
        // source-watcher v2.2.4: the newest release whose API module this project's tests
        // generate the ArtifactGenerator CRD from (tests/upstream/artifactgenerator.sh).
        flux_source_watcher: artifact.then(|| {
            pick(
                "spec.flux.controllers.sourceWatcher",
                flux.source_watcher.as_ref(),
                "v2.2.4",
            )
        }),
    }
}

/// Each chart repository becomes one `HelmRepository` named after its URL. Two URLs with one name
/// would render one object over the other, and a release would install from the wrong
/// repository. See: issues/9 (found by the pipeline property test).
fn repository_names(src: &Source, charts: &[(&str, &Chart)], errs: &mut Vec<Diagnostic>) {
    let mut seen: BTreeMap<String, (&str, &str)> = BTreeMap::new();
    for &(field, chart) in charts {
        let name = repository_name(chart);
        let at = format!("{field}.repository");
        if name.is_empty() {
            errs.push(
                src.error(
                    &at,
                    format!("`{}` gives no name for its HelmRepository", chart.repository),
                )
                .with_hint(
                    "the name comes from the host and the last path segment; write a URL with letters or digits there",
                ),
            );
            continue;
        }
        match seen.get(&name) {
            Some((other_field, other)) if *other != chart.repository => errs.push(
                src.error(
                    &at,
                    format!(
                        "`{}` and `{other}` (`{other_field}.repository`) would both be the HelmRepository `{name}`",
                        chart.repository
                    ),
                )
                .with_hint(
                    "use one URL for both, or URLs that differ in the host's first label or the last path segment",
                ),
            ),
            Some(_) => {}
            None => {
                seen.insert(name, (field, &chart.repository));
            }
        }
    }
}

/// A Go duration as Flux accepts it: `10m`, `1h30m`, `5s`.
/// `spec.flux.delivery`, with its defaults. `oci` needs `oci.repository`: a registry host and
/// a path, no scheme, tag or digest (the tenant name and tag are added to it).
fn delivery(src: &Source, flux: &raw::Flux, errs: &mut Vec<Diagnostic>) -> Delivery {
    let artifact = flux
        .delivery
        .as_ref()
        .is_some_and(|d| d.mode == raw::DeliveryMode::Artifact);
    if !artifact && flux.controllers.as_ref().is_some_and(|c| c.source_watcher.is_some()) {
        errs.push(
            src.error(
                "spec.flux.controllers.sourceWatcher",
                "a source-watcher release without `delivery.mode: artifact`",
            )
            .with_hint("only `mode: artifact` renders source-watcher's objects: remove the field, or set that mode"),
        );
    }
    let Some(raw) = flux.delivery.as_ref() else {
        return Delivery::Git;
    };
    if raw.artifact.is_some() && raw.mode != raw::DeliveryMode::Artifact {
        errs.push(
            src.error(
                "spec.flux.delivery.artifact",
                "`artifact` settings without `mode: artifact`",
            )
            .with_hint("set `mode: artifact` to deliver tenants as ExternalArtifacts, or remove `artifact`"),
        );
    }
    if raw.mode == raw::DeliveryMode::Artifact {
        return artifact_delivery(src, flux, raw, errs);
    }
    match (raw.mode, &raw.oci) {
        (raw::DeliveryMode::Git, None) => Delivery::Git,
        (raw::DeliveryMode::Git, Some(_)) => {
            errs.push(
                src.error("spec.flux.delivery.oci", "`oci` settings with `mode: git`")
                    .with_hint("set `mode: oci` to deliver tenants as OCI artifacts, or remove `oci`"),
            );
            Delivery::Git
        }
        (raw::DeliveryMode::Oci, None) => {
            errs.push(
                src.error("spec.flux.delivery", "`mode: oci` needs `oci.repository`")
                    .with_hint(
                        "add `oci: {repository: <registry host>/<path>}`, e.g. `registry.example.com/kaas/tenants`",
                    ),
            );
            Delivery::Git
        }
        (raw::DeliveryMode::Oci, Some(oci)) => {
            let repository = oci.repository.trim_end_matches('/').to_string();
            if !is_oci_repository(&repository) {
                errs.push(
                    src.error(
                        "spec.flux.delivery.oci.repository",
                        format!("`{}` is not `<registry host>/<path>`", oci.repository),
                    )
                    .with_hint("write a registry host (with an optional port) and a lowercase path, without `oci://`, a tag or a digest: `registry.example.com/kaas/tenants`"),
                );
            }
            let tag = oci.tag.clone().unwrap_or_else(|| "latest".into());
            // The OCI distribution spec's tag grammar: [A-Za-z0-9_][A-Za-z0-9._-]{0,127}.
            let tag_ok = tag.len() <= 128
                && tag
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                && tag.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
            if !tag_ok {
                errs.push(
                    src.error("spec.flux.delivery.oci.tag", format!("`{tag}` is not an OCI tag"))
                        .with_hint("letters, digits, `_`, `.` and `-`, at most 128, not starting with `.` or `-`"),
                );
            }
            let mut duration = |field: &str, value: &Option<String>, default: &str| {
                let v = value.clone().unwrap_or_else(|| default.into());
                if !is_duration(&v) {
                    errs.push(
                        src.error(field, format!("`{v}` is not a duration"))
                            .with_hint("write a Go duration such as `1m`, `1h` or `30s`"),
                    );
                }
                v
            };
            // 5m, not 1m: at 1,000 tenants a 1m check kept source-controller's queue full (145 CPU-s
            // per 11 minutes on the test bed, and a change waited a minute behind the checks;
            // BENCHMARKS.md). `wait --reconcile` after `publish` asks the changed tenants' sources
            // at once, so the interval is only the fallback for a change nobody asked about.
            let interval = duration("spec.flux.delivery.oci.interval", &oci.interval, "5m");
            let tenant_interval = duration("spec.flux.delivery.oci.tenantInterval", &oci.tenant_interval, "1h");
            if let Some(name) = &oci.secret_ref
                && !is_dns1123_subdomain(name)
            {
                errs.push(
                    src.error(
                        "spec.flux.delivery.oci.secretRef",
                        format!("`{name}` is not a Secret name"),
                    )
                    .with_hint("a DNS-1123 subdomain: lowercase letters, digits, `-` and `.`"),
                );
            }
            Delivery::Oci(OciDelivery {
                repository,
                tag,
                insecure: oci.insecure.unwrap_or(false),
                secret_ref: oci.secret_ref.clone(),
                interval,
                tenant_interval,
            })
        }
        (raw::DeliveryMode::Artifact, _) => unreachable!("handled above"),
    }
}

/// `mode: artifact`: source-watcher's ArtifactGenerator cuts one ExternalArtifact per tenant out
/// of the platform's source. The ExternalArtifact API came with source-controller v1.7.0, and
/// kustomize-controller reads `sourceRef.kind: ExternalArtifact` from v1.7.0 on (Flux v2.7.0;
/// fluxcd/source-controller `CHANGELOG.md` 1.7.0, fluxcd/kustomize-controller `CHANGELOG.md`
/// 1.7.0): older controllers would never apply a tenant.
fn artifact_delivery(src: &Source, flux: &raw::Flux, raw: &raw::Delivery, errs: &mut Vec<Diagnostic>) -> Delivery {
    if raw.oci.is_some() {
        errs.push(
            src.error("spec.flux.delivery.oci", "`oci` settings with `mode: artifact`")
                .with_hint("`mode: artifact` needs no registry: remove `oci`, or set `mode: oci`"),
        );
    }
    // `spec.sources[].name`: `^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`, at most 253 (source-watcher api/v2
    // v2.2.4 `v1beta1/artifactgenerator_types.go`, `SourceReference.Name`): no dots, unlike
    // other object names.
    let name = &flux.source_ref.name;
    let name_ok = name.len() <= 253
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !name_ok {
        errs.push(
            src.error(
                "spec.flux.sourceRef.name",
                format!("`{name}` cannot be an ArtifactGenerator source (`spec.flux.delivery.mode: artifact`)"),
            )
            .with_hint("source-watcher takes source names of lowercase letters, digits and `-` only (no `.`): rename the source, or use `mode: git` or `mode: oci`"),
        );
    }
    let controllers = flux.controllers.clone().unwrap_or_default();
    for (field, version) in [
        ("spec.flux.controllers.source", controllers.source.as_ref()),
        ("spec.flux.controllers.kustomize", controllers.kustomize.as_ref()),
    ] {
        let Some(v) = version.and_then(|v| KubeVersion::parse(v).map(|p| (v, p))) else {
            continue;
        };
        if (v.1.major, v.1.minor) < (1, 7) {
            errs.push(
                src.error(field, format!("`{}` does not serve ExternalArtifact, which `spec.flux.delivery.mode: artifact` needs", v.0))
                    .with_hint("the ExternalArtifact API and `sourceRef.kind: ExternalArtifact` need v1.7.0 or later (Flux v2.7); raise the release, or use `mode: git` or `mode: oci`"),
            );
        }
    }
    let settings = raw
        .artifact
        .clone()
        .unwrap_or(raw::ArtifactDelivery { tenant_interval: None });
    let tenant_interval = settings.tenant_interval.unwrap_or_else(|| "1h".into());
    if !is_duration(&tenant_interval) {
        errs.push(
            src.error(
                "spec.flux.delivery.artifact.tenantInterval",
                format!("`{tenant_interval}` is not a duration"),
            )
            .with_hint("write a Go duration such as `1m`, `1h` or `30s`"),
        );
    }
    Delivery::Artifact(ArtifactDelivery { tenant_interval })
}

/// `host[:port]/path`: a host with a dot, a port or `localhost`, then lowercase path components
/// (the distribution spec's `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`, checked loosely).
fn is_oci_repository(s: &str) -> bool {
    let Some((host, path)) = s.split_once('/') else {
        return false;
    };
    let host_ok = !host.is_empty()
        && (host.contains('.') || host.contains(':') || host == "localhost")
        && host.chars().all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c));
    let path_ok = !path.is_empty()
        && path.split('/').all(|c| {
            !c.is_empty()
                && c.chars()
                    .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || "._-".contains(ch))
                && c.starts_with(|ch: char| ch.is_ascii_alphanumeric())
                && c.ends_with(|ch: char| ch.is_ascii_alphanumeric())
        });
    host_ok && path_ok && !s.contains('@')
}

fn is_duration(s: &str) -> bool {
    let mut rest = s;
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if digits == 0 {
            return false;
        }
        rest = &rest[digits..];
        let unit = ["ms", "s", "m", "h"].into_iter().find(|u| rest.starts_with(u));
        match unit {
            Some(u) => rest = &rest[u.len()..],
            None => return false,
        }
    }
    true
}
