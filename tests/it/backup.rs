//! Datastore backups as an operator meets them: the rendered CronJob (valid Kubernetes, builds
//! with kustomize), the snapshot script it carries run against a real etcd with client TLS, the
//! restore the runbook prints, and the validation of `spec.backups`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::common::{Repo, free_port, kustomize, run_ok};

/// A rendered YAML file as JSON (header comments are YAML comments).
fn yaml(text: &str) -> Value {
    serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn rendered_example() -> Repo {
    let repo = Repo::example();
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    repo
}

/// Round-trips `doc` through the Kubernetes API types: a misspelled or misplaced field is
/// dropped by them, a wrong type or a missing required field is refused.
fn assert_valid_kubernetes(doc: &Value) {
    fn roundtrip<T: serde::de::DeserializeOwned + serde::Serialize>(doc: &Value) -> Value {
        let typed: T = serde_json::from_value(doc.clone()).unwrap_or_else(|e| panic!("{e}: {doc:#}"));
        serde_json::to_value(typed).unwrap()
    }
    use k8s_openapi::api::{batch::v1::CronJob, core::v1::PersistentVolumeClaim, core::v1::ServiceAccount};
    let back = match doc["kind"].as_str() {
        Some("CronJob") => roundtrip::<CronJob>(doc),
        Some("PersistentVolumeClaim") => roundtrip::<PersistentVolumeClaim>(doc),
        Some("ServiceAccount") => roundtrip::<ServiceAccount>(doc),
        other => panic!("unexpected kind {other:?}"),
    };
    assert_eq!(&back, doc, "fields the Kubernetes schema does not know were dropped");
}

fn container<'a>(cronjob: &'a Value, name: &str) -> &'a Value {
    let spec = &cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    ["initContainers", "containers"]
        .iter()
        .filter_map(|k| spec[k].as_array())
        .flatten()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no container {name}"))
}

fn env_of(container: &Value) -> Vec<(String, String)> {
    container["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| Some((e["name"].as_str()?.to_string(), e["value"].as_str()?.to_string())))
        .collect()
}

#[test]
fn every_etcd_datastore_gets_a_valid_backup_cronjob() {
    let repo = rendered_example();
    // Dedicated etcds (acme, globex) and the platform's default datastore (initech's).
    for (dir, release) in [
        ("overlays/tenants/acme", "acme-etcd"),
        ("overlays/tenants/globex", "globex-etcd"),
        ("overlays/platform", "kamaji-etcd"),
    ] {
        for file in [
            format!("cronjob-{release}-backup.yaml"),
            format!("serviceaccount-{release}-backup.yaml"),
            format!("persistentvolumeclaim-{release}-backups.yaml"),
        ] {
            assert_valid_kubernetes(&yaml(&repo.read(&format!("{dir}/{file}"))));
        }
        let built = kustomize(&repo.path().join(dir));
        assert_eq!(built.code, 0, "kustomize {dir}: {}", built.stderr);
        assert!(
            built.stdout.contains(&format!("name: {release}-backup\n")),
            "{}",
            built.stdout
        );
    }
    assert!(
        !repo
            .path()
            .join("overlays/tenants/initech/cronjob-initech-etcd-backup.yaml")
            .exists()
    );

    let cj = yaml(&repo.read("overlays/tenants/acme/cronjob-acme-etcd-backup.yaml"));
    // The check itself catches a misplaced field.
    let mut typo = cj.clone();
    typo["spec"]["jobTemplate"]["spec"]["template"]["spec"]["concurencyPolicy"] = "Forbid".into();
    assert!(std::panic::catch_unwind(|| assert_valid_kubernetes(&typo)).is_err());
    let spec = &cj["spec"];
    assert_eq!(spec["concurrencyPolicy"], "Forbid");
    assert_eq!(spec["timeZone"], "Etc/UTC");
    // acme overrides the platform's schedule and retention.
    assert_eq!(spec["schedule"], "0 * * * *");
    assert!(spec["jobTemplate"]["spec"]["activeDeadlineSeconds"].as_u64().is_some());
    let snapshot = container(&cj, "snapshot");
    let env: std::collections::BTreeMap<_, _> = env_of(snapshot).into_iter().collect();
    assert_eq!(env["BACKUP_RETENTION"], "24");
    assert_eq!(env["BACKUP_NAME"], "acme-etcd");
    assert_eq!(
        env["BACKUP_ENDPOINTS"],
        "https://acme-etcd-0.acme-etcd.acme.svc.cluster.local:2379 \
         https://acme-etcd-1.acme-etcd.acme.svc.cluster.local:2379 \
         https://acme-etcd-2.acme-etcd.acme.svc.cluster.local:2379"
    );
    // The image is the platform's backup image (pinned through kaas.lock like the others).
    assert!(
        snapshot["image"]
            .as_str()
            .unwrap()
            .starts_with("quay.io/coreos/etcd:v3.5.6")
    );
    // The chart's self-signed client certificate and CA.
    let volumes = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["volumes"].to_string();
    assert!(volumes.contains("\"acme-etcd-root-client-certs\""), "{volumes}");
    assert!(volumes.contains("\"acme-etcd-certs\""), "{volumes}");
    assert!(volumes.contains("\"acme-etcd-backups\""), "{volumes}");

    let globex = yaml(&repo.read("overlays/tenants/globex/cronjob-globex-etcd-backup.yaml"));
    assert_eq!(globex["spec"]["schedule"], "0 */6 * * *");
    let platform = yaml(&repo.read("overlays/platform/cronjob-kamaji-etcd-backup.yaml"));
    assert_eq!(platform["metadata"]["namespace"], "kamaji-system");
}

#[test]
fn s3_destinations_take_credentials_from_the_named_secret() {
    let repo = Repo::example();
    repo.replace(
        "kaas.yaml",
        "pvc: {size: 10Gi}",
        "s3: {credentialsSecret: etcd-backup-s3}",
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let dir = "overlays/tenants/globex";
    assert!(
        !repo
            .path()
            .join(dir)
            .join("persistentvolumeclaim-globex-etcd-backups.yaml")
            .exists()
    );
    let cj = yaml(&repo.read(&format!("{dir}/cronjob-globex-etcd-backup.yaml")));
    assert_valid_kubernetes(&cj);
    let upload = container(&cj, "upload");
    let refs: Vec<(String, String)> = upload["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| {
            let r = &e["valueFrom"]["secretKeyRef"];
            Some((r["name"].as_str()?.to_string(), r["key"].as_str()?.to_string()))
        })
        .collect();
    for key in ["endpoint", "bucket", "accessKeyID", "secretAccessKey"] {
        assert!(refs.contains(&("etcd-backup-s3".into(), key.into())), "{refs:?}");
    }
    assert!(
        upload["image"]
            .as_str()
            .unwrap()
            .starts_with("docker.io/amazon/aws-cli:")
    );
    let built = kustomize(&repo.path().join(dir));
    assert_eq!(built.code, 0, "{}", built.stderr);
    // pin pins the uploader too: it is a platform image.
    assert!(run.stderr.contains("docker.io/amazon/aws-cli:2.17.0"), "{}", run.stderr);
}

#[test]
fn backups_are_off_unless_kaas_yaml_sets_them() {
    let repo = Repo::example();
    let platform = repo.read("kaas.yaml");
    let cut = platform.find("  backups:").unwrap();
    repo.write("kaas.yaml", &platform[..cut]);
    // acme's override now has nothing to override.
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("kaas.yaml sets no `spec.backups`"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("tenants/acme.yaml"), "{}", run.stderr);
    let acme = repo
        .read("tenants/acme.yaml")
        .replace(", backup: {schedule: \"0 * * * *\", retention: 24}", "");
    repo.write("tenants/acme.yaml", &acme);
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let files: Vec<String> = repo.snapshot().into_keys().filter(|p| p.contains("backup")).collect();
    assert!(files.is_empty(), "{files:?}");
}

#[test]
fn invalid_backup_settings_are_reported_together() {
    let repo = Repo::example();
    repo.replace("kaas.yaml", "schedule: \"0 */6 * * *\"", "schedule: \"every day\"");
    repo.replace("kaas.yaml", "retention: 7", "retention: 0");
    repo.replace(
        "kaas.yaml",
        "pvc: {size: 10Gi}",
        "pvc: {size: 10Gi}\n      s3: {credentialsSecret: x}",
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    for msg in [
        "`every day` is not a cron schedule",
        "a retention of 0 would delete every snapshot it takes",
        "give exactly one of `pvc` or `s3`",
    ] {
        assert!(run.stderr.contains(msg), "{msg}\n{}", run.stderr);
    }
}

#[test]
fn a_tenant_may_turn_its_backup_off() {
    let repo = Repo::example();
    let acme = repo.read("tenants/acme.yaml").replace(
        "backup: {schedule: \"0 * * * *\", retention: 24}",
        "backup: {enabled: false}",
    );
    repo.write("tenants/acme.yaml", &acme);
    assert_eq!(repo.run(&["render"]).code, 0);
    assert!(
        !repo
            .path()
            .join("overlays/tenants/acme/cronjob-acme-etcd-backup.yaml")
            .exists()
    );
    let plan = repo.run(&["backup", "restore-plan", "acme"]);
    assert_eq!(plan.code, 1);
    assert!(
        plan.stderr.contains("the etcd of `acme` is not backed up"),
        "{}",
        plan.stderr
    );
}

#[test]
fn deleting_a_backup_volume_is_said_before_and_when_it_happens() {
    let repo = rendered_example();
    let warning = "warning: deleting `overlays/tenants/globex/persistentvolumeclaim-globex-etcd-backups.yaml`: Flux will delete the PersistentVolumeClaim `globex-etcd-backups` and every etcd snapshot on it";
    // The first step of the deletion keeps the etcd and its backups.
    repo.decommission("globex");
    let first = repo.run(&["render"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(!first.stderr.contains("Flux will delete"), "{}", first.stderr);
    std::fs::remove_file(repo.path().join("tenants/globex.yaml")).unwrap();
    // In review: `diff` shows the deletion and says what it costs.
    let diff = repo.run(&["diff"]);
    assert_eq!(diff.code, 0, "{}", diff.stderr);
    assert!(diff.stderr.contains(warning), "{}", diff.stderr);
    assert!(diff.stderr.contains("\"Deleting a tenant\""), "{}", diff.stderr);
    let render = repo.run(&["render"]);
    assert_eq!(render.code, 0, "{}", render.stderr);
    assert!(render.stderr.contains(warning), "{}", render.stderr);
    assert_eq!(
        render
            .stderr
            .matches("Flux will delete the PersistentVolumeClaim")
            .count(),
        1
    );
    // Turning a tenant's backup off deletes its volume too; deleting anything else says nothing.
    repo.replace(
        "tenants/acme.yaml",
        "backup: {schedule: \"0 * * * *\", retention: 24}",
        "backup: {enabled: false}",
    );
    let render = repo.run(&["render"]);
    assert!(
        render.stderr.contains("PersistentVolumeClaim `acme-etcd-backups`"),
        "{}",
        render.stderr
    );
    std::fs::remove_file(repo.path().join("tenants/initech.yaml")).unwrap();
    let render = repo.run(&["render"]);
    assert_eq!(render.code, 0, "{}", render.stderr);
    assert!(render.stderr.contains("initech   deleted"), "{}", render.stderr);
    assert!(!render.stderr.contains("PersistentVolumeClaim"), "{}", render.stderr);
}

#[test]
fn restore_plan_stops_the_control_plane_restores_every_member_and_starts_again() {
    let repo = Repo::example();
    let run = repo.run(&["backup", "restore-plan", "acme"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let plan = run.stdout;
    let order = [
        "flux -n flux-system suspend kustomization kaas-tenant-acme",
        "kubectl -n acme patch cluster acme --type merge -p '{\"spec\":{\"paused\":true}}'",
        "\"replicas\":0",
        "kubectl -n acme scale statefulset acme-etcd --replicas=0",
        "name: acme-etcd-restore-0",
        "claimName: data-acme-etcd-0",
        "name: acme-etcd-restore-2",
        "kubectl -n acme scale statefulset acme-etcd --replicas=3",
        "\"replicas\":2",
        "flux -n flux-system resume kustomization kaas-tenant-acme",
    ];
    let mut at = 0;
    for step in order {
        let found = plan[at..]
            .find(step)
            .unwrap_or_else(|| panic!("`{step}` missing or out of order:\n{plan}"));
        at += found + step.len();
    }
    assert!(!plan.contains("acme-etcd-restore-3"), "{plan}");

    // initech uses the platform's default datastore: its restore is kamaji-etcd's, and it stops
    // every tenant on that datastore.
    let run = repo.run(&[
        "backup",
        "restore-plan",
        "initech",
        "--snapshot",
        "kamaji-etcd-20260101T000000Z.db",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("kubectl -n kamaji-system scale statefulset kamaji-etcd --replicas=0"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("/backups/kamaji-etcd-20260101T000000Z.db"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("kubectl -n initech patch cluster initech"),
        "{}",
        run.stdout
    );
    // The kamaji release (kaas-kamaji's) deploys the default datastore; kaas-platform applies
    // its backup CronJob: both held, and given back in the order Flux applies them.
    let order = [
        "flux -n flux-system suspend kustomization kaas-platform",
        "flux -n flux-system suspend kustomization kaas-kamaji",
        "flux -n kamaji-system suspend helmrelease kamaji",
        "flux -n kamaji-system resume helmrelease kamaji",
        "flux -n flux-system resume kustomization kaas-kamaji",
        "flux -n flux-system resume kustomization kaas-platform",
    ];
    let mut at = 0;
    for step in order {
        let found = run.stdout[at..]
            .find(step)
            .unwrap_or_else(|| panic!("`{step}` missing or out of order:\n{}", run.stdout));
        at += found + step.len();
    }

    let run = repo.run(&["backup", "restore-plan", "nobody"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("no tenant `nobody`"), "{}", run.stderr);
}

/// Every restore Pod a plan prints (the `kubectl apply -f - <<'EOF' ... EOF` documents).
fn pods(plan: &str) -> Vec<Value> {
    plan.split("<<'EOF'\n")
        .skip(1)
        .map(|rest| yaml(&rest[..rest.find("\nEOF\n").expect("its end")]))
        .collect()
}

fn init_container<'a>(pod: &'a Value, name: &str) -> &'a Value {
    pod["spec"]["initContainers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no init container {name}: {pod:#}"))
}

/// The flag values of an argument list: `--bump-revision 5` as ("--bump-revision", Some("5")),
/// a flag followed by another flag or nothing as (flag, None).
fn flags(args: &[String]) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        if a.starts_with("--") {
            let value = it.next_if(|v| !v.starts_with("--")).cloned();
            out.push((a.clone(), value));
        }
    }
    out
}

#[test]
fn the_restore_bumps_the_revision_and_marks_it_compacted_with_an_etcdutl_that_has_the_flags() {
    let repo = Repo::example();
    for (tenant, members) in [("acme", 3), ("initech", 3)] {
        let run = repo.run(&["backup", "restore-plan", tenant]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        // The why, as a comment line of step 4 (before the first Pod).
        let comment = "# etcdutl snapshot restore --bump-revision 1000000000 --mark-compacted: ";
        let line = run
            .stdout
            .lines()
            .find(|l| l.starts_with(comment))
            .unwrap_or_else(|| panic!("no line `{comment}`:\n{}", run.stdout));
        assert!(line.contains("relist instead of keeping a stale watch"), "{line}");
        assert!(run.stdout.find(line).unwrap() < run.stdout.find("<<'EOF'").unwrap());
        let pods = pods(&run.stdout);
        assert_eq!(pods.len(), members, "{}", run.stdout);
        for pod in &pods {
            let restore = init_container(pod, "restore");
            // The members' own image (spec.kamajiEtcd.image, v3.6.12): the backup image, v3.5.6,
            // has an etcdutl without the flags (added in v3.5.10).
            let image = restore["image"].as_str().unwrap();
            assert!(image.starts_with("quay.io/coreos/etcd:v3.6.12"), "{image}");
            assert_eq!(restore["command"], serde_json::json!(["/usr/local/bin/etcdutl"]));
            let args: Vec<String> = restore["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_string())
                .collect();
            assert_eq!(args[..3], ["snapshot", "restore", "$(DATA_DIR)/restore.db"]);
            let flags = flags(&args);
            let value = |f: &str| {
                flags
                    .iter()
                    .find(|(k, _)| k == f)
                    .unwrap_or_else(|| panic!("no {f} in {args:?}"))
                    .1
                    .clone()
            };
            assert_eq!(value("--bump-revision").as_deref(), Some("1000000000"));
            assert_eq!(value("--mark-compacted"), None, "a switch, it takes no value");
            assert_eq!(value("--data-dir").as_deref(), Some("$(DATA_DIR)/restore"));
            // Each $(VAR) the args use is in the container's environment (Kubernetes leaves an
            // unknown one as it is).
            let env: Vec<String> = env_of(restore).into_iter().map(|(k, _)| k).collect();
            for a in &args {
                if let Some(var) = a.strip_prefix("$(").and_then(|v| v.split(')').next()) {
                    assert!(env.contains(&var.to_string()), "{var} not in {env:?}");
                }
            }
            // The shell steps before and after run in the backup image, which has a shell.
            assert!(
                init_container(pod, "prepare")["image"]
                    .as_str()
                    .unwrap()
                    .starts_with("quay.io/coreos/etcd:v3.5.6")
            );
            assert_eq!(pod["spec"]["containers"][0]["name"], "swap");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// End to end with a real etcd
// ---------------------------------------------------------------------------------------------

fn require(tool: &str) -> PathBuf {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(tool))
        .find(|p| p.is_file());
    found.unwrap_or_else(|| {
        panic!("`{tool}` is not installed: install the Debian packages etcd-server and etcd-client (.ci/run does)")
    })
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate, made with openssl.
struct Pki {
    dir: PathBuf,
}

impl Pki {
    fn new(dir: &Path) -> Pki {
        let dir = dir.to_path_buf();
        let run = |args: &[&str]| {
            run_ok(Command::new("openssl").args(args).current_dir(&dir));
        };
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
        run(&[
            &["req", "-x509"][..],
            &key,
            &[
                "-keyout",
                "ca.key",
                "-out",
                "ca.crt",
                "-days",
                "2",
                "-subj",
                "/CN=test-etcd-ca",
            ],
        ]
        .concat());
        for (name, ext) in [
            (
                "server",
                "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n",
            ),
            ("client", "extendedKeyUsage=clientAuth\n"),
        ] {
            std::fs::write(dir.join(format!("{name}.ext")), ext).unwrap();
            run(&[
                &["req"][..],
                &key,
                &[
                    "-keyout",
                    &format!("{name}.key"),
                    "-out",
                    &format!("{name}.csr"),
                    "-subj",
                    &format!("/CN={name}"),
                ],
            ]
            .concat());
            run(&[
                "x509",
                "-req",
                "-in",
                &format!("{name}.csr"),
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                &format!("{name}.crt"),
                "-days",
                "2",
                "-extfile",
                &format!("{name}.ext"),
            ]);
        }
        Pki { dir }
    }

    fn path(&self, file: &str) -> String {
        self.dir.join(file).display().to_string()
    }
}

/// An etcd member on loopback with client certificate auth, killed on drop.
struct Etcd {
    child: Child,
    endpoint: String,
}

impl Etcd {
    fn start(pki: &Pki, name: &str, data_dir: &Path, peer_port: u16) -> Etcd {
        Etcd::start_with(&require("etcd"), pki, name, data_dir, peer_port)
    }

    fn start_with(etcd: &Path, pki: &Pki, name: &str, data_dir: &Path, peer_port: u16) -> Etcd {
        let client_port = free_port();
        let endpoint = format!("https://127.0.0.1:{client_port}");
        let peer = format!("http://127.0.0.1:{peer_port}");
        let log = std::fs::File::create(data_dir.with_extension("log")).unwrap();
        let child = Command::new(etcd)
            .args(["--name", name, "--data-dir"])
            .arg(data_dir)
            .args([
                &format!("--listen-client-urls={endpoint}"),
                &format!("--advertise-client-urls={endpoint}"),
                &format!("--listen-peer-urls={peer}"),
                &format!("--initial-advertise-peer-urls={peer}"),
                &format!("--initial-cluster={name}={peer}"),
                "--initial-cluster-token=kamaji",
                "--client-cert-auth",
                &format!("--trusted-ca-file={}", pki.path("ca.crt")),
                &format!("--cert-file={}", pki.path("server.crt")),
                &format!("--key-file={}", pki.path("server.key")),
            ])
            .env_clear()
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("etcd starts");
        let mut etcd = Etcd { child, endpoint };
        // Readiness, not timing: wait until the member answers a TLS request (bounded, so a
        // broken etcd fails the test with its log instead of hanging it). One that exited (its
        // port taken by another test's server, say) fails at once.
        for _ in 0..300 {
            if let Ok(Some(status)) = etcd.child.try_wait() {
                panic!(
                    "etcd exited with {status}:\n{}",
                    std::fs::read_to_string(data_dir.with_extension("log")).unwrap_or_default()
                );
            }
            let ok = etcd
                .ctl(pki)
                .args(["endpoint", "health"])
                .output()
                .unwrap()
                .status
                .success();
            if ok {
                return etcd;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        panic!(
            "etcd did not become healthy:\n{}",
            std::fs::read_to_string(data_dir.with_extension("log")).unwrap_or_default()
        );
    }

    fn ctl(&self, pki: &Pki) -> Command {
        let mut c = Command::new(require("etcdctl"));
        c.env("ETCDCTL_API", "3").args([
            &format!("--endpoints={}", self.endpoint),
            &format!("--cacert={}", pki.path("ca.crt")),
            &format!("--cert={}", pki.path("client.crt")),
            &format!("--key={}", pki.path("client.key")),
        ]);
        c
    }

    fn get(&self, pki: &Pki, key: &str) -> String {
        run_ok(self.ctl(pki).args(["get", key, "--print-value-only"]))
            .trim()
            .to_string()
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The first `kubectl apply -f - <<'EOF' ... EOF` document of a restore plan.
fn first_pod(plan: &str) -> Value {
    let start = plan.find("<<'EOF'\n").expect("a heredoc") + "<<'EOF'\n".len();
    let len = plan[start..].find("\nEOF\n").expect("its end");
    yaml(&plan[start..start + len])
}

#[test]
fn the_rendered_snapshot_script_backs_up_a_real_etcd_and_the_printed_restore_brings_it_back() {
    require("etcd");
    require("etcdctl");
    let tools = etcd36();
    let repo = rendered_example();
    let cronjob = yaml(&repo.read("overlays/tenants/acme/cronjob-acme-etcd-backup.yaml"));
    let snapshot = container(&cronjob, "snapshot");
    assert_eq!(snapshot["command"][0], "/bin/sh");
    assert_eq!(snapshot["command"][1], "-ec");
    let script = snapshot["command"][2].as_str().unwrap();

    let tmp = tempfile::tempdir().unwrap();
    let pki = Pki::new(tmp.path());
    let source = Etcd::start(&pki, "source", &tmp.path().join("source"), free_port());
    for i in 0..50 {
        run_ok(
            source
                .ctl(&pki)
                .args(["put", &format!("/registry/things/{i:02}"), &format!("value {i}")]),
        );
    }

    let backups = tmp.path().join("backups");
    std::fs::create_dir(&backups).unwrap();
    // Older snapshots than the retention (24 for acme) keeps, and a file that is not one.
    for day in 1..=28 {
        std::fs::write(backups.join(format!("acme-etcd-202001{day:02}T000000Z.db")), "old").unwrap();
    }
    std::fs::write(backups.join("notes.txt"), "keep me").unwrap();

    // The CronJob's environment, with the cluster addresses and mounted files swapped for the
    // local ones; a dead first endpoint checks that the script moves on to the next member.
    let mut env: Vec<(String, String)> = env_of(snapshot);
    for (k, v) in &mut env {
        *v = match k.as_str() {
            "BACKUP_ENDPOINTS" => format!("https://127.0.0.1:{} {}", free_port(), source.endpoint),
            "BACKUP_CACERT" => pki.path("ca.crt"),
            "BACKUP_CERT" => pki.path("client.crt"),
            "BACKUP_KEY" => pki.path("client.key"),
            "BACKUP_DIR" => backups.display().to_string(),
            _ => v.clone(),
        };
    }
    let out = run_ok(
        Command::new("/bin/sh")
            .args(["-ec", script])
            .envs(env.iter().map(|(k, v)| (k, v))),
    );
    assert!(out.contains("saved "), "{out}");

    let mut files: Vec<String> = std::fs::read_dir(&backups)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files.len(), 24 + 1, "{files:?}");
    assert_eq!(files.last().unwrap(), "notes.txt");
    let newest = &files[files.len() - 2];
    assert!(
        newest.starts_with("acme-etcd-20")
            && newest.ends_with("Z.db")
            && newest.len() == "acme-etcd-20260101T000000Z.db".len(),
        "{newest}"
    );
    assert!(!newest.starts_with("acme-etcd-2020"), "{newest}");
    // The 5 oldest of the 28 old ones were pruned.
    assert_eq!(files[0], "acme-etcd-20200106T000000Z.db");

    // A write after the snapshot must not come back.
    run_ok(
        source
            .ctl(&pki)
            .args(["put", "/registry/things/late", "after the snapshot"]),
    );

    // The restore the runbook prints, run on a fresh data dir.
    let plan = repo.run(&["backup", "restore-plan", "acme"]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let pod = first_pod(&plan.stdout);
    let data = tmp.path().join("restored");
    std::fs::create_dir(&data).unwrap();
    // etcd refuses a data dir others can read; a member's volume root is already like that.
    std::fs::set_permissions(&data, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let peer_port = free_port();
    let peer = format!("http://127.0.0.1:{peer_port}");
    let local_env = |c: &Value| -> Vec<(String, String)> {
        let mut env = env_of(c);
        for (k, v) in &mut env {
            *v = match k.as_str() {
                "BACKUP_DIR" => backups.display().to_string(),
                "MEMBER" => "restored".into(),
                "INITIAL_CLUSTER" => format!("restored={peer}"),
                "PEER_URL" => peer.clone(),
                "DATA_DIR" => data.display().to_string(),
                _ => v.clone(),
            };
        }
        env
    };
    // The Pod's three steps in its order: the shell picks and links the snapshot, etcdutl (built
    // from go.etcd.io/etcd/etcdutl/v3, as the image's) restores with its args, `$(VAR)` expanded
    // as Kubernetes does, the shell swaps the result in.
    let shell = |c: &Value| {
        assert_eq!(c["command"][0], "/bin/sh");
        run_ok(
            Command::new("/bin/sh")
                .args(["-ec", c["command"][2].as_str().unwrap()])
                .envs(local_env(c)),
        )
    };
    let out = shell(init_container(&pod, "prepare"));
    assert!(
        out.contains(&format!("restoring {}", backups.join(newest).display())),
        "{out}"
    );
    let restore = init_container(&pod, "restore");
    let env = local_env(restore);
    let args: Vec<String> = restore["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            env.iter().fold(a.as_str().unwrap().to_string(), |a, (k, v)| {
                a.replace(&format!("$({k})"), v)
            })
        })
        .collect();
    run_ok(Command::new(tools.join("etcdutl")).args(&args));
    let out = shell(&pod["spec"]["containers"][0]);
    assert!(
        out.contains(&format!("restored {}", backups.join(newest).display())),
        "{out}"
    );
    let before = revision(&source, &pki);
    drop(source);

    // The members' etcd (v3.6, as the image's) on the restored data dir.
    let restored = Etcd::start_with(&tools.join("etcd"), &pki, "restored", &data, peer_port);
    for i in [0, 17, 49] {
        assert_eq!(
            restored.get(&pki, &format!("/registry/things/{i:02}")),
            format!("value {i}")
        );
    }
    assert_eq!(restored.get(&pki, "/registry/things/late"), "");
    let keys = run_ok(
        restored
            .ctl(&pki)
            .args(["get", "/registry/things/", "--prefix", "--keys-only"]),
    );
    assert_eq!(keys.lines().filter(|l| !l.is_empty()).count(), 50, "{keys}");
    // The bump: the restored etcd is past every revision the old one had reached (the late
    // write's included), by at least REVISION_BUMP ...
    let after = revision(&restored, &pki);
    assert!(after >= before + 1_000_000_000 - 1, "before {before}, after {after}");
    // ... and a watch resumed from a revision a client saw before the restore is refused as
    // compacted, which makes an informer relist instead of waiting on a stale watch.
    let mut watch = restored.ctl(&pki);
    watch
        .args(["watch", "/registry/things/", "--prefix", &format!("--rev={before}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = watch.spawn().unwrap();
    // A watch that is not refused waits for ever: bounded, and killed (then the assertion says so).
    for _ in 0..50 {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let _ = child.kill();
    let watch = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&watch.stdout),
        String::from_utf8_lossy(&watch.stderr)
    );
    assert!(said.contains("required revision has been compacted"), "{said}");
}

/// The cluster's current revision, from the header of a read.
fn revision(etcd: &Etcd, pki: &Pki) -> u64 {
    let out = run_ok(etcd.ctl(pki).args(["get", "/", "--prefix", "--limit=1", "-w", "json"]));
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    v["header"]["revision"].as_u64().unwrap()
}

/// etcd and etcdutl v3.6 (`etcdutl snapshot restore --bump-revision` needs v3.5.10 or later;
/// Debian's etcd-client is 3.4), built from their Go modules by tests/e2e/build.sh (cached), or
/// from `KAAS_ETCD_BIN` when set.
fn etcd36() -> PathBuf {
    if let Some(dir) = std::env::var_os("KAAS_ETCD_BIN") {
        return PathBuf::from(dir);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/build.sh");
    let out = Command::new(&script)
        .env("E2E_PROGRAMS", "etcd etcdutl")
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", script.display()));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}
