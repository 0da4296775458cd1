"""The topic calls against a scripted stand-in server speaking docs/topics.md's shapes: the
request each call sends (method, path, query, body) and that it reads the documented
answers."""

from __future__ import annotations

import datetime
import http.server
import json
import threading
import unittest
from typing import Any

from queues import Client, PublishMessage, QueuesError, RetryPolicy


class _Scripted(http.server.BaseHTTPRequestHandler):
    """Answers each request with the next exchange: (request line, body, status, answer)."""

    script: list[tuple[str, Any, int, Any]] = []
    failures: list[str] = []

    def _answer(self) -> None:
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n)) if n else None
        if not type(self).script:
            type(self).failures.append(f"unexpected {self.command} {self.path}")
            status, answer = 500, {"error": {"code": "internal", "message": "unscripted"}}
        else:
            want, want_body, status, answer = type(self).script.pop(0)
            if f"{self.command} {self.path}" != want or body != want_body:
                type(self).failures.append(f"got {self.command} {self.path} {body}, want {want} {want_body}")
        data = b"" if answer is None else json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_DELETE = _answer  # noqa: N815

    def log_message(self, *a: object) -> None:
        pass


TOPIC = {"id": "0193a5b4-3c4d-7e5f-8061-7c8d9e0f1a2b", "slug": "top_abc", "name": "prices", "type": "standard",
         "retentionSeconds": 3600, "createdAt": "2026-12-04T10:00:00Z", "updatedAt": "2026-12-04T10:00:00Z",
         "firstSequence": 1, "lastSequence": 0, "storedBytes": 0, "bindings": 0}
BINDING = {"id": "b1", "slug": "qbd_x", "queueId": "q1", "queue": "eu", "topicId": "t1", "topic": "prices",
           "filter": {"attributes": {"region": ["eu", "uk"]}}, "from": "7", "startSequence": 7, "sequence": 9, "lag": 3,
           "copied": 2, "failed": 1, "lastFailure": {"reason": "queue full", "at": "2026-12-04T10:00:01Z"},
           "createdAt": "2026-12-04T10:00:00Z", "updatedAt": "2026-12-04T10:00:02Z"}


def entry(seq: int, **more: Any) -> dict[str, Any]:
    return {"sequence": seq, "messageId": f"m{seq}", "body": "b", "attributes": {"k": "v"},
            "publishedAt": "2026-12-04T10:00:00Z", **more}


def state(key: str) -> dict[str, Any]:
    return {"key": key, "body": "{}", "attributes": {}, "sequence": 1, "publishedAt": "2026-12-04T10:00:00Z"}


class TopicsWireTest(unittest.TestCase):
    def serve(self, script: list[tuple[str, Any, int, Any]]) -> Client:
        _Scripted.script, _Scripted.failures = list(script), []
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        self.addCleanup(httpd.server_close)
        self.addCleanup(httpd.shutdown)
        self.addCleanup(self.check)
        return Client(f"http://127.0.0.1:{httpd.server_port}", "t", retry=RetryPolicy(max_attempts=1))

    def check(self) -> None:
        self.assertEqual(_Scripted.failures, [])
        self.assertEqual(_Scripted.script, [], "scripted requests not made")

    def test_topics(self) -> None:
        c = self.serve([
            ("POST /v1/topics", {"name": "prices", "retentionSeconds": 3600}, 201, TOPIC),
            ("POST /v1/topics", {"name": "prices", "type": "fifo"}, 409,
             {"error": {"code": "topic_exists", "message": "taken", "details": {"field": "name"}}}),
            ("GET /v1/topics/a%2Fb", None, 200, TOPIC),
            ("GET /v1/topics?limit=1&prefix=pr", None, 200, {"topics": [TOPIC], "nextCursor": "c1"}),
            ("GET /v1/topics?prefix=pr", None, 200, {"topics": [TOPIC], "nextCursor": "c1"}),
            ("GET /v1/topics?cursor=c1&prefix=pr", None, 200, {"topics": [TOPIC], "nextCursor": None}),
            ("PATCH /v1/topics/prices", {"retentionSeconds": 0}, 200, TOPIC),
            ("DELETE /v1/topics/prices", None, 204, None),
        ])
        t = c.create_topic("prices", retention_seconds=3600)
        self.assertEqual((t.slug, t.retention_seconds, t.first_sequence, t.last_sequence), ("top_abc", 3600, 1, 0))
        with self.assertRaises(QueuesError) as cm:
            c.create_topic("prices", type="fifo")
        self.assertEqual((cm.exception.code, cm.exception.status, cm.exception.field), ("topic_exists", 409, "name"))
        self.assertEqual(c.get_topic("a/b").name, "prices")
        self.assertEqual(c.list_topics(limit=1, prefix="pr").next_cursor, "c1")
        self.assertEqual([x.name for x in c.all_topics(prefix="pr")], ["prices", "prices"])
        c.update_topic("prices", retention_seconds=0)
        c.delete_topic("prices")

    def test_publish(self) -> None:
        c = self.serve([
            ("POST /v1/topics/prices/messages",
             {"messages": [{"body": "a", "attributes": {"k": "v"}, "key": "x", "merge": "patch"}, {"body": None, "key": "x"},
                           {"body": "s"}]}, 200,
             {"messages": [{"index": 0, "messageId": "m0", "sequence": 4, "duplicate": False},
                           {"index": 2, "messageId": "m2", "sequence": 5, "duplicate": False}],
              "failed": [{"index": 1, "error": {"code": "invalid_argument", "message": "no",
                                                "details": {"field": "messages[1].body"}}}]}),
            ("POST /v1/topics/ledger.fifo/messages", {"messages": [{"body": "d", "groupId": "g", "dedupId": "x"}]}, 200,
             {"messages": [{"index": 0, "messageId": "m1", "sequence": 1, "duplicate": True}], "failed": []}),
            ("POST /v1/topics/prices/messages", {"messages": [{"body": None, "key": "gone"}]}, 200,
             {"messages": [], "failed": [{"index": 0, "error": {"code": "payload_too_large", "message": "big"}}]}),
        ])
        r = c.publish_batch("prices", [PublishMessage("a", {"k": "v"}, key="x", merge="patch"),
                                       PublishMessage(None, key="x"), "s"])
        self.assertEqual([(m.index, m.sequence) for m in r.messages], [(0, 4), (2, 5)])
        self.assertEqual((r.failed[0].index, r.failed[0].error.field), (1, "messages[1].body"))
        m = c.publish("ledger.fifo", "d", group_id="g", dedup_id="x")
        self.assertEqual((m.message_id, m.sequence, m.duplicate), ("m1", 1, True))
        with self.assertRaises(QueuesError) as cm:
            c.publish("prices", None, key="gone")
        self.assertEqual(cm.exception.code, "payload_too_large")

    def test_bindings(self) -> None:
        at = datetime.datetime(2026, 12, 4, 10, tzinfo=datetime.timezone.utc)
        c = self.serve([
            ("POST /v1/queues/eu/sources", {"topic": "prices", "filter": {"attributes": {"region": ["eu", "uk"]}}, "from": 7},
             201, BINDING),
            ("POST /v1/queues/eu/sources", {"topic": "prices", "from": "2026-12-04T10:00:00+00:00"}, 409,
             {"error": {"code": "binding_exists", "message": "bound"}}),
            ("POST /v1/queues/us/sources", {"topic": "prices", "from": "earliest"}, 201, BINDING),
            ("GET /v1/queues/eu/sources", None, 200, {"sources": [BINDING], "nextCursor": None}),
            ("GET /v1/topics/prices/bindings", None, 200, {"bindings": [], "nextCursor": None}),
            ("GET /v1/queues/eu/sources/qbd_x", None, 200, BINDING),
            ("PATCH /v1/queues/eu/sources/qbd_x", {"filter": None}, 200, BINDING),
            ("PATCH /v1/queues/eu/sources/qbd_x", {"filter": {"attributes": {"kind": "a"}}}, 200, BINDING),
            ("DELETE /v1/queues/eu/sources/qbd_x", None, 204, None),
        ])
        b = c.bind("eu", "prices", filter={"region": ["eu", "uk"]}, from_=7)
        self.assertEqual((b.slug, b.from_, b.start_sequence, b.sequence, b.lag, b.copied, b.failed),
                         ("qbd_x", "7", 7, 9, 3, 2, 1))
        self.assertEqual((b.last_failure.reason, b.filter), ("queue full", {"attributes": {"region": ["eu", "uk"]}}))
        with self.assertRaises(QueuesError) as cm:
            c.bind("eu", "prices", from_=at)
        self.assertEqual((cm.exception.code, cm.exception.status), ("binding_exists", 409))
        self.assertEqual(QueuesError("topic_exists").status, 409)  # as it would inside a 200 answer
        c.bind("us", "prices", from_="earliest")
        self.assertEqual([x.slug for x in c.list_sources("eu")], ["qbd_x"])
        self.assertEqual(c.topic_bindings("prices"), [])
        self.assertEqual(c.get_source("eu", "qbd_x").queue, "eu")
        c.update_source_filter("eu", "qbd_x", None)
        c.update_source_filter("eu", "qbd_x", {"kind": "a"})
        c.unbind("eu", "qbd_x")

    def test_log_and_state(self) -> None:
        c = self.serve([
            ("GET /v1/topics/prices/messages?from=3&to=2026-12-04T10%3A00%3A00Z&limit=2&attribute.k=v&attribute.k=w",
             None, 200, {"messages": [entry(3), entry(4)], "nextCursor": "n"}),
            ("GET /v1/topics/prices/messages?from=3", None, 200, {"messages": [entry(3)], "nextCursor": "n"}),
            ("GET /v1/topics/prices/messages?from=3&cursor=n", None, 200,
             {"messages": [entry(5, body=None, key="x", deleted=True)], "nextCursor": None}),
            ("GET /v1/topics/prices/state?key=a+b%2F", None, 200, state("a b/")),
            ("GET /v1/topics/prices/state?key=gone", None, 404, {"error": {"code": "not_found", "message": "no state"}}),
            ("GET /v1/topics/prices/state?limit=1", None, 200, {"state": [state("a")], "nextCursor": "s"}),
            ("GET /v1/topics/prices/state", None, 200, {"state": [state("a")], "nextCursor": "s"}),
            ("GET /v1/topics/prices/state?cursor=s", None, 200, {"state": [state("b")], "nextCursor": None}),
        ])
        p = c.read_log("prices", from_=3, to="2026-12-04T10:00:00Z", limit=2, filter={"k": ["v", "w"]})
        self.assertEqual(([e.sequence for e in p.items], p.next_cursor, p.items[0].attributes), ([3, 4], "n", {"k": "v"}))
        entries = list(c.log_entries("prices", from_=3))
        self.assertEqual([(e.sequence, e.deleted, e.body) for e in entries], [(3, False, "b"), (5, True, None)])
        self.assertEqual(c.get_state("prices", "a b/").key, "a b/")
        with self.assertRaises(QueuesError) as cm:
            c.get_state("prices", "gone")
        self.assertEqual(cm.exception.status, 404)
        self.assertEqual(c.list_state("prices", limit=1).next_cursor, "s")
        self.assertEqual([s.key for s in c.all_state("prices")], ["a", "b"])


if __name__ == "__main__":
    unittest.main()
