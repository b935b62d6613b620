//! The shape of a spec file, checked against the JSON Schema of its type when serde refuses it:
//! serde stops at the first unknown field or wrong type, while the schema finds every one of
//! them, so a file with three typos gets three errors in one run, each at its field. Only run on
//! a file serde refused, so a valid fleet never pays for it.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use jsonschema::ValidationError;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::paths::LocationSegment;
use schemars::JsonSchema;
use serde_json::{Value, json};

use crate::diagnostics::{Diagnostic, Location};
use crate::spec::json_schema::{dotted, fields_at, shown};
use crate::spec::source::{Pos, Source, child_path};

/// Every shape error of the file, in our words, at its field. Empty when the text does not read
/// as YAML or the schema finds nothing (serde's own error then stands).
pub fn errors<T: JsonSchema>(source: &Source, options: serde_saphyr::Options) -> Vec<Diagnostic> {
    let Ok(instance) = serde_saphyr::from_str_with_options::<Value>(&source.text, options) else {
        return Vec::new();
    };
    let Some(compiled) = compiled::<T>() else {
        return Vec::new();
    };
    let schema = &compiled.schema;
    let kind = file_kind(schema);
    if let Some(d) = whole_file(source, kind, &instance) {
        return vec![d];
    }
    let found: Vec<ValidationError<'_>> = compiled.validator.iter_errors(&instance).collect();
    let mut leaves = Vec::new();
    for e in &found {
        leaves.extend(leaves_of(e, schema));
    }
    let ctx = Context {
        source,
        schema,
        kind,
        typos: typos(&leaves),
    };
    let mut out: Vec<Diagnostic> = leaves.iter().flat_map(|leaf| ctx.diagnostics(leaf)).collect();
    out.sort_by_key(|d| d.location.as_ref().map(|l| (l.line, l.column)));
    out.dedup_by(|a, b| a.message == b.message && a.field == b.field);
    out
}

/// A type's schema, inlined (so a schema path is a plain pointer into it, for the keys valid
/// at a place) and with integer ranges, and its validator: built once per type and run, as a
/// fleet can have many refused files.
struct Compiled {
    schema: Value,
    validator: jsonschema::Validator,
}

fn compiled<T: JsonSchema>() -> Option<Arc<Compiled>> {
    static BUILT: LazyLock<Mutex<HashMap<String, Option<Arc<Compiled>>>>> = LazyLock::new(Mutex::default);
    let mut built = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
    built
        .entry(T::schema_name().into_owned())
        .or_insert_with(|| {
            let mut schema = schemars::generate::SchemaSettings::draft2020_12()
                .with(|s| s.inline_subschemas = true)
                .into_generator()
                .into_root_schema_for::<T>()
                .to_value();
            integer_ranges(&mut schema);
            let validator = jsonschema::validator_for(&schema).ok()?;
            Some(Arc::new(Compiled { schema, validator }))
        })
        .clone()
}

/// The `kind` a spec file of this schema holds; `None` for kaas.lock, which has none.
fn file_kind(schema: &Value) -> Option<&'static str> {
    match schema.get("title").and_then(Value::as_str) {
        Some("TenantFile") => Some("Tenant"),
        Some("PlatformFile") => Some("Platform"),
        _ => None,
    }
}

/// The hint for a file kaas-gitops writes itself (kaas.lock).
const REWRITE: &str = "kaas-gitops writes this file: delete it and run `kaas-gitops render` (and `pin`) again";

/// The file's first line, where an error about the whole file points.
fn first_line(source: &Source) -> Location {
    let len = source.len_at(1, 1).unwrap_or(1);
    source.location(Pos {
        line: 1,
        column: 1,
        len,
    })
}

/// What is wrong with the file as a whole, when it is: empty, not a mapping, or another kind of
/// file (a platform file among the tenants): one error, instead of one per field.
fn whole_file(source: &Source, expected: Option<&str>, instance: &Value) -> Option<Diagnostic> {
    let shape_hint = match expected {
        Some(kind) => format!(
            "a {kind} file is a mapping of `apiVersion`, `kind: {kind}`, `metadata` and `spec`; `kaas-gitops init` writes an example"
        ),
        None => REWRITE.to_string(),
    };
    match instance {
        Value::Null => Some(
            Diagnostic::error("the file is empty")
                .in_file(source.path.clone())
                .with_hint(shape_hint),
        ),
        Value::Object(map) => {
            let expected = expected?;
            let kind = map.get("kind")?.as_str()?;
            (kind != expected).then(|| {
                let home = if kind == "Platform" {
                    "`kind: Platform` is kaas.yaml's"
                } else if kind == "Tenant" {
                    "`kind: Tenant` files live in tenants/"
                } else {
                    "no file of that kind exists"
                };
                source
                    .error("kind", format!("`kind` is `{kind}`, but this file holds a {expected}"))
                    .with_hint(format!("{home}; this file must say `kind: {expected}`"))
            })
        }
        other => Some(
            Diagnostic::error(format!("the file is {}, not a mapping of keys", described(other)))
                .at(Some(first_line(source)))
                .in_file(source.path.clone())
                .with_hint(shape_hint),
        ),
    }
}

/// Rust's integer types have ranges JSON Schema's `integer` does not state: `replicas:
/// 99999999999` would pass the schema and fail serde alone, after every other error was fixed.
fn integer_ranges(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let range: Option<(i64, i64)> = match map.get("format").and_then(Value::as_str) {
                Some("uint8") => Some((0, 255)),
                Some("uint16") => Some((0, 65_535)),
                Some("uint32") => Some((0, 4_294_967_295)),
                Some("int32") => Some((-2_147_483_648, 2_147_483_647)),
                _ => None,
            };
            if let Some((min, max)) = range {
                map.entry("minimum").or_insert(json!(min));
                map.entry("maximum").or_insert(json!(max));
            }
            map.values_mut().for_each(integer_ranges);
        }
        Value::Array(items) => items.iter_mut().for_each(integer_ranges),
        _ => {}
    }
}

/// The errors that say what is wrong: an `anyOf`/`oneOf` (an optional block is `anyOf: [block,
/// null]`) stands for the errors of the one branch whose type the value has, when there is one.
fn leaves_of<'e, 'a>(e: &'e ValidationError<'a>, schema: &Value) -> Vec<&'e ValidationError<'a>>
where
    'e: 'a,
{
    let (ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context }) = e.kind() else {
        return vec![e];
    };
    if enum_values(e, schema).is_some() {
        return vec![e];
    }
    let fitting: Vec<&Vec<ValidationError<'static>>> = context
        .iter()
        .filter(|errs| {
            !errs
                .iter()
                .any(|b| matches!(b.kind(), ValidationErrorKind::Type { .. }) && b.instance_path() == e.instance_path())
        })
        .collect();
    match fitting.as_slice() {
        [only] => only.iter().flat_map(|b| leaves_of(b, schema)).collect(),
        _ => vec![e],
    }
}

/// The string values an enum-like `oneOf` (one `const` per branch) allows.
fn enum_values(e: &ValidationError<'_>, schema: &Value) -> Option<Vec<String>> {
    let branches = schema.pointer(e.schema_path().as_str())?.as_array()?;
    let consts: Vec<String> = branches.iter().filter_map(|b| b.get("const").map(plain)).collect();
    (!consts.is_empty() && consts.len() == branches.len()).then_some(consts)
}

/// Unknown keys that are a typo of a missing required key at the same place: `(object path,
/// typo, meant)`. One error says both (instead of "unknown field" plus "missing field").
fn typos(leaves: &[&ValidationError<'_>]) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for leaf in leaves {
        let ValidationErrorKind::AdditionalProperties { unexpected } = leaf.kind() else {
            continue;
        };
        let path = dotted(leaf.instance_path());
        let missing: Vec<String> = leaves
            .iter()
            .filter(|m| dotted(m.instance_path()) == path)
            .filter_map(|m| match m.kind() {
                ValidationErrorKind::Required { property } => property.as_str().map(str::to_string),
                _ => None,
            })
            .collect();
        for typo in unexpected {
            if let Some(meant) = closest(typo, &missing) {
                out.push((path.clone(), typo.clone(), meant));
            }
        }
    }
    out
}

/// The candidate `word` most likely mistyped as, within two edits.
fn closest(word: &str, candidates: &[String]) -> Option<String> {
    candidates
        .iter()
        .map(|c| (strsim::levenshtein(&word.to_lowercase(), &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, c)| c.clone())
}

struct Context<'a> {
    source: &'a Source,
    schema: &'a Value,
    /// See `file_kind`.
    kind: Option<&'static str>,
    typos: Vec<(String, String, String)>,
}

impl Context<'_> {
    fn diagnostics(&self, e: &ValidationError<'_>) -> Vec<Diagnostic> {
        let source = self.source;
        let path = dotted(e.instance_path());
        let key = last_key(e);
        let value = e.instance();
        match e.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                let valid = fields_at(self.schema, e.schema_path());
                unexpected
                    .iter()
                    .map(|typo| {
                        let field = child_path(&path, typo);
                        let d = source.key_error(&field, format!("unknown field `{typo}`"));
                        let meant = self
                            .typos
                            .iter()
                            .find(|(p, t, _)| *p == path && t == typo)
                            .map(|(_, _, m)| m.clone())
                            .or_else(|| closest(typo, &valid));
                        match (meant, valid.is_empty()) {
                            (Some(m), _) => {
                                d.with_hint(format!("did you mean `{m}`? valid keys here: {}", valid.join(", ")))
                            }
                            (None, false) => d.with_hint(format!("valid keys here: {}", valid.join(", "))),
                            (None, true) => d.with_hint("this key is not part of the format; check its spelling"),
                        }
                    })
                    .collect()
            }
            ValidationErrorKind::Required { property } => {
                let missing = property.as_str().unwrap_or_default();
                // Said by the unknown-field error of its typo.
                if self.typos.iter().any(|(p, _, m)| *p == path && m == missing) {
                    return Vec::new();
                }
                let d = if path.is_empty() {
                    Diagnostic::error(format!("missing field `{missing}`"))
                        .at(Some(first_line(source)))
                        .in_file(source.path.clone())
                } else {
                    source.key_error(&path, format!("missing field `{missing}` in `{path}`"))
                };
                vec![d.field(child_path(&path, missing)).with_hint(self.required_hint())]
            }
            ValidationErrorKind::Type { kind } => {
                let wants: Vec<&str> = match kind {
                    TypeKind::Single(t) => wanted(&t.to_string()).into_iter().collect(),
                    TypeKind::Multiple(ts) => ts.iter().filter_map(|t| wanted(&t.to_string())).collect(),
                };
                vec![self.type_error(&path, &key, &wants, value)]
            }
            ValidationErrorKind::Constant { expected_value } => vec![
                source
                    .error(
                        &path,
                        format!("`{path}` is {}, and must be {}", plain(value), plain(expected_value)),
                    )
                    .with_hint(format!(
                        "write `{key}: {}`",
                        expected_value.as_str().unwrap_or_default()
                    )),
            ],
            ValidationErrorKind::Enum { options } => {
                let values = options
                    .as_array()
                    .map(|a| a.iter().map(plain).collect())
                    .unwrap_or_default();
                vec![enum_error(source, &path, value, values)]
            }
            ValidationErrorKind::OneOfNotValid { context } | ValidationErrorKind::AnyOf { context } => {
                if let Some(values) = enum_values(e, self.schema) {
                    return vec![enum_error(source, &path, value, values)];
                }
                // No branch has the value's type: say which types would do.
                let wants: Vec<&str> = context
                    .iter()
                    .flatten()
                    .filter(|b| b.instance_path() == e.instance_path())
                    .filter_map(|b| match b.kind() {
                        ValidationErrorKind::Type {
                            kind: TypeKind::Single(t),
                        } => wanted(&t.to_string()),
                        _ => None,
                    })
                    .collect();
                if wants.is_empty() {
                    vec![source.error(
                        &path,
                        format!("`{path}` is {}, which fits none of its forms", described(value)),
                    )]
                } else {
                    vec![self.type_error(&path, &key, &wants, value)]
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

    fn required_hint(&self) -> &'static str {
        match self.kind {
            None => REWRITE,
            Some(_) => "add the field; `kaas-gitops schema` lists what each block requires",
        }
    }

    /// `path` (whose own key is `key`) holds `value` where one of `wants` belongs.
    fn type_error(&self, path: &str, key: &str, wants: &[&str], value: &Value) -> Diagnostic {
        let mut wants: Vec<&str> = wants.to_vec();
        // "a whole number or a number" says "a number".
        if wants.contains(&"a number") {
            wants.retain(|w| *w != "a whole number");
        }
        wants.dedup();
        let want = wants.join(" or ");
        let d = self
            .source
            .error(path, format!("`{path}` must be {want}, not {}", described(value)));
        let written = || {
            self.source
                .scalar(path)
                .map_or_else(|| value.to_string(), |s| s.text.clone())
        };
        let hint = match (want.as_str(), value) {
            ("true or false", Value::String(s)) if s == "true" || s == "false" => {
                format!("unquote it: `{key}: {s}`")
            }
            ("true or false", Value::String(s)) => format!(
                "`{s}` is a string here, not a boolean (YAML 1.1 words like yes, no, on and off are not booleans in this format); write true or false"
            ),
            ("a list", _) => format!("write a list: `{key}: [a, b]`, or one `- item` per line under `{key}:`"),
            ("a mapping", _) if key.ends_with(']') => {
                "each item is a mapping of keys: `- name: …`, with the other keys under it".to_string()
            }
            ("a mapping", _) => format!("write the block's keys indented under `{key}:`"),
            (w, Value::Number(_) | Value::Bool(_)) if w.starts_with("a string") => {
                format!("quote it: `{key}: \"{}\"`", written())
            }
            (_, Value::String(s)) if s.trim().parse::<f64>().is_ok() => format!("unquote it: `{key}: {}`", s.trim()),
            ("a whole number", Value::Number(_)) => "write it without a fraction or exponent".to_string(),
            _ => format!("write {want} here"),
        };
        d.with_hint(hint)
    }
}

fn enum_error(source: &Source, path: &str, value: &Value, values: Vec<String>) -> Diagnostic {
    source
        .error(
            path,
            format!("`{path}` is {}, which is not one of its values", plain(value)),
        )
        .with_hint(format!("valid values (exact spelling): {}", values.join(", ")))
}

/// The key of the error's own place as written (a key may hold dots, as label keys do), or
/// `name[i]` for a list item.
fn last_key(e: &ValidationError<'_>) -> String {
    let segments: Vec<LocationSegment<'_>> = e.instance_path().into_iter().collect();
    let mut key = String::new();
    for segment in segments.iter().rev() {
        match segment {
            LocationSegment::Index(i) => key = format!("[{i}]{key}"),
            LocationSegment::Property(p) => {
                key = format!("{p}{key}");
                break;
            }
        }
    }
    key
}

/// A value as written in YAML: a string in backticks without JSON's quotes.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => format!("`{s}`"),
        other => format!("`{}`", shown(other)),
    }
}

/// A value as a message describes it: `a string ("abc")`, `24.5`, `empty`, `a list`.
fn described(v: &Value) -> String {
    match v {
        Value::Null => "empty".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(_) => format!("a string ({})", shown(v)),
        Value::Array(_) => "a list".to_string(),
        Value::Object(_) => "a mapping".to_string(),
    }
}

/// A JSON Schema type as a user reads it; `None` for `null` (an optional field may be left
/// empty, which no message needs to offer).
fn wanted(t: &str) -> Option<&'static str> {
    match t {
        "integer" => Some("a whole number"),
        "number" => Some("a number"),
        "boolean" => Some("true or false"),
        "string" => Some("a string"),
        "array" => Some("a list"),
        "object" => Some("a mapping"),
        _ => None,
    }
}
