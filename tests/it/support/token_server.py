"""A registry token server for tests: the Docker/OCI bearer-token flow that docker.io, quay.io,
ghcr.io and registry.k8s.io use, in front of a real `docker-registry` (`auth: token`).

Usage: python3 token_server.py KEY CERT LOG -- serves GET /token on 127.0.0.1 and prints the
port. Tokens are JWTs (RS256, signed with KEY by the `openssl` CLI; CERT goes in the `x5c`
header, and the registry trusts it as its root bundle). Anyone may pull, except repositories
under `private/`; the user `kaas` with password `s3cret-pass` may pull and push everything. Each
token request is appended to LOG as `<who> <scope>`, so a test can see the flow ran. It stops
when its standard input ends, so a test that dies leaves nothing behind.
"""

import base64
import json
import subprocess
import sys

import loopback  # sibling module: the script's folder is on sys.path
import time
import urllib.parse

KEY, CERT, LOG = sys.argv[1], sys.argv[2], sys.argv[3]
ISSUER, SERVICE = "kaas-token-issuer", "kaas-registry"
USER = "Basic " + base64.b64encode(b"kaas:s3cret-pass").decode()


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def cert_der_b64():
    pem = open(CERT).read()
    body = pem.split("-----BEGIN CERTIFICATE-----")[1].split("-----END CERTIFICATE-----")[0]
    return "".join(body.split())


X5C = cert_der_b64()


def token(who, access):
    now = int(time.time())
    header = {"typ": "JWT", "alg": "RS256", "x5c": [X5C]}
    claims = {"iss": ISSUER, "sub": who, "aud": SERVICE, "exp": now + 300, "nbf": now - 10,
              "iat": now, "jti": str(time.time_ns()), "access": access}
    signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
    signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", KEY], input=signing_input.encode(),
                               capture_output=True, check=True).stdout
    return signing_input + "." + b64url(signature)


def granted(who, scope):
    """The access a `repository:NAME:ACTIONS` scope is granted."""
    parts = scope.split(":")
    if len(parts) < 3 or parts[0] != "repository":
        return []
    name, actions = ":".join(parts[1:-1]), parts[-1].split(",")
    if who == "anonymous":
        actions = [] if name.startswith("private/") else [a for a in actions if a == "pull"]
    return [{"type": "repository", "name": name, "actions": actions}] if actions else []


class Handler(loopback.JsonHandler):
    def do_GET(self):
        path, _, query = self.path.partition("?")
        params = urllib.parse.parse_qs(query)
        auth = self.headers.get("Authorization")
        if path != "/token":
            return self.reply(404, {"error": "not found"})
        if auth is not None and auth != USER:
            return self.reply(401, {"errors": [{"code": "UNAUTHORIZED", "message": "bad credentials"}]})
        who = "kaas" if auth else "anonymous"
        scopes = params.get("scope", [])
        access = [a for s in scopes for a in granted(who, s)]
        with open(LOG, "a") as log:
            log.write(f"{who} {' '.join(scopes)}\n")
        self.reply(200, {"token": token(who, access), "expires_in": 300})



loopback.serve(Handler)
