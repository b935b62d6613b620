//! The `hetzner` block (CAPH, Hetzner Cloud servers).

use std::net::IpAddr;

use super::{one_of, secret, text};
use crate::diagnostics::Diagnostic;
use crate::model::HetznerCluster;
use crate::spec::raw::Hetzner;
use crate::spec::source::Source;

/// Hetzner Cloud locations, as `HetznerCluster.spec.controlPlaneLoadBalancer.region` allows them.
pub(crate) const LOCATIONS: [&str; 6] = ["fsn1", "nbg1", "hel1", "ash", "hil", "sin"];
/// Network zones, as `HetznerCluster.spec.hcloudNetwork.networkZone` allows them.
const NETWORK_ZONES: [&str; 4] = ["eu-central", "us-east", "us-west", "ap-southeast"];

/// Validates the block at `field`.
pub(super) fn cluster(src: &Source, field: &str, h: &Hetzner, errs: &mut Vec<Diagnostic>) -> HetznerCluster {
    one_of(
        src,
        &format!("{field}.region"),
        &h.region,
        "Hetzner Cloud location",
        &LOCATIONS,
        errs,
    );
    if h.ssh_keys.is_empty() {
        errs.push(
            src.error(&format!("{field}.sshKeys"), "at least one SSH key is required")
                .with_hint("name SSH keys of the Hetzner Cloud project; CAPH refuses to create servers without one"),
        );
    }
    for (i, k) in h.ssh_keys.iter().enumerate() {
        if k.trim().is_empty() {
            errs.push(src.error(&format!("{field}.sshKeys[{i}]"), "empty SSH key name"));
        }
    }
    secret(src, &format!("{field}.hetznerSecret"), &h.hetzner_secret, errs);
    if let Some(zone) = &h.network_zone {
        one_of(
            src,
            &format!("{field}.networkZone"),
            zone,
            "Hetzner network zone",
            &NETWORK_ZONES,
            errs,
        );
    }
    if let Some(image) = &h.image_name {
        text(src, &format!("{field}.imageName"), image, "image name", errs);
    }
    if let Some(kind) = &h.instance_type {
        text(src, &format!("{field}.instanceType"), kind, "server type", errs);
    }
    let nameservers = h.nameservers.clone().unwrap_or_default();
    for (i, n) in nameservers.iter().enumerate() {
        if n.parse::<IpAddr>().is_err() {
            errs.push(
                src.error(
                    &format!("{field}.nameservers[{i}]"),
                    format!("`{n}` is not an IP address"),
                )
                .with_hint("list name servers by address, e.g. `1.1.1.1`"),
            );
        }
    }
    HetznerCluster {
        region: h.region.clone(),
        ssh_keys: h.ssh_keys.clone(),
        secret: h.hetzner_secret.clone(),
        image_name: h.image_name.clone().unwrap_or_else(|| "ubuntu-24.04".into()),
        instance_type: h.instance_type.clone().unwrap_or_else(|| "cpx31".into()),
        network_zone: h.network_zone.clone(),
        nameservers,
    }
}
