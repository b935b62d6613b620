//! `pin`: every image the platform renders, resolved to the digest of its manifest and recorded
//! in `kaas.lock`, so the platform runs exactly the bytes that were reviewed.
//!
//! [`plan`] decides, against any [`Registry`], what the lock's image pins become; it writes
//! nothing, so a failure at any point leaves `kaas.lock` as it was. Pins are sticky: plain `pin`
//! resolves only images without a pin; `pin --update` applies tag policies and re-resolves
//! every selected tag, so a moved tag shows up as a change to review.

pub mod auth;
pub(crate) mod http;
pub(crate) mod policy;
pub(crate) mod reference;
pub(crate) mod registry;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::{ImageSpec, Platform};
use crate::repo::lock::Lock;
use reference::ImageRef;
use registry::{Registry, RegistryError};

/// What `pin` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// Apply tag policies and re-resolve pinned tags.
    pub update: bool,
    /// Only these images (`repository` or `repository:tag`); empty means all.
    pub images: Vec<String>,
}

/// How one pin changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// It had no pin.
    New,
    /// Its tag or digest moved.
    Moved,
    /// As before.
    Unchanged,
}

/// One pin after the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    /// The repository as written in `kaas.yaml`.
    pub image: String,
    /// The tag.
    pub tag: String,
    /// The digest.
    pub digest: String,
    /// The platform fields that render it.
    pub fields: Vec<String>,
    /// How it changed.
    pub change: Change,
    /// The pin it replaced, when it moved.
    pub previous: Option<Previous>,
    /// Whether the tag is multi-arch, when it was resolved in this run.
    pub index: Option<bool>,
}

/// A pin that was replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Previous {
    /// Its tag.
    pub tag: String,
    /// Its digest.
    pub digest: String,
}

/// The result of [`plan`].
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The lock with the new pins (VIPs untouched).
    pub lock: Lock,
    /// The selected images' pins, sorted by image and tag.
    pub entries: Vec<Entry>,
}

/// Why `pin` stopped.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    /// A registry operation failed.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// An `IMAGE` argument names no platform image.
    #[error("`{given}` is not an image of this platform")]
    UnknownImage {
        /// The argument.
        given: String,
        /// The platform's images.
        known: Vec<String>,
    },
    /// A repository `pin` cannot parse (validation lets through a bare registry name).
    #[error("`{image}` in `{field}` is not an image repository")]
    BadRepository {
        /// The repository.
        image: String,
        /// The field.
        field: String,
    },
    /// A tag policy matched none of the registry's tags.
    #[error("no tag of `{image}` matches the `edge` tag policy ({tags} tag(s) listed, {excluded} excluded)")]
    NoMatchingTag {
        /// The repository.
        image: String,
        /// The field with the policy.
        field: String,
        /// How many tags the registry listed.
        tags: usize,
        /// How many of them `exclude` removed.
        excluded: usize,
    },
}

impl PinError {
    /// Whether the user must fix the input (exit 1) rather than the environment (exit 2).
    pub fn is_user_error(&self) -> bool {
        match self {
            PinError::Registry(e) => e.is_user_error(),
            _ => true,
        }
    }

    /// What to do about it.
    pub fn hint(&self) -> String {
        match self {
            PinError::Registry(e) => e.hint(),
            PinError::UnknownImage { known, .. } => format!(
                "name a repository (or `repository:tag`) from `kaas.yaml`: {}",
                known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
            ),
            PinError::BadRepository { field, .. } => {
                format!("write `{field}.repository` as `registry/path/name`, e.g. `docker.io/clastix/kamaji`")
            }
            PinError::NoMatchingTag { field, .. } => format!(
                "the policy picks `YY.M.N-edge` or `edge-YY.M.N` tags; shorten `{field}.tagPolicy.exclude`, or set `{field}.tag`"
            ),
        }
    }
}

/// Computes the lock's new image pins. Asks `registry` only for what the request needs;
/// writes nothing.
pub fn plan(
    platform: &Platform,
    lock: &Lock,
    request: &Request,
    registry: &mut dyn Registry,
) -> Result<Outcome, PinError> {
    let specs = platform.images();
    let refs = specs
        .iter()
        .map(|s| {
            ImageRef::parse(&s.repository).map_err(|_| PinError::BadRepository {
                image: s.repository.clone(),
                field: s.field.clone(),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let selected = select(&specs, &refs, lock, &request.images)?;

    let mut pins: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut entries: BTreeMap<(String, String), Entry> = BTreeMap::new();
    let mut resolved: BTreeMap<(String, String), registry::Resolved> = BTreeMap::new();
    for ((spec, image), chosen) in specs.iter().zip(&refs).zip(&selected) {
        let current = current_pin(spec, lock);
        if !chosen {
            // Not selected: keep its pin as it is (a missing pin stays missing).
            if let Some((tag, digest)) = current {
                pins.insert((spec.repository.clone(), tag), digest);
            }
            continue;
        }
        let tag = match (&spec.tag, &spec.policy, &current) {
            (Some(tag), _, _) => tag.clone(),
            (None, Some(_), Some((tag, _))) if !request.update => tag.clone(),
            (None, Some(policy), _) => {
                let tags = registry.tags(image).map_err(|e| e.in_field(&spec.field))?;
                let excluded = tags.iter().filter(|t| policy.exclude.contains(t)).count();
                policy::pick(policy, &tags)
                    .ok_or_else(|| PinError::NoMatchingTag {
                        image: spec.repository.clone(),
                        field: spec.field.clone(),
                        tags: tags.len(),
                        excluded,
                    })?
                    .to_string()
            }
            (None, None, _) => unreachable!("validation gives every image without a policy a tag"),
        };
        let key = (spec.repository.clone(), tag.clone());
        let known = lock.images.digest(&key.0, &key.1).map(str::to_string);
        let (digest, index) = match known {
            Some(d) if !request.update => (d, None),
            _ => {
                if !resolved.contains_key(&key) {
                    let r = registry.resolve(image, &tag).map_err(|e| e.in_field(&spec.field))?;
                    resolved.insert(key.clone(), r);
                }
                let r = &resolved[&key];
                (r.digest.as_str().to_string(), Some(r.index))
            }
        };
        let (change, previous) = match current {
            None => (Change::New, None),
            Some(prev) if prev == (tag.clone(), digest.clone()) => (Change::Unchanged, None),
            Some((tag, digest)) => (Change::Moved, Some(Previous { tag, digest })),
        };
        pins.insert(key.clone(), digest.clone());
        entries
            .entry(key)
            .and_modify(|e| e.fields.push(spec.field.clone()))
            .or_insert(Entry {
                image: spec.repository.clone(),
                tag,
                digest,
                fields: vec![spec.field.clone()],
                change,
                previous,
                index,
            });
    }
    let mut new_lock = lock.clone();
    new_lock.images = pins.into();
    Ok(Outcome {
        lock: new_lock,
        entries: entries.into_values().collect(),
    })
}

/// The pin an image has now: its tag's pin, or for a policy image the one tag pinned for its
/// repository (as `render` reads it).
fn current_pin(spec: &ImageSpec, lock: &Lock) -> Option<(String, String)> {
    let tag = match &spec.tag {
        Some(t) => t.clone(),
        None => match lock.images.tags_of(&spec.repository).as_slice() {
            [only] => (*only).to_string(),
            _ => return None,
        },
    };
    let digest = lock.images.digest(&spec.repository, &tag)?;
    Some((tag, digest.to_string()))
}

/// Which platform images the `IMAGE` arguments select: all when there are none. An argument is
/// a repository in any spelling (`clastix/kamaji` is `docker.io/clastix/kamaji`), optionally
/// with `:tag`; each must select something.
fn select(specs: &[&ImageSpec], refs: &[ImageRef], lock: &Lock, args: &[String]) -> Result<Vec<bool>, PinError> {
    if args.is_empty() {
        return Ok(vec![true; specs.len()]);
    }
    let mut chosen = vec![false; specs.len()];
    for arg in args {
        let (name, tag) = match arg.rsplit_once(':') {
            Some((n, t)) if !t.contains('/') => (n, Some(t)),
            _ => (arg.as_str(), None),
        };
        let wanted = ImageRef::parse(name).ok().map(|r| r.canonical());
        let mut matched = false;
        for (i, (spec, image)) in specs.iter().zip(refs).enumerate() {
            let tag_matches = match tag {
                None => true,
                Some(t) => {
                    current_pin(spec, lock)
                        .map(|p| p.0)
                        .or_else(|| spec.tag.clone())
                        .as_deref()
                        == Some(t)
                }
            };
            if wanted.as_deref() == Some(image.canonical().as_str()) && tag_matches {
                chosen[i] = true;
                matched = true;
            }
        }
        if !matched {
            let mut known: Vec<String> = specs.iter().map(|s| s.repository.clone()).collect();
            known.sort();
            known.dedup();
            return Err(PinError::UnknownImage {
                given: arg.clone(),
                known,
            });
        }
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests;
