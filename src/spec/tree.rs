//! A spec file's YAML as a tree, built from the same parser events as the source index, and a
//! serde deserializer over it: the fast path that spares a clean file its second YAML parse.
//!
//! Parsing a tenant file twice (once for the index and the strict checks, once more for serde)
//! was four fifths of a no-op render outside git at 1,000 tenants (BENCHMARKS.md). The tree
//! deserializer accepts only what it is sure serde-saphyr reads the same way (with the options
//! `load::parse` gives it): plain scalars that are unambiguously a string, `true`/`false`, a
//! decimal integer or a simple decimal fraction, null as `~`/`null`/empty; quoted and block
//! scalars as strings; mappings with plain string keys; sequences. Anything else (a tag, a merge
//! key, a complex key, `0x10`, `1e3`, `yes`, a date, a number where a string is asked, ...) is
//! not guessed: the caller falls back to serde-saphyr, which then also words any error.

use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor};

/// One YAML node.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// A scalar's text after escapes, and whether it was plain (unquoted, not a block).
    Scalar { text: String, plain: bool },
    /// A mapping, in file order.
    Map(Vec<(String, Node)>),
    /// A sequence.
    Seq(Vec<Node>),
}

/// Builds a [`Node`] from parser events; `None` once something is met that only serde-saphyr
/// should read.
#[derive(Debug, Default)]
pub struct Builder {
    stack: Vec<Open>,
    done: Option<Node>,
    given_up: bool,
}

#[derive(Debug)]
enum Open {
    Map {
        entries: Vec<(String, Node)>,
        key: Option<String>,
    },
    Seq(Vec<Node>),
}

impl Builder {
    /// A scalar event. A tagged node (`!!str 5`) is not modelled: serde-saphyr reads the file.
    pub fn scalar(&mut self, text: &str, plain: bool, tagged: bool) {
        self.given_up |= tagged;
        if self.given_up {
            return;
        }
        if let Some(Open::Map { key: key @ None, .. }) = self.stack.last_mut() {
            // Only keys that are strings to every reader: the merge key, or a plain `1.30` that
            // one reader might take for a number, are left to serde-saphyr.
            if text == "<<" || (plain && classify(text) != Plain::Str) {
                self.given_up = true;
            } else {
                *key = Some(text.to_string());
            }
            return;
        }
        self.value(Node::Scalar {
            text: text.to_string(),
            plain,
        });
    }

    /// A mapping or sequence starts (`tagged`: as for a scalar).
    pub fn open(&mut self, map: bool, tagged: bool) {
        self.given_up |= tagged;
        if self.given_up {
            return;
        }
        if let Some(Open::Map { key: None, .. }) = self.stack.last() {
            // A mapping or sequence as a key.
            self.given_up = true;
            return;
        }
        self.stack.push(if map {
            Open::Map {
                entries: Vec::new(),
                key: None,
            }
        } else {
            Open::Seq(Vec::new())
        });
    }

    /// The innermost mapping or sequence ends.
    pub fn close(&mut self) {
        if self.given_up {
            return;
        }
        let node = match self.stack.pop() {
            Some(Open::Map { entries, .. }) => Node::Map(entries),
            Some(Open::Seq(items)) => Node::Seq(items),
            None => {
                self.given_up = true;
                return;
            }
        };
        self.value(node);
    }

    fn value(&mut self, node: Node) {
        match self.stack.last_mut() {
            None => self.done = Some(node),
            Some(Open::Seq(items)) => items.push(node),
            Some(Open::Map { entries, key }) => match key.take() {
                Some(k) => entries.push((k, node)),
                None => self.given_up = true,
            },
        }
    }

    /// The document's root, unless the builder gave up or the document is unfinished.
    pub fn finish(self) -> Option<Node> {
        (!self.given_up && self.stack.is_empty()).then_some(self.done).flatten()
    }
}

/// How YAML reads a plain scalar, as far as this module is sure.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Plain {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str,
    /// Some YAML schema reads it as a non-string (`0x1F`, `1e3`, `yes`, `.inf`, `2001-12-14`,
    /// `1:30`, `+1`, `007`, ...), or it is a number outside i64: serde-saphyr decides.
    Unsure,
}

fn classify(text: &str) -> Plain {
    match text {
        "" | "~" | "null" => return Plain::Null,
        "true" => return Plain::Bool(true),
        "false" => return Plain::Bool(false),
        _ => {}
    }
    let lower = text.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "null" | "true" | "false" | "yes" | "no" | "on" | "off" | "y" | "n"
    ) || lower.trim_start_matches(['+', '-']).starts_with(".inf")
        || lower.starts_with(".nan")
    {
        return Plain::Unsure;
    }
    let unsigned = text.strip_prefix('-').unwrap_or(text);
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let canonical = |s: &str| digits(s) && (s == "0" || !s.starts_with('0'));
    if canonical(unsigned) {
        return text.parse().map_or(Plain::Unsure, Plain::Int);
    }
    if let Some((whole, fraction)) = unsigned.split_once('.')
        && canonical(whole)
        && digits(fraction)
    {
        return text.parse().map_or(Plain::Unsure, Plain::Float);
    }
    let first = text.as_bytes()[0];
    if (first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'.')) && number_like(text) {
        return Plain::Unsure;
    }
    Plain::Str
}

/// Any spelling of a number some YAML version or schema accepts: signs, leading zeros, `_`,
/// exponents, bases, sexagesimal (`1:30`), a leading or trailing dot, and dates. An IP address
/// or `v1.2.3` is not one.
fn number_like(text: &str) -> bool {
    let t = text.trim_start_matches(['+', '-']);
    let lower = t.to_ascii_lowercase();
    if lower.starts_with("0x") || lower.starts_with("0o") || lower.starts_with("0b") {
        return true;
    }
    let bytes = t.as_bytes();
    // A date (`2001-12-14`, with or without a time after it).
    if bytes.len() >= 8 && bytes[..4].iter().all(u8::is_ascii_digit) && bytes[4] == b'-' {
        return true;
    }
    let dots = t.bytes().filter(|b| *b == b'.').count();
    dots <= 1
        && t.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'_' | b'.' | b'e' | b'E' | b'+' | b'-' | b':'))
}

/// Why the tree deserializer stopped: never shown, the caller parses with serde-saphyr instead.
#[derive(Debug)]
pub struct NotSure;

impl std::fmt::Display for NotSure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("left to serde-saphyr")
    }
}

impl std::error::Error for NotSure {}

impl de::Error for NotSure {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        NotSure
    }
}

/// `T` from the tree, or `NotSure` where serde-saphyr must decide.
pub fn from_node<T: serde::de::DeserializeOwned>(node: &Node) -> Result<T, NotSure> {
    T::deserialize(node)
}

impl Node {
    /// How a plain scalar reads; quoted and block scalars, mappings and sequences are `None`.
    fn plain(&self) -> Option<Plain> {
        match self {
            Node::Scalar { text, plain: true } => Some(classify(text)),
            _ => None,
        }
    }

    /// The text of a scalar that is a string to every YAML reader.
    fn string(&self) -> Result<&str, NotSure> {
        match self {
            Node::Scalar { text, plain: false } => Ok(text),
            Node::Scalar { text, plain: true } if classify(text) == Plain::Str => Ok(text),
            _ => Err(NotSure),
        }
    }
}

macro_rules! integer {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotSure> {
            match self.plain() {
                Some(Plain::Int(i)) => visitor.visit_i64(i),
                _ => Err(NotSure),
            }
        }
    )*};
}

impl<'de> Deserializer<'de> for &'de Node {
    type Error = NotSure;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotSure> {
        match self {
            Node::Map(_) => self.deserialize_map(visitor),
            Node::Seq(_) => self.deserialize_seq(visitor),
            Node::Scalar { text, plain: false } => visitor.visit_str(text),
            Node::Scalar { text, plain: true } => match classify(text) {
                Plain::Null => visitor.visit_unit(),
                Plain::Bool(b) => visitor.visit_bool(b),
                Plain::Int(i) => visitor.visit_i64(i),
                Plain::Float(f) => visitor.visit_f64(f),
                Plain::Str => visitor.visit_str(text),
                Plain::Unsure => Err(NotSure),
            },
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotSure> {
        match self.plain() {
            Some(Plain::Bool(b)) => visitor.visit_bool(b),
            _ => Err(NotSure),
        }
    }

    integer!(deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64);

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotSure> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotSure> {
        match self.plain() {
            Some(Plain::Float(f)) => visitor.visit_f64(f),
            _ => Err(NotSure),
        }
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotSure> {
        self.deserialize_str(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotSure> {
        visitor.visit_str(self.string()?)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotSure> {
        self.deserialize_str(visitor)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotSure> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, _: V) -> Result<V::Value, NotSure> {
        Err(NotSure)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, _: V) -> Result<V::Value, NotSure> {
        Err(NotSure)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotSure> {
        match self.plain() {
            Some(Plain::Null) => visitor.visit_none(),
            Some(Plain::Unsure) => Err(NotSure),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotSure> {
        match self.plain() {
            Some(Plain::Null) => visitor.visit_unit(),
            _ => Err(NotSure),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, _: &'static str, visitor: V) -> Result<V::Value, NotSure> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &'static str, visitor: V) -> Result<V::Value, NotSure> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotSure> {
        match self {
            Node::Seq(items) => visitor.visit_seq(Items(items.iter())),
            _ => Err(NotSure),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, NotSure> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, NotSure> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotSure> {
        match self {
            Node::Map(entries) => visitor.visit_map(Entries {
                iter: entries.iter(),
                value: None,
            }),
            _ => Err(NotSure),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, NotSure> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, NotSure> {
        // Unit variants only (`provider: proxmox`); a variant with data is left to serde-saphyr.
        visitor.visit_enum(self.string()?.into_deserializer())
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, NotSure> {
        visitor.visit_unit()
    }
}

struct Items<'a>(std::slice::Iter<'a, Node>);

impl<'de> SeqAccess<'de> for Items<'de> {
    type Error = NotSure;

    fn next_element_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<Option<S::Value>, NotSure> {
        self.0.next().map(|n| seed.deserialize(n)).transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

struct Entries<'a> {
    iter: std::slice::Iter<'a, (String, Node)>,
    value: Option<&'a Node>,
}

impl<'de> MapAccess<'de> for Entries<'de> {
    type Error = NotSure;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, NotSure> {
        let Some((key, value)) = self.iter.next() else {
            return Ok(None);
        };
        self.value = Some(value);
        seed.deserialize(key.as_str().into_deserializer()).map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, NotSure> {
        seed.deserialize(self.value.take().ok_or(NotSure)?)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    use serde::Serialize;
    use serde::de::DeserializeOwned;
    use serde_json::{Value, json};

    use super::*;
    use crate::spec::raw::{PlatformFile, TenantFile};
    use crate::spec::source::Source;

    /// What the tree gives for `text`, if it is sure, and what serde-saphyr gives, as JSON.
    fn both<T: DeserializeOwned + Serialize>(text: &str) -> (Option<Value>, Result<Value, String>) {
        let (_, problems, tree) = Source::index_with_tree("t.yaml", text.to_string());
        assert!(problems.is_empty() || tree.is_none(), "a tree despite {problems:?}");
        let fast = tree
            .and_then(|t| from_node::<T>(&t).ok())
            .map(|v| serde_json::to_value(v).unwrap());
        let options = serde_saphyr::options! {
            duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
            strict_booleans: true,
        };
        let slow = serde_saphyr::from_str_with_options::<T>(text, options)
            .map(|v| serde_json::to_value(v).unwrap())
            .map_err(|e| e.to_string());
        (fast, slow)
    }

    /// Where the tree is sure, serde-saphyr reads the same; returns whether it was sure.
    #[track_caller]
    fn agrees<T: DeserializeOwned + Serialize>(text: &str) -> bool {
        let (fast, slow) = both::<T>(text);
        if let Some(fast) = &fast {
            assert_eq!(Ok(fast), slow.as_ref(), "the tree and serde-saphyr differ on:\n{text}");
        }
        fast.is_some()
    }

    fn yaml_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                yaml_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                out.push(path);
            }
        }
    }

    #[test]
    fn every_spec_file_of_the_project_reads_the_same_and_clean_ones_without_a_second_parse() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = vec![root.join("kaas.yaml")];
        yaml_files(&root.join("tenants"), &mut files);
        yaml_files(&root.join("tests/fixtures"), &mut files);
        let (mut sure, mut specs) = (0, 0);
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            let fast = if text.contains("\nkind: Tenant") {
                agrees::<TenantFile>(&text)
            } else if text.contains("\nkind: Platform") {
                agrees::<PlatformFile>(&text)
            } else {
                continue;
            };
            specs += 1;
            sure += usize::from(fast);
        }
        // The example and the fixtures are plain YAML: nearly all take the fast path.
        assert!(specs > 40, "{specs} spec files");
        assert!(
            sure * 10 >= specs * 9,
            "only {sure} of {specs} spec files were read from the tree"
        );
        for name in ["kaas.yaml", "tenants/acme.yaml"] {
            let text = std::fs::read_to_string(root.join(name)).unwrap();
            let (fast, _) = if name == "kaas.yaml" {
                both::<PlatformFile>(&text)
            } else {
                both::<TenantFile>(&text)
            };
            assert!(fast.is_some(), "{name} took serde-saphyr's path");
        }
    }

    #[test]
    fn scalars_some_reader_could_take_otherwise_are_left_to_serde_saphyr() {
        type Free = BTreeMap<String, Value>;
        // Read from the tree, and the same as serde-saphyr.
        for (yaml, value) in [
            ("a: text", json!("text")),
            ("a: 10.0.4.60", json!("10.0.4.60")),
            ("a: v1.33.4", json!("v1.33.4")),
            ("a: '8080'", json!("8080")),
            ("a: 8080", json!(8080)),
            ("a: -3", json!(-3)),
            ("a: 0", json!(0)),
            ("a: 0.5", json!(0.5)),
            ("a: true", json!(true)),
            ("a: ~", json!(null)),
            ("a:", json!(null)),
            ("a: |\n  two\n  lines\n", json!("two\nlines\n")),
            ("a: [1, x, {b: c}]", json!([1, "x", {"b": "c"}])),
        ] {
            let text = format!("{yaml}\n");
            assert!(agrees::<Free>(&text), "not read from the tree: {yaml}");
            assert_eq!(both::<Free>(&text).0.unwrap(), json!({ "a": value }), "{yaml}");
        }
        // Left to serde-saphyr (the tree is not sure what every YAML reader makes of them).
        for yaml in [
            "a: yes",
            "a: No",
            "a: on",
            "a: True",
            "a: NULL",
            "a: 0x1F",
            "a: 0o17",
            "a: 017",
            "a: +1",
            "a: 1e3",
            "a: 1_000",
            "a: .5",
            "a: 1.",
            "a: .inf",
            "a: -.Inf",
            "a: .nan",
            "a: 1:30",
            "a: 2001-12-14",
            "a: 99999999999999999999",
            "a: !!str 5",
            "1.30: a",
            "~: a",
            "<<: {a: b}",
            "? [a]\n: b",
        ] {
            assert!(!agrees::<Free>(&format!("{yaml}\n")), "read from the tree: {yaml}");
        }
    }

    #[test]
    fn typed_fields_take_only_what_they_are_sure_of() {
        #[derive(serde::Deserialize, Serialize)]
        #[serde(deny_unknown_fields)]
        struct T {
            text: Option<String>,
            port: Option<u16>,
            flag: Option<bool>,
            qty: Option<crate::spec::raw::Quantity>,
        }
        for yaml in [
            "text: abc",
            "text: ''",
            "port: 443",
            "flag: false",
            "qty: 250m",
            "qty: 2",
            "qty: 0.5",
            "text: ~",
        ] {
            assert!(agrees::<T>(&format!("{yaml}\n")), "not read from the tree: {yaml}");
        }
        // A number where a string is asked, a string where a number is, out of range, unknown:
        // serde-saphyr decides (and words the error).
        for yaml in [
            "text: 8080",
            "text: 1.5",
            "text: true",
            "port: '443'",
            "port: 70000",
            "port: -1",
            "flag: 'true'",
            "other: 1",
            // `n` is a boolean to YAML 1.1: not even a key is guessed.
            "n: 1",
        ] {
            assert!(!agrees::<T>(&format!("{yaml}\n")), "read from the tree: {yaml}");
        }
    }
}
