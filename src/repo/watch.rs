//! Which inputs a batch of file-system events touched: the pure decision behind `watch`.
//! The notify loop around it (notify's debouncer) only batches events and calls the render
//! pipeline.

use std::collections::BTreeSet;
use std::path::{Component, Path};

/// What a batch of changed paths asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Change {
    /// `kaas.yaml`, `kaas.lock` or `base/` changed: the platform layer and every tenant.
    pub platform: bool,
    /// Tenant files created, changed or deleted (by tenant name).
    pub tenants: BTreeSet<String>,
    /// `kaas.lock` changed (also by our own render, which records VIPs there).
    pub lock: bool,
}

impl Change {
    /// Nothing that is an input changed.
    pub fn is_empty(&self) -> bool {
        !self.platform && !self.lock && self.tenants.is_empty()
    }
}

/// Editors' temp and swap files: vim `.swp`/`.swx`/`4913`/`~`, emacs `#x#`/`.#x`, and the
/// hidden temp files atomic savers write before renaming onto the real name.
fn is_editor_noise(name: &str) -> bool {
    name.starts_with('.')
        || name.ends_with('~')
        || name == "4913"
        || (name.starts_with('#') && name.ends_with('#'))
        || [".swp", ".swx", ".swo", ".tmp", ".bak", ".orig", ".part"]
            .iter()
            .any(|s| name.ends_with(s))
}

/// Classifies paths relative to the repository. Our own output (`overlays/`, `flux/`), `.git`,
/// `target/` and editor noise are ignored, so the watcher's own writes and commits never
/// trigger another render.
pub fn classify<P: AsRef<Path>>(repo: &Path, paths: &[P]) -> Change {
    let mut change = Change::default();
    for path in paths {
        let path = path.as_ref();
        let rel = path.strip_prefix(repo).unwrap_or(path);
        let parts: Vec<String> = rel
            .components()
            .filter_map(|c| match c {
                Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect();
        let Some(name) = parts.last() else { continue };
        if is_editor_noise(name) {
            continue;
        }
        match parts.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
            ["kaas.yaml"] => change.platform = true,
            ["kaas.lock"] => change.lock = true,
            ["base", ..] => change.platform = true,
            ["tenants", file] => {
                if let Some(stem) = file.strip_suffix(".yaml") {
                    change.tenants.insert(stem.to_string());
                } else if file.ends_with(".yml") {
                    // Reported as an error by the render; render so the user sees it.
                    change.tenants.insert((*file).to_string());
                }
            }
            // The `tenants` folder itself (created, removed or renamed).
            ["tenants"] => change.platform = true,
            _ => {}
        }
    }
    change
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(paths: &[&str]) -> Change {
        classify(
            Path::new("/repo"),
            &paths.iter().map(|p| format!("/repo/{p}")).collect::<Vec<_>>(),
        )
    }

    #[test]
    fn tenant_files_map_to_their_tenant() {
        let change = c(&["tenants/acme.yaml", "tenants/globex.yaml"]);
        assert!(!change.platform);
        assert_eq!(
            change.tenants,
            ["acme", "globex"].iter().map(|s| s.to_string()).collect()
        );
    }

    #[test]
    fn platform_inputs_touch_everything() {
        assert!(c(&["kaas.yaml"]).platform);
        assert!(c(&["kaas.lock"]).lock);
        assert!(c(&["base/tenant/quota.yaml"]).platform);
        assert!(c(&["base/platform/kustomization.yaml"]).platform);
    }

    #[test]
    fn own_output_git_and_editor_noise_are_ignored() {
        assert!(
            c(&[
                "overlays/tenants/acme/cluster-acme.yaml",
                "flux/kustomization.yaml",
                ".git/index",
                ".git/refs/heads/main",
                "target/debug/x",
                "tenants/.acme.yaml.swp",
                "tenants/acme.yaml~",
                "tenants/4913",
                "tenants/#acme.yaml#",
                "tenants/.#acme.yaml",
                "tenants/.acme.yaml.kaas-tmp-1",
                "tenants/README.md",
                "overlays/tenants/acme/.cluster-acme.yaml.kaas-tmp-42",
            ])
            .is_empty()
        );
    }

    #[test]
    fn an_atomic_save_counts_once_by_its_final_name() {
        // vim with `backupcopy=no`: write `4913`, remove it, write `.acme.yaml.swp`, rename.
        let change = c(&[
            "tenants/4913",
            "tenants/.acme.yaml.swp",
            "tenants/acme.yaml",
            "tenants/acme.yaml~",
        ]);
        assert_eq!(change.tenants.len(), 1);
        assert!(change.tenants.contains("acme"));
    }
}
