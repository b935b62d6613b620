//! What the platform installs for tenants' infrastructure (`spec.clusterApi` and
//! `spec.cloudControllerManagers` of `kaas.yaml`): infrastructure and addon providers, their
//! controllers' config Secrets, and the charts a provider needs in every tenant.

use std::collections::BTreeMap;

use crate::diagnostics::Diagnostic;
use crate::model::build::fields::chart;
use crate::model::build::fields::release;
use crate::model::build::names::is_dns1123_subdomain;
use crate::model::{Chart, Provider};
use crate::spec::raw::PlatformSpec;
use crate::spec::source::Source;

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
    /// IPAM providers and their releases.
    pub ipam: BTreeMap<String, String>,
}

/// The release of the in-cluster IPAM provider installed for Proxmox when `kaas.yaml` names
/// none: the one CAPMOX v0.9.0 is tested with (its `go.mod` and `test/e2e/config` pin
/// sigs.k8s.io/cluster-api-ipam-provider-in-cluster v1.1.0), the first implementing the v1beta2
/// contract of Cluster API v1.14. CAPMOX's `docs/Usage.md` installs it with
/// `clusterctl init --infrastructure proxmox --ipam in-cluster`: its cluster controller creates
/// `InClusterIPPool`s for the nodes' addresses.
pub(crate) const IN_CLUSTER_IPAM_RELEASE: &str = "v1.1.0";

/// What each infrastructure provider's components need from its config Secret: the variables
/// without a default in the release's `infrastructure-components.yaml`, which
/// cluster-api-operator substitutes from the Secret's keys (v0.28.0,
/// `internal/controller/phases.go` `secretReader`) and refuses to install without.
/// Proxmox's are needed unless every tenant names its own credentials (see `tenant_rules`).
pub(crate) fn required_variables(p: Provider) -> &'static [&'static str] {
    match p {
        // cluster-api-provider-aws v2.11.1 infrastructure-components.yaml: the manager's
        // credentials Secret is `${AWS_B64ENCODED_CREDENTIALS}`.
        Provider::Aws => &["AWS_B64ENCODED_CREDENTIALS"],
        // cluster-api-provider-packet v0.9.0 infrastructure-components.yaml.
        Provider::Packet => &["PACKET_API_KEY"],
        // cluster-api-provider-nutanix v1.10.3 infrastructure-components.yaml.
        Provider::Nutanix => &["NUTANIX_ENDPOINT", "NUTANIX_USER", "NUTANIX_PASSWORD"],
        // cluster-api-provider-metal-stack v0.8.0 infrastructure-components.yaml.
        Provider::MetalStack => &["METAL_API_URL", "METAL_API_HMAC", "METAL_API_HMAC_AUTH_TYPE"],
        // cluster-api-provider-vsphere v1.16.1 config/base/credentials.yaml: the manager's
        // default credentials Secret (tenants name their own in `identityRef`).
        Provider::Vsphere => &["VSPHERE_USERNAME", "VSPHERE_PASSWORD"],
        // cluster-api-provider-openstack v0.14.7 config/: every variable has a default.
        // cluster-api-provider-metal3 v1.13.2 and -tinkerbell v0.7.0 config/: every variable has a
        // default (CAPT's `TINKERBELL_IP` is empty unless set: see docs/providers.md).
        Provider::Proxmox
        | Provider::Hetzner
        | Provider::Kubevirt
        | Provider::Openstack
        | Provider::Metal3
        | Provider::Tinkerbell
        // cluster-api-provider-ionoscloud v0.6.3 config/: no variables.
        | Provider::Ionoscloud
        // cluster-api-provider-azure v1.26.0 config/: every variable has a default.
        | Provider::Azure => &[],
    }
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
    for provider in infrastructure_providers.keys() {
        let keys = required_variables(*provider);
        if keys.is_empty() || provider_config_secrets.contains_key(provider) {
            continue;
        }
        let name = provider.as_str();
        errs.push(
            src.error(
                &format!("spec.clusterApi.infrastructureProviders.{name}"),
                format!("the `{name}` provider cannot install without its credentials"),
            )
            .with_hint(format!(
                "add `spec.clusterApi.providerConfigSecrets: {{{name}: <secret>}}` and create that Secret in namespace `{}` with the keys {}: cluster-api-operator substitutes them into the provider's components",
                crate::model::Platform::provider_namespace(*provider),
                keys.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", "),
            )),
        );
    }
    let mut ipam = BTreeMap::new();
    for (name, ver) in &capi.ipam_providers {
        let field = format!("spec.clusterApi.ipamProviders.{name}");
        if name != "in-cluster" {
            errs.push(
                src.error(&field, format!("unknown IPAM provider `{name}`"))
                    .with_hint("supported IPAM providers: `in-cluster` (cluster-api-ipam-provider-in-cluster)"),
            );
        }
        release(src, &field, ver, errs);
        ipam.insert(name.clone(), ver.clone());
    }
    if infrastructure_providers.contains_key(&Provider::Proxmox) {
        ipam.entry("in-cluster".to_string())
            .or_insert_with(|| IN_CLUSTER_IPAM_RELEASE.to_string());
    }
    Installed {
        ipam,
        infrastructure: infrastructure_providers,
        config_secrets: provider_config_secrets,
        addons: capi.addon_providers.clone(),
        nutanix_ccm_chart,
    }
}
