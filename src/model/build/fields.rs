//! Checks of single fields that the platform, the tenants and the backups share: the file's
//! header, Kubernetes and provider versions, address ranges, images (repository, tag, tag
//! policy), labels and storage sizes. A leaf: every builder may call it, it calls none of them.

use std::net::IpAddr;

use crate::diagnostics::Diagnostic;
use crate::model::{Chart, ImageSpec, KubeVersion, TagPolicy};
use crate::spec::raw::{self, API_VERSION};
use crate::spec::source::Source;

/// The newest etcd image that still has `/bin/sh` (v3.6 images are distroless); backups use it
/// too.
pub(crate) const ETCD_JOB_IMAGE: (&str, &str) = ("quay.io/coreos/etcd", "v3.5.6");

/// `img` checked, or the pinned `default` (repository, tag) when the spec leaves it out.
pub(crate) fn image_or_default(
    src: &Source,
    field: &str,
    img: Option<&raw::Image>,
    (repository, tag): (&str, &str),
    errs: &mut Vec<Diagnostic>,
) -> ImageSpec {
    match img {
        Some(i) => image(src, field, i, None, false, errs),
        None => ImageSpec {
            repository: repository.into(),
            tag: Some(tag.into()),
            policy: None,
            field: field.into(),
        },
    }
}

pub(crate) fn image(
    src: &Source,
    field: &str,
    img: &raw::Image,
    default_tag: Option<&str>,
    policy_allowed: bool,
    errs: &mut Vec<Diagnostic>,
) -> ImageSpec {
    if !is_repository(&img.repository) {
        errs.push(
            src.error(
                &format!("{field}.repository"),
                format!("`{}` is not an image repository", img.repository),
            )
            .with_hint(
                "write `registry/path/name` in lower case without tag or digest, e.g. `docker.io/clastix/kamaji`",
            ),
        );
    }
    if let Some(tag) = &img.tag
        && !is_tag(tag)
    {
        errs.push(
            src.error(&format!("{field}.tag"), format!("`{tag}` is not an image tag"))
                .with_hint("a tag is up to 128 letters, digits, `_`, `.`, `-`, not starting with `.` or `-`; digests come from `kaas.lock`"),
        );
    }
    let policy = img.tag_policy.as_ref().map(|p| TagPolicy {
        pattern: p.pattern,
        exclude: p.exclude.clone(),
    });
    match (&img.tag, &policy) {
        (Some(_), Some(_)) => errs.push(
            src.error(&format!("{field}.tagPolicy"), "`tag` and `tagPolicy` are exclusive")
                .with_hint("keep `tag` to pin one tag, or `tagPolicy` to let `pin --update` pick the newest"),
        ),
        (None, None) if default_tag.is_none() => {
            errs.push(src.error(field, "the image has no `tag`").with_hint(if policy_allowed {
                "add `tag: ...` or `tagPolicy: {pattern: edge}`"
            } else {
                "add `tag: ...`"
            }))
        }
        (None, Some(_)) if !policy_allowed => errs.push(
            src.error(
                &format!("{field}.tagPolicy"),
                "a tag policy is only supported for the Kamaji image",
            )
            .with_hint("pin this image with `tag: ...`"),
        ),
        _ => {}
    }
    ImageSpec {
        repository: img.repository.clone(),
        tag: img.tag.clone().or_else(|| {
            if policy.is_none() {
                default_tag.map(str::to_string)
            } else {
                None
            }
        }),
        policy,
        field: field.to_string(),
    }
}

fn is_repository(s: &str) -> bool {
    !s.is_empty()
        && !s.contains('@')
        && !s.rsplit('/').next().unwrap_or("").contains(':')
        && s.split('/').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'_' | b':'))
        })
}

fn is_tag(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && (b[0].is_ascii_alphanumeric() || b[0] == b'_')
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
}

/// A volume size: `size` checked, `10Gi` when the spec leaves it out.
pub(crate) fn storage_size(
    src: &Source,
    field: &str,
    size: Option<&raw::Quantity>,
    errs: &mut Vec<Diagnostic>,
) -> String {
    let size = size.map_or_else(|| "10Gi".to_string(), raw::Quantity::as_string);
    if !is_quantity(&size) {
        errs.push(
            src.error(field, format!("`{size}` is not a storage size"))
                .with_hint("write a Kubernetes quantity such as `10Gi`"),
        );
    }
    size
}

pub(crate) fn is_quantity(s: &str) -> bool {
    let digits = s.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &s[digits.len()..];
    !digits.is_empty()
        && digits.parse::<f64>().is_ok_and(|v| v > 0.0)
        && ["", "Ki", "Mi", "Gi", "Ti", "Pi", "k", "M", "G", "T", "P"].contains(&suffix)
}

/// A Helm chart source: an `https://` or `oci://` repository and a version.
pub(crate) fn chart(src: &Source, field: &str, name: &str, c: &raw::Chart, errs: &mut Vec<Diagnostic>) -> Chart {
    let ok = ["https://", "http://", "oci://"]
        .iter()
        .any(|p| c.repository.starts_with(p) && c.repository.len() > p.len());
    if !ok {
        errs.push(
            src.error(
                &format!("{field}.repository"),
                format!("`{}` is not a Helm repository URL", c.repository),
            )
            .with_hint("write an `https://` Helm repository or an `oci://` registry path"),
        );
    }
    if c.version.trim().is_empty() {
        errs.push(
            src.error(&format!("{field}.version"), "empty chart version")
                .with_hint("write a version such as `0.17.0`"),
        );
    }
    Chart {
        name: name.to_string(),
        repository: c.repository.trim_end_matches('/').to_string(),
        version: c.version.clone(),
    }
}

/// Checks `apiVersion` and `kind`.
pub fn header(src: &Source, api_version: &str, kind: &str, want: &str, errs: &mut Vec<Diagnostic>) {
    if api_version != API_VERSION {
        errs.push(
            src.error("apiVersion", format!("unsupported apiVersion `{api_version}`"))
                .with_hint(format!("write `apiVersion: {API_VERSION}`")),
        );
    }
    if kind != want {
        errs.push(
            src.error("kind", format!("expected kind `{want}`, found `{kind}`"))
                .with_hint(format!("write `kind: {want}`")),
        );
    }
}

/// Parses a Kubernetes version field, refusing YAML numbers with a hint to quote them.
pub fn version(src: &Source, field: &str, text: &str, errs: &mut Vec<Diagnostic>) -> Option<KubeVersion> {
    // Only a value that reads as a number can have been one: the span index is consulted (and,
    // for a cached file, built) only then.
    if text.parse::<f64>().is_ok()
        && let Some(s) = src.scalar(field)
        && s.plain
        && s.text.parse::<f64>().is_ok()
    {
        errs.push(
            src.error(
                field,
                format!("the version `{}` is a YAML number, not a string", s.text),
            )
            .with_hint(format!(
                "quote it and give all three parts: `\"v{}.0\"`; YAML reads `1.30` as the float 1.3",
                s.text
            )),
        );
        return None;
    }
    let parsed = KubeVersion::parse(text);
    if parsed.is_none() {
        errs.push(
            src.error(field, format!("`{text}` is not a Kubernetes version"))
                .with_hint("write `vMAJOR.MINOR.PATCH`, e.g. `v1.33.4`"),
        );
    }
    parsed
}

/// A provider release: `vMAJOR.MINOR.PATCH`.
pub(crate) fn release(src: &Source, field: &str, ver: &str, errs: &mut Vec<Diagnostic>) {
    if !ver.starts_with('v') || KubeVersion::parse(ver).is_none() {
        errs.push(
            src.error(field, format!("`{ver}` is not a release version"))
                .with_hint("write the provider release as `vMAJOR.MINOR.PATCH`, e.g. `v0.9.0`"),
        );
    }
}

/// `a-b` (inclusive) or a CIDR, as an inclusive range of one family.
/// Address pools (`FIRST-LAST` or CIDRs) at `field` (`spec.loadBalancer.pools`, a management
/// cluster's `pools`): the parsed ranges, an error per entry that is none.
pub(crate) fn pools(src: &Source, field: &str, pools: &[String], errs: &mut Vec<Diagnostic>) -> Vec<(IpAddr, IpAddr)> {
    let mut out = Vec::new();
    for (i, pool) in pools.iter().enumerate() {
        match parse_range(pool) {
            Some(r) => out.push(r),
            None => errs.push(
                src.error(&format!("{field}[{i}]"), format!("`{pool}` is not an address range"))
                    .with_hint("write `FIRST-LAST` (e.g. `10.0.4.100-10.0.4.199`) or a CIDR (e.g. `10.0.4.0/24`), of one IP family, first <= last"),
            ),
        }
    }
    out
}

pub fn parse_range(s: &str) -> Option<(IpAddr, IpAddr)> {
    if let Some((a, b)) = s.split_once('-') {
        let a: IpAddr = a.trim().parse().ok()?;
        let b: IpAddr = b.trim().parse().ok()?;
        return (a.is_ipv4() == b.is_ipv4() && a <= b).then_some((a, b));
    }
    let net: ipnet::IpNet = s.trim().parse().ok()?;
    Some(match net {
        // Skip the network and broadcast addresses of IPv4 networks larger than /31.
        ipnet::IpNet::V4(n) if n.prefix_len() < 31 => (
            IpAddr::V4(u32::from(n.network()).checked_add(1)?.into()),
            IpAddr::V4(u32::from(n.broadcast()).checked_sub(1)?.into()),
        ),
        n => (n.network(), n.broadcast()),
    })
}

/// A map of labels: every key and value valid.
pub(crate) fn labels(
    src: &Source,
    field: &str,
    labels: &std::collections::BTreeMap<String, String>,
    errs: &mut Vec<Diagnostic>,
) {
    use crate::model::build::names::{label_key_problem, label_value_problem};
    for (k, v) in labels {
        let f = format!("{field}.{k}");
        if let Some(why) = label_key_problem(k) {
            errs.push(src.error(&f, format!("invalid label key `{k}`")).with_hint(why));
        }
        if let Some(why) = label_value_problem(v) {
            errs.push(src.error(&f, format!("invalid label value `{v}`")).with_hint(why));
        }
    }
}
