//! `kubeconfig TENANT`: a kubeconfig for a person. The tenant API server's address is the
//! tenant `Cluster`'s `spec.controlPlaneEndpoint`, read from the management cluster with the one
//! right the tenant's `<tenant>-admin` Role grants; its CA comes from the tenant API server itself
//! (`kube-public/cluster-info`, [`crate::cluster::tenant`]), not from the `<tenant>-kubeconfig`
//! Secret, whose admin certificate no person should be able to read (issue 41 item 5). The user
//! is a `client.authentication.k8s.io/v1` exec plugin, `kubectl oidc-login get-token`
//! (int128/kubelogin, named, not shipped), with the issuer of the tenant's spec. No credential is
//! in it. `--admin` prints the Secret's kubeconfig itself, with a warning (break-glass, for those
//! the management cluster lets read it).

use std::path::Path;

use anyhow::Result;
use base64::Engine as _;

use crate::cli::{Format, KubeconfigArgs, Printer};
use crate::cluster::tenant::{self, TenantError};
use crate::cluster::{CLUSTER, Cluster, ClusterError};
use crate::commands::report_invalid;
use crate::commands::status::report_cluster_error;
use crate::commands::{ExitStatus, pipeline};
use crate::map;
use crate::model::access::OidcIssuer;
use crate::render::node::Node;
use crate::render::{Options, yaml};
use crate::repo::inputs;
use crate::spec::load::ParseCache;

/// The key of the kubeconfig in the Kamaji provider's `<cluster>-kubeconfig` Secret (see
/// `render::access`).
const KUBECONFIG_KEY: &str = "value";

/// Runs `kubeconfig`.
pub fn run(printer: &Printer, repo: &Path, args: &KubeconfigArgs) -> Result<ExitStatus> {
    let resolved = match inputs::read(repo, &[])? {
        Err(d) => return Ok(report_invalid(printer, Format::Human, d)),
        Ok(inputs) => match pipeline::resolve(&inputs, &Options::default(), &mut ParseCache::default()) {
            Err(d) => return Ok(report_invalid(printer, Format::Human, d)),
            Ok(r) => r,
        },
    };
    let tenants = &resolved.model.tenants;
    let Some(tenant) = tenants.iter().find(|t| t.name == args.tenant) else {
        let known: Vec<&str> = tenants.iter().map(|t| t.name.as_str()).collect();
        printer.error(
            &format!("no tenant `{}` in tenants/", args.tenant),
            Some(&format!("tenants: {}", known.join(", "))),
        );
        return Ok(ExitStatus::Failure);
    };
    let issuer = if args.admin {
        None
    } else {
        match pick_issuer(&tenant.name, &tenant.oidc_issuers, args.issuer.as_deref()) {
            Ok(i) => Some(i),
            Err((message, hint)) => {
                printer.error(&message, Some(&hint));
                return Ok(ExitStatus::Failure);
            }
        }
    };
    let pin = match args.ca_sha256.as_deref().map(|p| (p, tenant::parse_fingerprint(p))) {
        None => None,
        Some((_, Some(pin))) => Some(pin),
        Some((given, None)) => {
            printer.error(
                &format!("`--ca-sha256 {given}` is not a SHA-256 fingerprint"),
                Some("give the 64 hex digits `openssl x509 -noout -fingerprint -sha256` prints for the tenant's CA certificate (colons and a `sha256:` prefix may stay)"),
            );
            return Ok(ExitStatus::Failure);
        }
    };
    let target = crate::commands::cluster_target(&args.cluster);
    let cluster = match Cluster::connect(&target) {
        Ok(c) => c,
        Err(e) => return Ok(report_cluster_error(printer, Format::Human, &e)),
    };
    let read = match issuer {
        None => admin(&cluster, &tenant.name).inspect(|_| {
            printer.warning(
                &format!(
                    "this is the admin kubeconfig of `{}`: a client certificate with cluster-admin rights that no one can revoke short of rotating the tenant's CA, and that no audit log ties to a person",
                    tenant.name
                ),
                Some(&format!(
                    "use it to repair access only; people log in with `kaas-gitops kubeconfig {}` (docs/access.md)",
                    tenant.name
                )),
            );
        }),
        Some(issuer) => endpoint(&cluster, &tenant.name).and_then(|(url, host)| {
            let dial = args.server.clone().unwrap_or_else(|| url.clone());
            let timeout = target.timeout.unwrap_or(std::time::Duration::from_secs(10));
            let ca = tenant::ca(&dial, &host, pin.as_deref(), timeout).map_err(Problem::Tenant)?;
            if pin.is_none() {
                printer.warning(
                    &format!(
                        "the CA of `{}` was taken from its API server on first use: {}",
                        tenant.name, ca.fingerprint
                    ),
                    Some(&format!(
                        "compare it with the platform team's (`kubectl -n {t} get secret {t}-ca -o jsonpath='{{.data.ca\\.crt}}' | base64 -d | openssl x509 -noout -fingerprint -sha256` on the management cluster) or pass `--ca-sha256` to refuse any other",
                        t = tenant.name
                    )),
                );
            }
            let ca_data = base64::engine::general_purpose::STANDARD.encode(&ca.pem);
            let tls_name = args.server.is_some().then_some(host.as_str());
            Ok(yaml::body(&person(&tenant.name, &dial, tls_name, &ca_data, issuer, &args.scopes)))
        }),
    };
    match read {
        Ok(text) => {
            printer.data(text.trim_end());
            Ok(ExitStatus::Success)
        }
        Err(Problem::Cluster(e)) => {
            let e = match e {
                ClusterError::Forbidden {
                    verb,
                    what,
                    user,
                    message,
                } => {
                    printer.error(
                        &ClusterError::Forbidden {
                            verb,
                            what,
                            user,
                            message,
                        }
                        .to_string(),
                        Some(&if args.admin {
                            format!(
                                "`kubeconfig --admin` needs get on the Secret `{t}/{t}-kubeconfig`, which kaas-gitops grants no one: it is the tenant's admin certificate (break-glass for the platform team)",
                                t = tenant.name
                            )
                        } else {
                            format!(
                                "`kubeconfig` needs get on the Cluster `{t}` in the namespace `{t}`: the Role `{t}-admin` kaas-gitops renders for the tenant's `access.adminGroups` grants it (bound to the groups with kaas.yaml's `spec.access.managementGroupsPrefix`)",
                                t = tenant.name
                            )
                        }),
                    );
                    return Ok(ExitStatus::Error);
                }
                other => other,
            };
            Ok(report_cluster_error(printer, Format::Human, &e))
        }
        Err(Problem::NotYet(message, hint)) => {
            printer.error(&message, Some(&hint));
            Ok(ExitStatus::Error)
        }
        Err(Problem::Tenant(e)) => {
            let hint = match &e {
                TenantError::Unreachable { .. } => "check that this machine reaches the tenant's endpoint (VPN, firewall), or reach it through a tunnel with `--server URL`".to_string(),
                TenantError::NoClusterInfo { .. } | TenantError::BadClusterInfo { .. } => format!(
                    "Kamaji writes `kube-public/cluster-info` once the control plane is up (`kaas-gitops status {}`); an API server that refuses anonymous requests (`--anonymous-auth=false`) cannot give it",
                    tenant.name
                ),
                TenantError::NotProven { .. } => "the endpoint does not answer with the tenant's certificate: check the Cluster's `controlPlaneEndpoint` and what listens there (or what `--server` tunnels to)".to_string(),
                TenantError::PinMismatch { .. } => "someone else may answer for the tenant API server, or the tenant's CA was rotated: ask the platform team for the current fingerprint".to_string(),
            };
            printer.error(&e.to_string(), Some(&hint));
            Ok(ExitStatus::Error)
        }
    }
}

/// Why the management cluster could not tell.
enum Problem {
    /// It could not be read.
    Cluster(ClusterError),
    /// It was read, and the tenant is not there (yet): the message and a hint.
    NotYet(String, String),
    /// The tenant API server's CA could not be read or checked.
    Tenant(TenantError),
}

impl From<ClusterError> for Problem {
    fn from(e: ClusterError) -> Problem {
        Problem::Cluster(e)
    }
}

/// The issuer to log in with: `--issuer`, or the tenant's only one.
fn pick_issuer<'a>(
    tenant: &str,
    issuers: &'a [OidcIssuer],
    wanted: Option<&str>,
) -> Result<&'a OidcIssuer, (String, String)> {
    let names = || {
        issuers
            .iter()
            .map(|i| format!("`{}`", i.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (wanted, issuers) {
        (_, []) => Err((
            format!("tenant `{tenant}` trusts no OIDC issuer"),
            "name one in kaas.yaml or the tenant file (`spec.access.oidcIssuers`, docs/access.md) and render; `--admin` prints the admin kubeconfig for break-glass use".into(),
        )),
        (Some(w), _) => issuers.iter().find(|i| i.name == w).ok_or_else(|| {
            (
                format!("tenant `{tenant}` trusts no issuer `{w}`"),
                format!("its issuers: {}", names()),
            )
        }),
        (None, [one]) => Ok(one),
        (None, _) => Err((
            format!("tenant `{tenant}` trusts several OIDC issuers: {}", names()),
            "pick one with `--issuer NAME`".into(),
        )),
    }
}

/// The Secret's kubeconfig, as it is.
fn admin(cluster: &Cluster, tenant: &str) -> Result<String, Problem> {
    let value = kubeconfig_secret(cluster, tenant)?;
    String::from_utf8(value).map_err(|_| {
        Problem::NotYet(
            format!("the Secret `{tenant}/{tenant}-kubeconfig` holds no text under `{KUBECONFIG_KEY}`"),
            "the Kamaji control plane provider writes it; see its logs".into(),
        )
    })
}

/// The key `value` of `<tenant>-kubeconfig`.
fn kubeconfig_secret(cluster: &Cluster, tenant: &str) -> Result<Vec<u8>, Problem> {
    let name = format!("{tenant}-kubeconfig");
    let Some(mut data) = cluster.secret(tenant, &name)? else {
        return Err(Problem::NotYet(
            format!("the management cluster has no Secret `{tenant}/{name}` yet"),
            format!(
                "the Kamaji control plane provider writes it once the control plane is up: `kaas-gitops status {tenant}` shows how far it is"
            ),
        ));
    };
    data.remove(KUBECONFIG_KEY).ok_or_else(|| {
        Problem::NotYet(
            format!("the Secret `{tenant}/{name}` has no key `{KUBECONFIG_KEY}`"),
            "the Kamaji control plane provider writes it; see its logs".into(),
        )
    })
}

/// `https://host:port` of the tenant API server and its host (what its certificate names).
fn endpoint(cluster: &Cluster, tenant: &str) -> Result<(String, String), Problem> {
    let Some(object) = cluster.get(CLUSTER, tenant, tenant)? else {
        return Err(Problem::NotYet(
            format!("the management cluster has no Cluster `{tenant}/{tenant}`"),
            format!("Flux has not applied the tenant yet, or it was rendered elsewhere: `kaas-gitops status {tenant}`"),
        ));
    };
    // Cluster API v1beta2 `Cluster.spec.controlPlaneEndpoint` {host, port}, which the Kamaji
    // control plane provider sets from the TenantControlPlane's address.
    let ep = &object["spec"]["controlPlaneEndpoint"];
    let host = ep["host"].as_str().filter(|h| !h.is_empty());
    let port = ep["port"].as_u64().filter(|p| *p != 0);
    let (Some(host), Some(port)) = (host, port) else {
        return Err(Problem::NotYet(
            format!("the Cluster `{tenant}/{tenant}` has no control plane endpoint yet"),
            format!("the control plane is still coming up: `kaas-gitops status {tenant}`"),
        ));
    };
    let in_url = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    Ok((format!("https://{in_url}:{port}"), host.to_string()))
}

/// The kubeconfig for a person: the tenant's server (with the name its certificate is checked
/// for, when the server is a tunnel) and CA, and a user that gets its token from `kubectl
/// oidc-login get-token` (int128/kubelogin) for `issuer`. Pure, for the tests.
pub fn person(
    tenant: &str,
    server: &str,
    tls_server_name: Option<&str>,
    ca_data: &str,
    issuer: &OidcIssuer,
    scopes: &[String],
) -> Node {
    let user = format!("{tenant}-{}", issuer.name);
    let mut args = vec![
        "oidc-login".to_string(),
        "get-token".to_string(),
        format!("--oidc-issuer-url={}", issuer.url),
        format!("--oidc-client-id={}", issuer.client_id),
    ];
    args.extend(scopes.iter().map(|s| format!("--oidc-extra-scope={s}")));
    if let Some(pem) = &issuer.certificate_authority {
        args.push(format!(
            "--certificate-authority-data={}",
            base64::engine::general_purpose::STANDARD.encode(pem)
        ));
    }
    map! {
        "apiVersion" => "v1",
        "kind" => "Config",
        "clusters" => vec![map! {
            "name" => tenant,
            // client-go `tools/clientcmd/api/v1/types.go` `Cluster.TLSServerName`.
            "cluster" => map! {
                "server" => server,
                "tls-server-name" => tls_server_name,
                "certificate-authority-data" => ca_data,
            },
        }],
        "users" => vec![map! {
            "name" => &user,
            "user" => map! {
                // client-go `tools/clientcmd/api/v1/types.go` `ExecConfig`.
                "exec" => map! {
                    "apiVersion" => "client.authentication.k8s.io/v1",
                    "command" => "kubectl",
                    "args" => args,
                    "interactiveMode" => "IfAvailable",
                    "provideClusterInfo" => false,
                    "installHint" => "kubectl oidc-login is the kubelogin plugin: `kubectl krew install oidc-login` (https://github.com/int128/kubelogin)",
                },
            },
        }],
        "contexts" => vec![map! {
            "name" => tenant,
            "context" => map! {"cluster" => tenant, "user" => &user},
        }],
        "current-context" => tenant,
    }
}
