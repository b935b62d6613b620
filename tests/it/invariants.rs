//! What a user relies on in the rendered output, read back as data for every fleet the tests
//! build (the example repository, each provider fixture, the topology fixture): values flow from
//! the tenant file to every object that needs them, references resolve, Flux applies tenants
//! after the platform and prunes, images are the pinned references, autoscaled pools leave their
//! size to the autoscaler, and the control plane listens where the tenant (or `kaas.lock`) says.
//!
//! Expectations are computed from the input files (`tenants/*.yaml`, `kaas.yaml`, `kaas.lock`),
//! never from rendered text, so each test fails when the wiring it names breaks (each was seen
//! failing with the wiring broken on purpose in `src/render/`; see issue 19).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::OnceLock;

use serde_json::{Value, json};
use sha2::Digest;

use crate::common::Repo;

/// The defaults `spec.network` documents for a tenant that does not set it.
const DEFAULT_PODS: &str = "192.168.0.0/16";
const DEFAULT_SERVICES: &str = "10.96.0.0/12";
/// The API server port when `spec.controlPlane.endpoint.port` is not set.
const DEFAULT_PORT: u64 = 6443;
const MIN_SIZE: &str = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size";
const MAX_SIZE: &str = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size";
/// The folder of the platform's first Flux Kustomization (`kaas-kamaji`).
const KAMAJI_DIR: &str = "overlays/platform/kamaji";

/// One rendered YAML file.
struct File {
    /// Relative to the repository, e.g. `overlays/tenants/acme/cluster-acme.yaml`.
    path: String,
    /// Its folder, e.g. `overlays/tenants/acme`.
    dir: String,
    object: Value,
}

/// One fleet: its inputs and its rendered tree, read as data.
struct Fleet {
    name: String,
    repo: Repo,
    platform: Value,
    /// By name.
    tenants: BTreeMap<String, Value>,
    /// `kaas.lock` after the render (pins written by the test, VIPs by the render).
    lock: Value,
    files: Vec<File>,
}

impl Fleet {
    /// The objects of `dir`.
    fn objects_in<'a>(&'a self, dir: &'a str) -> impl Iterator<Item = &'a File> + 'a {
        self.files.iter().filter(move |f| f.dir == dir)
    }

    /// The one object of `kind` named `name` in `dir`.
    #[track_caller]
    fn object(&self, dir: &str, kind: &str, name: &str) -> &Value {
        let found: Vec<&Value> = self
            .files
            .iter()
            .filter(|f| f.dir == dir)
            .map(|f| &f.object)
            .filter(|o| o["kind"] == kind && o["metadata"]["name"] == name)
            .collect();
        assert_eq!(found.len(), 1, "{}: {kind} `{name}` in {dir}", self.name);
        found[0]
    }

    fn of_kind<'a>(&'a self, dir: &'a str, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.objects_in(dir)
            .map(|f| &f.object)
            .filter(move |o| o["kind"] == kind)
    }

    /// A topology tenant renders a `Cluster` with `spec.topology` and no pools of its own.
    fn is_topology(tenant: &Value) -> bool {
        !tenant["spec"]["topology"].is_null()
    }

    /// The VIP `kaas.lock` holds for `tenant`.
    fn locked_vip(&self, tenant: &str) -> Option<String> {
        self.lock["vips"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| v["tenant"] == tenant)
            .map(|v| v["address"].as_str().expect("an address").to_string())
    }

    /// The digest `kaas.lock` pins for `image:tag`.
    fn pin(&self, image: &str, tag: &str) -> Option<&str> {
        self.lock["images"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["image"] == image && p["tag"] == tag)
            .and_then(|p| p["digest"].as_str())
    }
}

fn tenant_dir(tenant: &str) -> String {
    format!("overlays/tenants/{tenant}")
}

fn yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn yaml_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            yaml_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "yaml") {
            out.push(p);
        }
    }
}

/// Every fleet, rendered once for all tests here: first unpinned, to learn every image reference
/// the output holds; then with a `kaas.lock` that pins each of them (made-up digests, one per
/// image) and `--locked`, so the output read by the tests is the pinned one.
fn fleets() -> &'static [Fleet] {
    static FLEETS: OnceLock<Vec<Fleet>> = OnceLock::new();
    FLEETS.get_or_init(|| {
        let mut out = vec![fleet("example", Repo::example())];
        for provider in ["hetzner", "kubevirt", "nutanix", "metal-stack", "packet", "aws"] {
            out.push(fleet(provider, Repo::fixture(&format!("providers/{provider}"))));
        }
        out.push(fleet("topology", Repo::fixture("topology")));
        // No topology tenant sets `spec.network`; one that does proves the tenant's CIDRs (not
        // only the defaults) reach a topology Cluster.
        let repo = Repo::fixture("topology");
        repo.replace(
            "tenants/beta.yaml",
            "  topology:\n",
            "  network: {pods: [10.244.0.0/16], services: [10.97.0.0/16]}\n  topology:\n",
        );
        out.push(fleet("topology-with-network", repo));
        out
    })
}

#[track_caller]
fn fleet(name: &str, repo: Repo) -> Fleet {
    let first = repo.run(&["render"]);
    assert_eq!(first.code, 0, "{name}: {}", first.stderr);
    // Pin every image reference of the unpinned output.
    let mut refs = BTreeSet::new();
    let mut files = Vec::new();
    yaml_files(&repo.path().join("overlays"), &mut files);
    yaml_files(&repo.path().join("flux"), &mut files);
    for f in &files {
        for r in image_refs(&yaml(f)) {
            assert_eq!(
                r.digest,
                None,
                "{name}: {} is pinned before kaas.lock pins it",
                f.display()
            );
            if !r.node_disk {
                refs.insert((r.repository, r.tag));
            }
        }
    }
    assert!(refs.len() >= 5, "{name}: only {refs:?} found");
    // Platform images this fleet does not render (an autoscaler without autoscaled pools) are
    // pinned too, as `pin` would, so that `render --locked` passes: the warning names them.
    let warning = first
        .stderr
        .lines()
        .find_map(|l| l.split_once("which is not reproducible: ").map(|(_, list)| list))
        .unwrap_or_else(|| panic!("{name}: no warning about unpinned images:\n{}", first.stderr));
    for reference in warning.split(", ") {
        let (image, tag) = reference.rsplit_once(':').expect("image:tag");
        refs.insert((image.to_string(), tag.to_string()));
    }
    let vips = if repo.path().join("kaas.lock").exists() {
        yaml(&repo.path().join("kaas.lock"))["vips"].clone()
    } else {
        Value::Null
    };
    let images: Vec<Value> = refs
        .iter()
        .map(|(image, tag)| {
            let digest = hex::encode(sha2::Sha256::digest(format!("{image}:{tag}")));
            json!({"image": image, "tag": tag, "digest": format!("sha256:{digest}")})
        })
        .collect();
    let mut lock = json!({"version": 1, "images": images});
    if !vips.is_null() {
        lock["vips"] = vips;
    }
    repo.write("kaas.lock", &serde_json::to_string_pretty(&lock).unwrap());
    let pinned = repo.run(&["render", "--locked"]);
    assert_eq!(pinned.code, 0, "{name}: {}", pinned.stderr);

    let platform = yaml(&repo.path().join("kaas.yaml"));
    let mut tenants = BTreeMap::new();
    let mut inputs = Vec::new();
    yaml_files(&repo.path().join("tenants"), &mut inputs);
    for t in inputs {
        let tenant = yaml(&t);
        let n = tenant["metadata"]["name"].as_str().unwrap().to_string();
        tenants.insert(n, tenant);
    }
    assert!(!tenants.is_empty(), "{name}: no tenants");
    let mut files = Vec::new();
    let mut paths = Vec::new();
    yaml_files(&repo.path().join("overlays"), &mut paths);
    yaml_files(&repo.path().join("flux"), &mut paths);
    paths.sort();
    for p in paths {
        let rel = p.strip_prefix(repo.path()).unwrap().to_string_lossy().into_owned();
        let dir = rel.rsplit_once('/').unwrap().0.to_string();
        files.push(File {
            path: rel,
            dir,
            object: yaml(&p),
        });
    }
    let lock = yaml(&repo.path().join("kaas.lock"));
    Fleet {
        name: name.to_string(),
        repo,
        platform,
        tenants,
        lock,
        files,
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// The tenant's pod and service CIDRs, the documented defaults where it sets none.
fn cidrs(tenant: &Value) -> (Vec<String>, Vec<String>) {
    let net = &tenant["spec"]["network"];
    let or = |v: &Value, default: &str| {
        if v.is_null() {
            vec![default.to_string()]
        } else {
            strings(v)
        }
    };
    (or(&net["pods"], DEFAULT_PODS), or(&net["services"], DEFAULT_SERVICES))
}

fn version(tenant: &Value) -> &str {
    tenant["spec"]["kubernetes"]["version"].as_str().expect("a version")
}

fn pools(tenant: &Value) -> &Vec<Value> {
    tenant["spec"]["workers"].as_array().expect("workers")
}

fn pool_name(pool: &Value) -> &str {
    pool["name"].as_str().unwrap()
}

// ---------------------------------------------------------------------------------------------
// Values flow from the tenant file.
// ---------------------------------------------------------------------------------------------

#[test]
fn pod_and_service_cidrs_flow_from_tenant_to_cluster_in_both_modes() {
    let mut explicit = 0;
    for fleet in fleets() {
        for (name, tenant) in &fleet.tenants {
            let (pods, services) = cidrs(tenant);
            explicit += usize::from(!tenant["spec"]["network"].is_null());
            let cluster = fleet.object(&tenant_dir(name), "Cluster", name);
            let net = &cluster["spec"]["clusterNetwork"];
            let at = format!("{}/{name}", fleet.name);
            assert_eq!(strings(&net["pods"]["cidrBlocks"]), pods, "{at}: pod CIDRs");
            assert_eq!(strings(&net["services"]["cidrBlocks"]), services, "{at}: service CIDRs");
        }
    }
    assert!(
        explicit >= 3,
        "too few tenants set spec.network for the test to mean anything"
    );
}

#[test]
fn kubernetes_version_flows_from_tenant_to_control_plane_and_every_pool() {
    for fleet in fleets() {
        for (name, tenant) in &fleet.tenants {
            let at = format!("{}/{name}", fleet.name);
            let dir = tenant_dir(name);
            let want = version(tenant);
            let pool_names: BTreeSet<&str> = pools(tenant).iter().map(pool_name).collect();
            if Fleet::is_topology(tenant) {
                let topology = &fleet.object(&dir, "Cluster", name)["spec"]["topology"];
                assert_eq!(topology["version"], want, "{at}: topology version");
                let mds: BTreeSet<&str> = topology["workers"]["machineDeployments"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|md| md["name"].as_str().unwrap())
                    .collect();
                assert_eq!(mds, pool_names, "{at}: one topology pool per tenant pool");
                continue;
            }
            let kcp = fleet.object(&dir, "KamajiControlPlane", name);
            assert_eq!(kcp["spec"]["version"], want, "{at}: control plane version");
            let mds: Vec<&Value> = fleet.of_kind(&dir, "MachineDeployment").collect();
            assert_eq!(mds.len(), pool_names.len(), "{at}: one MachineDeployment per pool");
            for pool in &pool_names {
                let md = fleet.object(&dir, "MachineDeployment", &format!("{name}-{pool}"));
                assert_eq!(md["spec"]["clusterName"], name.as_str(), "{at}/{pool}");
                assert_eq!(md["spec"]["template"]["spec"]["version"], want, "{at}/{pool}: version");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// References resolve.
// ---------------------------------------------------------------------------------------------

/// `(group, version)` of an `apiVersion`; the core group is `""`.
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// Reference fields naming objects the user (not kaas-gitops) creates: credentials Secrets and
/// the provider operator's variables Secret.
const USER_SUPPLIED: [&str; 5] = [
    "credentialsRef",
    "credentialRef",
    "hetznerSecretRef",
    "configSecret",
    "identityRef",
];

/// Every `*Ref` object under `v` (chart values and patches excepted): (field path, key, ref).
fn refs<'a>(v: &'a Value, path: &str, out: &mut Vec<(String, &'a str, &'a Value)>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let here = format!("{path}.{k}");
                // `.spec.kubeConfig`: an add-on's HelmRelease reads the tenant's kubeconfig
                // Secret, which the Kamaji provider writes (checked in `names_kaas_gitops_gives_resolve_to_what_it_renders`).
                if here == ".spec.values"
                    || here == ".metadata"
                    || here == ".spec.patches"
                    || here == ".spec.kubeConfig"
                {
                    continue;
                }
                if (k.ends_with("Ref") || USER_SUPPLIED.contains(&k.as_str())) && child.is_object() {
                    out.push((here.clone(), k.as_str(), child));
                }
                refs(child, &here, out);
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                refs(child, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// The kind a reference without `kind` points at, by its field.
fn implied_kind(key: &str) -> Option<&'static str> {
    match key {
        "classRef" => Some("ClusterClass"),
        "firewallDeploymentRef" => Some("MetalStackFirewallDeployment"),
        "firewallTemplateRef" => Some("MetalStackFirewallTemplate"),
        _ => None,
    }
}

#[test]
fn every_object_reference_resolves_to_an_object_in_the_same_overlay() {
    let mut resolved = BTreeMap::<&str, usize>::new();
    for fleet in fleets() {
        for file in &fleet.files {
            let o = &file.object;
            if o["apiVersion"]
                .as_str()
                .is_some_and(|a| a.starts_with("kustomize.config.k8s.io/"))
            {
                continue;
            }
            let mut found = Vec::new();
            refs(o, "", &mut found);
            for (path, key, r) in found {
                let at = format!("{}: {}: {path} = {r}", fleet.name, file.path);
                if USER_SUPPLIED.contains(&key) {
                    continue;
                }
                let kind = r["kind"]
                    .as_str()
                    .or(implied_kind(key))
                    .unwrap_or_else(|| panic!("{at}: no kind"));
                if file.dir == "flux" {
                    // The repository's own source, which Flux's bootstrap created.
                    let source = &fleet.platform["spec"]["flux"]["sourceRef"];
                    assert_eq!(r["kind"], source["kind"], "{at}");
                    assert_eq!(r["name"], source["name"], "{at}");
                    continue;
                }
                let name = r["name"].as_str().unwrap_or_else(|| panic!("{at}: no name"));
                if file.dir.ends_with("/access") && key == "roleRef" {
                    // Applied inside the tenant cluster: the ClusterRoles every API server makes
                    // (kubernetes `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`).
                    assert_eq!(kind, "ClusterRole", "{at}");
                    assert!(["cluster-admin", "view"].contains(&name), "{at}");
                    *resolved.entry(key).or_default() += 1;
                    continue;
                }
                if o["kind"] == "Kustomization" && key == "sourceRef" {
                    // A tenant's `<t>-access` Kustomization reads what the tenant's own reads:
                    // the repository's source, or the tenant's OCIRepository in flux/.
                    let source = &fleet.platform["spec"]["flux"]["sourceRef"];
                    let own = r["kind"] == source["kind"] && r["name"] == source["name"];
                    let oci = r["kind"] == "OCIRepository"
                        && fleet
                            .objects_in("flux")
                            .any(|t| t.object["kind"] == "OCIRepository" && t.object["metadata"]["name"] == name);
                    assert!(own || oci, "{at}");
                    *resolved.entry(key).or_default() += 1;
                    continue;
                }
                let namespace = r["namespace"].as_str().or(o["metadata"]["namespace"].as_str());
                // Charts and classes are the platform's; everything else is the overlay's own.
                let dir = if kind == "HelmRepository" {
                    KAMAJI_DIR
                } else if kind == "ClusterClass" {
                    "overlays/platform"
                } else {
                    file.dir.as_str()
                };
                let group = r["apiGroup"]
                    .as_str()
                    .map(str::to_string)
                    .or_else(|| r["apiVersion"].as_str().map(|a| group_of(a).to_string()));
                let targets: Vec<&File> = fleet
                    .objects_in(dir)
                    .filter(|t| {
                        let t = &t.object;
                        t["kind"] == kind
                            && t["metadata"]["name"] == name
                            && (namespace.is_none() || t["metadata"]["namespace"].as_str() == namespace)
                            && group
                                .as_deref()
                                .is_none_or(|g| group_of(t["apiVersion"].as_str().unwrap()) == g)
                            && r["apiVersion"].as_str().is_none_or(|a| t["apiVersion"] == a)
                    })
                    .collect();
                assert_eq!(targets.len(), 1, "{at}: resolves to {} objects in {dir}", targets.len());
                *resolved.entry(key).or_default() += 1;
            }
        }
    }
    // The references this test is about were all seen (a rename would otherwise pass quietly).
    for key in [
        "controlPlaneRef",
        "infrastructureRef",
        "configRef",
        "sourceRef",
        "roleRef",
        "classRef",
        "templateRef",
        "firewallDeploymentRef",
        "firewallTemplateRef",
    ] {
        assert!(
            resolved.get(key).is_some_and(|n| *n > 0),
            "no `{key}` resolved: {resolved:?}"
        );
    }
}

#[test]
fn helm_releases_install_from_a_helm_repository_of_the_kamaji_folder_with_the_platform_url() {
    for fleet in fleets() {
        for file in &fleet.files {
            let o = &file.object;
            if o["kind"] != "HelmRelease" {
                continue;
            }
            let at = format!("{}: {}", fleet.name, file.path);
            let source = &o["spec"]["chart"]["spec"]["sourceRef"];
            assert_eq!(source["kind"], "HelmRepository", "{at}");
            let repo = fleet.object(KAMAJI_DIR, "HelmRepository", source["name"].as_str().expect("a name"));
            assert_eq!(repo["metadata"]["namespace"], source["namespace"], "{at}");
            // The chart comes from the repository kaas.yaml names for it.
            let chart = o["spec"]["chart"]["spec"]["chart"].as_str().unwrap();
            let spec = &fleet.platform["spec"];
            // An add-on's chart: the catalog entry its release is named after, or the Nutanix
            // CCM's shorthand.
            let addon = o["spec"]["releaseName"].as_str().unwrap_or_default();
            let catalog = &spec["addons"]["catalog"][addon];
            let from = match chart {
                "kamaji" => &spec["kamaji"]["chart"],
                "kamaji-etcd" => &spec["kamajiEtcd"]["chart"],
                "cluster-autoscaler" => &spec["clusterAutoscaler"]["chart"],
                "nutanix-cloud-provider" if catalog.is_null() => &spec["cloudControllerManagers"]["nutanix"],
                _ if catalog["chart"] == chart => catalog,
                other => panic!("{at}: a chart this test does not know: {other}"),
            };
            let url = |u: &Value| u.as_str().unwrap().trim_end_matches('/').to_string();
            assert_eq!(url(&repo["spec"]["url"]), url(&from["repository"]), "{at}");
            assert_eq!(o["spec"]["chart"]["spec"]["version"], from["version"], "{at}");
        }
    }
}

/// Every `datastore.name` a HelmRelease creates (`datastore.enabled`), anywhere in its values.
fn data_stores(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            if let Some(ds) = m.get("datastore")
                && ds["enabled"] == true
            {
                out.insert(ds["name"].as_str().unwrap().to_string());
            }
            m.values().for_each(|c| data_stores(c, out));
        }
        Value::Array(a) => a.iter().for_each(|c| data_stores(c, out)),
        _ => {}
    }
}

#[test]
fn names_kaas_gitops_gives_resolve_to_what_it_renders() {
    for fleet in fleets() {
        let mut stores = BTreeSet::new();
        for f in &fleet.files {
            if f.object["kind"] == "HelmRelease" {
                data_stores(&f.object["spec"]["values"], &mut stores);
            }
        }
        let kamaji = fleet.object(KAMAJI_DIR, "HelmRelease", "kamaji");
        let default_store = kamaji["spec"]["values"]["defaultDatastoreName"].as_str().unwrap();
        assert!(
            stores.contains(default_store),
            "{}: {default_store} not in {stores:?}",
            fleet.name
        );
        for (name, tenant) in &fleet.tenants {
            let dir = tenant_dir(name);
            let at = format!("{}/{name}", fleet.name);
            let cluster = fleet.object(&dir, "Cluster", name);
            // The control plane's DataStore is one a chart creates.
            let store = if Fleet::is_topology(tenant) {
                let vars = cluster["spec"]["topology"]["variables"].as_array().unwrap();
                let v = vars
                    .iter()
                    .find(|v| v["name"] == "kaasDataStore")
                    .expect("kaasDataStore");
                v["value"].as_str().unwrap().to_string()
            } else {
                let kcp = fleet.object(&dir, "KamajiControlPlane", name);
                kcp["spec"]["dataStoreName"].as_str().unwrap().to_string()
            };
            assert!(stores.contains(&store), "{at}: DataStore {store} not in {stores:?}");
            let shared = tenant["spec"]["controlPlane"]["dataStore"]["shared"].as_str();
            assert_eq!(shared.is_some(), store == shared.unwrap_or_default(), "{at}: {store}");
            for o in fleet.objects_in(&dir).map(|f| &f.object) {
                let ns = o["metadata"]["namespace"].as_str();
                match o["kind"].as_str().unwrap() {
                    "MachineDeployment" => {
                        assert_eq!(o["spec"]["clusterName"], name.as_str(), "{at}");
                        assert_eq!(o["spec"]["template"]["spec"]["clusterName"], name.as_str(), "{at}");
                        let labels = &o["spec"]["template"]["metadata"]["labels"];
                        for (k, v) in o["spec"]["selector"]["matchLabels"].as_object().unwrap() {
                            assert_eq!(&labels[k], v, "{at}: the selector does not select its template");
                        }
                    }
                    "HelmRelease" if o["spec"]["chart"]["spec"]["chart"] == "cluster-autoscaler" => {
                        let values = &o["spec"]["values"];
                        assert_eq!(values["autoDiscovery"]["clusterName"], name.as_str(), "{at}");
                        assert_eq!(
                            values["autoDiscovery"]["namespace"], cluster["metadata"]["namespace"],
                            "{at}"
                        );
                        // Cluster API writes `<cluster>-kubeconfig`.
                        assert_eq!(
                            values["clusterAPIKubeconfigSecret"],
                            format!("{name}-kubeconfig"),
                            "{at}"
                        );
                    }
                    "HelmChartProxy" => panic!("{at}: add-ons are HelmReleases, never HelmChartProxies"),
                    // An add-on reaches the tenant cluster through Cluster API's kubeconfig
                    // Secret of this Cluster (`<cluster>-kubeconfig`, key `value`).
                    "HelmRelease" if o["spec"].get("kubeConfig").is_some() => {
                        assert_eq!(
                            o["spec"]["kubeConfig"]["secretRef"],
                            json!({"name": format!("{name}-kubeconfig"), "key": "value"}),
                            "{at}"
                        );
                        assert!(
                            o["spec"]["targetNamespace"].is_string(),
                            "{at}: installs into the tenant's namespace"
                        );
                        assert_eq!(o["spec"]["storageNamespace"], o["spec"]["targetNamespace"], "{at}");
                    }
                    "Role" => {
                        for rule in o["rules"].as_array().unwrap() {
                            let names = rule["resourceNames"].as_array().cloned().unwrap_or_default();
                            // Its Cluster only: never a Secret (`<cluster>-kubeconfig` is the
                            // tenant's unrevocable admin certificate; issue 41 item 5).
                            match rule["resources"][0].as_str().unwrap() {
                                "clusters" => assert_eq!(names, vec![json!(name)], "{at}"),
                                other => panic!("{at}: a Role rule for {other}"),
                            }
                            assert_eq!(rule["verbs"], json!(["get", "watch"]), "{at}");
                        }
                    }
                    "CronJob" => {
                        let pod = &o["spec"]["jobTemplate"]["spec"]["template"]["spec"];
                        let sa = pod["serviceAccountName"].as_str().unwrap();
                        let found = fleet
                            .of_kind(&dir, "ServiceAccount")
                            .any(|s| s["metadata"]["name"] == sa);
                        assert!(found, "{at}: no ServiceAccount {sa}");
                        for vol in pod["volumes"].as_array().unwrap() {
                            if let Some(claim) = vol["persistentVolumeClaim"]["claimName"].as_str() {
                                let pvc = fleet.object(&dir, "PersistentVolumeClaim", claim);
                                assert_eq!(pvc["metadata"]["namespace"].as_str(), ns, "{at}");
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Flux.
// ---------------------------------------------------------------------------------------------

#[test]
fn every_tenant_flux_kustomization_depends_on_the_platform_prunes_and_points_at_its_overlay() {
    for fleet in fleets() {
        let flux: Vec<&Value> = fleet.of_kind("flux", "Kustomization").collect();
        let toolkit: Vec<&&Value> = flux
            .iter()
            .filter(|k| group_of(k["apiVersion"].as_str().unwrap()) == "kustomize.toolkit.fluxcd.io")
            .collect();
        let platform: Vec<&&Value> = toolkit
            .iter()
            .filter(|k| k["spec"]["path"] == "./overlays/platform")
            .copied()
            .collect();
        assert_eq!(platform.len(), 1, "{}: one platform Kustomization", fleet.name);
        let platform = platform[0];
        assert_eq!(platform["spec"]["prune"], true, "{}", fleet.name);
        assert!(fleet.repo.path().join("overlays/platform/kustomization.yaml").is_file());
        let platform_name = &platform["metadata"]["name"];
        let mut seen = BTreeSet::new();
        let platform_paths = ["./overlays/platform", "./overlays/platform/kamaji"];
        for k in toolkit
            .iter()
            .filter(|k| !platform_paths.iter().any(|p| k["spec"]["path"] == *p))
        {
            let at = format!("{}: {}", fleet.name, k["metadata"]["name"]);
            let path = k["spec"]["path"].as_str().unwrap();
            let tenant = path
                .strip_prefix("./overlays/tenants/")
                .unwrap_or_else(|| panic!("{at}: path {path}"));
            assert!(fleet.tenants.contains_key(tenant), "{at}: no tenant {tenant}");
            assert!(seen.insert(tenant.to_string()), "{at}: two Kustomizations for {tenant}");
            assert!(
                fleet.repo.path().join(path).join("kustomization.yaml").is_file(),
                "{at}: {path} has no kustomization.yaml"
            );
            assert_eq!(k["spec"]["prune"], true, "{at}: prune");
            let depends = k["spec"]["dependsOn"].as_array().cloned().unwrap_or_default();
            assert!(
                depends.iter().any(|d| d["name"] == *platform_name
                    && (d["namespace"].is_null() || d["namespace"] == platform["metadata"]["namespace"])),
                "{at}: does not depend on {platform_name}: {depends:?}"
            );
            assert_eq!(k["metadata"]["namespace"], platform["metadata"]["namespace"], "{at}");
        }
        let tenants: BTreeSet<String> = fleet.tenants.keys().cloned().collect();
        assert_eq!(seen, tenants, "{}: one Flux Kustomization per tenant", fleet.name);
    }
}

/// Issue 41, item 4: the Kamaji control plane provider v0.20.0 watches TenantControlPlanes only
/// if Kamaji's CRDs are served when it starts (clastix/cluster-api-control-plane-provider-kamaji
/// `controllers/kamajicontrolplane_controller.go:420-422`), so Flux applies the kamaji release
/// (`kaas-kamaji`) and only once it is Ready the ControlPlaneProvider (`kaas-platform`).
#[test]
fn r41_the_kamaji_release_is_applied_and_ready_before_the_control_plane_provider() {
    for fleet in fleets() {
        let at = &fleet.name;
        let flux: Vec<&Value> = fleet.of_kind("flux", "Kustomization").collect();
        let at_path = |path: &str| -> &Value {
            let found: Vec<&&Value> = flux.iter().filter(|k| k["spec"]["path"] == path).collect();
            assert_eq!(found.len(), 1, "{at}: one Flux Kustomization of {path}");
            found[0]
        };
        let kamaji = at_path("./overlays/platform/kamaji");
        let platform = at_path("./overlays/platform");
        assert_eq!(kamaji["metadata"]["name"], "kaas-kamaji", "{at}");
        assert_eq!(
            kamaji["metadata"]["namespace"], platform["metadata"]["namespace"],
            "{at}"
        );
        // The order: the platform waits for kaas-kamaji, which waits for nothing.
        assert_eq!(
            platform["spec"]["dependsOn"],
            json!([{"name": "kaas-kamaji"}]),
            "{at}: kaas-platform must depend on kaas-kamaji"
        );
        assert!(
            kamaji["spec"]["dependsOn"].is_null(),
            "{at}: {}",
            kamaji["spec"]["dependsOn"]
        );
        assert_eq!(kamaji["spec"]["prune"], true, "{at}");
        // Each gates on its own half: kaas-kamaji on the release, kaas-platform on the provider.
        let ns = fleet.platform["spec"]["kamaji"]["namespace"].as_str().unwrap();
        let check = |api: &str, kind: &str| json!({"apiVersion": api, "kind": kind, "name": "kamaji", "namespace": ns});
        assert_eq!(
            kamaji["spec"]["healthChecks"],
            json!([check("helm.toolkit.fluxcd.io/v2", "HelmRelease")]),
            "{at}"
        );
        assert_eq!(
            platform["spec"]["healthChecks"],
            json!([check("operator.cluster.x-k8s.io/v1alpha2", "ControlPlaneProvider")]),
            "{at}"
        );
        assert_eq!(
            platform["spec"]["healthCheckExprs"][0]["kind"], "ControlPlaneProvider",
            "{at}"
        );
        // The release and what it installs from are in the kamaji folder; the provider is not.
        let release = fleet.object(KAMAJI_DIR, "HelmRelease", "kamaji");
        assert_eq!(release["metadata"]["namespace"], ns, "{at}");
        fleet.object(KAMAJI_DIR, "Namespace", ns);
        let source = &release["spec"]["chart"]["spec"]["sourceRef"];
        fleet.object(
            KAMAJI_DIR,
            source["kind"].as_str().unwrap(),
            source["name"].as_str().unwrap(),
        );
        assert_eq!(fleet.of_kind(KAMAJI_DIR, "ControlPlaneProvider").count(), 0, "{at}");
        fleet.object("overlays/platform", "ControlPlaneProvider", "kamaji");
        assert_eq!(fleet.of_kind("overlays/platform", "HelmRelease").count(), 0, "{at}");
        // No deadlock: nothing in the kamaji folder needs a CRD that kaas-platform installs
        // (only core kinds and Flux's, which Flux itself brings).
        for f in fleet.objects_in(KAMAJI_DIR) {
            let group = group_of(f.object["apiVersion"].as_str().unwrap());
            assert!(
                [
                    "",
                    "kustomize.config.k8s.io",
                    "source.toolkit.fluxcd.io",
                    "helm.toolkit.fluxcd.io"
                ]
                .contains(&group),
                "{at}: {} needs {group}",
                f.path
            );
        }
        // kaas-platform applies `overlays/platform` as its kustomization.yaml lists it: never
        // the kamaji folder, which kaas-kamaji applies (an object in both would be applied,
        // relabelled and pruned by two Kustomizations).
        let index = yaml(&fleet.repo.path().join("overlays/platform/kustomization.yaml"));
        let listed = strings(&index["resources"]);
        let kamaji_files: Vec<String> = fleet
            .objects_in(KAMAJI_DIR)
            .map(|f| f.path.rsplit_once('/').unwrap().1.to_string())
            .collect();
        assert!(kamaji_files.len() >= 4, "{at}: {kamaji_files:?}");
        for r in &listed {
            assert!(!r.trim_end_matches('/').ends_with("kamaji"), "{at}: lists {r}");
            assert!(
                !kamaji_files.contains(r) || r == "kustomization.yaml",
                "{at}: lists {r}"
            );
        }
        let identity = |f: &File| {
            let o = &f.object;
            let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
            (s(&o["kind"]), s(&o["metadata"]["namespace"]), s(&o["metadata"]["name"]))
        };
        let in_kamaji: BTreeSet<_> = fleet.objects_in(KAMAJI_DIR).map(identity).collect();
        for f in fleet
            .objects_in("overlays/platform")
            .filter(|f| f.object["kind"] != "Kustomization")
        {
            assert!(!in_kamaji.contains(&identity(f)), "{at}: {} is in both folders", f.path);
        }
    }
}

#[test]
fn every_kustomization_lists_exactly_the_files_of_its_folder() {
    for fleet in fleets() {
        let dirs: BTreeSet<&str> = fleet.files.iter().map(|f| f.dir.as_str()).collect();
        for dir in dirs {
            let k = fleet.repo.path().join(dir).join("kustomization.yaml");
            let k = yaml(&k);
            let listed: BTreeSet<String> = strings(&k["resources"])
                .into_iter()
                .filter(|r| r.ends_with(".yaml"))
                .collect();
            let files: BTreeSet<String> = fleet
                .objects_in(dir)
                .map(|f| f.path.rsplit_once('/').unwrap().1.to_string())
                .filter(|n| n != "kustomization.yaml")
                .collect();
            assert_eq!(listed, files, "{}: {dir}", fleet.name);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Images.
// ---------------------------------------------------------------------------------------------

/// One image reference in the output.
#[derive(Debug)]
struct ImageRef {
    repository: String,
    tag: String,
    digest: Option<String>,
    /// A KubeVirt VM's container disk: a node image the tenant names, not something the
    /// platform pins (`kaas.lock` pins the platform's images; see `Platform::images`).
    node_disk: bool,
    /// Where it is, for messages.
    at: String,
}

/// Splits `tag@sha256:...` into the tag and the digest.
fn split_digest(tag: &str) -> (String, Option<String>) {
    match tag.split_once('@') {
        Some((t, d)) => (t.to_string(), Some(d.to_string())),
        None => (tag.to_string(), None),
    }
}

/// Every image reference under `v`: `image:`/`imageUrl:` strings `repo:tag[@digest]`, and the
/// chart forms `{repository, tag}` and `{image, tag}`.
fn image_refs(v: &Value) -> Vec<ImageRef> {
    let mut out = Vec::new();
    walk_images(v, "", &mut out);
    out
}

fn walk_images(v: &Value, path: &str, out: &mut Vec<ImageRef>) {
    match v {
        Value::Object(m) => {
            let tag = m.get("tag").and_then(Value::as_str);
            let repo = m.get("repository").or_else(|| m.get("image")).and_then(Value::as_str);
            if let (Some(repo), Some(tag)) = (repo, tag) {
                let (tag, mut digest) = split_digest(tag);
                // Charts with a separate digest (Cilium's): `digest` with `useDigest: true`.
                if m.get("useDigest") == Some(&Value::Bool(true)) {
                    digest = m.get("digest").and_then(Value::as_str).map(str::to_string);
                }
                out.push(ImageRef {
                    repository: repo.to_string(),
                    tag,
                    digest,
                    node_disk: false,
                    at: path.to_string(),
                });
            }
            for (k, child) in m {
                let here = format!("{path}.{k}");
                if (k == "image" || k == "imageUrl")
                    && let Some(s) = child.as_str()
                    && tag.is_none()
                {
                    let (name, digest) = split_digest(s);
                    // A machine image name (metal-stack's `ubuntu-24.04`) has no tag.
                    let Some((repository, tag)) = name.rsplit_once(':').filter(|(r, _)| r.contains('/')) else {
                        continue;
                    };
                    out.push(ImageRef {
                        repository: repository.to_string(),
                        tag: tag.to_string(),
                        digest,
                        node_disk: path.ends_with(".containerDisk"),
                        at: here.clone(),
                    });
                }
                walk_images(child, &here, out);
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                walk_images(child, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn every_image_is_the_pinned_reference_when_kaas_lock_pins_it() {
    let mut checked = 0;
    for fleet in fleets() {
        assert!(
            fleet.pin("docker.io/clastix/kamaji", "26.8.2-edge").is_some(),
            "{}",
            fleet.name
        );
        for file in &fleet.files {
            for r in image_refs(&file.object) {
                let at = format!("{}: {}: {}", fleet.name, file.path, r.at);
                match fleet.pin(&r.repository, &r.tag) {
                    Some(pin) => {
                        assert_eq!(r.digest.as_deref(), Some(pin), "{at}: {}:{}", r.repository, r.tag);
                        checked += 1;
                    }
                    None => {
                        assert!(r.node_disk, "{at}: {}:{} has no pin", r.repository, r.tag);
                        assert_eq!(r.digest, None, "{at}: a digest kaas.lock does not hold");
                    }
                }
            }
        }
    }
    assert!(checked >= 50, "only {checked} pinned references checked");
}

// ---------------------------------------------------------------------------------------------
// Pool sizes.
// ---------------------------------------------------------------------------------------------

#[test]
fn autoscaled_pools_carry_no_replicas_and_both_autoscaler_bounds_fixed_pools_their_replicas() {
    let mut autoscaled = 0;
    for fleet in fleets() {
        for (name, tenant) in &fleet.tenants {
            let dir = tenant_dir(name);
            let mut any_autoscaled = false;
            for pool in pools(tenant) {
                let p = pool_name(pool);
                let at = format!("{}/{name}/{p}", fleet.name);
                // (replicas field, annotations) of the pool as rendered.
                let (replicas, annotations) = if Fleet::is_topology(tenant) {
                    let cluster = fleet.object(&dir, "Cluster", name);
                    let md = cluster["spec"]["topology"]["workers"]["machineDeployments"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|md| md["name"] == p)
                        .unwrap_or_else(|| panic!("{at}: not in the topology"))
                        .clone();
                    (md.get("replicas").cloned(), md["metadata"]["annotations"].clone())
                } else {
                    let md = fleet.object(&dir, "MachineDeployment", &format!("{name}-{p}"));
                    (
                        md["spec"].get("replicas").cloned(),
                        md["metadata"]["annotations"].clone(),
                    )
                };
                let a = |k: &str| annotations.get(k).cloned();
                match pool.get("autoscaling") {
                    Some(bounds) => {
                        any_autoscaled = true;
                        autoscaled += 1;
                        assert_eq!(replicas, None, "{at}: an autoscaled pool has replicas");
                        assert_eq!(a(MIN_SIZE), Some(json!(bounds["min"].to_string())), "{at}");
                        assert_eq!(a(MAX_SIZE), Some(json!(bounds["max"].to_string())), "{at}");
                    }
                    None => {
                        assert_eq!(replicas.as_ref(), Some(&pool["replicas"]), "{at}: replicas");
                        assert_eq!((a(MIN_SIZE), a(MAX_SIZE)), (None, None), "{at}");
                    }
                }
            }
            // Someone has to read the bounds: the tenant's autoscaler, watching this Cluster.
            let autoscaler = fleet
                .of_kind(&dir, "HelmRelease")
                .find(|h| h["spec"]["chart"]["spec"]["chart"] == "cluster-autoscaler");
            assert_eq!(
                autoscaler.is_some(),
                any_autoscaled,
                "{}/{name}: autoscaler",
                fleet.name
            );
        }
    }
    assert!(autoscaled >= 5, "only {autoscaled} autoscaled pools");
}

// ---------------------------------------------------------------------------------------------
// The control plane endpoint.
// ---------------------------------------------------------------------------------------------

#[test]
fn the_control_plane_endpoint_is_the_tenant_host_or_its_vip_from_kaas_lock() {
    let mut from_lock = 0;
    for fleet in fleets() {
        let mut hosts = BTreeSet::new();
        for (name, tenant) in &fleet.tenants {
            let at = format!("{}/{name}", fleet.name);
            let dir = tenant_dir(name);
            let endpoint = &tenant["spec"]["controlPlane"]["endpoint"];
            let locked = fleet.locked_vip(name);
            let host = match endpoint["host"].as_str() {
                Some(h) => {
                    assert_eq!(locked, None, "{at}: a VIP allocated for a tenant with a host");
                    Some(h.to_string())
                }
                None => {
                    from_lock += usize::from(locked.is_some());
                    locked
                }
            };
            let port = endpoint["port"].as_u64().unwrap_or(DEFAULT_PORT);
            if let Some(h) = &host {
                assert!(hosts.insert(h.clone()), "{at}: {h} is another tenant's endpoint too");
            }
            let cluster = fleet.object(&dir, "Cluster", name);
            assert_eq!(cluster["spec"]["clusterNetwork"]["apiServerPort"], port, "{at}: port");
            if Fleet::is_topology(tenant) {
                let vars = cluster["spec"]["topology"]["variables"].as_array().unwrap();
                let v = vars.iter().find(|v| v["name"] == "kaasEndpoint");
                match &host {
                    Some(h) => {
                        let v = v.expect("kaasEndpoint");
                        assert_eq!(v["value"]["host"].as_str(), Some(h.as_str()), "{at}: kaasEndpoint");
                        assert_eq!(v["value"]["port"], port, "{at}: kaasEndpoint");
                    }
                    // No address known at render time (a cloud load balancer chooses it).
                    None => assert!(v.is_none(), "{at}: kaasEndpoint without a host"),
                }
                continue;
            }
            let kcp = fleet.object(&dir, "KamajiControlPlane", name);
            assert_eq!(
                kcp["spec"]["network"]["serviceAddress"].as_str(),
                host.as_deref(),
                "{at}: the control plane's service address"
            );
            // Kamaji declares the address but no longer asks the Service for it
            // (clastix/kamaji 26.8.2-edge, internal/resources/k8s_service_resource.go): the load
            // balancer (MetalLB, the fixtures' default) gets it from its own annotation.
            let service_type = tenant["spec"]["controlPlane"]["service"]["type"]
                .as_str()
                .unwrap_or("LoadBalancer");
            if let (Some(h), "LoadBalancer") = (&host, service_type) {
                assert_eq!(
                    kcp["spec"]["network"]["serviceAnnotations"]["metallb.io/loadBalancerIPs"].as_str(),
                    Some(h.as_str()),
                    "{at}: the load balancer is told the VIP"
                );
            }
            // Every controlPlaneEndpoint rendered for the tenant (Cluster, infrastructure
            // cluster) is the same; without a host, the placeholder Kamaji replaces.
            for file in fleet.objects_in(&dir) {
                for ep in [
                    &file.object["spec"]["controlPlaneEndpoint"],
                    &file.object["spec"]["template"]["spec"]["controlPlaneEndpoint"],
                ] {
                    if ep.is_null() {
                        continue;
                    }
                    match &host {
                        Some(h) => {
                            assert_eq!(ep["host"], h.as_str(), "{at}: {}", file.path);
                            assert_eq!(ep["port"], port, "{at}: {}", file.path);
                        }
                        None => assert_eq!(ep["host"], "0.0.0.0", "{at}: {}", file.path),
                    }
                }
            }
        }
    }
    assert!(from_lock >= 5, "only {from_lock} VIPs from kaas.lock");
}
