//! Model -> desired file tree. Pure: no I/O, no clock, no environment. Tenants render in
//! parallel; the tree is a sorted map, so the output does not depend on scheduling.

mod flux;
pub mod images;
pub mod node;
mod platform;
mod tenant;
mod workers;
pub mod yaml;

use std::collections::BTreeMap;

use rayon::prelude::*;

use crate::model::{Model, Tenant};
use crate::render::images::Images;
use crate::render::node::Node;

pub use flux::{platform_kustomization_name, tenant_kustomization_name};

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

/// Renders the platform layer, the Flux entry points and the tenants in `only` (all when
/// `None`). Returns the tree and the path prefixes it owns (stale files under them are deleted).
pub fn render(model: &Model, images: &Images, ctx: Context, only: Option<&[String]>) -> (Tree, Vec<String>) {
    let mut tree = Tree::new();
    let mut owned = vec!["overlays/platform/".to_string(), "flux/".to_string()];
    add_dir(
        &mut tree,
        "overlays/platform",
        "kaas.yaml",
        platform::objects(model, images),
        ctx.base_platform.then_some("../../base/platform"),
        None,
    );
    for (path, bytes) in flux::files(model) {
        tree.insert(path, bytes);
    }
    let selected: Vec<&Tenant> = model
        .tenants
        .iter()
        .filter(|t| only.is_none_or(|names| names.contains(&t.name)))
        .collect();
    match only {
        None => owned.push("overlays/tenants/".to_string()),
        Some(names) => owned.extend(names.iter().map(|n| format!("overlays/tenants/{n}/"))),
    }
    let rendered: Vec<Tree> = selected
        .par_iter()
        .map(|t| tenant_tree(model, images, ctx, t))
        .collect();
    for t in rendered {
        tree.extend(t);
    }
    (tree, owned)
}

/// One tenant's overlay.
pub fn tenant_tree(model: &Model, images: &Images, ctx: Context, t: &Tenant) -> Tree {
    let mut tree = Tree::new();
    add_dir(
        &mut tree,
        &format!("overlays/tenants/{}", t.name),
        &t.source_path,
        tenant::objects(&model.platform, images, t),
        ctx.base_tenant.then_some("../../../base/tenant"),
        Some(&t.name),
    );
    tree
}

fn add_dir(tree: &mut Tree, dir: &str, input: &str, objects: Vec<Object>, base: Option<&str>, namespace: Option<&str>) {
    let mut resources: Vec<String> = Vec::new();
    for obj in objects {
        let file = obj.file_name();
        let path = format!("{dir}/{file}");
        let previous = tree.insert(path.clone(), yaml::document(input, &obj.body));
        debug_assert!(previous.is_none(), "two objects render to {path}");
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
    tree.insert(
        format!("{dir}/kustomization.yaml"),
        yaml::document(input, &kustomization),
    );
}

/// `metadata` with a name, an optional namespace and the labels every object carries.
pub(crate) fn meta(name: &str, namespace: Option<&str>, extra_labels: Node) -> Node {
    crate::map! {
        "name" => name,
        "namespace" => namespace,
        "labels" => extra_labels.or_absent(),
    }
}
