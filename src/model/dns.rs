//! The tenant's cluster DNS address: where CoreDNS's Service `kube-dns` lives and what every
//! kubelet gets as `clusterDNS`.
//!
//! kubeadm gives CoreDNS the 10th address (index 10) of the *first* service CIDR, for IPv4 and
//! IPv6 alike (kubernetes v1.36.3 `cmd/kubeadm/app/constants/constants.go`, `GetDNSIP`:
//! `GetIndexedIP(GetKubernetesServiceCIDR(..), 10)`, the first CIDR of the list), and Kamaji
//! creates `kube-dns` with kubeadm's manifest (kamaji 26.8.2 `internal/kubeadm/addon.go:39`,
//! `dns.EnsureDNSAddon`). Kamaji's own defaulting webhook would add 16 to an IPv6 network
//! instead (`internal/webhook/handlers/tcp_defaults.go`), which is not where kubeadm puts
//! `kube-dns`; kaas-gitops follows kubeadm.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

/// The index of CoreDNS's address in the service CIDR.
pub const DNS_INDEX: u8 = 10;

/// The fewest addresses a service CIDR may have: a CIDR holds a power of two, and the smallest
/// one with an address at index 10 holds 16.
pub const MIN_SERVICE_ADDRESSES: u32 = 16;

/// CoreDNS's address in `cidr`: its address at index 10, or `None` when `cidr` is not a CIDR
/// or too small to have one.
pub fn dns_service_ip(cidr: &str) -> Option<IpAddr> {
    let net: IpNet = cidr.parse().ok()?;
    let host_bits = u32::from(net.max_prefix_len() - net.prefix_len());
    if host_bits < MIN_SERVICE_ADDRESSES.ilog2() {
        return None;
    }
    Some(match net.network() {
        IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(u32::from(a) + u32::from(DNS_INDEX))),
        IpAddr::V6(a) => IpAddr::V6(Ipv6Addr::from(u128::from(a) + u128::from(DNS_INDEX))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tenth_address_as_kubeadm_picks_it() {
        let ip = |s: &str| dns_service_ip(s).map(|a| a.to_string());
        assert_eq!(ip("10.95.0.0/16").as_deref(), Some("10.95.0.10"));
        assert_eq!(ip("10.96.0.0/12").as_deref(), Some("10.96.0.10"));
        assert_eq!(ip("10.0.0.16/28").as_deref(), Some("10.0.0.26"));
        assert_eq!(ip("fd00:10:96::/108").as_deref(), Some("fd00:10:96::a"));
        assert_eq!(ip("fd00::/124").as_deref(), Some("fd00::a"));
        // Too small to have an address at index 10.
        assert_eq!(ip("10.0.0.0/29"), None);
        assert_eq!(ip("10.0.0.0/32"), None);
        assert_eq!(ip("fd00::/125"), None);
        assert_eq!(ip("not a cidr"), None);
    }
}
