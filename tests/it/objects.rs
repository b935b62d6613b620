//! The typed objects of `kaas_gitops::render::objects` name only fields the upstream CRDs
//! define: a fully-populated instance of each (every optional field set, every list with an
//! item) is serialized to JSON and every key is looked up in the `openAPIV3Schema` of the
//! served version in `KAAS_CRDS/<group>/<plural>.yaml`. A misspelt field (`dataStorName`) would
//! be pruned by the API server, silently; here it fails.

use std::collections::BTreeMap;

use kaas_gitops::render::node::Node;
use kaas_gitops::render::objects::ObjectMeta;
use kaas_gitops::render::objects::artifact::{
    ArtifactGenerator, ArtifactGeneratorSpec, CopyOperation, GeneratorSource, OutputArtifact,
};
use kaas_gitops::render::objects::cluster::{
    ApiEndpoint, Bootstrap, ClassRef, Cluster, ClusterNetwork, ClusterSpec, ClusterVariable, ContractRef,
    ControlPlaneTopology, Deletion, LabelSelector, MachineDeployment, MachineDeploymentSpec, MachineDeploymentTopology,
    MachineDeploymentVariables, MachineSpec, MachineTemplateMetadata, MachineTemplateSpec, NetworkRanges, Topology,
    TopologyMetadata, WorkersTopology,
};
use kaas_gitops::render::objects::controlplane::{
    Addons, Component, CoreDns, Defaults, Deployment, GatewayRoute, IngressRoute, KamajiControlPlane,
    KamajiControlPlaneSpec, Kubelet, Network, Resources,
};
use kaas_gitops::render::objects::helm::{
    Action, Dependency as HelmDependency, HelmChartSpec, HelmChartTemplate, HelmRelease, HelmReleaseSpec, KubeConfig,
    Remediation, SecretKeyRef, SourceRef, Strategy, Uninstall, ValuesReference,
};
use kaas_gitops::render::objects::kustomize::{
    Dependency, HealthCheck, HealthCheckExpr, Kustomization, KustomizationSpec,
};
use serde_json::Value;

use crate::common::crds_dir;

fn s(v: &str) -> String {
    v.to_string()
}

/// A free-form map (labels, annotations, values): its keys are not the CRD's to name.
fn free() -> Node {
    Node::Map(vec![(s("example.com/key"), Node::Str(s("value")))])
}

fn meta() -> ObjectMeta {
    ObjectMeta {
        name: s("n"),
        namespace: Some(s("ns")),
        labels: Some(free()),
        annotations: Some(free()),
    }
}

fn contract_ref() -> ContractRef {
    ContractRef {
        api_group: s("g"),
        kind: s("K"),
        name: s("n"),
    }
}

fn deletion() -> Deletion {
    Deletion {
        node_drain_timeout_seconds: 1,
    }
}

fn ranges() -> NetworkRanges {
    NetworkRanges {
        cidr_blocks: vec![s("10.0.0.0/16")],
    }
}

fn cluster() -> Cluster {
    Cluster::new(
        meta(),
        ClusterSpec {
            cluster_network: ClusterNetwork {
                api_server_port: 6443,
                pods: ranges(),
                services: ranges(),
            },
            control_plane_ref: Some(contract_ref()),
            infrastructure_ref: Some(contract_ref()),
            topology: Some(Topology {
                class_ref: ClassRef {
                    name: s("c"),
                    namespace: Some(s("ns")),
                },
                version: s("v1.33.4"),
                control_plane: ControlPlaneTopology { replicas: 1 },
                workers: Some(WorkersTopology {
                    machine_deployments: vec![MachineDeploymentTopology {
                        class: s("w"),
                        name: s("md-0"),
                        metadata: Some(TopologyMetadata {
                            labels: Some(free()),
                            annotations: Some(free()),
                        }),
                        replicas: Some(1),
                        failure_domain: Some(s("zone-a")),
                        variables: Some(MachineDeploymentVariables {
                            overrides: vec![ClusterVariable {
                                name: s("v"),
                                value: free(),
                            }],
                        }),
                        deletion: deletion(),
                    }],
                }),
                variables: vec![ClusterVariable {
                    name: s("v"),
                    value: free(),
                }],
            }),
            control_plane_endpoint: Some(ApiEndpoint {
                host: s("a.example.com"),
                port: 6443,
            }),
        },
    )
}

fn machine_deployment() -> MachineDeployment {
    MachineDeployment::new(
        meta(),
        MachineDeploymentSpec {
            cluster_name: s("c"),
            replicas: Some(1),
            selector: LabelSelector { match_labels: free() },
            template: MachineTemplateSpec {
                metadata: MachineTemplateMetadata { labels: free() },
                spec: MachineSpec {
                    cluster_name: s("c"),
                    version: s("v1.33.4"),
                    bootstrap: Bootstrap {
                        config_ref: contract_ref(),
                    },
                    infrastructure_ref: contract_ref(),
                    failure_domain: Some(s("zone-a")),
                    deletion: deletion(),
                },
            },
        },
    )
}

fn kamaji_control_plane() -> KamajiControlPlane {
    let component = || {
        let quantities = BTreeMap::from([(s("cpu"), s("1"))]);
        Some(Component {
            extra_args: Some(vec![s("--v=2")]),
            resources: Some(Resources {
                requests: Some(quantities.clone()),
                limits: Some(quantities),
            }),
            extra_volume_mounts: Some(vec![kaas_gitops::map! {
                "name" => "v", "mountPath" => "/etc/v", "readOnly" => true,
            }]),
        })
    };
    KamajiControlPlane::new(
        meta(),
        KamajiControlPlaneSpec {
            version: s("v1.33.4"),
            replicas: 1,
            data_store_name: s("default"),
            data_store_schema: Some(s("kaas_acme")),
            data_store_username: Some(s("kaas_acme")),
            data_store_overrides: Vec::new(),
            addons: Addons {
                core_dns: Some(CoreDns {
                    dns_service_ips: vec![s("10.96.0.10")],
                }),
                kube_proxy: Some(Defaults {}),
                konnectivity: Some(Defaults {}),
            },
            api_server: component(),
            controller_manager: component(),
            scheduler: component(),
            kubelet: Kubelet {
                cgroupfs: s("systemd"),
                preferred_address_types: vec![s("InternalIP")],
            },
            network: Network {
                service_type: s("LoadBalancer"),
                service_address: Some(s("10.0.0.1")),
                service_annotations: Some(BTreeMap::from([(s("example.com/key"), s("v"))])),
                dns_service_ips: vec![s("10.96.0.10")],
                gateway: Some(GatewayRoute {
                    name: s("gw"),
                    namespace: s("gw-system"),
                    hostname: s("a.example.com:6443"),
                    section_name: s("kube-apiserver"),
                }),
                ingress: Some(IngressRoute {
                    class_name: s("haproxy"),
                    hostname: s("a.example.com:443"),
                    extra_annotations: BTreeMap::from([(s("example.com/key"), s("v"))]),
                }),
                cert_sans: vec![s("a.example.com")],
            },
            deployment: Some(Deployment {
                extra_volumes: vec![
                    kaas_gitops::map! {"name" => "v", "configMap" => kaas_gitops::map! {"name" => "cm"}},
                ],
            }),
        },
    )
}

fn helm_release() -> HelmRelease {
    let action = || Action {
        create_namespace: Some(true),
        crds: Some(s("CreateReplace")),
        remediation: Some(Remediation { retries: 3 }),
        strategy: Some(Strategy {
            name: s("RetryOnFailure"),
            retry_interval: s("2m"),
        }),
    };
    HelmRelease::new(
        meta(),
        HelmReleaseSpec {
            interval: s("10m"),
            release_name: s("r"),
            target_namespace: Some(s("kube-system")),
            storage_namespace: Some(s("kube-system")),
            kube_config: Some(KubeConfig {
                secret_ref: SecretKeyRef {
                    name: s("t-kubeconfig"),
                    key: s("value"),
                },
            }),
            depends_on: vec![HelmDependency { name: s("t-cilium") }],
            chart: HelmChartTemplate {
                spec: HelmChartSpec {
                    chart: s("c"),
                    version: s("1"),
                    source_ref: source_ref(),
                    interval: s("1h"),
                },
            },
            install: action(),
            // `createNamespace` is an install field only.
            upgrade: Action {
                create_namespace: None,
                ..action()
            },
            uninstall: Some(Uninstall {
                timeout: s("2m"),
                disable_wait: true,
            }),
            values: free(),
            values_from: vec![ValuesReference {
                kind: s("Secret"),
                name: s("n"),
                values_key: s("k"),
                target_path: s("a.b"),
                literal: true,
            }],
        },
    )
}

fn source_ref() -> SourceRef {
    SourceRef {
        kind: s("HelmRepository"),
        name: s("n"),
        namespace: s("ns"),
    }
}

fn kustomization() -> Kustomization {
    Kustomization::new(
        meta(),
        KustomizationSpec {
            interval: s("10m"),
            path: s("./p"),
            prune: true,
            suspend: Some(true),
            health_checks: Some(vec![HealthCheck {
                api_version: s("v1"),
                kind: s("K"),
                name: s("n"),
                namespace: s("ns"),
            }]),
            health_check_exprs: Some(vec![HealthCheckExpr {
                api_version: s("g/v1"),
                kind: s("K"),
                current: s("true"),
            }]),
            timeout: s("10m"),
            retry_interval: s("2m"),
            depends_on: Some(vec![Dependency { name: s("d") }]),
            source_ref: SourceRef {
                kind: s("GitRepository"),
                ..source_ref()
            },
            kube_config: Some(KubeConfig {
                secret_ref: SecretKeyRef {
                    name: s("t-kubeconfig"),
                    key: s("value"),
                },
            }),
        },
    )
}

/// The `openAPIV3Schema` of the served version `object` is written in, from
/// `KAAS_CRDS/<group>/<plural>.yaml`.
fn served_schema(object: &Value, plural: &str) -> Value {
    let api_version = object["apiVersion"].as_str().expect("an apiVersion");
    let (group, version) = api_version.split_once('/').expect("a group/version");
    let file = crds_dir().join(group).join(format!("{plural}.yaml"));
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let crd: Value = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    assert_eq!(crd["spec"]["names"]["kind"], object["kind"], "{}", file.display());
    crd["spec"]["versions"]
        .as_array()
        .expect("a CRD has versions")
        .iter()
        .find(|v| v["name"] == version && v["served"] == true)
        .unwrap_or_else(|| panic!("{} serves no {version}", file.display()))["schema"]["openAPIV3Schema"]
        .clone()
}

/// Every key of `value` under `path` that `schema` does not define, and how many it does. An
/// object schema without `properties` is free-form (labels, Helm values, preserved unknown
/// fields): its keys are not checked, and neither is what lies below them.
fn unknown_fields(value: &Value, schema: &Value, path: &str, known: &mut usize, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
                return;
            };
            for (key, child) in map {
                let at = format!("{path}.{key}");
                match properties.get(key) {
                    Some(s) => {
                        *known += 1;
                        unknown_fields(child, s, &at, known, out);
                    }
                    None => out.push(at),
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                unknown_fields(item, &schema["items"], &format!("{path}[{i}]"), known, out);
            }
        }
        _ => {}
    }
}

/// source-watcher's generator (`delivery.mode: artifact`), checked against the CRD
/// tests/upstream/artifactgenerator.sh generates.
fn artifact_generator() -> ArtifactGenerator {
    ArtifactGenerator::new(
        meta(),
        ArtifactGeneratorSpec {
            sources: vec![GeneratorSource {
                alias: s("repo"),
                kind: s("GitRepository"),
                name: s("flux-system"),
                namespace: s("flux-system"),
            }],
            artifacts: vec![OutputArtifact {
                name: s("kaas-tenant-acme"),
                origin_revision: s("@repo"),
                copy: vec![CopyOperation {
                    from: s("@repo/base/tenant"),
                    to: s("@artifact/base/"),
                }],
            }],
        },
    )
}

#[test]
fn every_field_of_every_typed_object_is_in_its_crd() {
    let objects = [
        ("clusters", serde_json::to_value(cluster())),
        ("machinedeployments", serde_json::to_value(machine_deployment())),
        ("kamajicontrolplanes", serde_json::to_value(kamaji_control_plane())),
        ("helmreleases", serde_json::to_value(helm_release())),
        ("kustomizations", serde_json::to_value(kustomization())),
        ("artifactgenerators", serde_json::to_value(artifact_generator())),
    ];
    let mut problems = Vec::new();
    for (plural, object) in objects {
        let object = object.expect("a typed object serializes");
        let schema = served_schema(&object, plural);
        let mut known = 0;
        let mut unknown = Vec::new();
        unknown_fields(&object, &schema, "", &mut known, &mut unknown);
        // The walk reached the spec: the schema was the right one, not an empty shell.
        assert!(known >= 10, "{plural}: only {known} fields checked");
        problems.extend(unknown.into_iter().map(|f| {
            format!(
                "{} ({plural}): `{}` is not in its CRD",
                object["kind"].as_str().unwrap_or_default(),
                &f[1..]
            )
        }));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
