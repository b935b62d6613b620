//! The `metal3` block (CAPM3, bare metal through Metal³ and Ironic).

use super::{one_of, text};
use crate::diagnostics::Diagnostic;
use crate::model::Metal3Cluster;
use crate::model::build::fields::labels;
use crate::spec::raw::Metal3;
use crate::spec::source::Source;

/// `image.checksumType` and `image.diskFormat` of `Metal3MachineTemplate` v1beta2
/// (cluster-api-provider-metal3 v1.13.2 CRD).
const CHECKSUM_TYPES: [&str; 3] = ["sha256", "sha512", "md5"];
const FORMATS: [&str; 5] = ["raw", "qcow2", "vdi", "vmdk", "live-iso"];

/// Validates the block at `field`.
pub(super) fn cluster(src: &Source, field: &str, m: &Metal3, errs: &mut Vec<Diagnostic>) -> Metal3Cluster {
    let url_field = format!("{field}.image.url");
    text(src, &url_field, &m.image.url, "image URL", errs);
    let host = m
        .image
        .url
        .strip_prefix("http://")
        .or_else(|| m.image.url.strip_prefix("https://"));
    if !host.is_some_and(|h| !h.is_empty() && !h.starts_with('/')) {
        errs.push(
            src.error(&url_field, format!("`{}` is not an http(s) URL", m.image.url))
                .with_hint("Ironic downloads the image from it, e.g. `http://172.22.0.1/images/ubuntu-2404.raw`"),
        );
    }
    let format = m.image.format.clone().unwrap_or_else(|| "raw".into());
    one_of(
        src,
        &format!("{field}.image.format"),
        &format,
        "disk format",
        &FORMATS,
        errs,
    );
    if format != "live-iso" {
        // CAPM3's webhook wants a checksum for every disk image (v1beta2 `common_types.go`).
        text(
            src,
            &format!("{field}.image.checksum"),
            &m.image.checksum,
            "checksum",
            errs,
        );
    }
    let checksum_type = m.image.checksum_type.clone().unwrap_or_else(|| "sha256".into());
    one_of(
        src,
        &format!("{field}.image.checksumType"),
        &checksum_type,
        "checksum type",
        &CHECKSUM_TYPES,
        errs,
    );
    labels(src, &format!("{field}.hostSelector"), &m.host_selector, errs);
    Metal3Cluster {
        image_url: m.image.url.clone(),
        checksum: m.image.checksum.clone(),
        checksum_type,
        format,
        host_selector: m.host_selector.clone(),
    }
}
