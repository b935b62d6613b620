//! The `proxmox` block (CAPMOX) and its per-pool override.

use std::net::{IpAddr, Ipv4Addr};

use crate::diagnostics::Diagnostic;
use crate::model::build::fields::parse_range;
use crate::model::build::names::is_dns1123_label;
use crate::model::{ProxmoxCluster, ProxmoxMachine};
use crate::spec::raw::{Proxmox, ProxmoxPool};
use crate::spec::source::Source;

/// Validates the block at `field`.
pub(super) fn cluster(src: &Source, field: &str, p: &Proxmox, errs: &mut Vec<Diagnostic>) -> ProxmoxCluster {
    if p.dns_servers.is_empty() {
        errs.push(src.error(&format!("{field}.dnsServers"), "at least one DNS server is required"));
    }
    for (i, d) in p.dns_servers.iter().enumerate() {
        if d.parse::<IpAddr>().is_err() {
            errs.push(
                src.error(
                    &format!("{field}.dnsServers[{i}]"),
                    format!("`{d}` is not an IP address"),
                )
                .with_hint("list the DNS servers' IP addresses"),
            );
        }
    }
    if p.ipv4.is_none() {
        // ProxmoxCluster's CEL rule: "at least one ip config must be set" (ipv4Config or
        // ipv6Config); CAPMOX assigns node addresses from it. The API server would refuse it.
        errs.push(
            src.error(&format!("{field}.ipv4"), "the Proxmox block needs an `ipv4` address pool")
                .with_hint("add `ipv4: {addresses: [\"10.0.5.10-10.0.5.60\"], gateway: 10.0.5.1, prefix: 24}`: CAPMOX gives the nodes their addresses from it"),
        );
    }
    let ipv4 = p.ipv4.as_ref().map(|v| {
        for (i, a) in v.addresses.iter().enumerate() {
            if !parse_range(a).is_some_and(|(x, _)| x.is_ipv4()) {
                errs.push(
                    src.error(
                        &format!("{field}.ipv4.addresses[{i}]"),
                        format!("`{a}` is not an IPv4 range"),
                    )
                    .with_hint("write `FIRST-LAST` or a CIDR, e.g. `10.0.5.10-10.0.5.60`"),
                );
            }
        }
        if v.gateway.parse::<Ipv4Addr>().is_err() {
            errs.push(src.error(
                &format!("{field}.ipv4.gateway"),
                format!("`{}` is not an IPv4 address", v.gateway),
            ));
        }
        if v.prefix == 0 || v.prefix > 32 {
            errs.push(
                src.error(
                    &format!("{field}.ipv4.prefix"),
                    format!("{} is not an IPv4 prefix length", v.prefix),
                )
                .with_hint("use 1-32, e.g. 24"),
            );
        }
        (v.addresses.clone(), v.gateway.clone(), v.prefix)
    });
    if let Some(s) = &p.credentials_secret
        && !is_dns1123_label(s)
    {
        errs.push(src.error(
            &format!("{field}.credentialsSecret"),
            format!("`{s}` is not a Secret name"),
        ));
    }
    let machine = pool_machine(p, None);
    ProxmoxCluster {
        dns_servers: p.dns_servers.clone(),
        allowed_nodes: machine.allowed_nodes.clone(),
        ipv4,
        credentials_secret: p.credentials_secret.clone(),
        machine,
    }
}

/// The block merged with a pool's override.
pub(crate) fn pool_machine(p: &Proxmox, o: Option<&ProxmoxPool>) -> ProxmoxMachine {
    let o = o.cloned().unwrap_or_default();
    let allowed = o.allowed_nodes.unwrap_or_else(|| {
        if p.allowed_nodes.is_empty() {
            vec![p.source_node.clone()]
        } else {
            p.allowed_nodes.clone()
        }
    });
    ProxmoxMachine {
        source_node: o.source_node.unwrap_or_else(|| p.source_node.clone()),
        template_id: o.template_id.unwrap_or(p.template_id),
        bridge: o.bridge.or_else(|| p.bridge.clone()).unwrap_or_else(|| "vmbr0".into()),
        allowed_nodes: allowed,
    }
}
