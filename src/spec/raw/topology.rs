//! Topology mode as written: the ClusterClasses `kaas.yaml` defines (`spec.topology`) and a
//! tenant's `spec.topology: {class, variables}`. Variables carry OpenAPI schemas and patches are
//! JSON patches, as Cluster API's ClusterClass has them.

use std::collections::BTreeMap;

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Infrastructure, Machine};

/// How the JSON Schema (`kaas-gitops schema`) describes any YAML value: a variable's value,
/// default or enum member, or a patch's value. Those are `serde_json::Value`s; this type only
/// keeps their schema as it was written for the former hand-made value type (`$defs/Json`).
pub struct AnyValue;

impl JsonSchema for AnyValue {
    fn schema_name() -> Cow<'static, str> {
        "Json".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let any = generator.subschema_for::<AnyValue>();
        json_schema!({
            "description": "Any YAML value: a variable's value, default or enum member, or a patch's value. Maps are\nsorted so the output does not depend on how the input was written.",
            "anyOf": [
                {"description": "`null`.", "type": "null"},
                {"description": "`true` / `false`.", "type": "boolean"},
                {"description": "An integer.", "format": "int64", "type": "integer"},
                {"description": "A number with a fraction.", "format": "double", "type": "number"},
                {"description": "A string.", "type": "string"},
                {"description": "A sequence.", "items": any, "type": "array"},
                {"additionalProperties": any, "description": "A mapping.", "type": "object"}
            ]
        })
    }
}

/// A tenant's `spec.topology`: the ClusterClass it is built from and its variables.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantTopology {
    /// The name of a ClusterClass in kaas.yaml `spec.topology.classes`.
    pub class: String,
    /// Values of the class's variables, by name; checked against the class's schemas.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, AnyValue>")]
    pub variables: BTreeMap<String, Value>,
}

/// `spec.topology` of the Platform: ClusterClasses tenants may be built from.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlatformTopology {
    /// The namespace of the classes and their templates (default `kaas-classes`).
    pub namespace: Option<String>,
    /// The classes.
    pub classes: Vec<ClassSpec>,
}

/// One ClusterClass: a provider, the worker machine size, variables and patches. The Kamaji
/// control plane and kubeadm templates are shared by every class.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClassSpec {
    /// The class name, a DNS-1123 label.
    pub name: String,
    /// The provider and its block, as in a tenant file.
    pub infrastructure: Infrastructure,
    /// The size of the worker machines (defaults: 2 vCPUs, 4096 MiB, 40 GiB).
    #[serde(default)]
    pub machine: Machine,
    /// Variables tenants set in `spec.topology.variables`.
    #[serde(default)]
    pub variables: Vec<Variable>,
    /// JSON patches applied to the class's templates.
    #[serde(default)]
    pub patches: Vec<Patch>,
}

/// A ClusterClass variable.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Variable {
    /// The name tenants use; letters, digits and `_`, not starting with `builtin` or `kaas`.
    pub name: String,
    /// Whether every tenant of the class must set it (default false).
    #[serde(default)]
    pub required: bool,
    /// The OpenAPI schema values must match.
    pub schema: VariableSchema,
}

/// The OpenAPI v3 subset ClusterClass variables use.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VariableSchema {
    /// `string`, `integer`, `number`, `boolean`, `array` or `object`.
    #[serde(rename = "type")]
    pub kind: SchemaType,
    /// What the value means.
    pub description: Option<String>,
    /// The smallest allowed number.
    pub minimum: Option<i64>,
    /// The largest allowed number.
    pub maximum: Option<i64>,
    /// The shortest allowed string.
    pub min_length: Option<u64>,
    /// The longest allowed string.
    pub max_length: Option<u64>,
    /// A regular expression strings must match.
    pub pattern: Option<String>,
    /// The allowed values.
    #[serde(rename = "enum")]
    #[schemars(with = "Option<Vec<AnyValue>>")]
    pub enum_values: Option<Vec<Value>>,
    /// The value when a tenant sets none.
    #[schemars(with = "Option<AnyValue>")]
    pub default: Option<Value>,
    /// The schema of an array's items.
    pub items: Option<Box<VariableSchema>>,
    /// The fewest items of an array.
    pub min_items: Option<u64>,
    /// The most items of an array.
    pub max_items: Option<u64>,
    /// The schemas of an object's fields.
    pub properties: Option<BTreeMap<String, VariableSchema>>,
    /// The fields an object must have.
    pub required: Option<Vec<String>>,
}

/// An OpenAPI type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SchemaType {
    /// A string.
    String,
    /// An integer.
    Integer,
    /// Any number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// A list.
    Array,
    /// A map.
    Object,
}

impl SchemaType {
    /// The OpenAPI name.
    pub fn as_str(self) -> &'static str {
        match self {
            SchemaType::String => "string",
            SchemaType::Integer => "integer",
            SchemaType::Number => "number",
            SchemaType::Boolean => "boolean",
            SchemaType::Array => "array",
            SchemaType::Object => "object",
        }
    }
}

/// A ClusterClass patch: JSON patch operations on one of the class's templates.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Patch {
    /// A unique name.
    pub name: String,
    /// What the patch does.
    pub description: Option<String>,
    /// A Go template over the variables; the patch applies when it renders `true`, e.g.
    /// `{{ if .workerType }}true{{ end }}`.
    pub enabled_if: Option<String>,
    /// The template the operations apply to.
    pub target: PatchTarget,
    /// The operations, in order.
    pub ops: Vec<PatchOp>,
}

/// The template a patch applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum PatchTarget {
    /// The shared `KamajiControlPlaneTemplate`.
    ControlPlane,
    /// The class's infrastructure cluster template.
    InfrastructureCluster,
    /// The class's worker machine template.
    WorkerMachine,
    /// The shared worker `KubeadmConfigTemplate`.
    WorkerBootstrap,
}

/// One JSON patch operation (RFC 6902). `path` is a JSON pointer: `~1` stands for `/` and
/// `~0` for `~` inside a key, e.g. `/spec/template/metadata/annotations/example.com~1team`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchOp {
    /// `add`, `replace` or `remove`.
    pub op: PatchOpKind,
    /// The JSON pointer to change.
    pub path: String,
    /// A fixed value.
    #[schemars(with = "Option<AnyValue>")]
    pub value: Option<Value>,
    /// Take the value from this variable (or a `builtin.` one, e.g. `builtin.cluster.name`).
    pub variable: Option<String>,
    /// Take the value from this Go template over the variables.
    pub template: Option<String>,
}

/// A JSON patch operation kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PatchOpKind {
    /// Add (or replace) a member.
    Add,
    /// Replace an existing member.
    Replace,
    /// Remove a member.
    Remove,
}

impl PatchOpKind {
    /// The RFC 6902 name.
    pub fn as_str(self) -> &'static str {
        match self {
            PatchOpKind::Add => "add",
            PatchOpKind::Replace => "replace",
            PatchOpKind::Remove => "remove",
        }
    }
}
