//! CustomResourceDefinitions read from a folder (recursively, any number per file): for each
//! group and kind, the versions with whether they are served and their `openAPIV3Schema`.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use rayon::prelude::*;
use serde_json::Value;

/// One version of a CRD.
#[derive(Debug, Clone)]
pub struct Version {
    /// The API server serves it.
    pub served: bool,
    /// Marked `deprecated: true`.
    pub deprecated: bool,
    /// The CRD's deprecation text, if any.
    pub deprecation_warning: Option<String>,
    /// `schema.openAPIV3Schema`, if the version has one.
    pub schema: Option<Value>,
}

/// One CustomResourceDefinition.
#[derive(Debug, Clone)]
pub struct Crd {
    /// `metadata.name`, e.g. `clusters.cluster.x-k8s.io`.
    pub name: String,
    /// `spec.group`.
    pub group: String,
    /// `spec.names.kind`.
    pub kind: String,
    /// The file it came from, relative to the CRD folder (or the release asset it came with).
    pub file: String,
    /// `spec.names.plural`, `singular`, `shortNames` and `listKind`: the names the API server
    /// must accept before it serves the CRD.
    pub names: Names,
    /// Versions by name.
    pub versions: BTreeMap<String, Version>,
}

/// `spec.names` of a CRD, defaults applied as the API server applies them (`singular` the
/// lower-cased kind, `listKind` the kind with `List`).
#[derive(Debug, Clone, Default)]
pub struct Names {
    /// `plural`.
    pub plural: String,
    /// `singular`.
    pub singular: String,
    /// `shortNames`.
    pub short_names: Vec<String>,
    /// `listKind`.
    pub list_kind: String,
}

/// Two CRDs of one group whose names collide: the API server accepts the names of the one
/// created first and never establishes the other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameConflict {
    /// `spec.group`.
    pub group: String,
    /// What collides: `plural`, `singular`, `short name`, `kind` or `list kind`, and the name.
    pub what: &'static str,
    /// The name both claim.
    pub name: String,
    /// The CRDs (`metadata.name`) and where each came from, in load order.
    pub crds: [(String, String); 2],
}

/// What the catalog knows about an `apiVersion` and `kind`.
#[derive(Debug)]
pub enum Lookup<'a> {
    /// A served version.
    Served(&'a Crd, &'a Version),
    /// The CRD has no such version, or does not serve it.
    NotServed(&'a Crd),
    /// No CRD defines this group and kind.
    NoCrd,
}

/// Every CRD of a folder, by `(group, kind)`.
#[derive(Debug, Default)]
pub struct Catalog {
    crds: BTreeMap<(String, String), Crd>,
    conflicts: Vec<NameConflict>,
}

impl Catalog {
    /// Reads every `.yaml`, `.yml` and `.json` file under `dir`. Documents that are no CRD are
    /// ignored; a file that does not parse is an error of the environment.
    pub fn load(dir: &Path) -> Result<Catalog> {
        if !dir.is_dir() {
            bail!("the CRD folder `{}` does not exist or is no folder", dir.display());
        }
        let mut files = Vec::new();
        collect(dir, dir, &mut files).with_context(|| format!("failed to read the CRD folder `{}`", dir.display()))?;
        let parsed: Vec<Result<Vec<Crd>>> = files
            .par_iter()
            .map(|(rel, path)| {
                let text = fs_err::read_to_string(path)?;
                parse(rel, &text).with_context(|| format!("failed to read CRDs from `{}`", path.display()))
            })
            .collect();
        let mut catalog = Catalog::default();
        for crds in parsed {
            for crd in crds? {
                catalog.crds.entry((crd.group.clone(), crd.kind.clone())).or_insert(crd);
            }
        }
        Ok(catalog)
    }

    /// The CRDs in `(name, text)` pairs, e.g. release assets (which hold other objects too:
    /// those are ignored). The first definition of a group and kind wins.
    pub fn from_texts(texts: &[(String, String)]) -> Result<Catalog> {
        let parsed: Vec<Result<Vec<Crd>>> = texts
            .par_iter()
            .map(|(name, text)| parse(name, text).with_context(|| format!("failed to read CRDs from {name}")))
            .collect();
        let mut catalog = Catalog::default();
        let mut all = Vec::new();
        for crds in parsed {
            for crd in crds? {
                all.push(crd.clone());
                catalog.crds.entry((crd.group.clone(), crd.kind.clone())).or_insert(crd);
            }
        }
        catalog.conflicts = conflicts(&all);
        Ok(catalog)
    }

    /// CRDs of different names whose `spec.names` collide within a group; only for release
    /// assets ([`Catalog::from_texts`]): a CRD folder may hold the CRDs of releases no single
    /// management cluster installs together.
    pub fn conflicts(&self) -> &[NameConflict] {
        &self.conflicts
    }

    /// How many CRDs were loaded.
    pub fn len(&self) -> usize {
        self.crds.len()
    }

    /// Whether no CRD was loaded.
    pub fn is_empty(&self) -> bool {
        self.crds.is_empty()
    }

    /// Every CRD.
    pub fn iter(&self) -> impl Iterator<Item = (&(String, String), &Crd)> {
        self.crds.iter()
    }

    /// The schema of `apiVersion` and `kind`, or why there is none.
    pub fn lookup(&self, group: &str, version: &str, kind: &str) -> Lookup<'_> {
        let Some(crd) = self.crds.get(&(group.to_string(), kind.to_string())) else {
            return Lookup::NoCrd;
        };
        match crd.versions.get(version) {
            Some(v) if v.served => Lookup::Served(crd, v),
            _ => Lookup::NotServed(crd),
        }
    }
}

impl Crd {
    /// The served versions, for hints.
    pub fn served(&self) -> Vec<&str> {
        self.versions
            .iter()
            .filter(|(_, v)| v.served)
            .map(|(n, _)| n.as_str())
            .collect()
    }
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, std::path::PathBuf)>) -> Result<()> {
    let mut entries: Vec<_> = fs_err::read_dir(dir)?.collect::<std::io::Result<_>>()?;
    entries.sort_by_key(fs_err::DirEntry::file_name);
    for e in entries {
        let path = e.path();
        if path.is_dir() {
            collect(root, &path, out)?;
        } else if path
            .extension()
            .is_some_and(|x| x == "yaml" || x == "yml" || x == "json")
        {
            let rel = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().into_owned();
            out.push((rel, path));
        }
    }
    Ok(())
}

/// The CRDs in one file's text.
fn parse(rel: &str, text: &str) -> Result<Vec<Crd>> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).map_err(|e| anyhow::anyhow!("{}", e.without_snippet()))?;
    let mut out = Vec::new();
    for doc in docs {
        if doc["kind"] != "CustomResourceDefinition" {
            continue;
        }
        let spec = &doc["spec"];
        let (Some(name), Some(kind)) = (doc["metadata"]["name"].as_str(), spec["names"]["kind"].as_str()) else {
            bail!("a CustomResourceDefinition without `metadata.name` or `spec.names.kind`");
        };
        let mut versions = BTreeMap::new();
        for v in spec["versions"].as_array().into_iter().flatten() {
            let Some(vname) = v["name"].as_str() else { continue };
            versions.insert(
                vname.to_string(),
                Version {
                    served: v["served"].as_bool().unwrap_or(false),
                    deprecated: v["deprecated"].as_bool().unwrap_or(false),
                    deprecation_warning: v["deprecationWarning"].as_str().map(str::to_string),
                    schema: v["schema"].get("openAPIV3Schema").cloned(),
                },
            );
        }
        let n = &spec["names"];
        let text = |key: &str| n[key].as_str().filter(|s| !s.is_empty()).map(str::to_string);
        let names = Names {
            plural: text("plural").unwrap_or_default(),
            singular: text("singular").unwrap_or_else(|| kind.to_lowercase()),
            short_names: n["shortNames"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            list_kind: text("listKind").unwrap_or_else(|| format!("{kind}List")),
        };
        out.push(Crd {
            name: name.to_string(),
            group: spec["group"].as_str().unwrap_or_default().to_string(),
            kind: kind.to_string(),
            file: rel.to_string(),
            names,
            versions,
        });
    }
    Ok(out)
}

/// The names that collide between CRDs of one group, as the API server's naming controller
/// sees them (kubernetes/apiextensions-apiserver v0.34 `pkg/controller/status/naming_controller.go`,
/// `getAcceptedNamesForGroup` and `calculateNamesAndConditions`): plural, singular and short
/// names share one set per group, kind and list kind another; a name another CRD of the group
/// already holds is refused (`PluralConflict`, `ShortNamesConflict`, `KindConflict`, ...) and
/// the CRD is never Established. One CRD in several assets (same `metadata.name`) is one object,
/// not a conflict.
fn conflicts(all: &[Crd]) -> Vec<NameConflict> {
    let mut resources: BTreeMap<(&str, &str), (&Crd, &'static str)> = BTreeMap::new();
    let mut kinds: BTreeMap<(&str, &str), (&Crd, &'static str)> = BTreeMap::new();
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for crd in all {
        if !seen.insert(crd.name.as_str()) {
            continue;
        }
        let n = &crd.names;
        let resource_names = [(n.plural.as_str(), "plural"), (n.singular.as_str(), "singular")]
            .into_iter()
            .chain(n.short_names.iter().map(|s| (s.as_str(), "short name")));
        let kind_names = [(crd.kind.as_str(), "kind"), (n.list_kind.as_str(), "list kind")];
        for (table, names) in [
            (&mut resources, resource_names.collect::<Vec<_>>()),
            (&mut kinds, kind_names.to_vec()),
        ] {
            for (name, what) in names {
                if name.is_empty() {
                    continue;
                }
                match table.get(&(crd.group.as_str(), name)) {
                    Some((other, _)) if other.name != crd.name => out.push(NameConflict {
                        group: crd.group.clone(),
                        what,
                        name: name.to_string(),
                        crds: [
                            (other.name.clone(), other.file.clone()),
                            (crd.name.clone(), crd.file.clone()),
                        ],
                    }),
                    Some(_) => {}
                    None => {
                        table.insert((crd.group.as_str(), name), (crd, what));
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROXMOX: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: proxmoxmachinetemplates.infrastructure.cluster.x-k8s.io}\nspec:\n  group: infrastructure.cluster.x-k8s.io\n  names: {kind: ProxmoxMachineTemplate, plural: proxmoxmachinetemplates, shortNames: [pmt]}\n  versions: []\n";
    const PACKET: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: packetmachinetemplates.infrastructure.cluster.x-k8s.io}\nspec:\n  group: infrastructure.cluster.x-k8s.io\n  names: {kind: PacketMachineTemplate, plural: packetmachinetemplates, shortNames: [pmt]}\n  versions: []\n";

    #[test]
    fn a_short_name_two_crds_of_one_group_claim_is_a_conflict_once() {
        let texts = [
            ("a".to_string(), PROXMOX.to_string()),
            ("b".to_string(), PACKET.to_string()),
            ("c".to_string(), PROXMOX.to_string()),
        ];
        let catalog = Catalog::from_texts(&texts).unwrap();
        let c = catalog.conflicts();
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!((c[0].what, c[0].name.as_str()), ("short name", "pmt"));
        assert_eq!(c[0].crds[0].1, "a");
        assert_eq!(c[0].crds[1].1, "b");
    }
}
