//! DataStores of each driver declared in kaas.yaml (`spec.dataStores`, `spec.tenantDataStores`):
//! the DataStore objects, the kine image and the control planes' `dataStoreOverrides` as
//! rendered, checked as data and against Kamaji's CRD and its CEL rules; what is refused, at its
//! line; and moves between drivers.

use serde_json::json;

use crate::common::{Repo, crds_dir};

/// kaas.yaml's `spec.dataStores` with one store of each driver, and the fleet's defaults.
const STORES: &str = r#"  dataStores:
  - default
  - name: pg-gold
    driver: PostgreSQL
    endpoints: ["pg-gold-rw.postgres-system.svc:5432"]
    secretsNamespace: postgres-system
    basicAuth: {secretName: pg-gold-superuser}
    tls: {certificateAuthority: {secretName: pg-gold-ca}}
  - name: nats-acme
    driver: NATS
    endpoints: ["nats.nats-system.svc:4222"]
    basicAuth: {secretName: nats-acme, usernameKey: user}
  - name: etcd-main
    driver: etcd
    endpoints: ["etcd-main-0.etcd-main.kamaji-system.svc:2379"]
    tls: {certificateAuthority: {secretName: fleet-etcd-ca}, clientCertificate: {secretName: etcd-main-root}}
  - name: events
    driver: etcd
    endpoints: ["events-etcd-0.events-etcd.kamaji-system.svc:2379"]
    tls: {certificateAuthority: {secretName: fleet-etcd-ca}, clientCertificate: {secretName: events-etcd-root}}
  tenantDataStores:
    default: etcd-main
    overrides: [{resource: /events, dataStore: events}]
"#;
fn fleet(stores: &str) -> Repo {
    let repo = Repo::example();
    repo.replace("kaas.yaml", "  dataStores: [default]\n", stores);
    repo
}

fn secret(name: &str, namespace: &str, key: &str) -> serde_json::Value {
    json!({"secretReference": {"name": name, "namespace": namespace, "keyPath": key}})
}

#[test]
fn declared_datastores_are_rendered_by_secret_reference_and_pass_kamajis_crd_rules() {
    let repo = fleet(STORES);
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);

    let pg = repo.object("overlays/platform/datastore-pg-gold.yaml");
    assert_eq!(
        pg["spec"],
        json!({
            "driver": "PostgreSQL",
            "endpoints": ["pg-gold-rw.postgres-system.svc:5432"],
            "basicAuth": {
                "username": secret("pg-gold-superuser", "postgres-system", "username"),
                "password": secret("pg-gold-superuser", "postgres-system", "password"),
            },
            // No CA key for a SQL server: only etcd's is used (to sign tenants' certificates).
            "tlsConfig": {"certificateAuthority": {"certificate": secret("pg-gold-ca", "postgres-system", "ca.crt")}},
        })
    );
    let nats = repo.object("overlays/platform/datastore-nats-acme.yaml");
    assert_eq!(
        nats["spec"]["basicAuth"]["username"],
        secret("nats-acme", "kamaji-system", "user")
    );
    let events = repo.object("overlays/platform/datastore-events.yaml");
    assert_eq!(
        events["spec"]["tlsConfig"]["certificateAuthority"]["privateKey"],
        secret("fleet-etcd-ca", "kamaji-system", "ca.key")
    );
    assert_eq!(
        events["spec"]["tlsConfig"]["clientCertificate"]["privateKey"],
        secret("events-etcd-root", "kamaji-system", "tls.key")
    );

    // The kine sidecar's image, pinned like every other, passed to Kamaji's manager.
    let kamaji = repo.object("overlays/platform/kamaji/helmrelease-kamaji.yaml");
    let args = kamaji["spec"]["values"]["extraArgs"]
        .as_array()
        .expect("extraArgs")
        .clone();
    assert_eq!(args.len(), 1, "{args:?}");
    assert!(
        args[0]
            .as_str()
            .unwrap()
            .starts_with("--kine-image=docker.io/rancher/kine:v0.11.10-amd64"),
        "{args:?}"
    );

    // globex names no DataStore: the fleet's default, its events on `events` (one CA for both),
    // and no etcd of its own; acme keeps its dedicated etcd and initech `default`, without
    // overrides (the fleet's apply to the tenants on its default DataStore).
    let globex = repo.object("overlays/tenants/globex/kamajicontrolplane-globex.yaml");
    assert_eq!(globex["spec"]["dataStoreName"], "etcd-main");
    assert_eq!(globex["spec"]["dataStoreSchema"], "kaas_globex");
    assert_eq!(
        globex["spec"]["dataStoreOverrides"],
        json!([{"resource": "/events", "dataStore": "events"}])
    );
    assert!(
        !repo
            .path()
            .join("overlays/tenants/globex/helmrelease-globex-etcd.yaml")
            .exists()
    );
    let acme = repo.object("overlays/tenants/acme/kamajicontrolplane-acme.yaml");
    assert_eq!(acme["spec"]["dataStoreName"], "acme-etcd");
    let initech = repo.object("overlays/tenants/initech/kamajicontrolplane-initech.yaml");
    for kcp in [&acme, &initech] {
        assert!(kcp["spec"].get("dataStoreOverrides").is_none(), "{kcp}");
    }

    let crds = crds_dir();
    let run = repo.run(&["validate", "--crds", crds.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Kamaji's own rule: a NATS or SQL DataStore needs basicAuth or tlsConfig.
    let path = "overlays/platform/datastore-nats-acme.yaml";
    let text = std::fs::read_to_string(repo.path().join(path)).unwrap();
    let cut = text.find("  basicAuth:").unwrap();
    repo.write(path, &text[..cut]);
    let run = repo.run(&["validate", "--crds", crds.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains(path), "{}", run.stderr);
    assert!(run.stderr.contains("either tlsConfig or basicAuth"), "{}", run.stderr);
}

#[test]
fn the_example_without_sql_or_nats_stores_passes_no_kine_image() {
    let repo = Repo::example();
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let kamaji = repo.object("overlays/platform/kamaji/helmrelease-kamaji.yaml");
    assert!(kamaji["spec"]["values"].get("extraArgs").is_none());
    assert!(!repo.path().join("overlays/platform/datastore-default.yaml").exists());
}

#[test]
fn datastore_mistakes_are_refused_together_each_at_its_line() {
    let repo = fleet(
        &STORES
            .replace(
                "[\"nats.nats-system.svc:4222\"]",
                "[\"nats://nats.nats-system.svc:4222\"]",
            )
            .replace(", clientCertificate: {secretName: events-etcd-root}", "")
            .replace("    default: etcd-main\n", "    default: nats-acme\n")
            .replace(
                "[{resource: /events, dataStore: events}]",
                "[{resource: widgets.example.com/widgets, dataStore: pg-gold}]",
            ),
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let expected = [
        (
            "`nats://nats.nats-system.svc:4222` has a scheme",
            "spec.dataStores[2].endpoints[0]",
        ),
        (
            "the etcd DataStore `events` needs `tls` with `clientCertificate`",
            "spec.dataStores[4]",
        ),
        (
            "`nats-acme` is a NATS DataStore, which serves one tenant only",
            "spec.tenantDataStores.default",
        ),
        (
            "`widgets.example.com/widgets` is not a resource kube-apiserver serves itself",
            "spec.tenantDataStores.overrides[0].resource",
        ),
        (
            "`pg-gold` is a PostgreSQL DataStore; Kamaji moves resources only to etcd ones",
            "spec.tenantDataStores.overrides[0].dataStore",
        ),
    ];
    for (message, field) in expected {
        assert!(run.stderr.contains(message), "missing `{message}`:\n{}", run.stderr);
        assert!(
            run.stderr.contains(&format!("field: `{field}`")),
            "missing {field}:\n{}",
            run.stderr
        );
    }
    assert!(run.stderr.contains("--> kaas.yaml:"), "{}", run.stderr);
    assert!(!repo.path().join("overlays/platform").exists(), "nothing is written");
}

#[test]
fn a_password_in_a_datastore_is_refused() {
    let repo = fleet(&STORES.replace(
        "basicAuth: {secretName: pg-gold-superuser}",
        "basicAuth: {secretName: pg-gold-superuser, password: hunter2}",
    ));
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("`password` holds a literal secret"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("field: `spec.dataStores[1].basicAuth.password`"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_nats_datastore_serves_one_tenant_and_the_second_is_refused_at_its_line() {
    let repo = fleet(STORES);
    repo.replace(
        "tenants/acme.yaml",
        "dedicated: {replicas: 3, storage: 10Gi, storageClass: fast, backup: {schedule: \"0 * * * *\", retention: 24}}",
        "shared: nats-acme",
    );
    repo.replace("tenants/initech.yaml", "shared: default", "shared: nats-acme");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("the NATS DataStore `nats-acme` already serves tenant `acme`"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("--> tenants/initech.yaml:"), "{}", run.stderr);
}

#[test]
fn a_deployed_tenant_moves_between_datastores_of_one_driver_only() {
    let repo = fleet(
        &STORES
            .replace("    default: etcd-main\n", "")
            .replace("    overrides: [{resource: /events, dataStore: events}]\n", ""),
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // initech runs on `default` (etcd). PostgreSQL: refused, nothing written.
    repo.replace("tenants/initech.yaml", "shared: default", "shared: pg-gold");
    let before = std::fs::read_to_string(
        repo.path()
            .join("overlays/tenants/initech/kamajicontrolplane-initech.yaml"),
    )
    .unwrap();
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "moving from the etcd DataStore `default` to the PostgreSQL DataStore `pg-gold`: Kamaji migrates only between DataStores of one driver"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("create a new tenant on the other DataStore"),
        "{}",
        run.stderr
    );
    let after = std::fs::read_to_string(
        repo.path()
            .join("overlays/tenants/initech/kamajicontrolplane-initech.yaml"),
    )
    .unwrap();
    assert_eq!(before, after);
    // Another etcd: Kamaji's migration, in one commit.
    repo.replace("tenants/initech.yaml", "shared: pg-gold", "shared: events");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let kcp = repo.object("overlays/tenants/initech/kamajicontrolplane-initech.yaml");
    assert_eq!(kcp["spec"]["dataStoreName"], "events");
}

#[test]
fn overrides_need_etcd_datastores_that_trust_one_ca() {
    // Kamaji gives the API server one etcd client certificate, and none on kine.
    let cases = [
        // acme has its own kamaji-etcd.
        (
            "tenants/acme.yaml",
            "backup: {schedule: \"0 * * * *\", retention: 24}}\n",
            "backup: {schedule: \"0 * * * *\", retention: 24}}\n      overrides: [{resource: /events, dataStore: events}]\n",
            "a tenant with its own kamaji-etcd cannot keep resources elsewhere",
        ),
        // initech on PostgreSQL.
        (
            "tenants/initech.yaml",
            "shared: default\n",
            "shared: pg-gold\n      overrides: [{resource: /events, dataStore: events}]\n",
            "the control plane's own DataStore `pg-gold` is PostgreSQL",
        ),
        // the events etcd under another CA than the tenants' etcd.
        (
            "kaas.yaml",
            "certificateAuthority: {secretName: fleet-etcd-ca}, clientCertificate: {secretName: events-etcd-root}",
            "certificateAuthority: {secretName: events-ca}, clientCertificate: {secretName: events-etcd-root}",
            "`events` and the control plane's own DataStore `etcd-main` do not name one CA Secret",
        ),
    ];
    for (file, from, to, message) in cases {
        let repo = fleet(STORES);
        repo.replace(file, from, to);
        let run = repo.run(&["render"]);
        assert_eq!(run.code, 1, "{file}: {}", run.stderr);
        assert!(
            run.stderr.contains(message),
            "{file}: missing `{message}`:\n{}",
            run.stderr
        );
        assert!(run.stderr.contains(&format!("--> {file}:")), "{}", run.stderr);
    }
}

#[test]
fn a_kine_that_makes_its_own_nats_bucket_is_refused_while_a_nats_datastore_exists() {
    let repo = fleet(STORES);
    repo.replace(
        "kaas.yaml",
        "    defaultDataStore: {replicas: 3}\n",
        "    defaultDataStore: {replicas: 3}\n    kineImage: {repository: docker.io/rancher/kine, tag: v0.17.5}\n",
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("kine `v0.17.5` cannot serve a NATS DataStore made by Kamaji"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("field: `spec.kamaji.kineImage`"), "{}", run.stderr);
    // Without the NATS DataStore the same kine is fine, and it is what Kamaji is told to run.
    let repo = fleet(STORES);
    repo.replace(
        "kaas.yaml",
        "    defaultDataStore: {replicas: 3}\n",
        "    defaultDataStore: {replicas: 3}\n    kineImage: {repository: docker.io/rancher/kine, tag: v0.17.5}\n",
    );
    let nats = "  - name: nats-acme\n    driver: NATS\n    endpoints: [\"nats.nats-system.svc:4222\"]\n    basicAuth: {secretName: nats-acme, usernameKey: user}\n";
    repo.replace("kaas.yaml", nats, "");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let kamaji = repo.object("overlays/platform/kamaji/helmrelease-kamaji.yaml");
    assert!(
        kamaji["spec"]["values"]["extraArgs"][0]
            .as_str()
            .unwrap()
            .starts_with("--kine-image=docker.io/rancher/kine:v0.17.5"),
        "{kamaji}"
    );
}

#[test]
fn a_rendered_datastore_keeps_its_driver() {
    let repo = fleet(STORES);
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let before = std::fs::read_to_string(repo.path().join("overlays/platform/datastore-pg-gold.yaml")).unwrap();
    repo.replace("kaas.yaml", "    driver: PostgreSQL\n", "    driver: MySQL\n");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "DataStore `pg-gold` was rendered with driver PostgreSQL: Kamaji never changes a DataStore's driver"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("field: `spec.dataStores[1].driver`"),
        "{}",
        run.stderr
    );
    let after = std::fs::read_to_string(repo.path().join("overlays/platform/datastore-pg-gold.yaml")).unwrap();
    assert_eq!(before, after, "nothing is written");
    // Under a new name it is a new DataStore.
    repo.replace("kaas.yaml", "  - name: pg-gold\n", "  - name: mysql-gold\n");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        repo.object("overlays/platform/datastore-mysql-gold.yaml")["spec"]["driver"],
        "MySQL"
    );
    assert!(!repo.path().join("overlays/platform/datastore-pg-gold.yaml").exists());
}
