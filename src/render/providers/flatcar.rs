//! Flatcar Container Linux pools: kubeadm's configuration as Ignition (`format: ignition`),
//! with the machine's identity read from Flatcar's metadata agent instead of cloud-init's
//! `{{ ds.meta_data.* }}` templates, which Ignition leaves as literal braces.
//!
//! Cluster API v1.14.0 `bootstrap/kubeadm/pkg/ignition/clc/clc.go` writes the kubeadm
//! configuration to `/etc/kubeadm.yml` and runs it from `kubeadm.service`; its package comment
//! names `envsubst` in `preKubeadmCommands` as the replacement for cloud-init's templates, and a
//! drop-in of `kubeadm.service` in `ignition.containerLinuxConfig.additionalConfig` as the way to
//! order it. Flatcar's `coreos-metadata.service` (Afterburn built with `cl-legacy`, so its
//! variables start `COREOS_`: coreos/afterburn `src/providers/mod.rs`, `ENV_PREFIX`) writes
//! `/run/metadata/flatcar`; the drop-in makes kubeadm wait for it and read it, then `envsubst`
//! fills the provider ID and node name in: the pattern of CAPMOX v0.9.0
//! `templates/cluster-template-flatcar.yaml`.

use super::NodeWiring;

/// The `kubeadm.service` drop-in: kubeadm waits for Flatcar's metadata agent and sees its
/// variables. A macro, so that both configurations below can `concat!` it.
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

/// The hcloud CCM's `hcloud://<server ID>` and the server's name, from Afterburn's Hetzner
/// provider (coreos/afterburn `src/providers/hetzner/mod.rs`: `HETZNER_INSTANCE_ID`,
/// `HETZNER_HOSTNAME`).
pub(super) fn hetzner(cloud_init: NodeWiring) -> NodeWiring {
    NodeWiring {
        provider_id: Some("hcloud://${COREOS_HETZNER_INSTANCE_ID}"),
        node_name: Some("${COREOS_HETZNER_HOSTNAME}"),
        ..ignition(cloud_init, KUBEADM_AFTER_METADATA)
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
