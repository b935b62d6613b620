//! The Linux-only fast paths and their portable fallbacks.
//!
//! Two system calls kaas-gitops uses exist only on Linux: `syncfs` (one call makes a whole batch
//! of written files and renames durable, `tree.rs`) and `O_PATH` (a folder opened only to stat
//! the names in it, `stat_cache.rs`). Elsewhere (macOS) the fallbacks run: an `fsync` per file
//! and per changed folder, and folders opened read-only. The fallbacks are compiled on Linux too
//! and chosen there with `KAAS_PORTABLE_FS=1`, so the Linux test suite runs them.

/// Whether the portable fallbacks run: always off Linux; on Linux when `KAAS_PORTABLE_FS=1`.
#[cfg(target_os = "linux")]
pub fn enabled() -> bool {
    static PORTABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PORTABLE.get_or_init(|| std::env::var_os("KAAS_PORTABLE_FS").is_some_and(|v| v == "1"))
}

/// Whether the portable fallbacks run: always off Linux; on Linux when `KAAS_PORTABLE_FS=1`.
#[cfg(not(target_os = "linux"))]
pub fn enabled() -> bool {
    true
}
