"""Every route of the client against a real ``queues serve``."""

from __future__ import annotations

import datetime
import http.server
import json
import threading
import time
import unittest

from queues import Client, FlowControl, Limits, MoveFilter, QueuesError, Redrive, RetryPolicy, SendMessage

from . import server
from .server import unique


def project_routes_served(c: Client) -> bool:
    """Whether the server has the project routes (docs/tenancy.md#routes) (GET /v1/project)."""
    try:
        c.get_own_project()
        return True
    except QueuesError as e:
        if e.status == 404 and "route" in e.message:
            return False
        raise


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = server.get()
        cls.op = cls.srv.operator_client()
        p = cls.op.create_project(unique("client"))
        cls.project = p
        cls.c = cls.srv.client(cls.op.create_token(p.id, "all", ["*"]).token)

    def test_projects_and_tokens(self) -> None:
        p = self.op.create_project(unique("tenant"))
        self.assertTrue(p.slug.startswith("prj_"))
        self.assertEqual(self.op.get_project(p.slug).id, p.id)
        ids, cursor = set(), None
        while True:
            page = self.op.list_projects(limit=2, cursor=cursor)
            ids |= {x.id for x in page.items}
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        self.assertIn(p.id, ids)
        tok = self.op.create_token(p.id, "reader", ["queues:read"], ttl_seconds=3600)
        self.assertTrue(tok.slug.startswith("tok_") and tok.token and tok.expires_at)
        reader = self.srv.client(tok.token)
        self.assertEqual(reader.list_queues().items, [])
        with self.assertRaises(QueuesError) as cm:
            reader.create_queue("nope")
        self.assertEqual((cm.exception.code, cm.exception.status), ("permission_denied", 403))
        with self.assertRaises(QueuesError) as cm:
            self.c.list_projects()  # a project token on an operator route
        self.assertEqual(cm.exception.code, "permission_denied")
        creds = self.op.get_sqs_credentials(p.id, tok.id)
        self.assertEqual(creds["accessKeyId"], tok.slug)
        self.assertTrue(creds["secretAccessKey"] and creds["secretAccessKey"] == tok.sqs_secret_access_key)
        self.op.revoke_token(p.id, tok.id)
        deadline = time.monotonic() + 6  # revocation takes effect within 5 s
        while True:
            try:
                reader.list_queues()
            except QueuesError as e:
                self.assertEqual((e.code, e.status), ("unauthenticated", 401))
                break
            self.assertLess(time.monotonic(), deadline, "a revoked token still works")
            time.sleep(0.1)

    def test_project_limits_and_usage(self) -> None:
        if not project_routes_served(self.c):
            self.skipTest("this server predates the project routes (GET /v1/project)")
        own = self.c.get_own_project()
        self.assertEqual(own.id, self.project.id)
        self.assertIsNotNone(own.limits)
        self.assertIsNotNone(own.usage)
        p = self.op.update_project(self.project.id, Limits(max_queues=7))
        self.assertEqual(p.limits.max_queues, 7)
        self.assertEqual(self.op.get_project(self.project.id).limits.max_queues, 7)
        p = self.op.update_project(self.project.id, {"maxQueues": None})  # back to the default
        self.assertNotEqual(p.limits.max_queues, 7)
        self.assertIsInstance(self.c.get_own_usage(), list)
        self.assertIsInstance(self.op.get_project_usage(self.project.id), list)

    def test_queue_lifecycle(self) -> None:
        name = unique("life")
        dlq = self.c.create_queue(name + "-dlq")
        q = self.c.create_queue(name, visibility_timeout_seconds=5, redrive=Redrive(dlq.id, 3))
        self.assertTrue(q.slug.startswith("que_"))
        self.assertEqual((q.visibility_timeout_seconds, q.redrive.max_receive_count), (5, 3))
        for ref in (q.id, q.slug, q.name):
            self.assertEqual(self.c.get_queue(ref).id, q.id)
        q = self.c.update_queue(name, delay_seconds=2, redrive=None)
        self.assertEqual((q.delay_seconds, q.redrive), (2, None))
        names, cursor = [], None
        while True:
            page = self.c.list_queues(prefix=name, limit=1, cursor=cursor)
            names += [x.name for x in page.items]
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        self.assertEqual(sorted(names), [name, name + "-dlq"])
        with self.assertRaises(QueuesError) as cm:
            self.c.create_queue(name)
        self.assertEqual((cm.exception.code, cm.exception.status), ("queue_exists", 409))
        self.c.send(name, "one")
        self.assertTrue(self.c.purge_queue(name).purged_at)
        with self.assertRaises(QueuesError) as cm:
            self.c.purge_queue(name)  # once a minute; not retried
        self.assertEqual(cm.exception.code, "purge_too_soon")
        self.assertGreater(cm.exception.retry_after or 0, 0)
        self.c.delete_queue(name)
        with self.assertRaises(QueuesError) as cm:
            self.c.get_queue(name)
        self.assertTrue(cm.exception.is_not_found)

    def test_errors_name_the_field(self) -> None:
        with self.assertRaises(QueuesError) as cm:
            self.c.create_queue(unique("bad"), visibility_timeout_seconds=99999)
        e = cm.exception
        self.assertEqual((e.code, e.status, e.field), ("invalid_argument", 400, "visibilityTimeoutSeconds"))
        self.assertTrue(e.message and e.request_id)
        name = self.c.create_queue(unique("fields")).name
        r = self.c.send_batch(name, ["fine", SendMessage("late", delay_seconds=345601), SendMessage("")])
        self.assertEqual([m.index for m in r.messages], [0])
        self.assertEqual([(f.index, f.error.code, f.error.field) for f in r.failed],
                         [(1, "invalid_argument", "messages[1].delaySeconds"), (2, "invalid_argument", "messages[2].body")])
        with self.assertRaises(QueuesError):
            r.raise_for_failed()

    def test_send_receive_browse_settle(self) -> None:
        name = unique("msgs")
        dlq = self.c.create_queue(name + "-dlq")
        self.c.create_queue(name, redrive=Redrive(dlq.id, 5))
        sent = self.c.send_batch(name, [SendMessage(f"m{i}", attributes={"i": str(i)}) for i in range(5)])
        self.assertEqual(len(sent.messages), 5)
        self.c.send(name, "later", delay_seconds=60)
        page = self.c.browse(name, state="visible", limit=10)
        self.assertEqual(sorted(m.body for m in page.items), [f"m{i}" for i in range(5)])
        self.assertEqual([m.body for m in self.c.browse(name, state="delayed").items], ["later"])
        got = self.c.receive(name, max_messages=10, wait_seconds=0, visibility_timeout_seconds=60)
        self.assertEqual(len(got), 5)
        by = {m.body: m for m in got}
        self.assertEqual(by["m1"].attributes, {"i": "1"})
        self.assertEqual(by["m1"].receive_count, 1)
        self.assertEqual(len(self.c.browse(name, state="inFlight").items), 5)
        self.c.ack(by["m0"].receipt_handle)
        with self.assertRaises(QueuesError) as cm:
            self.c.ack(by["m0"].receipt_handle)
        self.assertEqual((cm.exception.code, cm.exception.status), ("receipt_handle_stale", 410))
        self.assertEqual(self.c.ack_batch([by["m1"].receipt_handle, by["m0"].receipt_handle])[0], None)
        self.c.release(by["m2"].receipt_handle)
        errs = self.c.change_visibility_batch([(by["m3"].receipt_handle, 0), ("garbage", 0)])
        self.assertIsNone(errs[0])
        self.assertEqual(errs[1].code, "receipt_handle_invalid")
        self.c.change_visibility(by["m4"].receipt_handle, 120)
        again = {m.body: m for m in self.c.receive(name, max_messages=10, wait_seconds=0)}
        self.assertEqual(sorted(again), ["m2", "m3"])
        self.assertEqual(again["m2"].receive_count, 2)
        self.c.dead_letter(again["m2"].receipt_handle, "poison")
        self.assertEqual(self.c.dead_letter_batch([(again["m3"].receipt_handle, None)]), [None])
        dead = {m.body: m for m in self.c.receive(dlq.name, max_messages=10, wait_seconds=0)}
        self.assertEqual(dead["m2"].dead_letter.reason, "poison")
        self.assertEqual(dead["m3"].dead_letter.reason, "consumer")
        self.assertEqual(dead["m2"].dead_letter.source_queue, self.c.get_queue(name).id)
        counts = self.c.get_queue(name).counts
        self.assertEqual((counts.visible, counts.in_flight, counts.delayed), (0, 1, 1))

    def test_cancel(self) -> None:
        name = unique("cancel")
        dlq = self.c.create_queue(name + "-dlq")
        q = self.c.create_queue(name, redrive=Redrive(dlq.id, 5), max_cancels=1)
        self.assertEqual((q.max_cancels, dlq.max_cancels), (1, 10))
        self.c.send(name, "x")
        m1 = self.c.receive(name, wait_seconds=0)[0]
        self.c.cancel(m1.receipt_handle)
        m2 = self.c.receive(name, wait_seconds=0)[0]
        self.assertEqual(m2.receive_count, 1)
        with self.assertRaises(QueuesError) as cm:
            self.c.cancel(m1.receipt_handle)
        self.assertEqual((cm.exception.code, cm.exception.status), ("receipt_handle_stale", 410))
        self.assertEqual(self.c.cancel_batch([m2.receipt_handle]), [None])  # beyond maxCancels 1
        dead = self.c.receive(dlq.name, wait_seconds=0)
        self.assertEqual(dead[0].dead_letter.reason, "max_cancels")
        with self.assertRaises(QueuesError) as cm:
            self.c.update_queue(name, max_cancels=1001)
        self.assertEqual((cm.exception.code, cm.exception.field), ("invalid_argument", "maxCancels"))

    def test_max_message_bytes(self) -> None:
        plain = self.c.create_queue(unique("plain"))
        big = self.c.create_queue(unique("big"), max_message_bytes=1 << 20)
        self.assertEqual((plain.max_message_bytes, big.max_message_bytes), (262144, 1 << 20))
        body = "b" * (1 << 20)
        self.c.send(big.name, body)
        self.assertEqual(self.c.receive(big.name, wait_seconds=0)[0].body, body)
        self.assertEqual(self.c.update_queue(big.name, max_message_bytes=2048).max_message_bytes, 2048)
        with self.assertRaises(QueuesError) as cm:
            self.c.update_queue(big.name, max_message_bytes=1023)
        self.assertEqual((cm.exception.code, cm.exception.field), ("invalid_argument", "maxMessageBytes"))

    def test_conflation_deliver_at_delete(self) -> None:
        name = self.c.create_queue(unique("keyed")).name
        at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
        a = self.c.send(name, '{"a":1}', key="order-7", merge="patch", deliver_at=at)
        self.assertFalse(a.merged)
        b = self.c.send(name, '{"b":2}', key="order-7", merge="patch")
        self.assertTrue(b.merged)
        self.assertEqual(b.message_id, a.message_id)
        self.assertEqual([m.body for m in self.c.browse(name, state="delayed").items], ['{"a":1,"b":2}'])
        self.c.delete_message(name, a.message_id)
        with self.assertRaises(QueuesError) as cm:
            self.c.delete_message(name, a.message_id)
        self.assertEqual((cm.exception.code, cm.exception.status), ("not_found", 404))
        v = self.c.send(name, "now")
        self.assertEqual([m.message_id for m in self.c.receive(name, wait_seconds=1)], [v.message_id])
        with self.assertRaises(QueuesError) as cm:
            self.c.delete_message(name, v.message_id)
        self.assertEqual((cm.exception.code, cm.exception.status), ("message_in_flight", 409))

    def test_priority(self) -> None:
        name = self.c.create_queue(unique("prio")).name
        self.c.send_batch(name, [SendMessage("low"), SendMessage("high", priority=9), SendMessage("mid", priority=4)])
        self.c.send(name, "top", priority=9)
        seen = sorted(f"{m.body}/{m.priority}" for m in self.c.browse(name, state="visible").items)
        self.assertEqual(seen, ["high/9", "low/0", "mid/4", "top/9"])
        got = [f"{m.body}/{m.priority}" for m in self.c.receive(name, max_messages=10, wait_seconds=1)]
        self.assertEqual(got, ["high/9", "top/9", "mid/4", "low/0"])

    def test_move_tasks(self) -> None:
        dlq = self.c.create_queue(unique("mv-dlq"))
        src = self.c.create_queue(unique("mv"), redrive=Redrive(dlq.id, 5))
        sent = self.c.send(src.id, "back", attributes={"kind": "x"})
        [m] = self.c.receive(src.id, wait_seconds=1)
        self.c.dead_letter(m.receipt_handle, "poison")
        self.assertEqual(self.c.get_queue(dlq.id).counts.visible, 1)

        dry = self.c.start_move_task(dlq.id, filter=MoveFilter(reason="poison"), dry_run=True)
        self.assertEqual((dry.status, dry.dry_run, dry.to_move, dry.moved), ("completed", True, 1, 0))
        self.assertEqual(dry.filter, MoveFilter(reason="poison"))
        self.assertEqual(self.c.list_move_tasks(dlq.id).items, [])  # a small dry run is not stored
        with self.assertRaises(QueuesError) as cm:
            self.c.start_move_task(dlq.id, max_messages_per_second=0)
        self.assertEqual((cm.exception.code, cm.exception.status, cm.exception.field),
                         ("invalid_argument", 400, "maxMessagesPerSecond"))

        t = self.c.start_move_task(dlq.id, filter={"reason": "poison"}, max_messages_per_second=10000)
        self.assertEqual((t.source, t.destination, t.status), (dlq.id, None, "running"))
        deadline = time.monotonic() + 10
        while t.status == "running" and time.monotonic() < deadline:
            time.sleep(0.02)
            t = self.c.get_move_task(dlq.id, t.id)
        self.assertEqual((t.status, t.moved, t.to_move), ("completed", 1, 1))
        self.assertIsNotNone(t.finished_at)
        page = self.c.list_move_tasks(dlq.id, limit=5)
        self.assertEqual([x.id for x in page.items], [t.id])
        self.assertIsNone(page.next_cursor)
        self.assertEqual(self.c.cancel_move_task(dlq.id, t.id).status, "completed")  # finished: as it is
        with self.assertRaises(QueuesError) as cm:
            self.c.get_move_task(dlq.id, "00000000-0000-0000-0000-000000000000")
        self.assertEqual((cm.exception.code, cm.exception.status), ("not_found", 404))

        [back] = self.c.receive(src.id, wait_seconds=1)
        self.assertEqual((back.message_id, back.body, back.receive_count), (sent.message_id, "back", 1))
        self.assertIsNone(back.dead_letter)

    def test_move_task_delete(self) -> None:
        name = self.c.create_queue(unique("mv-del")).name
        self.c.send_batch(name, [SendMessage("drop", attributes={"kind": "x"}), SendMessage("keep")])
        t = self.c.start_move_task(name, filter={"attributes": {"kind": ["x"]}}, action="delete",
                                   max_messages_per_second=10000)
        self.assertEqual(t.action, "delete")
        deadline = time.monotonic() + 10
        while t.status == "running" and time.monotonic() < deadline:
            time.sleep(0.02)
            t = self.c.get_move_task(name, t.id)
        self.assertEqual((t.status, t.moved, t.action), ("completed", 1, "delete"))
        self.assertEqual([m.body for m in self.c.receive(name, max_messages=10, wait_seconds=1)], ["keep"])

    def test_consumers(self) -> None:
        name = unique("work")
        q = self.c.create_queue(name, fairness="proportional")
        self.assertEqual(q.fairness, "proportional")
        self.c.send_batch(name, [SendMessage("1"), SendMessage("2"), SendMessage("3")])
        got = self.c.receive(name, max_messages=10, wait_seconds=0, consumer_id="w-1", max_backlog=2)
        self.assertEqual(len(got), 2)
        self.assertEqual(self.c.receive(name, max_messages=10, wait_seconds=0, consumer_id="w-1", max_backlog=2), [])
        page = self.c.list_consumers(name, limit=10)
        self.assertIsNone(page.next_cursor)
        self.assertEqual([(x.consumer_id, x.in_flight, x.max_backlog) for x in page.items], [("w-1", 2, 2)])
        self.assertEqual(self.c.update_queue(name, fairness="roundRobin").fairness, "roundRobin")

    def test_filter(self) -> None:
        name = unique("kinds")
        self.c.create_queue(name)
        self.c.send_batch(name, [SendMessage("i1", {"kind": "invoice"}), SendMessage("r1", {"kind": "refund"}),
                                 SendMessage("x1", {"kind": "other"})])
        page = self.c.browse(name, filter={"kind": ["refund", "other"]})
        self.assertEqual(([m.body for m in page.items], page.next_cursor), (["r1", "x1"], None))
        got = self.c.receive(name, max_messages=10, wait_seconds=0, filter={"kind": "invoice"})
        self.assertEqual([m.body for m in got], ["i1"])
        with self.assertRaises(QueuesError) as cm:
            self.c.receive(name, wait_seconds=0, filter={"kind": []})
        self.assertEqual((cm.exception.code, cm.exception.field), ("invalid_argument", "filter.attributes.kind"))
        rest = self.c.receive(name, max_messages=10, wait_seconds=0)
        self.assertEqual(sorted((m.body, m.receive_count) for m in rest), [("r1", 1), ("x1", 1)])

    def test_fifo_groups(self) -> None:
        name = unique("orders")
        q = self.c.create_queue(name, type="fifo", content_based_dedup=True)
        self.assertEqual(q.type, "fifo")
        r = self.c.send_batch(name, [SendMessage("a1", group_id="a"), SendMessage("b1", group_id="b"),
                                     SendMessage("a2", group_id="a")])
        self.assertEqual(len(r.messages), 3)
        dup = self.c.send(name, "a1", group_id="a")
        self.assertEqual((dup.duplicate, dup.sequence_number), (True, r.messages[0].sequence_number))
        sent = {m.message_id: m.sequence_number for m in r.messages}
        groups = {g.group_id: g for g in self.c.list_groups(name).items}
        self.assertEqual((groups["a"].messages, groups["b"].messages), (2, 1))
        got = self.c.receive(name, max_messages=10, wait_seconds=0)
        self.assertEqual([m.body for m in got if m.group_id == "a"], ["a1", "a2"])
        self.assertTrue(all(m.sequence_number for m in got))
        self.assertEqual({m.message_id: m.sequence_number for m in got}, sent)
        self.c.delete_group(name, "b")
        self.assertEqual([g.group_id for g in self.c.list_groups(name).items], ["a"])

    def test_poison_policy(self) -> None:
        name = unique("ledger")
        dlq = self.c.create_queue(name + "-dlq", type="fifo")
        q = self.c.create_queue(name, type="fifo", on_dead_letter="park", redrive=Redrive(dlq.id, 5))
        self.assertEqual(q.on_dead_letter, "park")
        self.c.send_batch(name, [SendMessage("a1", group_id="a"), SendMessage("a2", group_id="a")])
        got = self.c.receive(name, max_messages=1, wait_seconds=0)
        self.c.dead_letter(got[0].receipt_handle, "poison")
        parked = list(self.c.all_groups(name, state="parked"))
        self.assertEqual([(g.group_id, g.state, g.messages, g.receive_count, g.last_error) for g in parked],
                         [("a", "parked", 1, 0, "poison")])
        self.c.release_group(name, "a")
        with self.assertRaises(QueuesError) as cm:
            self.c.release_group(name, "a")
        self.assertEqual((cm.exception.code, cm.exception.status), ("group_not_parked", 409))
        self.assertEqual([g.state for g in self.c.list_groups(name, state="active").items], ["active"])

    def test_subscription_routes(self) -> None:
        name = self.c.create_queue(unique("sub")).name
        s = self.c.create_subscription(name, "http://127.0.0.1:9/push", batch_size=5, paused=True)
        self.assertTrue(s.signing_secret.startswith("whsec_"))
        self.assertTrue(s.slug.startswith("qsb_"))
        with self.assertRaises(QueuesError) as cm:
            self.c.create_subscription(name, "http://127.0.0.1:9/push")
        self.assertEqual(cm.exception.code, "subscription_exists")
        got = self.c.get_subscription(name)
        self.assertEqual((got.batch_size, got.paused, got.signing_secret), (5, True, None))
        self.assertEqual(self.c.update_subscription(name, max_in_flight=3).max_in_flight, 3)
        fc = FlowControl(key_attribute="customer", parallelism=2, messages_per_second=10)
        flowed = self.c.update_subscription(name, max_messages_per_second=50, flow_control=fc)
        self.assertEqual((flowed.max_messages_per_second, flowed.flow_control), (50, fc))
        off = self.c.update_subscription(name, flow_control=None)
        self.assertEqual((off.max_messages_per_second, off.flow_control), (50, None))
        rotated = self.c.rotate_subscription_secret(name)
        self.assertNotEqual(rotated.signing_secret, s.signing_secret)
        self.assertEqual(self.c.list_subscription_attempts(name, limit=5), [])
        self.c.delete_subscription(name)
        with self.assertRaises(QueuesError) as cm:
            self.c.get_subscription(name)
        self.assertTrue(cm.exception.is_not_found)

    def test_health(self) -> None:
        self.assertEqual(self.c.health()["status"], "ok")
        self.assertIn("status", self.c.ready())

    def test_unauthenticated(self) -> None:
        with self.assertRaises(QueuesError) as cm:
            self.srv.client("not-a-token").list_queues()
        self.assertEqual((cm.exception.code, cm.exception.status), ("unauthenticated", 401))


class _Flaky(http.server.BaseHTTPRequestHandler):
    """Answers each request with the next of ``answers``: (status, headers, body)."""

    answers: list[tuple[int, dict[str, str], dict]] = []
    seen: list[float] = []

    def do_GET(self) -> None:  # noqa: N802
        type(self).seen.append(time.monotonic())
        status, headers, body = type(self).answers.pop(0)
        data = json.dumps(body).encode()
        self.send_response(status)
        for k, v in {"Content-Type": "application/json", "Content-Length": str(len(data)), **headers}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a: object) -> None:
        pass


class RetryTest(unittest.TestCase):
    """Retries on 429 rate_limited and 503 unavailable honour Retry-After, up to a bound
    (a stand-in server: the real one does not rate-limit on demand)."""

    def serve(self, answers: list) -> Client:
        _Flaky.answers, _Flaky.seen = list(answers), []
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        self.addCleanup(httpd.server_close)
        self.addCleanup(httpd.shutdown)
        return Client(f"http://127.0.0.1:{httpd.server_port}", "t", retry=RetryPolicy(max_attempts=3, min_backoff=0.01))

    def test_retry_after_honoured(self) -> None:
        limited = {"error": {"code": "rate_limited", "message": "slow down"}}
        c = self.serve([(429, {"Retry-After": "1"}, limited), (503, {}, {"error": {"code": "unavailable", "message": ""}}),
                        (200, {}, {"queues": [], "nextCursor": None})])
        self.assertEqual(c.list_queues().items, [])
        self.assertGreaterEqual(_Flaky.seen[1] - _Flaky.seen[0], 0.95)

    def test_bounded(self) -> None:
        limited = (429, {"Retry-After": "0"}, {"error": {"code": "rate_limited", "message": ""}})
        c = self.serve([limited] * 3)
        with self.assertRaises(QueuesError) as cm:
            c.list_queues()
        self.assertEqual((cm.exception.code, cm.exception.retry_after, len(_Flaky.seen)), ("rate_limited", 0, 3))
        c = self.serve([(429, {"Retry-After": "3600"}, {"error": {"code": "rate_limited", "message": ""}})])
        with self.assertRaises(QueuesError) as cm:  # longer than max_retry_after: raised at once
            c.list_queues()
        self.assertEqual((cm.exception.retry_after, len(_Flaky.seen)), (3600, 1))

    def test_other_errors_not_retried(self) -> None:
        c = self.serve([(404, {"X-Request-Id": "req-1"}, {"error": {"code": "not_found", "message": "no",
                                                                    "details": {"field": "queue"}}})])
        with self.assertRaises(QueuesError) as cm:
            c.list_queues()
        e = cm.exception
        self.assertEqual((e.code, e.status, e.field, e.request_id, len(_Flaky.seen)), ("not_found", 404, "queue", "req-1", 1))


if __name__ == "__main__":
    unittest.main()
