//! Tenant access (docs/access.md): the OIDC issuers of kaas.yaml and the tenant files rendered
//! into each tenant API server as the tenant's Kubernetes version supports it, the groups'
//! ClusterRoleBindings inside the tenant cluster, what is refused, and `kaas-gitops kubeconfig`.

use std::ffi::OsStr;

use serde_json::{Value, json};

use base64::Engine as _;

use crate::common::{Repo, loopback_server, loopback_server_with, management_kubeconfig};

const ISSUER: &str = "https://login.example.com/realms/corp";

/// The example, rendered.
fn rendered() -> Repo {
    let repo = Repo::example();
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    repo
}

/// `overlays/tenants/<t>/kamajicontrolplane-<t>.yaml`.
fn control_plane(repo: &Repo, t: &str) -> Value {
    repo.object(&format!("overlays/tenants/{t}/kamajicontrolplane-{t}.yaml"))
}

/// The tenant's authentication ConfigMap (the one file named `configmap-<t>-authentication-*`).
fn config_map(repo: &Repo, t: &str) -> (String, Value) {
    let dir = format!("overlays/tenants/{t}");
    let rel = repo.file_starting(&dir, &format!("configmap-{t}-authentication-"));
    let object = repo.object(&rel);
    (rel, object)
}

/// The `AuthenticationConfiguration` in the tenant's ConfigMap.
fn authentication(repo: &Repo, t: &str) -> Value {
    let (_, cm) = config_map(repo, t);
    let text = cm["data"]["authentication-config.yaml"]
        .as_str()
        .expect("the configuration");
    serde_saphyr::from_str(text).expect("YAML")
}

fn api_server_args(kcp: &Value) -> Vec<String> {
    kcp["spec"]["apiServer"]["extraArgs"]
        .as_array()
        .map(|a| a.iter().map(|v| v.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// `file:line:col` of the first line of `rel` containing `needle`, at `needle`'s `at` offset.
fn location(repo: &Repo, rel: &str, needle: &str, at: &str) -> String {
    let text = repo.read(rel);
    let (i, line) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains(needle))
        .unwrap_or_else(|| panic!("no `{needle}` in {rel}"));
    let col = line.find(at).unwrap_or_else(|| panic!("no `{at}` in `{line}`")) + 1;
    format!("{rel}:{}:{col}", i + 1)
}

#[test]
fn the_api_server_gets_the_structured_configuration_from_1_30_and_the_flags_before() {
    let fresh = || {
        let repo = Repo::example();
        // Let the platform run 1.29 too; initech (no bindings) gets each version.
        repo.replace(
            "kaas.yaml",
            "supportedKubernetes: {min: v1.31.0",
            "supportedKubernetes: {min: v1.29.0",
        );
        repo
    };
    let mut repo = fresh();
    for (version, api) in [
        ("v1.34.1", Some("apiserver.config.k8s.io/v1")),
        ("v1.33.4", Some("apiserver.config.k8s.io/v1beta1")),
        ("v1.30.14", Some("apiserver.config.k8s.io/v1beta1")),
        ("v1.29.15", None),
    ] {
        // A fresh repository each time: no deployed version to move from.
        repo = fresh();
        let text = repo.read("tenants/initech.yaml");
        let current = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("version: "))
            .unwrap()
            .to_string();
        repo.replace(
            "tenants/initech.yaml",
            &format!("version: {current}"),
            &format!("version: {version}"),
        );
        let run = repo.run(&["render"]);
        assert_eq!(run.code, 0, "{version}: {}", run.stderr);
        let kcp = control_plane(&repo, "initech");
        let args = api_server_args(&kcp);
        match api {
            Some(api) => {
                let auth = authentication(&repo, "initech");
                assert_eq!(
                    auth,
                    json!({
                        "apiVersion": api,
                        "kind": "AuthenticationConfiguration",
                        "jwt": [{
                            "issuer": {"url": ISSUER, "audiences": ["kubernetes"]},
                            "claimMappings": {
                                "username": {"claim": "email", "prefix": "corp:"},
                                "groups": {"claim": "groups", "prefix": "corp:"},
                            },
                        }],
                    }),
                    "{version}"
                );
                assert!(
                    args.contains(
                        &"--authentication-config=/etc/kaas-gitops/authentication/authentication-config.yaml"
                            .to_string()
                    ),
                    "{version}: {args:?}"
                );
                assert!(!args.iter().any(|a| a.starts_with("--oidc-")), "{version}: {args:?}");
                // Mounted from the ConfigMap, by the KamajiControlPlane fields the provider
                // copies to the TenantControlPlane.
                let (_, cm) = config_map(&repo, "initech");
                assert_eq!(
                    kcp["spec"]["deployment"]["extraVolumes"],
                    json!([{"name": "kaas-gitops-authentication", "configMap": {"name": cm["metadata"]["name"]}}]),
                    "{version}"
                );
                assert_eq!(
                    kcp["spec"]["apiServer"]["extraVolumeMounts"],
                    json!([{"name": "kaas-gitops-authentication", "mountPath": "/etc/kaas-gitops/authentication", "readOnly": true}]),
                    "{version}"
                );
                assert_eq!(cm["metadata"]["namespace"], "initech");
            }
            None => {
                for flag in [
                    format!("--oidc-issuer-url={ISSUER}"),
                    "--oidc-client-id=kubernetes".into(),
                    "--oidc-username-claim=email".into(),
                    "--oidc-username-prefix=corp:".into(),
                    "--oidc-groups-claim=groups".into(),
                    "--oidc-groups-prefix=corp:".into(),
                ] {
                    assert!(args.contains(&flag), "{version}: no {flag} in {args:?}");
                }
                assert!(
                    !args.iter().any(|a| a.starts_with("--authentication-config")),
                    "{args:?}"
                );
                // No CA, so nothing to mount.
                assert!(kcp["spec"].get("deployment").is_none(), "{kcp}");
                let files: Vec<String> = std::fs::read_dir(repo.path().join("overlays/tenants/initech"))
                    .unwrap()
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect();
                assert!(!files.iter().any(|f| f.contains("authentication")), "{files:?}");
            }
        }
    }
    // Before 1.30 a second issuer cannot be expressed: refused at the version.
    repo.replace(
        "tenants/initech.yaml",
        "  workers:",
        "  access:\n    oidcIssuers:\n      - {name: partner, issuerURL: \"https://idp.partner.example\", clientID: initech}\n  workers:",
    );
    let at = location(&repo, "tenants/initech.yaml", "version: v1.29.15", "v1.29.15");
    repo.assert_render_refused(
        &at,
        "Kubernetes v1.29.15 trusts one OIDC issuer, and this tenant gets 2",
    );
}

#[test]
fn a_tenant_overrides_the_platform_issuer_by_name_and_adds_its_own() {
    let repo = Repo::example();
    let ca = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ29ycEV4YW1wbGVDQQ==\n-----END CERTIFICATE-----\n";
    let block = format!(
        "  access:\n    adminGroups: [acme-admins]\n    viewGroups: [acme-developers]\n    oidcIssuers:\n      - name: corp\n        clientID: acme-kubernetes\n        audiences: [acme-cli]\n      - name: partner\n        issuerURL: https://idp.partner.example/\n        clientID: acme\n        groups: {{claim: roles}}\n        certificateAuthority: |\n{}",
        ca.lines().map(|l| format!("          {l}\n")).collect::<String>()
    );
    repo.replace(
        "tenants/acme.yaml",
        "  access:\n    adminGroups: [acme-admins]\n    viewGroups: [acme-developers]\n",
        &block,
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let auth = authentication(&repo, "acme");
    assert_eq!(
        auth["jwt"],
        json!([
            {
                // The platform's issuer with the tenant's client and extra audience; the
                // claim mappings stay the platform's.
                "issuer": {"url": ISSUER, "audiences": ["acme-kubernetes", "acme-cli"], "audienceMatchPolicy": "MatchAny"},
                "claimMappings": {
                    "username": {"claim": "email", "prefix": "corp:"},
                    "groups": {"claim": "groups", "prefix": "corp:"},
                },
            },
            {
                // The tenant's own: the defaults are its name as the prefix and `sub`.
                "issuer": {"url": "https://idp.partner.example/", "audiences": ["acme"], "certificateAuthority": ca},
                "claimMappings": {
                    "username": {"claim": "sub", "prefix": "partner:"},
                    "groups": {"claim": "roles", "prefix": "partner:"},
                },
            },
        ])
    );
    // The other tenants keep the platform's issuer as it is.
    assert_eq!(
        authentication(&repo, "initech")["jwt"][0]["issuer"]["audiences"],
        json!(["kubernetes"])
    );
    // The groups are bound with each issuer's prefix.
    let admin = repo.object("overlays/tenants/acme/access/clusterrolebinding-kaas-gitops-admin-acme-admins.yaml");
    let names: Vec<&str> = admin["subjects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["corp:acme-admins", "partner:acme-admins"]);
}

#[test]
fn a_changed_configuration_is_a_new_configmap_name_the_control_plane_follows() {
    let repo = rendered();
    let (before, _) = config_map(&repo, "acme");
    // The same content is the same name whatever the tenant's other settings (initech).
    let (initech, _) = config_map(&repo, "initech");
    assert_eq!(
        before.rsplit('-').next(),
        initech.rsplit('-').next(),
        "acme and initech get the same configuration"
    );
    repo.replace(
        "kaas.yaml",
        "username: {claim: email, prefix: \"corp:\"}",
        "username: {claim: preferred_username, prefix: \"corp:\"}",
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (after, cm) = config_map(&repo, "acme");
    assert_ne!(before, after, "the content changed, the name did not");
    assert!(!repo.path().join(&before).exists(), "the old ConfigMap stays: {before}");
    let kcp = control_plane(&repo, "acme");
    assert_eq!(
        kcp["spec"]["deployment"]["extraVolumes"][0]["configMap"]["name"],
        cm["metadata"]["name"]
    );
    assert_eq!(
        authentication(&repo, "acme")["jwt"][0]["claimMappings"]["username"]["claim"],
        "preferred_username"
    );
    // Listed in the overlay's kustomization.yaml, so Flux applies it (and prunes the old one).
    let kustomization = repo.read("overlays/tenants/acme/kustomization.yaml");
    let file = after.rsplit('/').next().unwrap();
    assert!(kustomization.contains(file), "{kustomization}");
}

#[test]
fn a_client_secret_or_a_private_key_is_refused_at_its_field() {
    let repo = Repo::example();
    repo.replace(
        "kaas.yaml",
        "        clientID: kubernetes\n",
        "        clientID: kubernetes\n        clientSecret: Zm9vYmFyYmF6\n",
    );
    let at = location(&repo, "kaas.yaml", "clientSecret:", "Zm9v");
    let err = repo.assert_render_refused(&at, "`clientSecret` holds a literal secret");
    assert!(err.contains("a tenant API server needs no client secret"), "{err}");
    assert!(!err.contains("Zm9vYmFyYmF6\n  = "), "{err}");

    let repo = Repo::example();
    repo.replace(
        "kaas.yaml",
        "        clientID: kubernetes\n",
        "        clientID: kubernetes\n        certificateAuthority: |\n          -----BEGIN PRIVATE KEY-----\n          MC4CAQAwBQYDK2VwBCIEIA==\n          -----END PRIVATE KEY-----\n",
    );
    let at = location(&repo, "kaas.yaml", "BEGIN PRIVATE KEY", "-");
    repo.assert_render_refused(&at, "`certificateAuthority` holds a private key");
}

#[test]
fn a_bad_issuer_url_is_refused_at_its_line_and_column() {
    for (url, why) in [
        ("http://login.example.com/realms/corp", "is not an `https://` URL"),
        ("https://login.example.com/realms/corp?x=1", "has a query"),
        ("https://login.example.com/realms/corp#top", "has a fragment"),
        ("https://user@login.example.com/", "carries user information"),
        ("https:///realms/corp", "has no host"),
    ] {
        let repo = Repo::example();
        repo.replace(
            "kaas.yaml",
            &format!("issuerURL: {ISSUER}"),
            &format!("issuerURL: \"{url}\""),
        );
        let at = location(&repo, "kaas.yaml", "issuerURL:", "\"");
        let err = repo.assert_render_refused(&at, &format!("the issuer URL `{url}` {why}"));
        assert!(err.contains("spec.access.oidcIssuers[0].issuerURL"), "{err}");
    }
    // In a tenant file too, with every other problem of the run.
    let repo = Repo::example();
    repo.replace(
        "tenants/globex.yaml",
        "    adminGroups: [globex-platform]",
        "    adminGroups: [globex-platform, globex-platform]\n    oidcIssuers:\n      - {name: own, issuerURL: \"ftp://x\", clientID: g}",
    );
    let at = location(&repo, "tenants/globex.yaml", "ftp://", "\"ftp");
    let err = repo.assert_render_refused(&at, "the issuer URL `ftp://x` is not an `https://` URL");
    assert!(err.contains("`globex-platform` is listed twice"), "{err}");
}

#[test]
fn groups_become_bindings_inside_the_tenant_and_a_removed_group_is_pruned() {
    let repo = rendered();
    let dir = "overlays/tenants/acme/access";
    let admin = repo.object(&format!("{dir}/clusterrolebinding-kaas-gitops-admin-acme-admins.yaml"));
    assert_eq!(
        admin["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"})
    );
    assert_eq!(
        admin["subjects"],
        json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "corp:acme-admins"}])
    );
    let view = repo.object(&format!(
        "{dir}/clusterrolebinding-kaas-gitops-view-acme-developers.yaml"
    ));
    assert_eq!(view["roleRef"]["name"], "view");
    assert_eq!(view["subjects"][0]["name"], "corp:acme-developers");
    // Applied into the tenant cluster through the Kamaji provider's kubeconfig Secret, pruning.
    let k = repo.object("overlays/tenants/acme/kustomization-acme-access.yaml");
    assert_eq!(k["metadata"]["namespace"], "acme");
    assert_eq!(k["spec"]["path"], "./overlays/tenants/acme/access");
    assert_eq!(k["spec"]["prune"], true);
    assert_eq!(
        k["spec"]["kubeConfig"],
        json!({"secretRef": {"name": "acme-kubeconfig", "key": "value"}})
    );
    assert!(
        repo.read("overlays/tenants/acme/kustomization.yaml")
            .contains("kustomization-acme-access.yaml")
    );
    // A tenant without groups has neither (initech).
    assert!(!repo.path().join("overlays/tenants/initech/access").exists());
    assert!(
        !repo
            .path()
            .join("overlays/tenants/initech/kustomization-initech-access.yaml")
            .exists()
    );

    // A group that is no object name is cleaned and told apart by a hash.
    repo.replace(
        "tenants/acme.yaml",
        "viewGroups: [acme-developers]",
        "viewGroups: [\"Dev Team@Example.com\"]",
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        !repo
            .path()
            .join(format!(
                "{dir}/clusterrolebinding-kaas-gitops-view-acme-developers.yaml"
            ))
            .exists()
    );
    let view = repo.file_starting(dir, "clusterrolebinding-kaas-gitops-view-dev-team-example-com-");
    assert_eq!(repo.object(&view)["subjects"][0]["name"], "corp:Dev Team@Example.com");

    // Removing every group removes the folder and its Kustomization: Flux prunes what the
    // tenant's Kustomization applied, so the bindings go with it.
    repo.replace("tenants/acme.yaml", "  access:\n    adminGroups: [acme-admins]\n", "");
    repo.replace("tenants/acme.yaml", "    viewGroups: [\"Dev Team@Example.com\"]\n", "");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!repo.path().join(dir).exists());
    assert!(
        !repo
            .path()
            .join("overlays/tenants/acme/kustomization-acme-access.yaml")
            .exists()
    );
    assert!(!repo.read("overlays/tenants/acme/kustomization.yaml").contains("access"));
}

/// A tenant CA and a serving certificate it signed for the example's endpoint host 10.0.4.10
/// (openssl), in `dir`: (CA PEM file, certificate, key).
fn tenant_pki(dir: &std::path::Path, name: &str) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    let script = r#"set -e
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.crt -days 2 \
  -subj /CN=kubernetes -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv.key -out srv.csr -subj /CN=kube-apiserver 2>/dev/null
printf 'subjectAltName=IP:10.0.4.10\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' > ext
openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out srv.crt -days 2 -extfile ext 2>/dev/null
"#;
    let run = std::process::Command::new("bash")
        .args(["-c", script])
        .current_dir(&d)
        .output()
        .expect("bash runs");
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    (d.join("ca.crt"), d.join("srv.crt"), d.join("srv.key"))
}

/// `openssl x509 -noout -fingerprint -sha256` of a PEM file: `sha256 Fingerprint=AB:CD:...`.
fn openssl_fingerprint(pem: &std::path::Path) -> String {
    let out = std::process::Command::new("openssl")
        .args(["x509", "-noout", "-fingerprint", "-sha256", "-in"])
        .arg(pem)
        .output()
        .expect("openssl runs");
    let text = String::from_utf8(out.stdout).unwrap();
    text.trim().rsplit('=').next().unwrap().to_string()
}

/// A tenant API server on loopback over TLS (`cert`, `key`) whose `cluster-info` names `ca`.
fn tenant_api(ca: &std::path::Path, cert: &std::path::Path, key: &std::path::Path) -> (std::process::Child, u16) {
    let tls = format!("{}:{}", cert.display(), key.display());
    loopback_server_with(
        "tenant_api.py",
        &[ca.as_os_str().to_owned()],
        &[("LOOPBACK_TLS", OsStr::new(&tls))],
    )
}

#[test]
fn the_management_role_reads_the_cluster_only_and_binds_the_groups_as_the_management_cluster_names_them() {
    let repo = rendered();
    let role = repo.object("overlays/tenants/acme/role-acme-admin.yaml");
    assert_eq!(
        role["rules"],
        json!([{"apiGroups": ["cluster.x-k8s.io"], "resources": ["clusters"], "resourceNames": ["acme"], "verbs": ["get", "watch"]}])
    );
    let subjects = |repo: &Repo| repo.object("overlays/tenants/acme/rolebinding-acme-admin.yaml")["subjects"].clone();
    assert_eq!(
        subjects(&repo),
        json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "acme-admins"}])
    );
    repo.replace(
        "kaas.yaml",
        "    # managementGroupsPrefix: \"corp:\"",
        "    managementGroupsPrefix: \"corp:\"",
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        subjects(&repo),
        json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "corp:acme-admins"}])
    );
    repo.replace(
        "kaas.yaml",
        "managementGroupsPrefix: \"corp:\"",
        "managementGroupsPrefix: \"system:\"",
    );
    let at = location(&repo, "kaas.yaml", "managementGroupsPrefix:", "\"");
    let err = repo.assert_render_refused(&at, "the prefix `system:` starts with `system:`");
    assert!(err.contains("spec.access.managementGroupsPrefix"), "{err}");
}

#[test]
fn kubeconfig_takes_the_ca_from_the_tenant_checks_it_and_prints_an_exec_login_and_no_secret() {
    let repo = Repo::example();
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = tenant_pki(dir.path(), "tenant");
    let (_tenant, tenant_port) = tenant_api(&ca, &cert, &key);
    // The management cluster's Secret holds another CA: the kubeconfig must not take it.
    let (_server, port) = loopback_server("management_api.py", &["U0VDUkVU".into()]);
    let config = management_kubeconfig(dir.path(), port);
    let config = config.to_str().unwrap();
    let tunnel = format!("https://127.0.0.1:{tenant_port}");
    let ca_data = base64::engine::general_purpose::STANDARD.encode(std::fs::read(&ca).unwrap());
    let fingerprint = openssl_fingerprint(&ca);

    // The Cluster's endpoint (10.0.4.10) is not routed here: `--server` tunnels to it, and the
    // certificate is checked for the endpoint's host.
    let run = repo.run(&[
        "kubeconfig",
        "acme",
        "--kubeconfig",
        config,
        "--scope",
        "groups",
        "--server",
        &tunnel,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let kubeconfig: Value = serde_saphyr::from_str(&run.stdout).expect("YAML");
    assert_eq!(
        kubeconfig,
        json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "acme", "cluster": {"server": tunnel, "tls-server-name": "10.0.4.10", "certificate-authority-data": ca_data}}],
            "users": [{"name": "acme-corp", "user": {"exec": {
                "apiVersion": "client.authentication.k8s.io/v1",
                "command": "kubectl",
                "args": ["oidc-login", "get-token", format!("--oidc-issuer-url={ISSUER}"), "--oidc-client-id=kubernetes", "--oidc-extra-scope=groups"],
                "interactiveMode": "IfAvailable",
                "provideClusterInfo": false,
                "installHint": "kubectl oidc-login is the kubelogin plugin: `kubectl krew install oidc-login` (https://github.com/int128/kubelogin)",
            }}}],
            "contexts": [{"name": "acme", "context": {"cluster": "acme", "user": "acme-corp"}}],
            "current-context": "acme",
        })
    );
    assert!(!run.stdout.contains("client-key-data"), "{}", run.stdout);
    // Trusted on first use: said, with the fingerprint to compare (openssl's, without colons).
    let hex = fingerprint.replace(':', "").to_lowercase();
    assert!(
        run.stderr.starts_with(&format!(
            "warning: the CA of `acme` was taken from its API server on first use: sha256:{hex}"
        )),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("--ca-sha256"), "{}", run.stderr);

    // Pinned as openssl prints it: no warning.
    let pinned = ["--ca-sha256", fingerprint.as_str()];
    let run = repo.run(
        &[
            &["kubeconfig", "acme", "--kubeconfig", config, "--server", &tunnel][..],
            &pinned,
        ]
        .concat(),
    );
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{}", run.stderr);

    // Another pin: refused, nothing printed.
    let other = format!("sha256:{}", "0".repeat(64));
    let run = repo.run(&[
        "kubeconfig",
        "acme",
        "--kubeconfig",
        config,
        "--server",
        &tunnel,
        "--ca-sha256",
        &other,
    ]);
    assert_eq!((run.code, run.stdout.as_str()), (2, ""), "{}", run.stderr);
    assert!(
        run.stderr.starts_with(&format!(
            "error: the tenant API server's CA has the fingerprint sha256:{hex}, not {other}"
        )),
        "{}",
        run.stderr
    );
    let run = repo.run(&["kubeconfig", "acme", "--kubeconfig", config, "--ca-sha256", "abc"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("`--ca-sha256 abc` is not a SHA-256 fingerprint"),
        "{}",
        run.stderr
    );

    // A server whose certificate another CA signed, naming the tenant's CA in its cluster-info:
    // the second request, which trusts only that CA, fails.
    let (_, rogue_cert, rogue_key) = tenant_pki(dir.path(), "rogue");
    let (_rogue, rogue_port) = tenant_api(&ca, &rogue_cert, &rogue_key);
    let rogue = format!("https://127.0.0.1:{rogue_port}");
    let run = repo.run(&["kubeconfig", "acme", "--kubeconfig", config, "--server", &rogue]);
    assert_eq!((run.code, run.stdout.as_str()), (2, ""), "{}", run.stderr);
    assert!(
        run.stderr.starts_with(&format!(
            "error: the tenant API server at {rogue} does not prove itself with the CA its cluster-info names, for the name `10.0.4.10`"
        )),
        "{}",
        run.stderr
    );

    // --admin: the Secret's kubeconfig as it is, and a warning.
    let run = repo.run(&["kubeconfig", "acme", "--admin", "--kubeconfig", config]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("client-key-data: a2V5"), "{}", run.stdout);
    assert!(
        run.stderr.starts_with(
            "warning: this is the admin kubeconfig of `acme`: a client certificate with cluster-admin rights"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn kubeconfig_errors_are_one_message_each_with_its_exit_code() {
    let repo = Repo::example();
    let (_server, port) = loopback_server("management_api.py", &["Q0E=".into()]);
    let dir = tempfile::tempdir().unwrap();
    let config = management_kubeconfig(dir.path(), port);
    let config = config.to_str().unwrap();
    let run = |args: &[&str]| {
        let mut all = vec!["kubeconfig"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--kubeconfig", config]);
        repo.run_with(&all, &[("KUBECONFIG", OsStr::new(""))])
    };
    // The repository's: exit 1, before any request.
    let r = run(&["nope"]);
    assert_eq!((r.code, r.stdout.as_str()), (1, ""), "{}", r.stderr);
    assert!(
        r.stderr.starts_with("error: no tenant `nope` in tenants/"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("hint: tenants: acme, globex, initech"),
        "{}",
        r.stderr
    );
    let r = run(&["acme", "--issuer", "partner"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("tenant `acme` trusts no issuer `partner`"),
        "{}",
        r.stderr
    );
    // The cluster's: exit 2, as `status` gives them.
    let r = run(&["globex"]);
    assert_eq!((r.code, r.stdout.as_str()), (2, ""), "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with("error: the management cluster refused to let `lab` get Cluster globex/globex: "),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("the Role `globex-admin`"), "{}", r.stderr);
    let r = run(&["initech"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with("error: the Cluster `initech/initech` has no control plane endpoint yet"),
        "{}",
        r.stderr
    );
    // The tenant API server's: exit 2, with the way around it.
    let r = run(&["acme", "--server", "https://127.0.0.1:9"]);
    assert_eq!((r.code, r.stdout.as_str()), (2, ""), "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with("error: cannot reach the tenant API server at https://127.0.0.1:9: "),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("`--server URL`"), "{}", r.stderr);
    let unreachable = management_kubeconfig(dir.path(), 9);
    let r = repo.run(&["kubeconfig", "acme", "--kubeconfig", unreachable.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with("error: cannot reach the management cluster at http://127.0.0.1:9/"),
        "{}",
        r.stderr
    );
    // Without an issuer there is nothing to log in with: said, with the way out.
    repo.replace(
        "kaas.yaml",
        "  access:\n    # managementGroupsPrefix: \"corp:\"   # what the management cluster's authenticator puts before\n    #                                   # group names: Role <tenant>-admin is bound with it\n    oidcIssuers:\n      - name: corp\n        issuerURL: https://login.example.com/realms/corp\n        clientID: kubernetes\n        username: {claim: email, prefix: \"corp:\"}\n        groups: {claim: groups, prefix: \"corp:\"}\n",
        "",
    );
    let r = run(&["acme"]);
    assert_eq!((r.code, r.stdout.as_str()), (1, ""), "{}", r.stderr);
    assert!(
        r.stderr.starts_with("error: tenant `acme` trusts no OIDC issuer"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("`--admin`"), "{}", r.stderr);
}
