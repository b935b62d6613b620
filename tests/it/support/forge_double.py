"""A TEST DOUBLE of GitHub's or GitLab's REST API, for `pr --open` (tests/it/forge.rs): neither
forge can run here, so this answers the requests kaas-gitops sends with the response shapes
their references document, and keeps the pull (merge) requests in memory. Gitea, which can
run here, is tested against the real server instead.

Usage: python3 forge_double.py github|gitlab TOKEN LOG -- serves on 127.0.0.1, prints the port.
Each request is appended to LOG as `METHOD PATH` (the token is never logged).

GitHub (docs.github.com/en/rest/pulls/pulls, .../issues/labels, .../pulls/review-requests,
API version 2022-11-28), served at the root like api.github.com:
  GET/POST /repos/{o}/{r}/pulls, GET/PATCH /repos/{o}/{r}/pulls/{n},
  POST /repos/{o}/{r}/issues/{n}/labels, POST /repos/{o}/{r}/pulls/{n}/requested_reviewers.
  `Authorization: Bearer TOKEN` else 401 "Bad credentials"; a second open pull request for a head
  is refused with 422 "Validation Failed" / "A pull request already exists for o:branch."; a
  base other than `main` with 422 (field `base`, code `invalid`).
GitLab (docs.gitlab.com/api/merge_requests, .../api/users), under /api/v4:
  GET/POST /projects/{id}/merge_requests, GET/PUT /projects/{id}/merge_requests/{iid},
  GET /users?username=NAME (the users `pat` and `sam` exist).
  `PRIVATE-TOKEN: TOKEN` else 401 "401 Unauthorized"; a second open MR for a source branch is
  refused with 409 ["Another open merge request already exists for this source branch: !N"].

Repository names pick a failure, for the error paths:
  */forbidden  403 (GitHub: "Resource not accessible by personal access token")
  */missing    404
  */limited    the first request answers 429 with Retry-After: 1, then normally
  */limited-403  the first request answers 403 with Retry-After: 1 (GitHub's secondary limit)
  */exhausted  403 with x-ratelimit-remaining: 0 and Retry-After: 3600, always
  */racy       the first list answers [] although a request is open (it was opened meanwhile)
"""

import json
import sys
import threading
import urllib.parse

import http.server
import loopback  # sibling module: the script's folder is on sys.path

KIND, TOKEN, LOG = sys.argv[1], sys.argv[2], sys.argv[3]
LOCK = threading.Lock()
PULLS = {}  # repo -> list of dicts
FIRST = set()  # repos whose first-request failure was served
USERS = {"pat": 7, "sam": 8}


def origin(handler):
    return "http://" + handler.headers.get("Host", "127.0.0.1")


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, status, body, headers=None):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"{}")

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_PATCH(self):
        self.handle_any("PATCH")

    def do_PUT(self):
        self.handle_any("PUT")

    def handle_any(self, method):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        with LOCK:
            with open(LOG, "a") as log:
                log.write(f"{method} {self.path}\n")
            if KIND == "github":
                self.github(method, url.path, query)
            else:
                self.gitlab(method, url.path, query)

    def failure(self, repo, denied):
        """The failure a repository's name asks for, served; or False."""
        name = repo.rsplit("/", 1)[-1]
        if name == "forbidden":
            self.reply(403, denied)
        elif name == "missing":
            self.reply(404, {"message": "Not Found"} if KIND == "github" else {"message": "404 Project Not Found"})
        elif name == "exhausted":
            self.reply(403, {"message": "API rate limit exceeded"},
                       {"Retry-After": "3600", "x-ratelimit-remaining": "0"})
        elif name == "limited" and repo not in FIRST:
            FIRST.add(repo)
            self.reply(429, {"message": "Too Many Requests"}, {"Retry-After": "1"})
        elif name == "limited-403" and repo not in FIRST:
            FIRST.add(repo)
            self.reply(403, {"message": "You have exceeded a secondary rate limit"}, {"Retry-After": "1"})
        else:
            return False
        return True

    # GitHub ----------------------------------------------------------------------------------

    def github(self, method, path, query):
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self.reply(401, {"message": "Bad credentials",
                                    "documentation_url": "https://docs.github.com/rest", "status": "401"})
        if not self.headers.get("User-Agent"):
            return self.reply(403, {"message": "Request forbidden by administrative rules."})
        parts = path.strip("/").split("/")
        if len(parts) < 4 or parts[0] != "repos":
            return self.reply(404, {"message": "Not Found"})
        repo = parts[1] + "/" + parts[2]
        if self.failure(repo, {"message": "Resource not accessible by personal access token"}):
            return
        pulls = PULLS.setdefault(repo, [])
        rest = parts[3:]
        if rest == ["pulls"] and method == "GET":
            if repo.endswith("/racy") and repo not in FIRST:
                FIRST.add(repo)
                return self.reply(200, [])
            want = query.get("head", "")
            found = [p for p in pulls if p["state"] == query.get("state", "open")
                     and (not want or f"{parts[1]}:{p['head']['ref']}" == want)]
            return self.reply(200, found)
        if rest == ["pulls"] and method == "POST":
            b = self.body()
            if not b.get("title") or not b.get("head") or not b.get("base"):
                return self.reply(422, {"message": "Validation Failed",
                                        "errors": [{"resource": "PullRequest", "code": "missing_field"}]})
            if b["base"] != "main":
                return self.reply(422, {"message": "Validation Failed", "errors": [
                    {"resource": "PullRequest", "field": "base", "code": "invalid"}]})
            if any(p["head"]["ref"] == b["head"] and p["state"] == "open" for p in pulls):
                return self.reply(422, {"message": "Validation Failed", "errors": [
                    {"resource": "PullRequest", "code": "custom",
                     "message": f"A pull request already exists for {parts[1]}:{b['head']}."}],
                    "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"})
            n = len(pulls) + 1
            p = {"number": n, "state": "open", "title": b["title"], "body": b.get("body"),
                 "draft": bool(b.get("draft")), "labels": [], "requested_reviewers": [],
                 "head": {"ref": b["head"], "label": f"{parts[1]}:{b['head']}"},
                 "base": {"ref": b["base"]},
                 "html_url": f"{origin(self)}/{repo}/pull/{n}",
                 "url": f"{origin(self)}/repos/{repo}/pulls/{n}"}
            pulls.append(p)
            return self.reply(201, p)
        if len(rest) >= 2 and rest[0] in ("pulls", "issues") and rest[1].isdigit():
            n = int(rest[1])
            if not 1 <= n <= len(pulls):
                return self.reply(404, {"message": "Not Found"})
            p = pulls[n - 1]
            if rest[0] == "pulls" and len(rest) == 2 and method == "GET":
                return self.reply(200, p)
            if rest[0] == "pulls" and len(rest) == 2 and method == "PATCH":
                b = self.body()
                for k in ("title", "body", "state"):
                    if k in b:
                        p[k] = b[k]
                return self.reply(200, p)
            if rest[0] == "issues" and rest[2:] == ["labels"] and method == "POST":
                for name in self.body().get("labels", []):
                    if name not in [l["name"] for l in p["labels"]]:
                        p["labels"].append({"name": name, "color": "ededed"})
                return self.reply(200, p["labels"])
            if rest[0] == "pulls" and rest[2:] == ["requested_reviewers"] and method == "POST":
                for name in self.body().get("reviewers", []):
                    if name not in USERS:
                        return self.reply(422, {"message": "Reviews may only be requested from collaborators. "
                                                           "One or more of the users or teams you specified is not a collaborator of the "
                                                           f"{repo} repository."})
                    p["requested_reviewers"].append({"login": name})
                return self.reply(201, p)
        return self.reply(404, {"message": "Not Found"})

    # GitLab ----------------------------------------------------------------------------------

    def gitlab(self, method, path, query):
        if self.headers.get("PRIVATE-TOKEN") != TOKEN:
            return self.reply(401, {"message": "401 Unauthorized"})
        raw = self.path.split("?")[0]
        if not raw.startswith("/api/v4/"):
            return self.reply(404, {"error": "404 Not Found"})
        raw = raw[len("/api/v4/"):]
        if raw == "users" and method == "GET":
            name = query.get("username", "")
            return self.reply(200, [{"id": USERS[name], "username": name}] if name in USERS else [])
        parts = raw.split("/")
        if len(parts) < 3 or parts[0] != "projects":
            return self.reply(404, {"error": "404 Not Found"})
        # The project id is the URL-encoded path: one segment.
        repo = urllib.parse.unquote(parts[1])
        if "/" not in repo:
            return self.reply(404, {"message": "404 Project Not Found"})
        if self.failure(repo, {"message": "403 Forbidden"}):
            return
        mrs = PULLS.setdefault(repo, [])
        rest = parts[2:]
        if rest == ["merge_requests"] and method == "GET":
            if repo.endswith("/racy") and repo not in FIRST:
                FIRST.add(repo)
                return self.reply(200, [])
            found = [m for m in mrs if m["state"] == query.get("state", "opened")
                     and m["source_branch"] == query.get("source_branch", m["source_branch"])]
            return self.reply(200, found)
        if rest == ["merge_requests"] and method == "POST":
            b = self.body()
            if not b.get("title") or not b.get("source_branch") or not b.get("target_branch"):
                return self.reply(400, {"error": "title is missing"})
            if b["target_branch"] != "main":
                return self.reply(422, {"message": ["Target branch is invalid"]})
            for m in mrs:
                if m["source_branch"] == b["source_branch"] and m["state"] == "opened":
                    return self.reply(409, {"message": [
                        f"Another open merge request already exists for this source branch: !{m['iid']}"]})
            iid = len(mrs) + 1
            labels = [l for l in (b.get("labels") or "").split(",") if l]
            m = {"id": 1000 + iid, "iid": iid, "state": "opened", "title": b["title"],
                 "description": b.get("description"), "source_branch": b["source_branch"],
                 "target_branch": b["target_branch"], "labels": labels,
                 "draft": b["title"].startswith("Draft:"),
                 "reviewers": [{"id": i, "username": u} for u, i in USERS.items()
                               if i in (b.get("reviewer_ids") or [])],
                 "web_url": f"{origin(self)}/{repo}/-/merge_requests/{iid}"}
            mrs.append(m)
            return self.reply(201, m)
        if len(rest) == 2 and rest[0] == "merge_requests" and rest[1].isdigit():
            iid = int(rest[1])
            if not 1 <= iid <= len(mrs):
                return self.reply(404, {"message": "404 Not found"})
            m = mrs[iid - 1]
            if method == "GET":
                return self.reply(200, m)
            if method == "PUT":
                b = self.body()
                for k in ("title", "description"):
                    if k in b:
                        m[k] = b[k]
                m["draft"] = m["title"].startswith("Draft:")
                for l in (b.get("add_labels") or "").split(","):
                    if l and l not in m["labels"]:
                        m["labels"].append(l)
                return self.reply(200, m)
        return self.reply(404, {"error": "404 Not Found"})


loopback.serve(Handler)
