//! `pr --open`: the pull (merge) request for a pushed branch, on GitHub, GitLab or
//! Gitea/Forgejo, through their REST APIs. One request per branch: an open one is found and
//! updated (title, body, labels), never a second one created.
//!
//! The forge and its API are found from the remote's URL (github.com, gitlab.com and `gitlab.*`
//! hosts, codeberg.org), or named with `--forge` (and `--forge-url` for the API of a
//! self-hosted instance). Tokens come from the variables each forge's own CLI reads, never
//! from a file, and are never printed.

use std::fmt;
use std::time::Duration;

mod gitea;
mod github;
mod gitlab;
pub(crate) mod http;

/// A forge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// github.com or GitHub Enterprise Server.
    Github,
    /// gitlab.com or a self-managed GitLab.
    Gitlab,
    /// Gitea or Forgejo (the same API).
    Gitea,
}

impl Kind {
    /// The environment variables the token is read from, in order.
    pub fn token_vars(self) -> &'static [&'static str] {
        match self {
            // gh reads GH_TOKEN before GITHUB_TOKEN (`gh help environment`).
            Kind::Github => &["GH_TOKEN", "GITHUB_TOKEN"],
            Kind::Gitlab => &["GITLAB_TOKEN"],
            Kind::Gitea => &["GITEA_TOKEN"],
        }
    }

    /// What the forge calls the thing.
    pub fn request_name(self) -> &'static str {
        match self {
            Kind::Gitlab => "merge request",
            Kind::Github | Kind::Gitea => "pull request",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Github => "GitHub",
            Kind::Gitlab => "GitLab",
            Kind::Gitea => "Gitea",
        })
    }
}

/// Where requests go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The forge.
    pub kind: Kind,
    /// The API's base URL, without a trailing slash: `https://api.github.com`,
    /// `https://gitlab.example.org/api/v4`, `https://git.example.org/api/v1`.
    pub api: String,
    /// The repository's path on the forge: `owner/name`, or `group/sub/name` on GitLab.
    pub repo: String,
}

/// A token, never shown: its `Debug` and `Display` print nothing of it.
pub struct Token(String);

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// What to open or update.
#[derive(Debug, Clone)]
pub struct Request {
    /// The branch the request merges into.
    pub base: String,
    /// The pushed branch.
    pub head: String,
    /// The title.
    pub title: String,
    /// The markdown body.
    pub body: String,
    /// Labels to put on it (added to those it has).
    pub labels: Vec<String>,
    /// Users asked to review it, when it is created.
    pub reviewers: Vec<String>,
    /// Opened as a draft.
    pub draft: bool,
}

/// What happened to the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// A new one.
    Created,
    /// The open one, with a new title, body or labels.
    Updated,
    /// The open one, already as asked.
    Unchanged,
}

/// The request after the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    /// Its number (GitLab: its iid).
    pub number: u64,
    /// Its page, for people.
    pub url: String,
    /// What happened.
    pub how: How,
}

/// Why no request was opened, in the terms a user acts on.
#[derive(Debug, thiserror::Error)]
pub enum ForgeError {
    /// The remote's host is none the tool knows, and `--forge` was not given.
    #[error("cannot tell which forge hosts `{url}`")]
    UnknownForge {
        /// The remote's URL.
        url: String,
    },
    /// A local path or `file://` remote: no forge behind it.
    #[error("the remote `{url}` has no HTTPS equivalent: it is not on a forge")]
    NoHttps {
        /// The remote's URL.
        url: String,
    },
    /// `--forge-url` is not an http(s) URL.
    #[error("`--forge-url {url}` is not an http:// or https:// URL")]
    BadApiUrl {
        /// What was given.
        url: String,
    },
    /// No token in the environment.
    #[error("no {forge} token: none of {} is set", vars.join(", "))]
    NoToken {
        /// The forge.
        forge: Kind,
        /// The variables read.
        vars: Vec<&'static str>,
    },
    /// The token cannot be sent in a header (a newline, say).
    #[error("the {forge} token is not a valid HTTP header value")]
    BadToken {
        /// The forge.
        forge: Kind,
    },
    /// No connection, no answer in time, or 5xx after every attempt.
    #[error("could not reach {forge} at `{url}`: {detail}")]
    Unreachable {
        /// The forge.
        forge: Kind,
        /// The URL asked.
        url: String,
        /// What went wrong.
        detail: String,
    },
    /// 429, or 403 because of a rate limit, asking to wait longer than we do.
    #[error("{forge} rate-limits these requests (`{url}`): it asks to wait {seconds} s")]
    RateLimited {
        /// The forge.
        forge: Kind,
        /// The URL asked.
        url: String,
        /// The wait asked for.
        seconds: u64,
    },
    /// Any other refusal: 401, 403, 404, 409, 422.
    #[error("{forge} refused to {action}: HTTP {status}{}", if message.is_empty() { String::new() } else { format!(": {message}") })]
    Refused {
        /// The forge.
        forge: Kind,
        /// What was asked.
        action: String,
        /// The HTTP status.
        status: u16,
        /// The forge's message.
        message: String,
    },
    /// An answer that is not what the API reference documents.
    #[error("{forge} answered `{url}` unexpectedly: {detail}")]
    Invalid {
        /// The forge.
        forge: Kind,
        /// The URL asked.
        url: String,
        /// What is wrong.
        detail: String,
    },
}

impl ForgeError {
    /// What the user can do about it.
    pub fn hint(&self) -> String {
        match self {
            ForgeError::UnknownForge { .. } => {
                "name it: `--forge github|gitlab|gitea`, and for a self-hosted instance its API with `--forge-url` (e.g. https://git.example.org/api/v1)".into()
            }
            ForgeError::NoHttps { .. } => {
                "open the request from a remote on the forge (its https:// or SSH URL), or give `--forge` and `--forge-url`".into()
            }
            ForgeError::BadApiUrl { .. } => "e.g. `--forge-url https://git.example.org/api/v1`".into(),
            ForgeError::NoToken { forge, vars } => format!(
                "export {} with a {forge} token that may open {}s on this repository (it is read from the environment only and never printed)",
                vars[0],
                forge.request_name()
            ),
            ForgeError::BadToken { forge } => format!("check the value of {}", forge.token_vars().join(" / ")),
            ForgeError::Unreachable { .. } => "check the forge's URL and the network, then run the same command again".into(),
            ForgeError::RateLimited { .. } => "wait that long and run the same command again".into(),
            ForgeError::Refused { status: 401, forge, .. } => {
                format!("the token was not accepted: check {} (expired or revoked?)", forge.token_vars().join(" / "))
            }
            ForgeError::Refused { status: 403, .. } => {
                "the token lacks a permission: it needs write access to pull requests (GitHub: `pull_requests: write`; GitLab: the `api` scope; Gitea: `write:repository`)".into()
            }
            ForgeError::Refused { status: 404, .. } => {
                "check the repository path and API URL; a forge also answers 404 to a token that may not see the repository".into()
            }
            ForgeError::Refused { .. } | ForgeError::Invalid { .. } => {
                "fix what the forge names and run the same command again".into()
            }
        }
    }
}

/// The token of `kind` from `env` (the process environment in use: `std::env::var`).
pub fn token(kind: Kind, env: impl Fn(&str) -> Option<String>) -> Result<Token, ForgeError> {
    kind.token_vars()
        .iter()
        .find_map(|v| env(v).filter(|t| !t.trim().is_empty()))
        .map(|t| Token(t.trim().to_string()))
        .ok_or_else(|| ForgeError::NoToken {
            forge: kind,
            vars: kind.token_vars().to_vec(),
        })
}

/// A remote URL as a forge's web address: scheme, host (with a port for http(s)), path.
#[derive(Debug, PartialEq, Eq)]
struct Web {
    /// `https`, or `http` when the remote itself is plain HTTP.
    scheme: &'static str,
    host: String,
    port: Option<u16>,
    /// Without leading or trailing `/`, without `.git`.
    path: String,
}

impl Web {
    fn origin(&self) -> String {
        match self.port {
            Some(p) => format!("{}://{}:{p}", self.scheme, self.host),
            None => format!("{}://{}", self.scheme, self.host),
        }
    }
}

/// The web address behind a remote URL: `https://host/path`, `http://host:port/path`,
/// `ssh://[user@]host[:port]/path`, `git://host/path`, and scp-like `user@host:path`. A local
/// path or `file://` has none.
fn web(url: &str) -> Option<Web> {
    let (scheme, rest, keep_port) = if let Some(r) = url.strip_prefix("https://") {
        ("https", r, true)
    } else if let Some(r) = url.strip_prefix("http://") {
        ("http", r, true)
    } else if let Some(r) = url.strip_prefix("ssh://").or_else(|| url.strip_prefix("git+ssh://")) {
        ("https", r, false)
    } else if let Some(r) = url.strip_prefix("git://") {
        ("https", r, false)
    } else if url.contains("://") {
        return None;
    } else {
        // scp-like: `[user@]host:path`, where no `/` comes before the first `:` (git's rule).
        let colon = url.find(':')?;
        if url[..colon].contains('/') || colon == 0 {
            return None;
        }
        let host = url[..colon].rsplit('@').next()?;
        return Some(Web {
            scheme: "https",
            host: host.to_ascii_lowercase(),
            port: None,
            path: clean_path(&url[colon + 1..])?,
        });
    };
    let (authority, path) = rest.split_once('/')?;
    let authority = authority.rsplit('@').next()?;
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h, Some(p.parse::<u16>().ok()?)),
        None => (authority, None),
    };
    if host.is_empty() {
        return None;
    }
    Some(Web {
        scheme,
        host: host.to_ascii_lowercase(),
        port: if keep_port { port } else { None },
        path: clean_path(path)?,
    })
}

fn clean_path(path: &str) -> Option<String> {
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path).trim_end_matches('/');
    // `owner/name` at least; GitLab nests groups.
    (path.split('/').count() >= 2 && path.split('/').all(|s| !s.is_empty())).then(|| path.to_string())
}

/// The forge and API for a remote URL, `--forge` and `--forge-url`.
pub fn target(remote_url: &str, forge: Option<Kind>, api: Option<&str>) -> Result<Target, ForgeError> {
    let web = web(remote_url).ok_or_else(|| ForgeError::NoHttps {
        url: remote_url.to_string(),
    })?;
    let kind = match forge {
        Some(k) => k,
        None if web.host == "github.com" || web.host == "www.github.com" => Kind::Github,
        None if web.host == "gitlab.com" || web.host.starts_with("gitlab.") => Kind::Gitlab,
        None if web.host == "codeberg.org" || web.host.starts_with("gitea.") || web.host.starts_with("forgejo.") => {
            Kind::Gitea
        }
        None => {
            return Err(ForgeError::UnknownForge {
                url: remote_url.to_string(),
            });
        }
    };
    let api = match api {
        Some(a) => {
            if !(a.starts_with("https://") || a.starts_with("http://")) {
                return Err(ForgeError::BadApiUrl { url: a.to_string() });
            }
            a.trim_end_matches('/').to_string()
        }
        None => match kind {
            Kind::Github if web.host == "github.com" || web.host == "www.github.com" => "https://api.github.com".into(),
            // GitHub Enterprise Server serves its REST API under /api/v3.
            Kind::Github => format!("{}/api/v3", web.origin()),
            Kind::Gitlab => format!("{}/api/v4", web.origin()),
            Kind::Gitea => format!("{}/api/v1", web.origin()),
        },
    };
    Ok(Target {
        kind,
        api,
        repo: web.path,
    })
}

/// Each HTTP request's connect and read timeout.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// Opens the request for `request.head`, or updates the open one.
pub fn open(target: &Target, token: &Token, request: &Request) -> Result<Opened, ForgeError> {
    match target.kind {
        Kind::Github => github::open(target, token, request),
        Kind::Gitlab => gitlab::open(target, token, request),
        Kind::Gitea => gitea::open(target, token, request),
    }
}

/// What a create call of a forge answered.
enum Created<T> {
    /// The new request.
    New(T),
    /// One for the branch exists already (opened meanwhile, or by an earlier run whose answer
    /// was lost): the caller finds and updates that one.
    Exists,
}

/// The open request for `request.head` and whether this call created it: `find` looks for it,
/// `create` opens it when there is none; when `create` says it exists after all, it is found again.
fn find_or_create<T>(
    client: &http::Client,
    request: &Request,
    find: impl Fn() -> Result<Option<T>, ForgeError>,
    create: impl FnOnce() -> Result<Created<T>, ForgeError>,
) -> Result<(T, How), ForgeError> {
    if let Some(found) = find()? {
        return Ok((found, How::Unchanged));
    }
    match create()? {
        Created::New(made) => Ok((made, How::Created)),
        Created::Exists => find()?.map(|found| (found, How::Unchanged)).ok_or_else(|| {
            client.invalid(format!(
                "it says a {} for `{}` exists but lists none open",
                client.kind().request_name(),
                request.head
            ))
        }),
    }
}

/// Labels of `wanted` not in `have`, in order, without repeats.
fn missing_labels(wanted: &[String], have: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in wanted {
        if !have.contains(l) && !out.contains(l) {
            out.push(l.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(url: &str) -> Result<Target, ForgeError> {
        target(url, None, None)
    }

    #[test]
    fn finds_the_forge_and_api_from_the_remote() {
        for url in [
            "https://github.com/acme/fleet.git",
            "git@github.com:acme/fleet.git",
            "ssh://git@github.com/acme/fleet",
            "https://user@github.com/acme/fleet/",
        ] {
            let got = t(url).unwrap();
            assert_eq!(got.kind, Kind::Github, "{url}");
            assert_eq!(got.api, "https://api.github.com", "{url}");
            assert_eq!(got.repo, "acme/fleet", "{url}");
        }
        let gl = t("git@gitlab.example.org:platform/infra/fleet.git").unwrap();
        assert_eq!(
            (gl.kind, gl.api.as_str(), gl.repo.as_str()),
            (
                Kind::Gitlab,
                "https://gitlab.example.org/api/v4",
                "platform/infra/fleet"
            )
        );
        let gitea = target("http://127.0.0.1:3000/kaas/fleet.git", Some(Kind::Gitea), None).unwrap();
        assert_eq!(gitea.api, "http://127.0.0.1:3000/api/v1");
        let ssh_port = target("ssh://git@git.example.org:2222/o/r.git", Some(Kind::Gitea), None).unwrap();
        assert_eq!(ssh_port.api, "https://git.example.org/api/v1");
        let ghe = target("git@ghe.example.org:o/r", Some(Kind::Github), None).unwrap();
        assert_eq!(ghe.api, "https://ghe.example.org/api/v3");
    }

    #[test]
    fn refuses_what_it_cannot_tell() {
        assert!(matches!(
            t("https://git.example.org/o/r"),
            Err(ForgeError::UnknownForge { .. })
        ));
        for local in ["/srv/git/fleet.git", "../fleet", "file:///srv/git/fleet.git"] {
            assert!(
                matches!(target(local, Some(Kind::Github), None), Err(ForgeError::NoHttps { .. })),
                "{local}"
            );
        }
        assert!(matches!(
            target("https://github.com/o/r", None, Some("api.github.com")),
            Err(ForgeError::BadApiUrl { .. })
        ));
    }

    #[test]
    fn reads_the_token_in_the_cli_order_and_never_shows_it() {
        let env = |v: &str| match v {
            "GH_TOKEN" => Some("first".to_string()),
            "GITHUB_TOKEN" => Some("second".to_string()),
            _ => None,
        };
        let tok = token(Kind::Github, env).unwrap();
        assert_eq!(tok.0, "first");
        assert_eq!(format!("{tok:?}"), "Token(<redacted>)");
        let e = token(Kind::Gitlab, env).unwrap_err();
        assert_eq!(e.to_string(), "no GitLab token: none of GITLAB_TOKEN is set");
        assert!(token(Kind::Gitea, |_| Some("  ".into())).is_err());
    }
}
