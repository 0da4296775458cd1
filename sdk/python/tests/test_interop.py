"""The Python SDK with the Go one (through the queues CLI, which is built on sdk/go/client): a
message sent by Python is received and settled by Go's consumer, one sent by Go is received
and settled by Python's, and a push signed by the Go pusher is verified by Python (in
test_webhooks.PushTest)."""

from __future__ import annotations

import subprocess
import threading
import unittest

from queues import Consumer, Message, sign, verify

from . import server
from .server import unique


class InteropTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = server.get()
        cls.c = cls.srv.client()

    def cli(self, *args: str) -> str:
        r = subprocess.run([self.srv.binary, *args], env=self.srv.env(), capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def test_python_sends_go_consumes(self) -> None:
        name = unique("py2go")
        self.c.create_queue(name)
        self.c.send_batch(name, ["from python 1", "from python ünïcode ☃"])
        # queues tail runs the Go SDK's Consume and acknowledges what it prints.
        out = self.cli("tail", name, "-n", "2")
        self.assertEqual(sorted(out.splitlines()), ["from python 1", "from python ünïcode ☃"])
        counts = self.c.get_queue(name).counts
        self.assertEqual((counts.visible, counts.in_flight), (0, 0))

    def test_go_sends_python_consumes(self) -> None:
        name = unique("go2py")
        self.c.create_queue(name)
        self.cli("send", name, "from go 1", "from go 2", "--attr", "lang=go")
        got: list[Message] = []
        done = threading.Event()

        def handler(m: Message) -> None:
            got.append(m)
            if len(got) == 2:
                done.set()

        consumer = Consumer(self.srv.client(), name, handler, concurrency=2)
        t = threading.Thread(target=consumer.run, daemon=True)
        t.start()
        self.assertTrue(done.wait(15), "Python's consumer did not get Go's messages")
        consumer.stop.set()
        t.join(15)
        self.assertEqual(sorted(m.body for m in got), ["from go 1", "from go 2"])
        self.assertEqual({m.attributes.get("lang") for m in got}, {"go"})
        counts = self.c.get_queue(name).counts
        self.assertEqual((counts.visible, counts.in_flight), (0, 0))

    def test_signature_matches_go(self) -> None:
        # The Standard Webhooks specification's reference vector, which the Go pusher's
        # signatures follow too (test_webhooks.PushTest verifies real ones).
        secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
        sig = sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, b'{"test": 2432232314}')
        self.assertEqual(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        verify(secret, {"webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp": "1614265330",
                        "webhook-signature": sig}, b'{"test": 2432232314}', now=1614265330)


if __name__ == "__main__":
    unittest.main()
