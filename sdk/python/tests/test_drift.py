"""The client against openapi.yaml: every operation of the API has a Client method, and every
route the client calls is one the API documents, so drift in either direction fails here."""

from __future__ import annotations

import re
import unittest
from pathlib import Path

from queues import ROUTES, Client

OPENAPI = Path(__file__).resolve().parents[3] / "openapi.yaml"

# Project routes (docs/tenancy.md#routes) and the client already calls, which an openapi.yaml from before that
# work does not list yet. Once the document lists them they are checked like the others.
PENDING = {
    ("PATCH", "/v1/projects/{project}"),
    ("GET", "/v1/projects/{project}/usage"),
    ("GET", "/v1/project"),
    ("GET", "/v1/project/usage"),
}

# The receive stream is a WebSocket (docs/streaming.md): the Go SDK's Consume uses it; this
# client receives by polling, which is the stream's fallback. The send stream likewise: the Go
# SDK's Producer uses it; this client sends over HTTP, its fallback. (The topic stream is here:
# topic_stream, over queues/_ws.py.)
NOT_HERE = {("GET", "/v1/queues/{}/stream"), ("GET", "/v1/queues/{}/send-stream")}

_PATH = re.compile(r"^  (/[^\s:]*):\s*$")
_METHOD = re.compile(r"^    (get|put|post|patch|delete|head|options):\s*$")


def operations(text: str) -> set[tuple[str, str]]:
    """(METHOD, path) of every operation under the document's top-level ``paths:``: a reader
    of just the block layout openapi.yaml is written in (two-space indents)."""
    ops: set[tuple[str, str]] = set()
    in_paths, path = False, None
    for line in text.splitlines():
        if line and not line[0].isspace():
            in_paths = line.rstrip() == "paths:"
            path = None
            continue
        if not in_paths:
            continue
        if m := _PATH.match(line):
            path = m.group(1)
        elif path and (m := _METHOD.match(line)):
            ops.add((m.group(1).upper(), path))
    return ops


def normalized(route: tuple[str, str]) -> tuple[str, str]:
    return route[0], re.sub(r"\{[^}]+\}", "{}", route[1])


class TestDrift(unittest.TestCase):
    def setUp(self) -> None:
        self.ops = {normalized(o) for o in operations(OPENAPI.read_text()) if o[1] != "/metrics"} - NOT_HERE
        self.assertGreater(len(self.ops), 25, "the reader found too few operations in openapi.yaml")

    def test_every_operation_has_a_method(self) -> None:
        client_routes = {normalized(r): name for r, name in ROUTES.items()}
        missing = sorted(self.ops - client_routes.keys())
        self.assertEqual(missing, [], "operations of openapi.yaml without a Client method (add them to ROUTES)")
        for name in client_routes.values():
            self.assertTrue(callable(getattr(Client, name, None)), f"ROUTES names Client.{name}, which does not exist")

    def test_every_method_calls_a_documented_route(self) -> None:
        pending = {normalized(r) for r in PENDING}
        unknown = sorted(normalized(r) for r in ROUTES if normalized(r) not in self.ops | pending)
        self.assertEqual(unknown, [], "Client routes that openapi.yaml does not document")

    def test_reader(self) -> None:
        doc = "openapi: 3.1.0\npaths:\n  /v1/a/{x}:\n    parameters: []\n    get:\n      x: 1\n    post:\n" \
              "  /healthz:\n    get:\ncomponents:\n  /v1/not-a-path:\n    get:\n"
        self.assertEqual(operations(doc), {("GET", "/v1/a/{x}"), ("POST", "/v1/a/{x}"), ("GET", "/healthz")})


if __name__ == "__main__":
    unittest.main()
