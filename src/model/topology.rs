//! ClusterClasses the platform defines and the class a topology-mode tenant is built from.

use crate::model::Infrastructure;
use serde_json::Value;

use crate::spec::raw::{PatchOpKind, PatchTarget, VariableSchema};

/// The platform's ClusterClasses.
#[derive(Debug, Clone)]
pub struct Topology {
    /// Namespace of the classes and their templates.
    pub namespace: String,
    /// The classes, in file order.
    pub classes: Vec<ClusterClass>,
}

impl Topology {
    /// The class named `name`.
    pub fn class(&self, name: &str) -> Option<&ClusterClass> {
        self.classes.iter().find(|c| c.name == name)
    }
}

/// One ClusterClass.
#[derive(Debug, Clone)]
pub struct ClusterClass {
    /// Name.
    pub name: String,
    /// The provider and its settings.
    pub infrastructure: Infrastructure,
    /// vCPUs of a worker.
    pub cpus: u32,
    /// Memory of a worker in MiB.
    pub memory_mib: u32,
    /// Disk of a worker in GiB.
    pub disk_gib: u32,
    /// User variables, in file order.
    pub variables: Vec<ClassVariable>,
    /// User patches, in file order.
    pub patches: Vec<ClassPatch>,
}

/// A user-defined variable.
#[derive(Debug, Clone)]
pub struct ClassVariable {
    /// Name.
    pub name: String,
    /// Whether every tenant must set it.
    pub required: bool,
    /// The OpenAPI schema.
    pub schema: VariableSchema,
}

/// A user-defined patch.
#[derive(Debug, Clone)]
pub struct ClassPatch {
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// `enabledIf` template.
    pub enabled_if: Option<String>,
    /// Target template.
    pub target: PatchTarget,
    /// Operations.
    pub ops: Vec<ClassPatchOp>,
}

/// One JSON patch operation.
#[derive(Debug, Clone)]
pub struct ClassPatchOp {
    /// The operation.
    pub op: PatchOpKind,
    /// The JSON pointer.
    pub path: String,
    /// Where the value comes from (`None` for `remove`).
    pub value: Option<PatchValue>,
}

/// The value of a patch operation.
#[derive(Debug, Clone)]
pub enum PatchValue {
    /// A fixed value.
    Fixed(Value),
    /// A variable's value.
    Variable(String),
    /// A Go template over the variables.
    Template(String),
}

/// A topology-mode tenant's class and variable values.
#[derive(Debug, Clone)]
pub struct TenantTopology {
    /// The class name.
    pub class: String,
    /// Values the tenant sets, sorted by name.
    pub variables: Vec<(String, Value)>,
}
