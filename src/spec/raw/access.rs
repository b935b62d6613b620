//! Who logs in to tenant clusters: the OIDC issuers tenant API servers trust (`spec.access` of
//! kaas.yaml, overridden or extended per tenant) and the groups bound inside each tenant cluster.
//! A client secret is never part of it: the API server only verifies tokens (see docs/access.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `spec.access` of kaas.yaml.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PlatformAccess {
    /// The OIDC issuers every tenant API server trusts (single sign-on). A tenant may replace
    /// one (same `name`) or add its own in its `spec.access.oidcIssuers`.
    #[serde(default)]
    pub oidc_issuers: Vec<OidcIssuer>,
    /// The prefix the management cluster's own authenticator puts on group names (its
    /// `--oidc-groups-prefix` or `claimMappings.groups.prefix`, e.g. `corp:`): the Role
    /// `<tenant>-admin` in each tenant's namespace is bound to the tenant's `adminGroups` with it.
    /// Default: none, the group names as written.
    pub management_groups_prefix: Option<String>,
}

/// One OIDC issuer. In kaas.yaml `issuerURL` and `clientID` are required; in a tenant file an
/// entry with the `name` of a platform issuer overrides only the fields it sets.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OidcIssuer {
    /// A DNS-1123 label naming the issuer, unique in its file; a tenant overrides a platform
    /// issuer by naming it.
    pub name: String,
    /// The issuer URL exactly as the tokens' `iss` claim says it: `https://`, no query, no
    /// fragment (e.g. `https://login.example.com/realms/corp`).
    #[serde(rename = "issuerURL")]
    pub issuer_url: Option<String>,
    /// The OAuth client ID people log in with (`kubectl oidc-login --oidc-client-id`); the API
    /// server accepts tokens whose `aud` holds it.
    #[serde(rename = "clientID")]
    pub client_id: Option<String>,
    /// Further audiences accepted besides `clientID` (structured configuration only, Kubernetes
    /// 1.30 and newer).
    pub audiences: Option<Vec<String>>,
    /// The username: which claim, and the prefix put before it (default `{claim: sub,
    /// prefix: "<name>:"}`).
    pub username: Option<ClaimMapping>,
    /// The groups: which claim, and the prefix put before each group (default `{claim: groups,
    /// prefix: "<name>:"}`). Tenant `adminGroups`/`viewGroups` are bound with this prefix.
    pub groups: Option<ClaimMapping>,
    /// The PEM certificate(s) of the CA that signed the issuer's TLS certificate, when it is not
    /// a public one. Public, never a key: a `PRIVATE KEY` block is refused.
    pub certificate_authority: Option<String>,
}

/// Which token claim, with which prefix.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimMapping {
    /// The claim's name, e.g. `email`, `preferred_username`, `groups`, `roles`.
    pub claim: Option<String>,
    /// Put before every value; `""` for none (not for groups: an IdP group named
    /// `system:masters` would then be one). Must not start with `system:`.
    pub prefix: Option<String>,
}
