//! Add-ons: the platform's catalog and defaults (`kaas.yaml` `spec.addons`) and each tenant's
//! choice (`spec.addons` of a tenant file) -> the model, with every name checked against the
//! catalog.

use std::collections::{BTreeMap, BTreeSet};

use crate::diagnostics::Diagnostic;
use crate::model::build::fields::{chart, image};
use crate::model::build::names::is_dns1123_label;
use crate::model::build::providers::Installed;
use crate::model::{
    AddonChart, AddonDefaults, AddonImage, AddonKind, AddonWiring, DigestFormat, Platform, Provider, TenantAddon,
};
use crate::spec::raw::{self, PlatformSpec, TenantSpec};
use crate::spec::source::Source;

/// The catalog name `spec.cloudControllerManagers.nutanix` stands for.
pub(crate) const NUTANIX_CCM: &str = "nutanix-ccm";
/// The longest add-on name: its `HelmRelease` is `<tenant>-<name>`, at most 40 + 1 + 22 = 63
/// characters, a DNS-1123 label.
const MAX_NAME: usize = 22;
/// What a tenant writes in `spec.addons.cni` to get no CNI from the catalog.
pub(crate) const NO_CNI: &str = "none";

/// The catalog and the defaults.
pub(crate) fn platform(
    src: &Source,
    spec: &PlatformSpec,
    installed: &Installed,
    errs: &mut Vec<Diagnostic>,
) -> (BTreeMap<String, AddonChart>, AddonDefaults) {
    let raw = spec.addons.clone().unwrap_or_default();
    let mut catalog = BTreeMap::new();
    for (name, a) in &raw.catalog {
        catalog.insert(name.clone(), entry(src, name, a, errs));
    }
    // The shorthand of earlier releases stays: the same chart, delivered like every add-on.
    if let Some(c) = &installed.nutanix_ccm_chart
        && !catalog.contains_key(NUTANIX_CCM)
    {
        catalog.insert(
            NUTANIX_CCM.to_string(),
            AddonChart {
                name: NUTANIX_CCM.to_string(),
                field: "spec.cloudControllerManagers.nutanix".to_string(),
                kind: AddonKind::Ccm,
                chart: c.clone(),
                namespace: "kube-system".to_string(),
                wiring: Some(AddonWiring::NutanixCcm),
                replaces_kube_proxy: false,
                values: BTreeMap::new(),
                images: Vec::new(),
            },
        );
    }
    let defaults = defaults(src, &raw.defaults, &catalog, installed, errs);
    (catalog, defaults)
}

fn entry(src: &Source, name: &str, a: &raw::CatalogAddon, errs: &mut Vec<Diagnostic>) -> AddonChart {
    let field = format!("spec.addons.catalog.{name}");
    if !is_dns1123_label(name) || name.len() > MAX_NAME || name == NO_CNI {
        errs.push(
            src.key_error(&field, format!("`{name}` is not a valid add-on name"))
                .with_hint(format!("a DNS-1123 label of at most {MAX_NAME} characters other than `{NO_CNI}`: the HelmRelease is `<tenant>-{name}`")),
        );
    }
    let raw_chart = raw::Chart {
        repository: a.repository.clone(),
        version: a.version.clone(),
    };
    let c = chart(src, &field, &a.chart, &raw_chart, errs);
    if !is_dns1123_label(&a.chart) {
        errs.push(src.error(&format!("{field}.chart"), format!("`{}` is not a chart name", a.chart)));
    }
    let namespace = a.namespace.clone().unwrap_or_else(|| "kube-system".to_string());
    if !is_dns1123_label(&namespace) {
        errs.push(
            src.error(
                &format!("{field}.namespace"),
                format!("`{namespace}` is not a namespace name"),
            )
            .with_hint("a DNS-1123 label, e.g. `kube-system`"),
        );
    }
    let wants = a.wiring.map(|w| (w.kind(), w.as_str()));
    if let Some((kind, wiring)) = wants
        && kind != a.kind
    {
        errs.push(
            src.error(
                &format!("{field}.wiring"),
                format!("the `{wiring}` wiring is for a `{}` add-on", kind_name(kind)),
            )
            .with_hint(format!("set `kind: {}` or remove `wiring`", kind_name(kind))),
        );
    }
    if a.replaces_kube_proxy && a.kind != AddonKind::Cni {
        errs.push(
            src.error(&format!("{field}.replacesKubeProxy"), "only a CNI replaces kube-proxy")
                .with_hint("set `kind: cni` or remove `replacesKubeProxy`"),
        );
    }
    let mut images = Vec::new();
    for (path, img) in &a.images {
        let at = format!("{field}.images.{path}");
        let segments: Vec<String> = path.split('.').map(str::to_string).collect();
        if segments.iter().any(|s| s.is_empty()) {
            errs.push(
                src.key_error(&at, format!("`{path}` is not a path in the chart's values"))
                    .with_hint("write the dotted path of the image's block, e.g. `image` or `operator.image`"),
            );
        }
        let spec_image = raw::Image {
            repository: img.repository.clone(),
            tag: Some(img.tag.clone()),
            tag_policy: None,
        };
        images.push(AddonImage {
            path: segments,
            image: image(src, &at, &spec_image, None, false, errs),
            format: img.digest_format.unwrap_or(DigestFormat::Tag),
        });
    }
    AddonChart {
        name: name.to_string(),
        field,
        kind: a.kind,
        chart: c,
        namespace,
        wiring: a.wiring,
        replaces_kube_proxy: a.replaces_kube_proxy,
        values: a.values.clone(),
        images,
    }
}

fn kind_name(k: AddonKind) -> &'static str {
    match k {
        AddonKind::Cni => "cni",
        AddonKind::Ccm => "ccm",
        AddonKind::Other => "other",
    }
}

/// `` `a`, `b` `` of the catalog's add-ons of `kinds`, or a sentence saying there are none.
fn valid(catalog: &BTreeMap<String, AddonChart>, kinds: &[AddonKind]) -> String {
    let names: Vec<String> = catalog
        .values()
        .filter(|a| kinds.contains(&a.kind))
        .map(|a| format!("`{}`", a.name))
        .collect();
    if names.is_empty() {
        "the catalog (`spec.addons.catalog` of kaas.yaml) has none".to_string()
    } else {
        format!("the catalog has {}", names.join(", "))
    }
}

/// Checks a name against the catalog: it must exist and be of one of `kinds`.
fn known(
    src: &Source,
    field: &str,
    name: &str,
    catalog: &BTreeMap<String, AddonChart>,
    kinds: &[AddonKind],
    errs: &mut Vec<Diagnostic>,
) -> bool {
    match catalog.get(name) {
        Some(a) if kinds.contains(&a.kind) => true,
        Some(a) => {
            let hint = if a.kind == AddonKind::Cni {
                "a CNI is chosen with `cni:`, never in a list".to_string()
            } else {
                format!("name a `cni` add-on: {}", valid(catalog, kinds))
            };
            errs.push(
                src.error(field, format!("`{name}` is a `{}` add-on", kind_name(a.kind)))
                    .with_hint(hint),
            );
            false
        }
        None => {
            errs.push(src.error(field, format!("unknown add-on `{name}`")).with_hint(format!(
                "name an add-on of the platform's catalog: {}",
                valid(catalog, kinds)
            )));
            false
        }
    }
}

const NOT_CNI: [AddonKind; 2] = [AddonKind::Ccm, AddonKind::Other];

fn defaults(
    src: &Source,
    d: &raw::AddonDefaults,
    catalog: &BTreeMap<String, AddonChart>,
    installed: &Installed,
    errs: &mut Vec<Diagnostic>,
) -> AddonDefaults {
    let cni = d
        .cni
        .clone()
        .filter(|c| c == NO_CNI || known(src, "spec.addons.defaults.cni", c, catalog, &[AddonKind::Cni], errs));
    let mut providers = BTreeMap::new();
    for (p, names) in &d.providers {
        let field = format!("spec.addons.defaults.providers.{p}");
        let Some(provider) = Provider::from_name(p) else {
            errs.push(
                src.key_error(&field, format!("unknown infrastructure provider `{p}`"))
                    .with_hint(format!("supported providers: {}", Provider::names())),
            );
            continue;
        };
        let mut ok = Vec::new();
        for (i, n) in names.iter().enumerate() {
            if known(src, &format!("{field}[{i}]"), n, catalog, &NOT_CNI, errs) {
                if let Some(w) = catalog.get(n).and_then(|a| a.wiring)
                    && let Some(other) = w.provider().filter(|o| *o != provider)
                {
                    errs.push(
                        src.error(
                            &format!("{field}[{i}]"),
                            format!(
                                "`{n}` has the `{}` wiring, which is for `{}` tenants",
                                w.as_str(),
                                other.as_str()
                            ),
                        )
                        .with_hint(format!(
                            "list it in `spec.addons.defaults.providers.{}`",
                            other.as_str()
                        )),
                    );
                    continue;
                }
                ok.push(n.clone());
            }
        }
        providers.insert(provider, ok);
    }
    let mut extra = Vec::new();
    for (i, n) in d.extra.iter().enumerate() {
        if known(
            src,
            &format!("spec.addons.defaults.extra[{i}]"),
            n,
            catalog,
            &NOT_CNI,
            errs,
        ) {
            extra.push(n.clone());
        }
    }
    // The shorthand's CCM goes to every Nutanix tenant, as it did through CAAPH.
    if installed.nutanix_ccm_chart.is_some() && !d.providers.contains_key("nutanix") {
        providers.insert(Provider::Nutanix, vec![NUTANIX_CCM.to_string()]);
    }
    if installed.infrastructure.contains_key(&Provider::Nutanix) {
        // Kamaji clusters have no control-plane nodes: nothing but a chart installed from the
        // management cluster can run the Nutanix CCM before the first worker joins, and nodes
        // keep their `uninitialized` taint without it.
        let has_ccm = providers.get(&Provider::Nutanix).is_some_and(|names| {
            names.iter().any(|n| {
                catalog
                    .get(n)
                    .is_some_and(|a| a.wiring == Some(AddonWiring::NutanixCcm))
            })
        });
        if !has_ccm {
            errs.push(
                src.error("spec.clusterApi.infrastructureProviders.nutanix", "the `nutanix` provider needs its cloud controller manager in every tenant")
                    .with_hint("add `spec.cloudControllerManagers.nutanix: {repository: https://nutanix.github.io/helm/, version: 0.6.2}`, or a catalog add-on with `wiring: nutanix-ccm` listed in `spec.addons.defaults.providers.nutanix`"),
            );
        }
    }
    AddonDefaults { cni, providers, extra }
}

/// A tenant's add-ons in install order, and whether its CNI replaces kube-proxy.
pub(crate) fn tenant(
    src: &Source,
    spec: &TenantSpec,
    provider: Option<Provider>,
    platform: &Platform,
    errs: &mut Vec<Diagnostic>,
) -> (Vec<TenantAddon>, bool) {
    let chosen = spec.addons.clone().unwrap_or_default();
    let catalog = &platform.addons;
    let defaults = &platform.addon_defaults;
    let mut names: BTreeSet<String> = BTreeSet::new();
    let cni = match &chosen.cni {
        Some(c) if c == NO_CNI => None,
        Some(c) => known(src, "spec.addons.cni", c, catalog, &[AddonKind::Cni], errs).then(|| c.clone()),
        None => defaults.cni.clone().filter(|c| c != NO_CNI),
    };
    names.extend(cni.clone());
    let mut defaulted: BTreeSet<String> = defaults.extra.iter().cloned().collect();
    if let Some(p) = provider {
        defaulted.extend(defaults.providers.get(&p).into_iter().flatten().cloned());
    }
    for (i, d) in chosen.disable.iter().enumerate() {
        let field = format!("spec.addons.disable[{i}]");
        if !defaulted.remove(d) {
            let have: Vec<String> = defaulted.iter().map(|n| format!("`{n}`")).collect();
            errs.push(
                src.error(&field, format!("`{d}` is not one of this tenant's default add-ons"))
                    .with_hint(if have.is_empty() {
                        "this tenant gets no default add-ons: remove the entry (a CNI is turned off with `cni: none`)"
                            .to_string()
                    } else {
                        format!("its defaults are {}", have.join(", "))
                    }),
            );
        }
    }
    names.extend(defaulted);
    for (i, n) in chosen.extra.iter().enumerate() {
        if known(src, &format!("spec.addons.extra[{i}]"), n, catalog, &NOT_CNI, errs) {
            names.insert(n.clone());
        }
    }
    for name in &names {
        if let Some(a) = catalog.get(name)
            && let Some(w) = a.wiring
            && let Some(needs) = w.provider()
            && provider.is_some_and(|p| p != needs)
        {
            errs.push(
                src.error(
                    "spec.addons",
                    format!(
                        "`{name}` has the `{}` wiring, which is for `{}` tenants, and this tenant is not on `{}`",
                        w.as_str(),
                        needs.as_str(),
                        needs.as_str()
                    ),
                )
                .with_hint(format!("remove `{name}` from `spec.addons.extra`")),
            );
        }
    }
    for name in chosen.values.keys() {
        if !names.contains(name) {
            let have: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
            errs.push(
                src.key_error(
                    &format!("spec.addons.values.{name}"),
                    format!("values for `{name}`, which this tenant does not get"),
                )
                .with_hint(format!(
                    "this tenant's add-ons: {}",
                    if have.is_empty() {
                        "none".to_string()
                    } else {
                        have.join(", ")
                    }
                )),
            );
        }
    }
    let replaces_kube_proxy = cni
        .as_ref()
        .and_then(|c| catalog.get(c))
        .is_some_and(|a| a.replaces_kube_proxy);
    let forced = spec.control_plane.addons.as_ref().and_then(|a| a.kube_proxy);
    if replaces_kube_proxy && forced == Some(true) {
        let cni = cni.as_deref().unwrap_or_default();
        errs.push(
            src.error("spec.controlPlane.addons.kubeProxy", format!("kube-proxy is on, and the CNI `{cni}` replaces it"))
                .with_hint(format!("both would program the Service rules of every node: remove `kubeProxy: true` (kaas-gitops turns Kamaji's kube-proxy off for `{cni}`), or choose a CNI that does not replace kube-proxy")),
        );
    }
    let mut out: Vec<TenantAddon> = names
        .into_iter()
        .filter(|n| catalog.contains_key(n))
        .map(|n| TenantAddon {
            values: chosen.values.get(&n).cloned().unwrap_or_default(),
            name: n,
        })
        .collect();
    out.sort_by_key(|a| (catalog[&a.name].kind, a.name.clone()));
    (out, replaces_kube_proxy)
}
