//! The `aws` block (CAPA, EC2 instances).

use super::text;
use crate::diagnostics::Diagnostic;
use crate::model::AwsCluster;
use crate::spec::raw::Aws;
use crate::spec::source::Source;

/// Validates the block at `field`.
pub(super) fn cluster(src: &Source, field: &str, a: &Aws, errs: &mut Vec<Diagnostic>) -> AwsCluster {
    let region_ok = a.region.split('-').count() >= 3
        && a.region
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && a.region.ends_with(|c: char| c.is_ascii_digit());
    if !region_ok {
        errs.push(
            src.error(
                &format!("{field}.region"),
                format!("`{}` is not an AWS region", a.region),
            )
            .with_hint("write a region code such as `eu-central-1` or `us-east-1`"),
        );
    }
    let ami_ok = a
        .ami
        .strip_prefix("ami-")
        .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit()));
    if !ami_ok {
        errs.push(
            src.error(&format!("{field}.ami"), format!("`{}` is not an AMI ID", a.ami))
                .with_hint("write the image's ID, e.g. `ami-0123456789abcdef0`"),
        );
    }
    if let Some(kind) = &a.instance_type {
        text(src, &format!("{field}.instanceType"), kind, "instance type", errs);
    }
    if let Some(key) = &a.ssh_key_name {
        text(src, &format!("{field}.sshKeyName"), key, "key pair name", errs);
    }
    AwsCluster {
        region: a.region.clone(),
        ami: a.ami.clone(),
        instance_type: a.instance_type.clone().unwrap_or_else(|| "t3.large".into()),
        ssh_key_name: a.ssh_key_name.clone(),
    }
}
