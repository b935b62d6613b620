//! The payload that custom jsonschema keywords (CEL rules, list types) put in their errors, so
//! that the schema check can show the rule and the field below the node it names.

use jsonschema::ValidationError;
use serde::{Deserialize, Serialize};

/// The payload of a custom keyword's error: what failed and, for CEL, the rule and the field
/// below the node it names.
#[derive(Debug, Serialize, Deserialize)]
pub struct CustomError {
    /// The message to show.
    pub message: String,
    /// The CEL rule, when a rule failed.
    pub rule: Option<String>,
    /// A path below the node (`.spec.x` or `[2]`), when the error is about a child.
    pub field_path: Option<String>,
    /// The field a CEL rule read but the object does not set.
    pub absent: Option<String>,
}

impl CustomError {
    /// As a jsonschema error (the payload travels as JSON in the message).
    pub fn into_error(self) -> ValidationError<'static> {
        ValidationError::custom(serde_json::to_string(&self).unwrap_or_default())
    }
}
