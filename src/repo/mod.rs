//! Everything that touches the repository's disk: reading the inputs, writing the rendered
//! tree, `kaas.lock`, the process lock, the caches, and what a file change means for `watch`.

pub mod inputs;
pub mod lock;
pub mod pause_point;
pub mod portable;
pub mod process_lock;
pub mod stat_cache;
pub mod tenant_cache;
pub mod tree;
pub mod watch;
