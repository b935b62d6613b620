//! Which tenants `upgrade` moves (names, `--selector`, `--wave`), and the wave gate: a wave
//! starts only once every tenant of the earlier waves is at the target in the last commit.

use std::collections::BTreeMap;
use std::path::Path;

use crate::cli::UpgradeArgs;
use crate::diagnostics::Diagnostic;
use crate::git::{self, Workspace};
use crate::model::upgrade::{Target, wave_of};
use crate::model::{KubeVersion, Model, Tenant};
use crate::spec::load;
use crate::spec::raw::TenantFile;
use crate::spec::source::Source;

/// The selected tenants, in name order; `Err`: every problem with the selection.
pub fn select<'m>(model: &'m Model, args: &UpgradeArgs) -> Result<Vec<&'m Tenant>, Vec<Diagnostic>> {
    let tenants = &model.tenants;
    if !args.tenants.is_empty() {
        let mut errs = Vec::new();
        let mut out = Vec::new();
        for name in &args.tenants {
            match tenants.iter().find(|t| &t.name == name) {
                Some(t) => out.push(t),
                None => errs.push(
                    Diagnostic::error(format!("no tenant `{name}`: there is no `tenants/{name}.yaml`"))
                        .with_hint(format!("tenants here: {}", names(tenants.iter()))),
                ),
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out.dedup_by(|a, b| a.name == b.name);
        return if errs.is_empty() { Ok(out) } else { Err(errs) };
    }
    if let Some(sel) = &args.selector {
        let Some((key, value)) = sel.split_once('=') else {
            return Err(vec![
                Diagnostic::error(format!("`--selector {sel}` is not LABEL=VALUE"))
                    .with_hint("e.g. `--selector ring=canary`: tenants whose `metadata.labels` have `ring: canary`"),
            ]);
        };
        let out: Vec<&Tenant> = tenants
            .iter()
            .filter(|t| t.labels.get(key).map(String::as_str) == Some(value))
            .collect();
        if out.is_empty() {
            return Err(vec![
                Diagnostic::error(format!("`--selector {sel}` selects no tenant"))
                    .with_hint(format!("no tenant file has `metadata.labels: {{{key}: {value}}}`")),
            ]);
        }
        return Ok(out);
    }
    if let Some(name) = &args.wave {
        let waves = &model.platform.waves;
        let Some(index) = waves.iter().position(|w| &w.name == name) else {
            let hint = if waves.is_empty() {
                "kaas.yaml declares no waves: add `spec.upgrades.waves` (docs/upgrades.md)".to_string()
            } else {
                let listed: Vec<&str> = waves.iter().map(|w| w.name.as_str()).collect();
                format!("the waves of kaas.yaml, in order: {}", listed.join(", "))
            };
            return Err(vec![
                Diagnostic::error(format!("no wave `{name}` in `spec.upgrades.waves`")).with_hint(hint),
            ]);
        };
        return Ok(tenants
            .iter()
            .filter(|t| wave_of(waves, &t.labels, model.platform.management_cluster_labels(t)) == Some(index))
            .collect());
    }
    Ok(tenants.iter().collect())
}

fn names<'a>(tenants: impl Iterator<Item = &'a Tenant>) -> String {
    let all: Vec<&str> = tenants.map(|t| t.name.as_str()).collect();
    match all.len() {
        0 => "none yet".into(),
        n if n <= 8 => all.join(", "),
        n => format!("{}, … ({n} in all)", all[..8].join(", ")),
    }
}

/// The Kubernetes version of every tenant file in the last commit, or `None` outside a git
/// repository (or before its first commit).
pub fn committed_versions(repo: &Path) -> Option<BTreeMap<String, KubeVersion>> {
    let ws = Workspace::open(repo).ok()?;
    let head = git::pr::resolve_base(&ws, Some("HEAD")).ok()?;
    let files = git::pr::read_files(&ws, head.commit, |p| {
        p.strip_prefix("tenants/")
            .is_some_and(|n| !n.contains('/') && n.ends_with(".yaml"))
    })
    .ok()?;
    Some(
        files
            .iter()
            .filter_map(|(path, bytes)| {
                let stem = path.strip_prefix("tenants/")?.strip_suffix(".yaml")?;
                let loaded = load::parse::<TenantFile>(path, bytes).ok()?;
                Some((
                    stem.to_string(),
                    KubeVersion::parse(&loaded.value.spec.kubernetes.version)?,
                ))
            })
            .collect(),
    )
}

/// The tenants of the waves before `wave` (not decommissioned), each with its wave's name.
pub fn earlier_waves<'m>(model: &'m Model, wave: &str) -> Vec<(&'m Tenant, &'m str)> {
    let waves = &model.platform.waves;
    let Some(index) = waves.iter().position(|w| w.name == wave) else {
        return Vec::new();
    };
    model
        .tenants
        .iter()
        .filter(|t| !t.decommissioned)
        .filter_map(|t| {
            let w = wave_of(waves, &t.labels, model.platform.management_cluster_labels(t)).filter(|w| *w < index)?;
            Some((t, waves[w].name.as_str()))
        })
        .collect()
}

/// Refuses `--wave NAME` while a tenant of an earlier wave is not at `target` in `committed`
/// (each problem at that tenant's `version` line). `sources`: the tenant files as they are now.
/// `target` `None` (`upgrade --patch`): at the newest listed patch of its committed minor.
pub fn wave_gate(
    model: &Model,
    wave: &str,
    target: Option<Target>,
    committed: &BTreeMap<String, KubeVersion>,
    sources: &BTreeMap<&str, Source>,
) -> Vec<Diagnostic> {
    let waves = &model.platform.waves;
    let Some(index) = waves.iter().position(|w| w.name == wave) else {
        return Vec::new();
    };
    let mut errs = Vec::new();
    for t in model.tenants.iter().filter(|t| !t.decommissioned) {
        let Some(earlier) =
            wave_of(waves, &t.labels, model.platform.management_cluster_labels(t)).filter(|w| *w < index)
        else {
            continue;
        };
        // A tenant file not committed yet counts as it is now.
        let at = committed.get(&t.name).copied().unwrap_or(t.version);
        // Pools still held for the control plane's step: that tenant has not arrived either.
        let held = sources
            .get(t.name.as_str())
            .and_then(|s| s.scalar("spec.kubernetes.workersVersion"))
            .and_then(|s| KubeVersion::parse(&s.text))
            .filter(|h| *h < t.version);
        let newest = model
            .platform
            .kubernetes_releases
            .iter()
            .filter(|r| (r.major, r.minor) == (at.major, at.minor))
            .max()
            .copied();
        let reached = match target {
            Some(target) => target.reached_by(at),
            None => newest.is_none_or(|n| at >= n),
        };
        let (goal, flag) = match (target, newest) {
            (Some(t), _) => (t.to_string(), format!("--kubernetes {t}")),
            (None, Some(n)) => (
                format!("the newest listed patch of its minor, {n}"),
                "--patch".to_string(),
            ),
            (None, None) => (String::new(), "--patch".to_string()),
        };
        // Pools held for a minor step are the minor step's business, not a patch's.
        let held = held.filter(|_| target.is_some());
        if reached && held.is_none() {
            continue;
        }
        let earlier = &waves[earlier].name;
        let message = match held {
            Some(h) if reached => format!(
                "wave `{wave}` cannot start: tenant `{}` of the earlier wave `{earlier}` has its control plane at {at} and its pools still held at {h}",
                t.name
            ),
            _ => format!(
                "wave `{wave}` cannot start: tenant `{}` of the earlier wave `{earlier}` is at {at} in the last commit, not at {goal}",
                t.name
            ),
        };
        let hint = format!(
            "finish wave `{earlier}` first: `kaas-gitops upgrade {flag} --wave {earlier}`, commit, and let Flux apply it (`kaas-gitops wait`)"
        );
        let d = match sources.get(t.name.as_str()) {
            Some(src) => src.error("spec.kubernetes.version", message),
            None => Diagnostic::error(message).in_file(t.source_path.clone()),
        };
        errs.push(d.with_hint(hint));
    }
    errs
}
