//! Schemas of the core Kubernetes kinds a fleet uses (no CRD describes them), written in the
//! same structural OpenAPI form as a CRD so that one converter serves both. They cover the
//! fields these kinds have in the Kubernetes API; anything else is an unknown field.

use serde_json::{Value, json};

/// The Kubernetes kinds with a built-in schema (for messages).
pub const KINDS: [&str; 14] = [
    "Namespace",
    "ResourceQuota",
    "LimitRange",
    "ConfigMap",
    "Secret",
    "ServiceAccount",
    "PersistentVolumeClaim",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "NetworkPolicy",
    "Job",
    "CronJob",
];

/// API groups served by Kubernetes itself (no CRD defines their kinds). The Gateway API's
/// group ends in `.k8s.io` too, but its kinds come from CRDs (kubernetes-sigs/gateway-api).
pub fn is_core_group(group: &str) -> bool {
    matches!(group, "" | "apps" | "batch" | "policy" | "autoscaling")
        || (group.ends_with(".k8s.io") && !group.ends_with("x-k8s.io") && group != "gateway.networking.k8s.io")
}

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
        ("", "v1", "PersistentVolumeClaim") => json!({"spec": {"type": "object", "properties": {
            "accessModes": {"type": "array", "items": {"type": "string",
                "enum": ["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"]}},
            "resources": {"type": "object", "properties": {"requests": quantities(), "limits": quantities()}},
            "storageClassName": {"type": "string"},
            "volumeMode": {"type": "string", "enum": ["Filesystem", "Block"]},
            "volumeName": {"type": "string"},
            "volumeAttributesClassName": {"type": "string"},
            "selector": label_selector(),
            "dataSource": open(), "dataSourceRef": open(),
        }}}),
        ("batch", "v1", "Job") => json!({"spec": job_spec()}),
        ("batch", "v1", "CronJob") => {
            json!({"spec": {"type": "object", "required": ["schedule", "jobTemplate"], "properties": {
                "schedule": {"type": "string", "minLength": 1},
                "timeZone": {"type": "string"},
                "concurrencyPolicy": {"type": "string", "enum": ["Allow", "Forbid", "Replace"]},
                "startingDeadlineSeconds": {"type": "integer", "minimum": 0},
                "successfulJobsHistoryLimit": {"type": "integer", "minimum": 0},
                "failedJobsHistoryLimit": {"type": "integer", "minimum": 0},
                "suspend": {"type": "boolean"},
                "jobTemplate": {"type": "object", "properties": {"metadata": template_meta(), "spec": job_spec()}},
            }}})
        }
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

/// A field whose content is not checked (a whole API type the fleet does not use in detail).
fn open() -> Value {
    json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
}

/// `metadata` of an embedded template.
fn template_meta() -> Value {
    json!({"type": "object", "properties": {
        "name": {"type": "string"}, "labels": string_map(), "annotations": string_map(),
    }})
}

fn job_spec() -> Value {
    json!({"type": "object", "required": ["template"], "properties": {
        "template": {"type": "object", "properties": {"metadata": template_meta(), "spec": pod_spec()}},
        "activeDeadlineSeconds": {"type": "integer", "minimum": 1},
        "backoffLimit": {"type": "integer", "minimum": 0},
        "backoffLimitPerIndex": {"type": "integer"},
        "maxFailedIndexes": {"type": "integer"},
        "completions": {"type": "integer"},
        "parallelism": {"type": "integer"},
        "completionMode": {"type": "string", "enum": ["NonIndexed", "Indexed"]},
        "ttlSecondsAfterFinished": {"type": "integer", "minimum": 0},
        "suspend": {"type": "boolean"},
        "manualSelector": {"type": "boolean"},
        "selector": label_selector(),
        "podFailurePolicy": open(), "successPolicy": open(),
        "podReplacementPolicy": {"type": "string"},
    }})
}

/// The pod fields a rendered workload uses, with the rest of `PodSpec` left open.
fn pod_spec() -> Value {
    let volume = json!({"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string"},
        "secret": {"type": "object", "properties": {
            "secretName": {"type": "string"}, "items": key_paths(), "defaultMode": {"type": "integer"},
            "optional": {"type": "boolean"},
        }},
        "configMap": {"type": "object", "properties": {
            "name": {"type": "string"}, "items": key_paths(), "defaultMode": {"type": "integer"},
            "optional": {"type": "boolean"},
        }},
        "persistentVolumeClaim": {"type": "object", "required": ["claimName"], "properties": {
            "claimName": {"type": "string"}, "readOnly": {"type": "boolean"},
        }},
        "emptyDir": {"type": "object", "properties": {
            "medium": {"type": "string"}, "sizeLimit": {"x-kubernetes-int-or-string": true},
        }},
        "hostPath": {"type": "object", "required": ["path"], "properties": {
            "path": {"type": "string"}, "type": {"type": "string"},
        }},
        "projected": open(), "downwardAPI": open(), "csi": open(), "ephemeral": open(), "image": open(),
    }});
    json!({"type": "object", "required": ["containers"], "properties": {
        "containers": {"type": "array", "minItems": 1, "items": container()},
        "initContainers": {"type": "array", "items": container()},
        "volumes": {"type": "array", "items": volume},
        "restartPolicy": {"type": "string", "enum": ["Always", "OnFailure", "Never"]},
        "serviceAccountName": {"type": "string"},
        "automountServiceAccountToken": {"type": "boolean"},
        "nodeSelector": string_map(),
        "nodeName": {"type": "string"},
        "priorityClassName": {"type": "string"},
        "terminationGracePeriodSeconds": {"type": "integer"},
        "activeDeadlineSeconds": {"type": "integer"},
        "hostNetwork": {"type": "boolean"},
        "dnsPolicy": {"type": "string"},
        "enableServiceLinks": {"type": "boolean"},
        "runtimeClassName": {"type": "string"},
        "schedulerName": {"type": "string"},
        "hostname": {"type": "string"},
        "subdomain": {"type": "string"},
        "imagePullSecrets": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "tolerations": {"type": "array", "items": open()},
        "topologySpreadConstraints": {"type": "array", "items": open()},
        "affinity": open(),
        "securityContext": open(),
        "dnsConfig": open(),
    }})
}

fn key_paths() -> Value {
    json!({"type": "array", "items": {"type": "object", "required": ["key", "path"], "properties": {
        "key": {"type": "string"}, "path": {"type": "string"}, "mode": {"type": "integer"},
    }}})
}

fn container() -> Value {
    json!({"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "minLength": 1},
        "image": {"type": "string"},
        "imagePullPolicy": {"type": "string", "enum": ["Always", "IfNotPresent", "Never"]},
        "command": strings(),
        "args": strings(),
        "workingDir": {"type": "string"},
        "env": {"type": "array", "items": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"}, "value": {"type": "string"}, "valueFrom": open(),
        }}},
        "envFrom": {"type": "array", "items": open()},
        "ports": {"type": "array", "items": {"type": "object", "required": ["containerPort"], "properties": {
            "containerPort": {"type": "integer"}, "name": {"type": "string"},
            "protocol": {"type": "string", "enum": ["TCP", "UDP", "SCTP"]},
            "hostPort": {"type": "integer"}, "hostIP": {"type": "string"},
        }}},
        "volumeMounts": {"type": "array", "items": {"type": "object", "required": ["name", "mountPath"], "properties": {
            "name": {"type": "string"}, "mountPath": {"type": "string"}, "readOnly": {"type": "boolean"},
            "subPath": {"type": "string"}, "subPathExpr": {"type": "string"},
            "mountPropagation": {"type": "string"}, "recursiveReadOnly": {"type": "string"},
        }}},
        "resources": {"type": "object", "properties": {"requests": quantities(), "limits": quantities(), "claims": {"type": "array", "items": open()}}},
        "securityContext": {"type": "object", "properties": {
            "allowPrivilegeEscalation": {"type": "boolean"},
            "readOnlyRootFilesystem": {"type": "boolean"},
            "privileged": {"type": "boolean"},
            "runAsNonRoot": {"type": "boolean"},
            "runAsUser": {"type": "integer"},
            "runAsGroup": {"type": "integer"},
            "procMount": {"type": "string"},
            "capabilities": {"type": "object", "properties": {"add": strings(), "drop": strings()}},
            "seccompProfile": open(), "appArmorProfile": open(), "seLinuxOptions": open(), "windowsOptions": open(),
        }},
        "livenessProbe": open(), "readinessProbe": open(), "startupProbe": open(), "lifecycle": open(),
        "stdin": {"type": "boolean"}, "tty": {"type": "boolean"},
        "terminationMessagePath": {"type": "string"}, "terminationMessagePolicy": {"type": "string"},
        "restartPolicy": {"type": "string"},
    }})
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
            ("", "v1", "ServiceAccount"),
            ("", "v1", "PersistentVolumeClaim"),
            ("batch", "v1", "CronJob"),
        ] {
            assert!(schema(g, v, k).is_some(), "{k}");
        }
        assert!(schema("", "v1", "Pod").is_none());
    }
}
