//! kaas-gitops: tenants/ + kaas.yaml -> overlays/ and flux/ for Flux, Cluster API and Kamaji.
//!
//! A pure core (`spec` -> `validate` -> `model` -> `render`) behind a thin shell (`commands`,
//! `tree`) that touches the disk.

pub mod check;
pub mod cli;
pub mod commands;
pub mod diagnostics;
pub mod git;
pub mod lock;
pub mod model;
pub mod pin;
pub mod render;
pub mod repo_lock;
pub mod spec;
pub mod stat_cache;
pub mod tenant_cache;
pub mod tree;
pub mod validate;
pub mod watch;
