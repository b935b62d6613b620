//! Image references from `kaas.lock`: `repository:tag@sha256:...`. Rendering never touches the
//! network; an image without a pin is rendered by tag alone with a warning, or refused under
//! `--locked`. A digest is never invented.

use std::collections::BTreeMap;

use crate::diagnostics::Diagnostic;
use crate::model::pins::ImagePins;
use crate::model::{ImageSpec, Platform};
use crate::spec::source::Source;

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

/// Resolves every image against the lock. Under `locked`, each image without a pin is an error
/// at its field in `kaas.yaml`; otherwise one loud warning lists them all. An image whose tag a
/// policy picks and that has no pinned tag is always an error.
pub fn resolve(platform: &Platform, source: &Source, lock: &ImagePins, locked: bool) -> (Images, Vec<Diagnostic>) {
    let mut out = BTreeMap::new();
    let mut diags = Vec::new();
    let mut unpinned = Vec::new();
    for spec in platform.images() {
        let tag = match &spec.tag {
            Some(t) => t.clone(),
            None => {
                let tags = lock.tags_of(&spec.repository);
                if tags.len() == 1 {
                    tags[0].to_string()
                } else {
                    diags.push(
                        source
                            .error(
                                &format!("{}.tagPolicy", spec.field),
                                format!("`{}` has a tag policy but no pinned tag in kaas.lock", spec.repository),
                            )
                            .with_hint("run `kaas-gitops pin --update` to pick and pin the newest tag"),
                    );
                    continue;
                }
            }
        };
        let digest = lock.digest(&spec.repository, &tag).map(str::to_string);
        if digest.is_none() {
            let reference = format!("{}:{tag}", spec.repository);
            if locked {
                diags.push(
                    source
                        .error(
                            &format!("{}.tag", spec.field),
                            format!("`{reference}` has no digest in kaas.lock (--locked)"),
                        )
                        .with_hint("run `kaas-gitops pin` and commit kaas.lock"),
                );
            }
            // Two fields may name one image (the backup image is the chart's etcd job image).
            if !unpinned.contains(&reference) {
                unpinned.push(reference);
            }
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
    if !locked && !unpinned.is_empty() {
        diags.push(
            Diagnostic::warning(format!(
                "{} image(s) have no digest in kaas.lock and are rendered by tag alone, which is not reproducible: {}",
                unpinned.len(),
                unpinned.join(", ")
            ))
            .in_file(source.path.clone())
            .with_hint(
                "run `kaas-gitops pin` to resolve and record their digests; `render --locked` refuses unpinned images",
            ),
        );
    }
    (Images(out), diags)
}
