//! Where the VIP is chosen. A tenant without `endpoint.host` gets the lowest free address of the
//! platform's pools, recorded in `kaas.lock`; an address once recorded stays with its tenant
//! while the tenant exists, so adding or removing other tenants never moves it.
//! [`VipAllocations`] is what `kaas.lock` keeps (`repo::lock`).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::ops::{Deref, DerefMut};

use crate::diagnostics::Diagnostic;
use crate::model::{Platform, ServiceType, Tenant};
use crate::spec::source::Source;

/// Checks explicit VIPs for uniqueness and allocates the missing ones. `previous` is the
/// allocation in `kaas.lock`; the result is the new one.
pub fn allocate(
    platform: &Platform,
    tenants: &mut [(Tenant, &Source)],
    previous: &VipAllocations,
) -> Result<VipAllocations, Vec<Diagnostic>> {
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
    // A tenant's pools are its management cluster's, when that has its own.
    let pools = |t: &Tenant| platform.vip_pools_of(t.management_cluster.as_deref());
    let in_pool = |t: &Tenant, ip: &IpAddr| pools(t).iter().any(|(a, b)| a <= ip && ip <= b);
    let wants_vip = |t: &Tenant| {
        t.vip.is_none()
            && t.exposure.kind() == crate::model::exposure::ExposureKind::Service
            && t.service_type == ServiceType::LoadBalancer
            && !pools(t).is_empty()
            && !t.address_chosen_by_load_balancer()
    };

    let mut allocated: BTreeMap<String, IpAddr> = BTreeMap::new();
    // Owners by address and pool users by name, for lookups per tenant (fleets are large).
    let mut owners: BTreeMap<IpAddr, Vec<&String>> = BTreeMap::new();
    for (name, ip) in previous.iter() {
        owners.entry(*ip).or_default().push(name);
    }
    let pool_users: BTreeSet<&str> = tenants
        .iter()
        .filter(|(o, _)| wants_vip(o))
        .map(|(o, _)| o.name.as_str())
        .collect();
    for (t, src) in tenants.iter() {
        if let Some(ip) = t.vip {
            // An explicit address must not take one the lock gave another, living tenant.
            if let Some(owner) = owners.get(&ip).and_then(|names| names.iter().find(|n| ***n != t.name))
                && pool_users.contains(owner.as_str())
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
            && in_pool(t, ip)
            && !explicit.contains_key(ip)
        {
            allocated.insert(t.name.clone(), *ip);
        }
    }
    let mut used: BTreeSet<IpAddr> = explicit.keys().copied().collect();
    used.extend(allocated.values().copied());
    // One walk per set of pools (the platform's, each management cluster's own); addresses
    // stay unique fleet-wide through `used`, even where two clusters' pools overlap.
    let mut walks: BTreeMap<Option<String>, FreeVips> = BTreeMap::new();
    for (t, src) in tenants.iter_mut() {
        if !wants_vip(t) {
            continue;
        }
        let own = t.management_cluster.clone().filter(|m| {
            platform
                .management_clusters
                .iter()
                .any(|c| c.name == *m && c.vip_pools.is_some())
        });
        let free = walks.entry(own).or_insert_with(|| FreeVips::new(pools(t)));
        if let Some(ip) = allocated.get(&t.name) {
            t.vip = Some(*ip);
            t.vip_allocated = true;
            continue;
        }
        match free.next(&used) {
            Some(ip) => {
                used.insert(ip);
                allocated.insert(t.name.clone(), ip);
                t.vip = Some(ip);
                t.vip_allocated = true;
            }
            None => errs.push(
                src.error("spec.controlPlane.endpoint", "the platform's VIP pools are exhausted")
                    .with_hint(match &t.management_cluster {
                        Some(m) if platform.vip_pools_of(Some(m)) != platform.vip_pools.as_slice() => format!(
                            "add a range to the `pools` of management cluster `{m}` in kaas.yaml `spec.managementClusters`, or set `endpoint.host` explicitly"
                        ),
                        _ => "add a range to kaas.yaml `spec.loadBalancer.pools`, or set `endpoint.host` explicitly".to_string(),
                    }),
            ),
        }
    }
    if errs.is_empty() {
        Ok(allocated.into())
    } else {
        Err(errs)
    }
}

/// Walks the pools in order for addresses not in `used`. Allocation only adds to `used`, so
/// each search resumes where the previous one ended: allocating for a whole fleet is one pass
/// over the pools, not one pass per tenant.
struct FreeVips<'a> {
    pools: &'a [(IpAddr, IpAddr)],
    pool: usize,
    next: Option<IpAddr>,
}

impl<'a> FreeVips<'a> {
    fn new(pools: &'a [(IpAddr, IpAddr)]) -> Self {
        FreeVips {
            pools,
            pool: 0,
            next: None,
        }
    }

    fn next(&mut self, used: &BTreeSet<IpAddr>) -> Option<IpAddr> {
        while let Some((first, last)) = self.pools.get(self.pool) {
            let mut ip = self.next.unwrap_or(*first);
            loop {
                if !used.contains(&ip) {
                    self.next = Some(ip);
                    return Some(ip);
                }
                let succ = match ip {
                    IpAddr::V4(v) => u32::from(v).checked_add(1).map(|n| IpAddr::V4(n.into())),
                    IpAddr::V6(v) => u128::from(v).checked_add(1).map(|n| IpAddr::V6(n.into())),
                };
                match succ {
                    Some(n) if ip != *last => ip = n,
                    _ => break,
                }
            }
            self.pool += 1;
            self.next = None;
        }
        None
    }
}

/// Allocated VIPs by tenant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VipAllocations(BTreeMap<String, IpAddr>);

impl From<BTreeMap<String, IpAddr>> for VipAllocations {
    fn from(vips: BTreeMap<String, IpAddr>) -> Self {
        VipAllocations(vips)
    }
}

impl Deref for VipAllocations {
    type Target = BTreeMap<String, IpAddr>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for VipAllocations {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn next_free(pools: &[(IpAddr, IpAddr)], used: &BTreeSet<IpAddr>) -> Option<IpAddr> {
        FreeVips::new(pools).next(used)
    }

    /// The oracle: the first free address, searched from the start of the first pool every
    /// time (the allocator before it learnt to resume), written independently of `FreeVips`.
    fn fresh_search(pools: &[(IpAddr, IpAddr)], used: &BTreeSet<IpAddr>) -> Option<IpAddr> {
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

    #[test]
    fn a_resumed_walk_allocates_what_a_fresh_search_would() {
        let ip = |s: &str| -> IpAddr { s.parse().unwrap() };
        let pools = vec![(ip("10.0.0.1"), ip("10.0.0.4")), (ip("10.0.1.1"), ip("10.0.1.3"))];
        let mut used: BTreeSet<IpAddr> = [ip("10.0.0.2"), ip("10.0.1.1")].into();
        let mut walk = FreeVips::new(&pools);
        let mut got = Vec::new();
        while let Some(a) = walk.next(&used) {
            assert_eq!(Some(a), fresh_search(&pools, &used));
            used.insert(a);
            got.push(a);
        }
        assert_eq!(fresh_search(&pools, &used), None);
        assert_eq!(
            got,
            ["10.0.0.1", "10.0.0.3", "10.0.0.4", "10.0.1.2", "10.0.1.3"].map(ip)
        );
    }

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
