//! Per-object schema validation. A CRD's structural `openAPIV3Schema` becomes a JSON Schema
//! with the Kubernetes extensions spelled out (unknown fields refused, int-or-string, nullable,
//! embedded resources), compiled once per apiVersion and kind; the object is defaulted as the
//! API server would and validated; every error becomes a finding at its field's line.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{Keyword, PatternOptions, ValidationError, Validator};
use rayon::prelude::*;
use serde_json::{Map, Value, json};

use crate::diagnostics::Diagnostic;
use crate::spec::json_schema::{dotted, fields_at, shown};
use crate::spec::source::child_path;
use crate::validate::cel::{self, Notes, Rules};
use crate::validate::crd::{Catalog, Lookup};
use crate::validate::keyword::CustomError;
use crate::validate::{Check, Finding, Fleet, Manifest, builtin, error, warning};

/// A compiled schema per `(apiVersion, kind)` of the fleet.
pub struct Validators {
    entries: BTreeMap<(String, String), Entry>,
    notes: Arc<Notes>,
}

enum Entry {
    /// Checked against this schema.
    Ready {
        validator: Box<Validator>,
        /// The structural schema, for defaults.
        structural: Value,
        /// The JSON Schema, for hints.
        converted: Value,
        /// Where it came from, for messages.
        origin: String,
        /// The deprecation warning of this version.
        deprecated: Option<String>,
    },
    /// No schema: every object of this type is a finding.
    Missing { message: String, hint: String },
    /// The schema did not compile: one warning, objects unchecked.
    Broken(String),
}

impl Validators {
    /// Compiles the schema of every type the rendered fleet uses.
    pub fn compile(catalog: &Catalog, fleet: &Fleet) -> Validators {
        let notes = Arc::new(Notes::default());
        let env = cel::environment();
        let types: BTreeSet<(String, String)> = fleet
            .rendered()
            .map(|o| (o.api_version.clone(), o.kind.clone()))
            .collect();
        let entries = types
            .into_par_iter()
            .map(|(api_version, kind)| {
                let entry = entry(catalog, &api_version, &kind, &env, &notes);
                ((api_version, kind), entry)
            })
            .collect();
        Validators { entries, notes }
    }

    /// Findings about the schemas themselves (those that did not compile).
    pub fn findings(&self) -> Vec<Finding> {
        self.entries
            .iter()
            .filter_map(|((api_version, kind), e)| match e {
                Entry::Broken(why) => Some(Finding::new(
                    Check::Schema,
                    Diagnostic::warning(format!(
                        "the schema of `{kind}` `{api_version}` does not compile here ({why}); its objects were not checked"
                    )),
                )),
                _ => None,
            })
            .collect()
    }

    /// CEL rules that could not be evaluated.
    pub fn notes(&self) -> Vec<String> {
        self.notes.all()
    }

    /// Every schema and CEL finding of one object.
    pub fn check(&self, o: &Manifest) -> Vec<Finding> {
        let Some(entry) = self.entries.get(&(o.api_version.clone(), o.kind.clone())) else {
            return Vec::new();
        };
        match entry {
            Entry::Missing { message, hint } => {
                let mut f = error(Check::Schema, o, "apiVersion", message.clone());
                f.diagnostic = f.diagnostic.with_hint(hint.clone());
                vec![f]
            }
            Entry::Broken(_) => Vec::new(),
            Entry::Ready {
                validator,
                structural,
                converted,
                origin,
                deprecated,
            } => {
                let mut out = Vec::new();
                if let Some(text) = deprecated {
                    out.push(warning(Check::Schema, o, "apiVersion", text.clone()));
                }
                let mut instance = o.value.clone();
                apply_defaults(structural, &mut instance);
                for e in validator.iter_errors(&instance) {
                    out.extend(finding(o, &e, converted, origin));
                }
                out
            }
        }
    }
}

/// Every served version of every CRD, compiled; the failures.
pub fn compile_all(catalog: &Catalog) -> Vec<String> {
    let env = cel::environment();
    let notes = Arc::new(Notes::default());
    let types: Vec<(String, String)> = catalog
        .iter()
        .flat_map(|(_, crd)| {
            crd.served()
                .into_iter()
                .map(|v| (format!("{}/{v}", crd.group), crd.kind.clone()))
                .collect::<Vec<_>>()
        })
        .collect();
    types
        .par_iter()
        .filter_map(
            |(api_version, kind)| match entry(catalog, api_version, kind, &env, &notes) {
                Entry::Ready { .. } => None,
                Entry::Broken(why) => Some(format!("{kind} {api_version}: {why}")),
                Entry::Missing { message, .. } => Some(format!("{kind} {api_version}: {message}")),
            },
        )
        .collect()
}

fn entry(catalog: &Catalog, api_version: &str, kind: &str, env: &Arc<::cel::Env>, notes: &Arc<Notes>) -> Entry {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let (structural, origin, deprecated) = if let Some(s) = builtin::schema(group, version, kind) {
        (s, format!("the Kubernetes API's `{kind}`"), None)
    } else {
        match catalog.lookup(group, version, kind) {
            Lookup::Served(crd, v) => {
                let Some(schema) = v.schema.clone() else {
                    return Entry::Broken(format!("CRD `{}` has no schema for `{version}`", crd.name));
                };
                let deprecated = v.deprecated.then(|| {
                    v.deprecation_warning
                        .clone()
                        .unwrap_or_else(|| format!("`{api_version}` `{kind}` is deprecated"))
                });
                (schema, format!("CRD `{}` ({})", crd.name, crd.file), deprecated)
            }
            Lookup::NotServed(crd) => {
                return Entry::Missing {
                    message: format!("`{api_version}` is not a served version of `{kind}`"),
                    hint: format!(
                        "CRD `{}` serves {}; use one of them",
                        crd.name,
                        crd.served()
                            .iter()
                            .map(|v| format!("`{group}/{v}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
            }
            Lookup::NoCrd if builtin::is_core_group(group) => {
                return Entry::Missing {
                    message: format!("`{kind}` `{api_version}` is a Kubernetes kind kaas-gitops has no schema for"),
                    hint: format!(
                        "kaas-gitops knows these Kubernetes kinds, in their current API versions: {}; check `apiVersion` and `kind`",
                        builtin::KINDS.join(", ")
                    ),
                };
            }
            Lookup::NoCrd => {
                return Entry::Missing {
                    message: format!("no CRD defines `{kind}` in `{api_version}`"),
                    hint: "check `apiVersion` and `kind`, or add the CRD to the `--crds` folder".into(),
                };
            }
        }
    };
    let mut converted = convert(&structural);
    if let Value::Object(root) = &mut converted
        && let Some(Value::Object(props)) = root.get_mut("properties")
    {
        props.insert("metadata".into(), convert(&builtin::object_meta()));
    }
    let env = env.clone();
    let notes = notes.clone();
    let built = jsonschema::draft202012::options()
        .with_pattern_options(PatternOptions::regex())
        .with_keyword("x-kubernetes-validations", move |_, value, _| {
            Ok(Box::new(Rules::compile(value, &env, &notes)) as Box<dyn for<'i> Keyword<'i>>)
        })
        .with_keyword("x-kubernetes-list-type", |parent, value, _| {
            Ok(Box::new(ListType::new(parent, value)) as Box<dyn for<'i> Keyword<'i>>)
        })
        .build(&converted);
    match built {
        Ok(validator) => Entry::Ready {
            validator: Box::new(validator),
            structural,
            converted,
            origin,
            deprecated,
        },
        Err(e) => Entry::Broken(e.to_string()),
    }
}

/// Structural OpenAPI v3 -> JSON Schema 2020-12 with the Kubernetes extensions applied.
pub fn convert(node: &Value) -> Value {
    let Value::Object(m) = node else {
        return node.clone();
    };
    let mut out = Map::new();
    for (k, v) in m {
        match k.as_str() {
            // Documentation, and `default` (applied before validation, see `apply_defaults`).
            "description" | "example" | "externalDocs" | "default" | "title" => {}
            "properties" | "patternProperties" => {
                let props = v
                    .as_object()
                    .map(|p| p.iter().map(|(name, s)| (name.clone(), convert(s))).collect())
                    .unwrap_or_default();
                out.insert(k.clone(), Value::Object(props));
            }
            "items" | "additionalProperties" | "not" => {
                out.insert(k.clone(), convert(v));
            }
            "allOf" | "anyOf" | "oneOf" => {
                let list = v
                    .as_array()
                    .map(|a| a.iter().map(convert).collect())
                    .unwrap_or_default();
                out.insert(k.clone(), Value::Array(list));
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    let flag = |key: &str| m.get(key).and_then(Value::as_bool).unwrap_or(false);
    // OpenAPI v3.0 states exclusive bounds as booleans next to minimum/maximum.
    for (exclusive, bound) in [("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")] {
        if let Some(Value::Bool(on)) = m.get(exclusive) {
            out.remove(exclusive);
            if *on && let Some(limit) = out.remove(bound) {
                out.insert(exclusive.into(), limit);
            }
        }
    }
    if flag("x-kubernetes-int-or-string") {
        out.insert("type".into(), json!(["integer", "string"]));
    }
    if flag("x-kubernetes-embedded-resource") {
        let props = out.entry("properties").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(p) = props {
            p.entry("apiVersion").or_insert_with(|| json!({"type": "string"}));
            p.entry("kind").or_insert_with(|| json!({"type": "string"}));
            p.entry("metadata").or_insert_with(|| json!({"type": "object"}));
        }
        let required = out.entry("required").or_insert_with(|| json!([]));
        if let Value::Array(r) = required {
            for key in ["apiVersion", "kind"] {
                if !r.iter().any(|x| x == key) {
                    r.push(json!(key));
                }
            }
        }
    }
    // Unknown fields are refused where the schema lists its fields and keeps no others.
    if out.contains_key("properties") && !flag("x-kubernetes-preserve-unknown-fields") {
        out.entry("additionalProperties").or_insert(Value::Bool(false));
    }
    if flag("nullable") {
        match out.get("type").cloned() {
            Some(Value::String(t)) => {
                out.insert("type".into(), json!([t, "null"]));
            }
            Some(Value::Array(mut ts)) => {
                ts.push(json!("null"));
                out.insert("type".into(), Value::Array(ts));
            }
            _ => {}
        }
        if let Some(Value::Array(e)) = out.get_mut("enum") {
            e.push(Value::Null);
        }
    }
    Value::Object(out)
}

/// Fills in absent fields that have a `default`, as the API server does before it validates.
pub fn apply_defaults(schema: &Value, instance: &mut Value) {
    match instance {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = schema.get("properties") {
                for (name, s) in props {
                    if !map.contains_key(name)
                        && let Some(d) = s.get("default")
                    {
                        map.insert(name.clone(), d.clone());
                    }
                    if let Some(v) = map.get_mut(name) {
                        apply_defaults(s, v);
                    }
                }
            } else if let Some(s @ Value::Object(_)) = schema.get("additionalProperties") {
                for v in map.values_mut() {
                    apply_defaults(s, v);
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for v in items {
                    apply_defaults(s, v);
                }
            }
        }
        _ => {}
    }
}

/// `x-kubernetes-list-type`: `set` items and `map` keys (`x-kubernetes-list-map-keys`) must be
/// unique, as the API server enforces.
struct ListType {
    set: bool,
    keys: Option<Vec<String>>,
}

impl ListType {
    fn new(parent: &Map<String, Value>, value: &Value) -> ListType {
        let keys = (value == "map").then(|| {
            parent
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|k| k.as_str().map(str::to_string)).collect())
                .unwrap_or_default()
        });
        ListType {
            set: value == "set",
            keys,
        }
    }

    fn duplicates(&self, instance: &Value) -> Vec<CustomError> {
        let Some(items) = instance.as_array() else {
            return Vec::new();
        };
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let key = match &self.keys {
                Some(keys) if !keys.is_empty() => keys
                    .iter()
                    .map(|k| format!("{k}={}", item.get(k).unwrap_or(&Value::Null)))
                    .collect::<Vec<_>>()
                    .join(", "),
                _ if self.set => item.to_string(),
                _ => return Vec::new(),
            };
            if let Some(first) = seen.insert(key.clone(), i) {
                seen.insert(key.clone(), first);
                out.push(CustomError {
                    message: format!("duplicate entry ({key}); the first is item {first}"),
                    rule: None,
                    field_path: Some(format!("[{i}]")),
                    absent: None,
                });
            }
        }
        out
    }
}

impl<'i> Keyword<'i> for ListType {
    fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        match self.duplicates(instance).into_iter().next() {
            Some(e) => Err(e.into_error()),
            None => Ok(()),
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        self.duplicates(instance).is_empty()
    }

    fn iter_errors(&self, instance: &'i Value) -> Box<dyn Iterator<Item = ValidationError<'i>> + 'i> {
        let errors: Vec<_> = self
            .duplicates(instance)
            .into_iter()
            .map(CustomError::into_error)
            .collect();
        Box::new(errors.into_iter())
    }
}

/// `.spec.x` / `spec.x` / `[2]` appended to `path`.
fn below(path: &str, field_path: &str) -> String {
    let rel = field_path.trim_start_matches('.');
    if rel.starts_with('[') || path.is_empty() {
        format!("{path}{rel}")
    } else {
        format!("{path}.{rel}")
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

fn finding(o: &Manifest, e: &ValidationError<'_>, converted: &Value, origin: &str) -> Vec<Finding> {
    let path = dotted(e.instance_path());
    let shown_path = if path.is_empty() {
        "the object".to_string()
    } else {
        format!("`{path}`")
    };
    let value = e.instance();
    let (check, field, message, hint) = match e.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let valid = fields_at(converted, e.schema_path());
            return unexpected
                .iter()
                .map(|key| {
                    let field = child_path(&path, key);
                    let mut f = error(Check::Schema, o, &field, format!("unknown field `{field}`"));
                    f.diagnostic.location = o.locate_key(&field).or(f.diagnostic.location);
                    f.diagnostic = f.diagnostic.with_hint(if valid.is_empty() {
                        format!("{origin} has no such field")
                    } else {
                        format!("{origin} allows here: {}", valid.join(", "))
                    });
                    f
                })
                .collect();
        }
        ValidationErrorKind::Required { property } => {
            let key = property.as_str().unwrap_or_default();
            let field = child_path(&path, key);
            (
                Check::Schema,
                path.clone(),
                format!("missing required field `{field}`"),
                format!("{origin} requires it"),
            )
        }
        ValidationErrorKind::Type { kind } => {
            let want = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(ts) => ts.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(" or "),
            };
            (
                Check::Schema,
                path.clone(),
                format!(
                    "{shown_path} must be {want}, not {} ({})",
                    type_name(value),
                    shown(value)
                ),
                format!("{origin} types it as {want}; quote a string, unquote a number"),
            )
        }
        ValidationErrorKind::Enum { options } => {
            let valid = options
                .as_array()
                .map(|a| a.iter().map(shown).collect::<Vec<_>>().join(", "))
                .unwrap_or_default();
            (
                Check::Schema,
                path.clone(),
                format!("{shown_path} is {}, which is not allowed", shown(value)),
                format!("valid values: {valid}"),
            )
        }
        ValidationErrorKind::MaxLength { limit } => (
            Check::Schema,
            path.clone(),
            format!(
                "{shown_path} is {} characters long; at most {limit} are allowed",
                value.as_str().map_or(0, |s| s.chars().count())
            ),
            format!("{origin} limits its length"),
        ),
        ValidationErrorKind::Custom { message, .. } => match serde_json::from_str::<CustomError>(message) {
            Ok(c) => {
                let field = c
                    .field_path
                    .as_deref()
                    .map_or_else(|| path.clone(), |fp| below(&path, fp));
                let (check, hint) = match (&c.rule, &c.absent) {
                    (Some(rule), Some(key)) => (
                        Check::Cel,
                        format!(
                            "{origin} states the rule `{rule}`, which reads `{key}`; the object does not set it, so the API server rejects it (\"no such key\")"
                        ),
                    ),
                    (Some(rule), None) => (Check::Cel, format!("{origin} states the rule `{rule}`")),
                    (None, _) => (Check::Schema, format!("{origin} lists it as unique")),
                };
                (check, field, c.message, hint)
            }
            Err(_) => (Check::Schema, path.clone(), message.clone(), String::new()),
        },
        _ => (
            Check::Schema,
            path.clone(),
            format!("{shown_path}: {}", e.masked()),
            format!("as {origin} states"),
        ),
    };
    let mut f = error(check, o, &field, message);
    if !hint.is_empty() {
        f.diagnostic = f.diagnostic.with_hint(hint);
    }
    vec![f]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubernetes_extensions_become_json_schema() {
        let s = convert(&json!({
            "type": "object",
            "description": "x",
            "properties": {
                "port": {"x-kubernetes-int-or-string": true},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"a": {"type": "string"}}},
                "maybe": {"type": "string", "nullable": true, "enum": ["a"]},
                "n": {"type": "integer", "minimum": 0, "exclusiveMinimum": true},
            },
        }));
        assert_eq!(s["additionalProperties"], json!(false));
        assert_eq!(s["properties"]["port"]["type"], json!(["integer", "string"]));
        assert!(s["properties"]["free"].get("additionalProperties").is_none());
        assert_eq!(s["properties"]["maybe"]["type"], json!(["string", "null"]));
        assert_eq!(s["properties"]["maybe"]["enum"], json!(["a", null]));
        assert_eq!(s["properties"]["n"]["exclusiveMinimum"], json!(0));
        assert!(s.get("description").is_none());
    }

    #[test]
    fn defaults_fill_absent_fields_only() {
        let schema = json!({"properties": {"spec": {"properties": {
            "full": {"type": "boolean", "default": true},
            "format": {"type": "string", "default": "raw"},
        }}}});
        let mut v = json!({"spec": {"format": "qcow2"}});
        apply_defaults(&schema, &mut v);
        assert_eq!(v, json!({"spec": {"format": "qcow2", "full": true}}));
    }

    #[test]
    fn locations_read_as_dotted_paths() {
        let v = jsonschema::validator_for(
            &json!({"properties": {"a": {"items": {"properties": {"b.c": {"type": "string"}}}}}}),
        )
        .expect("compiles");
        let instance = json!({"a": [{"b.c": 1}]});
        let e = v.validate(&instance).expect_err("invalid");
        assert_eq!(dotted(e.instance_path()), "a[0].b.c");
        assert_eq!(below("spec", ".x"), "spec.x");
        assert_eq!(below("spec.list", "[2]"), "spec.list[2]");
    }
}
