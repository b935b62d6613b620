//! The `kubevirt` block (CAPK, virtual machines in the management cluster).

use super::text;
use crate::diagnostics::Diagnostic;
use crate::model::KubevirtCluster;
use crate::model::build::names::is_dns1123_subdomain;
use crate::spec::raw::Kubevirt;
use crate::spec::source::Source;

/// Validates the block at `field`.
pub(super) fn cluster(src: &Source, field: &str, k: &Kubevirt, errs: &mut Vec<Diagnostic>) -> KubevirtCluster {
    text(src, &format!("{field}.image"), &k.image, "image reference", errs);
    if k.image.contains("://") {
        errs.push(
            src.error(&format!("{field}.image"), format!("`{}` is a URL, not an image reference", k.image))
                .with_hint("write the container disk as `registry/path/name:tag`, e.g. `quay.io/capk/ubuntu-2404-container-disk:v1.33.4`"),
        );
    }
    if let Some(class) = &k.storage_class
        && !is_dns1123_subdomain(class)
    {
        errs.push(src.error(
            &format!("{field}.storageClass"),
            format!("`{class}` is not a storage class name"),
        ));
    }
    KubevirtCluster {
        image: k.image.clone(),
        storage_class: k.storage_class.clone(),
    }
}
