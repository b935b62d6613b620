//! The DataStore objects kaas.yaml declares with `endpoints` (`spec.dataStores`), in the
//! platform layer: after the kamaji release (its CRDs), before any tenant names them. Every
//! credential is a Secret reference (Kamaji 26.8.2-edge `api/v1alpha1/datastore_types.go`
//! `ContentRef.secretReference`); kaas-gitops never writes a `content`.

use crate::map;
use crate::model::Platform;
use crate::model::datastores::{SecretKey, SharedDataStore};
use crate::render::node::Node;
use crate::render::shared::platform_labels;
use crate::render::{Object, meta};

/// One DataStore object per declared store with a connection, by name.
pub fn objects(p: &Platform) -> Vec<Object> {
    p.data_stores.values().filter_map(object).collect()
}

fn object(s: &SharedDataStore) -> Option<Object> {
    let c = s.connection.as_ref()?;
    let driver = s.driver?;
    let tls = c.tls.as_ref().map(|t| {
        map! {
            "certificateAuthority" => map! {
                "certificate" => secret(&t.ca_certificate),
                "privateKey" => t.ca_private_key.as_ref().map(secret),
            },
            "clientCertificate" => t.client.as_ref().map(|(cert, key)| map! {
                "certificate" => secret(cert),
                "privateKey" => secret(key),
            }),
        }
    });
    Some(Object {
        kind: "DataStore",
        name: s.name.clone(),
        body: map! {
            "apiVersion" => "kamaji.clastix.io/v1alpha1",
            "kind" => "DataStore",
            "metadata" => meta(&s.name, None, platform_labels()),
            "spec" => map! {
                "driver" => driver.as_str(),
                "endpoints" => Node::from(&c.endpoints),
                "basicAuth" => c.basic_auth.as_ref().map(|(user, password)| map! {
                    "username" => secret(user),
                    "password" => secret(password),
                }),
                "tlsConfig" => tls,
            },
        },
    })
}

fn secret(k: &SecretKey) -> Node {
    map! {"secretReference" => map! {"name" => &k.name, "namespace" => &k.namespace, "keyPath" => &k.key}}
}
