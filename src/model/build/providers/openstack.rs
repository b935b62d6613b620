//! The `openstack` block (CAPO, OpenStack Nova servers).

use std::net::IpAddr;

use super::{is_uuid, secret, text};
use crate::diagnostics::Diagnostic;
use crate::model::{OpenstackCluster, OpenstackRef};
use crate::spec::raw::Openstack;
use crate::spec::source::Source;

/// The network CAPO creates when the block names none.
const DEFAULT_NODE_CIDR: &str = "10.6.0.0/24";

/// Validates the block at `field`.
pub(super) fn cluster(src: &Source, field: &str, o: &Openstack, errs: &mut Vec<Diagnostic>) -> OpenstackCluster {
    secret(src, &format!("{field}.credentialsSecret"), &o.credentials_secret, errs);
    let cloud_name = o.cloud_name.clone().unwrap_or_else(|| "openstack".into());
    text(
        src,
        &format!("{field}.cloudName"),
        &cloud_name,
        "clouds.yaml entry",
        errs,
    );
    if let Some(r) = &o.region {
        text(src, &format!("{field}.region"), r, "region", errs);
    }
    text(src, &format!("{field}.flavor"), &o.flavor, "flavor", errs);
    let mut reference = |key: &str, value: &str| {
        if value.trim().is_empty() {
            errs.push(src.error(&format!("{field}.{key}"), "empty name or UUID"));
        }
        if is_uuid(value) {
            OpenstackRef::Id(value.to_string())
        } else {
            OpenstackRef::Name(value.to_string())
        }
    };
    let image = reference("image", &o.image);
    let network = o.network.as_deref().map(|n| reference("network", n));
    let external_network = o.external_network.as_deref().map(|n| reference("externalNetwork", n));
    if o.network.is_some() && (o.node_cidr.is_some() || !o.dns_nameservers.is_empty()) {
        let key = if o.node_cidr.is_some() {
            "nodeCIDR"
        } else {
            "dnsNameservers"
        };
        errs.push(
            src.error(&format!("{field}.{key}"), format!("`{key}` with an existing `network`"))
                .with_hint("`nodeCIDR` and `dnsNameservers` describe the network CAPO creates when `network` is not given; remove them, or remove `network`"),
        );
    }
    let node_cidr = o.node_cidr.clone().unwrap_or_else(|| DEFAULT_NODE_CIDR.into());
    if node_cidr.parse::<ipnet::Ipv4Net>().is_err() {
        errs.push(
            src.error(
                &format!("{field}.nodeCIDR"),
                format!("`{node_cidr}` is not an IPv4 CIDR"),
            )
            .with_hint("write e.g. `10.6.0.0/24`: CAPO v0.14.7 creates one IPv4 subnet"),
        );
    }
    for (i, d) in o.dns_nameservers.iter().enumerate() {
        if d.parse::<IpAddr>().is_err() {
            errs.push(src.error(
                &format!("{field}.dnsNameservers[{i}]"),
                format!("`{d}` is not an IP address"),
            ));
        }
    }
    if let Some(k) = &o.ssh_key_name {
        text(src, &format!("{field}.sshKeyName"), k, "key pair name", errs);
    }
    OpenstackCluster {
        credentials_secret: o.credentials_secret.clone(),
        cloud_name,
        region: o.region.clone(),
        flavor: o.flavor.clone(),
        image,
        network,
        node_cidr,
        dns_nameservers: o.dns_nameservers.clone(),
        external_network,
        ssh_key_name: o.ssh_key_name.clone(),
        root_volume_type: o.root_volume_type.clone(),
    }
}
