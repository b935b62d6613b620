"""What the test HTTP servers share: serve on a free port of 127.0.0.1, print the port for the
test to read, and stop when standard input ends (the test dropped its handle, or died), so a
failed test leaves no server behind. With `LOOPBACK_TLS=CERT:KEY` in the environment it serves
HTTPS with that certificate and key (PEM files)."""

import http.server
import os
import ssl
import sys
import threading


def serve(handler):
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

    threading.Thread(target=stop_with_the_test, daemon=True).start()
    server.serve_forever()
