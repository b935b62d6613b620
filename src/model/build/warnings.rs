//! What a valid tenant still gets told: combinations that render and apply, yet leave the
//! tenant short of what upstream expects. Warnings never stop a run.

use crate::diagnostics::Diagnostic;
use crate::model::topology::PatchValue;
use crate::model::{KubeVersion, NodeOs, Platform, PoolSize, Provider, Tenant};
use crate::spec::raw::PatchTarget;
use crate::spec::source::Source;

/// Every warning about `t`.
pub(crate) fn tenant(src: &Source, p: &Platform, t: &Tenant) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    autoscaler_minor(src, p, t, &mut out);
    cloud_controller_manager(src, p, t, &mut out);
    ignition_gate(src, p, t, &mut out);
    machine_variables(src, p, t, &mut out);
    idle_load_balancer(src, t, &mut out);
    out
}

/// Behind a Gateway or an Ingress the API server's Service only backs the route; a
/// `LoadBalancer` Service without a VIP being moved off (`endpoint.host`) still takes an address
/// and an announcement per tenant, which the shared entry point exists to save.
fn idle_load_balancer(src: &Source, t: &Tenant, out: &mut Vec<Diagnostic>) {
    if let Some(hostname) = t.exposure.hostname()
        && t.vip.is_none()
        && t.service_type == crate::model::ServiceType::LoadBalancer
    {
        out.push(
            src.warning(
                "spec.controlPlane.service.type",
                format!("tenant `{}` is reached at `{hostname}` through the platform's entry point, yet its `LoadBalancer` Service takes an address of its own", t.name),
            )
            .with_hint("drop `service.type` (behind a Gateway or an Ingress it defaults to `ClusterIP`)"),
        );
    }
}

/// In topology mode a pool's scale-from-zero capacity annotations come from its class's
/// `machine` (`render/workers.rs`, `autoscaler_annotations`), while a class variable that a
/// `workerMachine` patch writes into the worker machine template can give the machines another
/// size. Cluster API v1.14.0's topology controller in the e2e bed showed it: a pool advertising
/// `capacity.cluster-autoscaler.kubernetes.io/cpu: "2"` cloned with `numCores: 3` from a
/// `workerCores` override. cluster-autoscaler's clusterapi provider builds an empty node group's
/// capacity from those annotations (kubernetes/autoscaler
/// `cluster-autoscaler/cloudprovider/clusterapi/clusterapi_unstructured.go`, `InstanceCapacity`),
/// so it would scale such a pool up for pods that do not fit, or not for pods that would.
fn machine_variables(src: &Source, p: &Platform, t: &Tenant, out: &mut Vec<Diagnostic>) {
    let (Some(tenant), Some(topology)) = (&t.topology, &p.topology) else {
        return;
    };
    let Some(class) = topology.class(&tenant.class) else {
        return;
    };
    let from_zero: Vec<&str> = t
        .pools
        .iter()
        .filter(|pool| matches!(pool.size, PoolSize::Autoscaled { min: 0, .. }))
        .map(|pool| pool.name.as_str())
        .collect();
    if from_zero.is_empty() {
        return;
    }
    for (name, _) in &tenant.variables {
        let reads = |v: &Option<PatchValue>| match v {
            Some(PatchValue::Variable(v)) => v == name,
            Some(PatchValue::Template(text)) => text.contains(&format!(".{name}")),
            _ => false,
        };
        let Some(patch) = class
            .patches
            .iter()
            .filter(|patch| patch.target == PatchTarget::WorkerMachine)
            .find(|patch| patch.ops.iter().any(|op| reads(&op.value)))
        else {
            continue;
        };
        out.push(
            src.warning(
                &format!("spec.topology.variables.{name}"),
                format!(
                    "`{name}` changes the worker machines (patch `{}` of class `{}`), but cluster-autoscaler sizes an empty pool ({}) from the class's `machine`: {} vCPUs, {} MiB of memory",
                    patch.name,
                    class.name,
                    from_zero.join(", "),
                    class.cpus,
                    class.memory_mib
                ),
            )
            .with_hint(
                "if the variable changes the machines' CPU or memory, give each size a class of its own with that `machine`, or keep the pool's `autoscaling.min` at 1 or more",
            ),
        );
    }
}

/// A Flatcar pool is rendered `format: ignition`, which the kubeadm bootstrap provider's webhook
/// refuses unless its `KubeadmBootstrapFormatIgnition` gate is on (see `node_os.rs`). A platform
/// that declares its gates gets an error there; one that declares none, this warning. metal-stack
/// is the platform's warning (its provider being installed is enough).
fn ignition_gate(src: &Source, p: &Platform, t: &Tenant, out: &mut Vec<Diagnostic>) {
    if p.feature_gates.is_some() || t.provider() == Provider::MetalStack {
        return;
    }
    for (i, pool) in t.pools.iter().enumerate() {
        if pool.os == NodeOs::Flatcar {
            out.push(
                src.warning(
                    &format!("spec.workers[{i}]"),
                    format!(
                        "pool `{}` boots Flatcar with Ignition, which needs Cluster API's feature gate `{}`, off by default: its webhook refuses `format: ignition` unless the kubeadm bootstrap provider runs with it",
                        pool.name,
                        super::node_os::IGNITION_GATE
                    ),
                )
                .with_hint(super::node_os::gate_hint()),
            );
        }
    }
}

/// Upstream releases cluster-autoscaler per Kubernetes minor and supports each release against
/// its own minor only (kubernetes/autoscaler `cluster-autoscaler/README.md`, "Releases": "We
/// recommend using Cluster Autoscaler with the Kubernetes control plane version for which it
/// was meant").
fn autoscaler_minor(src: &Source, p: &Platform, t: &Tenant, out: &mut Vec<Diagnostic>) {
    if !t.autoscales() {
        return;
    }
    let image = p.autoscaler_image_for(t.version);
    let Some(tag) = image.tag.as_deref().and_then(KubeVersion::parse) else {
        return;
    };
    if tag.minor != t.version.minor {
        out.push(
            src.warning(
                "spec.kubernetes.version",
                format!(
                    "cluster-autoscaler {} would run against Kubernetes {}: upstream pairs each autoscaler minor with its own Kubernetes minor",
                    image.tag.as_deref().unwrap_or_default(),
                    t.version
                ),
            )
            .with_hint(format!(
                "add `spec.clusterAutoscaler.tagsByMinor: {{\"1.{}\": v1.{}.<patch>}}` to kaas.yaml",
                t.version.minor, t.version.minor
            )),
        );
    }
}

/// The providers whose nodes start with the kubelet's `cloud-provider: external`, which taints
/// them `node.cloudprovider.kubernetes.io/uninitialized` until the provider's cloud controller
/// manager initialises them (kubernetes `staging/src/k8s.io/cloud-provider/api/well_known_taints.go`),
/// and for which kaas-gitops installs none. Their upstream CCM manifests pin the CCM to
/// control-plane nodes, which a Kamaji tenant does not have. Nutanix's is always an add-on; for the
/// others a `ccm` add-on of the tenant's silences the warning.
fn cloud_controller_manager(src: &Source, p: &Platform, t: &Tenant, out: &mut Vec<Diagnostic>) {
    let has_ccm = t.addons.iter().any(|a| {
        p.addons
            .get(&a.name)
            .is_some_and(|c| c.kind == crate::model::AddonKind::Ccm)
    });
    if has_ccm {
        return;
    }
    let (what, effect) = match t.provider() {
        // On these the kubelet knows its provider ID, so machines still become nodes; ordinary
        // pods stay Pending on the taint.
        Provider::Hetzner => ("hcloud-cloud-controller-manager", "pods stay Pending"),
        Provider::Aws => ("the AWS cloud controller manager", "pods stay Pending"),
        Provider::Packet => ("cloud-provider-equinix-metal", "pods stay Pending"),
        Provider::Openstack => ("the OpenStack cloud controller manager", "pods stay Pending"),
        // Here the CCM is the only source of the provider ID: machines never get their node.
        Provider::MetalStack => ("metal-ccm", "machines never get their node"),
        Provider::Vsphere => ("the vSphere cloud provider (CPI)", "machines never get their node"),
        Provider::Azure => (
            "the Azure cloud provider (cloud-provider-azure)",
            "machines never get their node",
        ),
        // CAPM3 sets the provider ID on the node itself, CAPT writes it into the kubelet's flags.
        // IONOS nodes write their own provider ID after joining.
        Provider::Proxmox
        | Provider::Kubevirt
        | Provider::Nutanix
        | Provider::Metal3
        | Provider::Tinkerbell
        | Provider::Ionoscloud => return,
    };
    out.push(
        src.warning(
            "spec.infrastructure.provider",
            format!(
                "nodes wait for a cloud controller manager that kaas-gitops does not install: without {what} in the tenant cluster, {effect}"
            ),
        )
        .with_hint(format!(
            "add its chart to kaas.yaml `spec.addons.catalog` with `kind: ccm` (its node selector cleared: Kamaji tenants have no control-plane nodes) and list it in `spec.addons.defaults.providers.{}` (docs/addons.md)",
            t.provider().as_str()
        )),
    );
}
