"""Every provider through the real Cluster API webhooks (issue 32), in the CAPI bed of lib/capi.py.

The mixed fleet of the main bed's scenario (lib/scenarios.py `mixed`: every provider fixture of
tests/fixtures/providers/ and the topology fixture's tenants, whose ClusterClasses cover Proxmox,
Hetzner, KubeVirt, Nutanix, AWS, vSphere, OpenStack, Metal³ and IONOS Cloud; Azure tenants in explicit mode) is rendered; the platform's ClusterClasses and templates,
then every tenant's Cluster API objects, are applied as kustomize-controller applies them
(server-side apply) through the real defaulting and validating webhooks of the core and kubeadm
bootstrap managers; a second apply must change no spec. The real ClusterClass controller must
reconcile each class (its templates resolved through the providers' contract labels, its
variables ready), or the Cluster webhook refuses every tenant of that class.

No controller of the infrastructure providers runs here: their CRDs are installed with their
storage version and the contract labels of their upstream `config/crd/kustomization.yaml`, read
from the provider's Go module where this machine's proxy serves it, else cited below.
"""
import json, os

from capi import contract_labels, kustomize, mod_dir, second_apply_changes_nothing
from scenarios import mixed

CAPI_GROUPS = ("cluster.x-k8s.io", "infrastructure.cluster.x-k8s.io", "controlplane.cluster.x-k8s.io",
               "bootstrap.cluster.x-k8s.io")

# kind prefix of the provider's CRDs -> its Go module (labels read from its files), or the labels
# of its config/crd/kustomization.yaml at the release the fleet pins, where the module is not
# served here (read from the repository at that tag).
PROVIDERS = {
    "AWS": "sigs.k8s.io/cluster-api-provider-aws/v2@v2.11.1",
    "Kubevirt": "sigs.k8s.io/cluster-api-provider-kubevirt@v0.11.2",
    "Nutanix": "github.com/nutanix-cloud-native/cluster-api-provider-nutanix@v1.10.3",
    "Packet": "sigs.k8s.io/cluster-api-provider-packet@v0.9.0",
    # syself/cluster-api-provider-hetzner v1.1.8 config/crd/kustomization.yaml commonlabels
    "Hetzner": {"cluster.x-k8s.io/v1beta1": "v1beta1"},
    "HCloud": {"cluster.x-k8s.io/v1beta1": "v1beta1"},
    # metal-stack/cluster-api-provider-metal-stack v0.8.0 config/crd/kustomization.yaml labels
    "MetalStack": {"cluster.x-k8s.io/v1beta2": "v1alpha1", "cluster.x-k8s.io/v1beta1": "v1alpha1"},
    "OpenStack": "sigs.k8s.io/cluster-api-provider-openstack@v0.14.7",
    "Metal3": "github.com/metal3-io/cluster-api-provider-metal3@v1.13.2",
    "Tinkerbell": "github.com/tinkerbell/cluster-api-provider-tinkerbell@v0.7.0",
    # kubernetes-sigs/cluster-api-provider-azure v1.26.0 config/crd/patches/capicontract_in_*.yaml
    "Azure": {"cluster.x-k8s.io/v1beta1": "v1beta1"},
    # ionos-cloud/cluster-api-provider-ionoscloud v0.6.3 config/crd/kustomization.yaml commonLabels
    "IonosCloud": {"cluster.x-k8s.io/v1beta1": "v1alpha1"},
    # CAPV keeps its CRD kustomization in config/default/crd (it has no config/crd).
    "VSphere": ("sigs.k8s.io/cluster-api-provider-vsphere@v1.16.1", "config/default/crd/kustomization.yaml"),
}

# The Go modules of PROVIDERS whose files the labels are read from (lib/modules.py).
MODULES = tuple(v if isinstance(v, str) else v[0] for v in PROVIDERS.values() if not isinstance(v, dict))


def label_providers(bed):
    """The contract labels on the infrastructure CRDs the bed installed without them."""
    c = bed.c
    labelled = []
    for crd in c.get("crd")["items"]:
        if crd["spec"]["group"] != "infrastructure.cluster.x-k8s.io":
            continue
        kind = crd["spec"]["names"]["kind"]
        source = next((v for k, v in PROVIDERS.items() if kind.startswith(k)), None)
        if source is None or any(n.startswith("cluster.x-k8s.io/v1") for n in crd["metadata"].get("labels", {})):
            continue
        if isinstance(source, dict):
            labels = source
        else:
            module, path = source if isinstance(source, tuple) else (source, "config/crd/kustomization.yaml")
            labels = contract_labels(os.path.join(mod_dir(bed.gomodcache, module), path))
        c.kubectl("label", "--overwrite", "crd", crd["metadata"]["name"], *[f"{k}={v}" for k, v in labels.items()])
        labelled.append(kind)
    return labelled


def capi_objects(docs):
    return [d for d in docs if d["kind"] == "Namespace" or d["apiVersion"].split("/")[0] in CAPI_GROUPS]


def apply(c, objs):
    objs = sorted(objs, key=lambda d: d["kind"] != "Namespace")
    return c.kubectl("apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-",
                     input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}), check=False)


def every_provider_through_webhooks(e):
    bed = e.capi_bed
    c = bed.c
    fails = []
    c.install_crds(keep_installed=True)
    labelled = label_providers(bed)
    print(f"  contract labels put on {len(labelled)} provider CRDs: {', '.join(sorted(set(k[:12] for k in labelled)))}", flush=True)
    f = e.new_fleet("capi-mixed", lambda d: mixed(d, 0))
    f.render()
    platform = capi_objects(kustomize(os.path.join(f.dir, "overlays", "platform")))
    r = apply(c, platform)
    if r.returncode != 0:
        return [f"the platform's ClusterClasses and templates were refused: {r.stderr.strip()[:800]}"]
    classes = [d["metadata"]["name"] for d in platform if d["kind"] == "ClusterClass"]
    ns = next(d["metadata"]["namespace"] for d in platform if d["kind"] == "ClusterClass")

    def reconciled():
        got = {k["metadata"]["name"]: k for k in c.get("-n", ns, "clusterclasses.cluster.x-k8s.io")["items"]}
        pending = [n for n in classes if not (
            got.get(n, {}).get("status", {}).get("observedGeneration") == got.get(n, {}).get("metadata", {}).get("generation")
            and any(x["type"] == "VariablesReady" and x["status"] == "True" for x in got[n]["status"].get("conditions", [])))]
        if pending:
            raise RuntimeError(f"not reconciled: {[(n, [(x['type'], x['status'], x.get('message', '')[:160]) for x in got.get(n, {}).get('status', {}).get('conditions', []) if x['status'] != 'True']) for n in pending]}")
        return True
    try:
        c.wait_for("every ClusterClass reconciled by the real ClusterClass controller", reconciled, timeout=120, interval=2)
    except TimeoutError as ex:
        return [str(ex)]
    print(f"  {len(classes)} ClusterClasses reconciled: {', '.join(classes)}", flush=True)
    have = {n["metadata"]["name"] for n in c.get("namespace")["items"]}
    per_provider, n = {}, 0
    for t in sorted(os.listdir(os.path.join(f.dir, "overlays", "tenants"))):
        if t in have:
            print(f"  tenant {t}: its namespace is an earlier scenario's; skipped", flush=True)
            continue
        objs = capi_objects(kustomize(os.path.join(f.dir, "overlays", "tenants", t)))
        infra = next((d["kind"] for d in objs if d["apiVersion"].startswith("infrastructure.")),
                     next((d["spec"]["topology"]["classRef"]["name"] for d in objs
                           if d["kind"] == "Cluster" and d["spec"].get("topology")), "?"))
        r = apply(c, objs)
        if r.returncode != 0:
            fails.append(f"tenant {t} ({infra}): refused by the CAPI webhooks: {r.stderr.strip()[:600]}")
            continue
        n += len(objs)
        per_provider.setdefault(infra, []).append(t)
        fails += [f"tenant {t}: {x}" for x in second_apply_changes_nothing(c, objs)]
    print(f"  {n} rendered objects of {sum(len(v) for v in per_provider.values())} tenants accepted by the real webhooks: "
          + "; ".join(f"{k}: {', '.join(v)}" for k, v in sorted(per_provider.items())), flush=True)
    if not per_provider:
        fails.append("no tenant of the mixed fleet was applied")
    return fails


def run(e, r, ok):
    name = ("capi: every provider fixture and ClusterClass of the mixed fleet passes the real webhooks; the ClusterClasses "
            "are reconciled; a second apply changes no spec")
    if ok:
        r.run(name, every_provider_through_webhooks, e)
    else:
        r.not_run(name, "the bootstrap scenario before it failed")
