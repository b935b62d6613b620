//! `pr --platform`: propose the platform's change, `kaas.yaml` and `kaas.lock` as they are in
//! the working tree, and everything they re-render across the fleet, as one branch
//! `<prefix>platform`. The tenant files are the base's: a tenant's own edit goes through
//! `pr TENANT`. Rendered files change only where the new inputs render them differently from
//! the base's inputs, so output someone left unrendered on the base is not this change's.
//!
//! The body says what a reviewer of a platform change asks first: which images moved (tag and
//! digest, old -> new, from `kaas.lock`), and which tenants' overlays change and how (object
//! kinds and counts), then the platform layer's objects and the diffs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::Result;
use serde::Deserialize;

use crate::commands::pipeline;
use crate::commands::pr::body::{folded_diff, label, push_diffs};
use crate::commands::pr::plan::{Plan, Planned, against_base, is_any_output};
use crate::commands::summary::Status;
use crate::diagnostics::Diagnostic;
use crate::git::Change;
use crate::git::pr::Base;
use crate::layout;
use crate::render::{Options, Tree};
use crate::repo::inputs::{self, Inputs, PLATFORM_PATH};
use crate::repo::lock::{LOCK_PATH, Lock};

/// The branch's name after the prefix.
const BRANCH: &str = "platform";

/// Plans the platform's branch.
pub fn plan(
    repo: &Path,
    base: &Base,
    base_files: &BTreeMap<String, Vec<u8>>,
    before_inputs: &Inputs,
) -> Result<Planned> {
    let root = fs_err::canonicalize(repo)?;
    let read = |rel: &str| -> Result<Result<Option<Vec<u8>>, Diagnostic>> {
        let path = repo.join(rel);
        if std::fs::symlink_metadata(&path).is_err() {
            return Ok(Ok(None));
        }
        if let Some(d) = inputs::refuse_file(&root, &path, rel)? {
            return Ok(Err(d));
        }
        Ok(Ok(Some(inputs::read_bounded(&path)?)))
    };
    let platform = match read(PLATFORM_PATH)? {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            let d = Diagnostic::error(format!("no `{PLATFORM_PATH}` in the working tree"))
                .with_hint("`pr --platform` proposes the working tree's kaas.yaml and kaas.lock");
            return Ok(Planned::Invalid(vec![d]));
        }
        Err(d) => return Ok(Planned::Invalid(vec![d])),
    };
    let lock = match read(LOCK_PATH)? {
        Ok(l) => l,
        Err(d) => return Ok(Planned::Invalid(vec![d])),
    };
    let mut after_inputs = before_inputs.clone();
    after_inputs.platform = platform.clone();
    after_inputs.lock = lock.clone();
    let all = Options {
        tenants: Vec::new(),
        locked: false,
        full: true,
    };
    let after = match pipeline::run(&after_inputs, &all) {
        Ok(r) => r,
        Err(d) => return Ok(Planned::Invalid(d)),
    };
    if after_inputs.tenants.iter().any(|(_, stem, _)| stem == BRANCH) {
        let d = Diagnostic::error(format!(
            "a tenant is named `{BRANCH}`: its branch and the platform's would both be `{}{BRANCH}`",
            after.model.platform.branch_prefix
        ))
        .with_hint("rename the tenant, or propose the platform change by committing it yourself");
        return Ok(Planned::Invalid(vec![d]));
    }
    let before = pipeline::run(before_inputs, &all).ok();
    let changes = changes(
        base_files,
        platform,
        lock,
        before.as_ref().map(|r| &r.tree),
        &after.tree,
    );
    if changes.is_empty() {
        return Ok(Planned::Nothing(format!(
            "`{PLATFORM_PATH}`, `{LOCK_PATH}` and what they render on `{}` are already as in the working tree; nothing to propose",
            base.label
        )));
    }
    let branch = format!("{}{BRANCH}", after.model.platform.branch_prefix);
    let tenants: BTreeSet<String> = before_inputs
        .tenants
        .iter()
        .map(|(_, stem, _)| stem.clone())
        .chain(before_inputs.rendered.iter().cloned())
        .collect();
    let p = &after.model.platform;
    let clusters: Vec<Cluster> = p
        .management_clusters
        .iter()
        .map(|mc| Cluster {
            name: mc.name.clone(),
            default: mc.default,
            entry_point: p.flux_dir(Some(&mc.name)),
            tenants: after
                .model
                .tenants
                .iter()
                .filter(|t| t.management_cluster.as_deref() == Some(&mc.name))
                .map(|t| t.name.clone())
                .collect(),
        })
        .collect();
    let text = Text {
        base: &base.label,
        branch: &branch,
        changes: &changes,
        tenants: &tenants,
        clusters: &clusters,
    };
    let (title, message, body) = (text.title(), text.commit_message(), text.body());
    Ok(Planned::Branch(Plan {
        tenant: None,
        branch,
        changes,
        decided: Box::new(|p: &str| p == PLATFORM_PATH || p == LOCK_PATH || is_any_output(p)),
        author: after.model.platform.author.clone(),
        title,
        message,
        body,
    }))
}

/// What the branch changes against the base: `kaas.yaml` and `kaas.lock` as in the working
/// tree (the lock as the render leaves it: it may allocate VIPs), every rendered file where
/// `after` differs from `before` (with no `before`, from the base's files).
pub fn changes(
    base: &BTreeMap<String, Vec<u8>>,
    platform: Vec<u8>,
    lock: Option<Vec<u8>>,
    before: Option<&Tree>,
    after: &Tree,
) -> Vec<Change> {
    let mut want: BTreeMap<String, Option<Vec<u8>>> = BTreeMap::new();
    want.insert(PLATFORM_PATH.to_string(), Some(platform));
    want.insert(LOCK_PATH.to_string(), after.get(LOCK_PATH).cloned().or(lock));
    let mut rendered: BTreeSet<&str> = after.keys().map(String::as_str).filter(|p| is_any_output(p)).collect();
    if let Some(before) = before {
        rendered.extend(before.keys().map(String::as_str).filter(|p| is_any_output(p)));
    }
    for p in rendered {
        let new = after.get(p).cloned();
        let old = match before {
            Some(before) => before.get(p).cloned(),
            None => base.get(p).cloned(),
        };
        if new != old {
            want.insert(p.to_string(), new);
        }
    }
    against_base(base, want)
}

/// The text of the platform's pull request.
struct Text<'a> {
    base: &'a str,
    branch: &'a str,
    changes: &'a [Change],
    /// Every tenant the base knows (its files and its overlays), to tell whose files are whose.
    tenants: &'a BTreeSet<String>,
    /// kaas.yaml's management clusters as the change leaves them (empty: one, unnamed).
    clusters: &'a [Cluster],
}

/// A management cluster and the tenants placed on it, for the body's table.
struct Cluster {
    name: String,
    default: bool,
    /// Its Flux entry point (`flux`, `flux/<name>`).
    entry_point: String,
    tenants: BTreeSet<String>,
}

/// One image's pins before and after.
#[derive(Debug, PartialEq, Eq)]
struct Moved {
    image: String,
    /// `tag@digest`, or `None` when the image had (or has) no pin.
    old: Option<String>,
    new: Option<String>,
}

/// Per tenant: (created, changed, deleted) counts of object kinds.
type KindCounts = [BTreeMap<String, usize>; 3];

impl Text<'_> {
    fn title(&self) -> String {
        let moved = self.moved_images().len();
        let tenants = self.by_tenant().len();
        let mut parts = Vec::new();
        if moved > 0 {
            parts.push(format!("{moved} image{} moved", plural(moved)));
        }
        if tenants > 0 {
            parts.push(format!("{tenants} tenant{}", plural(tenants)));
        }
        if parts.is_empty() {
            "Update the platform".into()
        } else {
            format!("Update the platform ({})", parts.join(", "))
        }
    }

    fn commit_message(&self) -> String {
        let mut m = format!("{}\n\n", self.title());
        for row in self.moved_images() {
            m.push_str(&format!(
                "- {}: {} -> {}\n",
                row.image,
                row.old.as_deref().unwrap_or("(none)"),
                row.new.as_deref().unwrap_or("(none)")
            ));
        }
        for (tenant, counts) in self.by_tenant() {
            m.push_str(&format!("- tenant {tenant}: {}\n", summary(&counts)));
        }
        m.push_str("\nWritten by `kaas-gitops pr --platform`.\n");
        m
    }

    fn body(&self) -> String {
        let mut out = format!(
            "The platform changes with `{PLATFORM_PATH}` and `{LOCK_PATH}`.\n\nBase `{}` · branch `{}` · Flux applies this when it is merged.\n",
            self.base, self.branch
        );
        let moved = self.moved_images();
        out.push_str("\n### Images moved\n\n");
        if moved.is_empty() {
            out.push_str("None.\n");
        } else {
            out.push_str("| image | old | new |\n|---|---|---|\n");
            for row in &moved {
                let cell = |v: &Option<String>| v.as_ref().map_or("(none)".to_string(), |v| format!("`{v}`"));
                out.push_str(&format!(
                    "| `{}` | {} | {} |\n",
                    row.image,
                    cell(&row.old),
                    cell(&row.new)
                ));
            }
        }
        let tenants = self.by_tenant();
        out.push_str("\n### Tenants\n\n");
        if tenants.is_empty() {
            out.push_str("No tenant's overlay changes.\n");
        } else {
            out.push_str("| tenant | created | changed | deleted |\n|---|---|---|---|\n");
            for (tenant, counts) in &tenants {
                let cell = |m: &BTreeMap<String, usize>| kinds(m);
                out.push_str(&format!(
                    "| `{tenant}` | {} | {} | {} |\n",
                    cell(&counts[0]),
                    cell(&counts[1]),
                    cell(&counts[2])
                ));
            }
        }
        if !self.clusters.is_empty() {
            out.push_str(&self.clusters_table(&tenants));
        }
        let shared: Vec<&Change> = self
            .changes
            .iter()
            .filter(|c| self.tenant_of(&c.path).is_none())
            .collect();
        out.push_str("\n### Platform layer and shared files\n\n| | object | file |\n|---|---|---|\n");
        for c in &shared {
            out.push_str(&format!("| {} | {} | `{}` |\n", status(c).as_str(), label(c), c.path));
        }
        // The inputs first, then the platform layer, then the tenants' files.
        let mut ordered: Vec<&Change> = shared;
        ordered.sort_by_key(|c| (c.path != PLATFORM_PATH, c.path != LOCK_PATH, c.path.clone()));
        ordered.extend(self.changes.iter().filter(|c| self.tenant_of(&c.path).is_some()));
        push_diffs(
            &mut out,
            ordered.into_iter().map(|c| folded_diff(c, status(c), &label(c))),
            self.branch,
        );
        out
    }

    /// The tenant a rendered path belongs to: its overlay or its Flux entry.
    /// Which management clusters the change reaches: every one for a change of the platform
    /// layer (each applies it), else those whose tenants or entry point change.
    fn clusters_table(&self, tenants: &BTreeMap<String, KindCounts>) -> String {
        let platform = self.changes.iter().any(|c| layout::in_platform(&c.path));
        let mut out = String::from(
            "\n### Management clusters\n\n| management cluster | entry point | platform layer | tenants changed |\n|---|---|---|---|\n",
        );
        for mc in self.clusters {
            let entry = self
                .changes
                .iter()
                .any(|c| layout::entry_point_of(&c.path) == Some(mc.entry_point.as_str()));
            let changed: Vec<String> = mc
                .tenants
                .iter()
                .filter(|t| tenants.contains_key(*t))
                .map(|t| format!("`{t}`"))
                .collect();
            out.push_str(&format!(
                "| `{}`{} | `{}/`{} | {} | {} |\n",
                mc.name,
                if mc.default { " (default)" } else { "" },
                mc.entry_point,
                if entry { " (changes)" } else { "" },
                if platform { "changes" } else { "unchanged" },
                if changed.is_empty() {
                    "none".to_string()
                } else {
                    changed.join(", ")
                }
            ));
        }
        out
    }

    fn tenant_of(&self, path: &str) -> Option<String> {
        if let Some(tenant) = layout::tenant_of(path) {
            return Some(tenant.to_string());
        }
        layout::tenant_of_flux_entry(path, self.tenants.iter()).cloned()
    }

    fn by_tenant(&self) -> BTreeMap<String, KindCounts> {
        let mut out: BTreeMap<String, KindCounts> = BTreeMap::new();
        for c in self.changes {
            let Some(tenant) = self.tenant_of(&c.path) else {
                continue;
            };
            let column = match status(c) {
                Status::Created => 0,
                Status::Deleted => 2,
                _ => 1,
            };
            *out.entry(tenant).or_default()[column].entry(kind(c)).or_default() += 1;
        }
        out
    }

    fn moved_images(&self) -> Vec<Moved> {
        let Some(lock) = self.changes.iter().find(|c| c.path == LOCK_PATH) else {
            return Vec::new();
        };
        moved_images(lock.old.as_deref(), lock.new.as_deref())
    }
}

/// The images whose pins differ between two `kaas.lock`s: one row per pin replaced (a single
/// old pin and a single new one of an image pair up), added or dropped.
fn moved_images(old: Option<&[u8]>, new: Option<&[u8]>) -> Vec<Moved> {
    let pins = |bytes: Option<&[u8]>| -> BTreeMap<String, BTreeSet<String>> {
        let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        if let Some(lock) = bytes.and_then(|b| Lock::parse(b).ok()) {
            for ((image, tag), digest) in lock.images.iter() {
                out.entry(image.clone()).or_default().insert(format!("{tag}@{digest}"));
            }
        }
        out
    };
    let (old, new) = (pins(old), pins(new));
    let images: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    let empty = BTreeSet::new();
    let mut rows = Vec::new();
    for image in images {
        let (o, n) = (old.get(image).unwrap_or(&empty), new.get(image).unwrap_or(&empty));
        let gone: Vec<&String> = o.difference(n).collect();
        let came: Vec<&String> = n.difference(o).collect();
        if gone.len() == 1 && came.len() == 1 {
            rows.push(Moved {
                image: image.clone(),
                old: Some(gone[0].clone()),
                new: Some(came[0].clone()),
            });
            continue;
        }
        for g in gone {
            rows.push(Moved {
                image: image.clone(),
                old: Some(g.clone()),
                new: None,
            });
        }
        for c in came {
            rows.push(Moved {
                image: image.clone(),
                old: None,
                new: Some(c.clone()),
            });
        }
    }
    rows
}

fn status(c: &Change) -> Status {
    match (&c.old, &c.new) {
        (None, _) => Status::Created,
        (_, None) => Status::Deleted,
        _ => Status::Changed,
    }
}

#[derive(Deserialize)]
struct Head {
    kind: Option<String>,
}

/// The object kind a rendered file holds (`kustomization.yaml` is kustomize's `Kustomization`).
fn kind(c: &Change) -> String {
    let bytes = c.new.as_ref().or(c.old.as_ref());
    let text = bytes
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default();
    serde_saphyr::from_str::<Head>(&text)
        .ok()
        .and_then(|h| h.kind)
        .unwrap_or_else(|| "file".into())
}

/// `1 HelmRelease, 2 KubeadmConfigTemplate`.
fn kinds(m: &BTreeMap<String, usize>) -> String {
    m.iter().map(|(k, n)| format!("{n} {k}")).collect::<Vec<_>>().join(", ")
}

/// `changed: 1 HelmRelease; deleted: 1 Secret`.
fn summary(counts: &KindCounts) -> String {
    ["created", "changed", "deleted"]
        .iter()
        .zip(counts.iter())
        .filter(|(_, m)| !m.is_empty())
        .map(|(w, m)| format!("{w}: {}", kinds(m)))
        .collect::<Vec<_>>()
        .join("; ")
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D1: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
    const D2: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

    fn lock(images: &[(&str, &str, &str)]) -> Vec<u8> {
        let mut s = String::from("version: 1\nimages:\n");
        for (i, t, d) in images {
            s.push_str(&format!("- image: {i}\n  tag: {t}\n  digest: \"{d}\"\n"));
        }
        s.into_bytes()
    }

    #[test]
    fn pairs_a_replaced_pin_and_lists_added_and_dropped_ones() {
        let old = lock(&[
            ("docker.io/clastix/kamaji", "edge-25.1.1", D1),
            ("quay.io/x/gone", "v1", D1),
        ]);
        let new = lock(&[
            ("docker.io/clastix/kamaji", "edge-25.2.1", D2),
            ("quay.io/x/new", "v2", D2),
        ]);
        let rows = moved_images(Some(&old), Some(&new));
        assert_eq!(
            rows,
            vec![
                Moved {
                    image: "docker.io/clastix/kamaji".into(),
                    old: Some(format!("edge-25.1.1@{D1}")),
                    new: Some(format!("edge-25.2.1@{D2}")),
                },
                Moved {
                    image: "quay.io/x/gone".into(),
                    old: Some(format!("v1@{D1}")),
                    new: None,
                },
                Moved {
                    image: "quay.io/x/new".into(),
                    old: None,
                    new: Some(format!("v2@{D2}")),
                },
            ]
        );
        assert!(moved_images(Some(&old), Some(&old)).is_empty());
    }

    #[test]
    fn counts_each_tenants_objects_by_kind() {
        let change = |path: &str, old: Option<&str>, new: Option<&str>| Change {
            path: path.into(),
            old: old.map(|s| s.as_bytes().to_vec()),
            new: new.map(|s| s.as_bytes().to_vec()),
        };
        let changes = vec![
            change("kaas.yaml", Some("a"), Some("b")),
            change(
                "overlays/tenants/acme/helmrelease-acme-etcd.yaml",
                Some("kind: HelmRelease\n"),
                Some("kind: HelmRelease\nx: 1\n"),
            ),
            change(
                "overlays/tenants/acme/kcp.yaml",
                None,
                Some("kind: KamajiControlPlane\n"),
            ),
            change(
                "overlays/tenants/acme/old-a.yaml",
                Some("kind: KubeadmConfigTemplate\n"),
                None,
            ),
            change(
                "overlays/tenants/acme/old-b.yaml",
                Some("kind: KubeadmConfigTemplate\n"),
                None,
            ),
            change(
                "flux/kustomization-kaas-tenant-globex.yaml",
                Some("kind: Kustomization\n"),
                Some("kind: Kustomization\ny: 2\n"),
            ),
            change(
                "overlays/platform/helmrelease-kamaji.yaml",
                Some("kind: HelmRelease\n"),
                Some("kind: HelmRelease\nz: 1\n"),
            ),
        ];
        let tenants: BTreeSet<String> = ["acme".to_string(), "globex".to_string()].into();
        let text = Text {
            base: "main",
            branch: "kaas/platform",
            changes: &changes,
            tenants: &tenants,
            clusters: &[],
        };
        assert_eq!(text.title(), "Update the platform (2 tenants)");
        let body = text.body();
        assert!(
            body.contains("| `acme` | 1 KamajiControlPlane | 1 HelmRelease | 2 KubeadmConfigTemplate |\n"),
            "{body}"
        );
        assert!(body.contains("| `globex` |  | 1 Kustomization |  |\n"), "{body}");
        assert!(
            body.contains("| changed | `overlays/platform/helmrelease-kamaji.yaml` |")
                || body.contains("| changed | `HelmRelease"),
            "{body}"
        );
        assert!(body.contains("### Images moved\n\nNone.\n"), "{body}");
        assert!(text.commit_message().contains(
            "- tenant acme: created: 1 KamajiControlPlane; changed: 1 HelmRelease; deleted: 2 KubeadmConfigTemplate\n"
        ));
        assert!(
            !body.contains("### Management clusters"),
            "one cluster: no table\n{body}"
        );

        // Several management clusters: which one each change reaches. The platform layer reaches
        // every one; globex's Flux entry is in us-1's folder.
        let mut changes = changes.clone();
        changes[5].path = "flux/us-1/kustomization-kaas-tenant-globex.yaml".into();
        let cluster = |name: &str, default: bool, entry: &str, tenants: &[&str]| Cluster {
            name: name.into(),
            default,
            entry_point: entry.into(),
            tenants: tenants.iter().map(|t| t.to_string()).collect(),
        };
        let clusters = [
            cluster("eu-1", true, "flux", &["acme"]),
            cluster("us-1", false, "flux/us-1", &["globex"]),
            cluster("us-2", false, "flux/us-2", &[]),
        ];
        let text = Text {
            base: "main",
            branch: "kaas/platform",
            changes: &changes,
            tenants: &tenants,
            clusters: &clusters,
        };
        let body = text.body();
        for row in [
            "| `eu-1` (default) | `flux/` | changes | `acme` |\n",
            "| `us-1` | `flux/us-1/` (changes) | changes | `globex` |\n",
            "| `us-2` | `flux/us-2/` | changes | none |\n",
        ] {
            assert!(body.contains(row), "no `{row}` in\n{body}");
        }
    }
}
