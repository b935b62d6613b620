//! `spec.upgrades.waves` of kaas.yaml: the waves `upgrade --wave` moves tenants in. (The
//! release list is parsed with the platform's other versions, in `platform`.)

use std::collections::BTreeSet;

use crate::diagnostics::Diagnostic;
use crate::model::build::names::{is_dns1123_label, label_key_problem, label_value_problem};
use crate::model::build::window::windows;
use crate::model::upgrade::Wave;
use crate::spec::raw::Upgrades;
use crate::spec::source::Source;

/// The waves, collecting every problem.
pub fn waves(src: &Source, spec: Option<&Upgrades>, errs: &mut Vec<Diagnostic>) -> Vec<Wave> {
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
            maintenance_windows: windows(
                src,
                &format!("{field}.maintenanceWindows"),
                &w.maintenance_windows,
                errs,
            ),
        });
        match &w.selector {
            // Without a selector a wave takes every tenant left: any wave after it would be empty.
            None if i != last => errs.push(
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
            Some(sel) => {
                for (k, v) in sel {
                    let f = format!("{field}.selector.{k}");
                    if let Some(why) = label_key_problem(k) {
                        errs.push(src.error(&f, format!("invalid label key `{k}`")).with_hint(why));
                    }
                    if let Some(why) = label_value_problem(v) {
                        errs.push(src.error(&f, format!("invalid label value `{v}`")).with_hint(why));
                    }
                }
            }
            None => {}
        }
    }
    out
}
