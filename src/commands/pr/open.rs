//! `pr --open`: after the branches are pushed, open (or update) one pull request per branch on
//! the forge behind the remote (`crate::forge`), and print each URL on stdout.
//!
//! The branches stay pushed whatever happens here: a forge that cannot be named, a missing
//! token or a refusal is reported once per cause with exit 2, saying which branches are pushed,
//! and rerunning the same command finds and updates the request instead of opening a second.

use crate::cli::{Forge, PrArgs, Printer};
use crate::commands::ExitStatus;
use crate::commands::pr::plan::Plan;
use crate::forge::{self, ForgeError, How, Kind, Request, Target, Token};
use crate::git::Workspace;
use crate::git::pr::Base;

/// Opens or updates the request of every plan's (pushed) branch.
/// Opens (or updates) one request per plan. Returns the exit status and, per plan, what the
/// forge answered (`None` where it failed), for `--format json`.
pub fn open_all(
    printer: &Printer,
    ws: &Workspace,
    args: &PrArgs,
    base: &Base,
    plans: &[Plan],
) -> (ExitStatus, Vec<Option<serde_json::Value>>) {
    let remote = args.push.as_deref().unwrap_or_default();
    let branches: Vec<&str> = plans.iter().map(|p| p.branch.as_str()).collect();
    let (target, token) = match prepare(ws, remote, args) {
        Ok(t) => t,
        Err(e) => {
            report(printer, &e, remote, &branches);
            return (ExitStatus::Error, Vec::new());
        }
    };
    // The branch the request merges into, as the forge names it: `origin/main` is `main`.
    let into = base_branch(&base.label, remote);
    let mut status = ExitStatus::Success;
    let mut answers = Vec::new();
    for plan in plans {
        let request = Request {
            base: into.clone(),
            head: plan.branch.clone(),
            title: plan.title.clone(),
            body: plan.body.clone(),
            labels: args.labels.clone(),
            reviewers: args.reviewers.clone(),
            draft: args.draft,
        };
        match forge::open(&target, &token, &request) {
            Ok(opened) => {
                let what = target.kind.request_name();
                let n = match target.kind {
                    Kind::Gitlab => format!("!{}", opened.number),
                    Kind::Github | Kind::Gitea => format!("#{}", opened.number),
                };
                let how = match opened.how {
                    How::Created => format!("opened {what} {n}"),
                    How::Updated => format!("updated {what} {n}"),
                    How::Unchanged => format!("{what} {n} is already up to date"),
                };
                printer.status(&format!("`{}`: {how}", plan.branch));
                if !printer.is_json() {
                    printer.data(&format!("{}\n", opened.url));
                }
                let action = match opened.how {
                    How::Created => "created",
                    How::Updated => "updated",
                    How::Unchanged => "unchanged",
                };
                answers.push(Some(
                    serde_json::json!({"forge": format!("{:?}", target.kind).to_lowercase(),
                    "number": opened.number, "url": opened.url, "action": action}),
                ));
            }
            Err(e) => {
                report(printer, &e, remote, &[plan.branch.as_str()]);
                status = ExitStatus::Error;
                answers.push(None);
            }
        }
    }
    (status, answers)
}

/// The forge, its API and the token, from the remote's URL, `--forge`, `--forge-url` and the
/// environment.
fn prepare(ws: &Workspace, remote: &str, args: &PrArgs) -> Result<(Target, Token), ForgeError> {
    // The fetch URL names the repository on the forge; a `pushurl` may point elsewhere.
    let url = ws
        .repo
        .find_remote(remote)
        .ok()
        .and_then(|r| r.url().ok().map(str::to_string))
        .unwrap_or_default();
    let kind = args.forge.map(|f| match f {
        Forge::Github => Kind::Github,
        Forge::Gitlab => Kind::Gitlab,
        Forge::Gitea => Kind::Gitea,
    });
    let target = forge::target(&url, kind, args.forge_url.as_deref())?;
    let token = forge::token(target.kind, |v| std::env::var(v).ok())?;
    Ok((target, token))
}

/// `main` for a base named `origin/main` on remote `origin`; any other name as it is.
fn base_branch(label: &str, remote: &str) -> String {
    label.strip_prefix(&format!("{remote}/")).unwrap_or(label).to_string()
}

/// One error, what it leaves behind, and what to do.
fn report(printer: &Printer, e: &ForgeError, remote: &str, branches: &[&str]) {
    printer.error_chain(&anyhow::Error::msg(e.to_string()));
    let named: Vec<String> = branches.iter().map(|b| format!("`{b}`")).collect();
    let (them, stay) = if named.len() == 1 {
        ("that branch", "is pushed to")
    } else {
        ("those branches", "are pushed to")
    };
    printer.note(&format!(
        "{} {stay} `{remote}` and stay{} there; no pull request was opened or changed for {them}. Run the same command again once this is fixed: it opens the request, or updates the one that is open, never a second one",
        named.join(", "),
        if named.len() == 1 { "s" } else { "" }
    ));
    printer.hint(&e.hint());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_tracking_base_merges_into_the_remotes_branch() {
        assert_eq!(base_branch("origin/main", "origin"), "main");
        assert_eq!(base_branch("main", "origin"), "main");
        assert_eq!(base_branch("upstream/main", "origin"), "upstream/main");
    }
}
