#!/usr/bin/env python3
"""Generates a repository of N varied tenants from the example kaas.yaml (used by bench/scale.py).

    bench/gen.py DIR N [--gateway]

With `--gateway` every tenant API server is behind one Gateway that kaas-gitops renders
(kaas.yaml `spec.apiServerExposure` with `default: gateway` and a `className`), and no tenant
writes an endpoint host: no VIP each, a TLSRoute each (docs/exposure.md). Without it, half the
tenants name their VIP and the rest take one from the pool."""
import os, shutil, subprocess, sys

TEMPLATE = """apiVersion: kaas-gitops.dev/v1alpha1
kind: Tenant
metadata:
  name: {name}
  labels: {{team: team-{team}}}
spec:
  kubernetes:
    version: v1.{minor}.{patch}
  controlPlane:
    replicas: {cp}
    dataStore: {datastore}
{endpoint}  infrastructure:
    provider: proxmox
    proxmox:
      sourceNode: pve{node}
      templateID: {template}
      dnsServers: [10.0.0.53]
      ipv4: {{addresses: ["10.{a}.0.10-10.{a}.0.250"], gateway: 10.{a}.0.1, prefix: 24}}
      credentialsSecret: proxmox-credentials
  workers:
    - name: md-0
      replicas: {replicas}
      machine: {{cpus: {cpus}, memoryMiB: {mem}, diskGiB: 40}}
{extra}  access:
    adminGroups: [{name}-admins]
"""

# kaas.yaml `spec.apiServerExposure` of `--gateway`, inserted before `dataStores`.
GATEWAY = """  apiServerExposure:
    default: gateway
    gateway:
      name: tenant-apis
      namespace: kaas-gateway
      hostname: "{tenant}.k8s.example.com"
      className: envoy
"""

def tenant(i, gateway=False):
    name = f"t{i:05d}"
    extra = ""
    if i % 3 == 0:
        extra = "    - name: batch\n      autoscaling: {min: 0, max: 5}\n      machine: {cpus: 8, memoryMiB: 32768}\n      labels: {workload: batch}\n"
    datastore = "{shared: default}" if i % 4 == 0 else "{dedicated: {replicas: 3, storage: 10Gi}}"
    a, b = divmod(i, 250)
    endpoint = f"    endpoint: {{host: 10.{100 + a // 250}.{a % 250}.{b + 1}}}\n" if i % 2 == 0 and not gateway else ""
    return TEMPLATE.format(name=name, team=i % 17, minor=31 + i % 4, patch=i % 9, cp=2 + i % 2,
                           datastore=datastore, endpoint=endpoint, a=i % 250, node=i % 5, template=100 + i % 3,
                           replicas=1 + i % 5, cpus=2 + 2 * (i % 3), mem=4096 * (1 + i % 4), extra=extra)

def main():
    args = [a for a in sys.argv[1:] if a != "--gateway"]
    if len(args) != 2:
        sys.exit("usage: bench/gen.py DIR N [--gateway]")
    main_args(args[0], int(args[1]), gateway="--gateway" in sys.argv[1:])

def main_args(root, n, gateway=False):
    here = os.path.dirname(os.path.abspath(__file__))
    if os.path.exists(root):
        shutil.rmtree(root)
    os.makedirs(os.path.join(root, "tenants"))
    platform = open(os.path.join(here, "..", "kaas.yaml")).read()
    # Enough VIPs for every tenant that does not set one.
    platform = platform.replace('pools: ["10.0.4.100-10.0.4.199"]', 'pools: ["10.200.0.0/16"]')
    if gateway:
        assert "  dataStores: [default]\n" in platform, "the example kaas.yaml has `dataStores`"
        platform = platform.replace("  dataStores: [default]\n", GATEWAY + "  dataStores: [default]\n", 1)
    open(os.path.join(root, "kaas.yaml"), "w").write(platform)
    for i in range(n):
        open(os.path.join(root, "tenants", f"t{i:05d}.yaml"), "w").write(tenant(i, gateway))
    # A GitOps repository is a git repository; the stat cache lives in its git folder.
    subprocess.run(["git", "init", "-q", root], check=True)

if __name__ == "__main__":
    main()
