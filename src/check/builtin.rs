//! Schemas of the core Kubernetes kinds a fleet uses (no CRD describes them), written in the
//! same structural OpenAPI form as a CRD so that one converter serves both. They cover the
//! fields these kinds have in the Kubernetes API; anything else is an unknown field.

use serde_json::{Value, json};

/// `metadata` of every object: what the API server accepts from a manifest.
pub fn object_meta() -> Value {
    json!({
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 253,
                     "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"},
            "generateName": {"type": "string"},
            "namespace": {"type": "string", "maxLength": 63, "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
            "finalizers": {"type": "array", "items": {"type": "string"}},
            // Written by `kubectl create --dry-run -o yaml`; the API server ignores it.
            "creationTimestamp": {"type": "string", "nullable": true},
        },
    })
}

/// The schema of a core kind, by `(group, version, kind)`.
pub fn schema(group: &str, version: &str, kind: &str) -> Option<Value> {
    let body = match (group, version, kind) {
        ("", "v1", "Namespace") => json!({"spec": {"type": "object", "properties": {
            "finalizers": strings(),
        }}}),
        ("", "v1", "ResourceQuota") => json!({"spec": {"type": "object", "properties": {
            "hard": quantities(),
            "scopes": strings(),
            "scopeSelector": {"type": "object", "properties": {"matchExpressions": {"type": "array", "items": {
                "type": "object", "required": ["scopeName", "operator"], "properties": {
                    "scopeName": {"type": "string"},
                    "operator": {"type": "string", "enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                    "values": strings(),
                }}}}},
        }}}),
        ("", "v1", "LimitRange") => json!({"spec": {"type": "object", "required": ["limits"], "properties": {
            "limits": {"type": "array", "items": {"type": "object", "required": ["type"], "properties": {
                "type": {"type": "string"},
                "max": quantities(), "min": quantities(), "default": quantities(),
                "defaultRequest": quantities(), "maxLimitRequestRatio": quantities(),
            }}},
        }}}),
        ("", "v1", "ConfigMap") => json!({
            "data": string_map(), "binaryData": string_map(), "immutable": {"type": "boolean"},
        }),
        ("", "v1", "Secret") => json!({
            "data": string_map(), "stringData": string_map(), "type": {"type": "string"},
            "immutable": {"type": "boolean"},
        }),
        ("", "v1", "ServiceAccount") => json!({
            "automountServiceAccountToken": {"type": "boolean"},
            "imagePullSecrets": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
            "secrets": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "namespace": {"type": "string"}, "kind": {"type": "string"},
            }}},
        }),
        ("rbac.authorization.k8s.io", "v1", "Role") => json!({"rules": rules()}),
        ("rbac.authorization.k8s.io", "v1", "ClusterRole") => json!({
            "rules": rules(),
            "aggregationRule": {"type": "object", "properties": {
                "clusterRoleSelectors": {"type": "array", "items": label_selector()},
            }},
        }),
        ("rbac.authorization.k8s.io", "v1", "RoleBinding" | "ClusterRoleBinding") => json!({
            "roleRef": {"type": "object", "required": ["apiGroup", "kind", "name"], "properties": {
                "apiGroup": {"type": "string"},
                "kind": {"type": "string", "enum": ["Role", "ClusterRole"]},
                "name": {"type": "string", "minLength": 1},
            }},
            "subjects": {"type": "array", "items": {"type": "object", "required": ["kind", "name"], "properties": {
                "kind": {"type": "string", "enum": ["User", "Group", "ServiceAccount"]},
                "apiGroup": {"type": "string"},
                "name": {"type": "string", "minLength": 1},
                "namespace": {"type": "string"},
            }}},
        }),
        ("networking.k8s.io", "v1", "NetworkPolicy") => json!({"spec": network_policy_spec()}),
        _ => return None,
    };
    let mut properties = body;
    let required: Vec<&str> = match kind {
        "RoleBinding" | "ClusterRoleBinding" => vec!["roleRef"],
        _ => Vec::new(),
    };
    if let Value::Object(m) = &mut properties {
        m.insert("apiVersion".into(), json!({"type": "string"}));
        m.insert("kind".into(), json!({"type": "string"}));
        m.insert("metadata".into(), json!({"type": "object"}));
    }
    Some(json!({"type": "object", "required": required, "properties": properties}))
}

fn strings() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

fn string_map() -> Value {
    json!({"type": "object", "additionalProperties": {"type": "string"}})
}

/// A map of resource quantities (`10Gi`, `500m`, `3`).
fn quantities() -> Value {
    json!({"type": "object", "additionalProperties": {
        "x-kubernetes-int-or-string": true,
        "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$",
    }})
}

fn rules() -> Value {
    json!({"type": "array", "items": {"type": "object", "required": ["verbs"], "properties": {
        "apiGroups": strings(), "resources": strings(), "resourceNames": strings(),
        "verbs": strings(), "nonResourceURLs": strings(),
    }}})
}

fn label_selector() -> Value {
    json!({"type": "object", "properties": {
        "matchLabels": string_map(),
        "matchExpressions": {"type": "array", "items": {"type": "object", "required": ["key", "operator"], "properties": {
            "key": {"type": "string"},
            "operator": {"type": "string", "enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
            "values": strings(),
        }}},
    }})
}

fn network_policy_spec() -> Value {
    let port = json!({"type": "object", "properties": {
        "protocol": {"type": "string", "enum": ["TCP", "UDP", "SCTP"]},
        "port": {"x-kubernetes-int-or-string": true},
        "endPort": {"type": "integer"},
    }});
    let peer = json!({"type": "object", "properties": {
        "podSelector": label_selector(),
        "namespaceSelector": label_selector(),
        "ipBlock": {"type": "object", "required": ["cidr"], "properties": {
            "cidr": {"type": "string"}, "except": strings(),
        }},
    }});
    json!({"type": "object", "required": ["podSelector"], "properties": {
        "podSelector": label_selector(),
        "policyTypes": {"type": "array", "items": {"type": "string", "enum": ["Ingress", "Egress"]}},
        "ingress": {"type": "array", "items": {"type": "object", "properties": {
            "from": {"type": "array", "items": peer.clone()},
            "ports": {"type": "array", "items": port.clone()},
        }}},
        "egress": {"type": "array", "items": {"type": "object", "properties": {
            "to": {"type": "array", "items": peer},
            "ports": {"type": "array", "items": port},
        }}},
    }})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_the_renderer_writes_has_a_schema() {
        for (g, v, k) in [
            ("", "v1", "Namespace"),
            ("rbac.authorization.k8s.io", "v1", "Role"),
            ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
            ("", "v1", "ResourceQuota"),
        ] {
            assert!(schema(g, v, k).is_some(), "{k}");
        }
        assert!(schema("", "v1", "Pod").is_none());
    }
}
