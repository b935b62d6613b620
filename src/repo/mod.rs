//! Everything that touches the repository's disk: reading the inputs, writing the rendered
//! tree, `kaas.lock`, the process lock, the caches, and what a file change means for `watch`.

pub mod inputs;
pub(crate) mod lock;
pub mod pause_point;
pub(crate) mod portable;
pub mod process_lock;
pub(crate) mod stat_cache;
pub(crate) mod tenant_cache;
pub(crate) mod tree;
pub(crate) mod watch;
