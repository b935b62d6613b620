"""A registry that rate-limits, for tests: a test double, because the real registry the suite
runs (Debian's docker-registry, distribution v2) never answers 429 or 503 with `Retry-After`,
which is what Docker Hub and other registries do when a client pulls too much.

Usage: python3 rate_limited_registry.py MODE LOG -- serves on 127.0.0.1, prints the port, and
stops when its standard input ends. `/v2/` answers 200 (anonymous); every manifest GET is
appended to LOG as `<unix time, float> <path> <status>` and answered by MODE:

  once-seconds   the first manifest GET: 429 with `Retry-After: 2`; then 200
  once-date      the first manifest GET: 503 with `Retry-After` an HTTP date 2 s ahead; then 200
  always-long    429 with `Retry-After: 120`
  always-bare    429 without `Retry-After`

A 200 is a valid empty OCI image index with its `Docker-Content-Digest`.
"""

import email.utils
import hashlib
import http.server
import sys
import threading
import time

import loopback  # sibling module: the script's folder is on sys.path

MODE, LOG = sys.argv[1], sys.argv[2]
INDEX = b'{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}'
lock = threading.Lock()
served = {"manifests": 0}


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, headers=(), body=b"", content_type="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.rstrip("/") == "/v2":
            return self.answer(200, body=b"{}")
        if "/manifests/" not in self.path:
            return self.answer(404, body=b'{"errors":[{"code":"NOT_FOUND","message":"not here"}]}')
        with lock:
            served["manifests"] += 1
            first = served["manifests"] == 1
        limited = b'{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}'
        if MODE == "once-seconds" and first:
            status, headers, body = 429, [("Retry-After", "2")], limited
        elif MODE == "once-date" and first:
            at = email.utils.formatdate(time.time() + 2, usegmt=True)
            status, headers, body = 503, [("Retry-After", at)], b"busy"
        elif MODE == "always-long":
            status, headers, body = 429, [("Retry-After", "120")], limited
        elif MODE == "always-bare":
            status, headers, body = 429, [], limited
        else:
            digest = "sha256:" + hashlib.sha256(INDEX).hexdigest()
            status, headers, body = 200, [("Docker-Content-Digest", digest)], INDEX
        with lock, open(LOG, "a") as log:
            log.write(f"{time.time():.3f} {self.path} {status}\n")
        ctype = "application/vnd.oci.image.index.v1+json" if status == 200 else "application/json"
        self.answer(status, headers, body, ctype)


loopback.serve(Handler)
