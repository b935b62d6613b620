//! kaas-gitops: tenants/ + kaas.yaml -> overlays/ and flux/ for Flux, Cluster API and Kamaji.
//!
//! A pure core (`spec` -> `model` -> `render`, and the `validate` engine) behind a thin shell
//! (`repo`, `commands`, `cli`).

pub mod cli;
pub(crate) mod cluster;
pub mod commands;
pub(crate) mod crd_fetch;
pub mod delivery;
pub mod diagnostics;
pub(crate) mod forge;
pub(crate) mod git;
pub(crate) mod http;
pub(crate) mod layout;
pub mod model;
pub mod pin;
pub mod publish;
pub mod render;
pub mod repo;
pub mod spec;
pub(crate) mod status;
pub mod validate;
