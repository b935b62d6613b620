//! `spec.backups` of kaas.yaml and a tenant's `dataStore.dedicated.backup` -> the backup model.

use crate::diagnostics::Diagnostic;
use crate::model::build::fields::{ETCD_JOB_IMAGE, image_or_default, storage_size};
use crate::model::build::names::is_dns1123_subdomain;
use crate::model::{BackupDestination, BackupPolicy, Backups, Platform};
use crate::spec::raw;
use crate::spec::source::Source;

/// The default snapshot image: the one the kamaji-etcd chart's shell jobs use.
const BACKUP_IMAGE: (&str, &str) = ETCD_JOB_IMAGE;
/// The default uploader for S3 destinations: a shell and the `aws` CLI.
const S3_IMAGE: (&str, &str) = ("docker.io/amazon/aws-cli", "2.17.0");
const DEFAULT_SCHEDULE: &str = "0 */6 * * *";
const DEFAULT_RETENTION: u32 = 7;

/// Builds `spec.backups`; problems go to `errs`.
pub fn platform(src: &Source, b: Option<&raw::Backups>, errs: &mut Vec<Diagnostic>) -> Option<Backups> {
    let b = b?;
    let field = "spec.backups";
    let policy = BackupPolicy {
        schedule: schedule(
            src,
            &format!("{field}.schedule"),
            b.schedule.as_deref(),
            DEFAULT_SCHEDULE,
            errs,
        ),
        retention: retention(src, &format!("{field}.retention"), b.retention, DEFAULT_RETENTION, errs),
    };
    let backup_image = image_or_default(src, &format!("{field}.image"), b.image.as_ref(), BACKUP_IMAGE, errs);
    let dest = format!("{field}.destination");
    let destination = match (&b.destination.pvc, &b.destination.s3) {
        (Some(pvc), None) => {
            let size = storage_size(src, &format!("{dest}.pvc.size"), pvc.size.as_ref(), errs);
            if let Some(class) = &pvc.storage_class
                && !is_dns1123_subdomain(class)
            {
                errs.push(
                    src.error(
                        &format!("{dest}.pvc.storageClass"),
                        format!("`{class}` is not a storage class name"),
                    )
                    .with_hint("lower-case letters, digits, `-` and `.`"),
                );
            }
            BackupDestination::Pvc {
                size,
                storage_class: pvc.storage_class.clone(),
            }
        }
        (None, Some(s3)) => {
            if !is_dns1123_subdomain(&s3.credentials_secret) {
                errs.push(
                    src.error(
                        &format!("{dest}.s3.credentialsSecret"),
                        format!("`{}` is not a Secret name", s3.credentials_secret),
                    )
                    .with_hint("name a Secret (lower-case letters, digits, `-` and `.`) with the keys `endpoint`, `bucket`, `accessKeyID` and `secretAccessKey`"),
                );
            }
            BackupDestination::S3 {
                credentials_secret: s3.credentials_secret.clone(),
                image: image_or_default(src, &format!("{dest}.s3.image"), s3.image.as_ref(), S3_IMAGE, errs),
            }
        }
        _ => {
            errs.push(
                src.error(&dest, "give exactly one of `pvc` or `s3`")
                    .with_hint("`pvc: {size: 10Gi}` keeps snapshots on a volume next to each etcd; `s3: {credentialsSecret: NAME}` uploads them"),
            );
            return None;
        }
    };
    Some(Backups {
        policy,
        destination,
        image: backup_image,
    })
}

/// The backup policy of a tenant's dedicated etcd: the platform's, with the tenant's override.
pub fn tenant(
    src: &Source,
    b: Option<&raw::TenantBackup>,
    platform: &Platform,
    errs: &mut Vec<Diagnostic>,
) -> Option<BackupPolicy> {
    let field = "spec.controlPlane.dataStore.dedicated.backup";
    let Some(defaults) = platform.backups.as_ref().map(|b| &b.policy) else {
        if b.is_some_and(|b| b.enabled != Some(false)) {
            errs.push(
                src.error(
                    field,
                    "kaas.yaml sets no `spec.backups`, so there is nothing to override",
                )
                .with_hint("turn backups on for the platform in kaas.yaml (`spec.backups`), or remove this block"),
            );
        }
        return None;
    };
    let Some(b) = b else {
        return Some(defaults.clone());
    };
    if b.enabled == Some(false) {
        return None;
    }
    Some(BackupPolicy {
        schedule: schedule(
            src,
            &format!("{field}.schedule"),
            b.schedule.as_deref(),
            &defaults.schedule,
            errs,
        ),
        retention: retention(
            src,
            &format!("{field}.retention"),
            b.retention,
            defaults.retention,
            errs,
        ),
    })
}

fn schedule(src: &Source, field: &str, given: Option<&str>, default: &str, errs: &mut Vec<Diagnostic>) -> String {
    let s = given.unwrap_or(default);
    if !is_cron(s) {
        errs.push(
            src.error(field, format!("`{s}` is not a cron schedule"))
                .with_hint("five fields, minute hour day-of-month month day-of-week, in UTC (e.g. `0 */6 * * *`), or @hourly, @daily, @weekly, @monthly"),
        );
    }
    s.to_string()
}

fn retention(src: &Source, field: &str, given: Option<u32>, default: u32, errs: &mut Vec<Diagnostic>) -> u32 {
    let r = given.unwrap_or(default);
    if r == 0 {
        errs.push(
            src.error(field, "a retention of 0 would delete every snapshot it takes")
                .with_hint("keep at least 1 snapshot (default 7)"),
        );
    }
    r
}

/// A cron expression the Kubernetes CronJob controller accepts: five fields of numbers, `*`,
/// ranges, lists and steps (names like `MON` too), or a macro. `CRON_TZ=`/`TZ=` prefixes are
/// refused because `spec.timeZone` is set to UTC. The shape (five fields, no seconds, no Quartz
/// extensions such as `L`, `W` or `#`) is checked here; the values (minute 0-59, hour 0-23, day
/// 1-31, month 1-12 or a name, weekday 0-7 or a name) by the `croner` parser.
fn is_cron(s: &str) -> bool {
    if s.starts_with('@') {
        return [
            "@yearly",
            "@annually",
            "@monthly",
            "@weekly",
            "@daily",
            "@midnight",
            "@hourly",
        ]
        .contains(&s);
    }
    let fields: Vec<&str> = s.split_whitespace().collect();
    // A value is a number or a three-letter name (`JAN`, `MON`).
    let value = |v: &str| {
        !v.is_empty()
            && (v.bytes().all(|b| b.is_ascii_digit()) || v.len() == 3 && v.bytes().all(|b| b.is_ascii_alphabetic()))
    };
    let shape = fields.len() == 5
        && fields.iter().all(|f| {
            f.split(',').all(|part| {
                let (range, step) = part.split_once('/').unwrap_or((part, "1"));
                let step_ok = !step.is_empty() && step.bytes().all(|b| b.is_ascii_digit());
                let range_ok = range == "*" || range.split('-').count() <= 2 && range.split('-').all(value);
                step_ok && range_ok
            })
        });
    shape
        && croner::parser::CronParser::builder()
            .seconds(croner::parser::Seconds::Disallowed)
            .year(croner::parser::Year::Disallowed)
            .build()
            .parse(s)
            .is_ok()
}

#[cfg(test)]
mod tests {
    use super::is_cron;

    #[test]
    fn cron_expressions() {
        for ok in [
            "0 */6 * * *",
            "30 2 * * 1-5",
            "0 0,12 1 */2 MON",
            "@daily",
            "59 23 31 12 6",
            "0 9 * JAN-MAR MON-FRI",
            "*/15 * * * *",
        ] {
            assert!(is_cron(ok), "{ok}");
        }
        for bad in [
            "",
            "* * * *",
            "0 */6 * * * *",
            "@sometimes",
            "0 -1 * * *",
            "0 */ * * *",
            "TZ=UTC 0 * * * *",
            "99 99 99 99 zz",
            "60 * * * *",
            "0 24 * * *",
            "0 0 0 * *",
            "0 0 32 * *",
            "0 0 * 13 *",
            "0 0 * FOO *",
            "0 0 L * *",
            "0 0 * * 5#3",
            "0 0 15W * *",
            "0 0 0 * * *",
        ] {
            assert!(!is_cron(bad), "{bad}");
        }
    }
}
