//! Editing a file people wrote without rewriting it: one scalar's text is replaced and every
//! other byte (comments, order, quoting style, indentation, line ends) stays as written. A YAML
//! serializer would drop comments and reflow the file, so `upgrade` edits text, not values.

use crate::spec::source::Source;

/// `text` with the scalar at `field` (`spec.kubernetes.version`) replaced by `value`, inside its
/// quotes if it is quoted; `None` when `field` is not a one-line scalar written as its own text
/// (an escaped or block scalar is never guessed at).
pub fn replace_scalar(path: &str, text: &str, field: &str, value: &str) -> Option<String> {
    let source = Source::unindexed(path, text.to_string());
    let written = source.scalar(field)?.text.clone();
    let at = source.locate(field)?;
    let line_start: usize = text.split_inclusive('\n').take(at.line - 1).map(str::len).sum();
    let line = text[line_start..].split('\n').next()?;
    let column = line.char_indices().nth(at.column - 1).map(|(i, _)| i)?;
    let rest = &line[column..];
    let quote = usize::from(rest.starts_with('"') || rest.starts_with('\''));
    if !rest[quote..].starts_with(&written) {
        return None;
    }
    let start = line_start + column + quote;
    let end = start + written.len();
    Some(format!("{}{value}{}", &text[..start], &text[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_scalar_changes_whatever_its_style() {
        let text = "# top\nspec:\n  kubernetes:\n    version: v1.32.9   # pinned\n  other: v1.32.9\n";
        let out = replace_scalar("t.yaml", text, "spec.kubernetes.version", "v1.33.5").unwrap();
        assert_eq!(out, text.replacen("v1.32.9   #", "v1.33.5   #", 1));
        let quoted = "spec:\n  kubernetes: {version: \"v1.32.9\"}\r\n";
        let out = replace_scalar("t.yaml", quoted, "spec.kubernetes.version", "v1.33.5").unwrap();
        assert_eq!(out, "spec:\n  kubernetes: {version: \"v1.33.5\"}\r\n");
        let single = "spec: {kubernetes: {version: 'v1.32.9'}}\n";
        let out = replace_scalar("t.yaml", single, "spec.kubernetes.version", "v1.33.5").unwrap();
        assert_eq!(out, "spec: {kubernetes: {version: 'v1.33.5'}}\n");
        assert_eq!(replace_scalar("t.yaml", text, "spec.missing", "x"), None);
    }
}
