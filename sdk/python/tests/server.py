"""A real ``queues serve`` for the tests: built from the repository (or $QUEUES_BIN), on a
free port, a temporary data directory and an operator token; started once per test run and
stopped at exit."""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from queues import Client

REPO = Path(__file__).resolve().parents[3]


@dataclass
class Server:
    url: str
    token: str  # the default project's every-scope token
    operator: str
    binary: str
    data_dir: str

    def client(self, token: str | None = None) -> Client:
        return Client(self.url, self.token if token is None else token)

    def operator_client(self) -> Client:
        return Client(self.url, self.operator)

    def env(self) -> dict[str, str]:
        """The environment for the queues CLI (the Go SDK) talking to this server."""
        return {**os.environ, "QUEUES_URL": self.url, "QUEUES_TOKEN": self.token}


_lock = threading.Lock()
_server: Server | None = None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def binary(tmp: str) -> str:
    b = os.environ.get("QUEUES_BIN")
    if b:
        return b
    out = os.path.join(tmp, "queues")
    subprocess.run(["go", "build", "-o", out, "./services/queues"], cwd=REPO, check=True)
    return out


def get() -> Server:
    """The shared server, started on first use."""
    global _server
    with _lock:
        if _server is None:
            _server = _start()
        return _server


def _start() -> Server:
    tmp = tempfile.mkdtemp(prefix="queues-py-")
    atexit.register(shutil.rmtree, tmp, True)
    b = binary(tmp)
    data = os.path.join(tmp, "data")
    port = _free_port()
    operator = "op_" + secrets.token_hex(16)
    env = {**os.environ, "QUEUES_DATA_DIR": data, "QUEUES_LISTEN": f"127.0.0.1:{port}",
           "QUEUES_OPERATOR_TOKEN": operator, "QUEUES_LOG_LEVEL": "warn",
           "QUEUES_ADMIN_LISTEN": f"127.0.0.1:{_free_port()}"}
    # Its own URL is its public URL (the iss of push tokens), so a TokenVerifier given just the
    # issuer finds the keys at <issuer>/.well-known/jwks.json, as a receiver's would.
    env["QUEUES_PUBLIC_URL"] = f"http://127.0.0.1:{port}"
    log = open(os.path.join(tmp, "serve.log"), "wb")
    proc = subprocess.Popen([b, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)

    def stop() -> None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()

    atexit.register(stop)
    url = f"http://127.0.0.1:{port}"
    token_file = os.path.join(data, "token")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"queues serve exited {proc.returncode}: {Path(log.name).read_bytes()[-2000:]!r}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                pass
            if os.path.exists(token_file):
                token = Path(token_file).read_text().strip()
                if token:
                    return Server(url, token, operator, b, data)
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError("queues serve did not start within 60 s")


def unique(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(4)}"
