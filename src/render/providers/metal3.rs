//! Metal³ (CAPM3 v1.13.2, API `v1beta2`). Kamaji's provider only checks
//! `Metal3Cluster.spec.controlPlaneEndpoint` against the API server's address, it never sets it
//! (cluster-api-control-plane-provider-kamaji v0.20.0
//! `controllers/kamajicontrolplane_controller_cluster_patch.go`, `checkGenericCluster`), and
//! CAPM3's webhook refuses a Metal3Cluster without it: so the VIP is rendered (and a tenant
//! without one is refused). No cloud provider runs: CAPM3 matches nodes by the provider ID the
//! kubelet takes from the host's metadata, `metal3://<namespace>/<host>/<machine>`, which a
//! `Metal3DataTemplate` makes (`baremetal/metal3data_manager.go`); kaas-gitops renders one per
//! tenant, in either mode.

use super::{ClusterContext, ClusterParts, NodeWiring, Size};
use crate::map;
use crate::model::{Metal3Cluster, Tenant};
use crate::render::Object;
use crate::render::node::Node;
use crate::render::shared::tmeta;

/// The kubelet's provider ID, as the Kamaji provider's Metal³ example gives it; cloud-init
/// expands it from the metadata the tenant's `Metal3DataTemplate` writes.
const PROVIDER_ID: &str = "metal3://{{ ds.meta_data.providerid }}";
/// The `Metal3DataTemplate` kind's API version.
const DATA_TEMPLATE_API: &str = "infrastructure.cluster.x-k8s.io/v1beta2";

/// `Metal3Cluster.spec`: the VIP, and no cloud provider (CAPM3 sets provider IDs itself).
pub(super) fn cluster(_m: &Metal3Cluster, ctx: &ClusterContext<'_>) -> ClusterParts {
    ClusterParts {
        annotations: Vec::new(),
        spec: map! {
            "controlPlaneEndpoint" => ctx.endpoint.filter(|_| ctx.tenant.is_some()).map(|(host, port)| map! {"host" => host, "port" => port}),
            "cloudProviderEnabled" => false,
        },
    }
}

/// `Metal3MachineTemplate.spec.template.spec`: the image, the hosts to choose from, and the
/// tenant's data template (named after the tenant; a class patch names it in topology mode).
pub(super) fn machine(m: &Metal3Cluster, _size: &Size, tenant: Option<&str>) -> Node {
    map! {
        "image" => map! {
            "url" => &m.image_url,
            "checksum" => &m.checksum,
            "checksumType" => &m.checksum_type,
            "diskFormat" => &m.format,
        },
        "hostSelector" => (!m.host_selector.is_empty()).then(|| map! {"matchLabels" => &m.host_selector}),
        "dataTemplate" => tenant.map(|name| map! {"name" => name}),
    }
}

/// The provider ID from the host's metadata; no external cloud provider.
pub(super) fn node() -> NodeWiring {
    NodeWiring {
        provider_id: Some(PROVIDER_ID),
        ..NodeWiring::default()
    }
}

/// The tenant's `Metal3DataTemplate`, which gives each host's metadata its `providerid`.
pub(super) fn data_template(t: &Tenant) -> Object {
    Object {
        kind: "Metal3DataTemplate",
        name: t.name.clone(),
        body: map! {
            "apiVersion" => DATA_TEMPLATE_API,
            "kind" => "Metal3DataTemplate",
            "metadata" => tmeta(t, &t.name),
            "spec" => map! {"clusterName" => &t.name},
        },
    }
}

/// The JSON patch value that names the tenant's data template in a class's machine template.
pub(crate) const DATA_TEMPLATE_REF: &str = "name: \"{{ .builtin.cluster.name }}\"\n";
