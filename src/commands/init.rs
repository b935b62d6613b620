//! `init`: a new repository that renders as it is.

use std::path::Path;

use anyhow::Result;

use crate::cli::Printer;
use crate::commands::ExitStatus;

const FILES: [(&str, &str); 5] = [
    ("kaas.yaml", include_str!("templates/kaas.yaml")),
    ("tenants/example.yaml", include_str!("templates/example.yaml")),
    (
        "base/platform/kustomization.yaml",
        include_str!("templates/base-kustomization.yaml"),
    ),
    (
        "base/tenant/kustomization.yaml",
        include_str!("templates/base-kustomization.yaml"),
    ),
    (".gitignore", include_str!("templates/gitignore")),
];

/// Runs `init`.
pub fn run(printer: &Printer, dir: &Path) -> Result<ExitStatus> {
    let existing: Vec<&str> = FILES.iter().map(|(p, _)| *p).filter(|p| dir.join(p).exists()).collect();
    if !existing.is_empty() {
        printer.status(&format!(
            "error: `{}` already has {}; init never overwrites\n\nhint: run init in an empty folder, or edit the existing files",
            dir.display(),
            existing.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
        ));
        return Ok(ExitStatus::Failure);
    }
    for (path, content) in FILES {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            fs_err::create_dir_all(parent)?;
        }
        fs_err::write(&target, content)?;
        printer.status(&format!("created {path}"));
    }
    printer.status(&format!("\nnext: kaas-gitops --repo {} render", dir.display()));
    Ok(ExitStatus::Success)
}
