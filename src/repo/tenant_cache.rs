//! Parsed tenant files, kept between runs by the sha256 of their bytes (issue 8). Parsing every
//! tenant file dominates a render that changes one tenant of a large fleet; a file whose exact
//! bytes were loaded before by this binary is taken from here instead: its typed value, with
//! the span index rebuilt only if a diagnostic needs it. Content-addressed, so a stale entry
//! can only be unused, never wrong. Lives next to the stat cache in the git folder.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

use crate::repo::inputs::Inputs;
use crate::repo::stat_cache;
use crate::spec::load::Loaded;
use crate::spec::load::ParseCache;
use crate::spec::raw::TenantFile;
use crate::spec::source::Source;

const CACHE_FILE: &str = "tenants.json";
const MAX_CACHE_BYTES: u64 = 256 * 1024 * 1024;

/// The cache as loaded: empty when there is none, it is unreadable or from another binary.
/// Values stay raw JSON until a tenant file needs them: a run reads one value per tenant file,
/// in parallel, and writes unchanged ones back without serializing them again.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct TenantCache {
    key: String,
    tenants: HashMap<String, Box<RawValue>>,
}

/// This run's tenant files' digests by path: computed once by `seed`, used again by `save`.
pub type Digests = HashMap<String, String>;

fn digest(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

impl TenantCache {
    /// Reads the cache of `repo`, if it has a usable one.
    pub fn load(repo: &Path) -> TenantCache {
        let key = stat_cache::binary_key();
        let read = || -> Option<TenantCache> {
            let bytes = stat_cache::read_cache(repo, CACHE_FILE, MAX_CACHE_BYTES)?;
            let cache: TenantCache = serde_json::from_slice(&bytes).ok()?;
            (cache.key == key).then_some(cache)
        };
        read().unwrap_or(TenantCache {
            key,
            ..TenantCache::default()
        })
    }

    /// Puts every tenant file of `inputs` found here into `parsed`; returns how many, and the
    /// digests of all of them (for `save`).
    pub fn seed(&self, inputs: &Inputs, parsed: &mut ParseCache) -> (usize, Digests) {
        let digests: Digests = inputs
            .tenants
            .par_iter()
            .map(|(path, _, bytes)| (path.clone(), digest(bytes)))
            .collect();
        if self.tenants.is_empty() {
            return (0, digests);
        }
        let hits: Vec<(String, Vec<u8>, Loaded<TenantFile>)> = inputs
            .tenants
            .par_iter()
            .filter_map(|(path, _, bytes)| {
                let raw = self.tenants.get(digests.get(path)?)?;
                let value: TenantFile = serde_json::from_str(raw.get()).ok()?;
                let text = std::str::from_utf8(bytes).ok()?.to_string();
                let source = Source::unindexed(path, text);
                Some((path.clone(), bytes.clone(), Loaded { value, source }))
            })
            .collect();
        let n = hits.len();
        for (path, bytes, loaded) in hits {
            parsed.insert(path, bytes, Arc::new(loaded));
        }
        (n, digests)
    }

    /// Records the tenant files of `inputs` (with the `digests` `seed` made) that `parsed`
    /// holds, when that differs from what was loaded. Best effort, like the stat cache: a cache
    /// that cannot be written is absent.
    pub fn save(mut self, repo: &Path, inputs: &Inputs, digests: &Digests, parsed: &ParseCache) {
        let Some(dir) = stat_cache::cache_dir(repo) else { return };
        let parsed_digests: HashSet<&String> = inputs
            .tenants
            .iter()
            .filter(|(path, _, _)| parsed.get(path).is_some())
            .filter_map(|(path, _, _)| digests.get(path))
            .collect();
        if parsed_digests.len() == self.tenants.len() && parsed_digests.iter().all(|d| self.tenants.contains_key(*d)) {
            return;
        }
        let current: HashMap<String, Box<RawValue>> = inputs
            .tenants
            .par_iter()
            .filter_map(|(path, _, _)| {
                let sha = digests.get(path)?;
                let raw = match self.tenants.get(sha) {
                    Some(raw) => raw.clone(),
                    None => serde_json::value::to_raw_value(&parsed.get(path)?.value).ok()?,
                };
                Some((sha.clone(), raw))
            })
            .collect();
        self.tenants = current;
        let tmp = dir.join(format!("{CACHE_FILE}.{}.tmp", std::process::id()));
        let write = || -> std::io::Result<()> {
            stat_cache::prepare_dir(&dir)?;
            let bytes = serde_json::to_vec(&self).map_err(std::io::Error::other)?;
            std::io::Write::write_all(&mut stat_cache::create_temp(&tmp)?, &bytes)?;
            std::fs::rename(&tmp, dir.join(CACHE_FILE))
        };
        if write().is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::load;

    /// Every tenant file the project ships, as (path, bytes).
    fn shipped_tenants() -> Vec<(String, Vec<u8>)> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut dirs = vec![root.join("tenants")];
        for group in ["tests/fixtures/providers", "tests/fixtures/topology"] {
            let Ok(entries) = std::fs::read_dir(root.join(group)) else {
                continue;
            };
            for e in entries.flatten() {
                dirs.push(e.path().join("tenants"));
            }
            dirs.push(root.join(group).join("tenants"));
        }
        let mut out = Vec::new();
        for dir in dirs {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for e in entries.flatten() {
                let p = e.path();
                if p.extension().is_some_and(|x| x == "yaml") {
                    out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
                }
            }
        }
        out
    }

    #[test]
    fn a_cached_value_is_the_parsed_value() {
        let files = shipped_tenants();
        assert!(files.len() >= 10, "found only {} tenant files", files.len());
        for (path, bytes) in files {
            let parsed = load::parse::<TenantFile>(&path, &bytes).unwrap_or_else(|e| panic!("{path}: {e:?}"));
            let raw = serde_json::value::to_raw_value(&parsed.value).unwrap();
            let back: TenantFile = serde_json::from_str(raw.get()).unwrap();
            assert_eq!(format!("{:?}", parsed.value), format!("{back:?}"), "{path}");
        }
    }
}
