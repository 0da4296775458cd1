"""The topic stream against a real ``queues serve``: reconnecting from the bookmark across a
cut connection, credit, delta, the attribute filter, a gap, and the errors that end it."""

from __future__ import annotations

import socket
import threading
import time
import unittest
import urllib.parse

from queues import Client, PublishMessage, QueuesError, TopicEvent

from . import server
from .server import unique


class CutProxy:
    """Forwards TCP connections to the server until ``cut`` closes every one of them (the
    subscriber's connection dropping under it)."""

    def __init__(self, target: str) -> None:
        u = urllib.parse.urlsplit(target)
        self._target = (u.hostname, u.port)
        self._ln = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._ln.getsockname()[1]}"
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                inbound, _ = self._ln.accept()
            except OSError:
                return
            out = socket.create_connection(self._target)  # type: ignore[arg-type]
            with self._lock:
                self._conns += [inbound, out]
            for a, b in ((inbound, out), (out, inbound)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        with self._lock:
            conns, self._conns = self._conns, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self) -> None:
        self._ln.close()
        self.cut()


def show(evs: list[TopicEvent]) -> list[str]:
    return [f"{e.entry.sequence}:{e.entry.body}" if e.entry else f"gap {e.gap.from_}-{e.gap.first_sequence}"  # type: ignore[union-attr]
            for e in evs]


def take(it: object, n: int) -> list[TopicEvent]:
    out = []
    for ev in it:  # type: ignore[attr-defined]
        out.append(ev)
        if len(out) == n:
            break
    return out


class TopicStreamTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = server.get()
        op = cls.srv.operator_client()
        p = op.create_project(unique("tstream"))
        cls.project = p
        cls.token = op.create_token(p.id, "all", ["*"]).token
        cls.c = cls.srv.client(cls.token)

    def topic(self, prefix: str, *, published: int = 0, **kw: object) -> str:
        name = unique(prefix)
        self.c.create_topic(name, **kw)  # type: ignore[arg-type]
        self.publish(name, 1, published)
        return name

    def publish(self, topic: str, first: int, last: int) -> None:
        for i in range(first, last + 1):
            self.c.publish(topic, str(i))

    def test_reconnects_from_the_bookmark(self) -> None:
        name = self.topic("feed", published=5)
        proxy = CutProxy(self.srv.url)
        self.addCleanup(proxy.close)
        with Client(proxy.url, self.token).topic_stream(name, from_="earliest", window=2, max_messages=1) as s:
            self.assertEqual(show(take(s, 3)), ["1:1", "2:2", "3:3"])
            proxy.cut()
            self.publish(name, 6, 8)
            self.assertEqual(show(take(s, 5)), ["4:4", "5:5", "6:6", "7:7", "8:8"])
            self.assertEqual(s.bookmark, 9)

    def test_from_now_and_close_from_another_thread(self) -> None:
        name = self.topic("live", published=2)
        s = self.c.topic_stream(name)
        got: list[TopicEvent] = []
        t = threading.Thread(target=lambda: got.extend(s))
        t.start()
        deadline = time.monotonic() + 30
        while s.bookmark != 3:  # now, as a sequence: from here on the publish is in the stream
            self.assertLess(time.monotonic(), deadline, "no bookmark")
            time.sleep(0.01)
        self.publish(name, 3, 3)
        while not got and time.monotonic() < deadline:
            time.sleep(0.02)  # the entry arrives on the other thread: poll for it
        s.close()
        t.join(10)
        self.assertFalse(t.is_alive(), "close did not end the iteration")
        self.assertEqual(show(got), ["3:3"])

    def test_credit(self) -> None:
        name = self.topic("credit", published=5)
        conn = self.c.open_topic_stream(name, from_=1, max_messages=100)
        try:
            conn.credit(2)
            self.assertEqual(show(conn.next()), ["1:1", "2:2"])  # five held, two granted: one frame of two
            conn.credit(3)
            rest: list[TopicEvent] = []
            while len(rest) < 3:
                rest += conn.next()
            self.assertEqual(show(rest), ["3:3", "4:4", "5:5"])
        finally:
            conn.close()

    def test_delta_and_filter(self) -> None:
        name = self.topic("state")
        self.c.publish(name, '{"a":1,"b":1}', key="k")
        self.c.publish(name, '{"a":1,"b":2}', key="k")
        with self.c.topic_stream(name, from_="earliest", delta=True) as s:
            got = [(e.entry.body, e.entry.delta) for e in take(s, 2)]  # type: ignore[union-attr]
        self.assertEqual(got, [('{"a":1,"b":1}', False), ('{"b":2}', True)])

        colors = self.topic("colors")
        for i, color in enumerate(["red", "blue", "green", "red", "blue", "red"]):
            self.c.publish(colors, str(i + 1), attributes={"color": color})
        with self.c.topic_stream(colors, from_="earliest", filter={"color": ["red", "green"]}, window=1) as s:
            self.assertEqual(show(take(s, 4)), ["1:1", "3:3", "4:4", "6:6"])

    def test_gap(self) -> None:
        name = self.topic("trimmed", retention_seconds=0)
        self.c.publish_batch(name, [PublishMessage("1"), PublishMessage("2"), PublishMessage("3")]).raise_for_failed()
        deadline = time.monotonic() + 30
        while self.c.get_topic(name).first_sequence != 4:  # the fan-out trims it: wait for that
            self.assertLess(time.monotonic(), deadline, "the log was not trimmed")
            time.sleep(0.05)
        self.c.update_topic(name, retention_seconds=3600)
        self.publish(name, 4, 5)
        with self.c.topic_stream(name, from_=2) as s:
            evs = take(s, 3)
        self.assertEqual(show(evs), ["gap 2-4", "4:4", "5:5"])
        self.assertEqual(evs[0].kind, "gap")

    def test_errors_end_the_stream(self) -> None:
        def first(c: Client, topic: str, **kw: object) -> QueuesError:
            with self.assertRaises(QueuesError) as cm:
                next(iter(c.topic_stream(topic, **kw)))  # type: ignore[arg-type]
            return cm.exception

        e = first(self.c, unique("nowhere"), from_="earliest")
        self.assertEqual((e.code, e.status), ("not_found", 404))
        name = self.topic("scoped")
        op = self.srv.operator_client()
        reader = self.srv.client(op.create_token(self.project.id, "r", ["queues:read"]).token)
        e = first(reader, name, from_="earliest")
        self.assertEqual((e.code, e.status), ("permission_denied", 403))
        e = first(self.c, name, from_=99)
        self.assertEqual((e.code, e.status, e.field), ("invalid_argument", 400, "from"))


if __name__ == "__main__":
    unittest.main()
