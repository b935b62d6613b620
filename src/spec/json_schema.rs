//! Reading jsonschema's errors, shared by the spec's shape check and the `validate` engine's
//! schema check: locations as dotted paths, values as shown in messages, the fields a schema
//! node lists.

use jsonschema::paths::{Location, LocationSegment};
use serde_json::Value;

/// A JSON pointer location as the span index's dotted path (`spec.items[0].name`).
pub fn dotted(location: &Location) -> String {
    let mut out = String::new();
    for segment in location {
        match segment {
            LocationSegment::Property(p) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&p);
            }
            LocationSegment::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// A value as shown in a message, cut at 60 characters (at a character's boundary: a value
/// may be any text a user wrote).
pub fn shown(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() <= 60 {
        return s;
    }
    let mut cut: String = s.chars().take(57).collect();
    cut.push_str("...");
    cut
}

/// The fields the schema node at `schema_path`'s parent lists.
pub fn fields_at(converted: &Value, schema_path: &Location) -> Vec<String> {
    let pointer = schema_path.as_str();
    let parent = pointer.rsplit_once('/').map_or("", |(p, _)| p);
    converted
        .pointer(parent)
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}
