//! The reference in docs/reference/ and the JSON Schema `kaas-gitops schema` prints agree.
//!
//! Convention parsed in docs/reference/platform.md and tenant.md: a *field table* is a markdown
//! table whose header's first cell is `field`; each of its rows starts with one backticked path.
//! A path is dotted from the top of the file (`spec.kamaji.chart.version`), with `[]` for the
//! items of a list (`spec.workers[].name`). A path whose first segment starts with a capital
//! letter is rooted at a shape of the schema's `$defs` (`Image.tag`, `Proxmox.sourceNode`):
//! such a shape is documented once, and a field of that shape anywhere is documented by its own
//! row alone (`spec.kamaji.image`), without repeating the shape's fields.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

/// The schema `kaas-gitops schema` prints.
fn schema() -> Value {
    let out = crate::common::bin()
        .arg("schema")
        .output()
        .expect("run kaas-gitops schema");
    assert!(
        out.status.success(),
        "kaas-gitops schema failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("kaas-gitops schema prints JSON")
}

/// The paths documented in the field tables of `docs/reference/<file>`, with their line.
fn documented(file: &str) -> BTreeMap<String, usize> {
    let path = crate::common::project_root().join("docs/reference").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut paths = BTreeMap::new();
    let mut in_field_table = false;
    let mut prev_was_row = false;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if !line.starts_with('|') {
            in_field_table = false;
            prev_was_row = false;
            continue;
        }
        let first = line[1..].split('|').next().unwrap_or("").trim();
        if !prev_was_row {
            // A header row.
            in_field_table = first.eq_ignore_ascii_case("field");
            prev_was_row = true;
            continue;
        }
        prev_was_row = true;
        if !in_field_table || first.starts_with("---") || first.starts_with(":-") {
            continue;
        }
        let inner = first
            .strip_prefix('`')
            .and_then(|s| s.strip_suffix('`'))
            .filter(|s| !s.is_empty() && !s.contains('`'))
            .unwrap_or_else(|| {
                panic!(
                    "{file}:{}: a field row must start with one backticked path, found `{first}`",
                    i + 1
                )
            });
        paths.insert(inner.to_string(), i + 1);
    }
    assert!(
        !paths.is_empty(),
        "{file} documents no field (no table whose first header is `field`)"
    );
    paths
}

/// The type a path is rooted at, when it starts with a capital letter (`Image.tag` -> `Image`).
fn type_root(path: &str) -> Option<&str> {
    let head = path.split(['.', '[']).next().unwrap_or("");
    head.starts_with(|c: char| c.is_ascii_uppercase()).then_some(head)
}

/// A property's schema with `anyOf: [X, null]` unwrapped and `$ref` resolved: the `$defs` name
/// (when it was a reference) and the node.
fn resolve<'a>(defs: &'a Map<String, Value>, v: &'a Value) -> (Option<&'a str>, &'a Value) {
    if let Some(any) = v.get("anyOf").and_then(Value::as_array) {
        let non_null: Vec<&Value> = any
            .iter()
            .filter(|x| x.get("type").and_then(Value::as_str) != Some("null"))
            .collect();
        if non_null.len() == 1 {
            return resolve(defs, non_null[0]);
        }
    }
    if let Some(r) = v.get("$ref").and_then(Value::as_str) {
        let name = r
            .strip_prefix("#/$defs/")
            .unwrap_or_else(|| panic!("unexpected $ref {r}"));
        let def = defs
            .get(name)
            .unwrap_or_else(|| panic!("$ref to missing $defs entry {name}"));
        return (Some(name), def);
    }
    (None, v)
}

/// Every field path under `node`, prefixed with `path`. A field whose shape is in `shapes` is
/// listed but not entered (its shape is documented on its own); recursive shapes stop at their
/// first repetition.
fn walk(
    defs: &Map<String, Value>,
    path: &str,
    node: &Value,
    shapes: &BTreeSet<String>,
    stack: &mut Vec<String>,
    out: &mut BTreeSet<String>,
) {
    let (name, n) = resolve(defs, node);
    if let Some(name) = name {
        if stack.iter().any(|s| s == name) || (!stack.is_empty() && shapes.contains(name)) {
            return;
        }
        stack.push(name.to_string());
    } else {
        // An inline node (a list, a map): keep `stack` non-empty below the root.
        stack.push(String::new());
    }
    if let Some(props) = n.get("properties").and_then(Value::as_object) {
        for (key, value) in props {
            let p = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            out.insert(p.clone());
            walk(defs, &p, value, shapes, stack, out);
        }
    } else if let Some(items) = n.get("items").filter(|i| i.is_object()) {
        walk(defs, &format!("{path}[]"), items, shapes, stack, out);
    } else if let Some(values) = n.get("additionalProperties").filter(|a| a.is_object()) {
        // A map whose values have fields of their own (plain maps of strings are leaves).
        if resolve(defs, values).1.get("properties").is_some() {
            walk(defs, &format!("{path}.<name>"), values, shapes, stack, out);
        }
    }
    stack.pop();
}

/// For each reference page: the paths the schema has (from the file's root, plus the shapes the
/// page documents on their own) and the paths the page documents.
fn pages() -> Vec<(&'static str, BTreeSet<String>, BTreeMap<String, usize>)> {
    let schema = schema();
    let defs = schema
        .get("$defs")
        .and_then(Value::as_object)
        .expect("the schema has $defs");
    let docs = [("platform.md", "PlatformFile"), ("tenant.md", "TenantFile")].map(|(f, root)| (f, root, documented(f)));
    // Shapes documented on their own, on either page.
    let mut shapes = BTreeSet::new();
    for (file, _, paths) in &docs {
        for (p, line) in paths {
            if let Some(t) = type_root(p) {
                assert!(
                    defs.contains_key(t),
                    "{file}:{line}: `{p}` is rooted at `{t}`, which is no shape of the schema's $defs"
                );
                shapes.insert(t.to_string());
            }
        }
    }
    docs.into_iter()
        .map(|(file, root, paths)| {
            let mut expected = BTreeSet::new();
            let root_def = defs
                .get(root)
                .unwrap_or_else(|| panic!("the schema has no $defs.{root}"));
            walk(defs, "", root_def, &shapes, &mut Vec::new(), &mut expected);
            let own: BTreeSet<&str> = paths.keys().filter_map(|p| type_root(p)).collect();
            for t in own {
                walk(defs, t, &defs[t], &shapes, &mut Vec::new(), &mut expected);
            }
            (file, expected, paths)
        })
        .collect()
}

#[test]
fn every_field_documented_in_the_reference_exists_in_the_schema() {
    let mut stale = Vec::new();
    for (file, expected, documented) in pages() {
        for (p, line) in &documented {
            if !expected.contains(p) {
                stale.push(format!("docs/reference/{file}:{line}: `{p}`"));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "documented but not in `kaas-gitops schema`:\n{}",
        stale.join("\n")
    );
}

#[test]
fn every_field_of_the_schema_is_documented_in_the_reference() {
    let mut missing = Vec::new();
    for (file, expected, documented) in pages() {
        for p in &expected {
            if !documented.contains_key(p) {
                missing.push(format!("docs/reference/{file}: `{p}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "in `kaas-gitops schema` but not documented:\n{}",
        missing.join("\n")
    );
}

/// The user-facing docs never send a reader to `../shared`, the maintainers' development folder
/// beside the project (issue 18): a plain clone does not have it, and the tests do not need it.
#[test]
fn no_user_doc_points_at_the_development_folder() {
    fn markdown(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                markdown(&p, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    let root = crate::common::project_root();
    let mut files = vec![root.join("README.md")];
    markdown(&root.join("docs"), &mut files);
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for (i, line) in text.lines().enumerate() {
            if line.contains("shared/") {
                found.push(format!(
                    "{}:{}: {line}",
                    f.strip_prefix(&root).unwrap().display(),
                    i + 1
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "user docs point at the development folder:\n{}",
        found.join("\n")
    );
}
