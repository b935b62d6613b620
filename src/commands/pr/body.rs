//! The text of a tenant's pull request: its title (also the commit's subject), the commit
//! message, and a markdown body listing each object created, changed or deleted (kind/name),
//! with the rendered diff folded per object. Pure: built from the changes alone.

use serde::Deserialize;

use crate::commands::summary::Status;
use crate::git::Change;

/// GitHub refuses a body over 65,536 characters; diffs stop well before that.
const BODY_BUDGET: usize = 60_000;

/// One tenant's proposed change.
#[derive(Debug)]
pub struct Proposal<'a> {
    /// The tenant.
    pub tenant: &'a str,
    /// What happens to it.
    pub status: Status,
    /// The base, as people name it.
    pub base: &'a str,
    /// The branch.
    pub branch: &'a str,
    /// Every file the branch changes against the base, sorted by path.
    pub changes: &'a [Change],
}

/// What a file holds, as a PR reader names it.
struct Item<'a> {
    change: &'a Change,
    status: Status,
    /// `Kind/name`, or the path for a file that is not one object.
    label: String,
    /// Whether it belongs to the platform layer or shared files rather than the tenant.
    shared: bool,
}

#[derive(Deserialize)]
struct Head {
    kind: Option<String>,
    metadata: Option<Meta>,
}

#[derive(Deserialize)]
struct Meta {
    name: Option<String>,
}

impl Proposal<'_> {
    /// `Create tenant acme`, `Update tenant acme and the platform layer`, `Delete tenant acme`.
    pub fn title(&self) -> String {
        let verb = match self.status {
            Status::Created => "Create",
            Status::Deleted => "Delete",
            Status::Changed | Status::Unchanged => "Update",
        };
        let platform = if self.changes.iter().any(|c| crate::layout::in_platform(&c.path)) {
            " and the platform layer"
        } else {
            ""
        };
        format!("{verb} tenant {}{platform}", self.tenant)
    }

    /// The branch commit's message: the title, then one line per file.
    pub fn commit_message(&self) -> String {
        let mut m = format!("{}\n\n", self.title());
        for item in self.items() {
            m.push_str(&format!("- {} {}\n", item.status.as_str(), item.label));
        }
        m.push_str(&format!("\nWritten by `kaas-gitops pr {}`.\n", self.tenant));
        m
    }

    /// The markdown body.
    pub fn body(&self) -> String {
        let items = self.items();
        let spec = format!("tenants/{}.yaml", self.tenant);
        let what = match self.status {
            Status::Created => format!("is created from `{spec}`"),
            Status::Deleted => format!("is deleted: `{spec}` is removed, and Flux prunes its cluster"),
            Status::Changed | Status::Unchanged => format!("changes with `{spec}`"),
        };
        let mut out = format!(
            "Tenant **{}** {what}.\n\nBase `{}` · branch `{}` · Flux applies this when it is merged.\n",
            self.tenant, self.base, self.branch
        );
        let (shared, own): (Vec<&Item<'_>>, Vec<&Item<'_>>) = items.iter().partition(|i| i.shared);
        out.push_str(&format!("\n### Tenant `{}`\n\n", self.tenant));
        table(&mut out, &own);
        if !shared.is_empty() {
            out.push_str("\n### Platform layer and shared files\n\n");
            table(&mut out, &shared);
        }
        push_diffs(
            &mut out,
            own.iter().chain(shared.iter()).map(|i| diff_section(i)),
            self.branch,
        );
        out
    }

    fn items(&self) -> Vec<Item<'_>> {
        let dir = crate::layout::tenant_prefix(self.tenant);
        let spec = format!("tenants/{}.yaml", self.tenant);
        let mut items: Vec<Item<'_>> = self
            .changes
            .iter()
            .map(|c| Item {
                change: c,
                status: match (&c.old, &c.new) {
                    (None, _) => Status::Created,
                    (_, None) => Status::Deleted,
                    _ => Status::Changed,
                },
                label: label(c),
                // Its Flux entry, in whichever management cluster's folder it is.
                shared: !(c.path == spec
                    || crate::layout::tenant_of_flux_file(&c.path) == Some(self.tenant)
                    || c.path.starts_with(&dir)),
            })
            .collect();
        // The tenant's file first: it is what the reviewer is asked to approve.
        items.sort_by_key(|i| (i.change.path != spec, i.change.path.clone()));
        items
    }
}

/// `Kind/name` from the object's YAML, or the path.
pub fn label(c: &Change) -> String {
    if !crate::layout::is_rendered(&c.path) && !c.path.starts_with("tenants/") {
        return format!("`{}`", c.path);
    }
    let bytes = c
        .new
        .as_ref()
        .or(c.old.as_ref())
        .map(|b| String::from_utf8_lossy(b).into_owned());
    let head = bytes.and_then(|text| serde_saphyr::from_str::<Head>(&text).ok());
    match head {
        Some(Head {
            kind: Some(kind),
            metadata: Some(Meta { name: Some(name) }),
        }) => format!("`{kind}/{name}`"),
        _ => format!("`{}`", c.path),
    }
}

fn table(out: &mut String, items: &[&Item<'_>]) {
    out.push_str("| | object | file |\n|---|---|---|\n");
    for i in items {
        out.push_str(&format!(
            "| {} | {} | `{}` |\n",
            i.status.as_str(),
            i.label,
            i.change.path
        ));
    }
}

/// One folded diff.
fn diff_section(item: &Item<'_>) -> String {
    folded_diff(item.change, item.status, &item.label)
}

/// The `### Diff` part of a body: each section in order while the body stays within
/// [`BODY_BUDGET`] (a forge refuses longer ones), then how many were left out and where to see them.
pub fn push_diffs(out: &mut String, sections: impl Iterator<Item = String>, branch: &str) {
    out.push_str("\n### Diff\n");
    let mut left_out = 0;
    for section in sections {
        if out.len() + section.len() > BODY_BUDGET {
            left_out += 1;
            continue;
        }
        out.push_str(&section);
    }
    if left_out > 0 {
        out.push_str(&format!(
            "\n{left_out} more diff(s) left out: the body would be too long; see the branch `{branch}`.\n"
        ));
    }
}

/// The diff of one file, folded under `<status> <label>`.
pub fn folded_diff(c: &Change, status: Status, label: &str) -> String {
    let old = c.old.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
    let new = c.new.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
    let from = if c.old.is_some() {
        format!("a/{}", c.path)
    } else {
        "/dev/null".into()
    };
    let to = if c.new.is_some() {
        format!("b/{}", c.path)
    } else {
        "/dev/null".into()
    };
    let diff = similar::TextDiff::from_lines(old.as_ref(), new.as_ref())
        .unified_diff()
        .context_radius(3)
        .header(&from, &to)
        .to_string();
    // A fence longer than any backtick run inside, so no file content can close it.
    let longest = diff.split(|ch| ch != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!(
        "\n<details>\n<summary>{} <code>{}</code></summary>\n\n{fence}diff\n{diff}{fence}\n\n</details>\n",
        status.as_str(),
        label.trim_matches('`'),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(path: &str, old: Option<&str>, new: Option<&str>) -> Change {
        Change {
            path: path.into(),
            old: old.map(|s| s.as_bytes().to_vec()),
            new: new.map(|s| s.as_bytes().to_vec()),
        }
    }

    #[test]
    fn diffs_beyond_the_budget_are_left_out_counted_and_the_branch_named() {
        let mut out = String::from("head\n");
        let big = "x".repeat(BODY_BUDGET / 2);
        // The first two fit (with the head), the third would pass the budget, the small fourth fits.
        let sections = [big.clone(), "a".repeat(BODY_BUDGET / 3), big, "small\n".to_string()];
        push_diffs(&mut out, sections.into_iter(), "kaas/acme");
        assert!(out.len() <= BODY_BUDGET + 200, "{}", out.len());
        assert!(out.starts_with("head\n\n### Diff\n"));
        assert!(out.contains("small\n"), "a later section that fits is kept");
        assert!(
            out.ends_with("\n1 more diff(s) left out: the body would be too long; see the branch `kaas/acme`.\n"),
            "{}",
            &out[out.len() - 120..]
        );
        let mut all = String::new();
        push_diffs(&mut all, ["one\n".to_string()].into_iter(), "kaas/acme");
        assert_eq!(all, "\n### Diff\none\n", "nothing left out, nothing said");
    }

    #[test]
    fn names_objects_by_kind_and_name_and_folds_each_diff() {
        let changes = vec![
            change(
                "flux/kustomization.yaml",
                Some("resources: [a]\n"),
                Some("resources: [a, b]\n"),
            ),
            change(
                "overlays/tenants/acme/cluster-acme.yaml",
                None,
                Some("kind: Cluster\nmetadata:\n  name: acme\n"),
            ),
            change(
                "tenants/acme.yaml",
                None,
                Some("kind: Tenant\nmetadata: {name: acme}\n"),
            ),
        ];
        let p = Proposal {
            tenant: "acme",
            status: Status::Created,
            base: "main",
            branch: "kaas/acme",
            changes: &changes,
        };
        assert_eq!(p.title(), "Create tenant acme");
        let body = p.body();
        assert!(
            body.contains("| created | `Cluster/acme` | `overlays/tenants/acme/cluster-acme.yaml` |"),
            "{body}"
        );
        assert!(body.contains("### Platform layer and shared files"), "{body}");
        assert!(
            body.contains("<summary>created <code>Cluster/acme</code></summary>"),
            "{body}"
        );
        assert!(
            body.contains("```diff\n--- /dev/null\n+++ b/tenants/acme.yaml\n"),
            "{body}"
        );
        assert_eq!(body.matches("<details>").count(), 3);
        assert!(
            p.commit_message()
                .starts_with("Create tenant acme\n\n- created `Tenant/acme`\n")
        );
    }

    #[test]
    fn a_fence_in_the_content_cannot_close_the_block() {
        let changes = vec![change("tenants/acme.yaml", Some("a\n"), Some("```\n"))];
        let p = Proposal {
            tenant: "acme",
            status: Status::Changed,
            base: "main",
            branch: "kaas/acme",
            changes: &changes,
        };
        assert!(p.body().contains("````diff\n"));
    }
}
