//! Model -> desired file tree. Pure: no I/O, no clock, no environment. Tenants render in
//! parallel; the tree is a sorted map, so the output does not depend on scheduling.

pub(crate) mod access;
pub(crate) mod addons;
pub(crate) mod backup;
mod datastores;
mod exposure;
mod flux;
pub(crate) mod images;
pub mod node;
pub mod objects;
pub(crate) mod platform;
mod providers;
pub(crate) mod shared;
mod tenant;
pub(crate) mod topology;
mod workers;
pub(crate) mod yaml;

use std::collections::{BTreeMap, BTreeSet};

use rayon::prelude::*;

use crate::model::{Model, Tenant};
use crate::render::images::Images;
use crate::render::node::Node;

/// Paths of the rendered repository and their bytes, sorted by path.
pub type Tree = BTreeMap<String, Vec<u8>>;

/// What the renderer needs besides the model.
#[derive(Debug, Clone, Copy, Default)]
pub struct Context {
    /// `base/platform/kustomization.yaml` exists: the platform overlay includes it.
    pub base_platform: bool,
    /// `base/tenant/kustomization.yaml` exists: every tenant overlay includes it.
    pub base_tenant: bool,
}

/// One Kubernetes object with the file it goes to.
#[derive(Debug, Clone)]
pub struct Object {
    /// `kind`, for the file name.
    pub kind: &'static str,
    /// `metadata.name`, for the file name.
    pub name: String,
    /// The whole object.
    pub body: Node,
}

impl Object {
    /// `<kind>-<name>.yaml` in lower case.
    pub fn file_name(&self) -> String {
        format!("{}-{}.yaml", self.kind, self.name).to_lowercase()
    }
}

/// What a render run is asked for (the command line's `--tenant`, `--locked`, `--full`).
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Render only these tenants (and the platform layer and flux/); all when empty.
    pub tenants: Vec<String>,
    /// Refuse an image without a digest in kaas.lock instead of rendering its tag with a warning.
    pub locked: bool,
    /// Re-render every tenant, including those whose overlay records this run's input hash.
    pub full: bool,
}

/// Which tenants a render covers.
#[derive(Debug, Clone, Copy)]
pub struct Selection<'a> {
    /// Only these tenants (all when `None`).
    pub only: Option<&'a [String]>,
    /// Tenants whose overlay on disk is current (same input hash): not rendered.
    pub skip: &'a BTreeSet<String>,
    /// Each tenant's input hash, recorded in its `kustomization.yaml`.
    pub hashes: &'a BTreeMap<String, String>,
}

use crate::layout::{self, INPUT_HASH_PREFIX};

/// Renders the platform layer, the Flux entry points and the selected tenants. Returns the tree
/// and the path prefixes it owns (stale files under them are deleted).
pub fn render(model: &Model, images: &Images, ctx: Context, sel: Selection<'_>) -> (Tree, Vec<String>) {
    let only = sel.only;
    let mut tree = Tree::new();
    let mut owned = vec![format!("{}/", layout::PLATFORM_DIR), format!("{}/", layout::FLUX_DIR)];
    let platform_dir = Dir {
        path: layout::PLATFORM_DIR.into(),
        input: "kaas.yaml",
        base: ctx.base_platform.then_some("../../base/platform"),
        namespace: None,
        hash: None,
    };
    add_dir(&mut tree, &platform_dir, platform::objects(model, images));
    // Not listed by the platform overlay's kustomization.yaml: a Flux Kustomization of its own
    // applies it first (render::flux).
    let kamaji_dir = Dir {
        path: layout::KAMAJI_DIR.into(),
        input: "kaas.yaml",
        base: None,
        namespace: None,
        hash: None,
    };
    add_dir(&mut tree, &kamaji_dir, platform::kamaji_objects(model, images));
    for (path, bytes) in flux::files(model, sel.skip) {
        tree.insert(path, bytes);
    }
    let selected: Vec<&Tenant> = model
        .tenants
        .iter()
        .filter(|t| only.is_none_or(|names| names.contains(&t.name)))
        .filter(|t| !sel.skip.contains(&t.name))
        .collect();
    match only {
        None => owned.push(format!("{}/", layout::TENANTS_DIR)),
        Some(names) => owned.extend(names.iter().map(|n| layout::tenant_prefix(n))),
    }
    let rendered: Vec<Tree> = selected
        .par_iter()
        .map(|t| tenant_tree(model, images, ctx, t, sel.hashes.get(&t.name).map(String::as_str)))
        .collect();
    for t in rendered {
        tree.extend(t);
    }
    (tree, owned)
}

/// One tenant's overlay; `hash` is recorded in its `kustomization.yaml`.
pub fn tenant_tree(model: &Model, images: &Images, ctx: Context, t: &Tenant, hash: Option<&str>) -> Tree {
    let mut tree = Tree::new();
    let dir = Dir {
        path: layout::tenant_dir(&t.name),
        input: &t.source_path,
        base: ctx.base_tenant.then_some("../../../base/tenant"),
        namespace: Some(&t.name),
        hash,
    };
    add_dir(&mut tree, &dir, tenant::objects(&model.platform, images, t));
    let bindings = access::bindings(t);
    if !bindings.is_empty() {
        let inside = Dir {
            path: format!("{}/{}", layout::tenant_dir(&t.name), access::ACCESS_DIR),
            input: &t.source_path,
            base: None,
            namespace: None,
            hash: None,
        };
        add_dir(&mut tree, &inside, bindings);
    }
    tree
}

/// An overlay folder.
struct Dir<'a> {
    path: String,
    input: &'a str,
    base: Option<&'a str>,
    namespace: Option<&'a str>,
    hash: Option<&'a str>,
}

fn add_dir(tree: &mut Tree, d: &Dir<'_>, objects: Vec<Object>) {
    let (dir, input, base, namespace) = (d.path.as_str(), d.input, d.base, d.namespace);
    let mut resources: Vec<String> = Vec::new();
    for obj in objects {
        let file = obj.file_name();
        let path = format!("{dir}/{file}");
        let previous = tree.insert(path.clone(), yaml::document(input, &obj.body));
        // Validation rules out two objects with one file name; never let one silently replace
        // the other in a release build (issue 9).
        assert!(previous.is_none(), "two objects render to {path}");
        resources.push(file);
    }
    resources.sort();
    if let Some(b) = base {
        resources.push(b.to_string());
    }
    let kustomization = crate::map! {
        "apiVersion" => "kustomize.config.k8s.io/v1beta1",
        "kind" => "Kustomization",
        "namespace" => namespace,
        "resources" => resources,
    };
    let mut bytes = yaml::document(input, &kustomization);
    if let Some(h) = d.hash {
        // Second header line: lets the next run skip this tenant when its inputs are unchanged.
        let at = bytes.iter().position(|b| *b == b'\n').map_or(0, |i| i + 1);
        let line = format!("{INPUT_HASH_PREFIX}{h}\n");
        bytes.splice(at..at, line.into_bytes());
    }
    tree.insert(format!("{dir}/{}", layout::KUSTOMIZATION), bytes);
}

/// The warnings a plan's deleted files raise: backup volumes going with their snapshots, and
/// the first move of the kamaji release to `kaas-kamaji`.
pub fn deletion_warnings<'a>(deleted: impl Iterator<Item = &'a str> + Clone) -> Vec<crate::diagnostics::Diagnostic> {
    let mut out = backup::deletion_warnings(deleted.clone());
    out.extend(platform::move_warnings(deleted));
    out
}

/// `metadata` with a name, an optional namespace and the labels every object carries.
pub(crate) fn meta(name: &str, namespace: Option<&str>, extra_labels: Node) -> Node {
    crate::map! {
        "name" => name,
        "namespace" => namespace,
        "labels" => extra_labels.or_absent(),
    }
}
