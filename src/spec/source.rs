//! One input file and a map from field paths (`spec.workers[0].replicas`) to where they are
//! written, built from the YAML parser's events. serde gives typed values; this index lets the
//! validator point at the line of any field it finds wrong. The same pass refuses what a strict
//! loader must: anchors and aliases, duplicate keys, over-deep nesting and inline secrets.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle, Span};

use crate::diagnostics::{Diagnostic, Location};
use crate::spec::tree::{Builder, Node};

/// Nesting deeper than this is refused before serde sees it (no tenant file needs more).
const MAX_DEPTH: usize = 32;

/// A position in a source file (1-based line and column, length in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// Length in characters on that line.
    pub len: usize,
}

impl Pos {
    fn from_span(span: &Span) -> Pos {
        let len = if span.end.line() == span.start.line() {
            span.end.col().saturating_sub(span.start.col()).max(1)
        } else {
            1
        };
        Pos {
            line: span.start.line(),
            column: span.start.col() + 1,
            len,
        }
    }
}

/// A scalar as written: its text and whether it was quoted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scalar {
    /// The scalar's text after escapes.
    pub text: String,
    /// A plain (unquoted, non-block) scalar: YAML may read it as a number or boolean.
    pub plain: bool,
}

/// `key` below the dotted `path` that diagnostics use: `spec.values`, or `key` at the root.
pub fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// An input file's text, named by its path relative to the repository.
#[derive(Debug, Clone)]
pub struct Source {
    /// Relative path with `/` separators, e.g. `tenants/acme.yaml`.
    pub path: String,
    /// The UTF-8 text.
    pub text: String,
    /// Built with the source when it is loaded from text, or on first use when the file's value
    /// came from the parse cache (its text was loaded and checked before).
    index: OnceLock<Index>,
}

/// Where every key and value of a file is written.
#[derive(Debug, Clone, Default)]
struct Index {
    keys: BTreeMap<String, Pos>,
    values: BTreeMap<String, (Pos, Option<Scalar>)>,
}

impl Source {
    /// Indexes `text`, returning the problems a strict loader refuses.
    pub fn index(path: &str, text: String) -> (Source, Vec<Diagnostic>) {
        let source = Source::unindexed(path, text);
        let (index, problems, _) = Indexer::run(&source, None);
        let _ = source.index.set(index);
        (source, problems)
    }

    /// [`Source::index`], and the file as a tree from the same parse when the tree can stand
    /// for it ([`tree`]): what `load::parse` types without a second YAML pass.
    pub fn index_with_tree(path: &str, text: String) -> (Source, Vec<Diagnostic>, Option<Node>) {
        let source = Source::unindexed(path, text);
        let (index, problems, tree) = Indexer::run(&source, Some(Builder::default()));
        let _ = source.index.set(index);
        (source, problems, tree)
    }

    /// A source whose index is built only if a diagnostic or a scalar lookup needs it: for text
    /// that was loaded (and found clean) before.
    pub fn unindexed(path: &str, text: String) -> Source {
        Source {
            path: path.to_string(),
            text,
            index: OnceLock::new(),
        }
    }

    fn idx(&self) -> &Index {
        self.index.get_or_init(|| Indexer::run(self, None).0)
    }

    /// A location in this file. A long line is cut to a window around the column, so a hostile
    /// one-line megabyte file prints (and holds) a short excerpt per diagnostic (issue 9).
    pub fn location(&self, pos: Pos) -> Location {
        const SHOWN: usize = 120;
        let full = self.text.lines().nth(pos.line.saturating_sub(1)).unwrap_or("");
        let chars = full.chars().count();
        let (line_text, text_column) = if chars <= SHOWN {
            (full.to_string(), pos.column)
        } else {
            let start = pos.column.saturating_sub(1 + SHOWN / 2).min(chars - SHOWN);
            let window: String = full.chars().skip(start).take(SHOWN).collect();
            let prefix = if start > 0 { "…" } else { "" };
            let suffix = if start + SHOWN < chars { "…" } else { "" };
            let column = pos.column.saturating_sub(start) + prefix.chars().count();
            (format!("{prefix}{window}{suffix}"), column)
        };
        Location {
            path: self.path.clone(),
            line: pos.line,
            column: pos.column,
            len: pos.len,
            line_text,
            text_column,
        }
    }

    /// The length of the key or value that starts at `line`:`column`, if one does.
    pub fn len_at(&self, line: usize, column: usize) -> Option<usize> {
        let idx = self.idx();
        idx.keys
            .values()
            .chain(idx.values.values().map(|(p, _)| p))
            .find(|p| p.line == line && p.column == column)
            .map(|p| p.len)
    }

    /// Where the value of `field` is written; else its key; else the key of the nearest written
    /// parent (a missing field is reported where it would belong).
    pub fn locate(&self, field: &str) -> Option<Location> {
        let idx = self.idx();
        if let Some((pos, _)) = idx.values.get(field) {
            return Some(self.location(*pos));
        }
        let mut field = field;
        loop {
            if let Some(pos) = idx.keys.get(field) {
                return Some(self.location(*pos));
            }
            if let Some((pos, _)) = idx.values.get(field) {
                return Some(self.location(*pos));
            }
            let cut = field.rfind(['.', '['])?;
            field = &field[..cut];
        }
    }

    /// Where the key of `field` is written (for "unknown" or "duplicate" style errors).
    pub fn locate_key(&self, field: &str) -> Option<Location> {
        self.idx()
            .keys
            .get(field)
            .map(|p| self.location(*p))
            .or_else(|| self.locate(field))
    }

    /// Whether `field` is written in this file (a key or a value, not only a parent of it).
    pub fn has(&self, field: &str) -> bool {
        let idx = self.idx();
        idx.keys.contains_key(field) || idx.values.contains_key(field)
    }

    /// The scalar written at `field`, if it is one.
    pub fn scalar(&self, field: &str) -> Option<&Scalar> {
        self.idx().values.get(field).and_then(|(_, s)| s.as_ref())
    }

    /// An error at `field` in this file.
    pub fn error(&self, field: &str, message: impl Into<String>) -> Diagnostic {
        Diagnostic::error(message)
            .at(self.locate(field))
            .in_file(self.path.clone())
            .field(field)
    }

    /// An error at the key of `field` (for a key that should not be there, or a map that
    /// conflicts as a whole), else where `error` would point.
    pub fn key_error(&self, field: &str, message: impl Into<String>) -> Diagnostic {
        Diagnostic::error(message)
            .at(self.locate_key(field))
            .in_file(self.path.clone())
            .field(field)
    }

    /// A warning at `field` in this file.
    pub fn warning(&self, field: &str, message: impl Into<String>) -> Diagnostic {
        Diagnostic::warning(message)
            .at(self.locate(field))
            .in_file(self.path.clone())
            .field(field)
    }
}

enum Frame {
    Map {
        path: String,
        key: Option<String>,
        seen: BTreeSet<String>,
    },
    Seq {
        path: String,
        next: usize,
    },
}

struct Indexer<'a> {
    source: &'a Source,
    index: Index,
    stack: Vec<Frame>,
    problems: Vec<Diagnostic>,
}

impl Indexer<'_> {
    /// The index and the problems of `source`, and its tree when `tree` is given and the file
    /// is one the tree can stand for.
    fn run(source: &Source, mut tree: Option<Builder>) -> (Index, Vec<Diagnostic>, Option<Node>) {
        let text = &source.text;
        let mut indexer = Indexer {
            source,
            index: Index::default(),
            stack: Vec::new(),
            problems: Vec::new(),
        };
        let mut documents = 0;
        let options = serde_saphyr::granit_parser::options! {
            emit_anchor_events: true,
            emit_unresolved_aliases: true,
        };
        for item in Parser::new_from_str_with_options(text, options) {
            let (event, span) = match item {
                Ok(pair) => pair,
                Err(e) => {
                    let marker = e.marker();
                    // The parser's own guard against deep nesting fires before ours can (it
                    // looks ahead); say it in the same words.
                    let (message, hint) = if e.info().contains("recursion limit") {
                        (
                            format!("nesting deeper than {MAX_DEPTH} levels"),
                            "no Tenant or Platform field nests this deep; check the indentation",
                        )
                    } else {
                        (
                            format!("invalid YAML: {}", e.info()),
                            "check indentation and quoting on this line",
                        )
                    };
                    let pos = Pos {
                        line: marker.line().max(1),
                        column: marker.col() + 1,
                        len: 1,
                    };
                    let loc = indexer.source.location(pos);
                    indexer
                        .problems
                        .push(Diagnostic::error(message).at(Some(loc)).with_hint(hint));
                    break;
                }
            };
            match event {
                Event::DocumentStart(..) => {
                    documents += 1;
                    if documents > 1 {
                        indexer.problem(
                            &span,
                            "a second YAML document in one file",
                            "keep exactly one document per file: remove this `---` and what follows",
                        );
                        break;
                    }
                }
                Event::Alias(_) | Event::UnresolvedAlias(_) => {
                    // An alias takes a node's place: consume it so later keys stay keys.
                    indexer.enter(&span);
                    indexer.problem(
                        &span,
                        "YAML aliases (`*name`) are not allowed",
                        "write the value out in full; anchors and aliases are refused so that every value is visible where it applies",
                    );
                }
                // The Anchor event's span covers the `&name` token itself.
                Event::Anchor(..) => indexer.problem(
                    &span,
                    "YAML anchors (`&name`) are not allowed",
                    "write each value out in full; anchors and aliases are refused",
                ),
                Event::Scalar(value, style, _, tag) => {
                    if let Some(b) = tree.as_mut() {
                        b.scalar(&value, style == ScalarStyle::Plain, tag.is_some());
                    }
                    indexer.scalar(value.into_owned(), style, &span)
                }
                Event::MappingStart(_, _, tag) => {
                    if let Some(b) = tree.as_mut() {
                        b.open(true, tag.is_some());
                    }
                    let path = indexer.enter(&span);
                    indexer.stack.push(Frame::Map {
                        path,
                        key: None,
                        seen: BTreeSet::new(),
                    });
                    indexer.depth(&span);
                }
                Event::SequenceStart(_, _, tag) => {
                    if let Some(b) = tree.as_mut() {
                        b.open(false, tag.is_some());
                    }
                    let path = indexer.enter(&span);
                    indexer.stack.push(Frame::Seq { path, next: 0 });
                    indexer.depth(&span);
                }
                Event::MappingEnd | Event::SequenceEnd => {
                    if let Some(b) = tree.as_mut() {
                        b.close();
                    }
                    indexer.stack.pop();
                }
                _ => {}
            }
            if indexer.problems.len() > 50 {
                break;
            }
        }
        // A file with problems is typed by serde-saphyr, which words its shape errors.
        let tree = tree.filter(|_| indexer.problems.is_empty()).and_then(Builder::finish);
        (indexer.index, indexer.problems, tree)
    }

    fn problem(&mut self, span: &Span, message: &str, hint: &str) {
        let loc = self.source.location(Pos::from_span(span));
        self.problems
            .push(Diagnostic::error(message).at(Some(loc)).with_hint(hint.to_string()));
    }

    fn depth(&mut self, span: &Span) {
        if self.stack.len() == MAX_DEPTH + 1 {
            self.problem(
                span,
                &format!("nesting deeper than {MAX_DEPTH} levels"),
                "no Tenant or Platform field nests this deep; check the indentation",
            );
        }
    }

    /// A node starts in the current position: returns its path and records its span.
    fn enter(&mut self, span: &Span) -> String {
        let path = self.next_path();
        self.index
            .values
            .entry(path.clone())
            .or_insert((Pos::from_span(span), None));
        path
    }

    /// The path of the node that starts in the current position (a sequence counts it).
    fn next_path(&mut self) -> String {
        match self.stack.last_mut() {
            None => String::new(),
            Some(Frame::Seq { path, next }) => {
                let p = format!("{path}[{next}]");
                *next += 1;
                p
            }
            Some(Frame::Map { path, key, .. }) => match key.take() {
                Some(k) => child_path(path, &k),
                None => path.clone(),
            },
        }
    }

    fn scalar(&mut self, value: String, style: ScalarStyle, span: &Span) {
        let mut pos = Pos::from_span(span);
        if style == ScalarStyle::Plain && !value.contains('\n') {
            // Underline the whole word even where the parser's span is shorter.
            pos.len = pos.len.max(value.chars().count());
        }
        if let Some(Frame::Map { path, key, seen }) = self.stack.last_mut()
            && key.is_none()
        {
            let full = child_path(path, &value);
            if !seen.insert(value.clone()) {
                let loc = self.source.location(pos);
                self.problems.push(
                    Diagnostic::error(format!("duplicate key `{value}`"))
                        .at(Some(loc))
                        .field(full.clone())
                        .with_hint("each key may appear once in a mapping; remove one of them"),
                );
            }
            self.index.keys.entry(full).or_insert(pos);
            *key = Some(value);
            return;
        }
        let secret_key = match self.stack.last() {
            Some(Frame::Map { key: Some(k), .. }) => looks_like_secret(k).then(|| k.clone()),
            _ => None,
        };
        // A scalar's entry is written once, below, with its text.
        let path = self.next_path();
        let plain = style == ScalarStyle::Plain;
        if let Some(k) = secret_key
            && !value.is_empty()
            && !(plain && (value == "~" || value == "null"))
        {
            let loc = self.source.location(pos);
            // An OIDC client's secret has no place anywhere: the API server only verifies
            // tokens, and the login (kubelogin) runs on each person's machine.
            let hint = if path.contains("oidcIssuers") {
                "secrets never go into git, and a tenant API server needs no client secret: it only verifies the issuer's tokens; remove it (docs/access.md)"
            } else {
                "secrets never go into git: put the value in a Kubernetes Secret and name that Secret (e.g. `credentialsSecret: my-secret`)"
            };
            self.problems.push(
                Diagnostic::error(format!("`{k}` holds a literal secret"))
                    .at(Some(loc))
                    .field(path.clone())
                    .with_hint(hint),
            );
        }
        if let Some(flag) = secret_flag(&value) {
            let loc = self.source.location(pos);
            self.problems.push(
                Diagnostic::error(format!("the flag `{flag}` carries a literal secret"))
                    .at(Some(loc))
                    .field(path.clone())
                    .with_hint("pass secrets through a file mounted from a Secret (e.g. `--token-auth-file=/path`), never inline"),
            );
        }
        self.index
            .values
            .insert(path, (pos, Some(Scalar { text: value, plain })));
    }
}

/// Keys whose value is a secret itself (not the name of a Secret holding one).
fn looks_like_secret(key: &str) -> bool {
    // Only the last `/` or `.` segment counts (`vault.example.com/token`); it is normalised
    // alone, since every key of every file passes here.
    let last = key.rsplit(['/', '.']).next().unwrap_or(key);
    let k: String = last
        .chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect();
    const EXACT: [&str; 9] = [
        "password",
        "passwd",
        "secret",
        "token",
        "apikey",
        "clientsecret",
        "privatekey",
        "accesskey",
        "secretkey",
    ];
    EXACT.contains(&k.as_str())
        || k.ends_with("password")
        || k.ends_with("token")
        || k.ends_with("secretkey")
        || k.ends_with("accesskeyid")
}

/// `--token=abc`, `--password=abc`, `--client-secret=abc` in extra args.
fn secret_flag(value: &str) -> Option<&str> {
    let flag = value.strip_prefix("--")?;
    let (name, v) = flag.split_once('=')?;
    if v.is_empty() || v.starts_with('/') {
        return None;
    }
    let secretish =
        looks_like_secret(name) || name.ends_with("-secret") || name.ends_with("-password") || name.ends_with("-token");
    secretish.then_some(&value[..name.len() + 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_keys_are_recognised_but_secret_references_are_not() {
        for k in [
            "password",
            "token",
            "apiToken",
            "client_secret",
            "secret",
            "BEARER-TOKEN",
        ] {
            assert!(looks_like_secret(k), "{k}");
        }
        for k in ["credentialsSecret", "hetznerSecret", "secretRef", "tokenTTL", "name"] {
            assert!(!looks_like_secret(k), "{k}");
        }
        assert_eq!(secret_flag("--token=abc"), Some("--token"));
        assert_eq!(secret_flag("--oidc-client-secret=xyz"), Some("--oidc-client-secret"));
        assert_eq!(secret_flag("--token-auth-file=/etc/tokens"), None);
        assert_eq!(secret_flag("--cloud-provider=external"), None);
    }

    #[test]
    fn fields_are_located_by_path() {
        let text = "spec:\n  workers:\n    - name: a\n      autoscaling: {min: 4, max: 2}\n";
        let (source, problems) = Source::index("t.yaml", text.to_string());
        assert!(problems.is_empty());
        let loc = source.locate("spec.workers[0].autoscaling.min").expect("indexed");
        assert_eq!((loc.line, loc.column), (4, 26));
        let loc = source.locate("spec.workers[0].name").expect("indexed");
        assert_eq!((loc.line, loc.column, loc.len), (3, 13, 1));
        // A missing field points at its nearest written parent.
        let loc = source.locate("spec.workers[0].replicas").expect("parent");
        assert_eq!(loc.line, 3);
    }

    #[test]
    fn anchors_aliases_and_duplicates_are_refused_with_positions() {
        let text = "a: &x 1\nb: *x\nc: 1\nc: 2\n";
        let (_, problems) = Source::index("t.yaml", text.to_string());
        let lines: Vec<_> = problems
            .iter()
            .map(|d| (d.message.clone(), d.location.as_ref().map(|l| l.line)))
            .collect();
        assert!(lines.contains(&("YAML anchors (`&name`) are not allowed".into(), Some(1))));
        assert!(lines.contains(&("YAML aliases (`*name`) are not allowed".into(), Some(2))));
        assert!(lines.contains(&("duplicate key `c`".into(), Some(4))));
    }
}
