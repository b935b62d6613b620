//! A class's JSON patches: paths are JSON pointers into a template's spec, values come from a
//! fixed value, a declared variable or a Go template, and `enabledIf` only names variables that
//! exist. Cluster API would reject (or silently skip) a patch that breaks these at reconcile
//! time, long after the merge; here the author sees the line.

use std::collections::BTreeSet;

use crate::diagnostics::Diagnostic;
use crate::model::{ClassPatch, ClassPatchOp, PatchValue};
use crate::spec::raw::{Patch, PatchOpKind};
use crate::spec::source::Source;

/// Map keys whose members are usually `domain/name` keys: a `/` there must be written `~1`.
const KEYED_MAPS: [&str; 6] = [
    "annotations",
    "labels",
    "serviceAnnotations",
    "serviceLabels",
    "nodeSelector",
    "matchLabels",
];

/// Validates the patches at `field` against the class's variable names.
pub(super) fn patches(
    src: &Source,
    field: &str,
    raw: &[Patch],
    variables: &BTreeSet<String>,
    errs: &mut Vec<Diagnostic>,
) -> Vec<ClassPatch> {
    let mut names = BTreeSet::new();
    let mut out = Vec::new();
    for (i, p) in raw.iter().enumerate() {
        let f = format!("{field}[{i}]");
        if p.name.trim().is_empty() || !names.insert(p.name.clone()) {
            errs.push(
                src.error(
                    &format!("{f}.name"),
                    format!("patch name `{}` is empty or used twice", p.name),
                )
                .with_hint("give every patch of a class its own name"),
            );
        }
        if let Some(cond) = &p.enabled_if {
            template(src, &format!("{f}.enabledIf"), cond, variables, errs);
        }
        if p.ops.is_empty() {
            errs.push(src.error(&format!("{f}.ops"), "a patch needs at least one operation"));
        }
        let ops = p
            .ops
            .iter()
            .enumerate()
            .filter_map(|(j, op)| operation(src, &format!("{f}.ops[{j}]"), op, variables, errs))
            .collect();
        out.push(ClassPatch {
            name: p.name.clone(),
            description: p.description.clone(),
            enabled_if: p.enabled_if.clone(),
            target: p.target,
            ops,
        });
    }
    out
}

fn operation(
    src: &Source,
    field: &str,
    op: &crate::spec::raw::PatchOp,
    variables: &BTreeSet<String>,
    errs: &mut Vec<Diagnostic>,
) -> Option<ClassPatchOp> {
    if let Some((message, hint)) = pointer_problem(&op.path) {
        errs.push(src.error(&format!("{field}.path"), message).with_hint(hint));
    }
    let given = [op.value.is_some(), op.variable.is_some(), op.template.is_some()];
    let count = given.iter().filter(|g| **g).count();
    let value = match (op.op, count) {
        (PatchOpKind::Remove, 0) => None,
        (PatchOpKind::Remove, _) => {
            errs.push(
                src.error(field, "a `remove` takes no value")
                    .with_hint("drop `value`, `variable` and `template`"),
            );
            return None;
        }
        (_, 1) => {
            if let Some(v) = &op.value {
                Some(PatchValue::Fixed(v.clone()))
            } else if let Some(name) = &op.variable {
                let root = name.split('.').next().unwrap_or(name);
                if !(root == "builtin" || variables.contains(root)) {
                    errs.push(unknown_variable(src, &format!("{field}.variable"), root, variables));
                }
                Some(PatchValue::Variable(name.clone()))
            } else {
                let t = op.template.clone().unwrap_or_default();
                template(src, &format!("{field}.template"), &t, variables, errs);
                Some(PatchValue::Template(t))
            }
        }
        (kind, _) => {
            errs.push(
                src.error(field, format!("an `{}` needs exactly one of `value`, `variable` or `template`", kind.as_str()))
                    .with_hint("`value` for a fixed value, `variable: <name>` for a variable's value, `template` for a Go template over the variables"),
            );
            return None;
        }
    };
    Some(ClassPatchOp {
        op: op.op,
        path: op.path.clone(),
        value,
    })
}

/// What is wrong with a patch path, with a hint: it must be a JSON pointer into `/spec/`, with
/// `~0`/`~1` escapes, and a `domain/key` inside an annotation-like map must be escaped.
pub(crate) fn pointer_problem(path: &str) -> Option<(String, String)> {
    if !path.starts_with("/spec/") {
        return Some((
            format!("`{path}` does not point into the template's spec"),
            "Cluster API patches a template's spec only: start the path with `/spec/template/...`".into(),
        ));
    }
    let segments: Vec<&str> = path[1..].split('/').collect();
    for (i, seg) in segments.iter().enumerate() {
        if seg.is_empty() && i + 1 < segments.len() {
            return Some((
                format!("`{path}` has an empty segment"),
                "remove the doubled `/`".into(),
            ));
        }
        let mut chars = seg.chars();
        while let Some(c) = chars.next() {
            if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
                return Some((
                    format!("`{path}` has a `~` that is not an escape"),
                    "in a JSON pointer `~1` stands for `/` and `~0` for `~`; write a literal `~` as `~0`".into(),
                ));
            }
        }
        let parent = if i == 0 { "" } else { segments[i - 1] };
        if KEYED_MAPS.contains(&parent) && seg.contains('.') && i + 1 < segments.len() {
            let key = format!("{seg}~1{}", segments[i + 1]);
            return Some((
                format!("`{path}` splits the key `{seg}/{}` in two", segments[i + 1]),
                format!("escape the `/` inside a key as `~1`: `.../{parent}/{key}`"),
            ));
        }
    }
    None
}

/// A Go template over the variables: balanced `{{ }}`, and every `.name` it reads declared.
fn template(src: &Source, field: &str, text: &str, variables: &BTreeSet<String>, errs: &mut Vec<Diagnostic>) {
    if text.trim().is_empty() {
        errs.push(src.error(field, "empty template"));
        return;
    }
    match template_refs(text) {
        Err(message) => errs.push(
            src.error(field, message)
                .with_hint("a Go template writes actions as `{{ ... }}`, e.g. `{{ if .workerType }}true{{ end }}`"),
        ),
        Ok(refs) => {
            for r in refs {
                if r != "builtin" && !variables.contains(&r) {
                    errs.push(unknown_variable(src, field, &r, variables));
                }
            }
        }
    }
}

/// The variables a template reads (the first segment of each `.name`).
fn template_refs(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let end = after.find("}}").ok_or("unclosed `{{` in the template")?;
        let action = &after.as_bytes()[..end];
        for i in 0..action.len() {
            let starts_field = action[i] == b'.'
                && (i == 0 || matches!(action[i - 1], b' ' | b'\t' | b'(' | b'-'))
                && action.get(i + 1).is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_');
            if starts_field {
                let ident: String = action[i + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                    .map(|c| char::from(*c))
                    .collect();
                out.push(ident);
            }
        }
        rest = &after[end + 2..];
    }
    Ok(out)
}

fn unknown_variable(src: &Source, field: &str, name: &str, variables: &BTreeSet<String>) -> Diagnostic {
    let known: Vec<String> = variables.iter().map(|v| format!("`{v}`")).collect();
    src.error(field, format!("the class declares no variable `{name}`"))
        .with_hint(if known.is_empty() {
            "declare it under the class's `variables`, or read a `builtin.` one such as `builtin.cluster.name`"
                .to_string()
        } else {
            format!(
                "declared: {}; or read a `builtin.` one such as `builtin.cluster.name`",
                known.join(", ")
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_need_escapes_for_slashes_in_keys() {
        assert!(
            pointer_problem("/spec/template/spec/network/serviceAnnotations/load-balancer.hetzner.cloud~1type")
                .is_none()
        );
        let (message, hint) = pointer_problem("/spec/template/metadata/annotations/example.com/team").unwrap();
        assert!(message.contains("splits the key `example.com/team`"), "{message}");
        assert!(hint.contains("annotations/example.com~1team"), "{hint}");
        assert!(pointer_problem("/spec/a~2b").is_some());
        assert!(pointer_problem("/metadata/labels").is_some());
        assert!(pointer_problem("/spec/template/spec/users/-").is_none());
    }

    #[test]
    fn template_references_are_found() {
        assert_eq!(
            template_refs("{{ if .workerType }}true{{ end }}").unwrap(),
            vec!["workerType".to_string()]
        );
        assert_eq!(
            template_refs("{{- if and .a (eq .b.c \"x.y\") -}}true{{ end }}").unwrap(),
            vec!["a".to_string(), "b".to_string()]
        );
        assert!(template_refs("{{ .a ").is_err());
    }
}
