"""Another user's SGLang server, as the traffic tests need one: it answers every GET with a ``/server_info``
body, holds every ``POST /generate`` open without a token, and notes each request (``on_request``). Standard
library only: the console's test runs it as a process of its own (``python3 THIS_FILE --port N LOG``)."""

import http.server
import json
import sys
import threading


def stub_server(on_request, release, port=0):
    """A threaded HTTP server on 127.0.0.1:``port`` (0: one the kernel picks); ``release`` ends the held
    ``/generate`` requests."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            on_request(self.command, self.path)
            body = json.dumps({"version": "0.5.23", "model_path": "someone/else", "tp_size": 1}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            on_request(self.command, self.path)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            release.wait(120)  # a /generate that never finishes

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    httpd.daemon_threads = True
    return httpd


def main(argv):
    port, log = int(argv[argv.index("--port") + 1]), argv[-1]

    def note(method, path):
        with open(log, "a") as fh:
            fh.write("%s %s\n" % (method, path))

    stub_server(note, threading.Event(), port).serve_forever()


if __name__ == "__main__":
    main(sys.argv)
