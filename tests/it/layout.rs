//! The source layout keeps its promises (issue 19): the core (`spec`, `model`, `render`, the
//! `validate` engine) never reaches into the shell (`commands`, `cli`, clap, the terminal), the
//! pure core (`spec`, `model`, `render`) names no disk, process or clock, no module is split
//! into `x.rs` beside `x/`, and no two files import each other, directly or around a loop.
//! Reads `src/**/*.rs` as text: every `crate::` and `super::` path outside `#[cfg(test)]` code
//! is an edge from its file to the file of the module it names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The folders of the core, and what they must never name.
const CORE: [&str; 6] = ["spec", "model", "render", "layout", "delivery", "validate"];
const SHELL: [&str; 5] = [
    "crate::commands",
    "crate::cli",
    "clap::",
    "IsTerminal",
    "std::io::stdout",
];
/// The pure core (the `validate` engine reads the rendered files itself), and what it must never
/// name: the disk, the process, the clock, the modules that use them. `layout` is where the
/// rendered tree puts things; `delivery` computes each tenant's artifact from a rendered tree.
const PURE: [&str; 5] = ["spec", "model", "render", "layout", "delivery"];
const IMPURE: [&str; 10] = [
    "crate::repo",
    "crate::git",
    "crate::pin",
    "crate::validate",
    "std::fs",
    "fs_err",
    "std::env",
    "std::process",
    "std::time",
    "std::net::TcpStream",
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, as (module path, text without test code and comments).
fn files(dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path
                .strip_prefix(src())
                .expect("under src")
                .to_string_lossy()
                .replace('\\', "/");
            let module = rel.trim_end_matches(".rs");
            let module = module.strip_suffix("/mod").unwrap_or(module);
            let module = match module {
                "lib" | "main" => String::new(),
                m => m.replace('/', "::"),
            };
            let text = std::fs::read_to_string(&path).expect("a source file");
            let text = text.split("#[cfg(test)]").next().unwrap_or_default();
            let text: String = text
                .lines()
                .map(|l| l.split_once("//").map_or(l, |(code, _)| code))
                .collect::<Vec<_>>()
                .join("\n");
            out.push((module, text));
        }
    }
}

/// The paths a use tree starting at `rest` (just after `crate::`/`super::`) names.
fn use_paths(prefix: &str, rest: &str, out: &mut Vec<String>) {
    let rest = rest.trim_start();
    if let Some(inner) = rest.strip_prefix('{') {
        let mut depth = 0usize;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    use_paths(prefix, &inner[start..i], out);
                    return;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    use_paths(prefix, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        return;
    }
    let ident: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    if ident.is_empty() || ident == "self" {
        out.push(prefix.to_string());
        return;
    }
    let path = if prefix.is_empty() {
        ident.clone()
    } else {
        format!("{prefix}::{ident}")
    };
    match rest[ident.len()..].strip_prefix("::") {
        Some(tail) => use_paths(&path, tail, out),
        None => out.push(path),
    }
}

/// File -> the files it imports.
fn graph() -> (BTreeMap<String, BTreeSet<String>>, BTreeMap<String, String>) {
    let mut sources = Vec::new();
    files(&src(), &mut sources);
    let modules: BTreeSet<String> = sources.iter().map(|(m, _)| m.clone()).collect();
    // `pub use child::item;` in a module: `module::item` is the child's (a `mod.rs` that
    // re-exports would otherwise hide the file an import really reaches, and a loop with it).
    let mut reexports: BTreeMap<String, String> = BTreeMap::new();
    for (module, text) in &sources {
        for (i, _) in text
            .match_indices("pub use ")
            .chain(text.match_indices("pub(crate) use "))
        {
            let rest = &text[i..];
            let rest = &rest[rest.find("use ").expect("a use") + 4..];
            let rest = &rest[..rest.find(';').unwrap_or(rest.len())];
            let (prefix, rest) = if let Some(r) = rest.strip_prefix("crate::") {
                (String::new(), r)
            } else if let Some(r) = rest.strip_prefix("super::") {
                (module.rsplit_once("::").map_or("", |(p, _)| p).to_string(), r)
            } else {
                (module.clone(), rest.strip_prefix("self::").unwrap_or(rest))
            };
            let mut named = Vec::new();
            use_paths(&prefix, rest, &mut named);
            for path in named {
                let Some((_, item)) = path.rsplit_once("::") else {
                    continue;
                };
                let exported = if module.is_empty() {
                    item.to_string()
                } else {
                    format!("{module}::{item}")
                };
                if exported != path {
                    reexports.insert(exported, path);
                }
            }
        }
    }
    let mut edges = BTreeMap::new();
    for (module, text) in &sources {
        let mut named = Vec::new();
        for (i, _) in text.match_indices("crate::") {
            if !text[..i].ends_with("kaas_gitops::") && !text[..i].ends_with(':') {
                use_paths("", &text[i + "crate::".len()..], &mut named);
            }
        }
        let parent = module.rsplit_once("::").map_or("", |(p, _)| p).to_string();
        for (i, _) in text.match_indices("super::") {
            if !text[..i].ends_with(':') {
                use_paths(&parent, &text[i + "super::".len()..], &mut named);
            }
        }
        let targets: BTreeSet<String> = named
            .iter()
            .filter_map(|path| resolve(path, &modules, &reexports))
            .filter(|t| t != module && !t.is_empty())
            .collect();
        edges.insert(module.clone(), targets);
    }
    (edges, sources.into_iter().collect())
}

/// The file `path` reaches: the longest prefix of it that is a file's module, followed through
/// that module's re-exports.
fn resolve(path: &str, modules: &BTreeSet<String>, reexports: &BTreeMap<String, String>) -> Option<String> {
    let mut path = path.to_string();
    // Re-exports chain at most a few times; the bound keeps a `pub use self::x as x` finite.
    for _ in 0..8 {
        let mut m = path.as_str();
        let module = loop {
            if modules.contains(m) {
                break m.to_string();
            }
            m = m.rsplit_once("::")?.0;
        };
        let item = path[module.len()..]
            .trim_start_matches("::")
            .split("::")
            .next()
            .unwrap_or_default();
        let key = if module.is_empty() {
            item.to_string()
        } else {
            format!("{module}::{item}")
        };
        match reexports.get(&key) {
            Some(target) if !item.is_empty() => path = target.clone(),
            _ => return Some(module),
        }
    }
    None
}

/// The strongly connected components with more than one file (Tarjan).
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        let edges = s.edges;
        for w in edges.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[test]
fn no_import_cycle_between_files() {
    let (edges, _) = graph();
    assert!(edges.len() > 50, "the source files were found: {}", edges.len());
    assert!(
        edges["render::tenant"].contains("model"),
        "imports are read: render/tenant.rs uses the model"
    );
    let found: Vec<Vec<String>> = cycles(&edges)
        .into_iter()
        .map(|files| {
            // Each file of the loop with the files of the loop it imports.
            let each = |f: &String| {
                let inside: Vec<&str> = edges[f]
                    .iter()
                    .filter(|t| files.contains(t))
                    .map(String::as_str)
                    .collect();
                format!("{f} -> {}", inside.join(", "))
            };
            files.iter().map(each).collect()
        })
        .collect();
    assert!(
        found.is_empty(),
        "files that import each other (around a loop): {found:#?}"
    );
}

/// The same graph between the top-level folders (`render`, `delivery`, `model`, ...): one
/// folder importing another that imports it back is a loop too, even when no two of their
/// files close one.
#[test]
fn no_import_cycle_between_folders() {
    let (edges, _) = graph();
    let top = |m: &str| m.split("::").next().unwrap_or_default().to_string();
    let mut folders: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, targets) in &edges {
        let entry = folders.entry(top(from)).or_default();
        entry.extend(
            targets
                .iter()
                .map(|t| top(t))
                .filter(|t| *t != top(from) && !t.is_empty()),
        );
    }
    folders.remove("");
    let found = cycles(&folders);
    assert!(
        found.is_empty(),
        "folders that import each other (around a loop): {found:?}"
    );
}

#[test]
fn a_re_export_is_an_edge() {
    // `crate::delivery::TenantSource` is `delivery/tree.rs`'s, re-exported by `delivery/mod.rs`:
    // the import reaches tree.rs, and a loop through it is a loop.
    let (edges, _) = graph();
    assert!(
        edges["publish::sources"].contains("delivery::tree"),
        "{:?}",
        edges["publish::sources"]
    );
}

#[test]
fn the_cycle_check_sees_a_cycle() {
    let mut edges = BTreeMap::new();
    edges.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    edges.insert("b".to_string(), BTreeSet::from(["c".to_string()]));
    edges.insert("c".to_string(), BTreeSet::from(["a".to_string()]));
    edges.insert("d".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(
        cycles(&edges),
        vec![vec!["a".to_string(), "b".to_string(), "c".to_string()]]
    );
}

#[test]
fn the_core_never_imports_the_shell() {
    let (_, sources) = graph();
    let within = |module: &str, folders: &[&str]| {
        folders
            .iter()
            .any(|c| module == *c || module.starts_with(&format!("{c}::")))
    };
    let mut violations = Vec::new();
    for (module, text) in &sources {
        let mut forbidden: Vec<&str> = Vec::new();
        if within(module, &CORE) {
            forbidden.extend(SHELL);
        }
        if within(module, &PURE) {
            forbidden.extend(IMPURE);
        }
        for needle in forbidden {
            if text.contains(needle) {
                violations.push(format!("{module} names `{needle}`"));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "core modules that reach into the shell (or, for spec, model and render, the disk): {violations:#?}"
    );
}

#[test]
fn no_module_file_beside_a_folder_of_the_same_name() {
    // `x.rs` beside `x/` splits one module over two places; a module with children is `x/mod.rs`.
    let (_, sources) = graph();
    let beside: Vec<String> = sources
        .keys()
        .filter(|m| !m.is_empty())
        .map(|m| m.replace("::", "/"))
        .filter(|m| src().join(format!("{m}.rs")).is_file() && src().join(m).is_dir())
        .collect();
    assert!(beside.is_empty(), "files beside a folder of the same name: {beside:?}");
}
