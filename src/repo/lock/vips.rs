//! VIP allocations of `kaas.lock`: the address each tenant was given from the platform's pools
//! (chosen by `model::vips`), so that an address never moves while its tenant exists.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::ops::{Deref, DerefMut};

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
