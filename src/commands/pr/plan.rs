//! What `pr` writes, planned before anything is written: one branch's files and the text of
//! its pull request (`pr`, `pr_platform`), later written and pushed by `pr` and opened by
//! `pr_open`.

use std::collections::BTreeMap;

use crate::diagnostics::Diagnostic;
use crate::git::Change;

/// One branch to write: what goes on it and the text of its pull request.
pub struct Plan {
    /// The tenant it proposes, `None` for the platform's branch.
    pub tenant: Option<String>,
    /// The branch.
    pub branch: String,
    /// Every file the branch changes against the base.
    pub changes: Vec<Change>,
    /// Whether kaas-gitops decides a path's content on the branch (others' work elsewhere is
    /// kept on reruns).
    pub decided: Box<dyn Fn(&str) -> bool>,
    /// The commit's author, from `kaas.yaml`.
    pub author: Option<(String, String)>,
    /// The pull request's title (the commit's subject).
    pub title: String,
    /// The commit message.
    pub message: String,
    /// The pull request's markdown body.
    pub body: String,
}

/// What planning one branch came to.
pub enum Planned {
    /// The inputs are invalid: nothing is written.
    Invalid(Vec<Diagnostic>),
    /// The base already holds it.
    Nothing(String),
    /// A branch to write.
    Branch(Plan),
}

/// Every rendered file.
pub fn is_any_output(p: &str) -> bool {
    crate::layout::is_rendered(p)
}

/// The changes a branch makes against the base: each wanted path (`None`: deleted) whose
/// content differs from the base's.
pub fn against_base(base: &BTreeMap<String, Vec<u8>>, want: BTreeMap<String, Option<Vec<u8>>>) -> Vec<Change> {
    want.into_iter()
        .filter(|(p, new)| base.get(p) != new.as_ref())
        .map(|(path, new)| Change {
            old: base.get(&path).cloned(),
            path,
            new,
        })
        .collect()
}
