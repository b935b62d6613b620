//! Label keys and values as the API server validates them, wherever the fleet sets labels.

use serde_json::Value;

use crate::model::build::names::{is_dns1123_subdomain, is_label_name_part};
use crate::spec::source::child_path;
use crate::validate::{Check, Finding, Manifest, error};

/// Kubernetes' limit on label values and on the name part of label keys.
const MAX_LABEL: usize = 63;

/// Label keys and values (`metadata.labels` at any depth and every `matchLabels`) as the API
/// server validates them. Helm values are the chart's business and are skipped.
pub fn check(o: &Manifest) -> Vec<Finding> {
    let mut out = Vec::new();
    walk_labels(o, &o.value, "", &mut out);
    out
}

fn walk_labels(o: &Manifest, v: &Value, path: &str, out: &mut Vec<Finding>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let p = child_path(path, k);
                if o.kind == "HelmRelease" && p == "spec.values" {
                    continue;
                }
                let is_labels = k == "matchLabels" || (k == "labels" && path.ends_with("metadata"));
                if is_labels && let Value::Object(labels) = child {
                    for (lk, lv) in labels {
                        let field = format!("{p}.{lk}");
                        if let Some(why) = label_key_problem(lk) {
                            out.push(
                                error(Check::Fleet, o, &field, format!("label key `{lk}` is invalid: {why}"))
                                    .with_hint("a key is an optional DNS-subdomain prefix and `/`, then at most 63 of [A-Za-z0-9-_.], alphanumeric at both ends"),
                            );
                        }
                        if let Some(text) = lv.as_str()
                            && let Some(why) = label_value_problem(text)
                        {
                            out.push(
                                error(Check::Fleet, o, &field, format!("label value of `{lk}` is invalid: {why}"))
                                    .with_hint("a value is empty or at most 63 of [A-Za-z0-9-_.], alphanumeric at both ends; put longer text in an annotation"),
                            );
                        }
                    }
                    continue;
                }
                walk_labels(o, child, &p, out);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk_labels(o, item, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// Why `s` is no label value or name part, in the words `validate` findings use (the spec
/// validation in `validate::names` words the same rules for a tenant's own labels).
fn label_name_problem(s: &str) -> Option<String> {
    if s.len() > MAX_LABEL {
        return Some(format!("{} characters long, the limit is {MAX_LABEL}", s.len()));
    }
    (!is_label_name_part(s))
        .then(|| "it must be alphanumeric at both ends with only `-`, `_` and `.` inside".to_string())
}

fn label_key_problem(key: &str) -> Option<String> {
    let (prefix, name) = key.rsplit_once('/').map_or((None, key), |(p, n)| (Some(p), n));
    if let Some(p) = prefix
        && !is_dns1123_subdomain(p)
    {
        return Some(format!("the prefix `{p}` is no DNS subdomain"));
    }
    if name.is_empty() {
        return Some("the name part is empty".into());
    }
    label_name_problem(name)
}

fn label_value_problem(value: &str) -> Option<String> {
    if value.is_empty() {
        return None;
    }
    label_name_problem(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_syntax_follows_kubernetes() {
        assert_eq!(label_key_problem("app.kubernetes.io/managed-by"), None);
        assert_eq!(label_key_problem("node-role.kubernetes.io/node"), None);
        assert!(label_key_problem("Bad_Prefix/x").is_some());
        assert!(label_key_problem("-x").is_some());
        assert_eq!(label_value_problem(""), None);
        assert_eq!(label_value_problem("on"), None);
        assert!(label_value_problem(&"a".repeat(64)).is_some());
        assert!(label_value_problem("a b").is_some());
    }
}
