//! One `tenants/<name>.yaml` -> `model::Tenant`, collecting every problem of the file.
//! Rules that need the other tenants (uniqueness, VIPs) are in `fleet`.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use ipnet::IpNet;

use crate::diagnostics::Diagnostic;
use crate::model::build::backup;
use crate::model::build::fields::storage_size;
use crate::model::build::fields::{header, labels, version};
use crate::model::build::names::{is_dns1035, is_dns1123_label, label_key_problem};
use crate::model::build::pool_version::{pool_version, workers_version};
use crate::model::build::{providers, removed_flags, topology};
use crate::model::datastore_names::{self, DataStoreNames};
use crate::model::datastores::Driver;
use crate::model::exposure::Exposure;
use crate::model::{
    AddressType, CgroupDriver, ClusterClass, Component, DataStore, Infrastructure, KubeVersion, Platform, Pool,
    PoolSize, ServiceType, Tenant, TenantTopology,
};
use crate::spec::load::Loaded;
use crate::spec::raw::{self, TenantFile};
use crate::spec::source::Source;

/// The longest tenant name: room for `-autoscaler` within Helm's 53-character release names.
pub const MAX_NAME: usize = 40;
/// `<tenant>-<pool>` is a MachineDeployment name; machines add `-xxxxx-yyyyy` and must stay
/// within a 63-character hostname.
const MAX_POOL_OBJECT: usize = 51;

/// Builds one tenant. `file_stem` is the file name without `.yaml`; `stems` are those of every
/// tenant file (for hints that must not suggest a name another file has).
pub fn tenant(
    loaded: &Loaded<TenantFile>,
    file_stem: &str,
    stems: &BTreeSet<&str>,
    platform: &Platform,
) -> Result<Tenant, Vec<Diagnostic>> {
    let src = &loaded.source;
    let file = &loaded.value;
    let spec = &file.spec;
    let mut errs = Vec::new();
    header(src, &file.api_version, &file.kind, "Tenant", &mut errs);

    let name = file.metadata.name.clone();
    name_rules(src, &name, file_stem, stems, platform, &mut errs);
    labels(src, "metadata.labels", &file.metadata.labels, &mut errs);

    let version = version(src, "spec.kubernetes.version", &spec.kubernetes.version, &mut errs);
    if let Some(v) = version
        && (v < platform.min_kubernetes || v > platform.max_kubernetes)
    {
        errs.push(
            src.error(
                "spec.kubernetes.version",
                format!("Kubernetes {v} is outside the platform's supported range"),
            )
            .with_hint(format!(
                "kaas.yaml supports {} to {}",
                platform.min_kubernetes, platform.max_kubernetes
            )),
        );
    }

    let maintenance_windows =
        crate::model::build::window::windows(src, "spec.maintenanceWindows", &spec.maintenance_windows, &mut errs);

    let cp = &spec.control_plane;
    let cp_replicas = cp.replicas.unwrap_or(2);
    if cp_replicas == 0 {
        errs.push(
            src.error("spec.controlPlane.replicas", "a control plane needs at least 1 replica")
                .with_hint("use 2 or more for availability"),
        );
    }
    let (mut datastore, mut kept_etcd) = datastore(src, cp.data_store.as_ref(), platform, &mut errs);
    let datastore_overrides = match cp.data_store.as_ref().and_then(|d| d.overrides.as_deref()) {
        Some(given) => super::datastores::overrides(
            src,
            "spec.controlPlane.dataStore.overrides",
            given,
            &platform.data_stores,
            &mut errs,
        ),
        // A ClusterClass's KamajiControlPlaneTemplate is shared and has no variable for them yet.
        None if spec.topology.is_some() => Vec::new(),
        // The fleet's apply to the tenants on its default DataStore (checked with kaas.yaml).
        None if matches!(&datastore, Some(DataStore::Shared(n)) if Some(n) == platform.tenant_datastore_default.as_ref()) => {
            platform.datastore_overrides.clone()
        }
        None => Vec::new(),
    };
    if cp
        .data_store
        .as_ref()
        .is_some_and(|d| d.overrides.as_ref().is_some_and(|o| !o.is_empty()))
    {
        let main = match &datastore {
            Some(DataStore::Shared(n)) => platform.data_stores.get(n),
            _ => None,
        };
        if let Some(why) = super::datastores::overrides_problem(main, &datastore_overrides, &platform.data_stores) {
            errs.push(
                src.error("spec.controlPlane.dataStore.overrides", why)
                    .with_hint(super::datastores::OVERRIDES_HINT),
            );
        }
    }
    if spec.topology.is_some() && !datastore_overrides.is_empty() {
        errs.push(
            src.error("spec.controlPlane.dataStore.overrides", "`overrides` are not rendered for a tenant built from a ClusterClass yet")
                .with_hint("the class's shared KamajiControlPlaneTemplate carries no per-tenant overrides: leave them out, or describe the tenant with `infrastructure` and `workers`"),
        );
    }
    let own_etcd = match (&mut datastore, &mut kept_etcd) {
        (Some(d @ DataStore::Dedicated { .. }), _) => Some(d),
        (_, kept) => kept.as_mut(),
    };
    if let Some(DataStore::Dedicated { backup, .. }) = own_etcd {
        let spec = cp
            .data_store
            .as_ref()
            .and_then(|d| d.dedicated.as_ref())
            .and_then(|d| d.backup.as_ref());
        *backup = backup::tenant(src, spec, platform, &mut errs);
    }

    let endpoint = cp.endpoint.clone().unwrap_or_default();
    let vip = endpoint.host.as_ref().and_then(|h| match h.parse::<IpAddr>() {
        Ok(ip) => Some(ip),
        Err(_) => {
            errs.push(
                src.error("spec.controlPlane.endpoint.host", format!("`{h}` is not an IP address"))
                    .with_hint(
                        "write the VIP as an IPv4 or IPv6 address, or leave it out to get one from the platform's pool",
                    ),
            );
            None
        }
    });
    let exposure = super::exposure::tenant(src, &name, cp, &platform.exposures, &mut errs);
    let port = endpoint.port.or(exposure.port).unwrap_or(6443);
    if port == 0 {
        errs.push(
            src.error("spec.controlPlane.endpoint.port", "port 0 is not a port")
                .with_hint("use 1-65535; the default is 6443"),
        );
    }
    let service = cp.service.clone().unwrap_or_default();
    labels_like(
        src,
        "spec.controlPlane.service.annotations",
        &service.annotations,
        &mut errs,
    );
    let addons = cp.addons.clone().unwrap_or_default();
    let kubelet = cp.kubelet.clone().unwrap_or_default();

    let pods = cidrs(
        src,
        "spec.network.pods",
        spec.network.pods.as_ref(),
        "192.168.0.0/16",
        &mut errs,
    );
    let services = cidrs(
        src,
        "spec.network.services",
        spec.network.services.as_ref(),
        "10.96.0.0/12",
        &mut errs,
    );
    service_ranges(src, &services, &mut errs);
    for (i, p) in pods.iter().enumerate() {
        for s in &services {
            if overlaps(p, s) {
                errs.push(
                    src.error(&format!("spec.network.pods[{i}]"), format!("pod CIDR `{p}` overlaps service CIDR `{s}`"))
                        .with_hint("choose pod and service ranges that do not overlap, e.g. pods 192.168.0.0/16 and services 10.96.0.0/12"),
                );
            }
        }
    }

    let (infrastructure, class) = mode(src, spec, platform, &mut errs);
    if class.is_some()
        && let Some(hostname) = exposure.exposure.hostname()
    {
        errs.push(
            src.error(
                super::exposure::chosen_at(cp, "spec.topology"),
                format!("a tenant built from a ClusterClass cannot be reached at `{hostname}` yet: the class's control plane template has no hostname variable"),
            )
            .with_hint("write `exposure: service` in `spec.controlPlane` of this tenant, or describe it with `infrastructure` and `workers`"),
        );
    }
    // CAPMOX reads the Proxmox API's URL and token from the cluster's `credentialsRef`, or
    // else from its manager's environment, which cluster-api-operator fills from the provider's
    // config Secret (cluster-api-provider-proxmox v0.9.0, `cmd/main.go`: PROXMOX_URL,
    // PROXMOX_TOKEN, PROXMOX_SECRET); with neither, it cannot create a machine.
    if class.is_none()
        && let Some(Infrastructure::Proxmox(x)) = &infrastructure
        && x.credentials_secret.is_none()
        && !platform
            .provider_config_secrets
            .contains_key(&crate::model::Provider::Proxmox)
    {
        errs.push(
            src.key_error("spec.infrastructure.proxmox", "no Proxmox credentials: neither the tenant nor the platform names a Secret")
                .with_hint("add `credentialsSecret: <secret>` (keys `url`, `token`, `secret`, in the tenant's namespace), or give the provider one for every tenant in kaas.yaml `spec.clusterApi.providerConfigSecrets: {proxmox: <secret>}` (keys `PROXMOX_URL`, `PROXMOX_TOKEN`, `PROXMOX_SECRET`, in namespace `capmox-system`)"),
        );
    }
    let pools = pools(
        src,
        &name,
        spec,
        class.as_ref().map(|c| c.0),
        (version, platform),
        &mut errs,
    );

    let oidc_issuers = crate::model::build::access::tenant(src, spec, &platform.oidc_issuers, version, &mut errs);
    for (i, k) in spec.ssh_authorized_keys.iter().enumerate() {
        let kind = k.split_whitespace().next().unwrap_or("");
        if !(kind.starts_with("ssh-") || kind.starts_with("ecdsa-") || kind.starts_with("sk-"))
            || k.split_whitespace().count() < 2
        {
            errs.push(
                src.error(&format!("spec.sshAuthorizedKeys[{i}]"), "not an SSH public key")
                    .with_hint("paste one line of an `.pub` file: `ssh-ed25519 AAAA... comment`"),
            );
        }
    }

    let api_server = component(cp.api_server.as_ref());
    let controller_manager = component(cp.controller_manager.as_ref());
    let scheduler = component(cp.scheduler.as_ref());
    if let Some(v) = version {
        removed_flags::check(src, v, "apiServer", &api_server, &mut errs);
        removed_flags::check(src, v, "controllerManager", &controller_manager, &mut errs);
        removed_flags::check(src, v, "scheduler", &scheduler, &mut errs);
    }

    let (tenant_addons, cni_replaces_kube_proxy) = crate::model::build::addons::tenant(
        src,
        spec,
        infrastructure.as_ref().map(|i| i.provider()),
        platform,
        &mut errs,
    );

    if let Some(Infrastructure::Vsphere(v)) = &infrastructure
        && v.cloud_provider_secret.is_none()
        && let Some(cpi) = tenant_addons.iter().find(|a| {
            platform
                .addons
                .get(&a.name)
                .is_some_and(|c| c.wiring == Some(crate::model::AddonWiring::VsphereCpi))
        })
    {
        errs.push(
            src.error(
                "spec.infrastructure.vsphere.identity",
                format!("the `{}` add-on needs vCenter credentials in the tenant namespace, and CAPV uses the VSphereClusterIdentity `{}`", cpi.name, match &v.identity { crate::model::VsphereIdentity::ClusterIdentity(i) => i.as_str(), crate::model::VsphereIdentity::Secret(s) => s.as_str() }),
            )
            .with_hint("add `cloudProviderSecret: <Secret with username and password in the tenant namespace>`: the cloud provider runs in the tenant cluster and cannot use CAPV's identity"),
        );
    }
    if let Exposure::Ingress { hostname } = &exposure.exposure
        && addons.konnectivity.unwrap_or(true)
    {
        // Kamaji points the Konnectivity agents at the Gateway hostname, else at the Service's
        // address (26.8.2-edge `internal/resources/konnectivity/agent.go`, `mutate`): behind an
        // Ingress that is a ClusterIP no node reaches.
        errs.push(
            src.error(
                super::exposure::chosen_at(cp, "spec.controlPlane"),
                format!("Konnectivity cannot reach tenant `{name}` behind an Ingress: Kamaji gives its agents the Service's cluster-internal address, not `{hostname}`"),
            )
            .with_hint("turn it off (`addons: {konnectivity: false}` in `spec.controlPlane`; the API server then reaches kubelets directly), or use `exposure: gateway`, whose Konnectivity route Kamaji makes"),
        );
    }
    let (placement, placement_move_acknowledged) = super::management_clusters::tenant(src, spec, platform, &mut errs);
    if !errs.is_empty() {
        return Err(errs);
    }
    // For now a new tenant's; `kaas.lock` and what is deployed decide (`build::datastore_names`).
    let datastore_names = DataStoreNames::Named(datastore_names::derived(&name));
    Ok(Tenant {
        name,
        source_path: src.path.clone(),
        labels: file.metadata.labels.clone(),
        version: version.expect("checked above"),
        maintenance_windows,
        cp_replicas,
        datastore: datastore.expect("checked above"),
        datastore_names,
        kept_etcd,
        datastore_overrides,
        decommissioned: spec.decommissioned,
        placement,
        placement_move_acknowledged,
        management_cluster: None,
        vip,
        vip_allocated: false,
        port,
        // Behind a Gateway or an Ingress the Service only backs the route, unless it keeps
        // serving a VIP while the tenant moves (docs/exposure.md).
        service_type: service.kind.unwrap_or(
            if matches!(exposure.exposure, Exposure::Service { .. }) || vip.is_some() {
                ServiceType::LoadBalancer
            } else {
                ServiceType::ClusterIP
            },
        ),
        service_annotations: service.annotations,
        exposure: exposure.exposure,
        endpoint_move_acknowledged: exposure.move_acknowledged,
        core_dns: addons.core_dns.unwrap_or(true),
        // A CNI that replaces kube-proxy turns Kamaji's off (a tenant forcing it on is refused).
        kube_proxy: addons.kube_proxy.unwrap_or(true) && !cni_replaces_kube_proxy,
        cni_migration_acknowledged: spec
            .addons
            .as_ref()
            .is_some_and(|a| a.acknowledge.contains(&crate::spec::raw::Acknowledgement::CniMigration)),
        konnectivity: addons.konnectivity.unwrap_or(true),
        api_server,
        controller_manager,
        scheduler,
        cgroup_driver: kubelet.cgroup_driver.unwrap_or(CgroupDriver::Systemd),
        preferred_address_types: kubelet
            .preferred_address_types
            .unwrap_or_else(|| vec![AddressType::InternalIp, AddressType::ExternalIp, AddressType::Hostname]),
        pods,
        services,
        infrastructure: infrastructure.expect("checked above"),
        topology: class.map(|(c, variables)| TenantTopology {
            class: c.name.clone(),
            variables,
        }),
        pools,
        admin_groups: spec.access.admin_groups.clone(),
        view_groups: spec.access.view_groups.clone(),
        oidc_issuers,
        ssh_authorized_keys: spec.ssh_authorized_keys.clone(),
        addons: tenant_addons,
    })
}

fn name_rules(
    src: &Source,
    name: &str,
    stem: &str,
    stems: &BTreeSet<&str>,
    platform: &Platform,
    errs: &mut Vec<Diagnostic>,
) {
    let field = "metadata.name";
    if !is_dns1035(name) {
        errs.push(
            src.error(field, format!("`{name}` is not a DNS-1035 label"))
                .with_hint("use lower-case letters, digits and `-`, starting with a letter and not ending with `-` (Kamaji validates TenantControlPlane names this way)"),
        );
    }
    if name.len() > MAX_NAME {
        errs.push(
            src.error(
                field,
                format!("`{name}` is {} characters long; the limit is {MAX_NAME}", name.len()),
            )
            .with_hint("derived names such as `<name>-autoscaler` must stay within Helm's 53-character release names"),
        );
    }
    // An invalid name has its own error above; a file name to match it would be invalid too.
    if name != stem && is_dns1035(name) {
        errs.push(
            src.error(
                field,
                format!("`metadata.name` is `{name}` but the file is `{stem}.yaml`"),
            )
            .with_hint(if stems.contains(name) && is_dns1035(stem) {
                // The file the name asks for is another tenant's: this is a duplicate.
                format!(
                    "`tenants/{name}.yaml` is tenant `{name}` already; set `name: {stem}` here if this is another tenant, or delete one of the two files"
                )
            } else if stems.contains(name) {
                format!(
                    "`tenants/{name}.yaml` is tenant `{name}` already; delete one of the two files, or give this tenant its own name and name the file after it"
                )
            } else if is_dns1035(stem) {
                format!("rename the file to `tenants/{name}.yaml`, or set `name: {stem}`")
            } else {
                format!("rename the file to `tenants/{name}.yaml`: a tenant's file is named after it")
            }),
        );
    }
    let mut reserved: BTreeSet<String> = ["platform", "default", "flux-system", "kamaji-system", "cert-manager"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    reserved.insert(platform.kamaji_namespace.clone());
    reserved.insert(platform.source_namespace.clone());
    for p in platform.infrastructure_providers.keys() {
        reserved.insert(Platform::provider_namespace(*p).to_string());
    }
    for a in platform.addon_providers.keys() {
        reserved.insert(Platform::addon_namespace(a));
    }
    if let Some(t) = &platform.topology {
        reserved.insert(t.namespace.clone());
    }
    if reserved.contains(name) || name.starts_with("kube-") || name.starts_with("capi-") {
        errs.push(
            src.error(field, format!("`{name}` is reserved"))
                .with_hint("a tenant's name is its namespace; `platform`, `default`, `kube-*`, `capi-*` and the platform's namespaces are taken"),
        );
    }
}

fn labels_like(src: &Source, field: &str, annotations: &BTreeMap<String, String>, errs: &mut Vec<Diagnostic>) {
    for k in annotations.keys() {
        if let Some(why) = label_key_problem(k) {
            errs.push(
                src.error(&format!("{field}.{k}"), format!("invalid annotation key `{k}`"))
                    .with_hint(why),
            );
        }
    }
}

fn datastore(
    src: &Source,
    ds: Option<&raw::DataStore>,
    platform: &Platform,
    errs: &mut Vec<Diagnostic>,
) -> (Option<DataStore>, Option<DataStore>) {
    let field = "spec.controlPlane.dataStore";
    let dedicated = |d: &raw::Dedicated, errs: &mut Vec<Diagnostic>| {
        let replicas = d.replicas.unwrap_or(3);
        if replicas == 0 || replicas.is_multiple_of(2) {
            errs.push(
                src.error(
                    &format!("{field}.dedicated.replicas"),
                    format!("{replicas} etcd members cannot keep a quorum well"),
                )
                .with_hint("use 1 or an odd number (3, 5)"),
            );
        }
        let storage = storage_size(src, &format!("{field}.dedicated.storage"), d.storage.as_ref(), errs);
        DataStore::Dedicated {
            replicas,
            storage,
            storage_class: d.storage_class.clone(),
            // Set by the caller, which validates the backup settings against the platform's.
            backup: None,
        }
    };
    let shared = |name: &String, errs: &mut Vec<Diagnostic>| {
        if platform.data_stores.contains_key(name) {
            Some(DataStore::Shared(name.clone()))
        } else {
            let known: Vec<_> = platform.data_stores.keys().map(|s| format!("`{s}`")).collect();
            errs.push(
                src.error(
                    &format!("{field}.shared"),
                    format!("the platform declares no DataStore `{name}`"),
                )
                .with_hint(if known.is_empty() {
                    "kaas.yaml `spec.dataStores` is empty; add it there or use `dedicated: {}`".to_string()
                } else {
                    format!("declared in kaas.yaml `spec.dataStores`: {}", known.join(", "))
                }),
            );
            None
        }
    };
    match ds.map(|d| (d.dedicated.as_ref(), d.shared.as_ref())) {
        // The fleet's default: a shared DataStore (checked with kaas.yaml), else an own etcd.
        None | Some((None, None)) => match &platform.tenant_datastore_default {
            Some(name) => (Some(DataStore::Shared(name.clone())), None),
            None => (Some(dedicated(&raw::Dedicated::default(), errs)), None),
        },
        Some((Some(d), None)) => (Some(dedicated(d, errs)), None),
        Some((None, Some(name))) => (shared(name, errs), None),
        // Both: the shared one in use, the dedicated etcd kept (a migration's two sides).
        Some((Some(d), Some(name))) => {
            let kept = dedicated(d, errs);
            if let Some(driver) = platform.datastore_driver(name).filter(|d| *d != Driver::Etcd) {
                errs.push(
                    src.error(
                        &format!("{field}.shared"),
                        format!("`{name}` is a {} DataStore: Kamaji migrates only between DataStores of one driver, and the dedicated one is etcd", driver.as_str()),
                    )
                    .with_hint(DRIVER_MOVE_HINT),
                );
            }
            (shared(name, errs), Some(kept))
        }
    }
}

/// How a tenant moves to a DataStore of another driver: not by a migration, which Kamaji runs only
/// between DataStores of one driver (26.8.2-edge `api/v1alpha1/tenantcontrolplane_types.go`
/// `DataStore`; its guide "datastore migration").
pub(crate) const DRIVER_MOVE_HINT: &str = "create a new tenant on the other DataStore and move the workloads to it (docs/datastores.md, \"Changing driver\"); or pick a DataStore of the same driver";

fn cidrs(
    src: &Source,
    field: &str,
    given: Option<&Vec<String>>,
    default: &str,
    errs: &mut Vec<Diagnostic>,
) -> Vec<String> {
    let list = given.cloned().unwrap_or_else(|| vec![default.to_string()]);
    if list.is_empty() {
        errs.push(
            src.error(field, "empty CIDR list")
                .with_hint(format!("leave the field out for the default `{default}`")),
        );
    }
    let mut parsed: Vec<IpNet> = Vec::new();
    for (i, c) in list.iter().enumerate() {
        let f = format!("{field}[{i}]");
        match c.parse::<IpNet>() {
            Ok(n) if n.trunc() == n => {
                if let Some(o) = parsed.iter().find(|p| overlaps(&p.to_string(), c)) {
                    errs.push(
                        src.error(&f, format!("`{c}` overlaps `{o}` in the same list"))
                            .with_hint("list disjoint ranges"),
                    );
                }
                parsed.push(n);
            }
            Ok(n) => errs.push(
                src.error(&f, format!("`{c}` has host bits set"))
                    .with_hint(format!("did you mean `{}`?", n.trunc())),
            ),
            Err(_) => errs.push(
                src.error(&f, format!("`{c}` is not a CIDR"))
                    .with_hint("write an address and prefix length, e.g. `10.244.0.0/16`"),
            ),
        }
    }
    list
}

/// What the service CIDRs must be beyond being CIDRs: each big enough to hold CoreDNS's address
/// (the 10th, [`crate::model::dns`]), and at most two, of different families, as kube-apiserver
/// takes `--service-cluster-ip-range` (kubernetes v1.36.3
/// `cmd/kube-apiserver/app/options/validation.go`, "must not contain more than two entries",
/// "must be of different IP family").
fn service_ranges(src: &Source, services: &[String], errs: &mut Vec<Diagnostic>) {
    use crate::model::dns::{DNS_INDEX, MIN_SERVICE_ADDRESSES};
    let field = "spec.network.services";
    let parsed: Vec<(usize, IpNet)> = services
        .iter()
        .enumerate()
        .filter_map(|(i, c)| Some((i, c.parse::<IpNet>().ok()?)))
        .collect();
    for (i, net) in &parsed {
        let host_bits = u32::from(net.max_prefix_len() - net.prefix_len());
        if host_bits < MIN_SERVICE_ADDRESSES.ilog2() {
            let addresses = 1u32 << host_bits;
            let prefix = net.max_prefix_len() - MIN_SERVICE_ADDRESSES.ilog2() as u8;
            errs.push(
                src.error(
                    &format!("{field}[{i}]"),
                    format!(
                        "service CIDR `{net}` has {addresses} addresses: CoreDNS's Service takes the one at index {DNS_INDEX}"
                    ),
                )
                .with_hint(format!(
                    "a service range needs at least {MIN_SERVICE_ADDRESSES} addresses: use a /{prefix} or larger (the default is `10.96.0.0/12`)"
                )),
            );
        }
    }
    if let Some((i, _)) = parsed.get(2) {
        errs.push(
            src.error(&format!("{field}[{i}]"), "more than two service CIDRs")
                .with_hint("kube-apiserver takes one service range, or two of different IP families (dual-stack)"),
        );
    }
    if let [(_, a), (j, b), ..] = parsed.as_slice()
        && matches!((a, b), (IpNet::V4(_), IpNet::V4(_)) | (IpNet::V6(_), IpNet::V6(_)))
    {
        errs.push(
            src.error(
                &format!("{field}[{j}]"),
                format!("`{b}` is of the same IP family as `{a}`"),
            )
            .with_hint("a second service range must be of the other IP family (dual-stack); widen the first instead"),
        );
    }
}

fn overlaps(a: &str, b: &str) -> bool {
    match (a.parse::<IpNet>(), b.parse::<IpNet>()) {
        (Ok(a), Ok(b)) => a.contains(&b.network()) || b.contains(&a.network()),
        _ => false,
    }
}

/// Explicit mode (`spec.infrastructure`) or topology mode (`spec.topology`): the
/// infrastructure, and in topology mode the class and the tenant's variable values.
#[expect(clippy::type_complexity, reason = "a private pair, named at its one use")]
fn mode<'a>(
    src: &Source,
    spec: &raw::TenantSpec,
    platform: &'a Platform,
    errs: &mut Vec<Diagnostic>,
) -> (
    Option<Infrastructure>,
    Option<(&'a ClusterClass, Vec<(String, serde_json::Value)>)>,
) {
    match (&spec.infrastructure, &spec.topology) {
        (Some(infra), None) => (
            providers::infrastructure(
                src,
                "spec.infrastructure",
                infra,
                &platform.infrastructure_providers,
                errs,
            ),
            None,
        ),
        (None, Some(t)) => {
            let class = topology::tenant(src, spec, t, platform.topology.as_ref(), errs);
            (class.as_ref().map(|(c, _)| c.infrastructure.clone()), class)
        }
        (Some(_), Some(_)) => {
            errs.push(
                src.key_error("spec.topology", "`infrastructure` and `topology` are exclusive")
                    .with_hint("describe the machines with `infrastructure` and `workers`, or name a ClusterClass with `topology: {class: ...}`"),
            );
            (None, None)
        }
        (None, None) => {
            errs.push(
                src.error("spec", "a tenant needs `infrastructure` or `topology`")
                    .with_hint("add `infrastructure: {provider: ..., <provider>: {...}}`, or `topology: {class: <a class of kaas.yaml>}`"),
            );
            (None, None)
        }
    }
}

fn pools(
    src: &Source,
    tenant: &str,
    spec: &raw::TenantSpec,
    class: Option<&ClusterClass>,
    (cp, platform): (Option<KubeVersion>, &Platform),
    errs: &mut Vec<Diagnostic>,
) -> Vec<Pool> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let held = workers_version(
        src,
        spec.kubernetes.workers_version.as_deref(),
        cp,
        class.is_some(),
        platform,
        errs,
    );
    for (i, w) in spec.workers.iter().enumerate() {
        let f = format!("spec.workers[{i}]");
        if !is_dns1123_label(&w.name) {
            errs.push(
                src.error(&format!("{f}.name"), format!("`{}` is not a DNS-1123 label", w.name))
                    .with_hint("lower-case letters, digits and `-`, e.g. `md-0`"),
            );
        }
        if !seen.insert(w.name.clone()) {
            errs.push(
                src.error(&format!("{f}.name"), format!("a second pool named `{}`", w.name))
                    .with_hint("pool names are unique in a tenant"),
            );
        }
        let object = format!("{tenant}-{}", w.name);
        if object.len() > MAX_POOL_OBJECT {
            errs.push(
                src.error(
                    &format!("{f}.name"),
                    format!(
                        "`{object}` is {} characters; pool objects allow {MAX_POOL_OBJECT}",
                        object.len()
                    ),
                )
                .with_hint(
                    "machine names append `-xxxxx-yyyyy` and must fit a 63-character hostname: shorten the pool name",
                ),
            );
        }
        let size = match (w.replicas, &w.autoscaling) {
            (Some(_), Some(_)) => {
                errs.push(
                    src.error(
                        &format!("{f}.autoscaling"),
                        "`replicas` and `autoscaling` are exclusive",
                    )
                    .with_hint("keep `replicas` for a fixed size, or `autoscaling: {min, max}` and no `replicas`"),
                );
                PoolSize::Fixed(0)
            }
            (Some(r), None) => PoolSize::Fixed(r),
            (None, None) => PoolSize::Fixed(1),
            (None, Some(a)) => {
                if a.min > a.max {
                    errs.push(
                        src.error(
                            &format!("{f}.autoscaling.min"),
                            format!(
                                "`autoscaling.min` ({}) is greater than `autoscaling.max` ({})",
                                a.min, a.max
                            ),
                        )
                        .with_hint("min must be at most max"),
                    );
                }
                if a.max == 0 {
                    errs.push(
                        src.error(&format!("{f}.autoscaling.max"), "`autoscaling.max` is 0")
                            .with_hint("max must be at least 1"),
                    );
                }
                let sized = class.is_some()
                    || w.machine
                        .as_ref()
                        .is_some_and(|m| m.cpus.is_some() && m.memory_mib.is_some());
                if a.min == 0 && !sized {
                    errs.push(
                        src.error(
                            &format!("{f}.autoscaling.min"),
                            "a pool that scales from zero needs `machine.cpus` and `machine.memoryMiB`",
                        )
                        .with_hint(match spec.infrastructure.as_ref().map(|i| i.provider) {
                            // Metal3MachineTemplate and TinkerbellMachineTemplate report no
                            // `status.capacity` (CAPM3 v1.13.2, CAPT v0.7.0 API types).
                            Some(p @ (raw::Provider::Metal3 | raw::Provider::Tinkerbell)) => format!(
                                "cluster-autoscaler sizes an empty pool from the capacity annotations rendered from them; `{}` machine templates report no capacity: give the size of the pool's hardware",
                                p.as_str()
                            ),
                            _ => "cluster-autoscaler sizes an empty pool from the capacity annotations rendered from them".to_string(),
                        }),
                    );
                }
                PoolSize::Autoscaled { min: a.min, max: a.max }
            }
        };
        labels(src, &format!("{f}.labels"), &w.labels, errs);
        for (j, t) in w.taints.iter().enumerate() {
            if let Some(why) = label_key_problem(&t.key) {
                errs.push(
                    src.error(
                        &format!("{f}.taints[{j}].key"),
                        format!("invalid taint key `{}`", t.key),
                    )
                    .with_hint(why),
                );
            }
        }
        let proxmox = spec.infrastructure.as_ref().and_then(|i| i.proxmox.as_ref());
        if w.proxmox.is_some() && class.is_none() && proxmox.is_none() {
            errs.push(src.error(
                &format!("{f}.proxmox"),
                "a `proxmox` override on a pool of another provider",
            ));
        }
        let m = w.machine.clone().unwrap_or_default();
        let (cpus, memory_mib, disk_gib) = match class {
            Some(c) => (c.cpus, c.memory_mib, c.disk_gib),
            None => (
                m.cpus.unwrap_or(2),
                m.memory_mib.unwrap_or(4096),
                m.disk_gib.unwrap_or(40),
            ),
        };
        let version = pool_version(src, &f, w, cp, class.is_some(), platform, errs).or(held);
        let os = super::node_os::pool(src, &f, w, spec, platform, errs);
        if let Some(fd) = &w.failure_domain
            && (fd.is_empty() || fd.len() > 256 || fd.contains(char::is_whitespace))
        {
            // `failureDomain` of a MachineDeployment: 1-256 characters (cluster-api v1.14.0 CRD).
            errs.push(
                src.error(&format!("{f}.failureDomain"), format!("`{fd}` is not a failure domain name"))
                    .with_hint("the name the provider gives it, e.g. a VSphereDeploymentZone or an availability zone: 1-256 characters, no blanks"),
            );
        }
        out.push(Pool {
            version,
            os,
            failure_domain: w.failure_domain.clone(),
            name: w.name.clone(),
            size,
            cpus,
            memory_mib,
            disk_gib,
            labels: w.labels.clone(),
            taints: w
                .taints
                .iter()
                .map(|t| (t.key.clone(), t.value.clone(), t.effect))
                .collect(),
            proxmox: proxmox.map(|p| providers::pool_machine(p, w.proxmox.as_ref())),
        });
    }
    out
}

fn component(c: Option<&raw::Component>) -> Component {
    let Some(c) = c else {
        return Component::default();
    };
    let map = |m: &BTreeMap<String, raw::Quantity>| m.iter().map(|(k, v)| (k.clone(), v.as_string())).collect();
    Component {
        extra_args: c.extra_args.clone(),
        requests: c.resources.as_ref().map(|r| map(&r.requests)).unwrap_or_default(),
        limits: c.resources.as_ref().map(|r| map(&r.limits)).unwrap_or_default(),
    }
}
