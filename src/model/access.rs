//! Tenant access in the model: the OIDC issuers a tenant's API server trusts (the platform's,
//! with the tenant's overrides and additions applied) and the groups bound inside the tenant.

use crate::model::KubeVersion;

/// One OIDC issuer with its defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcIssuer {
    /// Its name (a DNS-1123 label).
    pub name: String,
    /// `https://...`, as the tokens' `iss` says.
    pub url: String,
    /// The OAuth client ID, the first audience.
    pub client_id: String,
    /// Further audiences.
    pub audiences: Vec<String>,
    /// The username claim and prefix.
    pub username: Claim,
    /// The groups claim and prefix.
    pub groups: Claim,
    /// The issuer's CA, PEM (public).
    pub certificate_authority: Option<String>,
    /// Where it was declared, for messages: `kaas.yaml` or the tenant file.
    pub declared_in: String,
}

/// A claim and the prefix put before its values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The claim's name.
    pub claim: String,
    /// The prefix (may be empty for usernames).
    pub prefix: String,
}

/// How a tenant API server is told about its issuers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthenticationMode {
    /// `--authentication-config` with `apiserver.config.k8s.io/<version>`.
    Structured(&'static str),
    /// The `--oidc-*` flags (one issuer).
    Flags,
}

/// The oldest Kubernetes minor with the structured authentication file on by default, and the
/// first with its `v1` API. kubernetes/kubernetes `staging/src/k8s.io/apiserver/pkg/features/
/// kube_features.go`, `StructuredAuthenticationConfiguration`: alpha (off) in 1.29, beta (on)
/// in 1.30, GA (locked on) in 1.34; the `v1` `AuthenticationConfiguration` is registered from
/// 1.34 on (`staging/src/k8s.io/apiserver/pkg/apis/apiserver/v1/register.go`), `v1beta1` from
/// 1.30 (`.../v1beta1/register.go`).
pub const STRUCTURED_FROM_MINOR: u32 = 30;
/// See [`STRUCTURED_FROM_MINOR`].
pub const V1_FROM_MINOR: u32 = 34;

impl AuthenticationMode {
    /// The mode a tenant of `version` gets.
    pub fn for_version(version: KubeVersion) -> AuthenticationMode {
        match (version.major, version.minor) {
            (1, m) if m >= V1_FROM_MINOR => AuthenticationMode::Structured("apiserver.config.k8s.io/v1"),
            (1, m) if m >= STRUCTURED_FROM_MINOR => AuthenticationMode::Structured("apiserver.config.k8s.io/v1beta1"),
            (1, _) | (0, _) => AuthenticationMode::Flags,
            _ => AuthenticationMode::Structured("apiserver.config.k8s.io/v1"),
        }
    }
}
