//! The one integration test binary: real binaries, real files, real kustomize.

mod common;
mod errors;
mod git;
mod render;
