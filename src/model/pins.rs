//! Image pins: tag -> digest per image, as `pin` resolves them and `kaas.lock` keeps them
//! (`repo::lock`); rendering reads them.

use std::collections::BTreeMap;
use std::ops::{Deref, DerefMut};

/// Pinned digests by (image, tag).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImagePins(BTreeMap<(String, String), String>);

impl ImagePins {
    /// The digest pinned for `image:tag`.
    pub fn digest(&self, image: &str, tag: &str) -> Option<&str> {
        self.0.get(&(image.to_string(), tag.to_string())).map(String::as_str)
    }

    /// The tags pinned for `image` (for images whose tag a policy picks).
    pub fn tags_of(&self, image: &str) -> Vec<&str> {
        self.0
            .keys()
            .filter(|(i, _)| i == image)
            .map(|(_, t)| t.as_str())
            .collect()
    }
}

impl From<BTreeMap<(String, String), String>> for ImagePins {
    fn from(pins: BTreeMap<(String, String), String>) -> Self {
        ImagePins(pins)
    }
}

impl Deref for ImagePins {
    type Target = BTreeMap<(String, String), String>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for ImagePins {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

/// `sha256:` followed by 64 lower-case hex digits.
pub fn is_digest(s: &str) -> bool {
    s.strip_prefix("sha256:")
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}
