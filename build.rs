//! Gives the binary a fingerprint of the code that decides what a render writes, so a tenant
//! whose inputs are unchanged is re-rendered all the same when that code changed (a rebuilt
//! binary of the same version may render differently). Deterministic: the same sources give
//! the same fingerprint on every machine.

use std::path::{Path, PathBuf};

/// The folders and files whose code shapes the rendered output.
const RENDERING_CODE: [&str; 3] = ["src/spec", "src/model", "src/render"];

fn main() {
    let mut files = Vec::new();
    for root in RENDERING_CODE {
        println!("cargo:rerun-if-changed={root}");
        collect(Path::new(root), &mut files);
    }
    files.sort();
    // FNV-1a over path and content: no dependency, and the value is no secret.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for file in files {
        let bytes = std::fs::read(&file).expect("a source file is readable");
        for b in file.to_string_lossy().bytes().chain([0]).chain(bytes) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    println!("cargo:rustc-env=KAAS_RENDER_CODE={hash:016x}");
}

fn collect(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).expect("a source folder is readable") {
            collect(&entry.expect("a source folder entry").path(), out);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_path_buf());
    }
}
