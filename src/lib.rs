//! kaas-gitops: tenants/ + kaas.yaml -> overlays/ and flux/ for Flux, Cluster API and Kamaji.
//!
//! A pure core (`spec` -> `model` -> `render`, and the `validate` engine) behind a thin shell
//! (`repo`, `commands`, `cli`).

pub mod cli;
pub mod cluster;
pub mod commands;
pub mod crd_fetch;
pub mod delivery;
pub mod diagnostics;
pub mod forge;
pub mod git;
pub mod http;
pub mod layout;
pub mod model;
pub mod pin;
pub mod publish;
pub mod render;
pub mod repo;
pub mod spec;
pub mod status;
pub mod validate;
