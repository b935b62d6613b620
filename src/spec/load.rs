//! Strict loading of one spec file: bytes -> checked text -> indexed source -> typed value.
//! Pure: the caller reads the bytes. Everything refused here is refused with a location.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use std::collections::HashMap;
use std::sync::Arc;

use crate::diagnostics::Diagnostic;
use crate::spec::raw::TenantFile;
use crate::spec::source::{Pos, Source};
use crate::spec::tree;

/// The largest spec file accepted.
pub const MAX_FILE_BYTES: usize = 1024 * 1024;

/// A typed spec and the source it came from.
#[derive(Debug, Clone)]
pub struct Loaded<T> {
    /// The typed value.
    pub value: T,
    /// The file, for locating fields in later diagnostics.
    pub source: Source,
}

/// Parses one spec file strictly. Returns every problem the file has that can be found before
/// typing (encoding, tabs, anchors, duplicates, secrets) or, when there are none, every shape
/// error (unknown fields, wrong types, missing fields) the schema of `T` finds, else the typing
/// error serde reports.
pub fn parse<T: DeserializeOwned + JsonSchema>(path: &str, bytes: &[u8]) -> Result<Loaded<T>, Vec<Diagnostic>> {
    if bytes.len() > MAX_FILE_BYTES {
        return Err(vec![
            Diagnostic::error(format!("file is larger than {} KiB", MAX_FILE_BYTES / 1024))
                .in_file(path)
                .with_hint("a spec file is a few dozen lines; is this the right file?"),
        ]);
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t.to_string(),
        Err(e) => {
            let good = &bytes[..e.valid_up_to()];
            let line = good.iter().filter(|b| **b == b'\n').count() + 1;
            let line_start = good.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            let column = String::from_utf8_lossy(&good[line_start..]).chars().count() + 1;
            let (source, _) = Source::index(path, String::from_utf8_lossy(bytes).into_owned());
            let loc = source.location(Pos { line, column, len: 1 });
            return Err(vec![
                Diagnostic::error("file is not valid UTF-8")
                    .at(Some(loc))
                    .with_hint("save the file as UTF-8"),
            ]);
        }
    };
    let (source, index_problems, tree) = Source::index_with_tree(path, text);
    // Tabs make the parser fail at the same spot; report them once, in our words.
    let scan = pre_scan(&source);
    if !scan.is_empty() {
        return Err(scan);
    }
    if !index_problems.is_empty() {
        // Duplicate keys, anchors or secrets: the file's shape errors are reported with them,
        // read past the duplicates, so a second run is not needed to see them. One error per
        // line is enough (a secret's key is also unknown to the schema).
        let lenient = serde_saphyr::options! {
            duplicate_keys: serde_saphyr::DuplicateKeyPolicy::FirstWins,
            strict_booleans: true,
        };
        let line = |d: &Diagnostic| d.location.as_ref().map(|l| l.line);
        let taken: Vec<Option<usize>> = index_problems.iter().map(line).collect();
        let mut errors = index_problems;
        let shape = crate::spec::shape::errors::<T>(&source, lenient);
        errors.extend(
            shape
                .into_iter()
                .filter(|d| line(d).is_some() && !taken.contains(&line(d))),
        );
        errors.sort_by_key(|d| line(d));
        return Err(errors);
    }
    // The tree from the index's parse types a clean file without a second YAML pass; where it
    // is not sure (or the file is wrong), serde-saphyr parses and words the errors.
    if let Some(value) = tree.and_then(|t| tree::from_node::<T>(&t).ok()) {
        return Ok(Loaded { value, source });
    }
    let options = serde_saphyr::options! {
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
        strict_booleans: true,
    };
    match serde_saphyr::from_str_with_options::<T>(&source.text, options.clone()) {
        Ok(value) => Ok(Loaded { value, source }),
        Err(e) => {
            let mut errors = crate::spec::shape::errors::<T>(&source, options);
            // serde's error stands beside them when it says what they do not: not a kind of
            // error the schema finds, not on a line they cover, not about the whole file.
            let typing = typing_error(&source, &e);
            let line = |d: &Diagnostic| d.location.as_ref().map(|l| l.line);
            let covered = ["missing field", "unknown field", "unknown variant", "invalid type"]
                .iter()
                .any(|k| typing.message.starts_with(k))
                || errors.iter().any(|d| line(d) == line(&typing) || d.field.is_none());
            if errors.is_empty() || !covered {
                errors.push(typing);
                errors.sort_by_key(|d| line(d));
            }
            Err(errors)
        }
    }
}

/// Tabs used for indentation, lone carriage returns and NUL bytes: refused with their exact
/// position.
fn pre_scan(source: &Source) -> Vec<Diagnostic> {
    let mut problems = Vec::new();
    for (i, line) in source.text.lines().enumerate() {
        // Enough to act on; a file of a million tabs must not make a million diagnostics.
        if problems.len() >= 50 {
            break;
        }
        let indent: String = line.chars().take_while(|c| *c == ' ' || *c == '\t').collect();
        if let Some(col) = indent.find('\t') {
            let pos = Pos {
                line: i + 1,
                column: col + 1,
                len: 1,
            };
            problems.push(
                Diagnostic::error("tab used for indentation")
                    .at(Some(source.location(pos)))
                    .with_hint("YAML indents with spaces only; replace the tab with spaces"),
            );
        }
        // YAML counts a lone CR as a line break and every editor but old Mac ones does not, so
        // positions after it would point at the wrong line (issue 9, found by fuzzing).
        let stray = [
            (
                '\r',
                "carriage return (`\\r`) without a line feed",
                "end lines with LF (or CRLF); remove the stray carriage return",
            ),
            (
                '\0',
                "NUL byte in the file",
                "a spec file is plain text; remove the NUL byte",
            ),
        ];
        for (c, message, hint) in stray {
            if let Some(col) = line.find(c) {
                let pos = Pos {
                    line: i + 1,
                    column: line[..col].chars().count() + 1,
                    len: 1,
                };
                problems.push(
                    Diagnostic::error(message)
                        .at(Some(source.location(pos)))
                        .with_hint(hint),
                );
            }
        }
    }
    problems
}

/// serde's first typing error, with its location and a hint where one is known.
fn typing_error(source: &Source, e: &serde_saphyr::Error) -> Diagnostic {
    let loc = e.location().map(|l| {
        let line = usize::try_from(l.line()).unwrap_or(1).max(1);
        let column = usize::try_from(l.column()).unwrap_or(1).max(1);
        let len = source.len_at(line, column).unwrap_or(1);
        source.location(Pos { line, column, len })
    });
    let raw = e.without_snippet().to_string();
    let message = clean_message(&raw);
    let mut diagnostic = Diagnostic::error(message.clone()).at(loc).in_file(source.path.clone());
    if let Some(hint) = hint_for(&raw, &message) {
        diagnostic = diagnostic.with_hint(hint);
    }
    diagnostic
}

/// serde-saphyr appends ` at line X column Y`; the location is shown separately.
fn clean_message(raw: &str) -> String {
    let first = raw.lines().next().unwrap_or(raw).trim();
    let cut = first.find(" at line ").map_or(first, |i| &first[..i]);
    // The valid keys go into the hint.
    let cut = cut.find(", expected one of").map_or(cut, |i| &cut[..i]);
    cut.trim_start_matches("error: ").to_string()
}

fn hint_for(raw: &str, message: &str) -> Option<String> {
    if let Some(rest) = raw.lines().next().unwrap_or("").split("expected one of ").nth(1) {
        let rest = rest.find(" at line ").map_or(rest, |i| &rest[..i]);
        return Some(format!("valid keys here: {rest}"));
    }
    if message.contains("unknown field") {
        return Some(
            "this key is not part of the format; check its spelling (`kaas-gitops schema` prints every field)".into(),
        );
    }
    if message.contains("missing field") {
        return Some("add the field; `kaas-gitops schema` lists what each block requires".into());
    }
    if message.contains("unknown variant") {
        return Some("use one of the values listed".into());
    }
    None
}

pub(crate) type Parsed = Result<Arc<Loaded<TenantFile>>, Vec<Diagnostic>>;

/// Parsed tenant files by path, kept by `watch` between runs so that only files whose bytes
/// changed are parsed again (parsing dominates a run over a large fleet).
#[derive(Debug, Default)]
pub struct ParseCache {
    pub(crate) parsed: HashMap<String, (Vec<u8>, Parsed)>,
}

impl ParseCache {
    /// Records `path`'s parsed value for exactly these `bytes`.
    pub fn insert(&mut self, path: String, bytes: Vec<u8>, loaded: Arc<Loaded<TenantFile>>) {
        self.parsed.insert(path, (bytes, Ok(loaded)));
    }

    /// The tenant file at `path`, if it parsed.
    pub fn get(&self, path: &str) -> Option<&Loaded<TenantFile>> {
        self.parsed
            .get(path)
            .and_then(|(_, p)| p.as_ref().ok())
            .map(|l| l.as_ref())
    }
}
