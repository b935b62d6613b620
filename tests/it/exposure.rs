//! Tenant API servers behind one Gateway or an Ingress instead of a VIP each (kaas.yaml
//! `spec.apiServerExposure`, a tenant's `spec.controlPlane.exposure`): what is rendered, checked
//! as data, what is refused, and the move of a running tenant (`model::exposure`).

use crate::common::{ReleaseMirror, Repo, crds_dir};
use crate::crd_fetch::{EXAMPLE_ASSETS, requests, validate};

/// kaas.yaml's `spec.apiServerExposure`, inserted before `dataStores`.
pub const EXPOSURE: &str = r#"  apiServerExposure:
    default: gateway
    gateway:
      name: tenant-apis
      namespace: kaas-gateway
      hostname: "{tenant}.k8s.example.com"
      className: envoy
    ingress:
      className: haproxy
      hostname: "{tenant}.apis.example.com"
      annotations: {haproxy.org/ssl-passthrough: "true"}
"#;

/// The example with `exposure` in kaas.yaml, and acme without its VIP (so it has no address of
/// its own to keep).
pub fn example_with(exposure: &str) -> Repo {
    let repo = Repo::example();
    repo.replace(
        "kaas.yaml",
        "  dataStores: [default]\n",
        &format!("{exposure}  dataStores: [default]\n"),
    );
    repo.replace("tenants/acme.yaml", "    endpoint: {host: 10.0.4.10, port: 6443}\n", "");
    repo
}

fn rendered(repo: &Repo) {
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

fn network(repo: &Repo, tenant: &str) -> serde_json::Value {
    let kcp = repo.object(&format!("overlays/tenants/{tenant}/kamajicontrolplane-{tenant}.yaml"));
    kcp["spec"]["network"].clone()
}

#[test]
fn a_fleet_behind_one_gateway_gets_routes_by_hostname_and_no_address_each() {
    let repo = example_with(EXPOSURE);
    rendered(&repo);
    // The provider writes the hostname's port into the Cluster's endpoint (443 when none is
    // written), and Kamaji gives kubelets the API server's own port: both 6443.
    let globex = network(&repo, "globex");
    assert_eq!(
        globex["gateway"],
        serde_json::json!({
            "name": "tenant-apis",
            "namespace": "kaas-gateway",
            "hostname": "globex.k8s.example.com:6443",
            "sectionName": "kube-apiserver",
        })
    );
    assert_eq!(globex["serviceType"], "ClusterIP");
    assert!(globex.get("serviceAddress").is_none(), "{globex}");
    assert!(globex.get("serviceAnnotations").is_none(), "{globex}");
    // No VIP taken from the pool, none kept in kaas.lock.
    let lock = repo.read("kaas.lock");
    assert!(!lock.contains("vips"), "{lock}");
    let cluster = repo.object("overlays/tenants/globex/cluster-globex.yaml");
    assert_eq!(cluster["spec"]["clusterNetwork"]["apiServerPort"], 6443, "{cluster}");
    // The endpoint is written where Cluster API copies it only once and Kamaji's provider only
    // checks it once set (Proxmox), so a tenant moved here follows from git.
    let endpoint = serde_json::json!({"host": "globex.k8s.example.com", "port": 6443});
    assert_eq!(cluster["spec"]["controlPlaneEndpoint"], endpoint, "{cluster}");
    let proxmox = repo.object("overlays/tenants/globex/proxmoxcluster-globex.yaml");
    assert_eq!(proxmox["spec"]["controlPlaneEndpoint"], endpoint, "{proxmox}");

    // The Gateway: the API servers' listener and Konnectivity's, both TLS passthrough for
    // every tenant's hostname, routes from any namespace.
    let gateway = repo.object("overlays/platform/gateway-tenant-apis.yaml");
    assert_eq!(gateway["metadata"]["namespace"], "kaas-gateway");
    assert_eq!(gateway["spec"]["gatewayClassName"], "envoy");
    let listeners = gateway["spec"]["listeners"].as_array().unwrap();
    let by_name: Vec<(&str, u64)> = listeners
        .iter()
        .map(|l| (l["name"].as_str().unwrap(), l["port"].as_u64().unwrap()))
        .collect();
    assert_eq!(by_name, [("kube-apiserver", 6443), ("konnectivity-server", 8132)]);
    for l in listeners {
        assert_eq!(l["protocol"], "TLS", "{l}");
        assert_eq!(l["tls"]["mode"], "Passthrough", "{l}");
        assert_eq!(l["hostname"], "*.k8s.example.com", "{l}");
        assert_eq!(l["allowedRoutes"]["namespaces"]["from"], "All", "{l}");
    }
    assert!(
        repo.read("overlays/platform/kustomization.yaml")
            .contains("namespace-kaas-gateway.yaml")
    );

    // A second render writes nothing.
    let before = repo.snapshot();
    rendered(&repo);
    assert_eq!(before, repo.snapshot());
}

#[test]
fn a_tenant_chooses_the_ingress_and_another_keeps_its_own_address() {
    let repo = example_with(EXPOSURE);
    repo.replace(
        "tenants/globex.yaml",
        "  access:\n",
        "  controlPlane:\n    exposure: ingress\n    addons: {konnectivity: false}\n  access:\n",
    );
    repo.replace(
        "tenants/acme.yaml",
        "  controlPlane:\n    replicas: 2\n",
        "  controlPlane:\n    replicas: 2\n    exposure: service\n    hostname: acme.k8s.example.com\n",
    );
    rendered(&repo);
    let globex = network(&repo, "globex");
    assert_eq!(
        globex["ingress"],
        serde_json::json!({
            "className": "haproxy",
            "hostname": "globex.apis.example.com:443",
            "extraAnnotations": {"haproxy.org/ssl-passthrough": "true"},
        })
    );
    assert!(globex.get("gateway").is_none(), "{globex}");
    // acme is served by its own Service (a VIP from the pool), its certificate carrying the
    // hostname too (kept while it moves off the Gateway).
    let acme = network(&repo, "acme");
    assert_eq!(acme["serviceType"], "LoadBalancer");
    assert_eq!(acme["serviceAddress"], "10.0.4.100");
    assert_eq!(acme["certSANs"], serde_json::json!(["acme.k8s.example.com"]));
    assert!(acme.get("gateway").is_none(), "{acme}");
}

#[test]
fn the_rendered_gateway_and_control_planes_pass_the_upstream_crds() {
    let repo = example_with(EXPOSURE);
    repo.replace(
        "tenants/globex.yaml",
        "  access:\n",
        "  controlPlane:\n    exposure: ingress\n    addons: {konnectivity: false}\n  access:\n",
    );
    rendered(&repo);
    let crds = crate::common::crds_dir();
    let run = repo.run(&["validate", "--crds", crds.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Against the Gateway CRD's own rules: a listener without a port is refused.
    repo.replace("overlays/platform/gateway-tenant-apis.yaml", "    port: 8132\n", "");
    let run = repo.run(&["validate", "--crds", crds.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("overlays/platform/gateway-tenant-apis.yaml"),
        "{}",
        run.stderr
    );
}

/// The Gateway API release whose CRDs `validate` (no `--crds`) checks a fleet behind a Gateway
/// against: the one Kamaji 26.8.2-edge's go.mod pins.
pub const GATEWAY_API_ASSET: &str = "/kubernetes-sigs/gateway-api/releases/download/v1.5.1/standard-install.yaml";

#[test]
fn validate_fetches_the_gateway_api_release_only_for_a_fleet_behind_a_gateway() {
    let without_class = EXPOSURE.replace("      className: envoy\n", "");
    let default_service = without_class.replace("default: gateway", "default: service");
    // The Gateway API CRDs of the test folder, which the mirror assembles into the release's
    // standard-install.yaml.
    let gateway_api = std::fs::read_dir(crds_dir().join("gateway.networking.k8s.io"))
        .unwrap()
        .count();
    let with_gateway_api = 22 + gateway_api;
    // (what, kaas.yaml's apiServerExposure, a tenant's controlPlane lines, the Gateway API
    // release fetched, the CRDs loaded: the example's 22, and the Gateway API ones)
    let cases: [(&str, &str, &str, bool, usize); 5] = [
        ("the Gateway rendered", EXPOSURE, "", true, with_gateway_api),
        (
            "every tenant behind the platform's Gateway",
            &without_class,
            "",
            true,
            with_gateway_api,
        ),
        (
            "one tenant behind the platform's Gateway",
            &default_service,
            "    exposure: gateway\n",
            true,
            with_gateway_api,
        ),
        ("a Gateway nobody uses", &default_service, "", false, 22),
        ("no apiServerExposure", "", "", false, 22),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (i, (what, exposure, tenant, fetched, crds)) in cases.into_iter().enumerate() {
        let (log, cache) = (
            dir.path().join(format!("requests-{i}")),
            dir.path().join(format!("cache-{i}")),
        );
        let mirror = ReleaseMirror::serve(&crds_dir(), Some(&log));
        let repo = example_with(exposure);
        repo.replace(
            "tenants/acme.yaml",
            "  controlPlane:\n    replicas: 2\n",
            &format!("  controlPlane:\n    replicas: 2\n{tenant}"),
        );
        rendered(&repo);
        let run = validate(&repo, &mirror.url(), &cache);
        assert_eq!(run.code, 0, "{what}: {}", run.stderr);
        assert!(
            run.stderr.contains(&format!("against {crds} CRDs")),
            "{what}: {}",
            run.stderr
        );
        let mut expected: Vec<String> = EXAMPLE_ASSETS.iter().map(|s| s.to_string()).collect();
        if fetched {
            expected.push(GATEWAY_API_ASSET.into());
        }
        expected.sort();
        assert_eq!(requests(&log), expected, "{what}");
    }
}

#[test]
fn a_rendered_gateway_that_breaks_the_fetched_gateway_crd_is_reported() {
    // The Gateway is checked against the CRD of the Gateway API release, not just found.
    let repo = example_with(EXPOSURE);
    rendered(&repo);
    repo.replace(
        "overlays/platform/gateway-tenant-apis.yaml",
        "mode: Passthrough",
        "mode: Bypass",
    );
    let cache = tempfile::tempdir().unwrap();
    let mirror = ReleaseMirror::serve(&crds_dir(), None);
    let run = validate(&repo, &mirror.url(), cache.path());
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "error: Gateway kaas-gateway/tenant-apis: `spec.listeners[0].tls.mode` is \"Bypass\", which is not allowed\n  --> overlays/platform/gateway-tenant-apis.yaml:"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn platform_settings_that_cannot_route_are_refused_at_their_line() {
    let cases: [(&str, &str, &str, &str); 4] = [
        (
            "      hostname: \"{tenant}.k8s.example.com\"\n",
            "      hostname: \"api.k8s.example.com\"\n",
            "kaas.yaml:46:17",
            "`api.k8s.example.com` does not contain `{tenant}` once",
        ),
        (
            "      className: envoy\n",
            "      className: envoy\n      listener: konnectivity-server\n",
            "kaas.yaml:48:17",
            "`konnectivity-server` is Konnectivity's listener",
        ),
        (
            "      className: envoy\n",
            "      className: envoy\n      port: 8132\n",
            "kaas.yaml:48:13",
            "the API server listener cannot use port 8132",
        ),
        (
            "    default: gateway\n    gateway:\n      name: tenant-apis\n      namespace: kaas-gateway\n      hostname: \"{tenant}.k8s.example.com\"\n      className: envoy\n",
            "    default: gateway\n",
            "kaas.yaml:42:14",
            "the default `gateway` has no `gateway` to use",
        ),
    ];
    for (from, to, location, message) in cases {
        let repo = example_with(EXPOSURE);
        repo.replace("kaas.yaml", from, to);
        repo.assert_render_refused(location, message);
    }
}

#[test]
fn tenant_settings_that_cannot_route_are_refused_at_their_line() {
    // Behind a Gateway the API server's port is the listener's.
    let repo = example_with(EXPOSURE);
    repo.replace(
        "tenants/acme.yaml",
        "  controlPlane:\n    replicas: 2\n",
        "  controlPlane:\n    replicas: 2\n    endpoint: {port: 443}\n",
    );
    repo.assert_render_refused(
        "tenants/acme.yaml:14:22",
        "port 443 differs from the Gateway listener's port 6443",
    );
    // A hostname must be a DNS name.
    let repo = example_with(EXPOSURE);
    repo.replace(
        "tenants/acme.yaml",
        "  controlPlane:\n    replicas: 2\n",
        "  controlPlane:\n    replicas: 2\n    hostname: 10.0.0.1\n",
    );
    repo.assert_render_refused("tenants/acme.yaml:14:15", "`10.0.0.1` is not a DNS name");
    // The Ingress is not configured.
    let repo = example_with(&EXPOSURE.replace(
        "    ingress:\n      className: haproxy\n      hostname: \"{tenant}.apis.example.com\"\n      annotations: {haproxy.org/ssl-passthrough: \"true\"}\n",
        "",
    ));
    repo.replace(
        "tenants/acme.yaml",
        "  controlPlane:\n    replicas: 2\n",
        "  controlPlane:\n    replicas: 2\n    exposure: ingress\n",
    );
    repo.assert_render_refused(
        "tenants/acme.yaml:14:15",
        "exposure `ingress` needs kaas.yaml `spec.apiServerExposure.ingress`",
    );
}

#[test]
fn konnectivity_behind_an_ingress_is_refused() {
    // Kamaji gives the agents the Service's address, a ClusterIP behind an Ingress.
    let repo = example_with(EXPOSURE);
    repo.replace(
        "tenants/globex.yaml",
        "  access:\n",
        "  controlPlane:\n    exposure: ingress\n  access:\n",
    );
    let err = repo.assert_render_refused(
        "tenants/globex.yaml:29:15",
        "Konnectivity cannot reach tenant `globex` behind an Ingress: Kamaji gives its agents the Service's cluster-internal address, not `globex.apis.example.com`",
    );
    assert!(err.contains("`addons: {konnectivity: false}`"), "{err}");
}

#[test]
fn moving_a_running_tenant_behind_the_gateway_is_refused_until_acknowledged() {
    let home = tempfile::tempdir().unwrap();
    let repo = crate::common::committed_example(home.path(), |_| {});
    // The platform switches its default: every running tenant would move.
    repo.replace(
        "kaas.yaml",
        "  dataStores: [default]\n",
        &format!("{EXPOSURE}  dataStores: [default]\n"),
    );
    let err = repo.assert_render_refused(
        "tenants/acme.yaml:12:3",
        "tenant `acme` would move from the endpoint `10.0.4.10` to `acme.k8s.example.com:6443`: its kubelets and every kubeconfig name the old one",
    );
    assert!(
        err.contains("add `acknowledge: [endpointMove]` to `spec.controlPlane` of `tenants/acme.yaml`"),
        "{err}"
    );
    assert!(
        err.contains("tenant `globex` would move from the endpoint `10.0.4.100`"),
        "{err}"
    );
    assert!(
        err.contains("tenant `initech` would move from the endpoint `10.0.4.101`"),
        "{err}"
    );

    // acme moves, keeping its VIP serving beside the route; the others stay on their Service.
    repo.replace(
        "tenants/acme.yaml",
        "  controlPlane:\n    replicas: 2\n",
        "  controlPlane:\n    replicas: 2\n    acknowledge: [endpointMove]\n",
    );
    for t in ["globex", "initech"] {
        let file = format!("tenants/{t}.yaml");
        let text = repo.read(&file);
        let text = if text.contains("  controlPlane:\n") {
            text.replace("  controlPlane:\n", "  controlPlane:\n    exposure: service\n")
        } else {
            text.replace("  access:\n", "  controlPlane:\n    exposure: service\n  access:\n")
        };
        repo.write(&file, &text);
    }
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // What git cannot carry is said: Kamaji re-issues neither the admin kubeconfig nor
    // cluster-info for a new endpoint.
    assert!(
        run.stderr.contains("warning: tenant `acme` moves from the endpoint `10.0.4.10` to `acme.k8s.example.com:6443`: once Flux applied it, finish the move on the cluster"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("kubectl -n acme delete secret acme-admin-kubeconfig"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("kubectl -n kube-public delete configmap cluster-info"),
        "{}",
        run.stderr
    );
    let acme = network(&repo, "acme");
    assert_eq!(acme["gateway"]["hostname"], "acme.k8s.example.com:6443");
    assert_eq!(
        acme["serviceType"], "LoadBalancer",
        "the VIP keeps serving during the move"
    );
    assert_eq!(acme["serviceAddress"], "10.0.4.10");
    assert_eq!(network(&repo, "globex")["serviceAddress"], "10.0.4.100");
}
