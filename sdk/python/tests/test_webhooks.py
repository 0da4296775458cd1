"""verify's edge cases, and handle_push behind a real subscription: the server's pusher posts
to an http.server this test runs, handle_push verifies and answers per-message results."""

from __future__ import annotations

import base64
import http.server
import json
import queue as _queue
import threading
import time
import unittest

from queues import DeadLetter, Defer, Message, Redrive, Retry, RetryAfter, WebhookVerificationError, handle_push, sign, verify

from . import server
from .server import unique

SECRET = "whsec_" + base64.b64encode(b"0123456789abcdef0123456789abcdef").decode()
OLD = "whsec_" + base64.b64encode(b"the previous secret, still valid").decode()
BODY = b'{"subscription":"qsb_x","queue":{"id":"q","name":"n"},"messages":[]}'


def signed(secret: str = SECRET, body: bytes = BODY, ts: int | None = None, msg_id: str = "att_1") -> dict[str, str]:
    ts = int(time.time()) if ts is None else ts
    return {"webhook-id": msg_id, "webhook-timestamp": str(ts), "webhook-signature": sign(secret, msg_id, ts, body)}


class VerifyTest(unittest.TestCase):
    def test_valid(self) -> None:
        verify(SECRET, signed(), BODY)
        verify([SECRET], {k.title(): v for k, v in signed().items()}, BODY)  # any header case

    def test_previous_secret_and_several_signatures(self) -> None:
        h = signed(OLD)
        verify([SECRET, OLD], h, BODY)
        verify([None, "", OLD], h, BODY)
        both = signed(SECRET)
        both["webhook-signature"] = "v2,bm9wZQ== " + signed(OLD)["webhook-signature"] + " " + both["webhook-signature"]
        verify([OLD], both, BODY)
        verify([SECRET], both, BODY)
        with self.assertRaises(WebhookVerificationError):
            verify([SECRET], h, BODY)

    def test_refused(self) -> None:
        now = int(time.time())
        cases = {
            "tampered body": (signed(), BODY + b" "),
            "other secret": (signed("whsec_" + base64.b64encode(b"a third secret").decode()), BODY),
            "stale": (signed(ts=now - 301), BODY),
            "future": (signed(ts=now + 301), BODY),
        }
        h = signed()
        for missing in ("webhook-id", "webhook-timestamp", "webhook-signature"):
            cases["no " + missing] = ({k: v for k, v in h.items() if k != missing}, BODY)
        cases["timestamp not seconds"] = ({**h, "webhook-timestamp": "12.5"}, BODY)
        cases["unicode digits"] = ({**h, "webhook-timestamp": "١٢٣"}, BODY)
        cases["other id"] = ({**h, "webhook-id": "att_2"}, BODY)
        cases["v1 without signature"] = ({**h, "webhook-signature": "v1,"}, BODY)
        cases["bad base64"] = ({**h, "webhook-signature": "v1,!!!"}, BODY)
        cases["other version"] = ({**h, "webhook-signature": h["webhook-signature"].replace("v1,", "v2,")}, BODY)
        cases["truncated"] = ({**h, "webhook-signature": h["webhook-signature"][:-4]}, BODY)
        for name, (headers, body) in cases.items():
            with self.subTest(name), self.assertRaises(WebhookVerificationError):
                verify([SECRET, OLD], headers, body)

    def test_tolerance(self) -> None:
        old = signed(ts=int(time.time()) - 3600)
        verify(SECRET, old, BODY, tolerance_seconds=7200)
        verify(SECRET, signed(ts=1000), BODY, now=1100)
        with self.assertRaises(WebhookVerificationError):
            verify(SECRET, signed(ts=1000), BODY, now=1400)

    def test_bad_secret(self) -> None:
        for s in ("nope", "whsec_", "whsec_***"):
            with self.subTest(s), self.assertRaises(WebhookVerificationError):
                verify(s, signed(), BODY)
        with self.assertRaises(WebhookVerificationError):
            verify([], signed(), BODY)

    def test_header_shapes(self) -> None:
        h = signed()
        verify(SECRET, [(k.encode(), v.encode()) for k, v in h.items()], BODY)  # ASGI
        verify(SECRET, {"HTTP_" + k.upper().replace("-", "_"): v for k, v in h.items()}, BODY)  # WSGI environ
        verify(SECRET, list(h.items()), bytearray(BODY))

    def test_handle_push_answers(self) -> None:
        msgs = [{"messageId": f"m{i}", "body": b, "attributes": {}, "receiveCount": 1, "sentAt": "", "receiptHandle": "h",
                 "visibilityDeadline": "", **({"groupId": "g"} if i < 2 else {})}
                for i, b in enumerate(["first", "second", "retry", "later", "dead", "defer", "boom", "ok"])]
        body = json.dumps({"subscription": "qsb_x", "queue": {"id": "q", "name": "n"}, "messages": msgs}).encode()
        order: list[str] = []

        def handler(m: Message):
            order.append(m.body)
            return {"retry": Retry(), "later": RetryAfter(2.5), "dead": DeadLetter("bad"), "defer": Defer()}.get(m.body) \
                or (_boom() if m.body == "boom" else None)

        status, headers, out = handle_push([SECRET], signed(body=body), body, handler)
        self.assertEqual(status, 200)
        self.assertIn(("Content-Type", "application/json"), headers)
        results = {r["messageId"]: r for r in json.loads(out)["results"]}
        self.assertEqual([results[f"m{i}"]["outcome"] for i in range(8)],
                         ["ack", "ack", "retry", "retry", "dead-letter", "defer", "retry", "ack"])
        self.assertEqual(results["m3"]["retryAfterSeconds"], 3)
        self.assertEqual(results["m4"]["reason"], "bad")
        self.assertNotIn("retryAfterSeconds", results["m2"])
        self.assertLess(order.index("first"), order.index("second"))  # in order within a group
        self.assertEqual(handle_push([SECRET], signed(OLD, body=body), body, handler)[0], 401)
        self.assertEqual(handle_push([SECRET], signed(body=b"[1]"), b"[1]", handler)[0], 400)


def _boom():
    raise RuntimeError("boom")


class PushTest(unittest.TestCase):
    """A real subscription pushing to a local http.server whose handler is handle_push."""

    def test_pushed_and_settled(self) -> None:
        srv = server.get()
        op = srv.operator_client()
        p = op.create_project(unique("push"))
        c = srv.client(op.create_token(p.id, "all", ["*"]).token)
        name = unique("pushed")
        dead = c.create_queue(name + "-dead")
        c.create_queue(name, redrive=Redrive(dead.id, 5))
        deliveries: _queue.Queue = _queue.Queue()
        secrets: list[str] = []
        refused: list[BaseException] = []

        def handler(m: Message):
            deliveries.put((m.body, m.receive_count, m.receipt_handle))
            if m.body == "defer":
                return Defer()
            if m.body == "dead":
                return DeadLetter("pushed poison")
            if m.body == "retry" and m.receive_count == 1:
                return RetryAfter(1)
            return None

        class Receiver(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                status, headers, out = handle_push(secrets, self.headers, raw, handler, on_error=refused.append)
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *a: object) -> None:
                pass

        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        self.addCleanup(httpd.server_close)
        self.addCleanup(httpd.shutdown)
        sub = c.create_subscription(name, f"http://127.0.0.1:{httpd.server_port}/push", batch_size=10)
        secrets.append(sub.signing_secret)
        c.send_batch(name, ["ack", "defer", "dead", "retry"])
        got: dict[str, list] = {}
        while sum(len(v) for v in got.values()) < 5:  # retry comes back once
            b, n, h = deliveries.get(timeout=20)
            got.setdefault(b, []).append((n, h))
        self.assertEqual(sorted(got), ["ack", "dead", "defer", "retry"])
        self.assertEqual([n for n, _ in got["retry"]], [1, 2])
        self.assertEqual(refused, [])
        # Answer now, settle later: the deferred message is acknowledged by its handle.
        c.ack(got["defer"][0][1])
        deadline = time.monotonic() + 10
        while True:
            counts = c.get_queue(name).counts
            if (counts.visible, counts.in_flight, counts.delayed) == (0, 0, 0):
                break
            self.assertLess(time.monotonic(), deadline, f"queue not drained: {counts}")
            time.sleep(0.1)
        dl = c.receive(dead.id, max_messages=10, wait_seconds=5)
        self.assertEqual([(m.body, m.dead_letter.reason) for m in dl], [("dead", "pushed poison")])
        attempts = c.list_subscription_attempts(name, limit=10)
        self.assertTrue(attempts and all(a.status_code == 200 for a in attempts))


if __name__ == "__main__":
    unittest.main()
