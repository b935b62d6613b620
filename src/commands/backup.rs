//! `backup restore-plan TENANT`: the exact commands that restore the etcd behind one tenant's
//! control plane from a snapshot the backup CronJob took (docs/backup.md explains each step).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;

use crate::cli::{BackupArgs, BackupCommand, Format, RestorePlanArgs, SelectArgs};
use crate::commands::render::report_invalid;
use crate::commands::{ExitStatus, Printer, inputs, pipeline};
use crate::diagnostics::Diagnostic;
use crate::model::{BackupDestination, Backups, DataStore, Model, Tenant};
use crate::render::backup::{CLUSTER_TOKEN, DATA_DIR, DEFAULT_DATASTORE, RESTORE_SCRIPT, Target};
use crate::render::images::Images;
use crate::render::node::Node;
use crate::render::{platform_kustomization_name, tenant_kustomization_name};
use crate::{map, seq};

/// Runs `backup ...`.
pub fn run(printer: &Printer, repo: &Path, args: &BackupArgs) -> Result<ExitStatus> {
    match &args.command {
        BackupCommand::RestorePlan(a) => restore_plan(printer, repo, a),
    }
}

fn restore_plan(printer: &Printer, repo: &Path, args: &RestorePlanArgs) -> Result<ExitStatus> {
    let rendered = match inputs::read(repo)? {
        Err(d) => return Ok(report_invalid(printer, Format::Human, d)),
        Ok(inputs) => match pipeline::run(&inputs, &SelectArgs::default()) {
            Err(d) => return Ok(report_invalid(printer, Format::Human, d)),
            Ok(r) => r,
        },
    };
    match plan(
        &rendered.model,
        &rendered.images,
        &args.tenant,
        args.snapshot.as_deref(),
    ) {
        Ok(text) => {
            printer.data(&text);
            Ok(ExitStatus::Success)
        }
        Err(d) => Ok(report_invalid(printer, Format::Human, vec![*d])),
    }
}

/// The restore commands for the datastore of `tenant`, as a shell script. `snapshot` is a file
/// name (`acme-etcd-20260101T000000Z.db`); `None` restores the newest.
pub fn plan(model: &Model, images: &Images, tenant: &str, snapshot: Option<&str>) -> Result<String, Box<Diagnostic>> {
    let Some(t) = model.tenants.iter().find(|t| t.name == tenant) else {
        return Err(Box::new(Diagnostic::error(format!("no tenant `{tenant}`")).with_hint(
            "pass the stem of a file in tenants/, e.g. `acme` for tenants/acme.yaml",
        )));
    };
    let Some(backups) = &model.platform.backups else {
        return Err(Box::new(
            Diagnostic::error("kaas.yaml sets no `spec.backups`: there are no snapshots to restore")
                .with_hint("turn backups on in kaas.yaml (see docs/backup.md)"),
        ));
    };
    if let Some(s) = snapshot
        && (s.contains('/') || !s.ends_with(".db"))
    {
        return Err(Box::new(
            Diagnostic::error(format!("`{s}` is not a snapshot file name"))
                .with_hint("give the file name the CronJob wrote, e.g. `acme-etcd-20260101T000000Z.db`"),
        ));
    }
    let (target, affected): (Target, Vec<&Tenant>) = match &t.datastore {
        DataStore::Dedicated { .. } => match Target::of_tenant(t) {
            Some(target) => (target, vec![t]),
            None => {
                return Err(Box::new(
                    Diagnostic::error(format!("the etcd of `{tenant}` is not backed up"))
                        .with_hint("its tenant file sets `dataStore.dedicated.backup.enabled: false`"),
                ));
            }
        },
        DataStore::Shared(name) if name == DEFAULT_DATASTORE => (
            Target::of_platform(&model.platform).expect("backups are on"),
            model
                .tenants
                .iter()
                .filter(|o| matches!(&o.datastore, DataStore::Shared(n) if n == name))
                .collect(),
        ),
        DataStore::Shared(name) => {
            return Err(Box::new(
                Diagnostic::error(format!(
                    "`{tenant}` uses the shared DataStore `{name}`, which kaas-gitops neither creates nor backs up"
                ))
                .with_hint("restore it with the tools of whoever runs that etcd"),
            ));
        }
    };
    Ok(script(model, backups, images, &target, &affected, snapshot))
}

fn script(
    model: &Model,
    backups: &Backups,
    images: &Images,
    target: &Target,
    affected: &[&Tenant],
    snapshot: Option<&str>,
) -> String {
    let ns = &target.namespace;
    let release = &target.release;
    let flux_ns = &model.platform.source_namespace;
    let names: Vec<&str> = affected.iter().map(|t| t.name.as_str()).collect();
    let mut s = String::new();
    let w = &mut s;
    let _ = writeln!(
        w,
        "# Restore of DataStore `{}`: etcd release `{release}` in namespace `{ns}`.",
        target.datastore
    );
    let _ = writeln!(w, "# Rolls back the control plane state of: {}.", names.join(", "));
    let _ = writeln!(
        w,
        "# Snapshot: {}.",
        snapshot.map_or_else(|| "the newest one".to_string(), |s| format!("`{s}`"))
    );
    let _ = writeln!(
        w,
        "# Run it step by step (see docs/backup.md); every step waits for the one before."
    );
    let _ = writeln!(w, "set -eu");
    let _ = writeln!(w, "\n# 1. Keep Flux from undoing what follows.");
    if release == crate::render::backup::DEFAULT_RELEASE {
        let _ = writeln!(
            w,
            "flux -n {flux_ns} suspend kustomization {}",
            platform_kustomization_name()
        );
        let _ = writeln!(w, "flux -n {ns} suspend helmrelease kamaji");
    }
    for t in affected {
        let _ = writeln!(
            w,
            "flux -n {flux_ns} suspend kustomization {}",
            tenant_kustomization_name(&t.name)
        );
    }
    if release != crate::render::backup::DEFAULT_RELEASE {
        let _ = writeln!(w, "flux -n {ns} suspend helmrelease {release}");
    }
    let _ = writeln!(
        w,
        "\n# 2. Pause Cluster API and stop each control plane, so nothing writes to etcd."
    );
    for t in affected {
        let n = &t.name;
        let _ = writeln!(
            w,
            "kubectl -n {n} patch cluster {n} --type merge -p '{{\"spec\":{{\"paused\":true}}}}'"
        );
        let _ = writeln!(
            w,
            "kubectl -n {n} patch tenantcontrolplane {n} --type merge -p '{{\"spec\":{{\"controlPlane\":{{\"deployment\":{{\"replicas\":0}}}}}}}}'"
        );
        // Not `kubectl wait -l`: it fails when nothing matches, as it does once the pods are gone.
        let _ = writeln!(
            w,
            "while kubectl -n {n} get pods -l kamaji.clastix.io/name={n} -o name | grep -q .; do sleep 5; done"
        );
    }
    let _ = writeln!(w, "\n# 3. Stop etcd and the backup CronJob (the volumes must be free).");
    let _ = writeln!(
        w,
        "kubectl -n {ns} patch cronjob {} -p '{{\"spec\":{{\"suspend\":true}}}}'",
        target.cronjob_name()
    );
    let _ = writeln!(w, "kubectl -n {ns} scale statefulset {release} --replicas=0");
    let pods: Vec<String> = (0..target.replicas)
        .map(|i| format!("pod/{}", target.member(i)))
        .collect();
    let _ = writeln!(w, "kubectl -n {ns} wait --for=delete {} --timeout=5m", pods.join(" "));
    let _ = writeln!(
        w,
        "\n# 4. Restore every member's volume from the snapshot, one Pod per member."
    );
    for i in 0..target.replicas {
        let pod = format!("{release}-restore-{i}");
        let doc = crate::render::yaml::document("", &restore_pod(backups, images, target, i, snapshot));
        let doc = String::from_utf8_lossy(&doc);
        // Without the generated-file header: this Pod is applied by hand, never committed.
        let body = doc.split_once('\n').map_or(&*doc, |(_, rest)| rest);
        let _ = writeln!(w, "kubectl apply -f - <<'EOF'\n{body}EOF");
        let _ = writeln!(
            w,
            "kubectl -n {ns} wait --for=jsonpath='{{.status.phase}}'=Succeeded pod/{pod} --timeout=10m"
        );
        let _ = writeln!(w, "kubectl -n {ns} logs pod/{pod} --all-containers");
        let _ = writeln!(w, "kubectl -n {ns} delete pod/{pod}");
    }
    let _ = writeln!(w, "\n# 5. Start etcd on the restored volumes.");
    let _ = writeln!(
        w,
        "kubectl -n {ns} scale statefulset {release} --replicas={}",
        target.replicas
    );
    let _ = writeln!(w, "kubectl -n {ns} rollout status statefulset/{release} --timeout=10m");
    let _ = writeln!(
        w,
        "\n# 6. Start the control planes again and hand everything back to Flux."
    );
    for t in affected {
        let n = &t.name;
        let _ = writeln!(
            w,
            "kubectl -n {n} patch tenantcontrolplane {n} --type merge -p '{{\"spec\":{{\"controlPlane\":{{\"deployment\":{{\"replicas\":{}}}}}}}}}'",
            t.cp_replicas
        );
        let _ = writeln!(
            w,
            "kubectl -n {n} patch cluster {n} --type merge -p '{{\"spec\":{{\"paused\":false}}}}'"
        );
    }
    let _ = writeln!(
        w,
        "kubectl -n {ns} patch cronjob {} -p '{{\"spec\":{{\"suspend\":false}}}}'",
        target.cronjob_name()
    );
    if release == crate::render::backup::DEFAULT_RELEASE {
        let _ = writeln!(w, "flux -n {ns} resume helmrelease kamaji");
        let _ = writeln!(
            w,
            "flux -n {flux_ns} resume kustomization {}",
            platform_kustomization_name()
        );
    } else {
        let _ = writeln!(w, "flux -n {ns} resume helmrelease {release}");
    }
    for t in affected {
        let n = &t.name;
        let _ = writeln!(
            w,
            "flux -n {flux_ns} resume kustomization {}",
            tenant_kustomization_name(n)
        );
        let _ = writeln!(
            w,
            "kubectl -n {n} wait --for=jsonpath='{{.status.kubernetesResources.version.status}}'=Ready tenantcontrolplane/{n} --timeout=10m"
        );
    }
    s
}

/// The Pod that restores member `i`'s volume, in the datastore's namespace.
fn restore_pod(backups: &Backups, images: &Images, target: &Target, i: u32, snapshot: Option<&str>) -> Node {
    let env = |name: &str, value: String| map! {"name" => name, "value" => value};
    let from_bucket = matches!(backups.destination, BackupDestination::S3 { .. });
    // From a bucket the download lands alone in a scratch volume: restore the newest there.
    let local_snapshot = match (from_bucket, snapshot) {
        (false, Some(s)) => format!("/backups/{s}"),
        _ => String::new(),
    };
    let restore = map! {
        "name" => "restore",
        "image" => images.get(&backups.image).full(),
        "command" => seq!["/bin/sh", "-ec", RESTORE_SCRIPT],
        "env" => seq![
            env("SNAPSHOT", local_snapshot),
            env("BACKUP_DIR", "/backups".into()),
            env("BACKUP_NAME", target.release.clone()),
            env("MEMBER", target.member(i)),
            env("INITIAL_CLUSTER", target.initial_cluster()),
            env("PEER_URL", target.peer_url(i)),
            env("CLUSTER_TOKEN", CLUSTER_TOKEN.into()),
            env("DATA_DIR", DATA_DIR.into()),
        ],
        "volumeMounts" => seq![
            map! {"name" => "data", "mountPath" => DATA_DIR},
            map! {"name" => "backups", "mountPath" => "/backups", "readOnly" => (!from_bucket).then_some(true)},
        ],
    };
    let (init, backups_volume) = match &backups.destination {
        BackupDestination::Pvc { .. } => (
            Node::Absent,
            map! {"name" => "backups", "persistentVolumeClaim" => map! {"claimName" => target.backup_claim(), "readOnly" => true}},
        ),
        BackupDestination::S3 {
            credentials_secret,
            image,
        } => {
            let secret = |name: &str, key: &str, optional: bool| {
                map! {"name" => name, "valueFrom" => map! {"secretKeyRef" => map! {
                    "name" => credentials_secret, "key" => key, "optional" => optional.then_some(true),
                }}}
            };
            (
                seq![map! {
                    "name" => "download",
                    "image" => images.get(image).full(),
                    "command" => seq!["/bin/sh", "-ec", DOWNLOAD_SCRIPT],
                    "env" => seq![
                        env("SNAPSHOT_KEY", snapshot.unwrap_or_default().to_string()),
                        env("BACKUP_DIR", "/backups".into()),
                        env("BACKUP_NAME", target.release.clone()),
                        env("HOME", "/backups".into()),
                        secret("S3_ENDPOINT", "endpoint", false),
                        secret("S3_BUCKET", "bucket", false),
                        secret("AWS_ACCESS_KEY_ID", "accessKeyID", false),
                        secret("AWS_SECRET_ACCESS_KEY", "secretAccessKey", false),
                        secret("AWS_DEFAULT_REGION", "region", true),
                    ],
                    "volumeMounts" => seq![map! {"name" => "backups", "mountPath" => "/backups"}],
                }],
                map! {"name" => "backups", "emptyDir" => map! {}},
            )
        }
    };
    let pod = format!("{}-restore-{i}", target.release);
    map! {
        "apiVersion" => "v1",
        "kind" => "Pod",
        "metadata" => map! {"name" => pod, "namespace" => &target.namespace},
        "spec" => map! {
            "restartPolicy" => "Never",
            "automountServiceAccountToken" => false,
            "initContainers" => init,
            "containers" => seq![restore],
            "volumes" => seq![
                map! {"name" => "data", "persistentVolumeClaim" => map! {"claimName" => target.data_claim(i)}},
                backups_volume,
            ],
        },
    }
}

/// Downloads `$SNAPSHOT_KEY` (or the newest snapshot of `$BACKUP_NAME`) from the bucket into
/// `$BACKUP_DIR`.
const DOWNLOAD_SCRIPT: &str = r#"# kaas-gitops etcd snapshot download.
set -eu
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
prefix="s3://$S3_BUCKET/$BACKUP_NAME/"
key="${SNAPSHOT_KEY:-}"
if [ -z "$key" ]; then
  aws --endpoint-url "$S3_ENDPOINT" s3 ls "$prefix" > "$BACKUP_DIR/listing"
  while read -r _day _time _size k; do
    case "$k" in "$BACKUP_NAME"-*Z.db) key="$k" ;; esac
  done < "$BACKUP_DIR/listing"
  rm -f "$BACKUP_DIR/listing"
fi
if [ -z "$key" ]; then
  echo "no snapshot under $prefix" >&2
  exit 1
fi
aws --endpoint-url "$S3_ENDPOINT" s3 cp "$prefix$key" "$BACKUP_DIR/$key"
"#;
