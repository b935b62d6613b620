//! The `ionoscloud` block (CAPIC, IONOS Cloud servers).

use super::{is_uuid, one_of, secret};
use crate::diagnostics::Diagnostic;
use crate::model::build::fields::labels;
use crate::model::{IonosImage, IonoscloudCluster};
use crate::spec::raw::Ionoscloud;
use crate::spec::source::Source;

/// `IonosCloudMachineTemplate` enums (cluster-api-provider-ionoscloud v0.6.3 CRD).
const TYPES: [&str; 2] = ["VCPU", "ENTERPRISE"];
const DISK_TYPES: [&str; 3] = ["HDD", "SSD Standard", "SSD Premium"];
const ZONES: [&str; 3] = ["AUTO", "ZONE_1", "ZONE_2"];

/// Validates the block at `field`.
pub(super) fn cluster(src: &Source, field: &str, i: &Ionoscloud, errs: &mut Vec<Diagnostic>) -> IonoscloudCluster {
    secret(src, &format!("{field}.credentialsSecret"), &i.credentials_secret, errs);
    if !is_uuid(&i.datacenter_id) {
        errs.push(
            src.error(
                &format!("{field}.datacenterID"),
                format!("`{}` is not a UUID", i.datacenter_id),
            )
            .with_hint("the data center's UUID, as `ionosctl datacenter list` shows it"),
        );
    }
    let image = match (&i.image, i.image_selector.is_empty()) {
        (Some(id), true) => {
            if !is_uuid(id) {
                errs.push(
                    src.error(&format!("{field}.image"), format!("`{id}` is not a UUID"))
                        .with_hint("the image's UUID, or `imageSelector: {...}` to select it by labels"),
                );
            }
            IonosImage::Id(id.clone())
        }
        (None, false) => {
            labels(src, &format!("{field}.imageSelector"), &i.image_selector, errs);
            IonosImage::Selector(i.image_selector.clone())
        }
        (Some(_), false) => {
            errs.push(
                src.error(&format!("{field}.imageSelector"), "both `image` and `imageSelector`")
                    .with_hint("name the image by UUID or select it by labels, not both"),
            );
            IonosImage::Selector(i.image_selector.clone())
        }
        (None, true) => {
            errs.push(
                src.error(field, "the IONOS Cloud block needs a boot image")
                    .with_hint("add `image: <UUID>`, or `imageSelector: {...}`"),
            );
            IonosImage::Id(String::new())
        }
    };
    let server_type = i.server_type.clone().unwrap_or_else(|| "VCPU".into());
    one_of(src, &format!("{field}.type"), &server_type, "server type", &TYPES, errs);
    if let Some(d) = &i.disk_type {
        one_of(src, &format!("{field}.diskType"), d, "disk type", &DISK_TYPES, errs);
    }
    if let Some(z) = &i.availability_zone {
        one_of(
            src,
            &format!("{field}.availabilityZone"),
            z,
            "availability zone",
            &ZONES,
            errs,
        );
    }
    IonoscloudCluster {
        credentials_secret: i.credentials_secret.clone(),
        datacenter_id: i.datacenter_id.clone(),
        image,
        server_type,
        disk_type: i.disk_type.clone(),
        availability_zone: i.availability_zone.clone(),
    }
}
