//! The management cluster, through kube-rs: the kubeconfig found as kubectl finds it
//! (`--kubeconfig`, else `KUBECONFIG`, else `~/.kube/config`; `--context`, else the current
//! one), the objects `status` and `wait` read, and the one write `wait --reconcile` makes (the
//! `reconcile.fluxcd.io/requestedAt` annotation `flux reconcile` sets). Every failure is a
//! [`ClusterError`] with what to do; nothing else is ever written.

pub(crate) mod read;
pub(crate) mod tenant;

use std::path::PathBuf;
use std::time::Duration;

use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};

use crate::diagnostics::error_chain;

/// Where the cluster is.
#[derive(Debug, Clone, Default)]
pub struct Target {
    /// `--kubeconfig`.
    pub kubeconfig: Option<PathBuf>,
    /// `--context`.
    pub context: Option<String>,
    /// Per request.
    pub timeout: Option<Duration>,
}

/// A kind kaas-gitops reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    /// API group.
    pub group: &'static str,
    /// Version.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Resource (plural).
    pub plural: &'static str,
}

/// Flux Kustomization (kustomize-controller v1.9).
pub const KUSTOMIZATION: Kind = Kind {
    group: "kustomize.toolkit.fluxcd.io",
    version: "v1",
    kind: "Kustomization",
    plural: "kustomizations",
};
/// Flux GitRepository (source-controller v1.9).
pub const GIT_REPOSITORY: Kind = Kind {
    group: "source.toolkit.fluxcd.io",
    version: "v1",
    kind: "GitRepository",
    plural: "gitrepositories",
};
/// Flux OCIRepository (source-controller v1.9; `spec.flux.delivery.mode: oci`).
pub const OCI_REPOSITORY: Kind = Kind {
    group: "source.toolkit.fluxcd.io",
    version: "v1",
    kind: "OCIRepository",
    plural: "ocirepositories",
};
/// Flux ExternalArtifact (source-controller v1.7+; `spec.flux.delivery.mode: artifact`: written by
/// source-watcher's ArtifactGenerator).
pub const EXTERNAL_ARTIFACT: Kind = Kind {
    group: "source.toolkit.fluxcd.io",
    version: "v1",
    kind: "ExternalArtifact",
    plural: "externalartifacts",
};
/// Flux HelmRelease (helm-controller v1.6).
pub const HELM_RELEASE: Kind = Kind {
    group: "helm.toolkit.fluxcd.io",
    version: "v2",
    kind: "HelmRelease",
    plural: "helmreleases",
};
/// Cluster API Cluster.
pub const CLUSTER: Kind = Kind {
    group: "cluster.x-k8s.io",
    version: "v1beta2",
    kind: "Cluster",
    plural: "clusters",
};
/// Kamaji's control plane.
pub const KAMAJI_CONTROL_PLANE: Kind = Kind {
    group: "controlplane.cluster.x-k8s.io",
    version: "v1alpha2",
    kind: "KamajiControlPlane",
    plural: "kamajicontrolplanes",
};
/// Kamaji's TenantControlPlane (`adopt` reads its datastore names).
pub const TENANT_CONTROL_PLANE: Kind = Kind {
    group: "kamaji.clastix.io",
    version: "v1alpha1",
    kind: "TenantControlPlane",
    plural: "tenantcontrolplanes",
};
/// Kamaji's DataStore (cluster-scoped): `status` reads `ready` and `usedBy` of those it renders.
pub const DATA_STORE: Kind = Kind {
    group: "kamaji.clastix.io",
    version: "v1alpha1",
    kind: "DataStore",
    plural: "datastores",
};
/// Cluster API MachineDeployment.
pub const MACHINE_DEPLOYMENT: Kind = Kind {
    group: "cluster.x-k8s.io",
    version: "v1beta2",
    kind: "MachineDeployment",
    plural: "machinedeployments",
};

/// Cluster API MachineSet: read with the MachineDeployments, for the rollout's old Machines.
pub const MACHINE_SET: Kind = Kind {
    group: "cluster.x-k8s.io",
    version: "v1beta2",
    kind: "MachineSet",
    plural: "machinesets",
};

/// A core Secret.
pub const SECRET: Kind = Kind {
    group: "",
    version: "v1",
    kind: "Secret",
    plural: "secrets",
};

impl Kind {
    fn resource(self) -> ApiResource {
        ApiResource {
            group: self.group.into(),
            version: self.version.into(),
            api_version: if self.group.is_empty() {
                self.version.to_string()
            } else {
                format!("{}/{}", self.group, self.version)
            },
            kind: self.kind.into(),
            plural: self.plural.into(),
        }
    }
}

/// Why the cluster could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// No kubeconfig, or one that does not parse.
    #[error("cannot load the kubeconfig{}: {cause}", path.as_ref().map(|p| format!(" `{}`", p.display())).unwrap_or_default())]
    Kubeconfig {
        /// The file, when one was named.
        path: Option<PathBuf>,
        /// Why.
        cause: String,
    },
    /// The API server cannot be reached.
    #[error("cannot reach the management cluster at {server}: {cause}")]
    Unreachable {
        /// The server URL.
        server: String,
        /// Why.
        cause: String,
    },
    /// RBAC refused.
    #[error("the management cluster refused to let `{user}` {verb} {what}: {message}")]
    Forbidden {
        /// The verb.
        verb: &'static str,
        /// The resource, and namespace.
        what: String,
        /// Who asked (the context).
        user: String,
        /// The API server's message.
        message: String,
    },
    /// The API is not served (its CRD is not installed).
    #[error("the management cluster does not serve {kind} ({group}/{version})")]
    NoApi {
        /// The kind.
        kind: &'static str,
        /// Its group.
        group: &'static str,
        /// Its version.
        version: &'static str,
    },
    /// Any other answer of the API server.
    #[error("the management cluster answered {code} to {verb} {what}: {message}")]
    Api {
        /// HTTP status.
        code: u16,
        /// The verb.
        verb: &'static str,
        /// The resource.
        what: String,
        /// Its message.
        message: String,
    },
}

impl ClusterError {
    /// What would fix it.
    pub fn hint(&self) -> String {
        match self {
            ClusterError::Kubeconfig { .. } => {
                "name the management cluster's kubeconfig with `--kubeconfig FILE` or `KUBECONFIG`, and a context with `--context NAME`".into()
            }
            ClusterError::Unreachable { .. } => {
                "check that the cluster is up and that this machine reaches it (VPN, proxy), or pick another `--context`".into()
            }
            ClusterError::Forbidden { .. } => {
                "`status` needs get and list on Flux Kustomizations, GitRepositories and HelmReleases and on Cluster API Clusters, KamajiControlPlanes and MachineDeployments; `wait --reconcile` also needs patch on Kustomizations, GitRepositories and OCIRepositories; `adopt` needs get on Kamaji's TenantControlPlanes".into()
            }
            ClusterError::NoApi { kind, .. } if kind.starts_with("Kustom") || kind.starts_with("Helm") || kind.starts_with("Git") => {
                "install Flux on the management cluster, or pick the right `--context`".into()
            }
            ClusterError::NoApi { .. } => {
                "install Cluster API and the Kamaji control plane provider (the platform layer's ControlPlaneProvider), or pick the right `--context`".into()
            }
            ClusterError::Api { .. } => "see the API server's message".into(),
        }
    }
}

/// A connection to the management cluster.
pub struct Cluster {
    client: kube::Client,
    runtime: tokio::runtime::Runtime,
    /// The API server URL.
    pub server: String,
    /// The context used.
    pub context: String,
}

impl Cluster {
    /// Connects as kubectl would; nothing is requested yet.
    pub fn connect(target: &Target) -> Result<Cluster, ClusterError> {
        let runtime = crate::http::runtime().map_err(|e| ClusterError::Kubeconfig {
            path: None,
            cause: format!("cannot start the async runtime: {e}"),
        })?;
        let path = target.kubeconfig.clone();
        let kubeconfig_error = |cause: String| ClusterError::Kubeconfig {
            path: path.clone(),
            cause,
        };
        let kubeconfig = match &target.kubeconfig {
            Some(p) => Kubeconfig::read_from(p),
            None => Kubeconfig::read(),
        }
        .map_err(|e| kubeconfig_error(error_chain(&e)))?;
        let context = target
            .context
            .clone()
            .or_else(|| kubeconfig.current_context.clone())
            .ok_or_else(|| kubeconfig_error("no context is named and the kubeconfig has no current-context".into()))?;
        if !kubeconfig.contexts.iter().any(|c| c.name == context) {
            let known: Vec<&str> = kubeconfig.contexts.iter().map(|c| c.name.as_str()).collect();
            return Err(kubeconfig_error(format!(
                "it has no context `{context}` (it has: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )));
        }
        let options = KubeConfigOptions {
            context: Some(context.clone()),
            ..KubeConfigOptions::default()
        };
        let mut config = runtime
            .block_on(kube::Config::from_custom_kubeconfig(kubeconfig, &options))
            .map_err(|e| kubeconfig_error(error_chain(&e)))?;
        config.connect_timeout = target.timeout.or(Some(Duration::from_secs(10)));
        config.read_timeout = target.timeout.or(Some(Duration::from_secs(30)));
        let server = config.cluster_url.to_string();
        // The client spawns its buffer task on the current runtime.
        let _entered = runtime.enter();
        let client = kube::Client::try_from(config).map_err(|e| kubeconfig_error(error_chain(&e)))?;
        Ok(Cluster {
            client,
            runtime,
            server,
            context,
        })
    }

    /// Every object of `kind` in `namespace` (all namespaces when `None`) with `selector`.
    pub fn list(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        selector: Option<&str>,
    ) -> Result<Vec<Value>, ClusterError> {
        let resource = kind.resource();
        let api: Api<DynamicObject> = match namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &resource),
            None => Api::all_with(self.client.clone(), &resource),
        };
        let mut params = ListParams::default();
        if let Some(s) = selector {
            params = params.labels(s);
        }
        let listed = self.runtime.block_on(api.list(&params));
        let what = match namespace {
            Some(ns) => format!("{} in namespace {ns}", kind.plural),
            None => format!("{} in all namespaces", kind.plural),
        };
        let list = listed.map_err(|e| self.classify(e, kind, "list", what))?;
        Ok(list
            .items
            .into_iter()
            .filter_map(|o| serde_json::to_value(o).ok())
            .collect())
    }

    /// One object of `kind`, `None` when there is none of that name.
    pub fn get(&self, kind: Kind, namespace: &str, name: &str) -> Result<Option<Value>, ClusterError> {
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), namespace, &kind.resource());
        let got = self.runtime.block_on(api.get_opt(name));
        let what = format!("{} {namespace}/{name}", kind.kind);
        got.map(|o| o.and_then(|o| serde_json::to_value(o).ok()))
            .map_err(|e| self.classify(e, kind, "get", what))
    }

    /// The data of the Secret `namespace/name` (decoded), `None` when there is no such Secret.
    pub fn secret(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<std::collections::BTreeMap<String, Vec<u8>>>, ClusterError> {
        let api: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(self.client.clone(), namespace);
        let got = self.runtime.block_on(api.get_opt(name));
        let what = format!("Secret {namespace}/{name}");
        got.map(|s| s.map(|s| s.data.unwrap_or_default().into_iter().map(|(k, v)| (k, v.0)).collect()))
            .map_err(|e| self.classify(e, SECRET, "get", what))
    }

    /// Sets `reconcile.fluxcd.io/requestedAt` on a Flux object, as `flux reconcile` does:
    /// its controller reconciles it now instead of at its next interval.
    pub fn request_reconcile(&self, kind: Kind, namespace: &str, name: &str, at: &str) -> Result<(), ClusterError> {
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), namespace, &kind.resource());
        let patch = json!({"metadata": {"annotations": {"reconcile.fluxcd.io/requestedAt": at}}});
        let done = self.runtime.block_on(api.patch(
            name,
            &PatchParams {
                field_manager: Some("kaas-gitops".into()),
                ..PatchParams::default()
            },
            &Patch::Merge(&patch),
        ));
        done.map(|_| ())
            .map_err(|e| self.classify(e, kind, "patch", format!("{} {namespace}/{name}", kind.kind)))
    }

    fn classify(&self, e: kube::Error, kind: Kind, verb: &'static str, what: String) -> ClusterError {
        match e {
            kube::Error::Api(status) if status.code == 403 => ClusterError::Forbidden {
                verb,
                what,
                user: self.context.clone(),
                message: status.message.clone(),
            },
            kube::Error::Api(status) if status.code == 404 && verb == "list" => ClusterError::NoApi {
                kind: kind.kind,
                group: kind.group,
                version: kind.version,
            },
            kube::Error::Api(status) => ClusterError::Api {
                code: status.code,
                verb,
                what,
                message: status.message.clone(),
            },
            other => ClusterError::Unreachable {
                server: self.server.clone(),
                cause: error_chain(&other),
            },
        }
    }
}
