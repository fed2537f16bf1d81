"""A loopback HTTP server for the tests: a handler base class that answers in one call,
and a context manager that serves a handler class on 127.0.0.1 in a thread."""

import contextlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    """Answers with `self.answer(status, content_type, body)`; logs nothing."""

    def answer(self, status, kind, body):
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serving(handler):
    """Serves `handler` on 127.0.0.1 and yields `127.0.0.1:<port>`."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
