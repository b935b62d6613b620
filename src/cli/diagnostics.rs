//! Diagnostics as the terminal and CI show them: the human form with the offending line and a
//! caret, and GitHub Actions' workflow commands.

use std::fmt;

use crate::diagnostics::{Diagnostic, Severity};

impl Diagnostic {
    /// One line for GitHub Actions: `::error file=...,line=...,col=...::message`.
    pub fn github_annotation(&self) -> String {
        let level = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let mut props = Vec::new();
        if let Some(file) = &self.file {
            props.push(format!("file={file}"));
        }
        if let Some(loc) = &self.location {
            props.push(format!("line={}", loc.line));
            props.push(format!("col={}", loc.column));
        }
        let mut message = self.message.clone();
        if let Some(hint) = &self.hint {
            message.push_str(" (hint: ");
            message.push_str(hint);
            message.push(')');
        }
        // GitHub's workflow-command escaping.
        let message = message.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A");
        if props.is_empty() {
            format!("::{level}::{message}")
        } else {
            format!("::{level} {}::{message}", props.join(","))
        }
    }
}

impl fmt::Display for Diagnostic {
    /// The human form:
    ///
    /// ```text
    /// error: `autoscaling.min` (4) is greater than `autoscaling.max` (2)
    ///   --> tenants/acme.yaml:23:22
    ///    |
    /// 23 |       autoscaling: {min: 4, max: 2}
    ///    |                          ^
    ///    = hint: min must be at most max
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        writeln!(f, "{level}: {}", self.message)?;
        let gutter = match &self.location {
            Some(loc) => {
                let width = loc.line.to_string().len();
                let pad = " ".repeat(width);
                writeln!(f, "{pad}--> {}:{}:{}", loc.path, loc.line, loc.column)?;
                let line = loc.line_text.trim_end_matches(['\r', '\n']);
                // A diagnostic read back from JSON (the `--format json` envelope's copy on
                // stderr) has no line text: the location alone, not an empty snippet.
                if line.is_empty() && loc.text_column == 0 {
                    if let Some(field) = &self.field {
                        writeln!(f, "{pad} = field: `{field}`")?;
                    }
                    if let Some(hint) = &self.hint {
                        writeln!(f, "{pad} = hint: {hint}")?;
                    }
                    return Ok(());
                }
                writeln!(f, "{pad} |")?;
                writeln!(f, "{} | {line}", loc.line)?;
                let before: String = line
                    .chars()
                    .take(loc.text_column.saturating_sub(1))
                    .map(|c| if c == '\t' { '\t' } else { ' ' })
                    .collect();
                let rest = line.chars().count().saturating_sub(before.chars().count());
                writeln!(f, "{pad} | {before}{}", "^".repeat(loc.len.min(rest).max(1)))?;
                pad
            }
            None => {
                if let Some(file) = &self.file {
                    writeln!(f, "  --> {file}")?;
                }
                " ".to_string()
            }
        };
        if let Some(field) = &self.field {
            writeln!(f, "{gutter} = field: `{field}`")?;
        }
        if let Some(hint) = &self.hint {
            writeln!(f, "{gutter} = hint: {hint}")?;
        }
        Ok(())
    }
}
