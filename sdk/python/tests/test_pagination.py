"""Every paginated list of the API has an iterator that follows ``nextCursor`` to the end, each
checked with pages smaller than what it lists against a real ``queues serve`` (the push
attempts, which need a pusher reaching an endpoint, on a stand-in server)."""

from __future__ import annotations

import http.server
import json
import threading
import time
import unittest
import urllib.parse
from typing import Any, Callable

from queues import Client, PublishMessage, SendMessage

from . import server
from .server import unique

# Every GET of openapi.yaml that takes a cursor, and the Client iterator that follows it;
# test_every_paginated_operation_has_an_iterator reads openapi.yaml to keep this complete.
ITERATORS = {
    "/v1/projects": "all_projects",
    "/v1/queues": "all_queues",
    "/v1/queues/{queue}/messages": "browse_all",
    "/v1/queues/{queue}/groups": "all_groups",
    "/v1/queues/{queue}/consumers": "all_consumers",
    "/v1/queues/{queue}/subscription/attempts": "all_subscription_attempts",
    "/v1/queues/{queue}/move-tasks": "all_move_tasks",
    "/v1/topics": "all_topics",
    "/v1/topics/{topic}/messages": "log_entries",
    "/v1/topics/{topic}/state": "all_state",
    "/v1/topics/{topic}/replays": "all_replays",
}


def cursor_paths(openapi: str) -> set[str]:
    """The paths whose GET takes the Cursor parameter (the block layout of openapi.yaml)."""
    out, path, in_get = set(), None, False
    for line in openapi.splitlines():
        if line.startswith("  /") and line.rstrip().endswith(":"):
            path, in_get = line.strip()[:-1], False
        elif line.startswith("    ") and not line.startswith("     "):
            in_get = line.strip() == "get:"
        elif in_get and path and "parameters/Cursor'" in line:
            out.add(path)
    return out


class PaginationTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = server.get()
        cls.op = cls.srv.operator_client()
        p = cls.op.create_project(unique("pages"))
        cls.c = cls.srv.client(cls.op.create_token(p.id, "all", ["*"]).token)

    def test_every_paginated_operation_has_an_iterator(self) -> None:
        from .test_drift import OPENAPI
        paths = cursor_paths(OPENAPI.read_text())
        self.assertGreaterEqual(len(paths), 10, "the reader found too few paginated operations")
        self.assertEqual(sorted(paths - ITERATORS.keys()), [], "paginated operations without an iterator")
        for name in ITERATORS.values():
            self.assertTrue(callable(getattr(Client, name, None)), name)

    def test_projects_and_queues(self) -> None:
        names = {self.op.create_project(unique("pp")).id for _ in range(3)}
        self.assertLessEqual(names, {p.id for p in self.op.all_projects(page_size=1)})
        prefix = unique("pq")
        want = sorted(self.c.create_queue(f"{prefix}-{i}").name for i in range(5))
        self.assertEqual(sorted(q.name for q in self.c.all_queues(prefix=prefix, page_size=2)), want)
        it = self.c.all_queues(prefix=prefix, page_size=2)
        self.assertEqual(len([next(it), next(it), next(it)]), 3)  # lazily: more pages as they are used

    def test_browse_groups_consumers(self) -> None:
        name = unique("pf") + ".fifo"
        self.c.create_queue(name, type="fifo")
        self.c.send_batch(name, [SendMessage(f"m{i}", group_id=f"g{i}", dedup_id=f"d{i}") for i in range(5)])
        self.assertEqual(sorted(m.body for m in self.c.browse_all(name, state="visible", page_size=2)),
                         [f"m{i}" for i in range(5)])
        self.assertEqual(sorted(g.group_id for g in self.c.all_groups(name, page_size=2)), [f"g{i}" for i in range(5)])
        for i in range(3):
            self.c.receive(name, wait_seconds=0, consumer_id=f"worker-{i}", max_messages=1)
        self.assertEqual(sorted(x.consumer_id for x in self.c.all_consumers(name, page_size=1)),
                         ["worker-0", "worker-1", "worker-2"])

    def _await(self, read: Callable[[], Any]) -> Any:
        deadline = time.monotonic() + 20
        t = read()
        while t.status == "running" and time.monotonic() < deadline:
            time.sleep(0.02)  # a task's progress is only readable by polling
            t = read()
        self.assertEqual(t.status, "completed")
        return t

    def test_move_tasks(self) -> None:
        name = self.c.create_queue(unique("pm")).name
        ids = []
        for i in range(3):
            self.c.send(name, f"drop{i}")
            t = self.c.start_move_task(name, action="delete", max_messages_per_second=10000)
            ids.append(self._await(lambda: self.c.get_move_task(name, t.id)).id)
        self.assertEqual([t.id for t in self.c.all_move_tasks(name, page_size=1)], ids[::-1])

    def test_topic_lists(self) -> None:
        prefix = unique("pt")
        topics = sorted(self.c.create_topic(f"{prefix}-{i}").name for i in range(3))
        self.assertEqual(sorted(t.name for t in self.c.all_topics(prefix=prefix, page_size=1)), topics)
        topic = topics[0]
        self.c.publish_batch(topic, [PublishMessage(f"v{i}", key=f"k{i}") for i in range(5)]).raise_for_failed()
        self.assertEqual([e.body for e in self.c.log_entries(topic, page_size=2)], [f"v{i}" for i in range(5)])
        self.assertEqual([s.key for s in self.c.all_state(topic, page_size=2)], [f"k{i}" for i in range(5)])
        dst = self.c.create_queue(unique("pr")).name
        ids = []
        for _ in range(3):
            r = self.c.start_replay(topic, dst, from_=1, to=1)
            ids.append(self._await(lambda: self.c.get_replay(topic, r.id)).id)
        self.assertEqual([r.id for r in self.c.all_replays(topic, page_size=1)], ids[::-1])


class _Attempts(http.server.BaseHTTPRequestHandler):
    pages: dict[str | None, dict] = {}
    seen: list[dict] = []

    def do_GET(self) -> None:  # noqa: N802
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        type(self).seen.append(q)
        data = json.dumps(type(self).pages[q.get("cursor", [None])[0]]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a: object) -> None:
        pass


class AttemptsPagesTest(unittest.TestCase):
    def test_attempts_follow_the_cursor(self) -> None:
        def attempt(i: int) -> dict:
            return {"attemptId": f"a{i}", "messageIds": [], "statusCode": 200, "outcome": "success"}
        _Attempts.pages = {None: {"attempts": [attempt(1), attempt(2)], "nextCursor": "c2"},
                           "c2": {"attempts": [attempt(3)], "nextCursor": None}}
        _Attempts.seen = []
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Attempts)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        self.addCleanup(httpd.server_close)
        self.addCleanup(httpd.shutdown)
        c = Client(f"http://127.0.0.1:{httpd.server_port}", "t")
        self.assertEqual([a.attempt_id for a in c.all_subscription_attempts("q", page_size=2)], ["a1", "a2", "a3"])
        self.assertEqual(_Attempts.seen, [{"limit": ["2"]}, {"limit": ["2"], "cursor": ["c2"]}])


if __name__ == "__main__":
    unittest.main()
