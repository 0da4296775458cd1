"""asyncio: AsyncClient, AsyncConsumer and handle_push_async against a real ``queues serve``;
``with``/``async with`` on clients and consumers."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
import time
import unittest

from queues import (AsyncClient, AsyncConsumer, Client, Consumer, DeadLetter, NotFoundError, Retry, SendMessage,
                    handle_push_async, sign)
from queues.client import ROUTES

from . import server
from .server import unique


class AsyncClientTest(unittest.IsolatedAsyncioTestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = server.get()
        op = cls.srv.operator_client()
        p = op.create_project(unique("aio"))
        cls.token = op.create_token(p.id, "all", ["*"]).token

    async def asyncSetUp(self) -> None:
        self.c = AsyncClient(self.srv.url, self.token)

    async def asyncTearDown(self) -> None:
        await self.c.aclose()

    def test_same_surface_as_client(self) -> None:
        import inspect
        for name, v in vars(Client).items():
            if name.startswith("_") or not inspect.isfunction(v):
                continue
            a = getattr(AsyncClient, name, None)
            self.assertIsNotNone(a, f"AsyncClient lacks {name}")
        for name in ROUTES.values():
            self.assertTrue(inspect.iscoroutinefunction(getattr(AsyncClient, name))
                            or inspect.isasyncgenfunction(getattr(AsyncClient, name)), name)
        self.assertTrue(inspect.iscoroutinefunction(AsyncClient.send))

    def test_generated_calls_are_current(self) -> None:
        import os
        import sys
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        import gen_aio
        with open(gen_aio.OUT) as f:
            self.assertEqual(f.read(), gen_aio.generate(), "queues/_aio_calls.py is out of date: python3 gen_aio.py")

    async def test_round_trip_and_iterators(self) -> None:
        prefix = unique("aq")
        names = await asyncio.gather(*(self.c.create_queue(f"{prefix}-{i}") for i in range(3)))
        got = [q.name async for q in self.c.all_queues(prefix=prefix, page_size=1)]
        self.assertEqual(sorted(got), sorted(q.name for q in names))
        q = names[0].name
        await asyncio.gather(*(self.c.send(q, f"m{i}") for i in range(20)))
        self.assertEqual(len([m async for m in self.c.browse_all(q, state="visible", page_size=7)]), 20)
        msgs = await self.c.receive(q, max_messages=10, wait_seconds=0)
        self.assertEqual(await self.c.ack_batch([m.receipt_handle for m in msgs]), [None] * len(msgs))
        with self.assertRaises(NotFoundError):
            await self.c.get_queue(unique("missing"))
        self.assertEqual((await self.c.call("GET", "/healthz"))["status"], "ok")

    async def test_the_loop_runs_during_a_long_poll(self) -> None:
        q = (await self.c.create_queue(unique("lp"))).name
        poll = asyncio.create_task(self.c.receive(q, wait_seconds=20))
        await asyncio.sleep(0)  # let the poll start; were the loop blocked, the send would wait for it
        await self.c.send(q, "wake")
        got = await poll
        self.assertEqual([m.body for m in got], ["wake"])

    async def test_calls_are_concurrent_on_the_wire(self) -> None:
        # A stand-in whose answers wait until three requests are in at once (a barrier): three
        # calls awaited together pass only if they are on the wire together.
        barrier = threading.Barrier(3, timeout=20)

        class Gate(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802
                barrier.wait()
                data = b'{"status":"ok"}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a: object) -> None:
                pass

        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Gate)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        self.addCleanup(httpd.server_close)
        self.addCleanup(httpd.shutdown)
        async with AsyncClient(f"http://127.0.0.1:{httpd.server_port}", "t", max_workers=3) as c:
            answers = await asyncio.gather(*(c.health() for _ in range(3)))
        self.assertEqual([a["status"] for a in answers], ["ok"] * 3)


class AsyncConsumerTest(unittest.IsolatedAsyncioTestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = server.get()
        op = cls.srv.operator_client()
        p = op.create_project(unique("aioc"))
        cls.token = op.create_token(p.id, "all", ["*"]).token

    async def test_consume_settles_by_result(self) -> None:
        async with AsyncClient(self.srv.url, self.token) as c:
            name = unique("ac")
            dlq = await c.create_queue(name + "-dlq")
            from queues import Redrive
            await c.create_queue(name, redrive=Redrive(dlq.id, 5))
            for i in range(0, 60, 10):
                (await c.send_batch(name, [SendMessage(f"m{j}") for j in range(i, i + 10)])).raise_for_failed()
            seen: dict[str, int] = {}
            done = asyncio.Event()
            running, peak = 0, 0

            async def handle(m):
                nonlocal running, peak
                running += 1
                peak = max(peak, running)
                await asyncio.sleep(0)  # yield, so handlers overlap
                running -= 1
                seen[m.body] = seen.get(m.body, 0) + 1
                if len(seen) == 60 and seen["m1"] == 2:
                    done.set()
                if m.body == "m0":
                    return DeadLetter("poison")
                if m.body == "m1" and m.receive_count == 1:
                    return Retry()
                return None

            async with c.consumer(name, handle, concurrency=8, wait_seconds=1):
                await asyncio.wait_for(done.wait(), 60)
            counts = (await c.get_queue(name)).counts
            self.assertEqual((counts.visible, counts.in_flight), (0, 0))
            self.assertEqual(seen["m1"], 2)
            self.assertGreater(peak, 1, "handlers never ran at once")
            dead = await c.receive(dlq.name, wait_seconds=0)
            self.assertEqual([(m.body, m.dead_letter.reason) for m in dead], [("m0", "poison")])

    async def test_stop_releases_what_no_handler_started(self) -> None:
        async with AsyncClient(self.srv.url, self.token) as c:
            name = unique("acs")
            await c.create_queue(name, visibility_timeout_seconds=300)
            (await c.send_batch(name, [f"m{i}" for i in range(10)])).raise_for_failed()
            started, hold = asyncio.Event(), asyncio.Event()

            async def handle(m):
                started.set()
                await hold.wait()  # never set: cancelled at the shutdown deadline

            consumer = AsyncConsumer(c, name, handle, concurrency=1, wait_seconds=1, shutdown_timeout=0.2)
            task = asyncio.create_task(consumer.run())
            await asyncio.wait_for(started.wait(), 30)
            consumer.stop()
            await task
            counts = (await c.get_queue(name)).counts
            self.assertEqual((counts.visible, counts.in_flight), (10, 0))

    async def test_stop_waits_only_for_running_handlers(self) -> None:
        async with AsyncClient(self.srv.url, self.token) as c:
            name = unique("acw")
            await c.create_queue(name, visibility_timeout_seconds=300)
            (await c.send_batch(name, ["a", "b", "c"])).raise_for_failed()
            started, release = asyncio.Event(), asyncio.Event()
            done: list[str] = []

            async def handle(m):
                started.set()
                await release.wait()
                done.append(m.body)

            consumer = AsyncConsumer(c, name, handle, concurrency=1, wait_seconds=1, shutdown_timeout=300)
            task = asyncio.create_task(consumer.run())
            await asyncio.wait_for(started.wait(), 30)
            consumer.stop()
            release.set()
            # The running handler finishes at once: run returns then, not at the 300 s deadline.
            await asyncio.wait_for(task, 60)
            counts = (await c.get_queue(name)).counts
            self.assertEqual((len(done), counts.visible, counts.in_flight), (1, 2, 0))

    async def test_fatal_error_raises(self) -> None:
        async with AsyncClient(self.srv.url, self.token) as c:
            with self.assertRaises(NotFoundError):
                await asyncio.wait_for(AsyncConsumer(c, unique("missing"), lambda m: None, wait_seconds=1).run(), 30)

    def test_sync_consumer_and_client_with(self) -> None:
        with Client(self.srv.url, self.token) as c:
            name = unique("sw")
            c.create_queue(name)
            c.send_batch(name, [f"m{i}" for i in range(5)]).raise_for_failed()
            seen, done = set(), threading.Event()

            def handle(m):
                seen.add(m.body)
                if len(seen) == 5:
                    done.set()

            with Consumer(c, name, handle, concurrency=2, wait_seconds=1):
                self.assertTrue(done.wait(30))
            counts = c.get_queue(name).counts
            self.assertEqual((counts.visible, counts.in_flight), (0, 0))


SECRET = "whsec_" + "c2VjcmV0LXNlY3JldC1zZWNyZXQ="


def push(messages: list[dict]) -> tuple[dict[str, str], bytes]:
    body = json.dumps({"subscription": "sub_1", "queue": {"id": "q1", "name": "orders"}, "messages": messages}).encode()
    ts = int(time.time())
    return {"webhook-id": "msg_1", "webhook-timestamp": str(ts),
            "webhook-signature": sign(SECRET, "msg_1", ts, body)}, body


def message(i: int, group: str | None = None) -> dict:
    m = {"messageId": f"id{i}", "body": f"b{i}", "attributes": {}, "receiptHandle": f"rh{i}", "receiveCount": 1,
         "sentAt": "2026-01-01T00:00:00Z"}
    if group:
        m["groupId"] = group
    return m


class AsyncPushTest(unittest.IsolatedAsyncioTestCase):
    async def test_verifies_and_answers_per_message(self) -> None:
        headers, body = push([message(1), message(2), message(3, "g"), message(4, "g")])
        order: list[str] = []
        other_lane_ran = asyncio.Event()

        async def handle(m):
            order.append(m.body)
            if m.body == "b1":  # lanes run at once: b1 waits for another lane's handler
                await asyncio.wait_for(other_lane_ran.wait(), 10)
                return None
            other_lane_ran.set()
            return Retry() if m.body == "b2" else None

        status, hdrs, out = await handle_push_async(SECRET, headers, body, handle)
        self.assertEqual(status, 200)
        results = json.loads(out)["results"]
        self.assertEqual([(r["messageId"], r["outcome"]) for r in results],
                         [("id1", "ack"), ("id2", "retry"), ("id3", "ack"), ("id4", "ack")])
        self.assertLess(order.index("b3"), order.index("b4"))  # in order within a group

    async def test_refuses_a_bad_signature_and_a_bad_body(self) -> None:
        headers, body = push([message(1)])
        status, _, _ = await handle_push_async(SECRET, headers, body + b" ", lambda m: None)
        self.assertEqual(status, 401)
        headers, _ = push([])
        ts = int(time.time())
        bad = b"not json"
        headers.update({"webhook-timestamp": str(ts), "webhook-signature": sign(SECRET, "msg_1", ts, bad)})
        status, _, _ = await handle_push_async(SECRET, headers, bad, lambda m: None)
        self.assertEqual(status, 400)

    async def test_async_callables_are_awaited(self) -> None:
        import functools

        class Handler:
            async def __call__(self, m):
                return DeadLetter("x")

        async def by_outcome(outcome, m):
            return outcome

        # (a handler run as a plain function would hand back a coroutine: a retry, not these)
        for h in (Handler(), functools.partial(by_outcome, DeadLetter("x"))):
            headers, body = push([message(1)])
            status, _, out = await handle_push_async(SECRET, headers, body, h)
            self.assertEqual(json.loads(out)["results"][0]["outcome"], "dead-letter", h)

    async def test_sync_handler_runs_off_the_loop(self) -> None:
        headers, body = push([message(1)])
        loop_thread = threading.get_ident()
        ran_on: list[int] = []
        status, _, out = await handle_push_async(SECRET, headers, body, lambda m: ran_on.append(threading.get_ident()))
        self.assertEqual((status, json.loads(out)["results"][0]["outcome"]), (200, "ack"))
        self.assertNotEqual(ran_on, [loop_thread])


if __name__ == "__main__":
    unittest.main()
