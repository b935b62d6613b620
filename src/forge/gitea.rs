//! Gitea's (and Forgejo's) REST API v1, as routed in Gitea's routers/api/v1/api.go:
//!
//! - `GET /repos/{owner}/{repo}/pulls?state=open&limit=50&page=N`, filtered on `head.ref` and
//!   `head.repo_id == base.repo_id` (the list has no head filter), finds the open one;
//! - `POST /repos/{owner}/{repo}/pulls` `{head, base, title, body, reviewers}` creates one
//!   (201); a second open one for the same head and base is refused with 409
//!   (`ErrPullRequestAlreadyExists`, routers/api/v1/repo/pull.go), which sends us back to the
//!   lookup;
//! - `PATCH /repos/{owner}/{repo}/pulls/{index}` `{title, body}` updates it;
//! - `POST /repos/{owner}/{repo}/issues/{index}/labels` `{labels: [names]}` adds labels by
//!   name; names the repository lacks are skipped silently (`prepareForReplaceOrAdd`,
//!   routers/api/v1/repo/issue_label.go), so the answer's labels are checked.
//!
//! Drafts are marked by the title: `WIP: ` (the first of Gitea's default
//! `WORK_IN_PROGRESS_PREFIXES`, modules/setting/repository.go).

use reqwest::{Method, StatusCode};
use serde::Deserialize;
use serde_json::json;

use crate::forge::http::Client;
use crate::forge::{Created, ForgeError, How, Kind, Opened, Request, Target, Token, find_or_create, missing_labels};

#[derive(Deserialize)]
struct Pull {
    number: u64,
    html_url: String,
    title: String,
    body: Option<String>,
    #[serde(default)]
    labels: Option<Vec<Label>>,
    head: Branch,
    base: Branch,
}

#[derive(Deserialize)]
struct Branch {
    #[serde(rename = "ref")]
    name: String,
    repo_id: i64,
}

#[derive(Deserialize)]
struct Label {
    name: String,
}

const DRAFT: &str = "WIP: ";
/// Pages of open pull requests read at most while looking for the branch's.
const MAX_PAGES: u32 = 20;

/// Opens or updates the pull request for `request.head`.
pub fn open(target: &Target, token: &Token, request: &Request) -> Result<Opened, ForgeError> {
    let client = Client::new(
        Kind::Gitea,
        &target.api,
        &[("authorization", format!("token {}", token.0))],
        crate::forge::TIMEOUT,
    )?;
    let repo = &target.repo;
    let (pull, mut how) = find_or_create(
        &client,
        request,
        || find(&client, target, request),
        || {
            let title = if request.draft {
                format!("{DRAFT}{}", request.title)
            } else {
                request.title.clone()
            };
            let mut body = json!({
                "head": request.head,
                "base": request.base,
                "title": title,
                "body": request.body,
            });
            if !request.reviewers.is_empty() {
                body["reviewers"] = json!(request.reviewers);
            }
            let answer = client.send(Method::POST, &format!("/repos/{repo}/pulls"), Some(&body))?;
            match answer.status {
                StatusCode::CREATED => Ok(Created::New(client.parse(&answer, "the new pull request")?)),
                StatusCode::CONFLICT => Ok(Created::Exists),
                _ => Err(client.refused(
                    format!("open a pull request from `{}` into `{}`", request.head, request.base),
                    &answer,
                )),
            }
        },
    )?;
    if how != How::Created {
        let draft = request.draft || pull.title.starts_with(DRAFT.trim_end()) || pull.title.starts_with("[WIP]");
        let title = match (draft, pull.title.starts_with("[WIP]")) {
            (true, true) => format!("[WIP] {}", request.title),
            (true, false) => format!("{DRAFT}{}", request.title),
            (false, _) => request.title.clone(),
        };
        if pull.title != title || pull.body.as_deref().unwrap_or_default() != request.body {
            client.call(
                Method::PATCH,
                &format!("/repos/{repo}/pulls/{}", pull.number),
                Some(&json!({ "title": title, "body": request.body })),
                || format!("update #{}", pull.number),
            )?;
            how = How::Updated;
        }
    }
    let have: Vec<String> = pull.labels.unwrap_or_default().into_iter().map(|l| l.name).collect();
    let add = missing_labels(&request.labels, &have);
    if !add.is_empty() {
        let answer = client.call(
            Method::POST,
            &format!("/repos/{repo}/issues/{}/labels", pull.number),
            Some(&json!({ "labels": add })),
            || format!("label #{}", pull.number),
        )?;
        let now: Vec<Label> = client.parse(&answer, "the labels")?;
        let now: Vec<String> = now.into_iter().map(|l| l.name).collect();
        let unknown = missing_labels(&add, &now);
        if !unknown.is_empty() {
            return Err(ForgeError::Refused {
                forge: Kind::Gitea,
                action: format!("label #{}", pull.number),
                status: 422,
                message: format!(
                    "no label {} in `{repo}`: Gitea labels only with labels the repository (or its organisation) has; create them first",
                    unknown.iter().map(|l| format!("`{l}`")).collect::<Vec<_>>().join(", ")
                ),
            });
        }
        if how == How::Unchanged {
            how = How::Updated;
        }
    }
    Ok(Opened {
        number: pull.number,
        url: pull.html_url,
        how,
    })
}

fn find(client: &Client, target: &Target, request: &Request) -> Result<Option<Pull>, ForgeError> {
    for page in 1..=MAX_PAGES {
        let pulls: Vec<Pull> = client.get_json(
            &format!("/repos/{}/pulls?state=open&limit=50&page={page}", target.repo),
            || format!("list the pull requests of `{}`", target.repo),
            "the pull request list",
        )?;
        if pulls.is_empty() {
            return Ok(None);
        }
        if let Some(p) = pulls
            .into_iter()
            .find(|p| p.head.name == request.head && p.head.repo_id == p.base.repo_id)
        {
            return Ok(Some(p));
        }
    }
    Ok(None)
}
