"""What the test HTTP servers share: serve on a free port of 127.0.0.1, print the port for the
test to read, and stop when standard input ends (the test dropped its handle, or died), so a
failed test leaves no server behind. With `LOOPBACK_TLS=CERT:KEY` in the environment it serves
HTTPS with that certificate and key (PEM files). `JsonHandler` is the base of the servers that
answer as an API does: JSON bodies, a Kubernetes `Status` for what they do not have, no access log."""

import json

import http.server
import os
import ssl
import sys
import threading


class JsonHandler(http.server.BaseHTTPRequestHandler):
    def reply(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def not_found(path):
    """A Kubernetes API's 404 (k8s.io/apimachinery `metav1.Status`)."""
    return 404, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                 "message": f"{path} not found", "reason": "NotFound", "code": 404}


def serve(handler, forever=False):
    """Serves `handler` until standard input ends, or until killed when `forever`."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    tls = os.environ.get("LOOPBACK_TLS")
    if tls:
        cert, key = tls.split(":", 1)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)

    def stop_with_the_test():
        sys.stdin.read()
        server.shutdown()

    if not forever:
        threading.Thread(target=stop_with_the_test, daemon=True).start()
    server.serve_forever()
