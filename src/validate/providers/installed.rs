//! What the platform installs for tenants' infrastructure (`spec.clusterApi` and
//! `spec.cloudControllerManagers` of `kaas.yaml`): infrastructure and addon providers, their
//! controllers' config Secrets, and the charts a provider needs in every tenant.

use std::collections::BTreeMap;

use crate::diagnostics::Diagnostic;
use crate::model::{Chart, Provider};
use crate::spec::raw::PlatformSpec;
use crate::spec::source::Source;
use crate::validate::names::is_dns1123_subdomain;
use crate::validate::platform::{chart, release};

/// The providers the platform installs.
pub(crate) struct Installed {
    /// Infrastructure providers and their releases.
    pub infrastructure: BTreeMap<Provider, String>,
    /// Their controllers' config Secrets.
    pub config_secrets: BTreeMap<Provider, String>,
    /// Addon providers and their releases.
    pub addons: BTreeMap<String, String>,
    /// The Nutanix CCM chart.
    pub nutanix_ccm_chart: Option<Chart>,
}

/// Validates what `kaas.yaml` installs.
pub(crate) fn installed(src: &Source, spec: &PlatformSpec, errs: &mut Vec<Diagnostic>) -> Installed {
    let capi = &spec.cluster_api;
    let mut infrastructure_providers = BTreeMap::new();
    for (name, ver) in &capi.infrastructure_providers {
        let field = format!("spec.clusterApi.infrastructureProviders.{name}");
        match Provider::from_name(name) {
            Some(p) => {
                infrastructure_providers.insert(p, ver.clone());
            }
            None => errs.push(
                src.error(&field, format!("unknown infrastructure provider `{name}`"))
                    .with_hint(format!("supported providers: {}", Provider::names())),
            ),
        }
        release(src, &field, ver, errs);
    }
    let mut provider_config_secrets = BTreeMap::new();
    for (name, secret) in &capi.provider_config_secrets {
        let field = format!("spec.clusterApi.providerConfigSecrets.{name}");
        match Provider::from_name(name) {
            Some(p) if infrastructure_providers.contains_key(&p) => {
                provider_config_secrets.insert(p, secret.clone());
            }
            _ => errs.push(
                src.error(&field, format!("`{name}` is not an installed infrastructure provider"))
                    .with_hint("name a provider of `spec.clusterApi.infrastructureProviders`"),
            ),
        }
        if !is_dns1123_subdomain(secret) {
            errs.push(src.error(&field, format!("`{secret}` is not a Secret name")));
        }
    }
    for (name, ver) in &capi.addon_providers {
        let field = format!("spec.clusterApi.addonProviders.{name}");
        if name != "helm" {
            errs.push(
                src.error(&field, format!("unknown addon provider `{name}`"))
                    .with_hint("supported addon providers: `helm` (cluster-api-addon-provider-helm)"),
            );
        }
        release(src, &field, ver, errs);
    }
    let nutanix_ccm_chart = spec
        .cloud_controller_managers
        .as_ref()
        .and_then(|c| c.nutanix.as_ref())
        .map(|c| {
            chart(
                src,
                "spec.cloudControllerManagers.nutanix",
                "nutanix-cloud-provider",
                c,
                errs,
            )
        });
    if infrastructure_providers.contains_key(&Provider::Nutanix) {
        // Kamaji clusters have no control-plane nodes, so nothing but a chart installed from
        // the management cluster can run the Nutanix CCM before the first worker joins.
        if nutanix_ccm_chart.is_none() {
            errs.push(
                src.error("spec.clusterApi.infrastructureProviders.nutanix", "the `nutanix` provider needs its cloud controller manager chart")
                    .with_hint("add `spec.cloudControllerManagers.nutanix: {repository: https://nutanix.github.io/helm/, version: 0.6.2}`"),
            );
        }
        if !capi.addon_providers.contains_key("helm") {
            errs.push(
                src.error("spec.clusterApi.infrastructureProviders.nutanix", "the `nutanix` provider needs the Helm addon provider (CAAPH)")
                    .with_hint("add `spec.clusterApi.addonProviders: {helm: v0.6.4}`: it installs the Nutanix cloud controller manager into each tenant"),
            );
        }
    }
    Installed {
        infrastructure: infrastructure_providers,
        config_secrets: provider_config_secrets,
        addons: capi.addon_providers.clone(),
        nutanix_ccm_chart,
    }
}
