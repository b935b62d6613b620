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

/// The byte offset where `(line, column)` (1-based, columns in characters) starts in `text`,
/// and that line.
fn offset(text: &str, line: usize, column: usize) -> Option<(usize, usize, &str)> {
    let line_start: usize = text.split_inclusive('\n').take(line - 1).map(str::len).sum();
    let line_text = text[line_start..].split('\n').next()?;
    let col = line_text.char_indices().nth(column - 1).map(|(i, _)| i)?;
    Some((line_start, col, line_text))
}

/// `text` with `key: value` added to the mapping that holds the scalar at `after`
/// (`spec.kubernetes.version`), right after it: on the next line with the same indentation in
/// a block mapping, or as `, key: value` in a flow mapping (`{version: v1.33.4}`). `None` when
/// the place is not one of those two plain shapes.
pub fn insert_after(path: &str, text: &str, after: &str, key: &str, value: &str) -> Option<String> {
    let source = Source::unindexed(path, text.to_string());
    let written = source.scalar(after)?.text.clone();
    let at = source.locate(after)?;
    let key_at = source.locate_key(after)?;
    let (line_start, column, line) = offset(text, at.line, at.column)?;
    let rest = &line[column..];
    let quote = usize::from(rest.starts_with('"') || rest.starts_with('\''));
    if !rest[quote..].starts_with(&written) {
        return None;
    }
    let value_end = line_start + column + quote + written.len() + quote;
    let tail = text[value_end..].trim_start_matches([' ', '\t']);
    if tail.starts_with(',') || tail.starts_with('}') {
        return Some(format!("{}, {key}: {value}{}", &text[..value_end], &text[value_end..]));
    }
    // Block mapping: the key starts its line (after indentation) on the same line as the value.
    if key_at.line != at.line {
        return None;
    }
    let (_, key_column, _) = offset(text, key_at.line, key_at.column)?;
    let indent = &line[..key_column];
    if !indent.chars().all(|c| c == ' ') {
        return None;
    }
    let eol = if line.ends_with('\r') { "\r\n" } else { "\n" };
    let line_end = line_start + line.len() + 1;
    if line_end > text.len() {
        return Some(format!("{text}{eol}{indent}{key}: {value}{eol}"));
    }
    Some(format!(
        "{}{indent}{key}: {value}{eol}{}",
        &text[..line_end],
        &text[line_end..]
    ))
}

/// `text` without the key and scalar at `field`: its whole line in a block mapping, or the
/// `key: value` entry (with its comma) in a flow mapping. `None` when the entry is not one of
/// those plain shapes (a comment or another key on its line in block style, a multi-line value).
pub fn remove_entry(path: &str, text: &str, field: &str) -> Option<String> {
    let source = Source::unindexed(path, text.to_string());
    let written = source.scalar(field)?.text.clone();
    let at = source.locate(field)?;
    let key_at = source.locate_key(field)?;
    if key_at.line != at.line {
        return None;
    }
    let (line_start, column, line) = offset(text, at.line, at.column)?;
    let (_, key_column, _) = offset(text, key_at.line, key_at.column)?;
    let rest = &line[column..];
    let quote = usize::from(rest.starts_with('"') || rest.starts_with('\''));
    if !rest[quote..].starts_with(&written) {
        return None;
    }
    let value_end = column + quote + written.len() + quote;
    let before = &line[..key_column];
    let after = line[value_end..].trim_end_matches('\r');
    if before.chars().all(|c| c == ' ') && (after.trim().is_empty() || after.trim_start().starts_with('#')) {
        let line_end = (line_start + line.len() + 1).min(text.len());
        return Some(format!("{}{}", &text[..line_start], &text[line_end..]));
    }
    // Flow mapping: drop `, key: value` (or `key: value, ` when it comes first).
    let trimmed = before.trim_end_matches([' ', '\t']);
    if trimmed.ends_with(',') {
        let from = line_start + trimmed.len() - 1;
        return Some(format!("{}{}", &text[..from], &text[line_start + value_end..]));
    }
    let next = after.trim_start_matches([' ', '\t']);
    if next.starts_with(',') {
        let skip = after.len() - next.len() + 1;
        let rest = &after[skip..];
        let spaces = rest.len() - rest.trim_start_matches([' ', '\t']).len();
        let to = line_start + value_end + skip + spaces;
        return Some(format!("{}{}", &text[..line_start + key_column], &text[to..]));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sibling_goes_in_after_the_scalar_in_block_and_flow_style() {
        let block = "spec:\n  kubernetes:\n    version: v1.34.2   # pinned\n  workers: []\n";
        let out = insert_after("t.yaml", block, "spec.kubernetes.version", "workersVersion", "v1.33.4").unwrap();
        assert_eq!(
            out,
            "spec:\n  kubernetes:\n    version: v1.34.2   # pinned\n    workersVersion: v1.33.4\n  workers: []\n"
        );
        assert_eq!(
            remove_entry("t.yaml", &out, "spec.kubernetes.workersVersion").unwrap(),
            block
        );
        let flow = "spec:\n  kubernetes: {version: \"v1.34.2\"}\r\n";
        let out = insert_after("t.yaml", flow, "spec.kubernetes.version", "workersVersion", "v1.33.4").unwrap();
        assert_eq!(
            out,
            "spec:\n  kubernetes: {version: \"v1.34.2\", workersVersion: v1.33.4}\r\n"
        );
        assert_eq!(
            remove_entry("t.yaml", &out, "spec.kubernetes.workersVersion").unwrap(),
            flow
        );
        let first = "spec: {kubernetes: {workersVersion: v1.33.4, version: v1.34.2}}\n";
        assert_eq!(
            remove_entry("t.yaml", first, "spec.kubernetes.workersVersion").unwrap(),
            "spec: {kubernetes: {version: v1.34.2}}\n"
        );
        // At the end of a file without a final line end.
        let last = "spec:\n  kubernetes:\n    version: v1.34.2";
        assert_eq!(
            insert_after("t.yaml", last, "spec.kubernetes.version", "workersVersion", "v1.33.4").unwrap(),
            "spec:\n  kubernetes:\n    version: v1.34.2\n    workersVersion: v1.33.4\n"
        );
    }

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
