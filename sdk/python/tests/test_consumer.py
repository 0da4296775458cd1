"""The threaded consumer against a real ``queues serve``: each outcome, the heartbeat,
batched acknowledgements, graceful stop, a queue that goes away."""

from __future__ import annotations

import json
import queue as _queue
import threading
import time
import unittest

from queues import (Ack, Cancel, Consumer, ConsumerError, DeadLetter, Defer, Message, QueuesError, Redrive, Retry,
                    RetryAfter, SendMessage)
from queues._http import Transport

from . import server
from .server import unique


def await_(q: _queue.Queue, timeout: float, what: str):
    try:
        return q.get(timeout=timeout)
    except _queue.Empty:
        raise AssertionError(f"timed out after {timeout}s waiting for {what}") from None


class Running:
    """A consumer on a thread; ``stop()`` stops it and returns what ``run`` raised."""

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.consumer.run()
        except BaseException as e:  # noqa: BLE001
            self.error = e

    def stop(self, timeout: float = 30) -> BaseException | None:
        self.consumer.stop.set()
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise AssertionError(f"the consumer did not stop within {timeout}s")
        return self.error


class Recorder:
    """Wraps a client's transport to see each request's path and body."""

    def __init__(self, t: Transport) -> None:
        self.calls: _queue.Queue[tuple[str, object]] = _queue.Queue()
        inner = t.request

        def request(method, path, query=None, body=None, **kw):
            self.calls.put((path, body))
            return inner(method, path, query, body, **kw)

        t.request = request  # type: ignore[method-assign]


class ConsumerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = server.get()
        op = cls.srv.operator_client()
        p = op.create_project(unique("consumer"))
        cls.token = op.create_token(p.id, "all", ["*"]).token
        cls.c = cls.srv.client(cls.token)

    def start(self, queue: str, handler, **kw) -> Running:
        r = Running(Consumer(self.srv.client(self.token), queue, handler, **kw))
        self.addCleanup(r.stop)
        return r

    def counts(self, queue: str):
        return self.c.get_queue(queue).counts

    def test_outcomes(self) -> None:
        """Each outcome settles as docs/clients.md says: ack deletes; retry, an exception and a wrong
        return value make the message visible again now; retry after d after d; dead-letter
        moves it with its reason; defer leaves it in flight."""
        name = unique("work")
        dead = self.c.create_queue(name + "-dead")
        self.c.create_queue(name, redrive=Redrive(dead.id, 5))
        bodies = ["ack", "none", "retry", "retry-after", "dead-letter", "error", "wrong", "defer"]
        self.c.send_batch(name, bodies)
        events: _queue.Queue = _queue.Queue()
        errors: list[ConsumerError] = []

        def handler(m: Message):
            events.put((m.body, m.receive_count, time.monotonic()))
            if m.receive_count > 1 or m.body == "none":
                return None
            return {"ack": Ack(), "none": None, "retry": Retry(), "retry-after": RetryAfter(1),
                    "dead-letter": DeadLetter("poison"), "defer": Defer(), "wrong": 42}.get(m.body) or _raise(m.body)

        r = self.start(name, handler, concurrency=8, visibility_timeout=30, on_error=errors.append)
        seen: dict[str, list] = {}
        for _ in range(12):  # 8 first deliveries, then retry, retry-after, error and wrong again
            b, n, at = await_(events, 15, "deliveries")
            seen.setdefault(b, []).append((n, at))
        self.assertIsNone(r.stop())
        self.assertEqual({b: len(v) for b, v in seen.items()},
                         {"ack": 1, "none": 1, "retry": 2, "retry-after": 2, "dead-letter": 1, "error": 2,
                          "wrong": 2, "defer": 1})
        self.assertGreaterEqual(seen["retry-after"][1][1] - seen["retry-after"][0][1], 0.9)
        handler_errors = [e for e in errors if e.op == "handler"]
        self.assertEqual(len(handler_errors), 2, errors)
        self.assertTrue(any(isinstance(e.error, RuntimeError) for e in handler_errors))
        c = self.counts(name)
        self.assertEqual((c.visible, c.in_flight, c.delayed), (0, 1, 0))  # the deferred one
        dl = self.c.receive(dead.id, max_messages=10, wait_seconds=0)
        self.assertEqual([(m.body, m.dead_letter.reason) for m in dl], [("dead-letter", "poison")])

    def test_cancel(self) -> None:
        """Cancel() returns the message uncounted: it comes again with the same receiveCount."""
        name = unique("cancel")
        self.c.create_queue(name)
        self.c.send(name, "m")
        counts: _queue.Queue = _queue.Queue()
        calls = []

        def handler(m: Message):
            counts.put(m.receive_count)
            calls.append(1)
            return Cancel() if len(calls) == 1 else None

        r = self.start(name, handler)
        got = [await_(counts, 15, "the first delivery"), await_(counts, 15, "the delivery after the cancel")]
        self.assertIsNone(r.stop())
        self.assertEqual(got, [1, 1])
        c = self.counts(name)
        self.assertEqual((c.visible, c.in_flight, c.delayed), (0, 0, 0))

    def test_filter(self) -> None:
        """A consumer with a filter handles only matching messages; the others stay visible,
        never received."""
        name = unique("filter")
        self.c.create_queue(name)
        self.c.send_batch(name, [SendMessage("a", {"kind": "keep"}), SendMessage("b", {"kind": "skip"}),
                                 SendMessage("c", {"kind": "keep"})])
        bodies: _queue.Queue = _queue.Queue()
        r = self.start(name, lambda m: bodies.put(m.body), wait_seconds=1, filter={"kind": ["keep"]})
        got = sorted([await_(bodies, 15, "a kept message"), await_(bodies, 15, "a kept message")])
        self.assertIsNone(r.stop())
        self.assertEqual(got, ["a", "c"])
        left = self.c.browse(name).items
        self.assertEqual([(m.body, m.receive_count) for m in left], [("b", 0)])

    def test_exclusive_consumer_id(self) -> None:
        """On an exclusive fifo queue a receive needs a consumer id; a Consumer with one takes
        the group, which the group listing shows bound to it; end_group is sent."""
        name = unique("exclusive")
        q = self.c.create_queue(name, type="fifo", group_policy="exclusive", max_groups_per_consumer=4)
        self.assertEqual((q.group_policy, q.group_affinity_seconds, q.max_groups_per_consumer), ("exclusive", 60, 4))
        with self.assertRaises(QueuesError) as ctx:
            self.c.receive(name, wait_seconds=0)
        self.assertEqual(ctx.exception.status, 400)
        self.c.send_batch(name, [SendMessage("a", group_id="g1"), SendMessage("b", group_id="g1", end_group=True)])
        bodies: _queue.Queue = _queue.Queue()
        bound: _queue.Queue = _queue.Queue()

        def handle(m: Message) -> None:
            if m.body == "a":
                bound.put([g.consumer_id for g in self.c.list_groups(name).items])
            bodies.put(m.body)

        r = self.start(name, handle, wait_seconds=1, consumer_id="w1", concurrency=1)
        got = [await_(bodies, 15, "a"), await_(bodies, 15, "b")]
        self.assertIsNone(r.stop())
        self.assertEqual(got, ["a", "b"])
        self.assertEqual(await_(bound, 1, "the groups"), ["w1"])
        q = self.c.update_queue(name, group_policy="sequenced")
        self.assertEqual(q.group_policy, "sequenced")

    def test_at_most_once(self) -> None:
        """On an at-most-once queue each message is handed out once, without a handle, and no
        outcome makes a receipt call: the receive removed it."""
        name = unique("once")
        q = self.c.create_queue(name, delivery="atMostOnce")
        self.assertEqual(q.delivery, "atMostOnce")
        self.c.send_batch(name, ["ack", "retry", "dead-letter", "error"])
        client = self.srv.client(self.token)
        rec = Recorder(client._t)
        seen: _queue.Queue = _queue.Queue()

        def handler(m: Message):
            seen.put((m.body, m.receipt_handle, m.receive_count))
            return {"retry": Retry(), "dead-letter": DeadLetter("x")}.get(m.body) or (
                _raise(m.body) if m.body == "error" else None)

        r = Running(Consumer(client, name, handler, concurrency=4, on_error=lambda e: None))
        self.addCleanup(r.stop)
        got = sorted(await_(seen, 15, "deliveries") for _ in range(4))
        self.assertIsNone(r.stop())
        self.assertEqual(got, [("ack", "", 1), ("dead-letter", "", 1), ("error", "", 1), ("retry", "", 1)])
        self.assertTrue(seen.empty(), "a message was handed out twice")
        paths = []
        while not rec.calls.empty():
            paths.append(rec.calls.get()[0])
        self.assertFalse([p for p in paths if p.startswith("/v1/receipts/")], paths)
        c = self.counts(name)
        self.assertEqual((c.visible, c.in_flight, c.delayed), (0, 0, 0))

    def test_heartbeat(self) -> None:
        """A message held past half the visibility timeout is extended, again and again."""
        name = unique("slow")
        self.c.create_queue(name)
        self.c.send(name, "long job")
        client = self.srv.client(self.token)
        rec = Recorder(client._t)
        started, release = _queue.Queue(), threading.Event()

        def handler(m: Message):
            started.put(time.monotonic())
            release.wait(30)

        r = Running(Consumer(client, name, handler, concurrency=1, visibility_timeout=2))
        self.addCleanup(r.stop)
        leased = await_(started, 10, "the handler to start")
        beats = 0
        deadline = time.monotonic() + 10
        while beats < 3:
            path, body = await_(rec.calls, max(deadline - time.monotonic(), 0.01), "heartbeats")
            if path == "/v1/receipts/visibility" and '"visibilityTimeoutSeconds": 2' in json.dumps(body):
                beats += 1
        self.assertGreaterEqual(time.monotonic() - leased, 2)
        self.assertEqual(self.c.receive(name, wait_seconds=0), [], "the heartbeat did not hold the message")
        release.set()
        self.assertIsNone(r.stop())
        c = self.counts(name)
        self.assertEqual((c.visible, c.in_flight), (0, 0))

    def test_batched_acks(self) -> None:
        name = unique("many")
        self.c.create_queue(name)
        n = 60
        for i in range(0, n, 10):
            self.c.send_batch(name, [f"m{j}" for j in range(i, i + 10)])
        client = self.srv.client(self.token)
        rec = Recorder(client._t)
        handled: _queue.Queue = _queue.Queue()
        r = Running(Consumer(client, name, lambda m: handled.put(m.body), concurrency=16, ack_batch_size=25,
                             ack_interval=0.2))
        self.addCleanup(r.stop)
        for _ in range(n):
            await_(handled, 15, "every message handled")
        self.assertIsNone(r.stop())
        batches = []
        while not rec.calls.empty():
            path, body = rec.calls.get()
            if path == "/v1/receipts/ack":
                batches.append(len(body["receiptHandles"]))
        self.assertEqual(sum(batches), n)
        self.assertLess(len(batches), n / 2, batches)
        self.assertLessEqual(max(batches), 25)
        c = self.counts(name)
        self.assertEqual((c.visible, c.in_flight), (0, 0))

    def test_stop_releases(self) -> None:
        """At stop a handler finishing within shutdown_timeout is settled; the messages of
        those still running at the deadline are released at once and ``cancelled`` is set."""
        name = unique("held")
        self.c.create_queue(name, visibility_timeout_seconds=600)
        self.c.send_batch(name, ["finishes", "stuck-1", "stuck-2"])
        started, stopping = _queue.Queue(), threading.Event()
        consumer: list[Consumer] = []

        def handler(m: Message):
            started.put(m.body)
            if m.body == "finishes":
                stopping.wait(10)
                return None
            consumer[0].cancelled.wait(30)
            return None  # ignored: released

        c = Consumer(self.srv.client(self.token), name, handler, concurrency=3, shutdown_timeout=0.5)
        consumer.append(c)
        r = Running(c)
        for _ in range(3):
            await_(started, 10, "handlers to start")
        c.stop.set()
        stopping.set()
        self.assertIsNone(r.stop())
        self.assertTrue(c.cancelled.is_set())
        got = {m.body: m.receive_count for m in self.c.receive(name, max_messages=10, wait_seconds=0)}
        self.assertEqual(got, {"stuck-1": 2, "stuck-2": 2})

    def test_stop_cuts_long_polls(self) -> None:
        """Stopping an idle consumer does not wait for its 20 s long polls."""
        name = unique("idle")
        self.c.create_queue(name)
        r = self.start(name, lambda m: None, concurrency=20, wait_seconds=20)
        time.sleep(0.5)  # let the polls start waiting (nothing to await: they are idle by design)
        t0 = time.monotonic()
        self.assertIsNone(r.stop())
        self.assertLess(time.monotonic() - t0, 5)

    def test_queue_gone(self) -> None:
        with self.assertRaises(QueuesError) as cm:
            Consumer(self.srv.client(self.token), "missing-" + unique("q"), lambda m: None).run()
        self.assertTrue(cm.exception.is_not_found)
        name = unique("doomed")
        self.c.create_queue(name)
        r = Running(Consumer(self.srv.client(self.token), name, lambda m: None))
        time.sleep(0.3)
        self.c.delete_queue(name)
        r.thread.join(10)
        self.assertFalse(r.thread.is_alive())
        self.assertIsInstance(r.error, QueuesError)
        self.assertTrue(r.error.is_not_found)


def _raise(body: str):
    raise RuntimeError(f"boom {body}")


if __name__ == "__main__":
    unittest.main()
