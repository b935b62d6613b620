//! The `azure` block (CAPZ, Azure virtual machines).

use super::{is_uuid, text};
use crate::diagnostics::Diagnostic;
use crate::model::AzureCluster;
use crate::model::build::names::is_dns1123_label;
use crate::spec::raw::Azure;
use crate::spec::source::Source;

/// The key types CAPZ's webhook accepts in `sshPublicKey` (it parses an authorized_keys line:
/// cluster-api-provider-azure v1.26.0 `internal/webhooks/azuremachine_validation.go`).
const KEY_TYPES: [&str; 4] = ["ssh-rsa", "ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384"];

/// Validates the block at `field`.
pub(super) fn cluster(src: &Source, field: &str, a: &Azure, errs: &mut Vec<Diagnostic>) -> AzureCluster {
    text(src, &format!("{field}.location"), &a.location, "region", errs);
    // AzureClusterIdentity names: CAPZ's webhook (`azurecluster_validation.go`) takes 2-44
    // lower-case letters, digits and `-`.
    if !(is_dns1123_label(&a.identity) && (2..=44).contains(&a.identity.len())) {
        errs.push(
            src.error(
                &format!("{field}.identity"),
                format!("`{}` is not an AzureClusterIdentity name", a.identity),
            )
            .with_hint("2-44 lower-case letters, digits and `-`, as CAPZ's webhook accepts"),
        );
    }
    if let Some(s) = &a.subscription_id
        && !is_uuid(s)
    {
        errs.push(src.error(
            &format!("{field}.subscriptionID"),
            format!("`{s}` is not a subscription ID (a UUID)"),
        ));
    }
    if let Some(g) = &a.resource_group {
        text(src, &format!("{field}.resourceGroup"), g, "resource group", errs);
    }
    let vm_size = a.vm_size.clone().unwrap_or_else(|| "Standard_D2s_v3".into());
    text(src, &format!("{field}.vmSize"), &vm_size, "VM size", errs);
    let key = a.ssh_public_key.trim();
    let mut parts = key.split_whitespace();
    let well_formed = matches!(
        (parts.next(), parts.next()),
        (Some(kind), Some(body)) if KEY_TYPES.contains(&kind) && body.len() > 16
    );
    if !well_formed {
        errs.push(
            src.error(&format!("{field}.sshPublicKey"), "not an OpenSSH public key")
                .with_hint("paste a public key line, e.g. the contents of `~/.ssh/id_ed25519.pub` (`ssh-ed25519 AAAA...`); kaas-gitops encodes it as CAPZ wants"),
        );
    }
    AzureCluster {
        location: a.location.clone(),
        identity: a.identity.clone(),
        identity_namespace: a.identity_namespace.clone(),
        subscription_id: a.subscription_id.clone(),
        resource_group: a.resource_group.clone(),
        vm_size,
        ssh_public_key: key.to_string(),
    }
}
