"""A git smart-HTTP server for the tests and the e2e bed: `git http-backend` as a CGI, serving
the bare repositories under ROOT on 127.0.0.1 and printing the port.

Usage: python3 git_http.py ROOT [--auth USER:PASSWORD] [--forever]

--auth     refuse requests without HTTP basic auth as USER:PASSWORD (the push tests)
--forever  serve until killed (the e2e bed, whose processes have no standard input); without
           it the server stops when its standard input ends, so a test that dies leaves nothing
           behind (loopback.py)
"""

import base64
import http.server
import os
import shutil
import subprocess
import sys

import loopback  # sibling module: the script's folder is on sys.path

ROOT = os.path.abspath(sys.argv[1])
ARGS = sys.argv[2:]
AUTH = ARGS[ARGS.index("--auth") + 1] if "--auth" in ARGS else None
EXPECTED = "Basic " + base64.b64encode(AUTH.encode()).decode() if AUTH else None
GIT = shutil.which("git")


class Handler(http.server.BaseHTTPRequestHandler):
    def body(self):
        # git sends pushes larger than http.postBuffer (1 MiB) chunked, without Content-Length.
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def serve(self):
        data = self.body()
        if EXPECTED and self.headers.get("Authorization") != EXPECTED:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        path, _, query = self.path.partition("?")
        # Only what the CGI needs: no GIT_* variable of the caller's reaches the backend.
        env = {
            "GIT_PROJECT_ROOT": ROOT, "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path,
            "QUERY_STRING": query, "REQUEST_METHOD": self.command, "REMOTE_ADDR": "127.0.0.1",
            "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(data)),
            "REMOTE_USER": AUTH.split(":")[0] if AUTH else "anonymous",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        }
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        out = subprocess.run([GIT, "http-backend"], input=data, env=env, capture_output=True).stdout
        head, _, rest = out.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.split(b"\r\n"):
            key, _, value = line.decode().partition(":")
            if key.lower() == "status":
                status = int(value.split()[0])
            elif key:
                headers.append((key, value.strip()))
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(rest)))
        self.end_headers()
        self.wfile.write(rest)

    do_GET = serve
    do_POST = serve

    def log_message(self, fmt, *args):
        if "--forever" in ARGS:
            sys.stderr.write("git-http: " + (fmt % args) + "\n")


loopback.serve(Handler, forever="--forever" in ARGS)
