//! A test-only CRD validator: each upstream CRD's served `openAPIV3Schema`, converted to JSON
//! Schema (draft 4, which OpenAPI v3 schemas follow) and made strict the way the API server is:
//! an object with `properties` and no `x-kubernetes-preserve-unknown-fields` refuses other
//! fields (the API server would prune them, silently losing what we rendered). CEL rules
//! (`x-kubernetes-validations`) are not checked. The product's own CRD validator can replace
//! this file: `Crds::load` and `Crds::check_dir` are all the tests use.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use serde_json::{Map, Value};

/// API groups served by Kubernetes itself: their objects have no CRD (the backup CronJob's
/// `batch/v1` is checked against the Kubernetes API types in `backup.rs`).
const BUILT_IN: [&str; 3] = ["v1", "rbac.authorization.k8s.io/v1", "batch/v1"];

/// The CRDs of a folder (`<group>/<plural>.yaml`), by `(apiVersion, kind)` of served versions.
pub struct Crds {
    schemas: BTreeMap<(String, String), Value>,
}

/// What checking a folder of rendered objects found.
#[derive(Debug, Default)]
pub struct Report {
    /// Objects validated against a CRD.
    pub validated: usize,
    /// `file: path: message` for every violation.
    pub errors: Vec<String>,
    /// `(apiVersion, kind)` of objects that are neither built in nor have a CRD in the folder.
    pub without_crd: BTreeSet<(String, String)>,
}

impl Crds {
    /// The CRDs of `dir`, parsed once per folder and test binary.
    pub fn load(dir: &Path) -> &'static Crds {
        static CRDS: OnceLock<Mutex<BTreeMap<PathBuf, &'static Crds>>> = OnceLock::new();
        let mut loaded = CRDS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        loaded.entry(dir.to_path_buf()).or_insert_with(|| {
            let mut schemas = BTreeMap::new();
            for group in std::fs::read_dir(dir).expect("the CRD folder is readable") {
                let group = group.unwrap().path();
                if !group.is_dir() {
                    continue;
                }
                for file in std::fs::read_dir(&group).unwrap() {
                    let file = file.unwrap().path();
                    if file.extension().is_some_and(|e| e == "yaml") {
                        add_crd(&mut schemas, &file);
                    }
                }
            }
            assert!(!schemas.is_empty(), "no CRDs in {}", dir.display());
            Box::leak(Box::new(Crds { schemas }))
        })
    }

    /// Validates every object in every `*.yaml` under `dir` (kustomize's own files excepted).
    pub fn check_dir(&self, dir: &Path) -> Report {
        let mut report = Report::default();
        let mut files = Vec::new();
        collect(dir, &mut files);
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let object: Value = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let api_version = object["apiVersion"].as_str().unwrap_or("").to_string();
            let kind = object["kind"].as_str().unwrap_or("").to_string();
            if api_version.starts_with("kustomize.config.k8s.io/") || BUILT_IN.contains(&api_version.as_str()) {
                continue;
            }
            let Some(schema) = self.schemas.get(&(api_version.clone(), kind.clone())) else {
                report.without_crd.insert((api_version, kind));
                continue;
            };
            let validator = jsonschema::draft4::new(schema).expect("a converted CRD schema compiles");
            report.validated += 1;
            for e in validator.iter_errors(&object) {
                report
                    .errors
                    .push(format!("{}: {}: {e}", file.display(), e.instance_path().as_str()));
            }
        }
        report
    }
}

fn collect(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|e| e == "yaml") {
            out.push(p);
        }
    }
}

fn add_crd(schemas: &mut BTreeMap<(String, String), Value>, file: &Path) {
    let text = std::fs::read_to_string(file).unwrap();
    let crd: Value = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let group = crd["spec"]["group"].as_str().expect("a CRD has a group");
    let kind = crd["spec"]["names"]["kind"].as_str().expect("a CRD has a kind");
    for version in crd["spec"]["versions"].as_array().expect("a CRD has versions") {
        if version["served"] == Value::Bool(false) {
            continue;
        }
        let name = version["name"].as_str().expect("a version has a name");
        let schema = convert(&version["schema"]["openAPIV3Schema"]);
        schemas.insert((format!("{group}/{name}"), kind.to_string()), schema);
    }
}

/// OpenAPI v3 (structural, with Kubernetes extensions) -> strict JSON Schema draft 4.
pub fn convert(schema: &Value) -> Value {
    let Value::Object(s) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (k, v) in s {
        let converted = match k.as_str() {
            "properties" => Value::Object(
                v.as_object()
                    .map(|p| p.iter().map(|(name, s)| (name.clone(), convert(s))).collect())
                    .unwrap_or_default(),
            ),
            "items" | "additionalProperties" | "not" => convert(v),
            "allOf" | "anyOf" | "oneOf" => Value::Array(v.as_array().into_iter().flatten().map(convert).collect()),
            // Formats such as `int32` or `date-time` are not asserted by the API server either.
            "format" => continue,
            // Kubernetes patterns are RE2; JSON Schema's are ECMA-262, which has no inline
            // `(?i)` flag. The one CRD use of it widens `a-z` ranges, so widen them instead.
            "pattern" if v.as_str().is_some_and(|p| p.contains("(?i)")) => {
                Value::from(v.as_str().unwrap_or("").replace("(?i)", "").replace("a-z", "a-zA-Z"))
            }
            key if key.starts_with("x-kubernetes-") || key == "nullable" => continue,
            _ => v.clone(),
        };
        out.insert(k.clone(), converted);
    }
    if s.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        out.remove("type");
        out.insert(
            "anyOf".into(),
            serde_json::json!([{"type": "integer"}, {"type": "string"}]),
        );
    }
    if s.get("nullable") == Some(&Value::Bool(true))
        && let Some(t) = out.get("type").cloned()
    {
        out.insert("type".into(), serde_json::json!([t, "null"]));
    }
    let preserve = s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    if s.contains_key("properties") && !preserve && !s.contains_key("additionalProperties") {
        if s.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true))
            && let Some(Value::Object(p)) = out.get_mut("properties")
        {
            for key in ["apiVersion", "kind", "metadata"] {
                p.entry(key).or_insert_with(|| serde_json::json!({}));
            }
        }
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    Value::Object(out)
}

#[test]
fn the_conversion_is_strict_about_unknown_fields_and_knows_int_or_string() {
    let schema = convert(&serde_json::json!({
        "type": "object",
        "properties": {
            "size": {"x-kubernetes-int-or-string": true},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {}},
            "maybe": {"type": "string", "nullable": true},
        },
    }));
    let v = jsonschema::draft4::new(&schema).unwrap();
    assert!(v.is_valid(&serde_json::json!({"size": 3, "free": {"x": 1}, "maybe": null})));
    assert!(v.is_valid(&serde_json::json!({"size": "3Gi"})));
    assert!(!v.is_valid(&serde_json::json!({"sise": 3})));
    assert!(!v.is_valid(&serde_json::json!({"size": true})));
}
