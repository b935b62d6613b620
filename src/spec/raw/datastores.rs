//! DataStores as written: kaas.yaml `spec.dataStores` (the shared stores tenants may name, by
//! name or declared in full), `spec.tenantDataStores` (what tenants get by default) and a
//! tenant's `spec.controlPlane.dataStore.overrides`. Credentials are always Secrets by name.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One entry of `spec.dataStores`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum DataStoreEntry {
    /// The name of a DataStore created elsewhere (`default`: the kamaji release's bundled etcd).
    Name(String),
    /// A DataStore kaas-gitops renders into the platform layer (with `endpoints`), or one created
    /// elsewhere whose driver it is told (without).
    Declared(Box<DeclaredDataStore>),
}

/// A DataStore's driver (Kamaji 26.8.2-edge `api/v1alpha1/datastore_types.go` `Driver`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, JsonSchema)]
pub enum DataStoreDriver {
    /// etcd itself.
    #[serde(rename = "etcd")]
    Etcd,
    /// MySQL (or MariaDB), through Kamaji's kine sidecar.
    MySQL,
    /// PostgreSQL, through Kamaji's kine sidecar.
    PostgreSQL,
    /// NATS JetStream, through Kamaji's kine sidecar (experimental in Kamaji; one tenant per store).
    #[serde(rename = "NATS")]
    Nats,
}

/// `spec.dataStores[]` written as a mapping.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeclaredDataStore {
    /// The DataStore's name (cluster-wide).
    pub name: String,
    /// `etcd`, `MySQL`, `PostgreSQL` or `NATS`: immutable once a tenant uses it.
    pub driver: DataStoreDriver,
    /// `host:port` of the server(s), no scheme. Without any, the DataStore is created elsewhere
    /// and only its driver is declared (tenants' moves between stores are checked against it).
    #[serde(default)]
    pub endpoints: Vec<String>,
    /// The namespace of the Secrets named below (default: Kamaji's namespace).
    pub secrets_namespace: Option<String>,
    /// User name and password, from a Secret (SQL and NATS; `tls` may replace it).
    pub basic_auth: Option<BasicAuth>,
    /// The server's CA and the client certificate, from Secrets (etcd: required, with the CA's
    /// private key, which Kamaji signs each tenant's client certificate with).
    pub tls: Option<DataStoreTls>,
}

/// `basicAuth` of a declared DataStore: one Secret (`kubernetes.io/basic-auth` by default).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BasicAuth {
    /// The Secret's name.
    pub secret_name: String,
    /// The key holding the user name (default `username`).
    pub username_key: Option<String>,
    /// The key holding the password (default `password`).
    pub password_key: Option<String>,
}

/// `tls` of a declared DataStore.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DataStoreTls {
    /// The CA that signed the server's certificate: keys `ca.crt` and, for etcd, `ca.key`.
    pub certificate_authority: CertificateSecret,
    /// The client certificate Kamaji logs in with: keys `tls.crt` and `tls.key` (a
    /// `kubernetes.io/tls` Secret).
    pub client_certificate: Option<CertificateSecret>,
}

/// A Secret holding a certificate and its private key.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CertificateSecret {
    /// The Secret's name.
    pub secret_name: String,
    /// The key holding the certificate (default `ca.crt` for a CA, `tls.crt` for a client).
    pub certificate_key: Option<String>,
    /// The key holding the private key (default `ca.key` for a CA, `tls.key` for a client).
    pub private_key_key: Option<String>,
}

/// `spec.tenantDataStores` of kaas.yaml.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TenantDataStores {
    /// The shared DataStore (from `spec.dataStores`) of tenants whose file names none; absent:
    /// each such tenant gets its own kamaji-etcd.
    pub default: Option<String>,
    /// Resources every tenant keeps on a DataStore of their own, e.g. `[{resource: /events,
    /// dataStore: events}]` (a tenant's own list replaces it).
    pub overrides: Option<Vec<DataStoreOverride>>,
}

/// A resource kept on another DataStore (Kamaji's `dataStoreOverrides`).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DataStoreOverride {
    /// `<group>/<resource>` of a resource built into the API server: `/events` (core group),
    /// `events.k8s.io/events`, `coordination.k8s.io/leases`.
    pub resource: String,
    /// An etcd DataStore from `spec.dataStores`.
    pub data_store: String,
}
