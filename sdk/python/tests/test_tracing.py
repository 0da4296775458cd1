"""Trace propagation: an explicit traceparent round-trips through a real ``queues serve``; with
an ``opentelemetry`` module present (a stub with the API's names, installed in sys.modules:
this machine has no PyPI) a send carries the current span's context and the consumer and the
push receiver run each handler under a ``process <queue>`` span that is its child."""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
import types
import unittest

from queues import Consumer, DeadLetter, SendMessage, handle_push, sign, tracing

from . import server
from .server import unique

OWN = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


class _SpanContext:
    def __init__(self, trace_id: int, span_id: int, is_remote: bool = False, trace_flags: int = 0,
                 trace_state=None) -> None:
        self.trace_id, self.span_id, self.is_remote = trace_id, span_id, is_remote
        self.trace_flags, self.trace_state = trace_flags, trace_state

    @property
    def is_valid(self) -> bool:
        return self.trace_id != 0 and self.span_id != 0


_INVALID = _SpanContext(0, 0)


class _Span:
    def __init__(self, sc: _SpanContext, name: str = "", parent: _SpanContext | None = None,
                 kind=None, attributes=None) -> None:
        self.sc, self.name, self.parent, self.kind = sc, name, parent, kind
        self.attributes = dict(attributes or {})
        self.status = None
        self.exceptions: list[BaseException] = []
        self.ended = False

    def get_span_context(self) -> _SpanContext:
        return self.sc

    def set_status(self, status) -> None:
        self.status = status

    def record_exception(self, e: BaseException) -> None:
        self.exceptions.append(e)


def stub_opentelemetry():
    """A module with the names of ``opentelemetry.trace`` the SDK uses, recording spans; the
    current span is thread-local, as the real API's context is per thread."""
    trace = types.ModuleType("opentelemetry.trace")
    local = threading.local()
    finished: list[_Span] = []
    ids = iter(range(1, 1 << 30))

    class SpanKind:
        INTERNAL, CONSUMER = "internal", "consumer"

    class StatusCode:
        UNSET, ERROR = "unset", "error"

    class Status:
        def __init__(self, code, description=None) -> None:
            self.status_code, self.description = code, description

    class Tracer:
        def __init__(self, name: str) -> None:
            self.name = name

        @contextlib.contextmanager
        def start_as_current_span(self, name, context=None, kind=SpanKind.INTERNAL, attributes=None,
                                  record_exception=True, set_status_on_exception=True):
            parent = (context or {}).get("span", get_current_span()).get_span_context()
            trace_id = parent.trace_id if parent.is_valid else next(ids)
            span = _Span(_SpanContext(trace_id, next(ids), trace_flags=1), name, parent, kind, attributes)
            span.scope = self.name
            before = getattr(local, "span", None)
            local.span = span
            try:
                yield span
            finally:
                local.span = before
                span.ended = True
                finished.append(span)

    def get_current_span(context=None):
        if context is not None:
            return context.get("span", _Span(_INVALID))
        return getattr(local, "span", None) or _Span(_INVALID)

    trace.SpanContext = _SpanContext
    trace.TraceFlags = int
    trace.NonRecordingSpan = lambda sc: _Span(sc)
    trace.set_span_in_context = lambda span, context=None: {**(context or {}), "span": span}
    trace.get_current_span = get_current_span
    trace.get_tracer = lambda name, *a, **k: Tracer(name)
    trace.SpanKind, trace.Status, trace.StatusCode = SpanKind, Status, StatusCode
    pkg = types.ModuleType("opentelemetry")
    pkg.trace = trace
    return pkg, trace, finished, local


class ExplicitTraceparentTest(unittest.TestCase):
    """No OpenTelemetry: the context travels as the message's field, set and read by hand."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = server.get()
        cls.c = cls.srv.client()

    def test_round_trip(self) -> None:
        tracing._reset()
        self.assertIsNone(tracing._otel(), "this machine has no opentelemetry; the test needs it absent")
        q = unique("tp")
        self.c.create_queue(q)
        self.c.send(q, "one", traceparent=OWN)
        self.c.send_batch(q, [SendMessage("two", traceparent=OWN), "three"])
        browsed = {m.body: m.traceparent for m in self.c.browse(q).items}
        self.assertEqual(browsed, {"one": OWN, "two": OWN, "three": None})
        got = {m.body: m.traceparent for m in self.c.receive(q, max_messages=10)}
        self.assertEqual(got, {"one": OWN, "two": OWN, "three": None})

    def test_refused_traceparent_names_the_field(self) -> None:
        q = unique("tpbad")
        self.c.create_queue(q)
        r = self.c.send_batch(q, [SendMessage("x", traceparent="00-nothex")])
        self.assertEqual(r.failed[0].error.code, "invalid_argument")
        self.assertEqual(r.failed[0].error.details.get("field"), "messages[0].traceparent")


class OpenTelemetryHookTest(unittest.TestCase):
    """With an opentelemetry module importable, the SDK propagates on its own."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = server.get()

    def setUp(self) -> None:
        self.pkg, self.trace, self.finished, self.local = stub_opentelemetry()
        self.saved = {k: sys.modules.get(k) for k in ("opentelemetry", "opentelemetry.trace")}
        sys.modules["opentelemetry"], sys.modules["opentelemetry.trace"] = self.pkg, self.trace
        tracing._reset()
        self.addCleanup(self._restore)
        self.c = self.srv.client()
        self.tracer = self.trace.get_tracer("test")

    def _restore(self) -> None:
        for k, v in self.saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
        tracing._reset()

    def _tp(self, span: _Span) -> str:
        sc = span.get_span_context()
        return f"00-{sc.trace_id:032x}-{sc.span_id:016x}-{sc.trace_flags:02x}"

    def test_request_header_from_current_span(self) -> None:
        h: dict[str, str] = {}
        tracing.inject(h)
        self.assertEqual(h, {}, "no current span: no header")
        with self.tracer.start_as_current_span("produce") as span:
            tracing.inject(h)
        self.assertEqual(h, {"traceparent": self._tp(span)})

    def test_send_and_consume(self) -> None:
        q = unique("otel")
        self.c.create_queue(q)
        with self.tracer.start_as_current_span("produce") as produce:
            self.c.send(q, "traced")
            self.c.send(q, "own", traceparent=OWN)
        browsed = {m.body: m.traceparent for m in self.c.browse(q).items}
        self.assertEqual(browsed, {"traced": self._tp(produce), "own": OWN})

        seen: dict[str, _Span] = {}
        done = threading.Event()
        stop = threading.Event()

        def handler(m):
            seen[m.body] = self.trace.get_current_span()
            if len(seen) == 2:
                done.set()
            return DeadLetter("test") if m.body == "own" else None

        t = threading.Thread(target=Consumer(self.c, q, handler, concurrency=2, wait_seconds=1, stop=stop).run,
                             daemon=True)
        t.start()
        self.assertTrue(done.wait(20), "the consumer got both messages")
        stop.set()
        t.join(30)
        spans = {s.attributes["messaging.message.id"]: s for s in self.finished if s.name == f"process {q}"}
        self.assertEqual(len(spans), 2)
        traced = seen["traced"]
        self.assertIn(traced, spans.values(), "the process span is current in the handler")
        self.assertEqual(traced.kind, "consumer")
        self.assertEqual(traced.scope, tracing.TRACER_NAME)
        self.assertEqual(traced.parent.trace_id, produce.sc.trace_id)
        self.assertEqual(traced.parent.span_id, produce.sc.span_id, "child of the producer's span")
        self.assertTrue(traced.parent.is_remote)
        self.assertEqual(traced.attributes["messaging.system"], "queues")
        self.assertEqual(traced.attributes["messaging.operation.type"], "process")
        self.assertEqual(traced.attributes["messaging.destination.name"], q)
        self.assertEqual(traced.attributes["queues.receive_count"], 1)
        self.assertIsNone(traced.status)
        own = seen["own"]
        self.assertEqual(f"{own.parent.trace_id:032x}-{own.parent.span_id:016x}",
                         "0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331")
        self.assertEqual((own.status.status_code, own.status.description), ("error", "dead-letter"))

    def test_push_receiver(self) -> None:
        secret = "whsec_" + "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE="
        body = json.dumps({"subscription": "qsb_x", "queue": {"id": "q1", "name": "hooks"}, "messages": [
            {"messageId": "m1", "body": "a", "receiptHandle": "h", "receiveCount": 2, "traceparent": OWN},
            {"messageId": "m2", "body": "b", "receiptHandle": "h", "receiveCount": 1},
        ]}).encode()
        ts = int(time.time())
        headers = {"webhook-id": "msg_1", "webhook-timestamp": str(ts), "webhook-signature": sign(secret, "msg_1", ts, body)}

        def handler(m):
            if m.body == "a":
                raise RuntimeError("boom")

        status, _, out = handle_push(secret, headers, body, handler)
        self.assertEqual(status, 200, out)
        spans = [s for s in self.finished if s.name == "process hooks"]
        self.assertEqual(len(spans), 1, "only the message with a traceparent gets a span")
        s = spans[0]
        self.assertEqual(f"{s.parent.span_id:016x}", "b7ad6b7169203331")
        self.assertEqual(s.attributes["queues.receive_count"], 2)
        self.assertEqual(s.status.description, "retry")
        self.assertEqual([str(e) for e in s.exceptions], ["boom"])

    def test_async_push_receiver(self) -> None:
        import asyncio
        from queues import handle_push_async
        secret = "whsec_" + "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE="
        body = json.dumps({"subscription": "qsb_x", "queue": {"id": "q1", "name": "ahooks"}, "messages": [
            {"messageId": "m1", "body": "a", "receiptHandle": "h", "receiveCount": 1, "traceparent": OWN},
        ]}).encode()
        ts = int(time.time())
        headers = {"webhook-id": "msg_1", "webhook-timestamp": str(ts), "webhook-signature": sign(secret, "msg_1", ts, body)}
        current: list[_Span] = []

        async def handler(m):
            current.append(self.trace.get_current_span())
            return DeadLetter("bad")

        status, _, out = asyncio.run(handle_push_async(secret, headers, body, handler))
        self.assertEqual(status, 200, out)
        spans = [s for s in self.finished if s.name == "process ahooks"]
        self.assertEqual(len(spans), 1)
        self.assertIs(current[0], spans[0], "the process span is current in the coroutine handler")
        self.assertEqual(f"{spans[0].parent.span_id:016x}", "b7ad6b7169203331")
        self.assertEqual((spans[0].status.status_code, spans[0].status.description), ("error", "dead-letter"))


if __name__ == "__main__":
    unittest.main()
