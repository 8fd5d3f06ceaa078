# Default app of a podhost Python pod: replace ~/app with your own.
import os, platform
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = (f"<!doctype html><title>podhost: Python pod</title><h1>podhost</h1>"
                f"<p>Your Python pod is running on Python {platform.python_version()}.</p>\n").encode()
        self.send_response(200)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

port = int(os.environ.get("PORT", "8000"))
print(f"listening on :{port}", flush=True)
ThreadingHTTPServer(("0.0.0.0", port), Handler).serve_forever()
