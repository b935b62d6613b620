//! Flatcar Container Linux pools: kubeadm's configuration as Ignition (`format: ignition`),
//! with the machine's identity read from Flatcar's metadata agent instead of cloud-init's
//! `{{ ds.meta_data.* }}` templates, which Ignition leaves as literal braces.
//!
//! Cluster API v1.14.0 `bootstrap/kubeadm/pkg/ignition/clc/clc.go` writes the kubeadm
//! configuration to `/etc/kubeadm.yml` and runs it from `kubeadm.service`; its package comment
//! names `envsubst` in `preKubeadmCommands` as the replacement for cloud-init's templates, and a
//! drop-in of `kubeadm.service` in `ignition.containerLinuxConfig.additionalConfig` as the way to
//! order it. Flatcar's `coreos-metadata.service` (Afterburn) writes `/run/metadata/flatcar`,
//! its variables starting `COREOS_`: upstream Afterburn dropped its `cl-legacy` feature in v5.0.0
//! (coreos/afterburn commit 3e4b623) and writes `AFTERBURN_` (v5.10.0 `src/providers/mod.rs`),
//! but Flatcar's afterburn ebuild applies `0001-Revert-remove-cl-legacy-feature.patch` and builds
//! with `--features cl-legacy`. The drop-in makes kubeadm wait for the agent (and for containerd)
//! and read its file, then `envsubst` fills the provider ID and node name in: the pattern of
//! CAPMOX v0.9.0 `templates/cluster-template-flatcar.yaml`.

use super::NodeWiring;

/// The `kubeadm.service` drop-in: kubeadm waits for Flatcar's metadata agent and sees its
/// variables, and starts after containerd (ordering only, no `Requires=`, as CAPMOX v0.9.0
/// `templates/cluster-template-flatcar.yaml:110,392` and CAPA/CAPZ/CAPV do after
/// kubernetes-sigs/image-builder#939: a kubeadm that wins the race with containerd fails its
/// preflight, and `kubeadm.service` runs once). A macro, so that both configurations below can
/// `concat!` it.
macro_rules! kubeadm_after_metadata {
    () => {
        "    - name: kubeadm.service
      dropins:
        - name: 10-flatcar.conf
          contents: |
            [Unit]
            # kubeadm's configuration names variables of /run/metadata/flatcar.
            Requires=coreos-metadata.service
            After=coreos-metadata.service
            # kubeadm's preflight needs containerd up: kubernetes-sigs/image-builder#939.
            After=containerd.service
            [Service]
            EnvironmentFile=/run/metadata/flatcar
"
    };
}

/// Where Flatcar's own metadata agent knows the platform (Hetzner).
const KUBEADM_AFTER_METADATA: &str = concat!("systemd:\n  units:\n", kubeadm_after_metadata!());

/// Proxmox has no metadata service Afterburn knows: CAPMOX writes the machine's identity to
/// `/etc/proxmox-env` in the Ignition it hands the VM (`COREOS_CUSTOM_HOSTNAME`,
/// `COREOS_CUSTOM_INSTANCE_ID`, `COREOS_CUSTOM_PROVIDER_ID`: v0.9.0 `pkg/ignition/enrich.go`,
/// `getProxmoxEnvContent`, used when the bootstrap Secret's `format` is `ignition`,
/// `internal/service/vmservice/bootstrap.go`), and this `coreos-metadata.service` copies it to
/// where kubeadm's drop-in reads it.
const PROXMOX_METADATA: &str = concat!(
    "systemd:
  units:
    - name: coreos-metadata.service
      contents: |
        [Unit]
        Description=Proxmox metadata agent (the machine's identity from CAPMOX)
        After=nss-lookup.target
        After=network-online.target
        Wants=network-online.target
        [Service]
        Type=oneshot
        Restart=on-failure
        RemainAfterExit=yes
        EnvironmentFile=/etc/proxmox-env
        ExecStart=/usr/bin/mkdir --parent /run/metadata
        ExecStart=/bin/bash -c 'env > /run/metadata/flatcar'
        [Install]
        WantedBy=multi-user.target
",
    kubeadm_after_metadata!()
);

/// Fills the metadata variables into kubeadm's configuration before kubeadm reads it.
const ENVSUBST: [&str; 2] = [
    "envsubst < /etc/kubeadm.yml > /etc/kubeadm.yml.tmp",
    "mv /etc/kubeadm.yml.tmp /etc/kubeadm.yml",
];

/// Flatcar's own administrator, who has sudo there; the SSH keys go to it.
const USER: &str = "core";

/// Afterburn before v5.7.0 wrote its Hetzner variables with the prefix twice
/// (`COREOS_COREOS_HETZNER_*`; fixed by coreos/afterburn commit 6effcd3, PR #1083), and Flatcar
/// releases ship such an Afterburn; Flatcar's own Hetzner guide falls back to that name. So the
/// names kubeadm's configuration uses are exported from either before `envsubst` runs: Cluster
/// API v1.14.0 `bootstrap/kubeadm/pkg/ignition/clc/clc.go:210-225` runs all `preKubeadmCommands`
/// in one bash script (`/etc/kubeadm.sh`, `set -e`), in `kubeadm.service`, whose environment
/// holds `/run/metadata/flatcar`. Without a server ID the script stops with a message (`:?`)
/// rather than join a node as `hcloud://` that no Machine ever matches; without a name,
/// kubeadm's default (the hostname) stays.
const HETZNER_FALLBACK: [&str; 2] = [
    r#"export COREOS_HETZNER_INSTANCE_ID="${COREOS_HETZNER_INSTANCE_ID:-${COREOS_COREOS_HETZNER_INSTANCE_ID:?no Hetzner server ID in /run/metadata/flatcar}}""#,
    r#"export COREOS_HETZNER_HOSTNAME="${COREOS_HETZNER_HOSTNAME:-${COREOS_COREOS_HETZNER_HOSTNAME:-}}""#,
];

/// The hcloud CCM's `hcloud://<server ID>` and the server's name, from Afterburn's Hetzner
/// provider (coreos/afterburn `src/providers/hetzner/mod.rs`: `HETZNER_INSTANCE_ID`,
/// `HETZNER_HOSTNAME`), under either name Afterburn has written them ([`HETZNER_FALLBACK`]).
pub(super) fn hetzner(cloud_init: NodeWiring) -> NodeWiring {
    let wiring = ignition(cloud_init, KUBEADM_AFTER_METADATA);
    NodeWiring {
        provider_id: Some("hcloud://${COREOS_HETZNER_INSTANCE_ID}"),
        node_name: Some("${COREOS_HETZNER_HOSTNAME}"),
        pre_kubeadm_commands: HETZNER_FALLBACK
            .into_iter()
            .chain(wiring.pre_kubeadm_commands.iter().copied())
            .collect(),
        ..wiring
    }
}

/// CAPMOX's provider ID, as its Flatcar template writes it, from CAPMOX's `/etc/proxmox-env`.
pub(super) fn proxmox(cloud_init: NodeWiring) -> NodeWiring {
    NodeWiring {
        provider_id: Some("proxmox://'${COREOS_CUSTOM_INSTANCE_ID}'"),
        ..ignition(cloud_init, PROXMOX_METADATA)
    }
}

/// The provider's cloud-init wiring (its files, flags, cloud provider) as Ignition.
fn ignition(cloud_init: NodeWiring, config: &'static str) -> NodeWiring {
    NodeWiring {
        ignition: true,
        ignition_config: Some(config),
        pre_kubeadm_commands: ENVSUBST.to_vec(),
        user: Some(USER),
        ..cloud_init
    }
}
