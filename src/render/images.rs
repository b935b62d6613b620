//! Image references from `kaas.lock`: `repository:tag@sha256:...`. Rendering never touches the
//! network; an image without a pin is rendered by tag alone with a warning, or refused under
//! `--locked`. A digest is never invented.

use std::collections::BTreeMap;

use crate::diagnostics::Diagnostic;
use crate::lock::Lock;
use crate::model::{ImageSpec, Platform};

/// An image as rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    /// `docker.io/clastix/kamaji`.
    pub repository: String,
    /// `26.8.2-edge`.
    pub tag: String,
    /// `sha256:...`, when pinned.
    pub digest: Option<String>,
}

impl ImageRef {
    /// The value for chart fields that take a tag only: `tag@sha256:...` (charts build
    /// `repository:tag`).
    pub fn chart_tag(&self) -> String {
        match &self.digest {
            Some(d) => format!("{}@{d}", self.tag),
            None => self.tag.clone(),
        }
    }

    /// The full reference: `repository:tag@sha256:...`.
    pub fn full(&self) -> String {
        format!("{}:{}", self.repository, self.chart_tag())
    }
}

/// Every platform image resolved against the lock, keyed by the platform field naming it.
#[derive(Debug, Clone, Default)]
pub struct Images(BTreeMap<String, ImageRef>);

impl Images {
    /// The rendered reference of `spec`.
    pub fn get(&self, spec: &ImageSpec) -> &ImageRef {
        self.0
            .get(&spec.field)
            .expect("every platform image is resolved before rendering")
    }
}

/// Resolves every image. Returns the images and the diagnostics: warnings for missing pins, or
/// errors when `locked`. An image whose tag a policy picks and that has no pin is an error.
pub fn resolve(platform: &Platform, lock: &Lock, locked: bool) -> (Images, Vec<Diagnostic>) {
    let mut out = BTreeMap::new();
    let mut diags = Vec::new();
    for spec in platform.images() {
        let tag = match &spec.tag {
            Some(t) => t.clone(),
            None => {
                let tags = lock.tags_of(&spec.repository);
                if tags.len() == 1 {
                    tags[0].to_string()
                } else {
                    diags.push(
                        Diagnostic::error(format!(
                            "`{}` has a tag policy but no pinned tag in kaas.lock",
                            spec.repository
                        ))
                        .in_file("kaas.yaml")
                        .field(format!("{}.tagPolicy", spec.field))
                        .with_hint("run `kaas-gitops pin --update` to pick and pin the newest tag"),
                    );
                    continue;
                }
            }
        };
        let digest = lock.digest(&spec.repository, &tag).map(str::to_string);
        if digest.is_none() {
            let message = format!("`{}:{tag}` has no digest in kaas.lock", spec.repository);
            let d = if locked {
                Diagnostic::error(message)
            } else {
                Diagnostic::warning(format!("{message}; rendering the tag alone, which is not reproducible"))
            };
            diags.push(
                d.in_file("kaas.yaml")
                    .field(spec.field.clone())
                    .with_hint("run `kaas-gitops pin` to resolve and record its digest"),
            );
        }
        out.insert(
            spec.field.clone(),
            ImageRef {
                repository: spec.repository.clone(),
                tag,
                digest,
            },
        );
    }
    (Images(out), diags)
}
