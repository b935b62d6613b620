//! Reads the files people write from disk: `kaas.yaml`, `tenants/*.yaml`, `kaas.lock` and
//! whether `base/` folders exist. The only place the render pipeline reads inputs.

use fs_err::os::unix::fs::OpenOptionsExt;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rayon::prelude::*;
use serde::Deserialize;

use crate::diagnostics::Diagnostic;
use crate::layout::{self, INPUT_HASH_PREFIX};
use crate::model::build::transitions::Deployed;
use crate::repo::lock::LOCK_PATH;
use crate::spec::load::MAX_FILE_BYTES;

/// The platform file's path.
pub const PLATFORM_PATH: &str = "kaas.yaml";

/// The raw inputs of one render.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// `kaas.yaml`.
    pub platform: Vec<u8>,
    /// `(tenants/<stem>.yaml, stem, bytes)`, sorted by path.
    pub tenants: Vec<(String, String, Vec<u8>)>,
    /// `kaas.lock`, if present.
    pub lock: Option<Vec<u8>>,
    /// `base/platform/kustomization.yaml` exists.
    pub base_platform: bool,
    /// `base/tenant/kustomization.yaml` exists.
    pub base_tenant: bool,
    /// Problems with the set of files (not their content).
    pub problems: Vec<Diagnostic>,
    /// The input hash recorded in each tenant overlay whose file list is intact.
    pub overlay_hashes: BTreeMap<String, String>,
    /// The tenants rendered before: the folders in `overlays/tenants/`. `--tenant` may name one
    /// whose file is gone, to render its deletion; read from disk only when tenants are named.
    pub rendered: BTreeSet<String>,
    /// What the last render left of each tenant, for the transitions refused in one step: read
    /// only for the tenants the pipeline asks about (see [`Previous`]).
    pub previous: Previous,
}

/// What the last render left in `overlays/tenants/`, read on demand: the folders and their file
/// names are known (listed once with the input hashes), a control plane's file is read only when
/// [`Previous::deployed`] asks for its tenant. A tenant whose input hash is unchanged renders
/// what it rendered before, so it makes no transition and its old output is never read (issue
/// 33: reading and parsing every tenant's control plane made a one-tenant edit cost the fleet).
#[derive(Debug, Clone, Default)]
pub struct Previous {
    /// Every folder of `overlays/tenants/`, with its file names.
    folders: BTreeMap<String, BTreeSet<String>>,
    /// Where the files are.
    origin: Origin,
    /// The driver of each DataStore the last render put into the platform layer, by name.
    datastore_drivers: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default)]
enum Origin {
    /// Nothing was rendered before.
    #[default]
    None,
    /// The working tree of this repository; Kubernetes versions from its HEAD when it has one.
    Disk(PathBuf),
    /// Files of a commit (`pr`), already read: every folder's state, computed up front.
    Known(BTreeMap<String, Deployed>),
}

impl Previous {
    /// The driver of each DataStore the last render put into the platform layer
    /// (`overlays/platform/datastore-<name>.yaml`), by name: Kamaji never changes it.
    pub fn datastore_drivers(&self) -> &BTreeMap<String, String> {
        &self.datastore_drivers
    }

    /// The state of each tenant in `changed` that has a folder, and of every folder whose tenant
    /// is not in `present` (a deleted tenant, judged from its file names). The only reader of
    /// previous output: every transition rule judges from what this returns.
    pub fn deployed(&self, changed: &BTreeSet<&str>, present: &BTreeSet<&str>) -> BTreeMap<String, Deployed> {
        let asked = |name: &str| changed.contains(name) || !present.contains(name);
        match &self.origin {
            Origin::None => BTreeMap::new(),
            Origin::Known(all) => all
                .iter()
                .filter(|(name, _)| asked(name))
                .map(|(name, d)| (name.clone(), d.clone()))
                .collect(),
            Origin::Disk(repo) => {
                let root = repo.join(layout::TENANTS_DIR);
                let wanted: Vec<(&String, &BTreeSet<String>)> =
                    self.folders.iter().filter(|(name, _)| asked(name)).collect();
                let mut out: BTreeMap<String, Deployed> = wanted
                    .par_iter()
                    .map(|(name, files)| {
                        let dir = root.join(name);
                        let d = deployed_of(name, files, |f| read_bounded(&dir.join(f)).ok());
                        ((*name).clone(), d)
                    })
                    .collect();
                committed_versions(repo, &mut out);
                out
            }
        }
    }
}

/// `spec.driver` of the rendered DataStores among `files` (platform-layer path, contents).
fn datastore_drivers<'a>(files: impl Iterator<Item = (&'a str, &'a [u8])>) -> BTreeMap<String, String> {
    files
        .filter(|(path, _)| layout::is_platform_datastore(path))
        .filter_map(|(_, bytes)| {
            Some((
                block_scalar(bytes, &["metadata", "name"])?,
                block_scalar(bytes, &["spec", "driver"])?,
            ))
        })
        .collect()
}

/// The rendered DataStores of the platform layer on disk (see [`datastore_drivers`]).
fn datastore_drivers_on_disk(repo: &Path) -> BTreeMap<String, String> {
    let dir = repo.join(layout::PLATFORM_DIR);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return BTreeMap::new();
    };
    let files: Vec<(String, Vec<u8>)> = entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .map(|n| (format!("{}/{n}", layout::PLATFORM_DIR), n))
        .filter(|(path, _)| layout::is_platform_datastore(path))
        .filter_map(|(path, n)| Some((path, read_bounded(&dir.join(&n)).ok()?)))
        .collect();
    datastore_drivers(files.iter().map(|(p, b)| (p.as_str(), b.as_slice())))
}

/// What `overlays/tenants/<name>/` holds, from its file names, its control plane's
/// `dataStoreName` and `version` (or, in topology mode, the `Cluster`'s `spec.topology.version`).
fn deployed_of(name: &str, files: &BTreeSet<String>, read: impl Fn(&str) -> Option<Vec<u8>>) -> Deployed {
    let etcd = files.contains(&format!("helmrelease-{name}-etcd.yaml"));
    let cluster_file = format!("cluster-{name}.yaml");
    let cluster = files.contains(&cluster_file);
    let kcp_file = format!("kamajicontrolplane-{name}.yaml");
    let kcp = if files.contains(&kcp_file) {
        read(&kcp_file)
    } else {
        None
    };
    let kcp_spec = kcp
        .as_ref()
        .and_then(|b| serde_saphyr::from_slice::<KamajiControlPlane>(b).ok()?.spec);
    let datastore = kcp_spec.as_ref().and_then(|s| s.data_store_name.clone());
    let endpoint = kcp_spec.as_ref().and_then(KamajiControlPlaneSpec::endpoint);
    let datastore_names = match &kcp_spec {
        Some(s) => Some((s.data_store_schema.clone(), s.data_store_username.clone())),
        None if cluster && kcp.is_none() => read(&cluster_file).and_then(|b| topology_datastore_names(&b)),
        None => None,
    };
    let version = match &kcp {
        Some(b) => block_scalar(b, &["spec", "version"]),
        None if cluster => read(&cluster_file).and_then(|b| block_scalar(&b, &["spec", "topology", "version"])),
        None => None,
    };
    let kube_proxy = kcp
        .as_ref()
        .map(|b| block_scalar(b, &["spec", "addons", "kubeProxy"]).is_some());
    let release_prefix = format!("helmrelease-{name}-");
    let addons = files
        .iter()
        .filter_map(|f| f.strip_prefix(&release_prefix)?.strip_suffix(".yaml"))
        .map(str::to_string)
        .collect();
    Deployed {
        cluster,
        etcd,
        datastore,
        datastore_names,
        version: version.as_deref().and_then(crate::model::KubeVersion::parse),
        kube_proxy,
        endpoint,
        addons,
    }
}

/// The scalar at `path` of a block-style YAML file this tool rendered (two-space indents, one
/// key per line), read line by line: parsing every overlay's control plane on each render would
/// cost more than reading all the other inputs.
fn block_scalar(bytes: &[u8], path: &[&str]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut depth = 0;
    for line in text.lines() {
        let rest = line.trim_start_matches(' ');
        let indent = line.len() - rest.len();
        if rest.is_empty() || rest.starts_with('#') || indent > depth * 2 {
            continue;
        }
        if indent < depth * 2 {
            return None;
        }
        let Some(value) = rest.strip_prefix(path[depth]).and_then(|r| r.strip_prefix(':')) else {
            continue;
        };
        if depth + 1 == path.len() {
            return Some(value.trim().trim_matches(['"', '\'']).to_string());
        }
        depth += 1;
    }
    None
}

/// The fields of a rendered `KamajiControlPlane` a datastore transition needs.
#[derive(Deserialize)]
struct KamajiControlPlane {
    spec: Option<KamajiControlPlaneSpec>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct KamajiControlPlaneSpec {
    data_store_name: Option<String>,
    data_store_schema: Option<String>,
    data_store_username: Option<String>,
    network: Option<KamajiControlPlaneNetwork>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct KamajiControlPlaneNetwork {
    service_address: Option<String>,
    gateway: Option<Hostname>,
    ingress: Option<Hostname>,
}

#[derive(Deserialize)]
struct Hostname {
    hostname: Option<String>,
}

impl KamajiControlPlaneSpec {
    /// The endpoint kubelets were given: the Gateway's or Ingress's hostname (with its port),
    /// else the VIP, else empty (the address the Service's load balancer chose).
    fn endpoint(&self) -> Option<String> {
        let n = self.network.as_ref();
        let routed = n.and_then(|n| n.gateway.as_ref().or(n.ingress.as_ref())?.hostname.clone());
        // Empty: the address the Service got from its load balancer.
        routed
            .or_else(|| n.and_then(|n| n.service_address.clone()))
            .or_else(|| Some(String::new()))
    }
}

/// A topology-mode `Cluster`'s datastore names, from its variables (`render::topology`), when
/// it renders a control plane (`spec.topology`).
fn topology_datastore_names(bytes: &[u8]) -> Option<(Option<String>, Option<String>)> {
    #[derive(Deserialize)]
    struct Cluster {
        spec: Option<Spec>,
    }
    #[derive(Deserialize)]
    struct Spec {
        topology: Option<Topology>,
    }
    #[derive(Deserialize)]
    struct Topology {
        #[serde(default)]
        variables: Vec<Variable>,
    }
    #[derive(Deserialize)]
    struct Variable {
        name: String,
        value: serde_json::Value,
    }
    let topology = serde_saphyr::from_slice::<Cluster>(bytes).ok()?.spec?.topology?;
    let get = |name: &str| {
        topology
            .variables
            .iter()
            .find(|v| v.name == name)
            .and_then(|v| v.value.as_str().map(str::to_string))
    };
    Some((
        get(crate::render::topology::VAR_DATASTORE_SCHEMA),
        get(crate::render::topology::VAR_DATASTORE_USERNAME),
    ))
}

/// In a git repository with commits, each tenant's deployed Kubernetes version (and its
/// kube-proxy and add-ons) is the one its overlay has in HEAD (none for an overlay never committed): a render nobody committed reached
/// no cluster, so rendering `v1.32 -> v1.33` and then `v1.33 -> v1.34` before a commit is still
/// a two-minor jump for Kamaji (issue 22). Elsewhere the overlays on disk stand.
fn committed_versions(repo: &Path, deployed: &mut BTreeMap<String, Deployed>) {
    if deployed.is_empty() {
        return;
    }
    let want = |name: &str, file: &str| {
        file.strip_suffix(".yaml").and_then(|f| {
            f.strip_prefix("kamajicontrolplane-")
                .or_else(|| f.strip_prefix("cluster-"))
        }) == Some(name)
    };
    let Some(committed) = crate::git::head::overlay_files(repo, |name| deployed.contains_key(name), want) else {
        return;
    };
    for (name, d) in deployed.iter_mut() {
        let before = committed.get(name).map(|files| {
            let names: BTreeSet<String> = files.keys().cloned().collect();
            deployed_of(name, &names, |f| files.get(f).cloned())
        });
        d.version = before.as_ref().and_then(|b| b.version);
        // The kube-proxy and CNI transition is judged against the commit too (a render nobody
        // committed reached no cluster).
        d.kube_proxy = before.as_ref().and_then(|b| b.kube_proxy);
        d.endpoint = before.as_ref().and_then(|b| b.endpoint.clone());
        d.addons = before.map(|b| b.addons).unwrap_or_default();
    }
}

/// What the last render left in `overlays/tenants/`: every folder's file names, and the
/// input hash of each folder of a tenant in `tenants` (see [`overlay_hash`]). Each folder is
/// listed once, for both; no other file is read here (see [`Previous`]).
struct Overlays {
    /// The folders, by name, with their file names.
    folders: BTreeMap<String, BTreeSet<String>>,
    /// The recorded input hashes, by tenant.
    hashes: BTreeMap<String, String>,
}

fn overlays_on_disk(repo: &Path, tenants: &BTreeSet<&str>) -> Overlays {
    let root = repo.join(layout::TENANTS_DIR);
    let names: Vec<String> = match std::fs::read_dir(&root) {
        Ok(entries) => entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().into_string().ok())
            .collect(),
        Err(_) => Vec::new(),
    };
    let folders: Vec<(String, BTreeSet<String>, Option<String>)> = names
        .par_iter()
        .map(|name| {
            let dir = root.join(name);
            let listing = list(&dir);
            let files: BTreeSet<String> = listing.iter().flatten().cloned().collect();
            let hash = if tenants.contains(name.as_str()) {
                listing.and_then(|present| overlay_hash(&dir, present))
            } else {
                None
            };
            (name.clone(), files, hash)
        })
        .collect();
    let mut out = Overlays {
        folders: BTreeMap::new(),
        hashes: BTreeMap::new(),
    };
    for (name, files, hash) in folders {
        if let Some(h) = hash {
            out.hashes.insert(name.clone(), h);
        }
        out.folders.insert(name, files);
    }
    // A tenant whose overlay is not a plain folder (a symlink to one) was not listed above; its
    // hash is read as it always was, following the link.
    let missed: Vec<&&str> = tenants.iter().filter(|t| !out.folders.contains_key(**t)).collect();
    let more: Vec<(String, String)> = missed
        .par_iter()
        .filter_map(|t| {
            let dir = root.join(t);
            Some((t.to_string(), overlay_hash(&dir, list(&dir)?)?))
        })
        .collect();
    out.hashes.extend(more);
    out
}

/// The names in `dir`, or `None` if it cannot be listed completely.
fn list(dir: &Path) -> Option<Vec<String>> {
    std::fs::read_dir(dir)
        .ok()?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<std::io::Result<_>>()
        .ok()
}

/// The input hash in the overlay `dir`'s `kustomization.yaml`, when the folder holds exactly
/// the files (`present`) that kustomization lists (a missing or extra file means: render it
/// again).
fn overlay_hash(dir: &Path, mut present: Vec<String>) -> Option<String> {
    // Bounded and regular files only: the overlay folder is the tool's, but a hostile commit could
    // plant anything there.
    let text = String::from_utf8(read_bounded(&dir.join("kustomization.yaml")).ok()?).ok()?;
    // The hash is a comment at the top, so it is read as a line, not as YAML.
    let hash = text
        .lines()
        .take(3)
        .find_map(|l| l.strip_prefix(INPUT_HASH_PREFIX))?
        .to_string();
    let mut listed: Vec<&str> = top_level_list(&text, "resources")?
        .into_iter()
        .filter(|r| !r.starts_with("../"))
        .collect();
    listed.push("kustomization.yaml");
    listed.sort_unstable();
    // The folder of objects applied inside the tenant cluster (`render::access`) is no resource
    // of the overlay: it is rendered from the same inputs, so the same hash covers it.
    present.retain(|p| p != crate::render::access::ACCESS_DIR);
    present.sort_unstable();
    (present == listed).then_some(hash)
}

/// The items of the top-level block sequence `key` of a `kustomization.yaml` this tool rendered
/// (`key:` on a line of its own, then one `- item` line each, at column 0), read line by line:
/// parsing 1,000 overlays' kustomizations as YAML was a quarter of a one-tenant render at 1,000
/// tenants (BENCHMARKS.md, issue 33). Anything else (a flow sequence, a nested or quoted-with-
/// escapes item, no such key) is `None`: the folder is rendered again, never wrongly skipped.
fn top_level_list<'t>(text: &'t str, key: &str) -> Option<Vec<&'t str>> {
    let mut lines = text.lines();
    lines.find(|l| l.strip_prefix(key) == Some(":"))?;
    let mut items = Vec::new();
    for line in lines {
        let Some(item) = line.strip_prefix("- ") else {
            // The sequence ends at the next top-level key; a comment or an indented line is a
            // shape this tool does not write.
            if line.starts_with(|c: char| c.is_ascii_alphabetic()) {
                break;
            }
            return None;
        };
        let item = item.trim_end();
        let plain = match item.as_bytes() {
            [b'\'', .., b'\''] | [b'"', .., b'"'] => &item[1..item.len() - 1],
            _ => item,
        };
        if plain.is_empty() || plain.contains(['"', '\'', '\\', '#', '[', '{', ':']) {
            return None;
        }
        items.push(plain);
    }
    Some(items)
}

/// Reads at most one byte more than the limit, so a huge file costs no memory. Only a regular
/// file is read: opening is non-blocking, so a FIFO cannot hang the run, and a device such as
/// `/dev/zero` is refused (issue 9).
pub fn read_bounded(path: &Path) -> Result<Vec<u8>> {
    let f = fs_err::OpenOptions::new()
        .read(true)
        .custom_flags(i32::try_from(rustix::fs::OFlags::NONBLOCK.bits()).expect("O_NONBLOCK fits an i32"))
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        anyhow::bail!("`{}` is not a regular file", path.display());
    }
    // Sized from the file's length, so a small file costs two `read` calls, not a dozen.
    let expected = usize::try_from(meta.len()).unwrap_or(usize::MAX).min(MAX_FILE_BYTES) + 1;
    let mut buf = Vec::with_capacity(expected);
    f.take(MAX_FILE_BYTES as u64 + 1)
        .read_to_end(&mut buf)
        .with_context(|| format!("failed to read `{}`", path.display()))?;
    Ok(buf)
}

/// Why a tenant file must not be read, if it must not: a symlink out of the repository (or to
/// nothing), or not a regular file (a FIFO would block, a device never ends). Issue 9.
pub fn refuse_file(repo_root: &Path, path: &Path, rel: &str) -> Result<Option<Diagnostic>> {
    let link = fs_err::symlink_metadata(path)?.file_type().is_symlink();
    let target = match std::fs::canonicalize(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Some(
                Diagnostic::error(format!("`{rel}` is a symlink to a file that does not exist"))
                    .in_file(rel)
                    .with_hint("remove the link or point it at a tenant file in the repository"),
            ));
        }
        Err(e) => return Err(e).with_context(|| format!("failed to follow `{}`", path.display())),
    };
    // Also catches a symlinked `tenants/` folder, whichever command reads the file.
    if !target.starts_with(repo_root) {
        let how = if link { "is a symlink to" } else { "resolves to" };
        return Ok(Some(
            Diagnostic::error(format!("`{rel}` {how} `{}`, outside the repository", target.display()))
                .in_file(rel)
                .with_hint("tenant files must live in the repository; copy the file in"),
        ));
    }
    if !fs_err::metadata(path)?.is_file() {
        return Ok(Some(
            Diagnostic::error(format!("`{rel}` is not a regular file"))
                .in_file(rel)
                .with_hint("a tenant file is a plain YAML file"),
        ));
    }
    Ok(None)
}

/// `tenants/<stem>.yml`: tenant files end in `.yaml`. `twin`: `tenants/<stem>.yaml` exists too.
fn yml_file(rel: &str, stem: &str, twin: bool) -> Diagnostic {
    let hint = if twin {
        format!("`tenants/{stem}.yaml` exists too: keep one of the two files (named `.yaml`)")
    } else {
        format!("tenant files end in `.yaml`: rename it to `tenants/{stem}.yaml`")
    };
    Diagnostic::error(format!("`{rel}` ends in `.yml`"))
        .in_file(rel.to_string())
        .with_hint(hint)
}

/// A name that looks like a tenant file: `*.yaml` or `*.yml`, not hidden.
fn is_yaml_name(name: &str) -> bool {
    !name.starts_with('.') && (name.ends_with(".yaml") || name.ends_with(".yml"))
}

/// The first YAML file under `dir` in name order, as a path relative to it, looking `depth`
/// folders deep (symlinks are not followed).
fn first_yaml(dir: &Path, depth: usize) -> Option<String> {
    let mut entries: Vec<(String, bool)> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|e| Some((e.file_name().into_string().ok()?, e.file_type().ok()?.is_dir())))
        .filter(|(name, _)| !name.starts_with('.'))
        .collect();
    entries.sort();
    entries.iter().find_map(|(name, is_dir)| match is_dir {
        false if is_yaml_name(name) => Some(name.clone()),
        true if depth > 0 => first_yaml(&dir.join(name), depth - 1).map(|f| format!("{name}/{f}")),
        _ => None,
    })
}

/// A folder in `tenants/` that holds YAML files (`first` is one): they look like tenants but are
/// never read, so without this error their clusters would silently go missing.
fn nested(folder: &str, first: &str) -> Diagnostic {
    Diagnostic::error(format!(
        "`{folder}/` holds YAML files (`{first}`), and tenant files are read from `tenants/` only, not from folders in it"
    ))
    .in_file(format!("{folder}/{first}"))
    .with_hint("move each tenant file up into `tenants/`, or move the folder out of `tenants/`")
}

/// One name in `tenants/`: a tenant file, or a problem with it.
enum Entry {
    Tenant((String, String, Vec<u8>)),
    Problem(Diagnostic),
}

fn read_entry(repo_root: &Path, dir: &Path, name: &str) -> Result<Option<Entry>> {
    let rel = format!("tenants/{name}");
    let path = dir.join(name);
    if name.starts_with('.') {
        return Ok(None);
    }
    if !is_yaml_name(name) {
        // `Acme.YAML`: a tenant file in the wrong case, which would otherwise be skipped.
        let any_case = |suffix: &str| {
            let (name, suffix) = (name.as_bytes(), suffix.as_bytes());
            name.len() > suffix.len() && name[name.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
        };
        if any_case(".yaml") || any_case(".yml") {
            let (stem, ext) = name.rsplit_once('.').unwrap_or((name, ""));
            return Ok(Some(Entry::Problem(
                Diagnostic::error(format!("`{rel}` ends in `.{ext}`"))
                    .in_file(rel.clone())
                    .with_hint(format!(
                        "tenant files end in `.yaml`, lower-case, as tenant names are: rename it to `tenants/{}.yaml`",
                        stem.to_ascii_lowercase()
                    )),
            )));
        }
        // A folder that holds YAML files (see `nested`); anything else is not the tool's.
        if !fs_err::symlink_metadata(&path)?.is_dir() {
            return Ok(None);
        }
        return Ok(first_yaml(&path, 8).map(|first| Entry::Problem(nested(&rel, &first))));
    }
    // One `lstat` per entry: a folder (or a link to one) is skipped, a regular file in
    // `tenants/` (already shown to be inside the repository) needs no further look, and
    // anything else (a symlink, a FIFO) gets the full check below.
    let meta = fs_err::symlink_metadata(&path)?;
    if meta.is_dir() || (meta.file_type().is_symlink() && path.is_dir()) {
        return Ok(None);
    }
    if let Some(stem) = name.strip_suffix(".yml") {
        let twin = dir.join(format!("{stem}.yaml")).exists();
        return Ok(Some(Entry::Problem(yml_file(&rel, stem, twin))));
    }
    let Some(stem) = name.strip_suffix(".yaml") else {
        return Ok(None);
    };
    if !meta.is_file()
        && let Some(problem) = refuse_file(repo_root, &path, &rel)?
    {
        return Ok(Some(Entry::Problem(problem)));
    }
    let bytes = read_bounded(&path)?;
    Ok(Some(Entry::Tenant((rel, stem.to_string(), bytes))))
}

/// Reads the repository's inputs. `Ok(Err(..))` is a user error (no kaas.yaml). `named`: the
/// tenants named with `--tenant`, for which the rendered overlays are listed.
pub fn read(repo: &Path, named: &[String]) -> Result<std::result::Result<Inputs, Vec<Diagnostic>>> {
    let platform_path = repo.join(PLATFORM_PATH);
    if !repo.is_dir() {
        return Ok(Err(vec![
            Diagnostic::error(format!("`{}` is not a folder", repo.display()))
                .with_hint("pass the repository's folder with `--repo DIR` (or `KAAS_REPO`), or run kaas-gitops in it"),
        ]));
    }
    if !platform_path.exists() {
        return Ok(Err(vec![
            Diagnostic::error(format!("no `{PLATFORM_PATH}` in `{}`", repo.display()))
                .with_hint("run `kaas-gitops init` to create a repository, or pass `--repo DIR`"),
        ]));
    }
    let platform = read_bounded(&platform_path)?;
    let mut problems = Vec::new();
    let mut tenants = Vec::new();
    let dir = repo.join("tenants");
    if dir.is_dir() {
        let repo_root = fs_err::canonicalize(repo)?;
        let real_dir = fs_err::canonicalize(&dir)?;
        if !real_dir.starts_with(&repo_root) {
            return Ok(Err(vec![
                Diagnostic::error(format!(
                    "`tenants` is a symlink to `{}`, outside the repository",
                    real_dir.display()
                ))
                .in_file("tenants")
                .with_hint("tenant files must live in the repository; copy the folder in"),
            ]));
        }
        let mut names: Vec<String> = Vec::new();
        for entry in fs_err::read_dir(&dir)? {
            let entry = entry?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        // Each file is checked and read on its own; in parallel, in name order.
        let read: Vec<Result<Option<Entry>>> = names
            .par_iter()
            .map(|name| read_entry(&repo_root, &dir, name))
            .collect();
        for entry in read {
            match entry? {
                None => {}
                Some(Entry::Problem(p)) => problems.push(p),
                Some(Entry::Tenant(t)) => tenants.push(t),
            }
        }
    }
    let lock_path = repo.join(LOCK_PATH);
    let lock = if lock_path.exists() {
        Some(read_bounded(&lock_path)?)
    } else {
        None
    };
    let stems: BTreeSet<&str> = tenants.iter().map(|(_, stem, _)| stem.as_str()).collect();
    let overlays = overlays_on_disk(repo, &stems);
    // Named only with `--tenant` (which may name a deleted tenant); a plain render has no use
    // for the folder names.
    let rendered = if named.is_empty() {
        BTreeSet::new()
    } else {
        overlays.folders.keys().cloned().collect()
    };
    Ok(Ok(Inputs {
        previous: Previous {
            folders: overlays.folders,
            origin: Origin::Disk(repo.to_path_buf()),
            datastore_drivers: datastore_drivers_on_disk(repo),
        },
        overlay_hashes: overlays.hashes,
        rendered,
        platform,
        tenants,
        lock,
        base_platform: repo.join("base/platform/kustomization.yaml").is_file(),
        base_tenant: repo.join("base/tenant/kustomization.yaml").is_file(),
        problems,
    }))
}

impl Inputs {
    /// Builds inputs from files read elsewhere (a git commit, for `pr`): paths relative to the
    /// repository root -> bytes. Only `kaas.yaml`, `kaas.lock`, `tenants/*.yaml` and the two
    /// `base/*/kustomization.yaml` matter; the naming rules are those of [`read`].
    pub fn from_files(
        files: &std::collections::BTreeMap<String, Vec<u8>>,
    ) -> std::result::Result<Inputs, Vec<Diagnostic>> {
        let Some(platform) = files.get(PLATFORM_PATH) else {
            return Err(vec![
                Diagnostic::error(format!("no `{PLATFORM_PATH}`"))
                    .with_hint("commit `kaas.yaml` first, or pick a base that has it"),
            ]);
        };
        let mut problems = Vec::new();
        let mut tenants = Vec::new();
        let mut nested_seen = BTreeSet::new();
        for (rel, bytes) in files {
            let Some(name) = rel.strip_prefix("tenants/") else {
                continue;
            };
            if name.starts_with('.') {
                continue;
            }
            if let Some((folder, file)) = name.split_once('/') {
                // Reported once per folder, for its first YAML file in name order, as `read` does.
                let base = file.rsplit('/').next().unwrap_or(file);
                if !file.split('/').any(|part| part.starts_with('.'))
                    && is_yaml_name(base)
                    && nested_seen.insert(folder)
                {
                    problems.push(nested(&format!("tenants/{folder}"), file));
                }
                continue;
            }
            if let Some(stem) = name.strip_suffix(".yml") {
                let twin = files.contains_key(&format!("tenants/{stem}.yaml"));
                problems.push(yml_file(rel, stem, twin));
            } else if let Some(stem) = name.strip_suffix(".yaml") {
                tenants.push((rel.clone(), stem.to_string(), bytes.clone()));
            }
        }
        Ok(Inputs {
            platform: platform.clone(),
            tenants,
            lock: files.get(LOCK_PATH).cloned(),
            base_platform: files.contains_key("base/platform/kustomization.yaml"),
            base_tenant: files.contains_key("base/tenant/kustomization.yaml"),
            problems,
            // Rendering from git objects compares nothing on disk: render every tenant.
            overlay_hashes: BTreeMap::new(),
            rendered: files
                .keys()
                .filter_map(|k| layout::tenant_of(k))
                .map(str::to_string)
                .collect(),
            previous: {
                let mut by_tenant: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
                for (name, file) in files.keys().filter_map(|k| {
                    Some((
                        layout::tenant_of(k)?,
                        k.strip_prefix(&layout::tenant_prefix(layout::tenant_of(k)?))?,
                    ))
                }) {
                    by_tenant.entry(name.to_string()).or_default().insert(file.to_string());
                }
                // Nothing is compared on disk here, so every tenant is asked about anyway.
                let known = by_tenant
                    .iter()
                    .map(|(name, names)| {
                        let read = |f: &str| files.get(&format!("{}{f}", layout::tenant_prefix(name))).cloned();
                        (name.clone(), deployed_of(name, names, read))
                    })
                    .collect();
                Previous {
                    folders: by_tenant,
                    origin: Origin::Known(known),
                    datastore_drivers: datastore_drivers(files.iter().map(|(k, v)| (k.as_str(), v.as_slice()))),
                }
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rendered_resources_list_is_read_and_any_other_shape_is_not() {
        let k = "# @generated\nkind: Kustomization\nnamespace: a\nresources:\n- ../../../base/tenant\n- cluster-a.yaml\n- 'namespace-a.yaml'\npatches:\n- path: x.yaml\n";
        assert_eq!(
            top_level_list(k, "resources"),
            Some(vec!["../../../base/tenant", "cluster-a.yaml", "namespace-a.yaml"])
        );
        assert_eq!(top_level_list("resources:\nkind: K\n", "resources"), Some(vec![]));
        for other in [
            "resources: [a.yaml]\n",
            "resources:\n  - a.yaml\n",
            "resources:\n- a.yaml # note\n",
            "resources:\n# a comment\n- a.yaml\n",
            "resources:\n- \"a\\u0041.yaml\"\n",
            "kind: K\n",
            "  resources:\n- a.yaml\n",
        ] {
            assert_eq!(top_level_list(other, "resources"), None, "{other:?}");
        }
    }

    #[test]
    fn block_scalar_reads_the_rendered_versions_and_nothing_nested_elsewhere() {
        let kcp = b"# @generated\nkind: KamajiControlPlane\nmetadata:\n  name: a\n  labels:\n    version: v9.9.9\nspec:\n  addons:\n    version: v8.8.8\n  version: v1.33.4\n";
        assert_eq!(block_scalar(kcp, &["spec", "version"]).as_deref(), Some("v1.33.4"));
        let cluster = b"spec:\n  topology:\n    class: c\n    version: \"v1.32.9\"\n  other: x\n";
        assert_eq!(
            block_scalar(cluster, &["spec", "topology", "version"]).as_deref(),
            Some("v1.32.9")
        );
        assert_eq!(
            block_scalar(b"spec:\n  x: 1\nversion: v1.0.0\n", &["spec", "version"]),
            None
        );
    }

    #[test]
    fn inputs_from_a_commit_refuse_nested_tenant_files_and_know_the_rendered_tenants() {
        let files: BTreeMap<String, Vec<u8>> = [
            "kaas.yaml",
            "tenants/acme.yaml",
            "tenants/team-a/b.yaml",
            "tenants/team-a/a.yml",
            "tenants/docs/README.md",
            "tenants/deep/x/y.yaml",
            "overlays/tenants/acme/kustomization.yaml",
            "overlays/tenants/gone/cluster-gone.yaml",
        ]
        .into_iter()
        .map(|p| (p.to_string(), b"x".to_vec()))
        .collect();
        let inputs = Inputs::from_files(&files).unwrap();
        let stems: Vec<&str> = inputs.tenants.iter().map(|(_, s, _)| s.as_str()).collect();
        assert_eq!(stems, ["acme"]);
        let problems: Vec<String> = inputs.problems.iter().map(|d| d.message.clone()).collect();
        assert_eq!(
            problems,
            [
                "`tenants/deep/` holds YAML files (`x/y.yaml`), and tenant files are read from `tenants/` only, not from folders in it",
                "`tenants/team-a/` holds YAML files (`a.yml`), and tenant files are read from `tenants/` only, not from folders in it",
            ]
        );
        assert_eq!(
            inputs.rendered,
            BTreeSet::from(["acme".to_string(), "gone".to_string()])
        );
    }
}
