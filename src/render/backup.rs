//! Scheduled etcd snapshots of every DataStore kaas-gitops creates: each tenant's dedicated
//! `<tenant>-etcd` release and the kamaji chart's bundled `kamaji-etcd` (DataStore `default`).
//! Next to each release: a `CronJob` `<release>-backup`, its `ServiceAccount` and, for a PVC
//! destination, the `PersistentVolumeClaim` `<release>-backups`. The snapshot logic is one shell
//! script ([`SNAPSHOT_SCRIPT`]) so that the end-to-end test runs exactly what the CronJob runs.
//! The restore procedure (docs/backup.md) is printed by `kaas-gitops backup restore-plan`.

use crate::diagnostics::Diagnostic;
use crate::model::{BackupDestination, BackupPolicy, Backups, DataStore, ImageSpec, Platform, Tenant};
use crate::render::images::Images;
use crate::render::node::Node;
use crate::render::{Object, meta};
use crate::{map, seq};

/// etcd's client port in the kamaji-etcd chart (`clientPort`).
pub const CLIENT_PORT: u16 = 2379;
/// Where the StatefulSet keeps each member's data: the root of its PVC `data-<release>-<i>`.
pub const DATA_DIR: &str = "/var/run/etcd";
/// The chart's `--initial-cluster-token`; a restored member must carry the same.
pub const CLUSTER_TOKEN: &str = "kamaji";
pub use crate::render::shared::{DEFAULT_DATASTORE, DEFAULT_RELEASE};
/// How long one backup Job may run before Kubernetes stops it.
pub const ACTIVE_DEADLINE_SECONDS: u32 = 1800;

/// Takes one snapshot from the first member that answers, verifies it, and keeps the newest
/// `$BACKUP_RETENTION` snapshots of `$BACKUP_NAME` in `$BACKUP_DIR`.
///
/// Environment: `BACKUP_ENDPOINTS` (space-separated client URLs), `BACKUP_CACERT`,
/// `BACKUP_CERT`, `BACKUP_KEY` (client TLS files), `BACKUP_NAME` (file prefix), `BACKUP_DIR`,
/// `BACKUP_RETENTION`. Only `sh`, `date`, `mv`, `rm` and `etcdctl` (and `etcdutl` when present)
/// are used, because the images that carry etcdctl carry little else.
pub const SNAPSHOT_SCRIPT: &str = r#"# kaas-gitops etcd snapshot: save, verify, name, keep, prune.
set -eu
stamp=$(date -u +%Y%m%dT%H%M%SZ)
final="$BACKUP_DIR/$BACKUP_NAME-$stamp.db"
# A dot file, so an interrupted run never looks like a snapshot to the pruning or a restore.
part="$BACKUP_DIR/.$BACKUP_NAME-$stamp.db.part"
rm -f "$BACKUP_DIR/.$BACKUP_NAME-"*.part
# `snapshot save` talks to exactly one member: try each until one answers. The health probe
# bounds the wait for a dead member (snapshot save would wait for it as long as it may run).
saved=""
for endpoint in $BACKUP_ENDPOINTS; do
  set -- --endpoints="$endpoint" --cacert="$BACKUP_CACERT" --cert="$BACKUP_CERT" --key="$BACKUP_KEY" --dial-timeout=10s
  if etcdctl "$@" --command-timeout=15s endpoint health && etcdctl "$@" --command-timeout=900s snapshot save "$part"; then
    saved="$endpoint"
    break
  fi
  echo "no snapshot from $endpoint; trying the next member" >&2
  rm -f "$part"
done
if [ -z "$saved" ]; then
  echo "no member of [$BACKUP_ENDPOINTS] gave a snapshot" >&2
  exit 1
fi
# etcdutl replaces `etcdctl snapshot status` since etcd 3.5; older images only have etcdctl.
if command -v etcdutl >/dev/null 2>&1; then
  etcdutl snapshot status "$part" -w table
else
  etcdctl snapshot status "$part" -w table
fi
mv "$part" "$final"
echo "saved $final from $saved"
# Snapshots sort by name = by time; the glob expands sorted, so the oldest come first.
set --
for f in "$BACKUP_DIR/$BACKUP_NAME"-*.db; do
  case "${f##*/}" in
    "$BACKUP_NAME"-[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]T[0-9][0-9][0-9][0-9][0-9][0-9]Z.db) set -- "$@" "$f" ;;
  esac
done
excess=$(($# - BACKUP_RETENTION))
while [ "$excess" -gt 0 ]; do
  rm -f "$1"
  echo "pruned $1"
  shift
  excess=$((excess - 1))
done
"#;

/// Uploads the newest snapshot in `$BACKUP_DIR` to `s3://$S3_BUCKET/$BACKUP_NAME/` and keeps the
/// newest `$BACKUP_RETENTION` there. Environment: [`SNAPSHOT_SCRIPT`]'s `BACKUP_*` plus
/// `S3_ENDPOINT`, `S3_BUCKET`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and optionally
/// `AWS_DEFAULT_REGION`, all from the destination's Secret.
pub const UPLOAD_SCRIPT: &str = r#"# kaas-gitops etcd snapshot upload: copy the newest, prune the bucket.
set -eu
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
latest=""
for f in "$BACKUP_DIR/$BACKUP_NAME"-*.db; do
  [ -e "$f" ] && latest="$f"
done
if [ -z "$latest" ]; then
  echo "no snapshot in $BACKUP_DIR to upload" >&2
  exit 1
fi
prefix="s3://$S3_BUCKET/$BACKUP_NAME/"
aws --endpoint-url "$S3_ENDPOINT" s3 cp "$latest" "$prefix${latest##*/}"
echo "uploaded $prefix${latest##*/}"
# S3 lists keys in lexicographic order = by time.
aws --endpoint-url "$S3_ENDPOINT" s3 ls "$prefix" > "$BACKUP_DIR/listing"
set --
while read -r _day _time _size key; do
  case "$key" in
    "$BACKUP_NAME"-[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]T[0-9][0-9][0-9][0-9][0-9][0-9]Z.db) set -- "$@" "$key" ;;
  esac
done < "$BACKUP_DIR/listing"
excess=$(($# - BACKUP_RETENTION))
while [ "$excess" -gt 0 ]; do
  aws --endpoint-url "$S3_ENDPOINT" s3 rm "$prefix$1"
  shift
  excess=$((excess - 1))
done
"#;

/// How far `etcdutl snapshot restore --bump-revision` moves the restored etcd's revision on.
///
/// A restore from a snapshot takes etcd's revision back to the snapshot's. Everything that
/// watches the tenant API server (kubelets, Flux, controllers, the API server's own watch cache)
/// holds a `resourceVersion` from before the restore, which is an etcd revision: resumed from it,
/// a watch either waits for revisions the restored etcd has not reached or reads new writes under
/// numbers it already saw, and never relists (Azure/ARO-HCP#6641 met this after a restore; the
/// etcd side is etcd-io/etcd#16028, "Restoring etcd without breaking API guarantees"). Bumping the
/// revision past every revision the lost etcd can have written since the snapshot, and marking
/// the bumped revision compacted (`--mark-compacted`, which etcdutl requires with a bump), makes
/// every old watch fail with "required revision has been compacted", and clients relist.
///
/// The bump must exceed the revisions written between the snapshot and the loss: snapshots are
/// taken at most every few hours here, and at a sustained 1,000 writes a second a tenant needs
/// over eleven days to write 1,000,000,000. Revisions are int64, so the bump costs nothing.
pub const REVISION_BUMP: u64 = 1_000_000_000;

/// First step of a member's restore: picks the snapshot (`$SNAPSHOT`, or the newest
/// `$BACKUP_NAME-*.db` in `$BACKUP_DIR` when empty), verifies it, clears the staging directory and
/// links the snapshot as `$DATA_DIR/restore.db` for the etcdutl step, which has no shell to pick
/// it. `snapshot restore` refuses an existing directory: the member is restored beside
/// (`$DATA_DIR/restore`) and swapped in by [`RESTORE_SWAP_SCRIPT`]. Environment: `SNAPSHOT`, `BACKUP_DIR`, `BACKUP_NAME`, `DATA_DIR`. Runs in the backup image
/// (a shell and etcdctl).
pub const RESTORE_PREPARE_SCRIPT: &str = r#"# kaas-gitops etcd restore of one member: pick and check the snapshot.
set -eu
if [ -z "${SNAPSHOT:-}" ]; then
  for f in "$BACKUP_DIR/$BACKUP_NAME"-*.db; do
    [ -e "$f" ] && SNAPSHOT="$f"
  done
fi
if [ -z "${SNAPSHOT:-}" ] || [ ! -f "$SNAPSHOT" ]; then
  echo "no snapshot to restore (SNAPSHOT=${SNAPSHOT:-}, BACKUP_DIR=$BACKUP_DIR)" >&2
  exit 1
fi
tool=etcdctl
if command -v etcdutl >/dev/null 2>&1; then tool=etcdutl; fi
"$tool" snapshot status "$SNAPSHOT" -w table
rm -rf "$DATA_DIR/restore" "$DATA_DIR/restore.db"
ln -s "$SNAPSHOT" "$DATA_DIR/restore.db"
echo "restoring $SNAPSHOT"
"#;

/// Last step of a member's restore: the restored member replaces `$DATA_DIR/member`.
/// Environment: `MEMBER`, `DATA_DIR`. Runs in the backup image.
pub const RESTORE_SWAP_SCRIPT: &str = r#"# kaas-gitops etcd restore of one member: swap the restored data in.
set -eu
snapshot=$(readlink "$DATA_DIR/restore.db")
rm -rf "$DATA_DIR/member"
mv "$DATA_DIR/restore/member" "$DATA_DIR/member"
rmdir "$DATA_DIR/restore"
rm -f "$DATA_DIR/restore.db"
echo "restored $snapshot into $DATA_DIR as $MEMBER"
"#;

/// The etcdutl step's command line. No shell: it runs in the etcd image the members run,
/// distroless from etcd v3.5.7 on. Kubernetes expands each `$(VAR)` from the container's
/// environment. `--bump-revision` and `--mark-compacted` exist in etcdutl from v3.5.10 and in
/// every v3.6 (etcd-io/etcd `etcdutl/etcdutl/snapshot_command.go`: absent at v3.5.6 and v3.5.9,
/// present at v3.5.10 and v3.6.12), so the backup image (`quay.io/coreos/etcd:v3.5.6`, kept for
/// its shell) cannot run it; the members' image (`spec.kamajiEtcd.image`, v3.6.12 by default)
/// can, and its etcdutl writes the data dir the members' etcd reads.
pub fn restore_args() -> Vec<String> {
    [
        "snapshot",
        "restore",
        "$(DATA_DIR)/restore.db",
        "--name",
        "$(MEMBER)",
        "--initial-cluster",
        "$(INITIAL_CLUSTER)",
        "--initial-cluster-token",
        "$(CLUSTER_TOKEN)",
        "--initial-advertise-peer-urls",
        "$(PEER_URL)",
        "--data-dir",
        "$(DATA_DIR)/restore",
        "--bump-revision",
        &REVISION_BUMP.to_string(),
        "--mark-compacted",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect()
}

/// etcdutl in the etcd release images (etcd-io/etcd v3.6.12 `Dockerfile`: `ADD etcdutl
/// /usr/local/bin/` onto `gcr.io/distroless/static-debian12`).
pub const ETCDUTL: &str = "/usr/local/bin/etcdutl";

/// How a kamaji-etcd release got its certificates, which decides the Secrets' names and keys
/// (clastix/kamaji-etcd chart 0.17.0, `templates/_helpers.tpl`: `etcd.clientSecretName`,
/// `etcd.caSecretName`, `etcd.certManager.clientCert`, `etcd.certManager.ca`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EtcdCerts {
    /// The chart's default (`selfSignedCertificates.enabled: true`, cfssl jobs): the client
    /// certificate in `<release>-root-client-certs`, the CA under `ca.crt` of `<release>-certs`.
    /// A tenant's dedicated etcd, which kaas-gitops installs from the kamaji-etcd chart.
    SelfSigned,
    /// cert-manager (`certManager.enabled: true`): the client certificate in
    /// `<release>-client-certs`, the CA certificate under `tls.crt` of `<release>-ca`. The kamaji
    /// chart turns this on for its bundled etcd (clastix/kamaji 26.8.2-edge,
    /// `charts/kamaji/values.yaml`: `kamaji-etcd.certManager.enabled: true`,
    /// `selfSignedCertificates.enabled: false`), so the platform's `default` DataStore uses it.
    CertManager,
}

impl EtcdCerts {
    /// The Secret with the client certificate (`tls.crt`, `tls.key`).
    pub fn client_secret(self, release: &str) -> String {
        match self {
            EtcdCerts::SelfSigned => format!("{release}-root-client-certs"),
            EtcdCerts::CertManager => format!("{release}-client-certs"),
        }
    }

    /// The Secret and key holding the CA certificate (the Secret also holds the CA's key, so
    /// only this key is mounted).
    pub fn ca(self, release: &str) -> (String, &'static str) {
        match self {
            EtcdCerts::SelfSigned => (format!("{release}-certs"), "ca.crt"),
            // The kamaji-etcd DataStore reads its CA from this Secret's `tls.crt`
            // (`templates/etcd_datastore.yaml`, cert-manager branch).
            EtcdCerts::CertManager => (format!("{release}-ca"), "tls.crt"),
        }
    }
}

/// One kamaji-etcd release to back up.
#[derive(Debug, Clone)]
pub struct Target {
    /// The release's full name (`<tenant>-etcd`, `kamaji-etcd`): StatefulSet, Service, prefix.
    pub release: String,
    /// Its namespace.
    pub namespace: String,
    /// Its members.
    pub replicas: u32,
    /// The DataStore it backs.
    pub datastore: String,
    /// Schedule and retention.
    pub policy: BackupPolicy,
    /// How its certificates were made.
    pub certs: EtcdCerts,
    /// The management cluster's DNS domain, which the chart builds member URLs from.
    pub cluster_domain: String,
}

impl Target {
    /// The dedicated etcd of `t`, when it is backed up.
    pub fn of_tenant(p: &Platform, t: &Tenant) -> Option<Target> {
        let Some(DataStore::Dedicated {
            replicas,
            backup: Some(policy),
            ..
        }) = t.dedicated_etcd()
        else {
            return None;
        };
        Some(Target {
            release: t.etcd_release(),
            namespace: t.name.clone(),
            replicas: *replicas,
            // The chart names the DataStore after the release (`datastore.name`).
            datastore: t.etcd_release(),
            policy: policy.clone(),
            certs: EtcdCerts::SelfSigned,
            cluster_domain: p.cluster_domain.clone(),
        })
    }

    /// The kamaji chart's bundled etcd (DataStore `default`), when backups are on.
    pub fn of_platform(p: &Platform) -> Option<Target> {
        let b = p.backups.as_ref()?;
        Some(Target {
            release: DEFAULT_RELEASE.to_string(),
            namespace: p.kamaji_namespace.clone(),
            replicas: p.default_datastore_replicas,
            datastore: DEFAULT_DATASTORE.to_string(),
            policy: b.policy.clone(),
            certs: EtcdCerts::CertManager,
            cluster_domain: p.cluster_domain.clone(),
        })
    }

    /// Member `i`'s pod name.
    pub fn member(&self, i: u32) -> String {
        format!("{}-{i}", self.release)
    }

    /// Member `i`'s DNS name behind the headless Service (named like the release), in the
    /// management cluster's domain (kamaji-etcd `templates/_helpers.tpl` builds the same names
    /// from `clusterDomain`).
    fn host(&self, i: u32) -> String {
        format!(
            "{}.{}.{}.svc.{}",
            self.member(i),
            self.release,
            self.namespace,
            self.cluster_domain
        )
    }

    /// Every member's client URL, as the chart's DataStore lists them.
    pub fn endpoints(&self) -> Vec<String> {
        (0..self.replicas)
            .map(|i| format!("https://{}:{CLIENT_PORT}", self.host(i)))
            .collect()
    }

    /// Member `i`'s peer URL.
    pub fn peer_url(&self, i: u32) -> String {
        format!("https://{}:2380", self.host(i))
    }

    /// `--initial-cluster` as the chart writes it.
    pub fn initial_cluster(&self) -> String {
        (0..self.replicas)
            .map(|i| format!("{}={}", self.member(i), self.peer_url(i)))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Member `i`'s data volume (the StatefulSet's claim template `data`).
    pub fn data_claim(&self, i: u32) -> String {
        format!("data-{}", self.member(i))
    }

    /// The backup volume (PVC destination).
    pub fn backup_claim(&self) -> String {
        format!("{}-backups", self.release)
    }

    /// The CronJob and its ServiceAccount.
    pub fn cronjob_name(&self) -> String {
        format!("{}-backup", self.release)
    }

    /// The Pod that restores member `i`'s volume.
    pub fn restore_pod_name(&self, i: u32) -> String {
        format!("{}-restore-{i}", self.release)
    }
}

/// The backup objects of a tenant's dedicated etcd (none when not backed up).
pub fn tenant_objects(p: &Platform, images: &Images, t: &Tenant) -> Vec<Object> {
    match (&p.backups, Target::of_tenant(p, t)) {
        (Some(b), Some(target)) => objects(b, images, &target, crate::render::shared::tenant_labels(t)),
        _ => Vec::new(),
    }
}

/// The backup objects of the platform's default datastore (none when backups are off).
pub fn platform_objects(p: &Platform, images: &Images) -> Vec<Object> {
    match (&p.backups, Target::of_platform(p)) {
        (Some(b), Some(target)) => objects(b, images, &target, crate::render::shared::platform_labels()),
        _ => Vec::new(),
    }
}

fn objects(b: &Backups, images: &Images, target: &Target, labels: Node) -> Vec<Object> {
    let ns = Some(target.namespace.as_str());
    let name = target.cronjob_name();
    let mut out = vec![Object {
        kind: "ServiceAccount",
        name: name.clone(),
        body: map! {
            "apiVersion" => "v1",
            "kind" => "ServiceAccount",
            "metadata" => meta(&name, ns, labels.clone()),
            // The job reads its certificates from mounted Secrets and never calls the API: no
            // token, and no Role.
            "automountServiceAccountToken" => false,
        },
    }];
    if let BackupDestination::Pvc { size, storage_class } = &b.destination {
        let claim = target.backup_claim();
        out.push(Object {
            kind: "PersistentVolumeClaim",
            name: claim.clone(),
            body: map! {
                "apiVersion" => "v1",
                "kind" => "PersistentVolumeClaim",
                "metadata" => meta(&claim, ns, labels.clone()),
                "spec" => map! {
                    "accessModes" => seq!["ReadWriteOnce"],
                    "storageClassName" => storage_class.clone(),
                    "resources" => map! {"requests" => map! {"storage" => size}},
                },
            },
        });
    }
    out.push(Object {
        kind: "CronJob",
        name: name.clone(),
        body: cronjob(b, images, target, labels),
    });
    out
}

const CERT_DIR: &str = "/etc/etcd/client";
const CA_DIR: &str = "/etc/etcd/ca";
const BACKUP_DIR: &str = "/backups";

fn env(name: &str, value: impl Into<Node>) -> Node {
    map! {"name" => name, "value" => value.into()}
}

fn secret_env(name: &str, secret: &str, key: &str, optional: bool) -> Node {
    map! {
        "name" => name,
        "valueFrom" => map! {"secretKeyRef" => map! {
            "name" => secret,
            "key" => key,
            "optional" => optional.then_some(true),
        }},
    }
}

/// The bucket and its credentials, from the destination's Secret, as [`UPLOAD_SCRIPT`] and
/// [`DOWNLOAD_SCRIPT`] read them.
fn s3_env(secret: &str) -> [Node; 5] {
    [
        secret_env("S3_ENDPOINT", secret, "endpoint", false),
        secret_env("S3_BUCKET", secret, "bucket", false),
        secret_env("AWS_ACCESS_KEY_ID", secret, "accessKeyID", false),
        secret_env("AWS_SECRET_ACCESS_KEY", secret, "secretAccessKey", false),
        secret_env("AWS_DEFAULT_REGION", secret, "region", true),
    ]
}

/// The environment of [`SNAPSHOT_SCRIPT`] for `target` (also what the e2e test mirrors).
fn snapshot_env(target: &Target, retention: u32) -> Vec<Node> {
    vec![
        env("BACKUP_ENDPOINTS", target.endpoints().join(" ")),
        env("BACKUP_CACERT", format!("{CA_DIR}/ca.crt")),
        env("BACKUP_CERT", format!("{CERT_DIR}/tls.crt")),
        env("BACKUP_KEY", format!("{CERT_DIR}/tls.key")),
        env("BACKUP_NAME", &target.release),
        env("BACKUP_DIR", BACKUP_DIR),
        env("BACKUP_RETENTION", retention.to_string()),
    ]
}

fn container(name: &str, image: String, script: &str, env: Vec<Node>, mounts: Node) -> Node {
    map! {
        "name" => name,
        "image" => image,
        "imagePullPolicy" => "IfNotPresent",
        "command" => seq!["/bin/sh", "-ec", script],
        "env" => env,
        "volumeMounts" => mounts,
        "resources" => map! {"requests" => map! {"cpu" => "50m", "memory" => "64Mi"}},
        "securityContext" => map! {
            "allowPrivilegeEscalation" => false,
            "readOnlyRootFilesystem" => true,
            "capabilities" => map! {"drop" => seq!["ALL"]},
        },
    }
}

fn cronjob(b: &Backups, images: &Images, target: &Target, labels: Node) -> Node {
    let name = target.cronjob_name();
    let backups_mount = map! {"name" => "backups", "mountPath" => BACKUP_DIR};
    let snapshot_mounts = seq![
        map! {"name" => "client-cert", "mountPath" => CERT_DIR, "readOnly" => true},
        map! {"name" => "etcd-ca", "mountPath" => CA_DIR, "readOnly" => true},
        backups_mount.clone(),
    ];
    let snapshot_image = images.get(&b.image).full();
    let (ca_secret, ca_key) = target.certs.ca(&target.release);
    let (init, main, backups_volume) = match &b.destination {
        BackupDestination::Pvc { .. } => (
            Node::Absent,
            container(
                "snapshot",
                snapshot_image,
                SNAPSHOT_SCRIPT,
                snapshot_env(target, target.policy.retention),
                snapshot_mounts,
            ),
            map! {"name" => "backups", "persistentVolumeClaim" => map! {"claimName" => target.backup_claim()}},
        ),
        BackupDestination::S3 {
            credentials_secret,
            image,
        } => {
            // The snapshot lands in a scratch volume (keeping only this run's), then the
            // uploader copies it to the bucket and prunes there.
            let mut upload_env = snapshot_env(target, target.policy.retention);
            upload_env.extend(s3_env(credentials_secret));
            upload_env.push(env("HOME", BACKUP_DIR));
            (
                seq![container(
                    "snapshot",
                    snapshot_image,
                    SNAPSHOT_SCRIPT,
                    snapshot_env(target, 1),
                    snapshot_mounts,
                )],
                container(
                    "upload",
                    images.get(image).full(),
                    UPLOAD_SCRIPT,
                    upload_env,
                    seq![backups_mount],
                ),
                map! {"name" => "backups", "emptyDir" => map! {}},
            )
        }
    };
    map! {
        "apiVersion" => "batch/v1",
        "kind" => "CronJob",
        "metadata" => meta(&name, Some(&target.namespace), labels.clone()),
        "spec" => map! {
            "schedule" => &target.policy.schedule,
            "timeZone" => "Etc/UTC",
            // Two snapshots at once would only load etcd twice.
            "concurrencyPolicy" => "Forbid",
            "startingDeadlineSeconds" => 3600u32,
            "successfulJobsHistoryLimit" => 3u32,
            "failedJobsHistoryLimit" => 3u32,
            "jobTemplate" => map! {
                "metadata" => map! {"labels" => labels.clone()},
                "spec" => map! {
                    "activeDeadlineSeconds" => ACTIVE_DEADLINE_SECONDS,
                    "backoffLimit" => 2u32,
                    "template" => map! {
                        "metadata" => map! {"labels" => labels},
                        "spec" => map! {
                            "serviceAccountName" => &name,
                            "automountServiceAccountToken" => false,
                            "restartPolicy" => "Never",
                            "initContainers" => init,
                            "containers" => seq![main],
                            "volumes" => seq![
                                map! {"name" => "client-cert", "secret" => map! {
                                    "secretName" => target.certs.client_secret(&target.release),
                                    "items" => seq![
                                        map! {"key" => "tls.crt", "path" => "tls.crt"},
                                        map! {"key" => "tls.key", "path" => "tls.key"},
                                    ],
                                    "defaultMode" => 0o400u32,
                                }},
                                map! {"name" => "etcd-ca", "secret" => map! {
                                    "secretName" => ca_secret,
                                    "items" => seq![map! {"key" => ca_key, "path" => "ca.crt"}],
                                    "defaultMode" => 0o444u32,
                                }},
                                backups_volume,
                            ],
                        },
                    },
                },
            },
        },
    }
}

/// The Pod that restores member `i`'s volume, in the datastore's namespace: the backup image
/// picks the snapshot ([`RESTORE_PREPARE_SCRIPT`]), the members' etcd image restores it with a
/// revision bump ([`restore_args`]), the backup image swaps it in ([`RESTORE_SWAP_SCRIPT`]).
pub fn restore_pod(
    backups: &Backups,
    images: &Images,
    etcd_image: &ImageSpec,
    target: &Target,
    i: u32,
    snapshot: Option<&str>,
) -> Node {
    let from_bucket = matches!(backups.destination, BackupDestination::S3 { .. });
    // From a bucket the download lands alone in a scratch volume: restore the newest there.
    let local_snapshot = match (from_bucket, snapshot) {
        (false, Some(s)) => format!("{BACKUP_DIR}/{s}"),
        _ => String::new(),
    };
    // The etcdutl step follows the snapshot link to the backup volume: mounted at the same path.
    let mounts = seq![
        map! {"name" => "data", "mountPath" => DATA_DIR},
        map! {"name" => "backups", "mountPath" => BACKUP_DIR, "readOnly" => (!from_bucket).then_some(true)},
    ];
    let shell_image = images.get(&backups.image).full();
    let prepare = map! {
        "name" => "prepare",
        "image" => shell_image.clone(),
        "command" => seq!["/bin/sh", "-ec", RESTORE_PREPARE_SCRIPT],
        "env" => seq![
            env("SNAPSHOT", local_snapshot),
            env("BACKUP_DIR", BACKUP_DIR),
            env("BACKUP_NAME", &target.release),
            env("DATA_DIR", DATA_DIR),
        ],
        "volumeMounts" => mounts.clone(),
    };
    let restore = map! {
        "name" => "restore",
        "image" => images.get(etcd_image).full(),
        "command" => seq![ETCDUTL],
        "args" => restore_args(),
        "env" => seq![
            env("MEMBER", target.member(i)),
            env("INITIAL_CLUSTER", target.initial_cluster()),
            env("PEER_URL", target.peer_url(i)),
            env("CLUSTER_TOKEN", CLUSTER_TOKEN),
            env("DATA_DIR", DATA_DIR),
        ],
        "volumeMounts" => mounts.clone(),
    };
    let swap = map! {
        "name" => "swap",
        "image" => shell_image,
        "command" => seq!["/bin/sh", "-ec", RESTORE_SWAP_SCRIPT],
        "env" => seq![env("MEMBER", target.member(i)), env("DATA_DIR", DATA_DIR)],
        "volumeMounts" => mounts,
    };
    let (init, backups_volume) = match &backups.destination {
        BackupDestination::Pvc { .. } => (
            Vec::new(),
            map! {"name" => "backups", "persistentVolumeClaim" => map! {"claimName" => target.backup_claim(), "readOnly" => true}},
        ),
        BackupDestination::S3 {
            credentials_secret,
            image,
        } => (
            vec![map! {
                "name" => "download",
                "image" => images.get(image).full(),
                "command" => seq!["/bin/sh", "-ec", DOWNLOAD_SCRIPT],
                "env" => [
                    env("SNAPSHOT_KEY", snapshot.unwrap_or_default()),
                    env("BACKUP_DIR", BACKUP_DIR),
                    env("BACKUP_NAME", &target.release),
                    env("HOME", BACKUP_DIR),
                ]
                .into_iter()
                .chain(s3_env(credentials_secret))
                .collect::<Vec<Node>>(),
                "volumeMounts" => seq![map! {"name" => "backups", "mountPath" => BACKUP_DIR}],
            }],
            map! {"name" => "backups", "emptyDir" => map! {}},
        ),
    };
    map! {
        "apiVersion" => "v1",
        "kind" => "Pod",
        "metadata" => map! {"name" => target.restore_pod_name(i), "namespace" => &target.namespace},
        "spec" => map! {
            "restartPolicy" => "Never",
            "automountServiceAccountToken" => false,
            "initContainers" => init.into_iter().chain([prepare, restore]).collect::<Vec<Node>>(),
            "containers" => seq![swap],
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

/// A warning for each backup volume a plan deletes (a tenant deleted, backups turned off or
/// moved to S3): once Flux prunes the claim, the snapshots on it are gone with it, and a
/// snapshot is what a deleted tenant can be brought back from.
pub fn deletion_warnings<'a>(deleted: impl Iterator<Item = &'a str>) -> Vec<Diagnostic> {
    deleted
        .filter_map(|path| {
            let file = path.rsplit('/').next()?;
            let claim = file.strip_prefix("persistentvolumeclaim-")?.strip_suffix(".yaml")?;
            claim.ends_with("-backups").then(|| {
                Diagnostic::warning(format!(
                    "deleting `{path}`: Flux will delete the PersistentVolumeClaim `{claim}` and every etcd snapshot on it"
                ))
                .with_hint("copy the snapshots out first if they may be needed (docs/backup.md, \"Deleting a tenant\"), or keep snapshots in S3 (`backups.destination.s3`), which outlive the tenant")
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(replicas: u32) -> Target {
        Target {
            release: "acme-etcd".into(),
            namespace: "acme".into(),
            replicas,
            datastore: "acme-etcd".into(),
            policy: BackupPolicy {
                schedule: "0 */6 * * *".into(),
                retention: 7,
            },
            certs: EtcdCerts::SelfSigned,
            cluster_domain: "cluster.local".into(),
        }
    }

    #[test]
    fn endpoints_and_members_follow_the_chart() {
        let t = target(3);
        assert_eq!(
            t.endpoints(),
            [
                "https://acme-etcd-0.acme-etcd.acme.svc.cluster.local:2379",
                "https://acme-etcd-1.acme-etcd.acme.svc.cluster.local:2379",
                "https://acme-etcd-2.acme-etcd.acme.svc.cluster.local:2379",
            ]
        );
        assert_eq!(
            target(1).initial_cluster(),
            "acme-etcd-0=https://acme-etcd-0.acme-etcd.acme.svc.cluster.local:2380"
        );
        assert_eq!(t.data_claim(2), "data-acme-etcd-2");
        let mut other = target(1);
        other.cluster_domain = "mgmt.example".into();
        assert_eq!(
            other.endpoints(),
            ["https://acme-etcd-0.acme-etcd.acme.svc.mgmt.example:2379"]
        );
    }

    #[test]
    // clastix/kamaji-etcd chart 0.17.0, templates/_helpers.tpl and templates/etcd_datastore.yaml:
    // self-signed (the chart's default) and cert-manager name the Secrets differently.
    fn kamaji_etcd_secret_names_follow_how_the_chart_made_the_certificates() {
        let s = EtcdCerts::SelfSigned;
        assert_eq!(s.client_secret("acme-etcd"), "acme-etcd-root-client-certs");
        assert_eq!(s.ca("acme-etcd"), ("acme-etcd-certs".to_string(), "ca.crt"));
        let c = EtcdCerts::CertManager;
        assert_eq!(c.client_secret("kamaji-etcd"), "kamaji-etcd-client-certs");
        assert_eq!(c.ca("kamaji-etcd"), ("kamaji-etcd-ca".to_string(), "tls.crt"));
    }
}
