//! `spec.infrastructure` (of a tenant, or of a ClusterClass in `kaas.yaml`) -> the model's
//! `Infrastructure`: the provider must be installed, exactly its block written, and the block's
//! fields valid. One file per provider; rules that need the whole tenant (its VIP, its port, its
//! service annotations) are in `tenant_rules`, run once VIPs are allocated.

mod aws;
mod azure;
mod hetzner;
mod installed;
mod ionoscloud;
mod kubevirt;
mod metal3;
mod metal_stack;
mod nutanix;
mod openstack;
mod packet;
mod proxmox;
mod tinkerbell;
mod vsphere;

use std::collections::BTreeMap;
use std::net::IpAddr;

use crate::diagnostics::Diagnostic;
use crate::model::build::names::is_dns1123_subdomain;
use crate::model::{Infrastructure, LOCATION_ANNOTATION, Provider, Tenant};
use crate::spec::raw;
use crate::spec::source::Source;

pub(crate) use installed::{Installed, installed};
pub(crate) use proxmox::pool_machine;

/// The release each provider's hints suggest (the one whose CRDs the tests validate against).
pub(crate) fn example_version(p: Provider) -> &'static str {
    match p {
        Provider::Proxmox => "v0.9.0",
        Provider::Hetzner => "v1.1.8",
        Provider::Kubevirt => "v0.11.2",
        Provider::Nutanix => "v1.10.3",
        Provider::MetalStack => "v0.8.0",
        Provider::Packet => "v0.9.0",
        Provider::Aws => "v2.11.1",
        Provider::Vsphere => "v1.16.1",
        Provider::Openstack => "v0.14.7",
        Provider::Metal3 => "v1.13.2",
        Provider::Tinkerbell => "v0.7.0",
        Provider::Ionoscloud => "v0.6.3",
        Provider::Azure => "v1.26.0",
    }
}

/// Validates `field` (`spec.infrastructure` or `spec.topology.classes[i].infrastructure`).
/// `installed` are the platform's infrastructure providers.
pub(crate) fn infrastructure(
    src: &Source,
    field: &str,
    infra: &raw::Infrastructure,
    installed: &BTreeMap<Provider, String>,
    errs: &mut Vec<Diagnostic>,
) -> Option<Infrastructure> {
    let provider = infra.provider;
    let name = provider.as_str();
    if !installed.contains_key(&provider) {
        errs.push(
            src.error(
                &format!("{field}.provider"),
                format!("the platform does not install the `{name}` provider"),
            )
            .with_hint(format!(
                "add it to kaas.yaml `spec.clusterApi.infrastructureProviders` (e.g. `{name}: {}`)",
                example_version(provider)
            )),
        );
    }
    for other in infra.blocks().into_iter().filter(|b| *b != provider) {
        errs.push(
            src.key_error(
                &format!("{field}.{}", other.as_str()),
                format!("a `{}` block with `provider: {name}`", other.as_str()),
            )
            .with_hint(format!(
                "write exactly the block named by `provider`: remove `{}:` or set `provider: {}`",
                other.as_str(),
                other.as_str()
            )),
        );
    }
    let at = format!("{field}.{name}");
    let missing = |errs: &mut Vec<Diagnostic>, required: &str| {
        errs.push(
            src.error(field, format!("`provider: {name}` needs the `{name}:` block"))
                .with_hint(format!("add `{name}: {{{required}}}`")),
        );
    };
    macro_rules! block {
        ($b:expr, $required:expr, $check:path, $variant:path) => {
            match $b {
                Some(b) => Some($variant($check(src, &at, b, errs))),
                None => {
                    missing(errs, $required);
                    None
                }
            }
        };
    }
    match provider {
        Provider::Proxmox => block!(
            &infra.proxmox,
            "sourceNode: ..., templateID: ..., dnsServers: [...]",
            proxmox::cluster,
            Infrastructure::Proxmox
        ),
        Provider::Hetzner => block!(
            &infra.hetzner,
            "region: fsn1, sshKeys: [...], hetznerSecret: ...",
            hetzner::cluster,
            Infrastructure::Hetzner
        ),
        Provider::Kubevirt => block!(
            &infra.kubevirt,
            "image: ...",
            kubevirt::cluster,
            Infrastructure::Kubevirt
        ),
        Provider::Nutanix => block!(
            &infra.nutanix,
            "prismCentral: {address: ..., credentialsSecret: ...}, cluster: ..., subnet: ..., image: ...",
            nutanix::cluster,
            Infrastructure::Nutanix
        ),
        Provider::MetalStack => block!(
            &infra.metal_stack,
            "projectID: ..., partition: ..., network: ..., image: ..., size: ...",
            metal_stack::cluster,
            Infrastructure::MetalStack
        ),
        Provider::Packet => block!(
            &infra.packet,
            "projectID: ..., metro: ...",
            packet::cluster,
            Infrastructure::Packet
        ),
        Provider::Aws => block!(&infra.aws, "region: ..., ami: ...", aws::cluster, Infrastructure::Aws),
        Provider::Vsphere => block!(
            &infra.vsphere,
            "server: ..., credentialsSecret: ..., datacenter: ..., network: ..., template: ...",
            vsphere::cluster,
            Infrastructure::Vsphere
        ),
        Provider::Openstack => block!(
            &infra.openstack,
            "credentialsSecret: ..., flavor: ..., image: ...",
            openstack::cluster,
            Infrastructure::Openstack
        ),
        Provider::Metal3 => block!(
            &infra.metal3,
            "image: {url: ..., checksum: ...}",
            metal3::cluster,
            Infrastructure::Metal3
        ),
        Provider::Tinkerbell => block!(
            &infra.tinkerbell,
            "hardwareSelector: {...}",
            tinkerbell::cluster,
            Infrastructure::Tinkerbell
        ),
        Provider::Ionoscloud => block!(
            &infra.ionoscloud,
            "credentialsSecret: ..., datacenterID: ..., image: ...",
            ionoscloud::cluster,
            Infrastructure::Ionoscloud
        ),
        Provider::Azure => block!(
            &infra.azure,
            "location: ..., identity: ..., sshPublicKey: ...",
            azure::cluster,
            Infrastructure::Azure
        ),
    }
}

/// Rules between a tenant's endpoint, its service and its provider, once every VIP is known. A
/// VIP is rendered into several objects that must agree, and Kamaji only checks some of them:
/// what the user writes elsewhere must not contradict it.
pub(crate) fn tenant_rules(src: &Source, t: &Tenant, errs: &mut Vec<Diagnostic>) {
    if let Infrastructure::Hetzner(h) = &t.infrastructure
        && let Some(location) = t.service_annotations.get(LOCATION_ANNOTATION)
        && *location != h.region
    {
        errs.push(
            src.error(
                &format!("spec.controlPlane.service.annotations.{}", LOCATION_ANNOTATION),
                format!(
                    "the load balancer location `{location}` differs from the region `{}`",
                    h.region
                ),
            )
            .with_hint("the region decides it: drop the annotation"),
        );
    }
    if t.address_chosen_by_load_balancer()
        && let Some(vip) = t.vip
    {
        errs.push(
            src.error(
                "spec.controlPlane.endpoint.host",
                format!("a Hetzner tenant's API server address is chosen by its hcloud load balancer, not {vip}"),
            )
            .with_hint("drop `endpoint.host`: the Kamaji provider writes the address the load balancer got into the Cluster and the HetznerCluster"),
        );
    }
    if let Infrastructure::MetalStack(m) = &t.infrastructure
        && m.firewall.is_some()
        && let Some(hostname) = t.exposure.hostname()
    {
        errs.push(
            src.error(
                "spec.controlPlane.exposure",
                format!("a metal-stack firewall cannot let the nodes reach `{hostname}`: its egress rules name the API server's IP address"),
            )
            .with_hint("behind a Gateway or an Ingress the address is the entry point's, which kaas-gitops does not know: drop `firewall` from `infrastructure.metalStack`, or choose `exposure: service`"),
        );
    }
    if matches!(t.infrastructure, Infrastructure::Metal3(_)) && t.vip.is_none() && t.exposure.hostname().is_none() {
        errs.push(
            src.error("spec.controlPlane.endpoint", "a Metal³ tenant needs a VIP known at render time")
                .with_hint("Kamaji checks, but never sets, `Metal3Cluster.spec.controlPlaneEndpoint`, and CAPM3 refuses a Metal3Cluster without one: set `endpoint.host`, or keep the `LoadBalancer` service type and add a range to kaas.yaml `spec.loadBalancer.pools`"),
        );
    }
    if matches!(t.infrastructure, Infrastructure::MetalStack(_))
        && t.topology.is_none()
        && t.vip.is_none()
        && t.exposure.hostname().is_none()
    {
        errs.push(
            src.error("spec.controlPlane.endpoint", "a metal-stack tenant needs a VIP known at render time")
                .with_hint("Kamaji checks, but never sets, `MetalStackCluster.spec.controlPlaneEndpoint`: set `endpoint.host`, or keep the `LoadBalancer` service type and add a range to kaas.yaml `spec.loadBalancer.pools`"),
        );
    }
    if let Some(vip) = t.vip {
        for (key, value) in &t.service_annotations {
            if !LB_IP_ANNOTATIONS.contains(&key.as_str()) {
                continue;
            }
            let agrees = value.split(',').map(str::trim).any(|a| a.parse::<IpAddr>() == Ok(vip));
            if !agrees {
                errs.push(
                    src.error(
                        &format!("spec.controlPlane.service.annotations.{key}"),
                        format!("`{key}: {value}` asks for another address than the VIP {vip}"),
                    )
                    .with_hint("the VIP is the API server's address in the Cluster and the infrastructure cluster; drop the annotation or make it the VIP"),
                );
            }
        }
    }
    if matches!(t.infrastructure, Infrastructure::Vsphere(_)) {
        // VSphereMachineTemplate `numCPUs` has `minimum: 2` (CAPV v1.16.1 CRD).
        for (i, pool) in t.pools.iter().enumerate().filter(|(_, p)| p.cpus < 2) {
            errs.push(
                src.error(
                    &format!("spec.workers[{i}].machine.cpus"),
                    format!("{} vCPU is below vSphere's minimum of 2 (`numCPUs`)", pool.cpus),
                )
                .with_hint("give the pool at least `cpus: 2`"),
            );
        }
    }
    if matches!(t.infrastructure, Infrastructure::Ionoscloud(_)) {
        // IonosCloudMachineTemplate `memoryMB`: at least 2048, a multiple of 1024; `disk.sizeGB`
        // at least 10 (cluster-api-provider-ionoscloud v0.6.3 CRD).
        for (i, pool) in t.pools.iter().enumerate() {
            if pool.memory_mib < 2048 || pool.memory_mib % 1024 != 0 {
                errs.push(
                    src.error(
                        &format!("spec.workers[{i}].machine.memoryMiB"),
                        format!("{} MiB is not a size IONOS Cloud offers", pool.memory_mib),
                    )
                    .with_hint("a multiple of 1024, at least 2048"),
                );
            }
            if pool.disk_gib < 10 {
                errs.push(
                    src.error(
                        &format!("spec.workers[{i}].machine.diskGiB"),
                        format!("{} GiB is below IONOS Cloud's 10 GiB disk", pool.disk_gib),
                    )
                    .with_hint("give the pool at least `diskGiB: 10`"),
                );
            }
        }
    }
    for (i, arg) in t.api_server.extra_args.iter().enumerate() {
        if let Some(port) = arg.strip_prefix("--secure-port=")
            && port.parse::<u16>() != Ok(t.port)
        {
            errs.push(
                src.error(
                    &format!("spec.controlPlane.apiServer.extraArgs[{i}]"),
                    format!("`{arg}` differs from the endpoint port {}", t.port),
                )
                .with_hint("the API server listens on `controlPlane.endpoint.port`, which Cluster API and the infrastructure cluster also use: set the port there and drop the flag"),
            );
        }
    }
}

/// Service annotations that pin a load balancer's address (MetalLB, kube-vip, Cilium).
const LB_IP_ANNOTATIONS: [&str; 4] = [
    "metallb.io/loadBalancerIPs",
    "metallb.universe.tf/loadBalancerIPs",
    "kube-vip.io/loadbalancerIPs",
    "lbipam.cilium.io/ips",
];

/// A required text field: not empty, no surrounding blanks.
fn text(src: &Source, field: &str, value: &str, what: &str, errs: &mut Vec<Diagnostic>) {
    if value.trim().is_empty() {
        errs.push(src.error(field, format!("empty {what}")));
    } else if value.trim() != value || value.contains(char::is_whitespace) {
        errs.push(src.error(field, format!("`{value}` is not a valid {what}: it contains blanks")));
    }
}

/// The name of a Secret: credentials are referenced, never written.
fn secret(src: &Source, field: &str, name: &str, errs: &mut Vec<Diagnostic>) {
    if !is_dns1123_subdomain(name) || name.is_empty() {
        errs.push(src.error(field, format!("`{name}` is not a Secret name")).with_hint(
            "name a Secret in lower-case letters, digits, `-` and `.`; put the credentials in that Secret, never here",
        ));
    }
}

/// One of `allowed`, or an error listing them.
fn one_of(src: &Source, field: &str, value: &str, what: &str, allowed: &[&str], errs: &mut Vec<Diagnostic>) {
    if !allowed.contains(&value) {
        let list: Vec<String> = allowed.iter().map(|a| format!("`{a}`")).collect();
        errs.push(
            src.error(field, format!("`{value}` is not a {what}"))
                .with_hint(format!("use one of {}", list.join(", "))),
        );
    }
}

/// A name that may hold inner blanks (vSphere inventory paths, port groups): not empty, no
/// surrounding blanks.
fn inventory_name(src: &Source, field: &str, value: &str, what: &str, errs: &mut Vec<Diagnostic>) {
    if value.trim().is_empty() {
        errs.push(src.error(field, format!("empty {what}")));
    } else if value.trim() != value {
        errs.push(src.error(
            field,
            format!("`{value}` is not a valid {what}: it starts or ends with blanks"),
        ));
    }
}

/// `8-4-4-4-12` hex digits: Nutanix and OpenStack objects are named by UUID that way, anything
/// else is a name.
fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, len)| g.len() == len && g.bytes().all(|b| b.is_ascii_hexdigit()))
}
