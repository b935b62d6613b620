//! `validate`: proves the rendered fleet is what the API server and the controllers will accept,
//! before Flux applies it. Works on the files as they are on disk (so hand edits are checked
//! too) and reports every finding at once, each at the file and line of the offending field.
//!
//! The steps: load the objects under `overlays/` and `flux/` (and `base/`, for references only)
//! -> schema and CEL rules per object (`schema`, CRDs from `crd`, core kinds from `builtin`) ->
//! rules across the fleet (`refs`, `contracts`) -> every folder builds with kustomize to exactly
//! its objects (`kustomize`).

mod addons;
mod builtin;
mod cel;
pub(crate) mod contracts;
pub mod crd;
mod datastores;
mod fleet;
mod keyword;
pub(crate) mod kustomize;
mod labels;
mod refs;
pub(crate) mod schema;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;
use rayon::prelude::*;
use serde::Serialize;

use crate::diagnostics::{Diagnostic, Severity};
use crate::model::Platform;
use crate::repo::inputs::PLATFORM_PATH;
use crate::spec::load;
use crate::spec::raw::PlatformFile;

pub use fleet::{Fleet, Manifest};

/// Which step found a problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Check {
    /// A file that is not valid YAML, or a document that is no Kubernetes object.
    Parse,
    /// The object against its CRD's or core kind's schema.
    Schema,
    /// An `x-kubernetes-validations` CEL rule.
    Cel,
    /// A reference or rule across objects.
    Fleet,
    /// Cluster API contracts of the provider releases.
    Contract,
    /// `kustomize build` of a folder.
    Kustomize,
    /// The platform file the fleet is checked against.
    Platform,
}

/// One problem with the rendered fleet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What is wrong, where, and what would be valid.
    pub diagnostic: Diagnostic,
    /// The object, as `Kind namespace/name` (or `Kind name` when cluster-scoped).
    pub object: Option<String>,
    /// The step that found it.
    pub check: Check,
}

impl Finding {
    /// A finding of `check` from a diagnostic.
    pub fn new(check: Check, diagnostic: Diagnostic) -> Finding {
        Finding {
            diagnostic,
            object: None,
            check,
        }
    }

    /// Names the object.
    #[must_use]
    pub fn on(mut self, object: impl Into<String>) -> Finding {
        self.object = Some(object.into());
        self
    }

    /// Adds a hint.
    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Finding {
        self.diagnostic = self.diagnostic.with_hint(hint);
        self
    }

    /// Whether the finding fails the run.
    pub fn is_error(&self) -> bool {
        self.diagnostic.is_error()
    }

    /// The diagnostic with the object named in its message (for people and annotations).
    pub fn display_diagnostic(&self) -> Diagnostic {
        let mut d = self.diagnostic.clone();
        if let Some(object) = &self.object {
            d.message = format!("{object}: {}", d.message);
        }
        d
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.display_diagnostic().fmt(f)
    }
}

impl Serialize for Finding {
    /// `{severity, file, line, column, object, field, check, message, hint}`.
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let d = &self.diagnostic;
        let mut m = s.serialize_map(Some(9))?;
        m.serialize_entry("severity", &d.severity)?;
        m.serialize_entry("file", &d.file)?;
        m.serialize_entry("line", &d.location.as_ref().map(|l| l.line))?;
        m.serialize_entry("column", &d.location.as_ref().map(|l| l.column))?;
        m.serialize_entry("object", &self.object)?;
        m.serialize_entry("field", &d.field)?;
        m.serialize_entry("check", &self.check)?;
        m.serialize_entry("message", &d.message)?;
        m.serialize_entry("hint", &d.hint)?;
        m.end()
    }
}

/// Where the CRDs come from.
#[derive(Debug, Clone)]
pub enum CrdSource {
    /// A folder of CRD YAML (`--crds`).
    Folder(PathBuf),
    /// Texts by name: the release assets `kaas.yaml` pins, fetched by the caller.
    Texts(Vec<(String, String)>),
}

/// What to check.
#[derive(Debug, Clone)]
pub struct Options {
    /// The CRDs.
    pub crds: CrdSource,
    /// Build every folder with kustomize.
    pub kustomize: bool,
}

/// What a run found, and how much it looked at.
#[derive(Debug, Default)]
pub struct Report {
    /// Every finding, sorted by file, line and message.
    pub findings: Vec<Finding>,
    /// Objects checked against a schema.
    pub objects: usize,
    /// Files read under `overlays/` and `flux/`.
    pub files: usize,
    /// Folders built with kustomize.
    pub folders: usize,
    /// CRDs loaded.
    pub crds: usize,
    /// Notes for `-v`: CEL rules that could not be evaluated here, and why.
    pub notes: Vec<String>,
    /// Time per step, in order.
    pub timings: Vec<(&'static str, Duration)>,
}

impl Report {
    /// Error-level findings.
    pub fn errors(&self) -> usize {
        self.findings.iter().filter(|f| f.is_error()).count()
    }

    /// Warning-level findings.
    pub fn warnings(&self) -> usize {
        self.findings.len() - self.errors()
    }
}

/// Runs every check on the repository at `repo`. `Err` is an environment failure (a folder that
/// cannot be read, CRDs that do not parse, no kustomize).
pub fn run(repo: &Path, options: &Options) -> Result<Report> {
    let mut report = Report::default();
    let mut clock = Instant::now();
    let mut lap = |report: &mut Report, name: &'static str| {
        report.timings.push((name, clock.elapsed()));
        clock = Instant::now();
    };
    let catalog = match &options.crds {
        CrdSource::Folder(dir) => crd::Catalog::load(dir)?,
        CrdSource::Texts(texts) => crd::Catalog::from_texts(texts)?,
    };
    report.crds = catalog.len();
    report.findings.extend(catalog.conflicts().iter().map(name_conflict));
    lap(&mut report, "load CRDs");

    let (platform, platform_findings) = platform(repo)?;
    report.findings.extend(platform_findings);
    let fleet = Fleet::load(repo)?;
    report.files = fleet.files;
    if fleet.files == 0 {
        report.findings.push(Finding::new(
            Check::Parse,
            Diagnostic::error("nothing to validate: no files under `overlays/` or `flux/`")
                .with_hint("run `kaas-gitops render` first, or pass the repository with `--repo DIR`"),
        ));
    }
    report.findings.extend(fleet.findings.iter().cloned());
    lap(&mut report, "read files");

    let validators = schema::Validators::compile(&catalog, &fleet);
    let checked: Vec<Vec<Finding>> = fleet
        .objects
        .par_iter()
        .filter(|o| o.rendered)
        .map(|o| validators.check(o))
        .collect();
    report.objects = fleet.objects.iter().filter(|o| o.rendered).count();
    report.findings.extend(validators.findings());
    report.findings.extend(checked.into_iter().flatten());
    report.notes = validators.notes();
    // The Kamaji/provider pair: a note, not a finding (nothing in the fleet is wrong; the
    // recommended pair has it).
    if let Some(p) = &platform
        && let Some(tag) = &p.kamaji_image.tag
    {
        report
            .notes
            .extend(crate::model::releases::api_skew::note(&p.cp_provider_version, tag));
    }
    lap(&mut report, "schemas");

    report.findings.extend(refs::check(&fleet, platform.as_ref()));
    report.findings.extend(contracts::check(&fleet, platform.as_ref()));
    lap(&mut report, "fleet rules");

    if options.kustomize {
        let (folders, findings) = kustomize::check(repo, &fleet)?;
        report.folders = folders;
        report.findings.extend(findings);
        lap(&mut report, "kustomize");
    }
    sort(&mut report.findings);
    report.findings.dedup();
    Ok(report)
}

/// Compiles the schema of every served version of every CRD in `catalog`; returns the ones
/// that do not compile, as `kind apiVersion: why` (a test keeps this empty for the upstream CRDs).
pub fn uncompilable(catalog: &crd::Catalog) -> Vec<String> {
    schema::compile_all(catalog)
}

/// The platform settings the fleet is checked against, or the problems of `kaas.yaml`.
fn platform(repo: &Path) -> Result<(Option<Platform>, Vec<Finding>)> {
    let path = repo.join(PLATFORM_PATH);
    if !path.exists() {
        let d = Diagnostic::warning(format!(
            "no `{PLATFORM_PATH}`: Kubernetes versions, DataStores and contracts are checked without the platform's settings"
        ))
        .with_hint("run `kaas-gitops validate` in the repository root, or pass `--repo DIR`");
        return Ok((None, vec![Finding::new(Check::Platform, d)]));
    }
    let bytes = crate::repo::inputs::read_bounded(&path)?;
    let loaded = load::parse::<PlatformFile>(PLATFORM_PATH, &bytes);
    match loaded.and_then(|l| crate::model::build::platform(&l)) {
        Ok(p) => Ok((Some(p), Vec::new())),
        Err(diags) => Ok((
            None,
            diags.into_iter().map(|d| Finding::new(Check::Platform, d)).collect(),
        )),
    }
}

/// Two installed releases whose CRDs claim one name: the provider installed second has no
/// established CRD, so its objects can never be created (seen on kube-apiserver v1.34 with
/// CAPMOX v0.9.0 and CAPP v0.9.0, both claiming `pmt`).
fn name_conflict(c: &crd::NameConflict) -> Finding {
    let [(a, from_a), (b, from_b)] = &c.crds;
    Finding::new(
        Check::Platform,
        Diagnostic::error(format!(
            "the CRDs `{a}` (from {from_a}) and `{b}` (from {from_b}) both claim the {} `{}` in group `{}`: the API server establishes only the one created first (NamesAccepted=False), so the other release's objects cannot be created",
            c.what, c.name, c.group
        ))
        .in_file(PLATFORM_PATH.to_string())
        .field("spec.clusterApi")
        .with_hint("install these two releases on separate management clusters; kaas-gitops cannot rename upstream CRDs"),
    )
}

/// Sorts findings by file, position, then message, so runs print identically.
pub fn sort(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        let (x, y) = (&a.diagnostic, &b.diagnostic);
        (&x.file, &x.location, &x.message, &a.object).cmp(&(&y.file, &y.location, &y.message, &b.object))
    });
}

/// An error finding of `check` at `field` of `object`.
pub(crate) fn error(check: Check, object: &Manifest, field: &str, message: impl Into<String>) -> Finding {
    at(check, Severity::Error, object, field, message)
}

/// A warning finding of `check` at `field` of `object`.
pub(crate) fn warning(check: Check, object: &Manifest, field: &str, message: impl Into<String>) -> Finding {
    at(check, Severity::Warning, object, field, message)
}

fn at(check: Check, severity: Severity, object: &Manifest, field: &str, message: impl Into<String>) -> Finding {
    let mut d = match severity {
        Severity::Error => Diagnostic::error(message),
        Severity::Warning => Diagnostic::warning(message),
    };
    d = d.at(object.locate(field)).in_file(object.file.clone());
    if !field.is_empty() {
        d = d.field(field);
    }
    Finding::new(check, d).on(object.id())
}
