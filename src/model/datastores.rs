//! The shared DataStores of the fleet (kaas.yaml `spec.dataStores`): their drivers, the ones
//! kaas-gitops renders, and the resources tenants keep on a DataStore of their own.

pub use crate::spec::raw::DataStoreDriver as Driver;

/// The DataStore the kamaji release bundles (its kamaji-etcd subchart, `datastore.name`).
pub const DEFAULT_DATASTORE: &str = "default";

impl Driver {
    /// Kamaji serves these through its kine sidecar (`--kine-image`).
    pub fn uses_kine(self) -> bool {
        !matches!(self, Driver::Etcd)
    }

    /// The name Kamaji's API and docs use.
    pub fn as_str(self) -> &'static str {
        match self {
            Driver::Etcd => "etcd",
            Driver::MySQL => "MySQL",
            Driver::PostgreSQL => "PostgreSQL",
            Driver::Nats => "NATS",
        }
    }
}

/// One shared DataStore tenants may name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedDataStore {
    /// Its name.
    pub name: String,
    /// Its driver, when known: declared, or `default` (the kamaji release's bundled etcd).
    pub driver: Option<Driver>,
    /// How Kamaji reaches it, when kaas-gitops renders the DataStore object.
    pub connection: Option<Connection>,
    /// The kaas.yaml field that declares it (`spec.dataStores[2]`).
    pub field: String,
}

/// A rendered DataStore's endpoints and credentials (Secrets by name only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    /// `host:port`.
    pub endpoints: Vec<String>,
    /// User name and password.
    pub basic_auth: Option<(SecretKey, SecretKey)>,
    /// The CA (certificate, and its key for etcd) and the client certificate and key.
    pub tls: Option<Tls>,
}

/// TLS of a rendered DataStore.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls {
    /// The CA's certificate.
    pub ca_certificate: SecretKey,
    /// The CA's private key (etcd only: Kamaji signs each tenant's client certificate with it).
    pub ca_private_key: Option<SecretKey>,
    /// The client certificate and its key.
    pub client: Option<(SecretKey, SecretKey)>,
}

/// One key of one Secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretKey {
    /// The Secret.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// The key.
    pub key: String,
}

/// A resource a tenant keeps on another DataStore (Kamaji's `dataStoreOverrides`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataStoreOverride {
    /// `<group>/<resource>` (`/events`).
    pub resource: String,
    /// The DataStore.
    pub data_store: String,
}
