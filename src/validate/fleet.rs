//! Rules across tenants, and VIP allocation. A tenant without `endpoint.host` gets the lowest
//! free address of the platform's pools, recorded in `kaas.lock`; an address once recorded stays
//! with its tenant while the tenant exists, so adding or removing other tenants never moves it.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use crate::diagnostics::Diagnostic;
use crate::model::{Platform, ServiceType, Tenant};
use crate::spec::source::Source;

/// Checks explicit VIPs for uniqueness and allocates the missing ones. `previous` is the
/// allocation in `kaas.lock`; the result is the new one.
pub fn allocate_vips(
    platform: &Platform,
    tenants: &mut [(Tenant, &Source)],
    previous: &BTreeMap<String, IpAddr>,
) -> Result<BTreeMap<String, IpAddr>, Vec<Diagnostic>> {
    let mut errs = Vec::new();
    let mut explicit: BTreeMap<IpAddr, String> = BTreeMap::new();
    for (t, src) in tenants.iter() {
        if let Some(ip) = t.vip {
            if let Some(other) = explicit.get(&ip) {
                errs.push(
                    src.error(
                        "spec.controlPlane.endpoint.host",
                        format!("the VIP {ip} is already the endpoint of tenant `{other}`"),
                    )
                    .with_hint("every tenant needs its own API server address"),
                );
            } else {
                explicit.insert(ip, t.name.clone());
            }
        }
    }
    let in_pool = |ip: &IpAddr| platform.vip_pools.iter().any(|(a, b)| a <= ip && ip <= b);
    let wants_vip =
        |t: &Tenant| t.vip.is_none() && t.service_type == ServiceType::LoadBalancer && !platform.vip_pools.is_empty();

    let mut allocated: BTreeMap<String, IpAddr> = BTreeMap::new();
    for (t, src) in tenants.iter() {
        if let Some(ip) = t.vip {
            // An explicit address must not take one the lock gave another, living tenant.
            if let Some((owner, _)) = previous.iter().find(|(n, a)| **a == ip && **n != t.name)
                && tenants.iter().any(|(o, _)| &o.name == owner && wants_vip(o))
            {
                errs.push(
                    src.error(
                        "spec.controlPlane.endpoint.host",
                        format!("the VIP {ip} is allocated to tenant `{owner}` (kaas.lock)"),
                    )
                    .with_hint("choose another address; allocated VIPs never move"),
                );
            }
        } else if wants_vip(t)
            && let Some(ip) = previous.get(&t.name)
            && in_pool(ip)
            && !explicit.contains_key(ip)
        {
            allocated.insert(t.name.clone(), *ip);
        }
    }
    let mut used: BTreeSet<IpAddr> = explicit.keys().copied().collect();
    used.extend(allocated.values().copied());
    for (t, src) in tenants.iter_mut() {
        if !wants_vip(t) {
            continue;
        }
        if let Some(ip) = allocated.get(&t.name) {
            t.vip = Some(*ip);
            t.vip_allocated = true;
            continue;
        }
        match next_free(&platform.vip_pools, &used) {
            Some(ip) => {
                used.insert(ip);
                allocated.insert(t.name.clone(), ip);
                t.vip = Some(ip);
                t.vip_allocated = true;
            }
            None => errs.push(
                src.error("spec.controlPlane.endpoint", "the platform's VIP pools are exhausted")
                    .with_hint("add a range to kaas.yaml `spec.loadBalancer.pools`, or set `endpoint.host` explicitly"),
            ),
        }
    }
    if errs.is_empty() { Ok(allocated) } else { Err(errs) }
}

fn next_free(pools: &[(IpAddr, IpAddr)], used: &BTreeSet<IpAddr>) -> Option<IpAddr> {
    for (first, last) in pools {
        let mut ip = *first;
        loop {
            if !used.contains(&ip) {
                return Some(ip);
            }
            if ip == *last {
                break;
            }
            ip = match ip {
                IpAddr::V4(v) => IpAddr::V4(u32::from(v).checked_add(1)?.into()),
                IpAddr::V6(v) => IpAddr::V6(u128::from(v).checked_add(1)?.into()),
            };
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_free_skips_used_and_spans_pools() {
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let c: IpAddr = "10.0.1.1".parse().unwrap();
        let pools = vec![(a, b), (c, c)];
        let mut used = BTreeSet::new();
        assert_eq!(next_free(&pools, &used), Some(a));
        used.insert(a);
        used.insert(b);
        assert_eq!(next_free(&pools, &used), Some(c));
        used.insert(c);
        assert_eq!(next_free(&pools, &used), None);
    }
}
