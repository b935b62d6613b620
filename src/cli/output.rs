//! The one JSON document every command prints under `--format json` (docs/output.md): its
//! `apiVersion`, `kind`, `ok` and `diagnostics`, with the command's own fields beside them.
//! `docs/output.schema.json` is its JSON Schema; a test validates real outputs against it.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::diagnostics::{Diagnostic, Severity};

/// The version of the envelope. A field is only ever added under the same version.
pub const API_VERSION: &str = "kaas-gitops.dev/v1";

/// A diagnostic as the envelope carries it: flat, with the file, line and column of its
/// location when it has one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WireDiagnostic {
    /// `error` or `warning`.
    pub severity: Severity,
    /// What is wrong.
    pub message: String,
    /// The file, relative to the repository root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// 1-based line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// 1-based column, in characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    /// The field, as a dotted path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// What would be valid, or what to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// For an error of the environment: its causes, outermost first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<String>,
}

impl From<&Diagnostic> for WireDiagnostic {
    fn from(d: &Diagnostic) -> WireDiagnostic {
        WireDiagnostic {
            severity: d.severity,
            message: d.message.clone(),
            file: d.location.as_ref().map(|l| l.path.clone()).or_else(|| d.file.clone()),
            line: d.location.as_ref().map(|l| l.line),
            column: d.location.as_ref().map(|l| l.column),
            field: d.field.clone(),
            hint: d.hint.clone(),
            causes: Vec::new(),
        }
    }
}

/// The document.
#[derive(Debug, Clone)]
pub struct Envelope {
    kind: &'static str,
    ok: bool,
    diagnostics: Vec<WireDiagnostic>,
    data: Map<String, Value>,
}

impl Envelope {
    /// `data`: the command's own fields; those named like the envelope's are replaced.
    pub fn new(kind: &'static str, ok: bool, diagnostics: Vec<WireDiagnostic>, data: Map<String, Value>) -> Envelope {
        Envelope {
            kind,
            ok,
            diagnostics,
            data,
        }
    }

    /// The document, its keys sorted (serde_json's map), so the output is deterministic.
    pub fn to_value(&self) -> Value {
        let mut doc = Map::new();
        doc.insert("apiVersion".into(), Value::from(API_VERSION));
        doc.insert("kind".into(), Value::from(self.kind));
        doc.insert("ok".into(), Value::from(self.ok));
        doc.insert(
            "diagnostics".into(),
            serde_json::to_value(&self.diagnostics).unwrap_or_default(),
        );
        for (k, v) in &self.data {
            if !doc.contains_key(k) {
                doc.insert(k.clone(), v.clone());
            }
        }
        Value::Object(doc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::Location;

    #[test]
    fn the_envelope_wraps_the_command_fields_and_flattens_locations() {
        let d = Diagnostic::error("bad").with_hint("fix it").at(Some(Location {
            path: "tenants/acme.yaml".into(),
            line: 3,
            column: 5,
            len: 1,
            line_text: String::new(),
            text_column: 5,
        }));
        let mut data = Map::new();
        data.insert("units".into(), Value::from(vec!["acme"]));
        // A command field named like an envelope field never replaces it.
        data.insert("ok".into(), Value::from(true));
        let doc = Envelope::new("RenderResult", false, vec![WireDiagnostic::from(&d)], data).to_value();
        assert_eq!(
            doc.to_string(),
            r#"{"apiVersion":"kaas-gitops.dev/v1","diagnostics":[{"column":5,"file":"tenants/acme.yaml","hint":"fix it","line":3,"message":"bad","severity":"error"}],"kind":"RenderResult","ok":false,"units":["acme"]}"#
        );
    }
}
