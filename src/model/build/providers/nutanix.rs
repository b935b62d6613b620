//! The `nutanix` block (CAPX, Nutanix AHV virtual machines).

use super::{is_uuid, secret, text};
use crate::diagnostics::Diagnostic;
use crate::model::{NutanixCluster, NutanixRef};
use crate::spec::raw::Nutanix;
use crate::spec::source::Source;

/// Validates the block at `field`.
pub(super) fn cluster(src: &Source, field: &str, n: &Nutanix, errs: &mut Vec<Diagnostic>) -> NutanixCluster {
    let pc = &n.prism_central;
    text(
        src,
        &format!("{field}.prismCentral.address"),
        &pc.address,
        "address",
        errs,
    );
    if pc.port == Some(0) {
        errs.push(
            src.error(&format!("{field}.prismCentral.port"), "port 0 is not a port")
                .with_hint("Prism Central listens on 9440 unless you changed it; leave the field out for 9440"),
        );
    }
    secret(
        src,
        &format!("{field}.prismCentral.credentialsSecret"),
        &pc.credentials_secret,
        errs,
    );
    let mut reference = |key: &str, value: &str| {
        text(src, &format!("{field}.{key}"), value, "name or UUID", errs);
        if is_uuid(value) {
            NutanixRef::Uuid(value.to_string())
        } else {
            NutanixRef::Name(value.to_string())
        }
    };
    NutanixCluster {
        address: pc.address.clone(),
        port: pc.port.unwrap_or(9440),
        insecure: pc.insecure.unwrap_or(false),
        credentials_secret: pc.credentials_secret.clone(),
        cluster: reference("cluster", &n.cluster),
        subnet: reference("subnet", &n.subnet),
        image: reference("image", &n.image),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn uuids_are_told_from_names() {
        assert!(super::is_uuid("00000000-1111-2222-3333-444444444444"));
        assert!(!super::is_uuid("ubuntu-2404-kube-v1.33.4"));
        assert!(!super::is_uuid("cloud-dev"));
    }
}
