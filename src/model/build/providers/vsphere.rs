//! The `vsphere` block (CAPV, VMware vSphere virtual machines).

use super::{inventory_name, one_of, secret, text};
use crate::diagnostics::Diagnostic;
use crate::model::{VsphereCluster, VsphereIdentity};
use crate::spec::raw::Vsphere;
use crate::spec::source::Source;

/// `VSphereMachineTemplate.spec.template.spec.cloneMode` (CAPV v1.16.1 `apis/v1beta2`).
const CLONE_MODES: [&str; 2] = ["fullClone", "linkedClone"];

/// Validates the block at `field`.
pub(super) fn cluster(src: &Source, field: &str, v: &Vsphere, errs: &mut Vec<Diagnostic>) -> VsphereCluster {
    text(src, &format!("{field}.server"), &v.server, "vCenter address", errs);
    if let Some(t) = &v.thumbprint {
        text(src, &format!("{field}.thumbprint"), t, "certificate fingerprint", errs);
    }
    let identity = match (&v.credentials_secret, &v.identity) {
        (Some(s), None) => {
            secret(src, &format!("{field}.credentialsSecret"), s, errs);
            VsphereIdentity::Secret(s.clone())
        }
        (None, Some(i)) => {
            secret(src, &format!("{field}.identity"), i, errs);
            VsphereIdentity::ClusterIdentity(i.clone())
        }
        (Some(_), Some(_)) => {
            errs.push(
                src.error(&format!("{field}.identity"), "both `credentialsSecret` and `identity`")
                    .with_hint("CAPV takes one `identityRef`: a Secret in the tenant namespace, or a VSphereClusterIdentity; remove the other"),
            );
            VsphereIdentity::Secret(String::new())
        }
        (None, None) => {
            errs.push(
                src.error(field, "the vSphere block needs vCenter credentials")
                    .with_hint("add `credentialsSecret: <Secret with username and password in the tenant namespace>`, or `identity: <VSphereClusterIdentity>`"),
            );
            VsphereIdentity::Secret(String::new())
        }
    };
    if let Some(s) = &v.cloud_provider_secret {
        secret(src, &format!("{field}.cloudProviderSecret"), s, errs);
    }
    let cloud_provider_secret = v.cloud_provider_secret.clone().or_else(|| match &identity {
        VsphereIdentity::Secret(s) => Some(s.clone()),
        VsphereIdentity::ClusterIdentity(_) => None,
    });
    inventory_name(src, &format!("{field}.datacenter"), &v.datacenter, "datacenter", errs);
    inventory_name(src, &format!("{field}.network"), &v.network, "port group", errs);
    inventory_name(src, &format!("{field}.template"), &v.template, "VM template", errs);
    for (key, value) in [
        ("datastore", &v.datastore),
        ("folder", &v.folder),
        ("resourcePool", &v.resource_pool),
        ("storagePolicy", &v.storage_policy),
    ] {
        if let Some(value) = value {
            inventory_name(src, &format!("{field}.{key}"), value, key, errs);
        }
    }
    let clone_mode = v.clone_mode.clone().unwrap_or_else(|| "fullClone".into());
    one_of(
        src,
        &format!("{field}.cloneMode"),
        &clone_mode,
        "clone mode",
        &CLONE_MODES,
        errs,
    );
    VsphereCluster {
        server: v.server.clone(),
        thumbprint: v.thumbprint.clone(),
        identity,
        cloud_provider_secret,
        datacenter: v.datacenter.clone(),
        datastore: v.datastore.clone(),
        network: v.network.clone(),
        template: v.template.clone(),
        folder: v.folder.clone(),
        resource_pool: v.resource_pool.clone(),
        storage_policy: v.storage_policy.clone(),
        clone_mode,
    }
}
