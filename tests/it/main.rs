//! The one integration test binary: real binaries, real files, real kustomize.

mod common;
mod errors;
mod git;
mod pin;
mod registry;
mod render;
mod watch;
