//! `pin [--update] [IMAGE...]`: resolve image tags to digests into `kaas.lock`.
//!
//! Loads and validates `kaas.yaml` like `render` does, plans the new pins against the real
//! registries, and only then writes the lock: atomically, and only when its bytes change. Any
//! failure returns before the write, so `kaas.lock` stays byte-identical.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use rayon::prelude::*;
use serde_json::json;

use crate::cli::Printer;
use crate::cli::{Format, PinArgs};
use crate::commands::report_invalid;
use crate::commands::{ExitStatus, crds};
use crate::crd_fetch::{self, Mode};
use crate::diagnostics::Diagnostic;
use crate::model::Platform;
use crate::model::build::{self, TagOrigin};
use crate::model::pins::ImagePins;
use crate::model::releases::crds::{CrdAsset, behind_gateway, crd_assets, uses_gateway_api};
use crate::pin::auth::DockerConfig;
use crate::pin::registry::{OciRegistry, Options};
use crate::pin::{self, Change, Entry, Outcome, PinError, Request};
use crate::render::Tree;
use crate::repo::inputs::{self, PLATFORM_PATH};
use crate::repo::lock::{LOCK_PATH, Lock};
use crate::repo::tree;
use crate::spec::load;
use crate::spec::raw::{PlatformFile, TenantFile};
use crate::spec::source::Source;

/// `pin`'s settings: the arguments plus the environment. The only place `pin` reads the
/// environment (clap reads `KAAS_REGISTRY_TIMEOUT` into `--timeout`).
#[derive(Debug, Clone)]
struct Settings {
    request: Request,
    timeout: Duration,
    format: Format,
    docker_config: DockerConfig,
}

impl Settings {
    fn resolve(args: &PinArgs) -> Settings {
        let PinArgs {
            update,
            timeout,
            output,
            images,
            fetch: _,
        } = args;
        let env_path = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        Settings {
            request: Request {
                update: *update,
                images: images.clone(),
            },
            timeout: Duration::from_secs(*timeout),
            format: output.format,
            docker_config: DockerConfig::locate(env_path("DOCKER_CONFIG"), env_path("HOME")),
        }
    }
}

/// Runs `pin`.
pub fn run(printer: &Printer, repo: &Path, args: &PinArgs) -> Result<ExitStatus> {
    let settings = Settings::resolve(args);
    let loaded = match load(repo)? {
        Ok(loaded) => loaded,
        Err(diags) => return Ok(report_invalid(printer, settings.format, diags)),
    };
    let (platform, lock, source) = (&loaded.platform, &loaded.lock, &loaded.source);
    let mut registry = OciRegistry::new(Options {
        timeout: settings.timeout,
        insecure: platform.insecure_registries.clone(),
        docker_config: settings.docker_config.clone(),
    })
    .context("failed to start the registry client")?;
    let mut outcome = match pin::plan(platform, lock, &settings.request, &mut registry) {
        Ok(o) => o,
        Err(e) => return Ok(report_error(printer, settings.format, e)),
    };
    if let Some(d) = picked_kamaji_too_old(source, platform, &outcome) {
        let status = report_invalid(printer, settings.format, vec![d]);
        if settings.format == Format::Human {
            printer.note(&format!("`{LOCK_PATH}` was not changed"));
        }
        return Ok(status);
    }
    // Naming images pins only those; otherwise the CRD release assets are pinned too.
    let crds = if settings.request.images.is_empty() {
        let fetch = crds::settings(&args.fetch, settings.timeout)?;
        let mode = if settings.request.update {
            Mode::Refresh
        } else {
            Mode::Verify
        };
        let assets = loaded.crd_assets(&outcome.lock.images);
        match crd_fetch::fetch_all(&fetch, &assets, &lock.crds, mode) {
            Ok(fetched) => {
                outcome.lock.crds = fetched.iter().map(|f| (f.url.clone(), f.locked())).collect();
                fetched
            }
            Err(problems) => return Ok(crds::report(printer, settings.format, &problems)),
        }
    } else {
        Vec::new()
    };
    let bytes = outcome.lock.to_bytes();
    let written = loaded.lock_bytes.as_deref() != Some(&bytes[..]);
    if written {
        write_lock(repo, bytes)?;
    }
    report(
        printer,
        settings.format,
        &outcome,
        written,
        platform,
        &(lock, &crds[..]),
    );
    if settings.request.images.is_empty() {
        report_unpinnable(printer, settings.format, platform);
    }
    Ok(ExitStatus::Success)
}

/// The Kamaji tag of a tag policy after this run (picked now, or kept from the lock), when it
/// cannot run `supportedKubernetes.max` ([`crate::model::releases::kamaji`]): `pin` refuses it
/// rather than write a lock `render` then refuses. It does not fall back to an older tag: a release never runs less than the one
/// before it, so no older tag runs `max` either.
fn picked_kamaji_too_old(source: &Source, platform: &Platform, outcome: &Outcome) -> Option<Diagnostic> {
    let kamaji = &platform.kamaji_image;
    if kamaji.tag.is_some() {
        // A tag written in `kaas.yaml` was checked when it was loaded.
        return None;
    }
    let picked = outcome
        .entries
        .iter()
        .find(|e| e.image == kamaji.repository && e.fields.contains(&kamaji.field))?;
    // A tag kept as it was is the lock's; a new or moved one, the policy's pick of this run.
    let origin = match picked.change {
        Change::Unchanged => TagOrigin::Locked,
        Change::New | Change::Moved => TagOrigin::Picked,
    };
    let d = build::kamaji_ceiling(source, &picked.tag, platform.max_kubernetes, origin)?;
    d.is_error().then(|| {
        let hint = d.hint.clone().unwrap_or_default();
        d.with_hint(format!(
            "{hint}; `pin` does not fall back to an older tag, which runs no newer Kubernetes"
        ))
    })
}

/// What changed among the CRD release assets.
fn report_crds(printer: &Printer, before: &Lock, crds: &[crd_fetch::Fetched]) {
    for f in crds {
        match before.crds.get(&f.url) {
            None => printer.status(&format!("pinned    crds {} {}", f.asset, f.sha256)),
            Some(old) if old.sha256 != f.sha256 => {
                printer.status(&format!("moved     crds {} {} -> {}", f.asset, old.sha256, f.sha256));
            }
            Some(_) if printer.verbose() => printer.status(&format!("unchanged crds {} {}", f.asset, f.sha256)),
            Some(_) => {}
        }
    }
}

/// `kaas.lock` pins images and CRDs, not charts: say which chart versions are not reproducible;
/// and which pinned images run on one CPU architecture only.
fn report_unpinnable(printer: &Printer, format: Format, platform: &Platform) {
    let mut found: Vec<(String, String, &str)> = Vec::new();
    for (field, chart) in platform.charts() {
        let Some(why) = chart.moving() else { continue };
        let message = format!(
            "chart {} {} is not reproducible: {why}; `kaas.lock` cannot pin it",
            chart.name, chart.version
        );
        found.push((field, message, "pin a released chart version, or mirror the chart into an OCI registry under a version of your own (docs/pin.md)"));
    }
    for image in platform.images() {
        let Some(arch) = image.tag.as_deref().and_then(single_arch) else {
            continue;
        };
        let message = format!(
            "image {}:{} is built for {arch} only: nodes of another architecture cannot run it",
            image.repository,
            image.tag.as_deref().unwrap_or_default()
        );
        found.push((image.field.clone(), message, "pin a multi-architecture tag if the management cluster has such nodes (Kamaji's default kine image is amd64 only; docs/datastores.md)"));
    }
    for (field, message, hint) in found {
        match format {
            Format::Human => printer.warning(&format!("{message} (`{PLATFORM_PATH}` {field})"), Some(hint)),
            Format::Github => {
                let d = Diagnostic::warning(message)
                    .in_file(PLATFORM_PATH)
                    .field(field)
                    .with_hint(hint);
                printer.data(&format!("{}\n", d.github_annotation()));
            }
            Format::Json => {}
        }
    }
}

/// The architecture a tag names as its only one (`v0.11.10-amd64`), if any.
fn single_arch(tag: &str) -> Option<&'static str> {
    ["amd64", "arm64", "arm", "ppc64le", "s390x"]
        .into_iter()
        .find(|arch| tag.ends_with(&format!("-{arch}")))
}

/// What `pin` and `validate` read before fetching the CRD release assets.
pub(crate) struct LoadedPlatform {
    /// `kaas.yaml` validated into the platform model.
    pub platform: Platform,
    /// `kaas.lock`, parsed (empty when there is none).
    pub lock: Lock,
    /// `kaas.lock`'s bytes, when it exists.
    pub lock_bytes: Option<Vec<u8>>,
    /// `kaas.yaml`'s text, to point at fields.
    pub source: Source,
    /// The fleet uses the Gateway API ([`uses_gateway_api`]).
    pub gateway_api: bool,
}

impl LoadedPlatform {
    /// The CRD release assets of the fleet, Kamaji's at the tag `pins` holds for a tag policy.
    pub fn crd_assets(&self, pins: &ImagePins) -> Vec<CrdAsset> {
        crd_assets(&self.platform, pins, self.gateway_api)
    }
}

/// `kaas.yaml` validated into the platform model, the lock parsed, and whether a tenant is
/// behind the Gateway (read from the tenant files only when `kaas.yaml` leaves it open; a file
/// that does not parse counts as not, `render` and `validate` report it); `Ok(Err(..))` holds
/// every problem of `kaas.yaml` and the lock.
pub(crate) fn load(repo: &Path) -> Result<Result<LoadedPlatform, Vec<Diagnostic>>> {
    let inputs = match inputs::read(repo, &[])? {
        Ok(i) => i,
        Err(d) => return Ok(Err(d)),
    };
    let mut errs = Vec::new();
    let lock = match &inputs.lock {
        None => Lock::default(),
        Some(bytes) => Lock::parse(bytes).unwrap_or_else(|e| {
            errs.extend(e);
            Lock::default()
        }),
    };
    let platform = load::parse::<PlatformFile>(PLATFORM_PATH, &inputs.platform)
        .and_then(|p| build::platform(&p).map(|built| (built, p.source)));
    match platform {
        Ok((platform, source)) if errs.is_empty() => {
            let gateway_api = uses_gateway_api(&platform, || {
                inputs.tenants.par_iter().any(|(path, _, bytes)| {
                    load::parse::<TenantFile>(path, bytes).is_ok_and(|t| {
                        !t.value.spec.decommissioned && behind_gateway(&platform, build::chosen_exposure(&t.value))
                    })
                })
            });
            Ok(Ok(LoadedPlatform {
                platform,
                lock,
                lock_bytes: inputs.lock,
                source,
                gateway_api,
            }))
        }
        Ok(_) => Ok(Err(errs)),
        Err(e) => {
            errs.extend(e);
            Ok(Err(errs))
        }
    }
}

/// Writes `kaas.lock` through a temp file and a rename, so a crash leaves the old or the new
/// lock, never a torn one.
pub(crate) fn write_lock(repo: &Path, bytes: Vec<u8>) -> Result<()> {
    let desired: Tree = [(LOCK_PATH.to_string(), bytes)].into_iter().collect();
    let plan = tree::plan(repo, desired, &[], &[])?;
    tree::apply(repo, &plan).with_context(|| format!("failed to write `{LOCK_PATH}`"))
}

/// The lock before this run, and the CRD release assets fetched.
type CrdChange<'a> = (&'a Lock, &'a [crd_fetch::Fetched]);

fn report(
    printer: &Printer,
    format: Format,
    outcome: &Outcome,
    written: bool,
    platform: &Platform,
    (before, crds): &CrdChange<'_>,
) {
    let count = |c: Change| outcome.entries.iter().filter(|e| e.change == c).count();
    match format {
        Format::Json => {
            let crds: Vec<_> = outcome.lock.crds.values().collect();
            let moving: Vec<_> = platform
                .charts()
                .into_iter()
                .filter_map(|(field, c)| {
                    c.moving()
                        .map(|why| json!({"chart": c.name, "version": c.version, "field": field, "why": why}))
                })
                .collect();
            printer.envelope(
                true,
                json!({"lock": LOCK_PATH, "written": written, "images": outcome.entries, "crds": crds, "unpinnedCharts": moving}),
            );
        }
        Format::Github => {}
        Format::Human => {
            for e in &outcome.entries {
                match e.change {
                    Change::New => printer.status(&format!("pinned    {}", full(e))),
                    Change::Moved => {
                        let p = e.previous.as_ref().expect("a moved pin has a previous pin");
                        printer.status(&format!("moved     {}:{}@{} -> {}", e.image, p.tag, p.digest, full(e)));
                    }
                    Change::Unchanged if printer.verbose() => printer.status(&format!("unchanged {}", full(e))),
                    Change::Unchanged => {}
                }
            }
            report_crds(printer, before, crds);
            let counts = format!(
                "{} new, {} moved, {} unchanged",
                count(Change::New),
                count(Change::Moved),
                count(Change::Unchanged)
            );
            if written {
                printer.status(&format!("wrote `{LOCK_PATH}`: {counts}"));
            } else {
                printer.status(&format!("`{LOCK_PATH}` is up to date: {counts}"));
            }
        }
    }
}

fn full(e: &Entry) -> String {
    let kind = match e.index {
        Some(true) => " (multi-arch index)",
        _ => "",
    };
    format!("{}:{}@{}{kind}", e.image, e.tag, e.digest)
}

/// Prints why `pin` stopped; exit 1 for what the user must fix, 2 for the environment.
fn report_error(printer: &Printer, format: Format, e: PinError) -> ExitStatus {
    let status = if e.is_user_error() {
        ExitStatus::Failure
    } else {
        ExitStatus::Error
    };
    let hint = e.hint();
    let error = anyhow::Error::new(e);
    match format {
        Format::Json => {
            let causes: Vec<String> = error.chain().skip(1).map(ToString::to_string).collect();
            let d = Diagnostic::error(error.to_string())
                .in_file(PLATFORM_PATH)
                .with_hint(hint.clone());
            printer.envelope(
                false,
                json!({"written": false, "diagnostics": [d], "error": {"message": error.to_string(), "causes": causes, "hint": hint}}),
            );
        }
        Format::Github => {
            let d = Diagnostic::error(error.to_string())
                .in_file(PLATFORM_PATH)
                .with_hint(hint);
            printer.data(&format!("{}\n", d.github_annotation()));
        }
        Format::Human => {
            printer.error_chain(&error);
            printer.hint(&hint);
            printer.note(&format!("`{LOCK_PATH}` was not changed"));
        }
    }
    status
}

#[cfg(test)]
mod tests {
    use super::single_arch;

    #[test]
    fn a_tag_for_one_architecture_is_recognised() {
        assert_eq!(single_arch("v0.11.10-amd64"), Some("amd64"));
        assert_eq!(single_arch("v0.13.0-arm64"), Some("arm64"));
        assert_eq!(single_arch("v0.11.10"), None);
        assert_eq!(single_arch("26.8.2-edge"), None);
    }
}
