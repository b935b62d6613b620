//! The one representation of rendered objects: an insertion-ordered YAML tree. Keys come out in
//! the order the renderer writes them (never hash order), and absent optional fields vanish.
//! `map!` and `seq!` build it.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use std::collections::BTreeMap;

/// A YAML value in a rendered object.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// Left out of its parent map or sequence.
    Absent,
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A number with a fraction (only from user values, e.g. a ClusterClass variable's).
    Float(f64),
    /// A string (quoted on output when YAML 1.1 would read it otherwise).
    Str(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping, in insertion order.
    Map(Vec<(String, Node)>),
}

impl Node {
    /// The value at `key` of a map.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string value, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::Str(s) => Some(s),
            _ => None,
        }
    }

    /// `Absent` for an empty map or sequence, so optional blocks disappear.
    #[must_use]
    pub fn or_absent(self) -> Node {
        match &self {
            Node::Map(m) if m.iter().all(|(_, v)| *v == Node::Absent) => Node::Absent,
            Node::Seq(s) if s.iter().all(|v| *v == Node::Absent) => Node::Absent,
            _ => self,
        }
    }
}

impl Serialize for Node {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Node::Absent | Node::Null => s.serialize_unit(),
            Node::Bool(b) => s.serialize_bool(*b),
            Node::Int(i) => s.serialize_i64(*i),
            Node::Float(f) => s.serialize_f64(*f),
            Node::Str(v) => s.serialize_str(v),
            Node::Seq(items) => {
                let present: Vec<_> = items.iter().filter(|n| **n != Node::Absent).collect();
                let mut seq = s.serialize_seq(Some(present.len()))?;
                for item in present {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Node::Map(entries) => {
                let present: Vec<_> = entries.iter().filter(|(_, v)| *v != Node::Absent).collect();
                let mut map = s.serialize_map(Some(present.len()))?;
                for (k, v) in present {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl From<&str> for Node {
    fn from(v: &str) -> Self {
        Node::Str(v.to_string())
    }
}
impl From<String> for Node {
    fn from(v: String) -> Self {
        Node::Str(v)
    }
}
impl From<&String> for Node {
    fn from(v: &String) -> Self {
        Node::Str(v.clone())
    }
}
impl From<bool> for Node {
    fn from(v: bool) -> Self {
        Node::Bool(v)
    }
}
impl From<u32> for Node {
    fn from(v: u32) -> Self {
        Node::Int(i64::from(v))
    }
}
impl From<u16> for Node {
    fn from(v: u16) -> Self {
        Node::Int(i64::from(v))
    }
}
impl From<u8> for Node {
    fn from(v: u8) -> Self {
        Node::Int(i64::from(v))
    }
}
impl From<&serde_json::Value> for Node {
    /// A user's value (a ClusterClass variable's or a patch's) as written.
    fn from(v: &serde_json::Value) -> Self {
        use serde_json::Value;
        match v {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            // A whole number beyond i64 (a u64 in `Value`) is written as the float YAML reads.
            Value::Number(n) => n
                .as_i64()
                .map_or_else(|| Node::Float(n.as_f64().unwrap_or(f64::NAN)), Node::Int),
            Value::String(s) => Node::Str(s.clone()),
            Value::Array(items) => Node::Seq(items.iter().map(Node::from).collect()),
            // Sorted here, so the output never depends on how the input was written (even were
            // serde_json's `preserve_order` switched on by some dependency).
            Value::Object(m) => {
                let sorted: BTreeMap<&String, &Value> = m.iter().collect();
                Node::Map(sorted.into_iter().map(|(k, v)| (k.clone(), Node::from(v))).collect())
            }
        }
    }
}
impl From<i64> for Node {
    fn from(v: i64) -> Self {
        Node::Int(v)
    }
}
impl<T: Into<Node>> From<Option<T>> for Node {
    fn from(v: Option<T>) -> Self {
        v.map_or(Node::Absent, Into::into)
    }
}
impl<T: Into<Node>> From<Vec<T>> for Node {
    fn from(v: Vec<T>) -> Self {
        Node::Seq(v.into_iter().map(Into::into).collect())
    }
}
impl From<&Vec<String>> for Node {
    fn from(v: &Vec<String>) -> Self {
        Node::Seq(v.iter().map(Node::from).collect())
    }
}
impl From<&BTreeMap<String, String>> for Node {
    fn from(v: &BTreeMap<String, String>) -> Self {
        Node::Map(v.iter().map(|(k, v)| (k.clone(), Node::from(v))).collect())
    }
}
impl From<BTreeMap<String, String>> for Node {
    fn from(v: BTreeMap<String, String>) -> Self {
        Node::from(&v)
    }
}

/// Builds a `Node::Map` in the order written: `map! { "kind" => "Cluster", ... }`.
#[macro_export]
macro_rules! map {
    ($($k:expr => $v:expr),* $(,)?) => {
        $crate::render::node::Node::Map(vec![$((($k).to_string(), $crate::render::node::Node::from($v))),*])
    };
}

/// Builds a `Node::Seq`: `seq![a, b]`.
#[macro_export]
macro_rules! seq {
    ($($v:expr),* $(,)?) => {
        $crate::render::node::Node::Seq(vec![$($crate::render::node::Node::from($v)),*])
    };
}
