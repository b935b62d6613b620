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
use crate::forge::{Created, ForgeError, How, Kind, Opened, Request, Target, Token, find_or_create, missing_labels};

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
    let (pull, how) = find_or_create(
        &client,
        request,
        || find(&client, target, request),
        || {
            let body = json!({
                "title": request.title,
                "head": request.head,
                "base": request.base,
                "body": request.body,
                "draft": request.draft,
            });
            let answer = client.send(Method::POST, &format!("/repos/{repo}/pulls"), Some(&body))?;
            match answer.status {
                StatusCode::CREATED => Ok(Created::New(client.parse(&answer, "the new pull request")?)),
                StatusCode::UNPROCESSABLE_ENTITY if answer.message().contains("already exists") => Ok(Created::Exists),
                _ => Err(client.refused(
                    format!("open a pull request from `{}` into `{}`", request.head, request.base),
                    &answer,
                )),
            }
        },
    )?;
    if how == How::Created {
        add_labels(&client, target, pull.number, &request.labels)?;
        if !request.reviewers.is_empty() {
            client.call(
                Method::POST,
                &format!("/repos/{repo}/pulls/{}/requested_reviewers", pull.number),
                Some(&json!({ "reviewers": request.reviewers })),
                || format!("request reviews on #{}", pull.number),
            )?;
        }
        return Ok(Opened {
            number: pull.number,
            url: pull.html_url,
            how,
        });
    }
    let mut how = How::Unchanged;
    if pull.title != request.title || pull.body.as_deref().unwrap_or_default() != request.body {
        client.call(
            Method::PATCH,
            &format!("/repos/{repo}/pulls/{}", pull.number),
            Some(&json!({ "title": request.title, "body": request.body })),
            || format!("update #{}", pull.number),
        )?;
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
    let pulls: Vec<Pull> = client.get_json(
        &path,
        || format!("list the pull requests of `{}`", target.repo),
        "the pull request list",
    )?;
    Ok(pulls.into_iter().next())
}

/// Adds `labels` to issue `number`; whether there were any.
fn add_labels(client: &Client, target: &Target, number: u64, labels: &[String]) -> Result<bool, ForgeError> {
    if labels.is_empty() {
        return Ok(false);
    }
    client.call(
        Method::POST,
        &format!("/repos/{}/issues/{number}/labels", target.repo),
        Some(&json!({ "labels": labels })),
        || format!("label #{number}"),
    )?;
    Ok(true)
}
