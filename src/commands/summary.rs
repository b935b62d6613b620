//! One line per tenant of what a render did: created, changed, deleted or unchanged.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

use crate::repo::tree::Plan;

/// What happened to one tenant (or the platform layer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Its overlay is new.
    Created,
    /// Some of its files changed.
    Changed,
    /// Its overlay was removed.
    Deleted,
    /// Nothing changed.
    Unchanged,
}

impl Status {
    /// Lower-case word.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Created => "created",
            Status::Changed => "changed",
            Status::Deleted => "deleted",
            Status::Unchanged => "unchanged",
        }
    }
}

/// `1 file`, `3 files`.
pub fn files(n: usize) -> String {
    if n == 1 {
        "1 file".to_string()
    } else {
        format!("{n} files")
    }
}

/// Status per unit: `platform` and each tenant name. `tenants` are the tenants rendered.
pub fn summarize(plan: &Plan, tenants: &[String]) -> BTreeMap<String, (Status, usize)> {
    let mut out: BTreeMap<String, (Status, usize)> = BTreeMap::new();
    out.insert("platform".into(), (Status::Unchanged, 0));
    for t in tenants {
        out.insert(t.clone(), (Status::Unchanged, 0));
    }
    let unit = |path: &str| -> Option<String> {
        if let Some(tenant) = crate::layout::tenant_of(path) {
            Some(tenant.to_string())
        } else if crate::layout::in_platform(path) {
            Some("platform".into())
        } else {
            None
        }
    };
    let mut touch = |path: &str, s: Status| {
        if let Some(u) = unit(path) {
            let e = out.entry(u).or_insert((s, 0));
            e.1 += 1;
            e.0 = match (e.0, s) {
                (Status::Unchanged, s) => s,
                (a, b) if a == b => a,
                _ => Status::Changed,
            };
        }
    };
    for (p, _) in &plan.created {
        touch(p, Status::Created);
    }
    for (p, _, _) in &plan.changed {
        touch(p, Status::Changed);
    }
    for (p, _) in &plan.deleted {
        touch(p, Status::Deleted);
    }
    // Only a new (or removed) kustomization.yaml means the whole overlay is new (or gone);
    // otherwise added or removed files are a change of an existing overlay.
    let dir = |u: &str| crate::layout::overlay_index((u != "platform").then_some(u));
    // Looked up once per unit: a fleet's first render creates 15 files per tenant.
    let created: HashSet<&str> = plan.created.iter().map(|(p, _)| p.as_str()).collect();
    let deleted: HashSet<&str> = plan.deleted.iter().map(|(p, _)| p.as_str()).collect();
    for (u, (s, _)) in &mut out {
        let k = dir(u);
        if *s == Status::Created && !created.contains(k.as_str()) {
            *s = Status::Changed;
        }
        if *s == Status::Deleted && !deleted.contains(k.as_str()) {
            *s = Status::Changed;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_file_is_singular() {
        assert_eq!(super::files(1), "1 file");
        assert_eq!(super::files(0), "0 files");
        assert_eq!(super::files(18), "18 files");
    }
}
