//! Every folder under `overlays/` and `flux/` builds with `kustomize build` (or `kubectl
//! kustomize`), and the build yields exactly the objects of its files, in its namespace, plus
//! what it includes from `base/`.
//!
//! A generated kustomization lists a few folders per kustomize process, built in parallel: a
//! process per folder pays ~0.1 s of start-up a thousand times, and one build of every folder
//! is slower still, as kustomize's cost grows faster than the objects of one build. Only when a
//! build fails are its folders built alone, to say which fails and why. `originAnnotations`
//! tell which file each built object came from.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use rayon::prelude::*;
use serde_json::Value;

use crate::diagnostics::Diagnostic;
use crate::spec::source::child_path;
use crate::validate::fleet::Folder;
use crate::validate::{Check, Finding, Fleet, Manifest, error};

const ORIGIN: &str = "config.kubernetes.io/origin";
/// The name of the link to the repository inside the temporary build folder.
const LINK: &str = "repo";
/// Folders per kustomize process (measured on a 1,000-tenant fleet: 1 and 100 are both slower).
const CHUNK: usize = 8;

/// The program that builds a kustomization.
#[derive(Debug, Clone)]
pub enum Tool {
    /// A standalone `kustomize`.
    Kustomize(PathBuf),
    /// `kubectl kustomize`, which has kustomize built in.
    Kubectl(PathBuf),
}

impl Tool {
    /// `kustomize` on `PATH`, else `kubectl`.
    pub fn find() -> Result<Tool> {
        if let Some(p) = on_path("kustomize") {
            return Ok(Tool::Kustomize(p));
        }
        if let Some(p) = on_path("kubectl") {
            return Ok(Tool::Kubectl(p));
        }
        bail!(
            "neither `kustomize` nor `kubectl` is on PATH; install one, or pass `--no-kustomize` to skip the build check"
        )
    }

    fn command(&self, dir: &Path) -> Command {
        match self {
            Tool::Kustomize(p) => {
                let mut c = Command::new(p);
                c.arg("build").arg(dir);
                c
            }
            Tool::Kubectl(p) => {
                let mut c = Command::new(p);
                c.arg("kustomize").arg(dir);
                c
            }
        }
    }
}

fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// One object of a build and the file it came from (relative to the repository).
#[derive(Debug)]
struct Built {
    origin: Option<String>,
    value: Value,
}

/// Builds every rendered folder; returns how many and the findings.
pub fn check(repo: &Path, fleet: &Fleet) -> Result<(usize, Vec<Finding>)> {
    let folders: Vec<&Folder> = fleet.folders.iter().filter(|f| f.rendered).collect();
    if folders.is_empty() {
        return Ok((0, Vec::new()));
    }
    let tool = Tool::find()?;
    let root = fs_err::canonicalize(repo)?;
    let paths: Vec<&str> = folders.iter().map(|f| f.path.as_str()).collect();
    let chunks: Vec<Result<Chunk>> = paths
        .par_chunks(CHUNK)
        .map(|chunk| build_chunk(&tool, &root, chunk))
        .collect();
    let mut built = Vec::new();
    let mut findings = Vec::new();
    let mut failed: BTreeSet<String> = BTreeSet::new();
    for chunk in chunks {
        let chunk = chunk?;
        built.extend(chunk.built);
        findings.extend(chunk.findings);
        failed.extend(chunk.failed);
    }
    findings.extend(compare(fleet, &folders, &failed, &built));
    Ok((folders.len(), findings))
}

/// What building a chunk of folders gave.
#[derive(Default)]
struct Chunk {
    built: Vec<Built>,
    findings: Vec<Finding>,
    /// The folders that do not build.
    failed: Vec<String>,
}

/// Builds `folders` together, or, when that fails, each alone to report the ones that fail.
fn build_chunk(tool: &Tool, root: &Path, folders: &[&str]) -> Result<Chunk> {
    if let Ok(built) = build(tool, root, folders)? {
        return Ok(Chunk {
            built,
            ..Chunk::default()
        });
    }
    let mut chunk = Chunk::default();
    for folder in folders {
        match build(tool, root, &[folder])? {
            Ok(b) => chunk.built.extend(b),
            Err(message) => {
                chunk.failed.push(folder.to_string());
                chunk.findings.push(
                Finding::new(
                    Check::Kustomize,
                    Diagnostic::error(format!("`{folder}` does not build: {message}"))
                        .in_file(format!("{folder}/kustomization.yaml")),
                )
                .with_hint("Flux cannot apply a folder kustomize cannot build; `kaas-gitops render` rewrites the generated kustomization.yaml"),
                );
            }
        }
    }
    Ok(chunk)
}

/// Builds a kustomization listing `folders`; `Ok(Err(stderr))` when kustomize refuses it.
fn build(tool: &Tool, root: &Path, folders: &[&str]) -> Result<std::result::Result<Vec<Built>, String>> {
    let dir = tempfile::tempdir().context("failed to create a temporary folder for kustomize")?;
    // kustomize refuses absolute resource paths; a link makes the repository relative.
    link(root, &dir.path().join(LINK))?;
    let mut text = String::from(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nbuildMetadata: [originAnnotations]\nresources:\n",
    );
    for f in folders {
        text.push_str(&format!("- {LINK}/{f}\n"));
    }
    fs_err::write(dir.path().join("kustomization.yaml"), text)?;
    let output = tool
        .command(dir.path())
        .output()
        .with_context(|| format!("failed to run {tool:?}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let message = stderr.trim().replace(&format!("{}/", dir.path().display()), "");
        return Ok(Err(message.replace(&format!("{LINK}/"), "")));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let docs: Vec<&str> = stdout.split("\n---\n").collect();
    let parsed: Vec<Result<Value, String>> = docs
        .par_iter()
        .map(|d| serde_saphyr::from_str::<Value>(d).map_err(|e| e.without_snippet().to_string()))
        .collect();
    let mut built = Vec::new();
    for p in parsed {
        let mut value = match p {
            Ok(v) if v.is_object() => v,
            Ok(_) => continue,
            Err(e) => bail!("kustomize printed YAML that does not parse: {e}"),
        };
        let origin = take_origin(&mut value);
        built.push(Built { origin, value });
    }
    Ok(Ok(built))
}

#[cfg(unix)]
fn link(target: &Path, at: &Path) -> Result<()> {
    std::os::unix::fs::symlink(target, at).with_context(|| format!("failed to link `{}`", at.display()))
}

#[cfg(not(unix))]
fn link(_target: &Path, _at: &Path) -> Result<()> {
    bail!("the kustomize check needs symbolic links (Unix); pass `--no-kustomize`")
}

/// Removes the origin annotation (and `annotations` if it is left empty); returns its path.
fn take_origin(value: &mut Value) -> Option<String> {
    let meta = value.get_mut("metadata")?.as_object_mut()?;
    let annotations = meta.get_mut("annotations")?.as_object_mut()?;
    let origin = annotations.remove(ORIGIN)?;
    if annotations.is_empty() {
        meta.remove("annotations");
    }
    let text = origin.as_str()?;
    let path = text.lines().find_map(|l| l.trim().strip_prefix("path:"))?.trim();
    Some(path.strip_prefix(&format!("{LINK}/")).unwrap_or(path).to_string())
}

fn identity(v: &Value) -> (String, String, String) {
    let s = |x: &Value| x.as_str().unwrap_or_default().to_string();
    (s(&v["apiVersion"]), s(&v["kind"]), s(&v["metadata"]["name"]))
}

/// Rendered objects that the build lacks or changes, and built objects from anywhere else but
/// the folders' files and `base/`.
fn compare(fleet: &Fleet, folders: &[&Folder], failed: &BTreeSet<String>, built: &[Built]) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut matched = vec![false; built.len()];
    let in_build: BTreeSet<&str> = folders.iter().map(|f| f.path.as_str()).collect();
    let mut by_id: BTreeMap<(&str, (String, String, String)), usize> = BTreeMap::new();
    for (i, b) in built.iter().enumerate() {
        if let Some(origin) = b.origin.as_deref() {
            by_id.entry((origin, identity(&b.value))).or_insert(i);
        }
    }
    let mut orphans: BTreeSet<&str> = BTreeSet::new();
    for o in fleet.rendered() {
        if !in_build.contains(o.folder.as_str()) {
            if orphans.insert(&o.folder) {
                out.push(
                    error(Check::Kustomize, o, "", format!("`{}` has no kustomization.yaml, so nothing applies this file", o.folder))
                        .with_hint("a leftover of a deleted tenant? `kaas-gitops render` deletes stale overlays; otherwise move the file into a kustomize folder"),
                );
            }
            continue;
        }
        if failed.contains(&o.folder) {
            continue;
        }
        let id = (o.api_version.clone(), o.kind.clone(), o.name.clone());
        let found = by_id.get(&(o.file.as_str(), id)).map(|i| (*i, &built[*i]));
        match found {
            None => out.push(
                error(Check::Kustomize, o, "", format!("not in the build of `{}`: its kustomization.yaml does not list `{}`", o.folder, o.file))
                    .with_hint("Flux never applies it; list the file under `resources` or delete it (`kaas-gitops render` rewrites generated folders)"),
            ),
            Some((i, b)) => {
                matched[i] = true;
                if let Some(path) = difference(&expected(o), &b.value, "") {
                    out.push(
                        error(Check::Kustomize, o, &path, format!("kustomize changes `{path}` of this object"))
                            .with_hint("a patch or transformer in kustomization.yaml rewrites rendered objects; change the input instead"),
                    );
                }
            }
        }
    }
    for (b, _) in built.iter().zip(&matched).filter(|(_, m)| !**m) {
        let from_base = b.origin.as_deref().is_some_and(|p| p.starts_with("base/"));
        let from_failed = b
            .origin
            .as_deref()
            .and_then(|p| p.rsplit_once('/'))
            .is_some_and(|(dir, _)| failed.contains(dir));
        if from_base || from_failed {
            continue;
        }
        let (api_version, kind, name) = identity(&b.value);
        let origin = b.origin.clone().unwrap_or_else(|| "a kustomize generator".into());
        out.push(
            Finding::new(
                Check::Kustomize,
                Diagnostic::error(format!(
                    "the build yields `{kind}` `{name}` ({api_version}) from `{origin}`, which is neither a rendered object of its folder nor under base/"
                ))
                .in_file(origin.clone()),
            )
            .with_hint("add objects of your own under base/, which every overlay includes"),
        );
    }
    out
}

/// The object as kustomize should print it: in its folder's namespace.
fn expected(o: &Manifest) -> Value {
    let mut v = o.value.clone();
    if let Some(ns) = &o.namespace
        && let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.insert("namespace".into(), Value::String(ns.clone()));
    }
    v
}

/// The first path (dotted) where `a` and `b` differ.
fn difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        // Each shared key is compared once: walking `y`'s keys again would compare every shared
        // subtree twice at every level (2^depth work on a clean object).
        (Value::Object(x), Value::Object(y)) => x
            .iter()
            .find_map(|(k, p)| match y.get(k) {
                Some(q) => difference(p, q, &child_path(path, k)),
                None => Some(child_path(path, k)),
            })
            .or_else(|| y.keys().find(|k| !x.contains_key(*k)).map(|k| child_path(path, k))),
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| difference(p, q, &format!("{path}[{i}]"))),
        _ if a == b => None,
        _ => Some(if path.is_empty() {
            "the object".into()
        } else {
            path.to_string()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_origin_annotation_names_the_file_and_is_removed() {
        let mut v = json!({"metadata": {"name": "a", "annotations": {ORIGIN: "path: repo/overlays/x/a.yaml\n"}}});
        assert_eq!(take_origin(&mut v).as_deref(), Some("overlays/x/a.yaml"));
        assert_eq!(v, json!({"metadata": {"name": "a"}}));
    }

    #[test]
    fn difference_names_the_first_changed_field() {
        let a = json!({"spec": {"replicas": 1, "list": [1, 2]}});
        assert_eq!(difference(&a, &a, ""), None);
        let b = json!({"spec": {"replicas": 2, "list": [1, 2]}});
        assert_eq!(difference(&a, &b, "").as_deref(), Some("spec.replicas"));
        let c = json!({"spec": {"replicas": 1, "list": [1, 3]}});
        assert_eq!(difference(&a, &c, "").as_deref(), Some("spec.list[1]"));
    }
}
