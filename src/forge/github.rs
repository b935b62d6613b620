//! GitHub's REST API (docs.github.com/en/rest/pulls/pulls, .../rest/issues/labels,
//! .../rest/pulls/review-requests; API version 2022-11-28):
//!
//! - `GET /repos/{owner}/{repo}/pulls?head={owner}:{branch}&state=open` finds the open one;
//! - `POST /repos/{owner}/{repo}/pulls` `{title, head, base, body, draft}` creates one (201);
//!   a second for the same head is refused with 422 `Validation Failed`, `errors[].message`
//!   "A pull request already exists for owner:branch.", which sends us back to the lookup;
//! - `PATCH /repos/{owner}/{repo}/pulls/{number}` `{title, body}` updates it;
//! - `POST /repos/{owner}/{repo}/issues/{number}/labels` `{labels}` adds labels (a pull request
//!   is an issue; unknown names are created);
//! - `POST /repos/{owner}/{repo}/pulls/{number}/requested_reviewers` `{reviewers}`.

use reqwest::{Method, StatusCode};
use serde::Deserialize;
use serde_json::json;

use crate::forge::http::{Client, encode};
use crate::forge::{ForgeError, How, Kind, Opened, Request, Target, Token, invalid, missing_labels, refused};

#[derive(Deserialize)]
struct Pull {
    number: u64,
    html_url: String,
    title: String,
    body: Option<String>,
    #[serde(default)]
    labels: Vec<Label>,
}

#[derive(Deserialize)]
struct Label {
    name: String,
}

/// Opens or updates the pull request for `request.head`.
pub fn open(target: &Target, token: &Token, request: &Request) -> Result<Opened, ForgeError> {
    let client = Client::new(
        Kind::Github,
        &target.api,
        &[
            ("authorization", format!("Bearer {}", token.0)),
            ("x-github-api-version", "2022-11-28".into()),
        ],
        crate::forge::TIMEOUT,
    )?;
    let repo = &target.repo;
    let pull = match find(&client, target, request)? {
        Some(p) => Some(p),
        None => {
            let body = json!({
                "title": request.title,
                "head": request.head,
                "base": request.base,
                "body": request.body,
                "draft": request.draft,
            });
            let answer = client.send(Method::POST, &format!("/repos/{repo}/pulls"), Some(&body))?;
            if answer.status == StatusCode::CREATED {
                let p: Pull = answer
                    .json("the new pull request")
                    .map_err(|d| invalid(Kind::Github, target, d))?;
                add_labels(&client, target, p.number, &request.labels)?;
                if !request.reviewers.is_empty() {
                    let answer = client.send(
                        Method::POST,
                        &format!("/repos/{repo}/pulls/{}/requested_reviewers", p.number),
                        Some(&json!({ "reviewers": request.reviewers })),
                    )?;
                    if !answer.status.is_success() {
                        return Err(refused(
                            Kind::Github,
                            format!("request reviews on #{}", p.number),
                            &answer,
                        ));
                    }
                }
                return Ok(Opened {
                    number: p.number,
                    url: p.html_url,
                    how: How::Created,
                });
            }
            // Opened meanwhile (or by an earlier run whose answer was lost): update that one.
            if answer.status == StatusCode::UNPROCESSABLE_ENTITY && answer.message().contains("already exists") {
                find(&client, target, request)?
            } else {
                return Err(refused(
                    Kind::Github,
                    format!("open a pull request from `{}` into `{}`", request.head, request.base),
                    &answer,
                ));
            }
        }
    };
    let Some(pull) = pull else {
        return Err(invalid(
            Kind::Github,
            target,
            format!(
                "it says a pull request for `{}` exists but lists none open",
                request.head
            ),
        ));
    };
    let mut how = How::Unchanged;
    if pull.title != request.title || pull.body.as_deref().unwrap_or_default() != request.body {
        let answer = client.send(
            Method::PATCH,
            &format!("/repos/{repo}/pulls/{}", pull.number),
            Some(&json!({ "title": request.title, "body": request.body })),
        )?;
        if !answer.status.is_success() {
            return Err(refused(Kind::Github, format!("update #{}", pull.number), &answer));
        }
        how = How::Updated;
    }
    let have: Vec<String> = pull.labels.into_iter().map(|l| l.name).collect();
    if add_labels(&client, target, pull.number, &missing_labels(&request.labels, &have))? {
        how = How::Updated;
    }
    Ok(Opened {
        number: pull.number,
        url: pull.html_url,
        how,
    })
}

/// The open pull request whose head is `request.head` in this repository.
fn find(client: &Client, target: &Target, request: &Request) -> Result<Option<Pull>, ForgeError> {
    let owner = target.repo.split('/').next().unwrap_or_default();
    let path = format!(
        "/repos/{}/pulls?head={}&state=open&per_page=100",
        target.repo,
        encode(&format!("{owner}:{}", request.head))
    );
    let answer = client.get(&path)?;
    if !answer.status.is_success() {
        return Err(refused(
            Kind::Github,
            format!("list the pull requests of `{}`", target.repo),
            &answer,
        ));
    }
    let pulls: Vec<Pull> = answer
        .json("the pull request list")
        .map_err(|d| invalid(Kind::Github, target, d))?;
    Ok(pulls.into_iter().next())
}

/// Adds `labels` to issue `number`; whether there were any.
fn add_labels(client: &Client, target: &Target, number: u64, labels: &[String]) -> Result<bool, ForgeError> {
    if labels.is_empty() {
        return Ok(false);
    }
    let answer = client.send(
        Method::POST,
        &format!("/repos/{}/issues/{number}/labels", target.repo),
        Some(&json!({ "labels": labels })),
    )?;
    if !answer.status.is_success() {
        return Err(refused(Kind::Github, format!("label #{number}"), &answer));
    }
    Ok(true)
}
