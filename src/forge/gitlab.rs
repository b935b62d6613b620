//! GitLab's REST API v4 (docs.gitlab.com/api/merge_requests, .../api/users):
//!
//! - `GET /projects/:id/merge_requests?state=opened&source_branch=B` finds the open one (`:id`
//!   is the URL-encoded project path);
//! - `POST /projects/:id/merge_requests` `{source_branch, target_branch, title, description,
//!   labels, reviewer_ids}` creates one (201); a second open one for the source branch is
//!   refused with 409 "Another open merge request already exists for this source branch",
//!   which sends us back to the lookup;
//! - `PUT /projects/:id/merge_requests/:iid` `{title, description, add_labels}` updates it;
//! - `GET /users?username=NAME` turns a reviewer's name into the id GitLab wants.
//!
//! GitLab marks drafts by the title: `Draft: ` in front. An MR someone marked as a draft stays
//! one when the title is updated.

use reqwest::{Method, StatusCode};
use serde::Deserialize;
use serde_json::json;

use crate::forge::http::{Client, encode};
use crate::forge::{Created, ForgeError, How, Kind, Opened, Request, Target, Token, find_or_create, missing_labels};

#[derive(Deserialize)]
struct MergeRequest {
    iid: u64,
    web_url: String,
    title: String,
    description: Option<String>,
    #[serde(default)]
    labels: Vec<String>,
    #[serde(default)]
    draft: bool,
}

#[derive(Deserialize)]
struct User {
    id: u64,
}

const DRAFT: &str = "Draft: ";

/// Opens or updates the merge request for `request.head`.
pub fn open(target: &Target, token: &Token, request: &Request) -> Result<Opened, ForgeError> {
    let client = Client::new(
        Kind::Gitlab,
        &target.api,
        &[("private-token", token.0.clone())],
        crate::forge::TIMEOUT,
    )?;
    let project = format!("/projects/{}", encode(&target.repo));
    let (mr, how) = find_or_create(
        &client,
        request,
        || find(&client, target, &project, request),
        || {
            let mut reviewer_ids = Vec::new();
            for name in &request.reviewers {
                reviewer_ids.push(user_id(&client, name)?);
            }
            let title = if request.draft {
                format!("{DRAFT}{}", request.title)
            } else {
                request.title.clone()
            };
            let body = json!({
                "source_branch": request.head,
                "target_branch": request.base,
                "title": title,
                "description": request.body,
                "labels": request.labels.join(","),
                "reviewer_ids": reviewer_ids,
            });
            let answer = client.send(Method::POST, &format!("{project}/merge_requests"), Some(&body))?;
            match answer.status {
                StatusCode::CREATED => Ok(Created::New(client.parse(&answer, "the new merge request")?)),
                StatusCode::CONFLICT => Ok(Created::Exists),
                _ => Err(client.refused(
                    format!("open a merge request from `{}` into `{}`", request.head, request.base),
                    &answer,
                )),
            }
        },
    )?;
    let opened = |how| Opened {
        number: mr.iid,
        url: mr.web_url.clone(),
        how,
    };
    if how == How::Created {
        return Ok(opened(How::Created));
    }
    let title = if mr.draft || request.draft {
        format!("{DRAFT}{}", request.title)
    } else {
        request.title.clone()
    };
    let add = missing_labels(&request.labels, &mr.labels);
    if mr.title == title && mr.description.as_deref().unwrap_or_default() == request.body && add.is_empty() {
        return Ok(opened(How::Unchanged));
    }
    let mut body = json!({ "title": title, "description": request.body });
    if !add.is_empty() {
        body["add_labels"] = json!(add.join(","));
    }
    client.call(
        Method::PUT,
        &format!("{project}/merge_requests/{}", mr.iid),
        Some(&body),
        || format!("update !{}", mr.iid),
    )?;
    Ok(opened(How::Updated))
}

fn find(
    client: &Client,
    target: &Target,
    project: &str,
    request: &Request,
) -> Result<Option<MergeRequest>, ForgeError> {
    let mrs: Vec<MergeRequest> = client.get_json(
        &format!(
            "{project}/merge_requests?state=opened&source_branch={}",
            encode(&request.head)
        ),
        || format!("list the merge requests of `{}`", target.repo),
        "the merge request list",
    )?;
    Ok(mrs.into_iter().next())
}

fn user_id(client: &Client, name: &str) -> Result<u64, ForgeError> {
    let users: Vec<User> = client.get_json(
        &format!("/users?username={}", encode(name)),
        || format!("look up the user `{name}`"),
        "the user list",
    )?;
    users.first().map(|u| u.id).ok_or_else(|| ForgeError::Refused {
        forge: Kind::Gitlab,
        action: format!("request a review from `{name}`"),
        status: 404,
        message: format!("no GitLab user `{name}`"),
    })
}
