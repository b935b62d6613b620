//! The tenant's cluster DNS address on its `KamajiControlPlane` (issue 41 item 1).
//!
//! Kamaji's defaulting webhook derives the TenantControlPlane's `networkProfile.dnsServiceIPs`
//! on create only (kamaji 26.8.2 `internal/webhook/handlers/tcp_defaults.go`); the provider's
//! every reconcile copies the KamajiControlPlane's `addons.coreDNS.dnsServiceIPs` (or, without
//! CoreDNS, `network.dnsServiceIPs`) over it (provider v0.20.0
//! `controllers/kamajicontrolplane_controller_tcp.go:90,93-94`), and Kamaji uploads the tenant's
//! `kubelet-config` with `clusterDNS` from it (`internal/kubeadm/uploadconfig.go:84`). So the
//! address must be rendered, where kubeadm puts CoreDNS's Service `kube-dns`: the 10th address of
//! the first service CIDR (`internal/kubeadm/addon.go:39`; kubernetes v1.36.3
//! `cmd/kubeadm/app/constants/constants.go`, `GetDNSIP`). Topology mode: tests/it/topology.rs.

use serde_json::{Value, json};

use crate::common::Repo;

/// `tenant`'s KamajiControlPlane.
fn kcp(repo: &Repo, tenant: &str) -> Value {
    repo.object(&format!("overlays/tenants/{tenant}/kamajicontrolplane-{tenant}.yaml"))
}

/// The example with `tenants/acme.yaml`'s service range `[10.95.0.0/16]` replaced by `services`,
/// rendered.
#[track_caller]
fn acme_with_services(services: &str) -> Repo {
    let repo = Repo::example();
    repo.replace(
        "tenants/acme.yaml",
        "    services: [10.95.0.0/16]\n",
        &format!("    services: {services}\n"),
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    repo
}

#[test]
fn every_control_plane_carries_its_cluster_dns_address() {
    let repo = Repo::example();
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The example's tenant `acme` (services 10.95.0.0/16): kube-dns's address of the live run.
    assert_eq!(
        kcp(&repo, "acme")["spec"]["addons"]["coreDNS"],
        json!({"dnsServiceIPs": ["10.95.0.10"]})
    );
    // Every tenant: the address at index 10 of its Cluster's first service CIDR.
    for tenant in ["acme", "globex", "initech"] {
        let cluster = repo.object(&format!("overlays/tenants/{tenant}/cluster-{tenant}.yaml"));
        let cidr: ipnet::IpNet = cluster["spec"]["clusterNetwork"]["services"]["cidrBlocks"][0]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        // `hosts()` skips the network address of an IPv4 range: its 10th is index 10.
        let tenth = cidr.hosts().nth(9).unwrap().to_string();
        let kcp = kcp(&repo, tenant);
        assert_eq!(
            kcp["spec"]["addons"]["coreDNS"]["dnsServiceIPs"],
            json!([tenth]),
            "{tenant}"
        );
        // Only where the provider reads it with CoreDNS on.
        assert_eq!(kcp["spec"]["network"]["dnsServiceIPs"], Value::Null, "{tenant}");
    }
}

/// Dual-stack: one address, in the first range's family. The provider v0.20.0 hands Kamaji only
/// the Cluster's first service CIDR (`controllers/kamajicontrolplane_controller_tcp.go:71-72`),
/// Kamaji refuses a DNS address outside its service CIDRs (`internal/webhook/handlers/tcp_dns.go`),
/// and kubeadm's `kube-dns` has the first range's address (`GetDNSIP`).
#[test]
fn a_dual_stack_tenant_gets_the_address_of_its_first_range() {
    let repo = acme_with_services("[10.95.0.0/16, fd00:95::/108]");
    let cluster = repo.object("overlays/tenants/acme/cluster-acme.yaml");
    assert_eq!(
        cluster["spec"]["clusterNetwork"]["services"]["cidrBlocks"],
        json!(["10.95.0.0/16", "fd00:95::/108"])
    );
    assert_eq!(
        kcp(&repo, "acme")["spec"]["addons"]["coreDNS"]["dnsServiceIPs"],
        json!(["10.95.0.10"])
    );
    // IPv6 first: its 10th address, as kubeadm counts it (`::a`; Kamaji's own webhook would
    // say `::10`, which is not `kube-dns`).
    let repo = acme_with_services("[fd00:95::/108, 10.95.0.0/16]");
    assert_eq!(
        kcp(&repo, "acme")["spec"]["addons"]["coreDNS"]["dnsServiceIPs"],
        json!(["fd00:95::a"])
    );
}

/// Without Kamaji's CoreDNS, the provider takes `network.dnsServiceIPs`
/// (`controllers/kamajicontrolplane_controller_tcp.go:90`): the kubelets still get kubeadm's
/// cluster DNS address, where a DNS of the tenant's own is expected to serve.
#[test]
fn without_kamajis_coredns_the_kubelets_still_get_the_address() {
    let repo = Repo::example();
    repo.replace(
        "tenants/acme.yaml",
        "  controlPlane:\n    replicas: 2\n",
        "  controlPlane:\n    replicas: 2\n    addons: {coreDNS: false}\n",
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let kcp = kcp(&repo, "acme");
    assert_eq!(kcp["spec"]["addons"]["coreDNS"], Value::Null, "{kcp:#}");
    assert_eq!(kcp["spec"]["network"]["dnsServiceIPs"], json!(["10.95.0.10"]));
}

/// The smallest range with a 10th address (16 addresses) is taken, counted from its own start;
/// smaller ones are refused at the field (tests/it/errors.rs).
#[test]
fn the_smallest_service_range_has_its_tenth_address() {
    let repo = acme_with_services("[10.95.0.16/28]");
    assert_eq!(
        kcp(&repo, "acme")["spec"]["addons"]["coreDNS"]["dnsServiceIPs"],
        json!(["10.95.0.26"])
    );
}
