//! `x-kubernetes-validations`: the CEL rules a CRD states at any node of its schema, evaluated
//! with `self` bound to the value at that node, as the API server does. Registered as a custom
//! JSON Schema keyword, so the validator walks the schema and reports the instance path.
//!
//! Never a false finding: a rule that only compares with the stored object (`oldSelf`), that
//! does not parse, or that uses a function or type this CEL implementation lacks (Kubernetes'
//! `isCIDR`, `quantity`, `url`...) is skipped and noted for `-v`. One evaluation error is a
//! finding: a rule that reads a field the object does not set. The API server rejects such an
//! object ("rule evaluation error: no such key"), and CEL's `||`/`&&` absorb the error wherever
//! the result does not depend on it, so the error is the API server's too.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use cel::objects::{Key, Map};
use cel::{Context, Env, Program};
use jsonschema::{Keyword, ValidationError};
use serde_json::Value;

use crate::validate::keyword::CustomError;

/// Rules that were not evaluated, and why; printed with `-v`.
#[derive(Debug, Default)]
pub struct Notes(Mutex<BTreeMap<String, String>>);

impl Notes {
    /// Records that `rule` was skipped.
    pub fn skip(&self, rule: &str, why: impl Into<String>) {
        if let Ok(mut m) = self.0.lock() {
            m.entry(rule.to_string()).or_insert_with(|| why.into());
        }
    }

    /// Every note, sorted.
    pub fn all(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|m| {
                m.iter()
                    .map(|(rule, why)| format!("CEL rule `{rule}` not evaluated: {why}"))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The CEL environment of Kubernetes validation rules, as far as the crate provides it: the
/// standard library plus the `strings` and `lists` extensions.
pub fn environment() -> Arc<Env> {
    let mut env = Env::stdlib();
    // Both extensions declare disjoint functions; a failure would be a bug in the crate.
    let _ = env.add_extension(cel::extensions::strings);
    let _ = env.add_extension(cel::extensions::lists);
    Arc::new(env)
}

struct Rule {
    source: String,
    program: Program,
    message: String,
    field_path: Option<String>,
}

/// The rules at one schema node.
pub struct Rules {
    env: Arc<Env>,
    rules: Vec<Rule>,
    notes: Arc<Notes>,
}

impl Rules {
    /// Compiles the rules listed at a node (`[{rule, message, fieldPath, ...}]`).
    pub fn compile(value: &Value, env: &Arc<Env>, notes: &Arc<Notes>) -> Rules {
        let mut rules = Vec::new();
        for item in value.as_array().into_iter().flatten() {
            let Some(source) = item["rule"].as_str() else { continue };
            if source.contains("oldSelf") {
                // Transition rules compare with the stored object; offline there is none.
                continue;
            }
            match env.compile(source) {
                Ok(program) => rules.push(Rule {
                    source: source.to_string(),
                    program,
                    message: item["message"]
                        .as_str()
                        .map_or_else(|| format!("failed rule: {source}"), str::to_string),
                    field_path: item["fieldPath"].as_str().map(str::to_string),
                }),
                Err(e) => notes.skip(source, format!("does not parse here ({e})")),
            }
        }
        Rules {
            env: env.clone(),
            rules,
            notes: notes.clone(),
        }
    }

    /// The rules that evaluate to `false` on `instance`, or fail on a field it does not set
    /// (with that field).
    fn failing<'a>(&'a self, instance: &Value) -> impl Iterator<Item = (&'a Rule, Option<String>)> + 'a {
        let this = to_cel(instance);
        self.rules.iter().filter_map(move |rule| {
            let mut ctx = Context::with_env(self.env.clone());
            ctx.add_variable_from_value("self", this.clone());
            match rule.program.execute(&ctx) {
                Ok(cel::Value::Bool(ok)) => (!ok).then_some((rule, None)),
                Ok(other) => {
                    self.notes.skip(&rule.source, format!("gave {other:?}, not a boolean"));
                    None
                }
                Err(cel::ExecutionError::NoSuchKey(key)) => Some((rule, Some(key.to_string()))),
                Err(e) => {
                    self.notes.skip(&rule.source, e.to_string());
                    None
                }
            }
        })
    }
}

impl<'i> Keyword<'i> for Rules {
    fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        match self.failing(instance).next() {
            Some((rule, absent)) => Err(error(rule, absent)),
            None => Ok(()),
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        self.failing(instance).next().is_none()
    }

    fn iter_errors(&self, instance: &'i Value) -> Box<dyn Iterator<Item = ValidationError<'i>> + 'i> {
        let errors: Vec<_> = self
            .failing(instance)
            .map(|(rule, absent)| error(rule, absent))
            .collect();
        Box::new(errors.into_iter())
    }
}

fn error(rule: &Rule, absent: Option<String>) -> ValidationError<'static> {
    CustomError {
        message: rule.message.clone(),
        rule: Some(rule.source.clone()),
        field_path: rule.field_path.clone(),
        absent,
    }
    .into_error()
}

/// JSON -> CEL value. Kubernetes reads every JSON integer as a CEL `int`.
pub fn to_cel(v: &Value) -> cel::Value {
    match v {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => cel::Value::Int(i),
            (None, Some(u)) => cel::Value::UInt(u),
            _ => cel::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(items) => cel::Value::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(m) => {
            let map: HashMap<Key, cel::Value> = m
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel(v)))
                .collect();
            cel::Value::Map(Map { map: Arc::new(map) })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules(list: Value) -> (Rules, Arc<Notes>) {
        let notes = Arc::new(Notes::default());
        (Rules::compile(&list, &environment(), &notes), notes)
    }

    #[test]
    fn helm_release_needs_exactly_one_of_chart_and_chart_ref() {
        let (r, notes) = rules(json!([{
            "rule": "(has(self.chart) && !has(self.chartRef)) || (!has(self.chart) && has(self.chartRef))",
            "message": "either chart or chartRef must be set",
        }]));
        assert!(r.is_valid(&json!({"chart": {}})));
        assert!(!r.is_valid(&json!({"chart": {}, "chartRef": {}})));
        assert!(!r.is_valid(&json!({})));
        assert!(notes.all().is_empty(), "{:?}", notes.all());
    }

    #[test]
    fn rules_this_crate_cannot_evaluate_are_skipped_not_failed() {
        let (r, notes) = rules(json!([
            {"rule": "self.all(x, isCIDR(x))"},
            {"rule": "self == oldSelf"},
        ]));
        assert!(r.is_valid(&json!(["10.0.0.0/8", "nonsense"])));
        let all = notes.all();
        assert_eq!(all.len(), 1, "{all:?}");
        assert!(all[0].contains("isCIDR"), "{all:?}");
    }

    #[test]
    fn a_rule_reading_an_absent_field_fails_unless_the_result_does_not_depend_on_it() {
        let (r, notes) = rules(json!([{"rule": "self.ipv4Config != null || self.ipv6Config != null"}]));
        assert!(r.is_valid(&json!({"ipv4Config": {}})));
        assert!(r.is_valid(&json!({"ipv6Config": {}})));
        assert!(!r.is_valid(&json!({})));
        assert!(notes.all().is_empty(), "{:?}", notes.all());
    }

    #[test]
    fn exists_one_and_integers_work_as_in_kubernetes() {
        let (r, _) = rules(json!([
            {"rule": "[has(self.oci), has(self.url), has(self.selector)].exists_one(x,x)"},
            {"rule": "self.port > 0 && self.port < 65536"},
        ]));
        assert!(r.is_valid(&json!({"url": "x", "port": 443})));
        assert!(!r.is_valid(&json!({"url": "x", "oci": "y", "port": 443})));
        assert!(!r.is_valid(&json!({"url": "x", "port": 70000})));
    }
}
