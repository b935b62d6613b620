//! The objects on disk: every YAML document under `overlays/` and `flux/` (checked) and under
//! `base/` (only resolved against), each with the index that locates its fields, and the
//! kustomize folders with the namespace each sets.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use rayon::prelude::*;
use serde_json::Value;

use crate::diagnostics::{Diagnostic, Location};
use crate::spec::source::{Pos, Source};
use crate::validate::{Check, Finding};

/// The folders whose objects Flux applies, and the one they may include.
const RENDERED: [&str; 2] = ["overlays", "flux"];
const BASE: &str = "base";

/// One Kubernetes object as written in a file.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// The file, relative to the repository, with `/` separators.
    pub file: String,
    /// The document's text, padded with the lines before it so that line numbers are the
    /// file's; indexed on first use (most objects never need a location).
    pub source: Source,
    /// The object as JSON.
    pub value: Value,
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.name` (empty when missing; the schema reports it).
    pub name: String,
    /// The namespace it lands in: its folder's kustomization `namespace`, else its own.
    pub namespace: Option<String>,
    /// Under `overlays/` or `flux/` (checked), not `base/` (only resolved against).
    pub rendered: bool,
    /// The folder holding the file.
    pub folder: String,
}

impl Manifest {
    /// The API group (`""` for the core group).
    pub fn group(&self) -> &str {
        self.api_version.rsplit_once('/').map_or("", |(g, _)| g)
    }

    /// The API version without the group.
    pub fn version(&self) -> &str {
        self.api_version.rsplit_once('/').map_or(&self.api_version, |(_, v)| v)
    }

    /// `Kind namespace/name`, or `Kind name` without a namespace.
    pub fn id(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} {ns}/{}", self.kind, self.name),
            None => format!("{} {}", self.kind, self.name),
        }
    }

    /// Where `field` (dotted, `spec.items[0].name`) is written, or its nearest written parent.
    pub fn locate(&self, field: &str) -> Option<Location> {
        self.source.locate(field)
    }

    /// Where the key of `field` is written (for unknown fields).
    pub fn locate_key(&self, field: &str) -> Option<Location> {
        self.source.locate_key(field)
    }

    /// The value at a JSON pointer (RFC 6901: `/spec/chart/spec/sourceRef`,
    /// `/spec/workers/items/0/ref`; `~1` for a `/` and `~0` for a `~` inside a key), so keys
    /// holding dots (`app.kubernetes.io/name`) are reached as written. See [`pointer_to`].
    pub fn pointer(&self, pointer: &str) -> Option<&Value> {
        self.value.pointer(pointer)
    }

    /// The string at a JSON pointer.
    pub fn pointer_str(&self, pointer: &str) -> Option<&str> {
        self.pointer(pointer).and_then(Value::as_str)
    }
}

/// The JSON pointer to the value under `keys`, each escaped as RFC 6901 says (`~` as `~0`,
/// then `/` as `~1`), so any key, dots and slashes included, names exactly one member.
pub fn pointer_to<'a>(keys: impl IntoIterator<Item = &'a str>) -> String {
    keys.into_iter()
        .map(|k| format!("/{}", k.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// A folder with a `kustomization.yaml`.
#[derive(Debug, Clone)]
pub struct Folder {
    /// Relative path, e.g. `overlays/tenants/acme`.
    pub path: String,
    /// The namespace it sets on every object.
    pub namespace: Option<String>,
    /// Under `overlays/` or `flux/`.
    pub rendered: bool,
}

/// Everything read from disk.
#[derive(Debug, Default)]
pub struct Fleet {
    /// Every object, sorted by file and position.
    pub objects: Vec<Manifest>,
    /// Kustomize folders, sorted by path.
    pub folders: Vec<Folder>,
    /// Files read under `overlays/` and `flux/`.
    pub files: usize,
    /// Files that are no valid YAML or hold no Kubernetes object.
    pub findings: Vec<Finding>,
}

impl Fleet {
    /// Reads `overlays/`, `flux/` and `base/` of `repo`.
    pub fn load(repo: &Path) -> Result<Fleet> {
        let mut paths: Vec<(String, bool)> = Vec::new();
        for top in RENDERED {
            walk(repo, top, &mut |p| paths.push((p, true)))?;
        }
        walk(repo, BASE, &mut |p| paths.push((p, false)))?;
        let read: Vec<Result<Parsed>> = paths
            .par_iter()
            .map(|(rel, rendered)| {
                let bytes = fs_err::read(repo.join(rel))?;
                Ok(parse_file(rel, &bytes, *rendered))
            })
            .collect();
        let mut fleet = Fleet {
            files: paths.iter().filter(|(_, r)| *r).count(),
            ..Fleet::default()
        };
        for parsed in read {
            let parsed = parsed?;
            fleet.objects.extend(parsed.objects);
            fleet.folders.extend(parsed.folders);
            fleet.findings.extend(parsed.findings);
        }
        fleet.folders.sort_by(|a, b| a.path.cmp(&b.path));
        let namespaces: BTreeMap<String, Option<String>> = fleet
            .folders
            .iter()
            .map(|f| (f.path.clone(), f.namespace.clone()))
            .collect();
        for o in &mut fleet.objects {
            // kustomize's namespace transformer wins over the object's own namespace.
            if let Some(Some(ns)) = namespaces.get(&o.folder)
                && !is_cluster_scoped(&o.kind)
            {
                o.namespace = Some(ns.clone());
            }
        }
        Ok(fleet)
    }

    /// The rendered objects (under `overlays/` and `flux/`).
    pub fn rendered(&self) -> impl Iterator<Item = &Manifest> {
        self.objects.iter().filter(|o| o.rendered)
    }
}

/// Kinds kustomize and the API server keep out of namespaces (those the fleet uses).
pub fn is_cluster_scoped(kind: &str) -> bool {
    matches!(
        kind,
        "Namespace" | "ClusterRole" | "ClusterRoleBinding" | "CustomResourceDefinition" | "DataStore"
    )
}

/// Every `.yaml`/`.yml` file under `top`, relative to `repo`, sorted.
fn walk(repo: &Path, top: &str, out: &mut dyn FnMut(String)) -> Result<()> {
    let dir = repo.join(top);
    if !dir.is_dir() {
        return Ok(());
    }
    let mut entries: Vec<(String, bool)> = Vec::new();
    for entry in fs_err::read_dir(&dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let is_dir = entry
            .path()
            .metadata()
            .with_context(|| format!("failed to read `{top}/{name}`"))?
            .is_dir();
        entries.push((name, is_dir));
    }
    entries.sort();
    for (name, is_dir) in entries {
        let rel = format!("{top}/{name}");
        if is_dir {
            walk(repo, &rel, out)?;
        } else if name.ends_with(".yaml") || name.ends_with(".yml") {
            out(rel);
        }
    }
    Ok(())
}

struct Parsed {
    objects: Vec<Manifest>,
    folders: Vec<Folder>,
    findings: Vec<Finding>,
}

fn parse_file(rel: &str, bytes: &[u8], rendered: bool) -> Parsed {
    let mut parsed = Parsed {
        objects: Vec::new(),
        folders: Vec::new(),
        findings: Vec::new(),
    };
    let folder = rel.rsplit_once('/').map_or("", |(d, _)| d).to_string();
    let Ok(text) = std::str::from_utf8(bytes) else {
        parsed.findings.push(Finding::new(
            Check::Parse,
            Diagnostic::error("file is not valid UTF-8").in_file(rel),
        ));
        return parsed;
    };
    for (first_line, doc) in documents(text) {
        // Pad with the lines before the document so that positions are the file's.
        let padded = format!("{}{doc}", "\n".repeat(first_line - 1));
        let options = serde_saphyr::options! {
            duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
        };
        let value: Value = match serde_saphyr::from_str_with_options(&padded, options) {
            Ok(v) => v,
            Err(e) => {
                if rendered {
                    parsed.findings.push(yaml_error(rel, &padded, &e));
                }
                continue;
            }
        };
        let source = Source::unindexed(rel, padded);
        if value.is_null() {
            continue;
        }
        let (api_version, kind) = match (&value["apiVersion"], &value["kind"]) {
            (Value::String(a), Value::String(k)) => (a.clone(), k.clone()),
            // base/ may hold kustomize patches, which are no objects.
            _ if !rendered => continue,
            _ => {
                let d = Diagnostic::error("this document is no Kubernetes object: it needs `apiVersion` and `kind`")
                    .at(source.locate(""))
                    .in_file(rel)
                    .with_hint(
                        "every file under overlays/, flux/ and base/ holds Kubernetes objects or a kustomization",
                    );
                parsed.findings.push(Finding::new(Check::Parse, d));
                continue;
            }
        };
        if api_version.starts_with("kustomize.config.k8s.io/") {
            parsed.folders.push(Folder {
                path: folder.clone(),
                namespace: value["namespace"].as_str().map(str::to_string),
                rendered,
            });
            continue;
        }
        let metadata = &value["metadata"];
        parsed.objects.push(Manifest {
            file: rel.to_string(),
            api_version,
            kind,
            name: metadata["name"].as_str().unwrap_or_default().to_string(),
            namespace: metadata["namespace"].as_str().map(str::to_string),
            rendered,
            folder: folder.clone(),
            source,
            value,
        });
    }
    parsed
}

/// The documents of a multi-document file with the 1-based line each starts on.
fn documents(text: &str) -> Vec<(usize, &str)> {
    let mut docs = Vec::new();
    let (mut start, mut start_line) = (0, 1);
    let mut offset = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare == "---" || bare.starts_with("--- ") {
            docs.push((start_line, &text[start..offset]));
            start = offset + line.len();
            start_line = i + 2;
        }
        offset += line.len();
    }
    docs.push((start_line, &text[start..]));
    docs.retain(|(_, d)| {
        d.lines()
            .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
    });
    docs
}

fn yaml_error(rel: &str, text: &str, e: &serde_saphyr::Error) -> Finding {
    // Only the line is needed, not the span index.
    let source = Source::unindexed(rel, text.to_string());
    let loc = e.location().map(|l| {
        let line = usize::try_from(l.line()).unwrap_or(1).max(1);
        let column = usize::try_from(l.column()).unwrap_or(1).max(1);
        source.location(Pos { line, column, len: 1 })
    });
    let raw = e.without_snippet().to_string();
    let first = raw.lines().next().unwrap_or(&raw).trim();
    let message = first.find(" at line ").map_or(first, |i| &first[..i]);
    let d = Diagnostic::error(format!("invalid YAML: {message}"))
        .at(loc)
        .in_file(rel)
        .with_hint("check indentation and quoting on this line");
    Finding::new(Check::Parse, d)
}

/// `file:line` of a field, for messages that point at a second place.
pub(super) fn place(o: &Manifest, field: &str) -> String {
    match o.locate(field) {
        Some(l) => format!("{}:{}", l.path, l.line),
        None => o.file.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_keep_their_line_numbers() {
        let text = "# header\na: 1\n---\nb: 2\n--- \n# only a comment\n";
        let docs = documents(text);
        assert_eq!(docs, vec![(1, "# header\na: 1\n"), (4, "b: 2\n")]);
    }

    #[test]
    fn objects_are_located_at_their_lines_in_multi_document_files() {
        let text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: b\n";
        let parsed = parse_file("overlays/x/ns.yaml", text.as_bytes(), true);
        assert!(parsed.findings.is_empty());
        let b = &parsed.objects[1];
        assert_eq!(b.name, "b");
        assert_eq!(b.locate("metadata.name").map(|l| l.line), Some(8));
        assert_eq!(b.folder, "overlays/x");
    }
}
