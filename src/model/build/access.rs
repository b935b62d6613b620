//! `spec.access` of kaas.yaml and of a tenant file -> the OIDC issuers of each tenant API server
//! and the groups bound inside it. Every rule reports at the field it is about.

use std::collections::BTreeSet;

use crate::diagnostics::Diagnostic;
use crate::model::KubeVersion;
use crate::model::access::{AuthenticationMode, Claim, OidcIssuer, STRUCTURED_FROM_MINOR};
use crate::model::build::names::is_dns1123_label;
use crate::spec::raw;
use crate::spec::source::Source;

/// The platform's issuers (`spec.access.oidcIssuers` of kaas.yaml), sorted by name.
pub fn platform(src: &Source, access: Option<&raw::PlatformAccess>, errs: &mut Vec<Diagnostic>) -> Vec<OidcIssuer> {
    let Some(access) = access else {
        return Vec::new();
    };
    let field = "spec.access.oidcIssuers";
    let mut names = BTreeSet::new();
    let mut out = Vec::new();
    for (i, raw) in access.oidc_issuers.iter().enumerate() {
        let f = format!("{field}[{i}]");
        if !name(src, &f, &raw.name, &mut names, errs) {
            continue;
        }
        if let Some(issuer) = complete(src, &f, raw, None, errs) {
            out.push(issuer);
        }
    }
    unique_urls(src, field, &out, errs);
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// `spec.access.managementGroupsPrefix`: what the management cluster's authenticator puts before
/// group names, for the Role `<tenant>-admin`'s binding there; `""` when not set.
pub fn management_groups_prefix(
    src: &Source,
    access: Option<&raw::PlatformAccess>,
    errs: &mut Vec<Diagnostic>,
) -> String {
    let prefix = access
        .and_then(|a| a.management_groups_prefix.clone())
        .unwrap_or_default();
    not_system(src, "spec.access.managementGroupsPrefix", &prefix, errs);
    prefix
}

/// A name prefix must not reach into Kubernetes' own `system:` names.
fn not_system(src: &Source, field: &str, prefix: &str, errs: &mut Vec<Diagnostic>) {
    if prefix.starts_with("system:") {
        errs.push(
            src.error(field, format!("the prefix `{prefix}` starts with `system:`"))
                .with_hint("`system:` names are Kubernetes' own (`system:masters` is cluster-admin); use e.g. `corp:`"),
        );
    }
}

/// A tenant's issuers: the platform's, each overridden by the tenant entry of the same name,
/// then the tenant's own; sorted by name. The tenant's extra API server flags must not
/// configure authentication themselves when issuers are rendered; its groups are checked too.
pub fn tenant(
    src: &Source,
    spec: &raw::TenantSpec,
    platform: &[OidcIssuer],
    version: Option<KubeVersion>,
    errs: &mut Vec<Diagnostic>,
) -> Vec<OidcIssuer> {
    let field = "spec.access.oidcIssuers";
    let access = &spec.access;
    let mut names = BTreeSet::new();
    let mut out: Vec<OidcIssuer> = platform.to_vec();
    for (i, raw) in access.oidc_issuers.iter().enumerate() {
        let f = format!("{field}[{i}]");
        if !name(src, &f, &raw.name, &mut names, errs) {
            continue;
        }
        let base = out.iter().position(|p| p.name == raw.name);
        let merged = complete(src, &f, raw, base.map(|b| &out[b]), errs);
        match (merged, base) {
            (Some(m), Some(b)) => out[b] = m,
            (Some(m), None) => out.push(m),
            (None, _) => {}
        }
    }
    unique_urls(src, field, &out, errs);
    out.sort_by(|a, b| a.name.cmp(&b.name));

    for (list, f) in [
        (&access.admin_groups, "spec.access.adminGroups"),
        (&access.view_groups, "spec.access.viewGroups"),
    ] {
        let mut seen = BTreeSet::new();
        for (i, g) in list.iter().enumerate() {
            if g.trim().is_empty() {
                errs.push(src.error(&format!("{f}[{i}]"), "empty group name"));
            } else if !seen.insert(g.as_str()) {
                errs.push(
                    src.error(&format!("{f}[{i}]"), format!("`{g}` is listed twice"))
                        .with_hint("list each group once"),
                );
            }
        }
    }

    if !out.is_empty() {
        let args = spec
            .control_plane
            .api_server
            .as_ref()
            .map(|c| c.extra_args.as_slice())
            .unwrap_or_default();
        for (i, a) in args.iter().enumerate() {
            if a.starts_with("--oidc-") || a.starts_with("--authentication-config") {
                let flag = a.split('=').next().unwrap_or(a);
                errs.push(
                    src.error(
                        &format!("spec.controlPlane.apiServer.extraArgs[{i}]"),
                        format!("`{flag}` conflicts with the OIDC issuers kaas-gitops renders"),
                    )
                    .with_hint("describe the issuer in `spec.access.oidcIssuers` (kaas.yaml or this file) and remove the flag: the API server refuses `--authentication-config` together with `--oidc-*` flags"),
                );
            }
        }
    }
    if let Some(v) = version
        && AuthenticationMode::for_version(v) == AuthenticationMode::Flags
    {
        flags_only(src, v, &out, errs);
    }
    out
}

/// Before 1.30 only the `--oidc-*` flags are available: one issuer, one audience.
fn flags_only(src: &Source, v: KubeVersion, issuers: &[OidcIssuer], errs: &mut Vec<Diagnostic>) {
    let hint = format!(
        "Kubernetes before 1.{STRUCTURED_FROM_MINOR} knows only the `--oidc-*` flags; the structured authentication configuration (several issuers, several audiences) needs 1.{STRUCTURED_FROM_MINOR} or newer"
    );
    if issuers.len() > 1 {
        let names: Vec<String> = issuers.iter().map(|i| format!("`{}`", i.name)).collect();
        errs.push(
            src.error(
                "spec.kubernetes.version",
                format!(
                    "Kubernetes {v} trusts one OIDC issuer, and this tenant gets {}: {}",
                    issuers.len(),
                    names.join(", ")
                ),
            )
            .with_hint(hint.clone()),
        );
    }
    for i in issuers.iter().filter(|i| !i.audiences.is_empty()) {
        errs.push(
            src.error(
                "spec.kubernetes.version",
                format!(
                    "Kubernetes {v} accepts one audience, and issuer `{}` lists more",
                    i.name
                ),
            )
            .with_hint(hint.clone()),
        );
    }
}

fn name(src: &Source, f: &str, name: &str, seen: &mut BTreeSet<String>, errs: &mut Vec<Diagnostic>) -> bool {
    if !is_dns1123_label(name) {
        errs.push(
            src.error(&format!("{f}.name"), format!("`{name}` is not a DNS-1123 label"))
                .with_hint("lower-case letters, digits and `-`, e.g. `corp`"),
        );
        return false;
    }
    if !seen.insert(name.to_string()) {
        errs.push(
            src.error(&format!("{f}.name"), format!("a second issuer named `{name}`"))
                .with_hint("issuer names are unique in a file"),
        );
        return false;
    }
    true
}

/// One issuer with `base`'s values (the platform's, when a tenant overrides it) where `raw`
/// sets none, and the defaults where neither does.
fn complete(
    src: &Source,
    f: &str,
    raw: &raw::OidcIssuer,
    base: Option<&OidcIssuer>,
    errs: &mut Vec<Diagnostic>,
) -> Option<OidcIssuer> {
    let before = errs.len();
    let url = match (&raw.issuer_url, base) {
        (Some(u), _) => {
            issuer_url(src, &format!("{f}.issuerURL"), u, errs);
            u.clone()
        }
        (None, Some(b)) => b.url.clone(),
        (None, None) => {
            errs.push(
                src.key_error(&format!("{f}.name"), format!("issuer `{}` has no `issuerURL`", raw.name))
                    .with_hint("add `issuerURL: https://...`, the `iss` of its tokens; a tenant names a platform issuer to override it"),
            );
            String::new()
        }
    };
    let client_id = match (&raw.client_id, base) {
        (Some(c), _) if c.trim().is_empty() => {
            errs.push(src.error(&format!("{f}.clientID"), "empty client ID"));
            String::new()
        }
        (Some(c), _) => c.clone(),
        (None, Some(b)) => b.client_id.clone(),
        (None, None) => {
            errs.push(
                src.key_error(&format!("{f}.name"), format!("issuer `{}` has no `clientID`", raw.name))
                    .with_hint("add `clientID: <the OAuth client people log in with>` (never its secret: the API server does not need one)"),
            );
            String::new()
        }
    };
    let audiences = match (&raw.audiences, base) {
        (Some(a), _) => {
            let mut seen = BTreeSet::from([client_id.clone()]);
            for (j, aud) in a.iter().enumerate() {
                if aud.trim().is_empty() {
                    errs.push(src.error(&format!("{f}.audiences[{j}]"), "empty audience"));
                } else if !seen.insert(aud.clone()) {
                    errs.push(
                        src.error(&format!("{f}.audiences[{j}]"), format!("`{aud}` is listed twice"))
                            .with_hint("`clientID` is an audience already; list the others once each"),
                    );
                }
            }
            a.clone()
        }
        (None, Some(b)) => b.audiences.clone(),
        (None, None) => Vec::new(),
    };
    let default_prefix = format!("{}:", raw.name);
    let username = claim(
        src,
        &format!("{f}.username"),
        raw.username.as_ref(),
        base.map(|b| &b.username),
        ("sub", &default_prefix),
        false,
        errs,
    );
    let groups = claim(
        src,
        &format!("{f}.groups"),
        raw.groups.as_ref(),
        base.map(|b| &b.groups),
        ("groups", &default_prefix),
        true,
        errs,
    );
    let certificate_authority = match (&raw.certificate_authority, base) {
        (Some(pem), _) => {
            certificate(src, &format!("{f}.certificateAuthority"), pem, errs);
            Some(pem.clone())
        }
        (None, Some(b)) => b.certificate_authority.clone(),
        (None, None) => None,
    };
    (errs.len() == before).then(|| OidcIssuer {
        name: raw.name.clone(),
        url,
        client_id,
        audiences,
        username,
        groups,
        certificate_authority,
        declared_in: src.path.clone(),
    })
}

fn claim(
    src: &Source,
    f: &str,
    raw: Option<&raw::ClaimMapping>,
    base: Option<&Claim>,
    (default_claim, default_prefix): (&str, &str),
    groups: bool,
    errs: &mut Vec<Diagnostic>,
) -> Claim {
    let claim = raw
        .and_then(|r| r.claim.clone())
        .or_else(|| base.map(|b| b.claim.clone()))
        .unwrap_or_else(|| default_claim.to_string());
    let prefix = raw
        .and_then(|r| r.prefix.clone())
        .or_else(|| base.map(|b| b.prefix.clone()))
        .unwrap_or_else(|| default_prefix.to_string());
    if claim.trim().is_empty() || claim.contains(char::is_whitespace) {
        errs.push(
            src.error(&format!("{f}.claim"), format!("`{claim}` is not a claim name"))
                .with_hint(format!("name a claim of the ID token, e.g. `{default_claim}`")),
        );
    }
    not_system(src, &format!("{f}.prefix"), &prefix, errs);
    if groups && prefix.is_empty() {
        errs.push(
            src.error(&format!("{f}.prefix"), "groups need a prefix")
                .with_hint("without one, a group the IdP calls `system:masters` would be Kubernetes' cluster-admin group; use e.g. `corp:` (tenant `adminGroups` are bound with it)"),
        );
    }
    Claim { claim, prefix }
}

/// `https://host[:port][/path]`: what the API server accepts as an issuer (kubernetes
/// `staging/src/k8s.io/apiserver/pkg/apis/apiserver/validation/validation.go`
/// `validateIssuerURL` and `validateURL`: scheme https, no user info, query or fragment).
fn issuer_url(src: &Source, f: &str, url: &str, errs: &mut Vec<Diagnostic>) {
    let hint = "write the issuer as its tokens' `iss` says it, e.g. `https://login.example.com/realms/corp`";
    let problem = if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Some("contains a space or control character")
    } else if let Some(rest) = url.strip_prefix("https://") {
        let host = rest.split(['/', '?', '#']).next().unwrap_or("");
        if url.contains('#') {
            Some("has a fragment (`#...`)")
        } else if url.contains('?') {
            Some("has a query (`?...`)")
        } else if host.contains('@') {
            Some("carries user information (`user@`)")
        } else if host.is_empty() || host.starts_with(':') {
            Some("has no host")
        } else {
            None
        }
    } else {
        Some("is not an `https://` URL")
    };
    if let Some(why) = problem {
        errs.push(src.error(f, format!("the issuer URL `{url}` {why}")).with_hint(hint));
    }
}

/// One or more PEM `CERTIFICATE` blocks, nothing else; a private key is a secret.
fn certificate(src: &Source, f: &str, pem: &str, errs: &mut Vec<Diagnostic>) {
    if pem.contains("PRIVATE KEY") {
        errs.push(
            src.error(f, "`certificateAuthority` holds a private key")
                .with_hint("secrets never go into git: give only the CA's certificate (`-----BEGIN CERTIFICATE-----`), which is public"),
        );
        return;
    }
    let mut blocks = 0;
    let mut inside = false;
    let mut bad = None;
    for line in pem.lines().map(str::trim).filter(|l| !l.is_empty()) {
        match (inside, line) {
            (false, "-----BEGIN CERTIFICATE-----") => inside = true,
            (true, "-----END CERTIFICATE-----") => {
                inside = false;
                blocks += 1;
            }
            (true, l)
                if l.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'=') => {}
            (_, l) => {
                bad = Some(l.to_string());
                break;
            }
        }
    }
    if bad.is_some() || inside || blocks == 0 {
        errs.push(
            src.error(f, "not a PEM certificate")
                .with_hint("paste the CA certificate as a literal block (`certificateAuthority: |`) from `-----BEGIN CERTIFICATE-----` to `-----END CERTIFICATE-----`"),
        );
    }
}

fn unique_urls(src: &Source, field: &str, issuers: &[OidcIssuer], errs: &mut Vec<Diagnostic>) {
    let mut seen: Vec<&OidcIssuer> = Vec::new();
    for i in issuers {
        if let Some(other) = seen.iter().find(|o| o.url == i.url) {
            errs.push(
                src.error(field, format!("issuers `{}` and `{}` have the same URL `{}`", other.name, i.name, i.url))
                    .with_hint("the API server takes each issuer URL once; override the platform's issuer by its name instead of adding a second one"),
            );
        }
        seen.push(i);
    }
}
