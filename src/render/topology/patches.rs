//! A ClusterClass's variables and patches: kaas-gitops's own first (datastore, VIP, SSH keys,
//! and what the provider needs of the shared templates), then the class's own from kaas.yaml.
//! Cluster API applies them in this order, so a class's patch may build on the built-in ones.

use crate::map;
use crate::model::{ClassPatch, ClusterClass, LoadBalancer, PatchValue};
use crate::render::node::Node;
use crate::render::providers::{self, EndpointField};
use crate::render::shared::CLOUD_PROVIDER_EXTERNAL;
use crate::spec::raw::{PatchTarget, VariableSchema};

/// The tenant's DataStore name.
pub(crate) const VAR_DATASTORE: &str = "kaasDataStore";
/// The control plane's `dataStoreSchema` and `dataStoreUsername` (`model::datastore_names`),
/// when kaas-gitops names them: the KamajiControlPlaneTemplate is shared, so each Cluster
/// passes its own. Not required: a tenant left on Kamaji's UID sets neither.
pub(crate) const VAR_DATASTORE_SCHEMA: &str = "kaasDataStoreSchema";
/// See [`VAR_DATASTORE_SCHEMA`].
pub(crate) const VAR_DATASTORE_USERNAME: &str = "kaasDataStoreUsername";
/// The tenant's VIP and port, `{host, port}`, when known at render time.
pub(crate) const VAR_ENDPOINT: &str = "kaasEndpoint";
/// The tenant's cluster DNS address (`[ip]`), for the control plane's
/// `addons.coreDNS.dnsServiceIPs`. A variable, not a patch on the builtin: Cluster API v1.14.0
/// offers the service CIDRs (`core/reconcilers/topology/cluster/patches/variables/variables.go`,
/// `builtin.cluster.network.services`), but its patch templates have only sprig's hermetic
/// functions (`patches/inline/json_patch_generator.go`), which cannot count addresses in a CIDR.
pub(crate) const VAR_DNS: &str = "kaasDNSServiceIPs";
/// The tenant's `sshAuthorizedKeys`.
pub(crate) const VAR_SSH_KEYS: &str = "kaasSSHAuthorizedKeys";
/// A pool's labels for its kubelet's `--node-labels` (`k=v,...`), set per MachineDeployment.
pub(crate) const VAR_NODE_LABELS: &str = "kaasNodeLabels";
/// A pool's taints (`[{key, value, effect}]`) for kubeadm's node registration, set per
/// MachineDeployment.
pub(crate) const VAR_NODE_TAINTS: &str = "kaasNodeTaints";

/// The `selector` of each patch target.
pub(super) struct Selectors {
    /// The shared `KamajiControlPlaneTemplate`.
    pub control_plane: Node,
    /// The class's infrastructure cluster template.
    pub infrastructure_cluster: Node,
    /// The shared worker `KubeadmConfigTemplate`.
    pub worker_bootstrap: Node,
    /// The class's worker machine template.
    pub worker_machine: Node,
}

impl Selectors {
    fn of(&self, target: PatchTarget) -> &Node {
        match target {
            PatchTarget::ControlPlane => &self.control_plane,
            PatchTarget::InfrastructureCluster => &self.infrastructure_cluster,
            PatchTarget::WorkerBootstrap => &self.worker_bootstrap,
            PatchTarget::WorkerMachine => &self.worker_machine,
        }
    }
}

/// `spec.variables`: the built-in ones, then the class's.
pub(super) fn variables(class: &ClusterClass) -> Node {
    let variable = |name: &str, required: bool, schema: Node| {
        map! {"name" => name, "required" => required, "schema" => map! {"openAPIV3Schema" => schema}}
    };
    let mut out = vec![
        variable(
            VAR_DATASTORE,
            true,
            map! {"type" => "string", "description" => "The tenant's DataStore (set by kaas-gitops)."},
        ),
        variable(
            VAR_DATASTORE_SCHEMA,
            false,
            map! {"type" => "string", "description" => "The control plane's schema (etcd key prefix, SQL database) in its DataStore (set by kaas-gitops)."},
        ),
        variable(
            VAR_DATASTORE_USERNAME,
            false,
            map! {"type" => "string", "description" => "The control plane's user in its DataStore (set by kaas-gitops)."},
        ),
        variable(
            VAR_ENDPOINT,
            false,
            map! {
                "type" => "object",
                "description" => "The tenant's VIP and API server port (set by kaas-gitops).",
                "properties" => map! {
                    "host" => map! {"type" => "string"},
                    "port" => map! {"type" => "integer", "minimum" => 1u32, "maximum" => 65535u32},
                },
                "required" => vec!["host", "port"],
            },
        ),
        variable(
            VAR_DNS,
            false,
            map! {
                "type" => "array",
                "description" => "The tenant's cluster DNS address, the 10th of its service CIDR (set by kaas-gitops).",
                "items" => map! {"type" => "string"},
            },
        ),
        variable(
            VAR_SSH_KEYS,
            false,
            map! {
                "type" => "array",
                "description" => "SSH keys put on every node (set by kaas-gitops).",
                "items" => map! {"type" => "string"},
            },
        ),
        variable(
            VAR_NODE_LABELS,
            false,
            map! {
                "type" => "string",
                "description" => "The pool's labels as the kubelet's --node-labels (set by kaas-gitops per MachineDeployment).",
            },
        ),
        variable(
            VAR_NODE_TAINTS,
            false,
            map! {
                "type" => "array",
                "description" => "The pool's node taints, registered by kubeadm (set by kaas-gitops per MachineDeployment).",
                "items" => map! {
                    "type" => "object",
                    "properties" => map! {
                        "key" => map! {"type" => "string"},
                        "value" => map! {"type" => "string"},
                        "effect" => map! {"type" => "string", "enum" => vec!["NoSchedule", "PreferNoSchedule", "NoExecute"]},
                    },
                    "required" => vec!["key", "effect"],
                },
            },
        ),
    ];
    for v in &class.variables {
        out.push(variable(&v.name, v.required, schema(&v.schema)));
    }
    Node::Seq(out)
}

/// A variable's OpenAPI schema as written in kaas.yaml.
fn schema(s: &VariableSchema) -> Node {
    map! {
        "type" => s.kind.as_str(),
        "description" => s.description.clone(),
        "minimum" => s.minimum,
        "maximum" => s.maximum,
        "minLength" => s.min_length.map(|v| i64::try_from(v).unwrap_or(i64::MAX)),
        "maxLength" => s.max_length.map(|v| i64::try_from(v).unwrap_or(i64::MAX)),
        "pattern" => s.pattern.clone(),
        "enum" => s.enum_values.as_ref().map(|e| Node::Seq(e.iter().map(Node::from).collect())),
        "default" => s.default.as_ref().map(Node::from),
        "items" => s.items.as_deref().map(schema),
        "minItems" => s.min_items.map(|v| i64::try_from(v).unwrap_or(i64::MAX)),
        "maxItems" => s.max_items.map(|v| i64::try_from(v).unwrap_or(i64::MAX)),
        "properties" => s.properties.as_ref().map(|p| Node::Map(p.iter().map(|(k, v)| (k.clone(), schema(v))).collect())),
        "required" => s.required.clone(),
    }
}

fn op(kind: &str, path: &str, value: Node) -> Node {
    map! {"op" => kind, "path" => path, "value" => value}
}

fn op_from(kind: &str, path: &str, from: (&str, &str)) -> Node {
    map! {"op" => kind, "path" => path, "valueFrom" => map! {from.0 => from.1}}
}

fn definition(selector: &Node, ops: Vec<Node>) -> Node {
    map! {"selector" => selector.clone(), "jsonPatches" => ops}
}

fn patch(name: &str, description: &str, enabled_if: Option<String>, definitions: Vec<Node>) -> Node {
    map! {
        "name" => name,
        "description" => description,
        "enabledIf" => enabled_if,
        "definitions" => definitions,
    }
}

fn when_set(variable: &str) -> Option<String> {
    Some(format!("{{{{ if .{variable} }}}}true{{{{ end }}}}"))
}

/// `spec.patches`.
pub(super) fn patches(load_balancer: LoadBalancer, class: &ClusterClass, sel: &Selectors) -> Node {
    let mut out = vec![patch(
        "kaas-datastore",
        "The tenant's DataStore.",
        None,
        vec![definition(
            &sel.control_plane,
            vec![op_from(
                "add",
                "/spec/template/spec/dataStoreName",
                ("variable", VAR_DATASTORE),
            )],
        )],
    )];
    out.push(patch(
        "kaas-datastore-names",
        "The control plane's schema and user in its DataStore, when kaas-gitops names them.",
        when_set(VAR_DATASTORE_SCHEMA),
        vec![definition(
            &sel.control_plane,
            vec![
                op_from(
                    "add",
                    "/spec/template/spec/dataStoreSchema",
                    ("variable", VAR_DATASTORE_SCHEMA),
                ),
                op_from(
                    "add",
                    "/spec/template/spec/dataStoreUsername",
                    ("variable", VAR_DATASTORE_USERNAME),
                ),
            ],
        )],
    ));
    let mut endpoint_ops = vec![op_from(
        "add",
        "/spec/template/spec/network/serviceAddress",
        ("variable", &format!("{VAR_ENDPOINT}.host")),
    )];
    if let Some(key) = load_balancer.address_annotation() {
        // The whole map in one op (an `add` below a missing map fails), with the provider's
        // own Service annotations, which its patch would otherwise replace this map with.
        let mut template = format!("{}: \"{{{{ .{VAR_ENDPOINT}.host }}}}\"\n", json_string(key));
        for (k, v) in providers::control_plane(&class.infrastructure).service_annotations {
            template.push_str(&format!("{}: {}\n", json_string(k), json_string(&v)));
        }
        endpoint_ops.push(op_from(
            "add",
            "/spec/template/spec/network/serviceAnnotations",
            ("template", &template),
        ));
    }
    let mut endpoint = vec![definition(&sel.control_plane, endpoint_ops)];
    match providers::endpoint_field(class.infrastructure.provider()) {
        Some(EndpointField::ControlPlaneEndpoint) => endpoint.push(definition(
            &sel.infrastructure_cluster,
            vec![op_from(
                "add",
                "/spec/template/spec/controlPlaneEndpoint",
                ("variable", VAR_ENDPOINT),
            )],
        )),
        Some(EndpointField::FixedIp) => endpoint.push(definition(
            &sel.infrastructure_cluster,
            vec![
                op_from(
                    "add",
                    "/spec/template/spec/apiServerFixedIP",
                    ("variable", &format!("{VAR_ENDPOINT}.host")),
                ),
                op_from(
                    "add",
                    "/spec/template/spec/apiServerPort",
                    ("variable", &format!("{VAR_ENDPOINT}.port")),
                ),
            ],
        )),
        None => {}
    }
    out.push(patch(
        "kaas-endpoint",
        "The tenant's VIP, when it has one.",
        when_set(VAR_ENDPOINT),
        endpoint,
    ));
    // Kamaji derives the address on create only, and the provider's every reconcile copies this
    // field over it (cluster-api-control-plane-provider-kamaji v0.20.0
    // `controllers/kamajicontrolplane_controller_tcp.go:93-94`): as in explicit mode, it is
    // written. Not required, so a Cluster rendered before the variable existed stays valid.
    out.push(patch(
        "kaas-dns",
        "The tenant's cluster DNS address: CoreDNS's Service and the kubelets' clusterDNS.",
        when_set(VAR_DNS),
        vec![definition(
            &sel.control_plane,
            vec![op_from(
                "add",
                "/spec/template/spec/addons/coreDNS/dnsServiceIPs",
                ("variable", VAR_DNS),
            )],
        )],
    ));
    out.push(patch(
        "kaas-ssh-keys",
        "The tenant's SSH keys on every node.",
        when_set(VAR_SSH_KEYS),
        vec![definition(
            &sel.worker_bootstrap,
            vec![op_from(
                "add",
                "/spec/template/spec/users",
                (
                    "template",
                    &format!("- name: root\n  sshAuthorizedKeys: {{{{ toJson .{VAR_SSH_KEYS} }}}}\n"),
                ),
            )],
        )],
    ));
    let provider = provider_patch(class, sel);
    out.extend(provider);
    out.extend(node_patches(class, sel));
    out.extend(class.patches.iter().map(|p| user_patch(p, sel)));
    Node::Seq(out)
}

/// What the provider needs of the shared templates, the same wiring explicit mode renders.
fn provider_patch(class: &ClusterClass, sel: &Selectors) -> Option<Node> {
    let cp = providers::control_plane(&class.infrastructure);
    let node = providers::node(&class.infrastructure, crate::model::NodeOs::CloudInit);
    let mut definitions = Vec::new();
    let mut cp_ops = Vec::new();
    if !cp.service_annotations.is_empty() {
        let annotations = Node::Map(
            cp.service_annotations
                .iter()
                .map(|(k, v)| ((*k).to_string(), Node::from(v)))
                .collect(),
        );
        cp_ops.push(op("add", "/spec/template/spec/network/serviceAnnotations", annotations));
    }
    if cp.external_cloud {
        cp_ops.push(op(
            "add",
            "/spec/template/spec/controllerManager",
            map! {"extraArgs" => vec![CLOUD_PROVIDER_EXTERNAL]},
        ));
    }
    if !cp_ops.is_empty() {
        definitions.push(definition(&sel.control_plane, cp_ops));
    }
    let mut node_ops = Vec::new();
    if !node.files.is_empty() {
        node_ops.push(op("add", "/spec/template/spec/files", Node::from(node.files.clone())));
    }
    let registration = map! {
        "name" => node.node_name,
        "kubeletExtraArgs" => Node::from(node.kubelet_args()).or_absent(),
    }
    .or_absent();
    if registration != Node::Absent {
        node_ops.push(op(
            "add",
            "/spec/template/spec/joinConfiguration",
            map! {"nodeRegistration" => registration},
        ));
    }
    if !node.post_kubeadm_commands.is_empty() {
        node_ops.push(op(
            "add",
            "/spec/template/spec/postKubeadmCommands",
            Node::from(node.post_kubeadm_commands.clone()),
        ));
    }
    if !node.pre_kubeadm_commands.is_empty() {
        node_ops.push(op(
            "add",
            "/spec/template/spec/preKubeadmCommands",
            Node::from(node.pre_kubeadm_commands.clone()),
        ));
    }
    if !node_ops.is_empty() {
        definitions.push(definition(&sel.worker_bootstrap, node_ops));
    }
    if class.infrastructure.provider() == crate::model::Provider::Metal3 {
        // Each tenant has its own Metal3DataTemplate, named after its cluster.
        definitions.push(definition(
            &sel.worker_machine,
            vec![op_from(
                "add",
                "/spec/template/spec/dataTemplate",
                ("template", providers::METAL3_DATA_TEMPLATE_REF),
            )],
        ));
    }
    let name = class.infrastructure.provider().as_str();
    (!definitions.is_empty()).then(|| {
        patch(
            &format!("kaas-{name}"),
            &format!("What the {name} provider needs of the shared Kamaji and kubeadm templates."),
            None,
            definitions,
        )
    })
}

/// A pool's labels and taints on its Nodes, through the worker `KubeadmConfigTemplate` (the
/// kubelet's `--node-labels`, kubeadm's `nodeRegistration.taints`), as explicit mode renders them.
/// Not through the topology's own fields: Cluster API v1.14 syncs Machine labels to the Node
/// only in its own domains (`util/labels/helpers.go`, `GetManagedLabels`), and its webhook refuses
/// `machineDeployments[].taints` unless the alpha gate `MachineTaintPropagation` is on
/// (`internal/webhooks/cluster.go`, `feature/feature.go`). They follow the provider's patch, which
/// may have written `joinConfiguration` (an `add` of it here would replace that).
fn node_patches(class: &ClusterClass, sel: &Selectors) -> Vec<Node> {
    let node = providers::node(&class.infrastructure, crate::model::NodeOs::CloudInit);
    let has_args = !node.kubelet_args().is_empty();
    let has_registration = node.node_name.is_some() || has_args;
    let registration = "/spec/template/spec/joinConfiguration/nodeRegistration";
    let mut out = Vec::new();
    if !has_registration {
        out.push(patch(
            "kaas-node-registration",
            "Room for the pool's node labels and taints.",
            Some(format!(
                "{{{{ if or .{VAR_NODE_LABELS} .{VAR_NODE_TAINTS} }}}}true{{{{ end }}}}"
            )),
            vec![definition(
                &sel.worker_bootstrap,
                vec![op(
                    "add",
                    "/spec/template/spec/joinConfiguration",
                    map! {"nodeRegistration" => map! {}},
                )],
            )],
        ));
    }
    let label_arg = format!("name: node-labels\nvalue: {{{{ toJson .{VAR_NODE_LABELS} }}}}\n");
    let labels_op = if has_args {
        op_from(
            "add",
            &format!("{registration}/kubeletExtraArgs/-"),
            ("template", &label_arg),
        )
    } else {
        op_from(
            "add",
            &format!("{registration}/kubeletExtraArgs"),
            ("template", &format!("- {}", label_arg.replace('\n', "\n  ").trim_end())),
        )
    };
    out.push(patch(
        "kaas-node-labels",
        "The pool's labels on its Nodes (the kubelet's --node-labels).",
        when_set(VAR_NODE_LABELS),
        vec![definition(&sel.worker_bootstrap, vec![labels_op])],
    ));
    out.push(patch(
        "kaas-node-taints",
        "The pool's taints on its Nodes (kubeadm's node registration).",
        when_set(VAR_NODE_TAINTS),
        vec![definition(
            &sel.worker_bootstrap,
            vec![op_from(
                "add",
                &format!("{registration}/taints"),
                ("variable", VAR_NODE_TAINTS),
            )],
        )],
    ));
    out
}

fn user_patch(p: &ClassPatch, sel: &Selectors) -> Node {
    let ops: Vec<Node> = p
        .ops
        .iter()
        .map(|o| {
            let kind = o.op.as_str();
            match &o.value {
                None => map! {"op" => kind, "path" => &o.path},
                Some(PatchValue::Fixed(v)) => op(kind, &o.path, Node::from(v)),
                Some(PatchValue::Variable(v)) => op_from(kind, &o.path, ("variable", v)),
                Some(PatchValue::Template(t)) => op_from(kind, &o.path, ("template", t)),
            }
        })
        .collect();
    map! {
        "name" => &p.name,
        "description" => p.description.clone(),
        "enabledIf" => p.enabled_if.clone(),
        "definitions" => vec![definition(sel.of(p.target), ops)],
    }
}

/// `text` as a JSON (and so YAML) string literal.
fn json_string(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}
