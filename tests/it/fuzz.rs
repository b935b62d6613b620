//! Property tests standing in for `cargo fuzz` (which needs nightly): arbitrary and mutated
//! tenant files through the strict loader, and whole repositories through the pure pipeline
//! (load -> validate -> render). Properties: no panic; every error points into a file it was
//! given; a successful render writes only under `overlays/` and `flux/` (and `kaas.lock`),
//! a tenant only under its own folder and Flux entry, and every file it renders parses as YAML.
//!
//! `PROPTEST_CASES` sets the number of cases (default 32 so `cargo test` stays fast); the long
//! run for issue 9 used `PROPTEST_CASES=75000` (see docs/hardening.md). Cases that once failed are
//! kept below as `r9_*` tests.
//!
//! See: issues/9

use std::collections::{BTreeMap, BTreeSet};

use kaas_gitops::commands::pipeline;
use kaas_gitops::diagnostics::Diagnostic;
use kaas_gitops::render::Options;
use kaas_gitops::repo::inputs::Inputs;
use kaas_gitops::spec::load;
use kaas_gitops::spec::raw::TenantFile;
use proptest::prelude::*;

use crate::common::project_root;

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32);
    ProptestConfig {
        cases,
        // Shrinking a pipeline case is slow and the mutations are already small.
        max_shrink_iters: 256,
        ..ProptestConfig::default()
    }
}

fn example(rel: &str) -> Vec<u8> {
    std::fs::read(project_root().join(rel)).expect("the example repository's file")
}

fn example_tenants() -> Vec<(String, Vec<u8>)> {
    ["acme", "globex", "initech"]
        .into_iter()
        .map(|n| (n.to_string(), example(&format!("tenants/{n}.yaml"))))
        .collect()
}

/// Tokens that matter to YAML or to our loader, spliced into valid files.
const TOKENS: &[&str] = &[
    "&a ",
    "*a",
    "{",
    "}",
    "[",
    "]",
    "- ",
    ": ",
    "\t",
    "\0",
    "---\n",
    "...\n",
    "!!binary ",
    "!x ",
    "'",
    "\"",
    "#",
    "? ",
    "|",
    ">-\n",
    "~",
    "0x1F",
    "1e999",
    "-1",
    "99999999999999999999",
    "\n",
    "  ",
    "<<: ",
    "null",
    "yes",
    "\u{feff}",
    "\r\n",
    "\u{2028}",
    "é",
    "name: ",
    "../",
    "%2f",
    "/etc/passwd",
];

/// One edit of a file.
#[derive(Debug, Clone)]
enum Mutation {
    Insert(usize, u8),
    Token(usize, usize),
    Delete(usize, usize),
    Replace(usize, u8),
    DuplicateLine(usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Mutation::Insert(at, b)),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(at, t)| Mutation::Token(at, t)),
        (any::<usize>(), 1..40usize).prop_map(|(at, n)| Mutation::Delete(at, n)),
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Mutation::Replace(at, b)),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn mutate(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let len = bytes.len();
        let at = |i: usize| if len == 0 { 0 } else { i % (len + 1) };
        match *m {
            Mutation::Insert(i, b) => bytes.insert(at(i), b),
            Mutation::Token(i, t) => {
                let i = at(i);
                bytes.splice(i..i, TOKENS[t].bytes());
            }
            Mutation::Delete(i, n) => {
                let i = at(i);
                bytes.drain(i..(i + n).min(len));
            }
            Mutation::Replace(i, b) if len > 0 => bytes[i % len] = b,
            Mutation::Replace(..) => {}
            Mutation::DuplicateLine(i) => {
                let text = bytes.clone();
                let lines: Vec<&[u8]> = text.split_inclusive(|b| *b == b'\n').collect();
                if !lines.is_empty() {
                    let n = i % lines.len();
                    let mut out = Vec::new();
                    for (k, l) in lines.iter().enumerate() {
                        out.extend_from_slice(l);
                        if k == n {
                            out.extend_from_slice(l);
                        }
                    }
                    bytes = out;
                }
            }
            Mutation::Truncate(i) => bytes.truncate(at(i)),
        }
    }
    bytes
}

/// Every diagnostic names one of `files` and, when it has a position, one inside that file.
#[track_caller]
fn located_inside(diags: &[Diagnostic], files: &BTreeMap<String, Vec<u8>>) -> Result<(), TestCaseError> {
    for d in diags {
        let Some(loc) = &d.location else {
            // Fleet-wide problems (`--tenant`, a VIP pool) may name no file; those that do must
            // name a given one.
            if let Some(file) = &d.file {
                prop_assert!(files.contains_key(file) || file == "tenants", "unknown file in {d:?}");
            }
            continue;
        };
        let bytes = files.get(&loc.path);
        prop_assert!(bytes.is_some(), "diagnostic in a file not given: {d:?}");
        let lines = bytes.expect("checked above").split(|b| *b == b'\n').count();
        prop_assert!(
            loc.line >= 1 && loc.line <= lines,
            "line {} of {lines}: {d:?}",
            loc.line
        );
        prop_assert!(loc.column >= 1, "column 0: {d:?}");
    }
    Ok(())
}

/// Runs the pipeline on `files` and checks its properties.
fn check_pipeline(files: &BTreeMap<String, Vec<u8>>) -> Result<(), TestCaseError> {
    let inputs = match Inputs::from_files(files) {
        Ok(i) => i,
        Err(d) => return located_inside(&d, files),
    };
    let stems: BTreeSet<&str> = inputs.tenants.iter().map(|(_, s, _)| s.as_str()).collect();
    match pipeline::run(&inputs, &Options::default()) {
        Err(d) => located_inside(&d, files),
        Ok(rendered) => {
            for (path, bytes) in &rendered.tree {
                prop_assert!(
                    path.starts_with("overlays/") || path.starts_with("flux/") || path == "kaas.lock",
                    "rendered outside overlays/ and flux/: {path}"
                );
                prop_assert!(
                    !path.split('/').any(|c| c.is_empty() || c == "." || c == ".."),
                    "{path}"
                );
                if let Some(rest) = path.strip_prefix("overlays/tenants/") {
                    let tenant = rest.split('/').next().unwrap_or_default();
                    prop_assert!(stems.contains(tenant), "{path} belongs to no tenant file");
                }
                let text = std::str::from_utf8(bytes);
                prop_assert!(text.is_ok(), "{path} is not UTF-8");
                let parsed = serde_saphyr::from_str::<serde_json::Value>(text.expect("checked above"));
                prop_assert!(parsed.is_ok(), "{path} does not parse: {parsed:?}");
            }
            Ok(())
        }
    }
}

/// The example repository's inputs, with `tenants` instead of its tenants.
fn repository(tenants: &[(String, Vec<u8>)], platform: Vec<u8>) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    files.insert("kaas.yaml".to_string(), platform);
    files.insert("kaas.lock".to_string(), example("kaas.lock"));
    files.insert("base/tenant/kustomization.yaml".to_string(), Vec::new());
    for (stem, bytes) in tenants {
        files.insert(format!("tenants/{stem}.yaml"), bytes.clone());
    }
    files
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes_never_panic_the_tenant_loader(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let path = "tenants/fuzz.yaml";
        if let Err(d) = load::parse::<TenantFile>(path, &bytes) {
            prop_assert!(!d.is_empty());
            located_inside(&d, &[(path.to_string(), bytes.clone())].into_iter().collect())?;
        }
    }

    #[test]
    fn mutated_tenants_never_panic_the_loader(
        which in 0..3usize,
        mutations in proptest::collection::vec(mutation(), 1..6),
    ) {
        let (_, bytes) = example_tenants().swap_remove(which);
        let bytes = mutate(bytes, &mutations);
        let path = "tenants/acme.yaml";
        if let Err(d) = load::parse::<TenantFile>(path, &bytes) {
            located_inside(&d, &[(path.to_string(), bytes.clone())].into_iter().collect())?;
        }
    }

    #[test]
    fn mutated_repositories_render_only_their_own_paths(
        edits in proptest::collection::vec((0..3usize, proptest::collection::vec(mutation(), 0..4)), 1..4),
        platform_edits in proptest::collection::vec(mutation(), 0..2),
        rename in proptest::option::of(prop_oneof![
            Just("../x".to_string()), Just("a%2fb".to_string()), Just("Acme".to_string()),
            Just("flux".to_string()), Just("platform".to_string()), "[a-z][a-z0-9-]{0,12}",
        ]),
    ) {
        let mut tenants = example_tenants();
        for (which, mutations) in &edits {
            let (_, bytes) = &mut tenants[*which];
            *bytes = mutate(std::mem::take(bytes), mutations);
        }
        if let Some(name) = rename {
            // A tenant whose file stem (and name) is hostile or collides with a platform path.
            let bytes = String::from_utf8_lossy(&tenants[0].1).replace("name: acme", &format!("name: {name}"));
            tenants[0] = (name, bytes.into_bytes());
        }
        let files = repository(&tenants, mutate(example("kaas.yaml"), &platform_edits));
        check_pipeline(&files)?;
    }
}

/// The unmutated example renders, so the properties above are not vacuous.
#[test]
fn the_example_passes_the_pipeline_properties() {
    let files = repository(&example_tenants(), example("kaas.yaml"));
    let inputs = Inputs::from_files(&files).expect("the example's files");
    let rendered = pipeline::run(&inputs, &Options::default()).expect("the example renders");
    assert!(rendered.tree.keys().any(|p| p.starts_with("overlays/tenants/acme/")));
    check_pipeline(&files).expect("the properties hold");
}

/// Found by `mutated_repositories_render_only_their_own_paths`: one byte turned
/// `https://clastix.github.io/charts` into `https://clastix.-ithub.io/charts` for kamaji-etcd
/// only; both URLs named the HelmRepository `clastix-charts`, so one object replaced the other
/// and kamaji-etcd would have been installed from the wrong repository. Now a validation error.
///
/// See: issues/9
#[test]
fn r9_two_chart_repositories_with_one_name() {
    let platform = String::from_utf8(example("kaas.yaml")).expect("UTF-8").replacen(
        "chart: {repository: https://clastix.github.io/charts, version: 0.17.0}",
        "chart: {repository: https://clastix.-ithub.io/charts, version: 0.17.0}",
        1,
    );
    let files = repository(&example_tenants(), platform.into_bytes());
    let inputs = Inputs::from_files(&files).expect("the files");
    let errs = pipeline::run(&inputs, &Options::default()).expect_err("refused");
    assert_eq!(
        errs.iter().map(|d| d.message.as_str()).collect::<Vec<_>>(),
        [
            "`https://clastix.-ithub.io/charts` and `https://clastix.github.io/charts` (`spec.kamaji.chart.repository`) would both be the HelmRepository `clastix-charts`"
        ]
    );
    assert_eq!(
        errs[0].location.as_ref().map(|l| (l.path.as_str(), l.line)),
        Some(("kaas.yaml", 21))
    );
    check_pipeline(&files).expect("the properties hold");
}

/// Found by both mutation properties: a lone carriage return is a line break to YAML but not to
/// editors (nor to our caret display), so errors after it pointed past the end of the file.
/// Now refused where it is, like a tab.
///
/// See: issues/9
#[test]
fn r9_lone_carriage_return() {
    for bytes in [&b"apiVersion: v1\rkind: Tenant\n"[..], b"\r", b"metadata: {name: \r"] {
        let errs = load::parse::<TenantFile>("tenants/cr.yaml", bytes).expect_err("refused");
        assert_eq!(errs[0].message, "carriage return (`\\r`) without a line feed");
        assert_eq!(errs[0].location.as_ref().map(|l| l.line), Some(1));
        located_inside(
            &errs,
            &[("tenants/cr.yaml".to_string(), bytes.to_vec())].into_iter().collect(),
        )
        .expect("inside the file");
    }
    // CRLF line endings stay accepted.
    let crlf = String::from_utf8(example("tenants/acme.yaml"))
        .expect("UTF-8")
        .replace('\n', "\r\n");
    assert!(load::parse::<TenantFile>("tenants/acme.yaml", crlf.as_bytes()).is_ok());
}
