//! Tenant access: what the tenant API server is told about the OIDC issuers, and the groups'
//! ClusterRoleBindings inside the tenant cluster.
//!
//! Authentication (Kubernetes 1.30 and newer): an `AuthenticationConfiguration` file in a
//! ConfigMap of the tenant's namespace, mounted into the API server through the
//! KamajiControlPlane's `spec.deployment.extraVolumes` and `spec.apiServer.extraVolumeMounts`
//! and named by `--authentication-config` (cluster-api-control-plane-provider-kamaji v0.20.0,
//! `api/v1alpha2/kamajicontrolplane_types.go`; `controllers/kamajicontrolplane_controller_tcp.go`
//! copies them to the TenantControlPlane's `deployment.additionalVolumes` and
//! `additionalVolumeMounts.apiServer`). The ConfigMap's name carries a hash of its content: a new
//! configuration is a new name, so the control plane's Deployment changes and rolls.
//! Before 1.30: the `--oidc-*` flags, the issuer's CA mounted the same way for `--oidc-ca-file`.
//!
//! Inside the tenant: one ClusterRoleBinding per group (`cluster-admin` for `adminGroups`, `view`
//! for `viewGroups`), in `overlays/tenants/<t>/access/`, applied by a Flux Kustomization in the
//! tenant's namespace through the tenant's kubeconfig Secret, pruning: a group removed from the
//! tenant file is a binding deleted from the tenant cluster. kustomize-controller v1.9.4
//! (`api/v1/kustomization_types.go`, `KubeConfig`; CRD `spec.kubeConfig.secretRef`: "If no key
//! is set, the key will default to 'value'") reads `<cluster>-kubeconfig`, key `value`, which
//! the Kamaji provider writes (`controllers/kamajicontrolplane_controller_resources.go`
//! `createOrUpdateKubeconfig`).

use sha2::{Digest, Sha256};

use crate::map;
use crate::model::access::AuthenticationMode;
use crate::model::{Platform, Tenant};
use crate::render::node::Node;
use crate::render::objects::helm::{KubeConfig, SecretKeyRef};
use crate::render::objects::kustomize::{Kustomization, KustomizationSpec};
use crate::render::objects::{ObjectMeta, to_node};
use crate::render::shared::{tenant_labels, tmeta};
use crate::render::{Object, yaml};

/// Where the API server finds the files of the authentication ConfigMap.
pub const MOUNT_PATH: &str = "/etc/kaas-gitops/authentication";
/// The structured configuration's key (and file name).
pub const CONFIG_KEY: &str = "authentication-config.yaml";
/// The legacy flags' CA file's key (and file name).
pub const CA_KEY: &str = "oidc-ca.crt";
/// The volume's name in the control plane pod.
pub const VOLUME: &str = "kaas-gitops-authentication";
/// The key of the Kamaji provider's kubeconfig Secret (see `render::addons::KUBECONFIG_KEY`).
const KUBECONFIG_KEY: &str = "value";

/// What the API server of a tenant gets for its OIDC issuers.
#[derive(Debug, Clone)]
pub struct ApiServerAuthentication {
    /// Flags added to `apiServer.extraArgs`.
    pub args: Vec<String>,
    /// The ConfigMap, when there is a file to mount.
    pub config_map: Option<Object>,
    /// `deployment.extraVolumes` entry.
    pub volume: Option<Node>,
    /// `apiServer.extraVolumeMounts` entry.
    pub mount: Option<Node>,
}

/// The name of the tenant's folder of in-cluster objects, below its overlay.
pub const ACCESS_DIR: &str = "access";

/// The API server's authentication settings; `None` without issuers.
pub fn api_server(t: &Tenant) -> Option<ApiServerAuthentication> {
    if t.oidc_issuers.is_empty() {
        return None;
    }
    let (args, data): (Vec<String>, Vec<(&str, String)>) = match AuthenticationMode::for_version(t.version) {
        AuthenticationMode::Structured(api_version) => (
            vec![format!("--authentication-config={MOUNT_PATH}/{CONFIG_KEY}")],
            vec![(CONFIG_KEY, yaml::body(&structured(t, api_version)))],
        ),
        AuthenticationMode::Flags => {
            let i = &t.oidc_issuers[0];
            // `--oidc-username-prefix=-` turns the prefix off; empty means "the issuer URL and
            // `#`" (kubernetes `pkg/kubeapiserver/options/authentication.go`).
            let prefix = |p: &str| if p.is_empty() { "-".to_string() } else { p.to_string() };
            let mut args = vec![
                format!("--oidc-issuer-url={}", i.url),
                format!("--oidc-client-id={}", i.client_id),
                format!("--oidc-username-claim={}", i.username.claim),
                format!("--oidc-username-prefix={}", prefix(&i.username.prefix)),
                format!("--oidc-groups-claim={}", i.groups.claim),
                format!("--oidc-groups-prefix={}", i.groups.prefix),
            ];
            let mut data = Vec::new();
            if let Some(ca) = &i.certificate_authority {
                args.push(format!("--oidc-ca-file={MOUNT_PATH}/{CA_KEY}"));
                data.push((CA_KEY, ca.clone()));
            }
            (args, data)
        }
    };
    if data.is_empty() {
        return Some(ApiServerAuthentication {
            args,
            config_map: None,
            volume: None,
            mount: None,
        });
    }
    let name = config_map_name(t, &data);
    let body = map! {
        "apiVersion" => "v1",
        "kind" => "ConfigMap",
        "metadata" => tmeta(t, &name),
        "data" => Node::Map(data.iter().map(|(k, v)| (k.to_string(), Node::from(v))).collect()),
    };
    Some(ApiServerAuthentication {
        args,
        volume: Some(map! {"name" => VOLUME, "configMap" => map! {"name" => &name}}),
        mount: Some(map! {"name" => VOLUME, "mountPath" => MOUNT_PATH, "readOnly" => true}),
        config_map: Some(Object {
            kind: "ConfigMap",
            name,
            body,
        }),
    })
}

/// `<tenant>-authentication-<10 hex of sha256 of the keys and values>`.
fn config_map_name(t: &Tenant, data: &[(&str, String)]) -> String {
    let mut h = Sha256::new();
    for (k, v) in data {
        h.update(k.as_bytes());
        h.update([0]);
        h.update(v.as_bytes());
        h.update([0]);
    }
    let digest = hex::encode(h.finalize());
    format!("{}-authentication-{}", t.name, &digest[..10])
}

/// The `AuthenticationConfiguration` (kubernetes `staging/src/k8s.io/apiserver/pkg/apis/
/// apiserver/v1beta1/types.go` and `v1/types.go`: `JWTAuthenticator`, `Issuer`, `ClaimMappings`).
/// A claim's `prefix` is always written: it is required whenever `claim` is set. Several
/// audiences need `audienceMatchPolicy: MatchAny`.
fn structured(t: &Tenant, api_version: &str) -> Node {
    let jwt: Vec<Node> = t
        .oidc_issuers
        .iter()
        .map(|i| {
            let audiences: Vec<&String> = std::iter::once(&i.client_id).chain(&i.audiences).collect();
            let many = audiences.len() > 1;
            map! {
                "issuer" => map! {
                    "url" => &i.url,
                    "audiences" => audiences,
                    "audienceMatchPolicy" => many.then_some("MatchAny"),
                    "certificateAuthority" => i.certificate_authority.as_deref(),
                },
                "claimMappings" => map! {
                    "username" => map! {"claim" => &i.username.claim, "prefix" => &i.username.prefix},
                    "groups" => map! {"claim" => &i.groups.claim, "prefix" => &i.groups.prefix},
                },
            }
        })
        .collect();
    map! {
        "apiVersion" => api_version,
        "kind" => "AuthenticationConfiguration",
        "jwt" => jwt,
    }
}

/// The ClusterRole each list of groups is bound to.
const ROLES: [(&str, &str); 2] = [("admin", "cluster-admin"), ("view", "view")];

/// The groups as the tenant API server sees them: each with every issuer's groups prefix, or as
/// written when the tenant trusts no issuer.
fn subjects(t: &Tenant, group: &str) -> Vec<Node> {
    let mut prefixes: Vec<&str> = t.oidc_issuers.iter().map(|i| i.groups.prefix.as_str()).collect();
    if prefixes.is_empty() {
        prefixes.push("");
    }
    prefixes.sort_unstable();
    prefixes.dedup();
    prefixes
        .iter()
        .map(|p| map! {"apiGroup" => "rbac.authorization.k8s.io", "kind" => "Group", "name" => format!("{p}{group}")})
        .collect()
}

/// The binding's name: `kaas-gitops-<role>-<group>`, the group lower-cased with anything but
/// letters, digits and `-` replaced, and then a hash of the group so that two groups never share
/// a name.
pub fn binding_name(kind: &str, group: &str) -> String {
    let clean: String = group
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let clean = clean.trim_matches('-');
    let mut name = format!("kaas-gitops-{kind}-{clean}");
    if clean != group {
        let digest = hex::encode(Sha256::digest(group.as_bytes()));
        name = format!("{name}-{}", &digest[..8]);
    }
    name.truncate(200);
    name
}

/// Whether the tenant gets in-cluster bindings (and the Kustomization applying them).
pub fn has_bindings(t: &Tenant) -> bool {
    !t.decommissioned && has_groups(t)
}

fn has_groups(t: &Tenant) -> bool {
    !t.admin_groups.is_empty() || !t.view_groups.is_empty()
}

/// The ClusterRoleBindings of `overlays/tenants/<t>/access/`.
pub fn bindings(t: &Tenant) -> Vec<Object> {
    if !has_bindings(t) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for ((kind, role), groups) in ROLES.iter().zip([&t.admin_groups, &t.view_groups]) {
        for g in groups {
            let name = binding_name(kind, g);
            let body = map! {
                "apiVersion" => "rbac.authorization.k8s.io/v1",
                "kind" => "ClusterRoleBinding",
                "metadata" => map! {
                    "name" => &name,
                    "labels" => tenant_labels(t),
                    "annotations" => map! {"kaas-gitops.dev/group" => g},
                },
                "roleRef" => map! {"apiGroup" => "rbac.authorization.k8s.io", "kind" => "ClusterRole", "name" => *role},
                "subjects" => subjects(t, g),
            };
            out.push(Object {
                kind: "ClusterRoleBinding",
                name,
                body,
            });
        }
    }
    out
}

/// The Flux Kustomization in the tenant's namespace applying `access/` into the tenant cluster.
/// It reads the source the tenant's own Kustomization reads (the repository, or the tenant's
/// OCI or generated artifact, which holds the whole overlay), at its interval. Until the control plane is up the kubeconfig
/// Secret is missing and the apply is retried every `retryInterval`. Not ordered after the
/// CNI: a Kustomization's `dependsOn` names Kustomizations only (kustomize-controller v1.9.4 CRD,
/// `spec.dependsOn`), not the CNI's HelmRelease, and bindings need no pod network; the admins
/// are the ones who debug a CNI that does not come up.
pub fn kustomization(p: &Platform, t: &Tenant) -> Option<Object> {
    // A decommissioned tenant has no bindings left to render, but keeps the Kustomization,
    // suspended (see `suspend` below) until its file goes.
    if !has_groups(t) {
        return None;
    }
    let name = format!("{}-access", t.name);
    // The tenant's own source and interval: its artifact copies the whole overlay folder,
    // `access/` with it, and at scale this one reconciles as seldom as the tenant's own.
    let (interval, source_ref) =
        crate::render::shared::tenant_source(p, &crate::layout::tenant_kustomization_name(&t.name));
    let k = Kustomization::new(
        ObjectMeta::new(&name, Some(&t.name), tenant_labels(t)),
        KustomizationSpec {
            interval,
            path: format!("./{}/{ACCESS_DIR}", crate::layout::tenant_dir(&t.name)),
            prune: true,
            // A decommissioned tenant's cluster goes in the same commit. kustomize-controller
            // v1.9.4 (`finalize`) prunes a deleted Kustomization's objects through its kubeConfig
            // first and, once the `<tenant>-kubeconfig` Secret went with the control plane, fails
            // that for ever (fluxcd/pkg runtime v0.110.1 `client/impersonator.go` GetClient): the
            // finalizer would then hold the namespace when the file goes. Suspended, it lets go at
            // once, and the bindings go with the cluster anyway.
            suspend: t.decommissioned.then_some(true),
            health_checks: None,
            health_check_exprs: None,
            timeout: "2m".into(),
            retry_interval: "2m".into(),
            depends_on: None,
            source_ref,
            kube_config: Some(KubeConfig {
                secret_ref: SecretKeyRef {
                    name: format!("{}-kubeconfig", t.name),
                    key: KUBECONFIG_KEY.into(),
                },
            }),
        },
    );
    Some(Object {
        kind: "Kustomization",
        name,
        body: to_node(&k),
    })
}

#[cfg(test)]
mod tests {
    use super::binding_name;

    #[test]
    fn binding_names_are_object_names_and_distinct() {
        assert_eq!(binding_name("admin", "acme-admins"), "kaas-gitops-admin-acme-admins");
        let a = binding_name("admin", "Team@Example.com");
        let b = binding_name("admin", "team-example-com");
        assert!(a.starts_with("kaas-gitops-admin-team-example-com-"), "{a}");
        assert_ne!(a, b);
    }
}
