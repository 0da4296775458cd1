"""Every request names the SDK and its version in its User-Agent (``queues-python/<version>``),
so the service's logs tell SDK releases apart."""

from __future__ import annotations

import http.server
import threading
import unittest

from queues import USER_AGENT, Client, __version__


class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.seen.append(self.headers.get("User-Agent", ""))
        body = b'{"status":"ok"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class TestUserAgent(unittest.TestCase):
    def test_version_in_user_agent(self) -> None:
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        with Client(f"http://127.0.0.1:{srv.server_port}", "t") as c:
            c.health()
        self.assertEqual(_Recorder.seen, ["queues-python/" + __version__])
        self.assertEqual(USER_AGENT, "queues-python/" + __version__)


if __name__ == "__main__":
    unittest.main()
