//! `spec.upgrades.waves` of kaas.yaml: the waves `upgrade --wave` moves tenants in. (The
//! release list is parsed with the platform's other versions, in `platform`.)

use std::collections::BTreeSet;

use crate::diagnostics::Diagnostic;
use crate::model::build::names::is_dns1123_label;
use crate::model::build::window::windows;
use crate::model::placement::ManagementCluster;
use crate::model::upgrade::Wave;
use crate::spec::raw::Upgrades;
use crate::spec::source::Source;

/// The waves, collecting every problem.
pub fn waves(
    src: &Source,
    spec: Option<&Upgrades>,
    clusters: &[ManagementCluster],
    errs: &mut Vec<Diagnostic>,
) -> Vec<Wave> {
    let Some(spec) = spec else {
        return Vec::new();
    };
    let mut names = BTreeSet::new();
    let mut out = Vec::new();
    let last = spec.waves.len().saturating_sub(1);
    for (i, w) in spec.waves.iter().enumerate() {
        let field = format!("spec.upgrades.waves[{i}]");
        if !is_dns1123_label(&w.name) {
            errs.push(
                src.error(
                    &format!("{field}.name"),
                    format!("`{}` is not a valid wave name", w.name),
                )
                .with_hint("a DNS-1123 label: lower-case letters, digits and `-`"),
            );
        } else if !names.insert(w.name.as_str()) {
            errs.push(
                src.error(&format!("{field}.name"), format!("two waves are named `{}`", w.name))
                    .with_hint("give each wave its own name"),
            );
        }
        out.push(Wave {
            name: w.name.clone(),
            selector: w.selector.clone(),
            management_cluster_selector: w.management_cluster_selector.clone(),
            maintenance_windows: windows(
                src,
                &format!("{field}.maintenanceWindows"),
                &w.maintenance_windows,
                errs,
            ),
        });
        if let Some(sel) = &w.management_cluster_selector {
            cluster_selector(src, &format!("{field}.managementClusterSelector"), sel, clusters, errs);
        }
        match &w.selector {
            // Without a selector a wave takes every tenant left: any wave after it would be empty.
            None if i != last && w.management_cluster_selector.is_none() => errs.push(
                src.key_error(
                    &field,
                    format!("wave `{}` has no `selector`, but is not the last wave", w.name),
                )
                .with_hint("only the last wave may take the rest; give this one `selector: {LABEL: VALUE}`"),
            ),
            Some(sel) if sel.is_empty() => errs.push(
                src.error(&format!("{field}.selector"), "an empty selector takes every tenant")
                    .with_hint("name at least one label, or leave `selector` out on the last wave"),
            ),
            Some(sel) => crate::model::build::fields::labels(src, &format!("{field}.selector"), sel, errs),
            None => {}
        }
    }
    out
}

/// `managementClusterSelector`: labels, and a cluster of kaas.yaml's carrying them all (a wave
/// selecting none would never take a tenant).
fn cluster_selector(
    src: &Source,
    field: &str,
    sel: &std::collections::BTreeMap<String, String>,
    clusters: &[ManagementCluster],
    errs: &mut Vec<Diagnostic>,
) {
    if sel.is_empty() {
        errs.push(
            src.error(field, "an empty selector takes every management cluster")
                .with_hint("name at least one label, or leave `managementClusterSelector` out"),
        );
        return;
    }
    crate::model::build::fields::labels(src, field, sel, errs);
    if clusters.is_empty() {
        errs.push(
            src.error(field, "kaas.yaml lists no management clusters to select")
                .with_hint("list them in `spec.managementClusters` with their labels, or select tenants by `selector`"),
        );
    } else if !clusters
        .iter()
        .any(|c| sel.iter().all(|(k, v)| c.labels.get(k) == Some(v)))
    {
        let listed: Vec<String> = clusters
            .iter()
            .map(|c| {
                let l: Vec<String> = c.labels.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                format!("`{}` {{{}}}", c.name, l.join(", "))
            })
            .collect();
        errs.push(
            src.error(
                field,
                "no management cluster carries these labels: the wave would take no tenant",
            )
            .with_hint(format!("management clusters: {}", listed.join(", "))),
        );
    }
}
