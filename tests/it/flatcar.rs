//! Flatcar pools: `workers[].os: flatcar`, or a Hetzner image whose name says Flatcar, renders
//! the pool's KubeadmConfigTemplate as Ignition with the machine's identity from Flatcar's
//! metadata agent; the providers kaas-gitops renders with cloud-init only refuse it, and the
//! kubeadm bootstrap gate it needs is checked. What the real kubeadm bootstrap controller does
//! with it is the e2e bed's (tests/e2e/lib/capi.py, the Flatcar scenario).

use serde_json::{Value, json};

use crate::common::{Repo, crds_dir, kustomize};
use crate::crd_schema::Crds;

/// `spec.template.spec` of the KubeadmConfigTemplate of `tenant`'s pool `pool`.
fn kubeadm(repo: &Repo, tenant: &str, pool: &str) -> Value {
    let dir = format!("overlays/tenants/{tenant}");
    let kct = repo.object(&repo.file_starting(&dir, &format!("kubeadmconfigtemplate-{tenant}-{pool}-")));
    kct["spec"]["template"]["spec"].clone()
}

fn kubelet_arg<'a>(spec: &'a Value, name: &str) -> Option<&'a str> {
    spec["joinConfiguration"]["nodeRegistration"]["kubeletExtraArgs"]
        .as_array()?
        .iter()
        .find(|a| a["name"] == name)?["value"]
        .as_str()
}

/// The systemd units of the pool's Container Linux Config, parsed as data: name -> unit.
fn units(spec: &Value) -> serde_json::Map<String, Value> {
    let clc = spec["ignition"]["containerLinuxConfig"]["additionalConfig"]
        .as_str()
        .unwrap_or_else(|| panic!("no additionalConfig in {spec:#}"));
    let clc: Value = serde_saphyr::from_str(clc).unwrap_or_else(|e| panic!("additionalConfig is not YAML: {e}\n{clc}"));
    clc["systemd"]["units"]
        .as_array()
        .unwrap_or_else(|| panic!("no systemd units in {clc:#}"))
        .iter()
        .map(|u| (u["name"].as_str().unwrap().to_string(), u.clone()))
        .collect()
}

/// kubeadm's drop-in: after Flatcar's metadata agent, with its variables in the environment.
#[track_caller]
fn assert_kubeadm_waits_for_metadata(units: &serde_json::Map<String, Value>) {
    let dropin = units["kubeadm.service"]["dropins"][0]["contents"].as_str().unwrap();
    for line in [
        "Requires=coreos-metadata.service",
        "After=coreos-metadata.service",
        // CAPMOX v0.9.0 `templates/cluster-template-flatcar.yaml:110,392`: kubeadm after
        // containerd (kubernetes-sigs/image-builder#939), ordering only.
        "After=containerd.service",
        "EnvironmentFile=/run/metadata/flatcar",
    ] {
        assert!(
            dropin.lines().any(|l| l == line),
            "no `{line}` in the kubeadm drop-in:\n{dropin}"
        );
    }
    assert!(
        !dropin.lines().any(|l| l == "Requires=containerd.service"),
        "kubeadm is ordered after containerd, not bound to it:\n{dropin}"
    );
}

/// The pool's `preKubeadmCommands` end with the `envsubst` step.
#[track_caller]
fn assert_envsubst(spec: &Value) {
    let commands = spec["preKubeadmCommands"].as_array().expect("preKubeadmCommands");
    assert_eq!(
        commands[commands.len().saturating_sub(2)..],
        [
            json!("envsubst < /etc/kubeadm.yml > /etc/kubeadm.yml.tmp"),
            json!("mv /etc/kubeadm.yml.tmp /etc/kubeadm.yml")
        ],
        "{commands:?}"
    );
}

/// `tenants/<name>.yaml` of the first tenant file (by name) whose text `matches`.
fn tenant_file(repo: &Repo, matches: impl Fn(&str) -> bool) -> String {
    let mut names: Vec<String> = std::fs::read_dir(repo.path().join("tenants"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| format!("tenants/{n}"))
        .find(|rel| matches(&repo.read(rel)))
        .expect("a tenant file of the fixture matches")
}

/// The first line of `text` that starts (after its indent) with `key`, and its indent.
fn line_of<'a>(text: &'a str, key: &str) -> (&'a str, usize) {
    let line = text.lines().find(|l| l.trim_start().starts_with(key)).unwrap();
    (line, line.len() - line.trim_start().len())
}

/// `text` with `added` on a new line after the first line starting with `key`, `deeper` columns
/// further in.
fn add_after(text: &str, key: &str, deeper: usize, added: &str) -> String {
    let (line, indent) = line_of(text, key);
    text.replacen(line, &format!("{line}\n{}{added}", " ".repeat(indent + deeper)), 1)
}

/// kaas.yaml declaring the Cluster API feature gates `gates` (a YAML flow map).
fn declare_gates(repo: &Repo, gates: &str) {
    let text = repo.read("kaas.yaml");
    repo.write(
        "kaas.yaml",
        &text.replace(
            "  clusterApi:\n",
            &format!("  clusterApi:\n    featureGates: {gates}\n"),
        ),
    );
}

#[test]
fn a_hetzner_flatcar_image_renders_ignition_with_the_servers_identity() {
    let repo = Repo::fixture("providers/hetzner");
    repo.replace(
        "tenants/hel.yaml",
        "      hetznerSecret: hetzner\n",
        "      hetznerSecret: hetzner\n      imageName: flatcar-stable-4230\n",
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The platform declares no feature gates: a warning at the pool names the gate.
    assert!(
        run.stderr.contains("warning: pool `md-0` boots Flatcar with Ignition, which needs Cluster API's feature gate `KubeadmBootstrapFormatIgnition`"),
        "{}",
        run.stderr
    );
    let spec = kubeadm(&repo, "hel", "md-0");
    assert_eq!(spec["format"], "ignition");
    assert_eq!(
        kubelet_arg(&spec, "provider-id"),
        Some("hcloud://${COREOS_HETZNER_INSTANCE_ID}")
    );
    assert_eq!(kubelet_arg(&spec, "cloud-provider"), Some("external"));
    assert_eq!(
        spec["joinConfiguration"]["nodeRegistration"]["name"],
        "${COREOS_HETZNER_HOSTNAME}"
    );
    assert_envsubst(&spec);
    let units = units(&spec);
    assert_kubeadm_waits_for_metadata(&units);
    // Hetzner's metadata agent is Flatcar's own: not replaced.
    assert!(!units.contains_key("coreos-metadata.service"), "{units:?}");
    // No cloud-init expression is left for Ignition to keep as literal braces.
    let text = repo.read(&repo.file_starting("overlays/tenants/hel", "kubeadmconfigtemplate-hel-md-0-"));
    assert!(!text.contains("{{"), "{text}");
    // The server image is the Flatcar snapshot; the other tenant stays cloud-init.
    let machine = repo.object(&repo.file_starting("overlays/tenants/hel", "hcloudmachinetemplate-hel-md-0-"));
    assert_eq!(machine["spec"]["template"]["spec"]["imageName"], "flatcar-stable-4230");
    let fsn = kubeadm(&repo, "fsn", "md-0");
    assert_eq!(fsn["format"], Value::Null);
    assert_eq!(fsn["ignition"], Value::Null);
    assert_eq!(
        kubelet_arg(&fsn, "provider-id"),
        Some("hcloud://{{ ds.meta_data.instance_id }}")
    );

    let report = Crds::load(&crds_dir()).check_dir(&repo.path().join("overlays/tenants/hel"));
    assert!(report.errors.is_empty(), "{}", report.errors.join("\n"));
    let built = kustomize(&repo.path().join("overlays/tenants/hel"));
    assert_eq!(built.code, 0, "{}", built.stderr);
}

/// `/etc/kubeadm.sh` as Cluster API v1.14.0 writes it from the pool's `preKubeadmCommands`
/// (`bootstrap/kubeadm/pkg/ignition/clc/clc.go:210-225`: one bash script, `set -e`, every
/// command in order, then kubeadm), with `/etc/kubeadm.yml` moved to `config`; run under
/// `kubeadm.service`'s environment `env` (what `/run/metadata/flatcar` holds). Returns the exit
/// status, stderr and the configuration after the script.
fn run_kubeadm_sh(spec: &Value, config: &std::path::Path, env: &[(&str, &str)]) -> (i32, String, String) {
    let commands: Vec<&str> = spec["preKubeadmCommands"]
        .as_array()
        .expect("preKubeadmCommands")
        .iter()
        .map(|c| c.as_str().expect("a command is a string"))
        .collect();
    let script = format!("#!/bin/bash\nset -e\n{}\n", commands.join("\n"))
        .replace("/etc/kubeadm.yml", &config.display().to_string());
    let mut cmd = std::process::Command::new("bash");
    cmd.arg("-c")
        .arg(&script)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("bash runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        std::fs::read_to_string(config).unwrap(),
    )
}

/// Afterburn before v5.7.0 wrote `COREOS_COREOS_HETZNER_*` (coreos/afterburn PR #1083), later
/// ones `COREOS_HETZNER_*` (Flatcar's `cl-legacy` prefix): the rendered script fills kubeadm's
/// configuration from either, and stops without a server ID rather than join as `hcloud://`.
#[test]
fn a_hetzner_flatcar_pool_reads_the_server_under_either_afterburn_name() {
    if std::process::Command::new("envsubst")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: no envsubst (gettext) on this machine");
        return;
    }
    let repo = Repo::fixture("providers/hetzner");
    repo.replace(
        "tenants/hel.yaml",
        "      hetznerSecret: hetzner\n",
        "      hetznerSecret: hetzner\n      imageName: flatcar-stable-4230\n",
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let spec = kubeadm(&repo, "hel", "md-0");
    // What kubeadm reads, with the variables the pool's configuration names.
    let template = format!(
        "providerID: {}\nname: {}\n",
        kubelet_arg(&spec, "provider-id").unwrap(),
        spec["joinConfiguration"]["nodeRegistration"]["name"].as_str().unwrap()
    );
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("kubeadm.yml");
    for (afterburn, env) in [
        (
            "v5.7.0 and later",
            [
                ("COREOS_HETZNER_INSTANCE_ID", "4711"),
                ("COREOS_HETZNER_HOSTNAME", "hel-md-0-abc"),
            ],
        ),
        (
            "before v5.7.0",
            [
                ("COREOS_COREOS_HETZNER_INSTANCE_ID", "4711"),
                ("COREOS_COREOS_HETZNER_HOSTNAME", "hel-md-0-abc"),
            ],
        ),
    ] {
        std::fs::write(&config, &template).unwrap();
        let (code, stderr, filled) = run_kubeadm_sh(&spec, &config, &env);
        assert_eq!(code, 0, "Afterburn {afterburn}: {stderr}");
        assert_eq!(
            filled, "providerID: hcloud://4711\nname: hel-md-0-abc\n",
            "Afterburn {afterburn}"
        );
    }
    std::fs::write(&config, &template).unwrap();
    let (code, stderr, filled) = run_kubeadm_sh(&spec, &config, &[]);
    assert_ne!(code, 0, "no server ID, yet the script went on: {filled}");
    assert!(
        stderr.contains("no Hetzner server ID in /run/metadata/flatcar"),
        "{stderr}"
    );
    assert_eq!(filled, template, "the configuration was rewritten without a server ID");
}

#[test]
fn a_proxmox_pool_says_flatcar_and_reads_capmox_identity() {
    let repo = Repo::example();
    repo.replace(
        "tenants/acme.yaml",
        "    - name: md-0\n      replicas: 2\n",
        "    - name: md-0\n      replicas: 2\n      os: flatcar\n",
    );
    declare_gates(&repo, "{KubeadmBootstrapFormatIgnition: true}");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains("KubeadmBootstrapFormatIgnition"), "{}", run.stderr);
    let spec = kubeadm(&repo, "acme", "md-0");
    assert_eq!(spec["format"], "ignition");
    assert_eq!(
        kubelet_arg(&spec, "provider-id"),
        Some("proxmox://'${COREOS_CUSTOM_INSTANCE_ID}'")
    );
    assert_eq!(spec["joinConfiguration"]["nodeRegistration"]["name"], Value::Null);
    assert_eq!(spec["users"][0]["name"], "core");
    assert!(
        spec["users"][0]["sshAuthorizedKeys"][0]
            .as_str()
            .unwrap()
            .starts_with("ssh-ed25519 ")
    );
    assert_envsubst(&spec);
    // Only the envsubst step: the Hetzner fallback is Hetzner's.
    assert_eq!(spec["preKubeadmCommands"].as_array().map(Vec::len), Some(2));
    let units = units(&spec);
    assert_kubeadm_waits_for_metadata(&units);
    // CAPMOX writes the identity to /etc/proxmox-env; this agent copies it where kubeadm reads.
    let agent = units["coreos-metadata.service"]["contents"].as_str().unwrap();
    assert!(
        agent.lines().any(|l| l == "EnvironmentFile=/etc/proxmox-env"),
        "{agent}"
    );
    assert!(agent.contains("env > /run/metadata/flatcar"), "{agent}");
    // CAPMOX must not wait for a cloud-init that Flatcar does not run.
    let machine = repo.object(&repo.file_starting("overlays/tenants/acme", "proxmoxmachinetemplate-acme-md-0-"));
    assert_eq!(
        machine["spec"]["template"]["spec"]["checks"],
        json!({"skipCloudInitStatus": true})
    );
    // Another tenant's pools stay cloud-init, without the check skipped.
    let initech = kubeadm(&repo, "initech", "md-0");
    assert_eq!(initech["format"], Value::Null);
    assert_eq!(initech["ignition"], Value::Null);
    assert_eq!(
        kubelet_arg(&initech, "provider-id"),
        Some("proxmox://'{{ ds.meta_data.instance_id }}'")
    );
    let other = repo.object(&repo.file_starting("overlays/tenants/initech", "proxmoxmachinetemplate-initech-md-0-"));
    assert_eq!(other["spec"]["template"]["spec"]["checks"], Value::Null);

    let report = Crds::load(&crds_dir()).check_dir(&repo.path().join("overlays/tenants/acme"));
    assert!(report.errors.is_empty(), "{}", report.errors.join("\n"));
}

#[test]
fn flatcar_where_it_is_not_rendered_or_contradicted_is_refused_at_its_line() {
    let repo = Repo::fixture("providers/hetzner");
    repo.assert_edit_refused(
        "tenants/hel.yaml",
        |t| {
            t.replace(
                "      hetznerSecret: hetzner\n",
                "      hetznerSecret: hetzner\n      imageName: flatcar-stable\n",
            )
            .replace("      replicas: 1\n", "      replicas: 1\n      os: cloud-init\n")
        },
        "tenants/hel.yaml:15:18",
        "`flatcar-stable` is a Flatcar image, which boots with Ignition, and `spec.workers[0].os` says `cloud-init`",
    );

    let repo = Repo::fixture("providers/kubevirt");
    let rel = tenant_file(&repo, |_| true);
    let text = repo.read(&rel);
    let line = text.lines().position(|l| l.trim_start().starts_with("image:")).unwrap() + 1;
    let stderr = repo.assert_edit_refused(
        &rel,
        |t| {
            let (old, indent) = line_of(t, "image:");
            t.replace(
                old,
                &format!("{}image: quay.io/kinvolk/flatcar-kubevirt:stable", " ".repeat(indent)),
            )
        },
        &format!("{rel}:{line}:"),
        "Flatcar pools are not rendered for `kubevirt`",
    );
    assert!(stderr.contains("hetzner, proxmox and metal-stack"), "{stderr}");

    let repo = Repo::fixture("providers/metal-stack");
    let rel = tenant_file(&repo, |_| true);
    repo.assert_edit_refused(
        &rel,
        |t| add_after(t, "replicas:", 0, "os: cloud-init"),
        &format!("{rel}:"),
        "metal-stack machines boot with Ignition, not cloud-init",
    );
}

#[test]
fn a_declared_gate_list_without_ignition_refuses_the_flatcar_pool() {
    let repo = Repo::example();
    declare_gates(&repo, "{ClusterTopology: true}");
    assert_eq!(repo.run(&["render"]).code, 0);
    let stderr = repo.assert_edit_refused(
        "tenants/acme.yaml",
        |t| {
            t.replace(
                "    - name: md-0\n      replicas: 2\n",
                "    - name: md-0\n      replicas: 2\n      os: flatcar\n",
            )
        },
        "tenants/acme.yaml:36:11",
        "a Flatcar pool needs Cluster API's feature gate `KubeadmBootstrapFormatIgnition`",
    );
    assert!(
        stderr.contains("EXP_KUBEADM_BOOTSTRAP_FORMAT_IGNITION=true"),
        "{stderr}"
    );
}

#[test]
fn os_in_topology_mode_is_refused() {
    let repo = Repo::fixture("topology");
    let rel = tenant_file(&repo, |t| t.contains("  topology:"));
    repo.assert_edit_refused(
        &rel,
        |t| add_after(t, "- name:", 2, "os: flatcar"),
        &format!("{rel}:"),
        "`os: flatcar` on a pool of a topology tenant",
    );
}
