//! Problems with the user's input: each names a file, line and column, carries the line for a
//! caret (drawn by `cli::diagnostics`), says what is wrong and what would be valid. A run
//! collects all of them and prints them together, so a user fixes everything in one round.

use serde::{Deserialize, Serialize};

/// Whether a diagnostic stops the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The run fails (exit 1).
    Error,
    /// Printed; the run goes on.
    Warning,
}

/// Where in an input file a diagnostic points.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Location {
    /// The file, relative to the repository root.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub column: usize,
    /// How many characters to underline (at least 1).
    pub len: usize,
    /// The text of the line, for the caret display (a window of it, when the line is long).
    #[serde(skip)]
    pub line_text: String,
    /// The 1-based column of the caret in `line_text`.
    #[serde(skip)]
    pub text_column: usize,
}

/// One problem found in the input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// What is wrong.
    pub message: String,
    /// Where, when known.
    pub location: Option<Location>,
    /// The file, when there is no exact location.
    pub file: Option<String>,
    /// The field, as a dotted path (`spec.workers[0].replicas`), when known.
    pub field: Option<String>,
    /// What would be valid, or what to do.
    pub hint: Option<String>,
}

impl Diagnostic {
    /// An error without a location yet.
    pub fn error(message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            location: None,
            file: None,
            field: None,
            hint: None,
        }
    }

    /// A warning without a location yet.
    pub fn warning(message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(message)
        }
    }

    /// Adds a hint.
    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Points at a location.
    #[must_use]
    pub fn at(mut self, location: Option<Location>) -> Self {
        if let Some(loc) = &location {
            self.file = Some(loc.path.clone());
        }
        self.location = location;
        self
    }

    /// Names the file (when there is no exact location).
    #[must_use]
    pub fn in_file(mut self, file: impl Into<String>) -> Self {
        self.file = Some(file.into());
        self
    }

    /// Names the field.
    #[must_use]
    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// Whether this diagnostic fails the run.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Sorts diagnostics for output: by file, position, then message, so runs print identically.
pub fn sort(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by(|a, b| (&a.file, &a.location, &a.message).cmp(&(&b.file, &b.location, &b.message)));
}

/// An environment error and its causes on one line, each said once (a library's message often
/// repeats its cause's), for messages that name the error inside a sentence.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}
