//! Class variables: their OpenAPI schemas (checked once, in kaas.yaml) and the values tenants
//! give them (checked against those schemas at render time, pointing at the tenant's line).
//! The `jsonschema` crate does the checking; the schema is converted for it, never rendered.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::diagnostics::Diagnostic;
use crate::model::{ClassVariable, ClusterClass};
use crate::spec::raw::{SchemaType, Variable, VariableSchema};
use crate::spec::source::Source;

/// Names the tool's own variables start with.
const RESERVED_PREFIX: &str = "kaas";

/// Validates the variable declarations at `field`.
pub(super) fn declarations(
    src: &Source,
    field: &str,
    raw: &[Variable],
    errs: &mut Vec<Diagnostic>,
) -> Vec<ClassVariable> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (i, v) in raw.iter().enumerate() {
        let f = format!("{field}[{i}]");
        let ident = v.name.starts_with(|c: char| c.is_ascii_alphabetic())
            && v.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ident {
            errs.push(
                src.error(&format!("{f}.name"), format!("`{}` is not a variable name", v.name))
                    .with_hint("letters, digits and `_`, starting with a letter, so templates can read it as `.name`"),
            );
        } else if v.name.starts_with("builtin") || v.name.to_lowercase().starts_with(RESERVED_PREFIX) {
            errs.push(
                src.error(&format!("{f}.name"), format!("`{}` is reserved", v.name))
                    .with_hint("`builtin*` belongs to Cluster API and `kaas*` to kaas-gitops; pick another name"),
            );
        }
        if !seen.insert(v.name.clone()) {
            errs.push(src.error(&format!("{f}.name"), format!("a second variable named `{}`", v.name)));
        }
        schema(src, &format!("{f}.schema"), &v.schema, errs);
        out.push(ClassVariable {
            name: v.name.clone(),
            required: v.required,
            schema: v.schema.clone(),
        });
    }
    out
}

/// Checks a schema's shape, and its default and enum values against itself.
fn schema(src: &Source, field: &str, s: &VariableSchema, errs: &mut Vec<Diagnostic>) {
    let kind = s.kind;
    let misplaced = |key: &str, allowed: &[SchemaType]| -> Option<Diagnostic> {
        (!allowed.contains(&kind)).then(|| {
            src.error(
                &format!("{field}.{key}"),
                format!("`{key}` does not apply to a `{}` variable", kind.as_str()),
            )
        })
    };
    let numeric = [SchemaType::Integer, SchemaType::Number];
    let checks = [
        (s.minimum.is_some(), "minimum", &numeric[..]),
        (s.maximum.is_some(), "maximum", &numeric[..]),
        (s.min_length.is_some(), "minLength", &[SchemaType::String][..]),
        (s.max_length.is_some(), "maxLength", &[SchemaType::String][..]),
        (s.pattern.is_some(), "pattern", &[SchemaType::String][..]),
        (s.items.is_some(), "items", &[SchemaType::Array][..]),
        (s.min_items.is_some(), "minItems", &[SchemaType::Array][..]),
        (s.max_items.is_some(), "maxItems", &[SchemaType::Array][..]),
        (s.properties.is_some(), "properties", &[SchemaType::Object][..]),
        (s.required.is_some(), "required", &[SchemaType::Object][..]),
    ];
    for (present, key, allowed) in checks {
        if present && let Some(d) = misplaced(key, allowed) {
            errs.push(d);
        }
    }
    if let (Some(min), Some(max)) = (s.minimum, s.maximum)
        && min > max
    {
        errs.push(src.error(
            &format!("{field}.minimum"),
            format!("`minimum` ({min}) is greater than `maximum` ({max})"),
        ));
    }
    if kind == SchemaType::Array && s.items.is_none() {
        errs.push(
            src.error(field, "an `array` variable needs `items`")
                .with_hint("Cluster API's structural schemas type every item, e.g. `items: {type: string}`"),
        );
    }
    if kind == SchemaType::Object && s.properties.is_none() {
        errs.push(
            src.error(field, "an `object` variable needs `properties`")
                .with_hint("Cluster API prunes undeclared fields, so an object without `properties` is always empty"),
        );
    }
    if let Some(items) = &s.items {
        schema(src, &format!("{field}.items"), items, errs);
    }
    for (name, p) in s.properties.iter().flatten() {
        schema(src, &format!("{field}.properties.{name}"), p, errs);
    }
    let validator = match jsonschema::validator_for(&to_json_schema(s)) {
        Ok(v) => v,
        Err(e) => {
            errs.push(src.error(field, format!("the schema is not valid: {e}")));
            return;
        }
    };
    let mut check = |key: String, value: &Value| {
        if let Some(e) = validator.iter_errors(value).next() {
            let what = key.rsplit('.').next().unwrap_or(&key);
            errs.push(
                src.error(&key, format!("`{what}` does not match the variable's own schema: {e}"))
                    .with_hint("Cluster API refuses a class whose defaults or enum values break its schema"),
            );
        }
    };
    if let Some(d) = &s.default {
        check(format!("{field}.default"), d);
    }
    for (i, v) in s.enum_values.iter().flatten().enumerate() {
        check(format!("{field}.enum[{i}]"), v);
    }
}

/// Checks a tenant's variable values at `spec.topology.variables` against `class`, returning
/// them sorted by name.
pub(super) fn values(
    src: &Source,
    class: &ClusterClass,
    given: &BTreeMap<String, Value>,
    errs: &mut Vec<Diagnostic>,
) -> Vec<(String, Value)> {
    let field = "spec.topology.variables";
    for v in &class.variables {
        if v.required && v.schema.default.is_none() && !given.contains_key(&v.name) {
            errs.push(
                src.error(
                    field,
                    format!("class `{}` requires the variable `{}`", class.name, v.name),
                )
                .with_hint(format!("set `{}` ({})", v.name, describe(&v.schema))),
            );
        }
    }
    for (name, value) in given {
        let at = format!("{field}.{name}");
        let Some(v) = class.variables.iter().find(|v| &v.name == name) else {
            let known: Vec<String> = class.variables.iter().map(|v| format!("`{}`", v.name)).collect();
            errs.push(
                src.key_error(&at, format!("class `{}` has no variable `{name}`", class.name))
                    .with_hint(if known.is_empty() {
                        "this class declares no variables".to_string()
                    } else {
                        format!("its variables: {}", known.join(", "))
                    }),
            );
            continue;
        };
        let Ok(validator) = jsonschema::validator_for(&to_json_schema(&v.schema)) else {
            continue; // reported on kaas.yaml already
        };
        if let Some(e) = validator.iter_errors(value).next() {
            let problem = if e.instance_path().as_str().is_empty() {
                e.to_string()
            } else {
                format!("at `{}`: {e}", e.instance_path().as_str())
            };
            errs.push(
                src.error(&at, format!("`{name}` does not fit class `{}`: {problem}", class.name))
                    .with_hint(format!("`{name}` is {}", describe(&v.schema))),
            );
        }
    }
    given.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// `an integer from 1 to 5, default 3`: the schema in words, for hints.
fn describe(s: &VariableSchema) -> String {
    let mut out = match s.kind {
        SchemaType::Integer => "an integer".to_string(),
        SchemaType::Array => "a list".to_string(),
        SchemaType::Object => "a map".to_string(),
        other => format!("a {}", other.as_str()),
    };
    match (s.minimum, s.maximum) {
        (Some(a), Some(b)) => out.push_str(&format!(" from {a} to {b}")),
        (Some(a), None) => out.push_str(&format!(" of at least {a}")),
        (None, Some(b)) => out.push_str(&format!(" of at most {b}")),
        (None, None) => {}
    }
    if let Some(values) = &s.enum_values {
        let list: Vec<String> = values
            .iter()
            .map(|v| serde_json::to_string(v).unwrap_or_default())
            .collect();
        out.push_str(&format!(", one of {}", list.join(", ")));
    }
    if let Some(d) = &s.default {
        out.push_str(&format!(", default {}", serde_json::to_string(d).unwrap_or_default()));
    }
    out
}

/// The schema as JSON Schema, for the validator. Objects refuse undeclared fields, as Cluster
/// API's structural schemas do.
pub(crate) fn to_json_schema(s: &VariableSchema) -> Value {
    let mut out = json!({"type": s.kind.as_str()});
    let map = out.as_object_mut().expect("built as an object");
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            map.insert(k.to_string(), v);
        }
    };
    put("minimum", s.minimum.map(Value::from));
    put("maximum", s.maximum.map(Value::from));
    put("minLength", s.min_length.map(Value::from));
    put("maxLength", s.max_length.map(Value::from));
    put("pattern", s.pattern.clone().map(Value::from));
    put("minItems", s.min_items.map(Value::from));
    put("maxItems", s.max_items.map(Value::from));
    put("enum", s.enum_values.as_ref().map(|e| Value::Array(e.clone())));
    put("items", s.items.as_deref().map(to_json_schema));
    put(
        "properties",
        s.properties
            .as_ref()
            .map(|p| Value::Object(p.iter().map(|(k, v)| (k.clone(), to_json_schema(v))).collect())),
    );
    put(
        "required",
        s.required
            .as_ref()
            .map(|r| Value::Array(r.iter().cloned().map(Value::from).collect())),
    );
    if s.properties.is_some() {
        put("additionalProperties", Some(Value::Bool(false)));
    }
    out
}
