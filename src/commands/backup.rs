//! `backup restore-plan TENANT`: the exact commands that restore the etcd behind one tenant's
//! control plane from a snapshot the backup CronJob took (docs/backup.md explains each step).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;

use crate::cli::Printer;
use crate::cli::{BackupArgs, BackupCommand, Format, RestorePlanArgs};
use crate::commands::report_invalid;
use crate::commands::{ExitStatus, pipeline};
use crate::diagnostics::Diagnostic;
use crate::layout::{platform_kustomization_names, tenant_kustomization_name};
use crate::model::{Backups, DataStore, Model, Tenant};
use crate::render::Options;
use crate::render::backup::{DEFAULT_DATASTORE, DEFAULT_RELEASE, REVISION_BUMP, Target, restore_pod};
use crate::render::images::Images;
use crate::render::platform::KAMAJI_RELEASE;
use crate::repo::inputs;
use crate::spec::load::ParseCache;

/// Runs `backup ...`.
pub fn run(printer: &Printer, repo: &Path, args: &BackupArgs) -> Result<ExitStatus> {
    match &args.command {
        BackupCommand::RestorePlan(a) => restore_plan(printer, repo, a),
    }
}

fn restore_plan(printer: &Printer, repo: &Path, args: &RestorePlanArgs) -> Result<ExitStatus> {
    // The validated model is enough: nothing is rendered or compared.
    let resolved = match inputs::read(repo, &[])? {
        Err(d) => return Ok(report_invalid(printer, Format::Human, d)),
        Ok(inputs) => match pipeline::resolve(&inputs, &Options::default(), &mut ParseCache::default()) {
            Err(d) => return Ok(report_invalid(printer, Format::Human, d)),
            Ok(r) => r,
        },
    };
    // The model's warnings (e.g. images without a pin: the restore runs the etcd image by tag).
    printer.diagnostics(&resolved.warnings);
    match plan(
        &resolved.model,
        &resolved.images,
        &args.tenant,
        args.snapshot.as_deref(),
    ) {
        Ok(text) => {
            if args.output.get() == Format::Json {
                printer.envelope(
                    true,
                    serde_json::json!({"tenant": args.tenant, "snapshot": args.snapshot, "script": text}),
                );
            } else {
                printer.data(&text);
            }
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
        DataStore::Dedicated { .. } => match Target::of_tenant(&model.platform, t) {
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
                // Each management cluster runs its own bundled etcd: only the tenants of `t`'s.
                .filter(|o| o.management_cluster == t.management_cluster)
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

/// Step 0: the snapshot holds each control plane's keys under `/<dataStoreSchema>/` (the API
/// server's `--etcd-prefix`, clastix/kamaji 26.8.2-edge
/// `internal/builders/controlplane/deployment.go:739`, from `status.storage.setup.schema`). A
/// TenantControlPlane re-created under another schema (Kamaji's UID default after a management
/// cluster was rebuilt) would start on an empty prefix beside the restored data, so the plan
/// stops before touching anything unless each one runs the schema this repository records
/// (issue 41). A tenant left on Kamaji's default has no recorded schema: the plan prints the
/// live one and says so.
fn prefix_check(w: &mut String, affected: &[&Tenant]) {
    let _ = writeln!(
        w,
        "\n# 0. Check that each control plane reads the key prefix its data is restored under."
    );
    for t in affected {
        let n = &t.name;
        let live = format!("kubectl -n {n} get tenantcontrolplane {n} -o jsonpath='{{.status.storage.setup.schema}}'");
        match t.datastore_names.named() {
            Some(names) => {
                let schema = &names.schema;
                let _ = writeln!(w, "# `{n}`: key prefix `/{schema}/` (dataStoreSchema, kaas.lock).");
                let _ = writeln!(
                    w,
                    "schema=\"$({live})\"\nif [ \"$schema\" != '{schema}' ]; then echo \"{n}: the TenantControlPlane reads /$schema/, the repository records /{schema}/: restoring would leave its data where it does not look (docs/backup.md)\" >&2; exit 1; fi"
                );
            }
            None => {
                let _ = writeln!(
                    w,
                    "# `{n}`: key prefix unknown to git (Kamaji's default, the TenantControlPlane's UID; run `kaas-gitops adopt {n}` to record it)."
                );
                let _ = writeln!(
                    w,
                    "echo \"{n}: key prefix /$({live})/ (Kamaji's default, not in kaas.lock): a snapshot taken under another TenantControlPlane is under another prefix\" >&2"
                );
            }
        }
    }
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
    prefix_check(w, affected);
    let _ = writeln!(w, "\n# 1. Keep Flux from undoing what follows.");
    if release == DEFAULT_RELEASE {
        // `kaas-kamaji` applies the kamaji release (which deploys the default datastore),
        // `kaas-platform` the backup CronJob; resumed in the opposite order below.
        for k in platform_kustomization_names().iter().rev() {
            let _ = writeln!(w, "flux -n {flux_ns} suspend kustomization {k}");
        }
        let _ = writeln!(w, "flux -n {ns} suspend helmrelease {KAMAJI_RELEASE}");
    }
    for t in affected {
        let _ = writeln!(
            w,
            "flux -n {flux_ns} suspend kustomization {}",
            tenant_kustomization_name(&t.name)
        );
    }
    if release != DEFAULT_RELEASE {
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
    // Said in the plan, not only in the Pod: whoever runs it should know why every watch of the
    // tenant breaks once, and not restore with a bare `snapshot restore` by hand instead.
    let _ = writeln!(
        w,
        "# etcdutl snapshot restore --bump-revision {REVISION_BUMP} --mark-compacted: the restored revision jumps past any a client saw before, and older ones read as compacted, so kubelets, Flux and controllers watching the tenant relist instead of keeping a stale watch (etcd-io/etcd#16028)."
    );
    for i in 0..target.replicas {
        let pod = target.restore_pod_name(i);
        // Without the generated-file header: this Pod is applied by hand, never committed.
        let body = crate::render::yaml::body(&restore_pod(
            backups,
            images,
            &model.platform.etcd_image,
            target,
            i,
            snapshot,
        ));
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
    if release == DEFAULT_RELEASE {
        let _ = writeln!(w, "flux -n {ns} resume helmrelease {KAMAJI_RELEASE}");
        for k in platform_kustomization_names() {
            let _ = writeln!(w, "flux -n {flux_ns} resume kustomization {k}");
        }
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
