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
        printer.error(
            &format!(
                "`{}` already has {}; init never overwrites",
                dir.display(),
                existing.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
            ),
            Some("run init in an empty folder, or edit the existing files"),
        );
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
    let created: Vec<&str> = FILES.iter().map(|(p, _)| *p).collect();
    printer.envelope(
        true,
        serde_json::json!({"dir": dir.display().to_string(), "created": created}),
    );
    Ok(ExitStatus::Success)
}
