//! The shape of a spec file, checked against the JSON Schema of its type when serde refuses it:
//! serde stops at the first unknown field or wrong type, while the schema finds every one of
//! them, so a file with three typos gets three errors in one run, each at its field. Only run on
//! a file serde refused, so a valid fleet never pays for it.

use jsonschema::ValidationError;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use schemars::JsonSchema;
use serde_json::Value;

use crate::check::schema::{dotted, fields_at, shown, type_name};
use crate::diagnostics::Diagnostic;
use crate::spec::source::{Source, child_path};

/// Every shape error of the file, in our words, at its field. Empty when the text does not read
/// as YAML or the schema finds nothing (serde's own error then stands).
pub fn errors<T: JsonSchema>(source: &Source, options: serde_saphyr::Options) -> Vec<Diagnostic> {
    let Ok(instance) = serde_saphyr::from_str_with_options::<Value>(&source.text, options) else {
        return Vec::new();
    };
    // Inlined, so a schema path is a plain pointer into it (for the keys valid at a place).
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    let Ok(validator) = jsonschema::validator_for(&schema) else {
        return Vec::new();
    };
    let mut out: Vec<Diagnostic> = validator
        .iter_errors(&instance)
        .flat_map(|e| diagnostics(source, &schema, &e))
        .collect();
    out.sort_by_key(|d| d.location.as_ref().map(|l| (l.line, l.column)));
    out.dedup_by(|a, b| a.message == b.message && a.field == b.field);
    out
}

fn diagnostics(source: &Source, schema: &Value, e: &ValidationError<'_>) -> Vec<Diagnostic> {
    let path = dotted(e.instance_path());
    let value = e.instance();
    if path.is_empty() && value.is_null() {
        return vec![
            Diagnostic::error("the file is empty")
                .in_file(source.path.clone())
                .with_hint("a spec file holds `apiVersion`, `kind`, `metadata` and `spec`; `kaas-gitops init` writes an example"),
        ];
    }
    match e.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let valid = fields_at(schema, e.schema_path());
            unexpected
                .iter()
                .map(|key| {
                    let field = child_path(&path, key);
                    let d = source.key_error(&field, format!("unknown field `{key}`"));
                    if valid.is_empty() {
                        d.with_hint("this key is not part of the format; check its spelling")
                    } else {
                        d.with_hint(format!("valid keys here: {}", valid.join(", ")))
                    }
                })
                .collect()
        }
        ValidationErrorKind::Required { property } => {
            let key = property.as_str().unwrap_or_default();
            let d = if path.is_empty() {
                Diagnostic::error(format!("missing field `{key}`")).in_file(source.path.clone())
            } else {
                source.key_error(&path, format!("missing field `{key}` in `{path}`"))
            };
            vec![
                d.field(child_path(&path, key))
                    .with_hint("add the field; `kaas-gitops schema` lists what each block requires"),
            ]
        }
        ValidationErrorKind::Type { kind } => {
            let want = match kind {
                TypeKind::Single(t) => wanted(&t.to_string()).to_string(),
                TypeKind::Multiple(ts) => ts
                    .iter()
                    .filter(|t| t.to_string() != "null")
                    .map(|t| wanted(&t.to_string()))
                    .collect::<Vec<_>>()
                    .join(" or "),
            };
            vec![type_error(source, &path, &want, value)]
        }
        ValidationErrorKind::Constant { expected_value } => vec![
            source
                .error(
                    &path,
                    format!("`{path}` is {}, and must be {}", plain(value), plain(expected_value)),
                )
                .with_hint(format!(
                    "write `{}: {}`",
                    last(&path),
                    expected_value.as_str().unwrap_or_default()
                )),
        ],
        ValidationErrorKind::Enum { options } => vec![enum_error(source, &path, value, options_of(options))],
        ValidationErrorKind::OneOfNotValid { context } | ValidationErrorKind::AnyOf { context } => {
            // An enum of strings (one `const` per branch): say which values are valid.
            let consts: Vec<String> = schema
                .pointer(e.schema_path().as_str())
                .and_then(Value::as_array)
                .map(|branches| branches.iter().filter_map(|b| b.get("const").map(plain)).collect())
                .unwrap_or_default();
            if !consts.is_empty() && context.len() == consts.len() {
                return vec![enum_error(source, &path, value, consts)];
            }
            // Only the branches whose type the value has can tell what is wrong with it (an
            // optional block is `anyOf: [block, null]`: its null branch says nothing).
            let fitting: Vec<&Vec<ValidationError<'static>>> = context
                .iter()
                .filter(|errs| {
                    !errs.iter().any(|b| {
                        matches!(b.kind(), ValidationErrorKind::Type { .. }) && b.instance_path() == e.instance_path()
                    })
                })
                .collect();
            match fitting.as_slice() {
                [only] => only.iter().flat_map(|b| diagnostics(source, schema, b)).collect(),
                [] => {
                    let mut kinds: Vec<String> = context
                        .iter()
                        .flatten()
                        .filter(|b| b.instance_path() == e.instance_path())
                        .filter_map(|b| match b.kind() {
                            ValidationErrorKind::Type {
                                kind: TypeKind::Single(t),
                            } if t.to_string() != "null" => Some(wanted(&t.to_string()).to_string()),
                            _ => None,
                        })
                        .collect();
                    kinds.dedup();
                    vec![type_error(source, &path, &kinds.join(" or "), value)]
                }
                _ => vec![source.error(
                    &path,
                    format!("`{path}` is {}, which fits none of its forms", shown(value)),
                )],
            }
        }
        ValidationErrorKind::Minimum { limit } => vec![
            source
                .error(
                    &path,
                    format!("`{path}` is {}; the least allowed is {limit}", shown(value)),
                )
                .with_hint(format!("use {limit} or more")),
        ],
        ValidationErrorKind::Maximum { limit } => vec![
            source
                .error(
                    &path,
                    format!("`{path}` is {}; the most allowed is {limit}", shown(value)),
                )
                .with_hint(format!("use {limit} or less")),
        ],
        _ => vec![source.error(&path, format!("`{path}`: {}", e.masked()))],
    }
}

fn type_error(source: &Source, path: &str, want: &str, value: &Value) -> Diagnostic {
    let (d, key) = if path.is_empty() {
        let d = Diagnostic::error(format!(
            "the file must be {want}, not {} ({})",
            type_name(value),
            shown(value)
        ));
        (d.in_file(source.path.clone()), "it")
    } else {
        let d = source.error(
            path,
            format!("`{path}` must be {want}, not {} ({})", type_name(value), shown(value)),
        );
        (d, last(path))
    };
    let hint = match (want, value) {
        ("true or false", Value::String(s)) => format!(
            "`{s}` is a string here, not a boolean (YAML 1.1 words like yes, no, on and off are not booleans in this format); write true or false"
        ),
        ("a list", _) => format!("write a list: `{key}: [a, b]`, or one `- item` per line under `{key}:`"),
        ("a mapping", _) => format!("write the block's keys indented under `{key}:`"),
        ("a string", Value::Number(_) | Value::Bool(_)) => {
            // As written: `1.30`, not the number's `1.3`.
            let written = source
                .scalar(path)
                .map_or_else(|| value.to_string(), |s| s.text.clone());
            format!("quote it: `{key}: \"{written}\"`")
        }
        (_, Value::String(s)) if s.trim().parse::<f64>().is_ok() => format!("unquote it: `{key}: {}`", s.trim()),
        _ => format!("write {want} here"),
    };
    d.with_hint(hint)
}

fn enum_error(source: &Source, path: &str, value: &Value, options: Vec<String>) -> Diagnostic {
    source
        .error(
            path,
            format!("`{path}` is {}, which is not one of its values", plain(value)),
        )
        .with_hint(format!("valid values (exact spelling): {}", options.join(", ")))
}

fn options_of(options: &Value) -> Vec<String> {
    options
        .as_array()
        .map(|a| a.iter().map(plain).collect())
        .unwrap_or_default()
}

/// A value as written in YAML: a string in backticks without JSON's quotes.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => format!("`{s}`"),
        other => format!("`{}`", shown(other)),
    }
}

fn last(path: &str) -> &str {
    path.rsplit('.').next().unwrap_or(path)
}

/// A JSON Schema type as a user reads it.
fn wanted(t: &str) -> &'static str {
    match t {
        "integer" => "a whole number",
        "number" => "a number",
        "boolean" => "true or false",
        "string" => "a string",
        "array" => "a list",
        "object" => "a mapping",
        _ => "null",
    }
}
