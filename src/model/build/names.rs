//! Kubernetes name and label rules, with messages that say what would be valid.

/// A DNS-1035 label: lower-case letters, digits and `-`, starting with a letter, not ending
/// with `-`.
pub fn is_dns1035(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[b.len() - 1] != b'-'
}

/// A DNS-1123 label: like DNS-1035 but may start with a digit.
pub fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && !b[0].is_ascii_uppercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[b.len() - 1] != b'-'
}

/// A DNS-1123 subdomain: dot-separated labels, at most 253 characters.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

/// A label value or a key's name part: 1-63 letters, digits, `-`, `_`, `.`, alphanumeric at
/// both ends.
pub(crate) fn is_label_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// A label or annotation key: `[prefix/]name`. `None` when valid, else why not.
pub fn label_key_problem(key: &str) -> Option<String> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix
        && !is_dns1123_subdomain(p)
    {
        return Some(format!("the prefix `{p}` is not a DNS subdomain"));
    }
    if !is_label_name_part(name) {
        return Some(
            "the name part must be 1-63 characters of letters, digits, `-`, `_`, `.`, starting and ending with a letter or digit"
                .into(),
        );
    }
    None
}

/// A label value: empty, or up to 63 characters like a key's name part.
pub fn label_value_problem(value: &str) -> Option<String> {
    if value.is_empty() || is_label_name_part(value) {
        None
    } else if value.len() > 63 {
        Some(format!("{} characters; a label value has at most 63", value.len()))
    } else {
        Some("a label value is letters, digits, `-`, `_`, `.`, starting and ending with a letter or digit".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_rules() {
        assert!(is_dns1035("acme-1"));
        assert!(!is_dns1035("1acme"));
        assert!(!is_dns1035("Acme"));
        assert!(!is_dns1035("acme-"));
        assert!(!is_dns1035("ac_me"));
        assert!(is_dns1123_label("1pool"));
        assert!(is_dns1123_subdomain("node-role.kubernetes.io"));
        assert!(label_key_problem("node-role.kubernetes.io/node").is_none());
        assert!(label_key_problem("bad key").is_some());
        assert!(label_value_problem("").is_none());
        assert!(label_value_problem(&"a".repeat(64)).is_some());
    }
}
