"""docs/receiving-pushes.md's FastAPI and Flask receivers, run as written: each snippet is taken
from the guide, given a `seen`/`work` pair that records the messages, and served on a real port
by a Python that has the framework (Debian's python3-fastapi, python3-uvicorn and python3-flask;
skipped without them, as make test installs them). `queues listen --forward` then delivers a
queue's messages to it exactly as the pusher would; every message must be worked once and end
settled (the FastAPI receiver answers 202 and acknowledges later over /v1/receipts/ack), a
forged push must be refused with 401, and a receiver started without a secret must not start."""

from __future__ import annotations

import base64
import os
import queue
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

from . import server
from .server import unique

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "receiving-pushes.md"
SDK = Path(__file__).resolve().parents[1]

# What the guide leaves to the reader: its deduplication store and its work. Each worked message
# is printed, so the test sees what the receiver did.
RECORD = {
    "fastapi": '''
_seen: set = set()
async def seen(message_id):
    return message_id in _seen
async def work(m):
    _seen.add(m["messageId"])
    print("WORK", m["messageId"], flush=True)
import uvicorn
uvicorn.run(app, host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning")
''',
    "flask": '''
_seen: set = set()
def seen(message_id):
    return message_id in _seen
import sys, threading
_out = threading.Lock()  # handle_push runs a batch's handlers in threads: one line each
def work(m):
    _seen.add(m.message_id)
    with _out:
        sys.stdout.write(f"WORK {m.message_id}\\n")
        sys.stdout.flush()
app.run(host="127.0.0.1", port=int(os.environ["PORT"]))
''',
}
HEADINGS = {"fastapi": "## Python, FastAPI (async)", "flask": "## Python, Flask"}
MODULES = {"fastapi": "fastapi, uvicorn", "flask": "flask"}


def snippet(framework: str) -> str:
    """The first python code block under the framework's heading in the guide."""
    text = GUIDE.read_text()
    start = text.index(HEADINGS[framework])
    m = re.compile(r"```python\n(.*?)```", re.S).search(text, start)
    assert m is not None, f"no python block under {HEADINGS[framework]}"
    return m.group(1)


def python_with(modules: str) -> str | None:
    """A Python interpreter that imports modules: this one, or Debian's."""
    for exe in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(exe) and subprocess.run([exe, "-c", f"import {modules}"], capture_output=True).returncode == 0:
            return exe
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen[str], deadline: float) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the receiver exited with {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"the receiver did not listen on {port}")


class SnippetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = server.get()
        cls.c = cls.srv.client()
        cls.tmp = tempfile.mkdtemp()

    def receiver(self, framework: str, secret: str, port: int) -> subprocess.Popen[str]:
        exe = python_with(MODULES[framework])
        if exe is None:
            self.skipTest(f"no {MODULES[framework]} (apt-get install python3-{framework})")
        path = os.path.join(self.tmp, f"{framework}_app.py")
        with open(path, "w") as f:
            f.write(snippet(framework) + RECORD[framework])
        env = {**os.environ, "PYTHONPATH": str(SDK), "PORT": str(port), "QUEUES_URL": self.srv.url,
               "QUEUES_SIGNING_SECRET": secret}
        return subprocess.Popen([exe, path], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def check(self, framework: str) -> None:
        secret = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
        port = free_port()
        app = self.receiver(framework, secret, port)
        self.addCleanup(app.kill)
        wait_port(port, app, time.monotonic() + 30)
        worked: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [worked.put(line.split()[1]) for line in app.stdout or [] if line.startswith("WORK ")],
                         daemon=True).start()

        name = unique(f"snip-{framework}")
        self.c.create_queue(name)
        sent = {m.message_id for m in self.c.send_batch(name, ["one", "two", "three"]).messages}
        listen = subprocess.Popen([self.srv.binary, "listen", name, "--forward", f"http://127.0.0.1:{port}/queues",
                                   "--secret", secret], env=self.srv.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(listen.kill)
        got = {worked.get(timeout=30) for _ in sent}
        self.assertEqual(got, sent)
        deadline = time.monotonic() + 30
        while (counts := self.c.get_queue(name).counts) and (counts.visible, counts.in_flight) != (0, 0):
            self.assertLess(time.monotonic(), deadline, f"not settled: {counts}")
            time.sleep(0.05)
        listen.send_signal(signal.SIGINT)
        self.assertEqual(listen.wait(30), 0, listen.stderr.read() if listen.stderr else "")

        forged = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
                                 "-H", "webhook-id: msg_x", "-H", f"webhook-timestamp: {int(time.time())}",
                                 "-H", "webhook-signature: v1,AAAA", "-H", "content-type: application/json",
                                 "--data", '{"messages":[]}', f"http://127.0.0.1:{port}/queues"], capture_output=True, text=True)
        self.assertEqual(forged.stdout, "401")

    def test_fastapi(self) -> None:
        self.check("fastapi")

    def test_flask(self) -> None:
        self.check("flask")

    def test_no_secret_no_start(self) -> None:
        for framework in ("fastapi", "flask"):
            with self.subTest(framework):
                app = self.receiver(framework, "", free_port())
                self.assertNotEqual(app.wait(30), 0)


if __name__ == "__main__":
    unittest.main()
