"""Typed errors: every error code of the API raises its own subclass of QueuesError, against a
real ``queues serve`` (and a stand-in server for the 429 the real one does not give on demand);
the old ``is_*`` helpers keep working."""

from __future__ import annotations

import http.server
import threading
import unittest

from queues import (AlreadyExistsError, AuthError, Client, ConflictError, ForbiddenError, InternalError,
                    InvalidReceiptError, Limits, NotFoundError, PurgeTooSoonError, QueuesError, QuotaExceededError,
                    RateLimitedError, RetryPolicy, StaleReceiptError, TransportError, UnavailableError, ValidationError,
                    error_class)

from . import server
from .server import unique
from .test_client import _Flaky


class TypedErrorsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = server.get()
        cls.op = cls.srv.operator_client()
        p = cls.op.create_project(unique("errors"))
        cls.project = p
        cls.c = cls.srv.client(cls.op.create_token(p.id, "all", ["*"]).token)

    def test_not_found(self) -> None:
        with self.assertRaises(NotFoundError) as cm:
            self.c.get_queue(unique("missing"))
        e = cm.exception
        self.assertIsInstance(e, QueuesError)
        self.assertEqual((e.code, e.status, e.is_not_found), ("not_found", 404, True))

    def test_conflicts(self) -> None:
        name = unique("dup")
        self.c.create_queue(name)
        with self.assertRaises(AlreadyExistsError) as cm:
            self.c.create_queue(name)
        self.assertIsInstance(cm.exception, ConflictError)
        self.assertEqual((cm.exception.code, cm.exception.status, cm.exception.is_conflict), ("queue_exists", 409, True))
        sent = self.c.send(name, "held")
        self.c.receive(name, wait_seconds=0, visibility_timeout_seconds=60)
        with self.assertRaises(ConflictError) as cm:
            self.c.delete_message(name, sent.message_id)
        self.assertNotIsInstance(cm.exception, AlreadyExistsError)
        self.assertEqual(cm.exception.code, "message_in_flight")

    def test_receipts(self) -> None:
        name = unique("rcpt")
        self.c.create_queue(name)
        self.c.send(name, "x")
        m = self.c.receive(name, wait_seconds=0)[0]
        self.c.ack(m.receipt_handle)
        with self.assertRaises(StaleReceiptError) as cm:
            self.c.ack(m.receipt_handle)
        self.assertTrue(cm.exception.is_stale)
        errs = self.c.ack_batch([m.receipt_handle, "garbage"])  # per-entry errors are typed too
        self.assertIsInstance(errs[0], StaleReceiptError)
        self.assertIsInstance(errs[1], InvalidReceiptError)
        self.assertIsInstance(errs[1], ValidationError)

    def test_validation_names_the_field(self) -> None:
        with self.assertRaises(ValidationError) as cm:
            self.c.create_queue(unique("bad"), visibility_timeout_seconds=-1)
        self.assertEqual((cm.exception.code, cm.exception.status), ("invalid_argument", 400))
        self.assertEqual(cm.exception.field, "visibilityTimeoutSeconds")
        q = unique("vb")
        self.c.create_queue(q)
        res = self.c.send_batch(q, [{"body": "ok"}, {"body": "x", "delaySeconds": -5}])
        self.assertIsInstance(res.failed[0].error, ValidationError)

    def test_auth_and_forbidden(self) -> None:
        with self.assertRaises(AuthError) as cm:
            self.srv.client("not-a-token").list_queues()
        self.assertNotIsInstance(cm.exception, ForbiddenError)
        self.assertTrue(cm.exception.is_auth)
        reader = self.srv.client(self.op.create_token(self.project.id, "reader", ["queues:read"]).token)
        with self.assertRaises(ForbiddenError) as cm:
            reader.create_queue(unique("nope"))
        self.assertIsInstance(cm.exception, AuthError)  # except AuthError catches both
        self.assertEqual((cm.exception.code, cm.exception.status), ("permission_denied", 403))

    def test_quota_exceeded(self) -> None:
        p = self.op.create_project(unique("quota"))
        c = self.srv.client(self.op.create_token(p.id, "all", ["*"]).token)
        self.op.update_project(p.id, Limits(max_queues=1))
        c.create_queue(unique("one"))
        with self.assertRaises(QuotaExceededError) as cm:
            c.create_queue(unique("two"))
        self.assertNotIsInstance(cm.exception, AuthError)
        self.assertEqual((cm.exception.status, cm.exception.is_quota_exceeded), (403, True))

    def test_purge_too_soon(self) -> None:
        name = unique("purge")
        self.c.create_queue(name)
        self.c.purge_queue(name)
        with self.assertRaises(PurgeTooSoonError) as cm:
            self.c.purge_queue(name)
        self.assertIsInstance(cm.exception, RateLimitedError)
        self.assertEqual(cm.exception.status, 429)


class StandInErrorsTest(unittest.TestCase):
    """The answers the real server gives only under load or failure."""

    def serve(self, answers: list) -> Client:
        _Flaky.answers, _Flaky.seen = list(answers), []
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        self.addCleanup(httpd.server_close)
        self.addCleanup(httpd.shutdown)
        return Client(f"http://127.0.0.1:{httpd.server_port}", "t", retry=RetryPolicy(max_attempts=1))

    def test_rate_limited_with_retry_after(self) -> None:
        c = self.serve([(429, {"Retry-After": "7"}, {"error": {"code": "rate_limited", "message": "slow"}})])
        with self.assertRaises(RateLimitedError) as cm:
            c.list_queues()
        self.assertEqual((cm.exception.retry_after, cm.exception.is_rate_limited), (7.0, True))

    def test_unavailable_and_unknown_codes(self) -> None:
        c = self.serve([(503, {}, {"error": {"code": "unavailable", "message": ""}}),
                        (404, {}, {"error": {"code": "a_code_from_the_future", "message": ""}}),
                        (500, {}, {"error": {"code": "internal", "message": ""}})])
        with self.assertRaises(UnavailableError):
            c.list_queues()
        with self.assertRaises(NotFoundError) as cm:  # typed by its status
            c.list_queues()
        self.assertEqual(cm.exception.code, "a_code_from_the_future")
        with self.assertRaises(InternalError):
            c.list_queues()

    def test_transport_and_classes(self) -> None:
        c = Client("http://127.0.0.1:9", "t", retry=RetryPolicy(max_attempts=1), timeout=2)
        with self.assertRaises(TransportError):
            c.list_queues()
        self.assertIs(type(QueuesError("not_found")), NotFoundError)
        self.assertIs(type(QueuesError("weird")), QueuesError)
        self.assertIs(error_class("weird", 409), ConflictError)
        self.assertIs(QueuesError.from_body({"code": "queue_in_use", "message": "m"}).__class__, ConflictError)


if __name__ == "__main__":
    unittest.main()
