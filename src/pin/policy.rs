//! Tag policies: which tag `pin --update` picks from a registry's tag list. Pure, so the
//! ordering rules are unit-tested without a registry.
//!
//! Kamaji publishes only edge builds: `YY.M.N-edge` since March 2026, `edge-YY.M.N` before, and
//! a `latest` that moves on every push. The newest edge release is the greatest
//! (year, month, increment), compared as numbers, in either format.

use std::cmp::Ordering;

use crate::model::{TagPattern, TagPolicy};

/// An edge release parsed from a tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeVersion {
    /// Two-digit year.
    pub year: u16,
    /// Month, 1 to 12.
    pub month: u16,
    /// The release within the month.
    pub increment: u32,
    /// Whether the tag is in the current `YY.M.N-edge` format.
    pub current_format: bool,
}

impl EdgeVersion {
    /// Parses `YY.M.N-edge` or `edge-YY.M.N`. Anything else is not an edge release: `latest`,
    /// pre-releases such as `26.8.2-edge-rc.1` or `edge-26.2.5-rc1`, and numbers with leading
    /// zeros, which would make two tags name one release.
    pub fn parse(tag: &str) -> Option<EdgeVersion> {
        let (numbers, current_format) = match (tag.strip_suffix("-edge"), tag.strip_prefix("edge-")) {
            (Some(n), None) => (n, true),
            (None, Some(n)) => (n, false),
            _ => return None,
        };
        let mut parts = numbers.split('.');
        let (year, month, increment) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || year.len() != 2 {
            return None;
        }
        let version = EdgeVersion {
            year: number(year)?.try_into().ok()?,
            month: number(month)?.try_into().ok()?,
            increment: number(increment)?,
            current_format,
        };
        (1..=12).contains(&version.month).then_some(version)
    }

    /// Release order: (year, month, increment); for one release published under both formats,
    /// the current format wins, so the pick is deterministic.
    fn key(&self) -> (u16, u16, u32, bool) {
        (self.year, self.month, self.increment, self.current_format)
    }
}

impl PartialOrd for EdgeVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for EdgeVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

/// Digits only, no leading zero (but `0` itself), at most 9 digits.
fn number(text: &str) -> Option<u32> {
    let ok = !text.is_empty()
        && text.len() <= 9
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    ok.then(|| text.parse().ok()).flatten()
}

/// The tag `policy` picks from `tags`, or `None` when no tag qualifies.
pub fn pick<'a>(policy: &TagPolicy, tags: &'a [String]) -> Option<&'a str> {
    match policy.pattern {
        TagPattern::Edge => tags
            .iter()
            .filter(|t| !policy.exclude.contains(t))
            .filter_map(|t| EdgeVersion::parse(t).map(|v| (v, t)))
            .max_by(|a, b| a.0.cmp(&b.0))
            .map(|(_, t)| t.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(exclude: &[&str]) -> TagPolicy {
        TagPolicy {
            pattern: TagPattern::Edge,
            exclude: exclude.iter().map(|s| (*s).to_string()).collect(),
        }
    }

    fn tags(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn parses_both_formats() {
        let new = EdgeVersion::parse("26.8.2-edge").unwrap();
        assert_eq!(
            (new.year, new.month, new.increment, new.current_format),
            (26, 8, 2, true)
        );
        let old = EdgeVersion::parse("edge-26.2.5").unwrap();
        assert_eq!(
            (old.year, old.month, old.increment, old.current_format),
            (26, 2, 5, false)
        );
    }

    #[test]
    fn refuses_what_is_not_an_edge_release() {
        for t in [
            "latest",
            "edge",
            "26.8.2",
            "v26.8.2-edge",
            "26.8.2-edge-rc.1",
            "edge-26.2.5-rc1",
            "26.8-edge",
            "26.8.2.1-edge",
            "26.08.2-edge",
            "26.8.02-edge",
            "2026.8.2-edge",
            "26.13.1-edge",
            "26.0.1-edge",
            "edge-26.8.2-edge",
            "26.8.x-edge",
            "",
        ] {
            assert_eq!(EdgeVersion::parse(t), None, "{t}");
        }
    }

    #[test]
    fn orders_numerically_across_formats() {
        let list = tags(&[
            "edge-25.12.9",
            "edge-26.2.5",
            "26.3.1-edge",
            "26.10.1-edge",
            "26.9.12-edge",
            "latest",
        ]);
        assert_eq!(pick(&edge(&[]), &list), Some("26.10.1-edge"));
        let list = tags(&["26.8.2-edge", "26.8.10-edge", "26.8.9-edge"]);
        assert_eq!(pick(&edge(&[]), &list), Some("26.8.10-edge"));
        let list = tags(&["edge-26.2.5", "edge-25.12.30"]);
        assert_eq!(pick(&edge(&[]), &list), Some("edge-26.2.5"));
    }

    #[test]
    fn skips_excluded_latest_and_pre_releases() {
        let list = tags(&[
            "26.8.1-edge",
            "26.8.2-edge",
            "26.8.3-edge-rc.1",
            "latest",
            "edge-26.2.5",
        ]);
        assert_eq!(pick(&edge(&["26.8.2-edge"]), &list), Some("26.8.1-edge"));
        assert_eq!(pick(&edge(&["26.8.2-edge", "26.8.1-edge"]), &list), Some("edge-26.2.5"));
        assert_eq!(pick(&edge(&["26.8.2-edge", "26.8.1-edge", "edge-26.2.5"]), &list), None);
        assert_eq!(pick(&edge(&[]), &tags(&["latest", "v1.0.0"])), None);
    }

    #[test]
    fn one_release_in_both_formats_picks_the_current_format() {
        let list = tags(&["edge-26.3.1", "26.3.1-edge"]);
        assert_eq!(pick(&edge(&[]), &list), Some("26.3.1-edge"));
        let list = tags(&["26.3.1-edge", "edge-26.3.1"]);
        assert_eq!(pick(&edge(&[]), &list), Some("26.3.1-edge"));
    }
}
