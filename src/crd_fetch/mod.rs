//! The CRDs `validate` checks against, for exactly the releases `kaas.yaml` pins: the release
//! assets of `model::releases::crds`, read from the user's cache, else downloaded from upstream (or
//! a mirror laid out like `https://github.com`) and cached; verified against the sha256 that
//! `pin` recorded in `kaas.lock`. Every problem of a run is returned together.

mod cache;
mod download;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use sha2::{Digest, Sha256};

pub use cache::default_cache_dir;

use crate::model::releases::crds::{CrdAsset, UPSTREAM};
use crate::repo::lock::LockedCrdAsset;

/// The environment variable that names a mirror.
pub const MIRROR_ENV: &str = "KAAS_CRD_MIRROR";

/// Where assets come from and go to.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The cache folder (`<user cache>/kaas-gitops/crds`).
    pub cache: PathBuf,
    /// A base URL that replaces `https://github.com`.
    pub mirror: Option<String>,
    /// Per download.
    pub timeout: Duration,
}

impl Settings {
    /// The base URL downloads go to.
    pub fn base(&self) -> &str {
        self.mirror.as_deref().unwrap_or(UPSTREAM)
    }
}

/// What to do with a cached asset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Use the cache when it holds the asset; refuse bytes that differ from `kaas.lock`.
    Verify,
    /// Download again and accept new bytes (`pin --update`).
    Refresh,
}

/// One asset's text, verified.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The asset.
    pub asset: CrdAsset,
    /// Its upstream address (the key in `kaas.lock`).
    pub url: String,
    /// `sha256:<hex>` of its bytes.
    pub sha256: String,
    /// The bytes, as text.
    pub text: String,
    /// Read from the cache (no network).
    pub cached: bool,
}

impl Fetched {
    /// The entry `pin` writes to `kaas.lock`.
    pub fn locked(&self) -> LockedCrdAsset {
        LockedCrdAsset {
            url: self.url.clone(),
            component: self.asset.component.clone(),
            version: self.asset.version.clone(),
            sha256: self.sha256.clone(),
        }
    }
}

/// Why an asset could not be used.
#[derive(Debug)]
pub enum Problem {
    /// Not cached, and the download failed.
    Unreachable {
        /// The asset.
        asset: CrdAsset,
        /// Where it was asked for.
        url: String,
        /// Why it failed.
        cause: String,
        /// Where a copy placed by hand is picked up.
        cache_path: PathBuf,
    },
    /// Its bytes differ from the sha256 in `kaas.lock`.
    Changed {
        /// The asset.
        asset: CrdAsset,
        /// Where the bytes came from: the cache file or the URL.
        from: String,
        /// The sha256 `kaas.lock` holds.
        locked: String,
        /// The sha256 of the bytes found.
        found: String,
    },
    /// Not UTF-8, so no YAML.
    NotText {
        /// The asset.
        asset: CrdAsset,
        /// Where the bytes came from.
        from: String,
    },
}

impl Problem {
    /// The asset it concerns.
    pub fn asset(&self) -> &CrdAsset {
        match self {
            Problem::Unreachable { asset, .. } | Problem::Changed { asset, .. } | Problem::NotText { asset, .. } => {
                asset
            }
        }
    }

    /// What would fix it.
    pub fn hint(&self) -> String {
        match self {
            Problem::Unreachable { cache_path, .. } => format!(
                "connect to the network, or set `{MIRROR_ENV}` (or `--crd-mirror`) to a mirror that serves the same paths as https://github.com, or save the file as `{}`, or pass `--crds DIR`",
                cache_path.display()
            ),
            Problem::Changed { .. } => "the release asset is not the one `pin` recorded: if the new bytes are trusted, run `kaas-gitops pin --update`; else delete the cached copy and check the mirror".into(),
            Problem::NotText { .. } => "the download is no YAML: check the URL and the mirror".into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Unreachable { asset, url, cause, .. } => write!(
                f,
                "cannot get the CRDs of {} {}: {url}: {cause}",
                asset.component, asset.version
            ),
            Problem::Changed {
                asset,
                from,
                locked,
                found,
            } => write!(
                f,
                "the CRDs of {} {} changed: `{from}` has {found}, `kaas.lock` records {locked}",
                asset.component, asset.version
            ),
            Problem::NotText { asset, from } => {
                write!(
                    f,
                    "the CRDs of {} {} from `{from}` are not UTF-8 text",
                    asset.component, asset.version
                )
            }
        }
    }
}

/// Every asset verified, or every problem.
pub fn fetch_all(
    settings: &Settings,
    assets: &[CrdAsset],
    lock: &BTreeMap<String, LockedCrdAsset>,
    mode: Mode,
) -> Result<Vec<Fetched>, Vec<Problem>> {
    let mut fetched = Vec::new();
    let mut problems = Vec::new();
    let mut missing = Vec::new();
    for asset in assets {
        let path = cache::path(&settings.cache, asset);
        match (mode, cache::read(&path)) {
            (Mode::Verify, Some(bytes)) => match verify(asset, &path.display().to_string(), bytes, lock, true) {
                Ok(f) => fetched.push(f),
                Err(p) => problems.push(*p),
            },
            _ => missing.push((asset, path)),
        }
    }
    let urls: Vec<String> = missing.iter().map(|(a, _)| a.url(settings.base())).collect();
    let downloads = download::all(&urls, settings.timeout);
    for (((asset, path), url), result) in missing.into_iter().zip(urls).zip(downloads) {
        let bytes = match result {
            Ok(b) => b,
            Err(cause) => {
                problems.push(Problem::Unreachable {
                    asset: asset.clone(),
                    url,
                    cause,
                    cache_path: path,
                });
                continue;
            }
        };
        let checked = match mode {
            Mode::Verify => verify(asset, &url, bytes, lock, false),
            Mode::Refresh => verify(asset, &url, bytes, &BTreeMap::new(), false),
        };
        match checked {
            Ok(f) => {
                // A cache that cannot be written only costs the next run a download.
                let _ = cache::write(&path, f.text.as_bytes());
                fetched.push(f);
            }
            Err(p) => problems.push(*p),
        }
    }
    if problems.is_empty() {
        fetched.sort_by(|a, b| a.asset.cmp(&b.asset));
        Ok(fetched)
    } else {
        Err(problems)
    }
}

fn verify(
    asset: &CrdAsset,
    from: &str,
    bytes: Vec<u8>,
    lock: &BTreeMap<String, LockedCrdAsset>,
    cached: bool,
) -> Result<Fetched, Box<Problem>> {
    let url = asset.url(UPSTREAM);
    let sha256 = format!("sha256:{}", hex::encode(Sha256::digest(&bytes)));
    if let Some(locked) = lock.get(&url)
        && locked.sha256 != sha256
    {
        return Err(Box::new(Problem::Changed {
            asset: asset.clone(),
            from: from.to_string(),
            locked: locked.sha256.clone(),
            found: sha256,
        }));
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        Box::new(Problem::NotText {
            asset: asset.clone(),
            from: from.to_string(),
        })
    })?;
    Ok(Fetched {
        asset: asset.clone(),
        url,
        sha256,
        text,
        cached,
    })
}
