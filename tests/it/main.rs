//! The one integration test binary: real binaries, real files, real kustomize.

mod addons;
mod backup;
mod common;
mod crash;
mod crd_fetch;
mod crd_schema;
mod errors;
mod fuzz;
mod git;
mod git_ssh;
mod hostile;
mod invariants;
mod layout;
mod objects;
mod pin;
mod providers;
mod reference;
mod registry;
mod render;
mod stat_cache;
mod status;
mod topology;
mod upgrade;
mod upstream;
mod validate;
mod watch;
